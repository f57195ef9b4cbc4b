//! The memory budget of spilled arrays ([`spill::set_memory_budget`]). It
//! is process-wide, so these tests have a process of their own, and run
//! one after the other in one test.

use ustack_tracedata::spill::{self, SpillVec, SPILL_BYTES};

fn filled(n: usize) -> SpillVec<u64> {
    (0..n as u64).map(|i| i * 3 + 1).collect()
}

fn intact(v: &SpillVec<u64>, n: usize) -> bool {
    v.len() == n && v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3 + 1)
}

#[test]
fn arrays_stay_in_memory_while_the_budget_holds_them() {
    let n = 4 * SPILL_BYTES / 8;
    let base = spill::in_memory();

    // No budget: an array spills past SPILL_BYTES.
    let v = filled(n);
    assert!(v.spilled() && intact(&v, n));
    assert_eq!(spill::in_memory(), base);
    drop(v);

    // A budget for two such arrays and their growth, not for three.
    spill::set_memory_budget(12 * SPILL_BYTES);
    let a = filled(n);
    let b = filled(n);
    assert!(!a.spilled() && !b.spilled());
    let held = spill::in_memory() - base;
    assert!(
        (8 * SPILL_BYTES..=12 * SPILL_BYTES).contains(&held),
        "{held}"
    );
    let c = filled(n);
    assert!(c.spilled(), "{} bytes held", spill::in_memory());
    assert!(intact(&a, n) && intact(&b, n) && intact(&c, n));
    // A small array stays in memory whatever the budget holds.
    let small = filled(1000);
    assert!(!small.spilled());

    // What an array held is given back with it.
    drop((a, b, c, small));
    assert_eq!(spill::in_memory(), base);
    let d = filled(n);
    assert!(!d.spilled() && intact(&d, n));
    drop(d);
    spill::set_memory_budget(0);
    assert!(filled(n).spilled());
    assert_eq!(spill::in_memory(), base);
}
