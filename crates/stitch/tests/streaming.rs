//! A streaming load hands out the same groups as a whole load, and most
//! of them long before the records end.

use ustack_stitch::{file, ClosedGroup, EventRef, Group, Stitched};
use ustack_testdata::TraceBuilder;
use ustack_tracedata::reader::TraceFile;

/// A group with its events, its event span left out (it differs between
/// the two ways by design).
type Whole = (Group, Vec<EventRef>);

fn key(w: &Whole) -> (u64, Option<u64>, i32, Option<u64>) {
    let g = &w.0;
    let first = w.1.first().map(|e| e.seq);
    (g.first_ts, first, g.pid, g.user_stack.map(|u| u.seq))
}

fn whole(st: &Stitched) -> Vec<Whole> {
    st.groups
        .iter()
        .map(|g| (g, st.groups.events(&g).to_vec()))
        .collect()
}

/// Equal but for where the events are kept.
fn same(a: &Whole, b: &Whole) -> bool {
    let (x, y) = (&a.0, &b.0);
    (
        x.pid,
        x.kind,
        x.cookie,
        x.status,
        x.cookie_events,
        x.user_stack,
    ) == (
        y.pid,
        y.kind,
        y.cookie,
        y.status,
        y.cookie_events,
        y.user_stack,
    ) && (x.first_ts, x.last_ts, x.loss_while_open, x.events.len())
        == (y.first_ts, y.last_ts, y.loss_while_open, y.events.len())
        && a.1 == b.1
}

/// A trace loaded both ways.
struct Both {
    /// The groups of a whole load.
    want: Vec<Whole>,
    /// Those a streaming load handed out, each with the number of events
    /// indexed when it came out.
    streamed: Vec<(Whole, usize)>,
    /// The groups the streaming load's index kept.
    left: Vec<Whole>,
    /// Records in the trace.
    records: usize,
}

fn both(t: TraceBuilder) -> Both {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.dat");
    t.write(&path).unwrap();
    let f = TraceFile::open(&path).unwrap();
    let buf = file::buffer(&f, None).unwrap();
    let idx = file::load(&f, buf);
    let mut streamed = Vec::new();
    let at_end = file::load_streaming(&f, buf, |so_far, _, c: ClosedGroup| {
        streamed.push(((c.group, c.events), so_far.events.len()));
        true
    });
    assert_eq!(at_end.events.len(), idx.events.len());
    Both {
        want: whole(&idx.stitched),
        streamed,
        left: whole(&at_end.stitched),
        records: idx.events.len(),
    }
}

#[test]
fn streamed_groups_are_the_groups_and_come_early() {
    for (name, t) in [
        ("demo", ustack_testdata::demo(30_000, 4)),
        ("fixture", ustack_testdata::fixture()),
    ] {
        let Both {
            mut want,
            streamed,
            left,
            records,
        } = both(t);
        assert!(left.is_empty(), "{name}: the index keeps no group");
        let early = streamed.iter().filter(|(_, n)| *n < records).count();
        let mut got: Vec<Whole> = streamed.into_iter().map(|(w, _)| w).collect();
        want.sort_by_key(key);
        got.sort_by_key(key);
        assert_eq!(got.len(), want.len(), "{name}");
        for (g, w) in got.iter().zip(&want) {
            assert!(same(g, w), "{name}: {g:?} != {w:?}");
        }
        if name == "demo" {
            // All but the last few (each task's last kernel entries wait
            // for the end) come out while records are still read.
            assert!(early * 10 >= got.len() * 9, "{early} of {}", got.len());
        }
    }
}

#[test]
fn a_trace_without_user_stacks_gets_its_kernel_groups_at_the_end() {
    let Both {
        want,
        streamed,
        left,
        ..
    } = both(ustack_testdata::fixture_kernel_only());
    assert!(streamed.is_empty());
    assert!(!want.is_empty());
    assert_eq!(left.len(), want.len());
    for (g, w) in left.iter().zip(&want) {
        assert!(same(g, w));
    }
}
