//! Unwinding speed: `cargo bench -p ustack-symbolize --bench unwind [-- SECONDS]`.
//!
//! Captures the stacks of progs/truth.c (-O2, no frame pointers, 5
//! threads in a 40-deep recursion; ptrace stands in for the kernel's
//! snapshot, see `ustack_testdata::truth`), then unwinds them over and over
//! on one core with warm caches, as a report over a large trace does, and
//! prints stacks and frames per second. The symbolization of the frames is
//! not included (`bench/symbols.sh` measures that).

use std::time::{Duration, Instant};

use ustack_symbolize::unwind::{Snapshot, Unwinder};
use ustack_testdata::truth::{build_truth_c, run_traced};

fn main() {
    let secs: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3.0);
    let dir = tempfile::tempdir().unwrap();
    let bin = build_truth_c(dir.path(), &["-fomit-frame-pointer"]);
    let caps = run_traced(&[&bin, "recurse"], 1 << 20);
    let mut u = Unwinder::new(None);
    let unwind = |u: &mut Unwinder, c: &ustack_testdata::truth::Capture| {
        let snap = Snapshot {
            ip: c.ip,
            sp: c.sp,
            bp: c.bp,
            data: &c.stack,
        };
        u.unwind_in(&snap, &c.kernel, &c.maps.maps).frames.len()
    };
    // Warm: every file loaded, every rule cached.
    let per_round: usize = caps.iter().map(|c| unwind(&mut u, c)).sum();
    let (mut stacks, mut frames) = (0usize, 0usize);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs_f64(secs) {
        for c in &caps {
            frames += unwind(&mut u, c);
        }
        stacks += caps.len();
    }
    let el = t.elapsed().as_secs_f64();
    println!(
        "unwind: {} stacks of {:.1} frames (warm): {:.0} stacks/s, {:.1} M frames/s, {:.1} ns/frame",
        caps.len(),
        per_round as f64 / caps.len() as f64,
        stacks as f64 / el,
        frames as f64 / el / 1e6,
        el * 1e9 / frames as f64
    );
}
