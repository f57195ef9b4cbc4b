//! PROCMAPS entries with times, from the stamped `/proc` reads of a
//! recording and the lifecycle events of its [`crate::ProcWatch`] (see
//! [`crate::MapsStore::timed_maps`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::procwatch::{read_times, ProcEvent};
use ustack_tracedata::{LibMap, MapsAt, MapsKind, ProcMap};

/// The timed entries: `stamped` are the reads (sequence number, snapshot),
/// `threads` the threads known of each process, `untimed` the merged maps
/// of every process (kept for those never read with a time), `events` the
/// lifecycle events in time order.
pub(crate) fn timed_maps<'a>(
    stamped: &[(u64, ProcMap)],
    threads: &BTreeMap<u32, BTreeSet<u32>>,
    untimed: impl Iterator<Item = (u32, &'a ProcMap)>,
    events: &[ProcEvent],
) -> Vec<ProcMap> {
    let times = read_times(events);
    let mut tgid_of: HashMap<u32, u32> = HashMap::new();
    for (&tgid, tids) in threads {
        for &t in tids {
            tgid_of.insert(t, tgid);
        }
    }
    let resolve = |m: &HashMap<u32, u32>, t: u32| m.get(&t).copied().unwrap_or(t);
    let mut execs: HashMap<u32, Vec<u64>> = HashMap::new();
    // Each exec's window, (entry of execve, exec), by process: a read in
    // it may show either image or a part of the new one.
    let mut exec_windows: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    let mut started: HashMap<u32, u64> = HashMap::new();
    let mut forks = Vec::new();
    for e in events {
        match *e {
            ProcEvent::ExecStart { ts, tid } => {
                started.insert(resolve(&tgid_of, tid), ts);
            }
            ProcEvent::Exec { ts, pid } => {
                execs.entry(pid).or_default().push(ts);
                // Without syscall events, the window is the exec alone.
                let from = started.remove(&pid).filter(|&s| s <= ts).unwrap_or(ts);
                exec_windows.entry(pid).or_default().push((from, ts));
            }
            ProcEvent::NewTask {
                parent,
                child,
                thread: true,
                ..
            } => {
                let tgid = resolve(&tgid_of, parent);
                tgid_of.insert(child, tgid);
            }
            ProcEvent::NewTask {
                ts, parent, child, ..
            } => {
                forks.push((ts, child, resolve(&tgid_of, parent)));
            }
            _ => {}
        }
    }
    let at = |ts, kind| Some(MapsAt { ts, kind });
    let mut out = Vec::new();
    let mut matters: BTreeSet<u32> = BTreeSet::new();
    // The last snapshot kept of each process: (time, maps).
    let mut last: HashMap<u32, (u64, &[LibMap])> = HashMap::new();
    // In time order (the ptrace thread and the poller read
    // concurrently); a read without both markers is dropped.
    let mut reads: Vec<(u64, u64, &ProcMap)> = stamped
        .iter()
        .filter_map(|(seq, m)| times.get(seq).map(|&(b, a)| (a, b, m)))
        .collect();
    reads.sort_by_key(|r| r.0);
    for (a, b, m) in reads {
        let overlapped = exec_windows
            .get(&m.pid)
            .is_some_and(|v| v.iter().any(|&(from, t)| b < t && from <= a));
        // A read that found what the previous one of the same image
        // found adds nothing.
        let same = last.get(&m.pid).is_some_and(|&(t, maps)| {
            maps == m.maps.as_slice()
                && !execs
                    .get(&m.pid)
                    .is_some_and(|v| v.iter().any(|&x| t < x && x <= a))
        });
        if !overlapped && !same {
            last.insert(m.pid, (a, &m.maps));
            matters.insert(m.pid);
            out.push(ProcMap {
                at: at(a, MapsKind::Snapshot),
                ..m.clone()
            });
        }
    }
    let timed = matters.clone();
    for &(ts, child, parent) in &forks {
        if matters.contains(&parent) || matters.contains(&child) {
            matters.insert(child);
            out.push(ProcMap {
                pid: child,
                at: at(ts, MapsKind::Fork { parent }),
                ..ProcMap::default()
            });
        }
    }
    for (&pid, v) in &execs {
        for &ts in v.iter().filter(|_| matters.contains(&pid)) {
            out.push(ProcMap {
                pid,
                at: at(ts, MapsKind::Exec),
                ..ProcMap::default()
            });
        }
    }
    // The untimed entries of processes never read with a time.
    for (tgid, m) in untimed {
        if !timed.contains(&tgid) {
            matters.insert(tgid);
            out.push(m.clone());
        }
    }
    // The threads, once per process, on an entry of their own.
    let mut by_process: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for (&t, &tgid) in &tgid_of {
        if t != tgid && matters.contains(&tgid) {
            by_process.entry(tgid).or_default().insert(t);
        }
    }
    for (tgid, tids) in by_process {
        out.push(ProcMap {
            pid: tgid,
            threads: tids.into_iter().collect(),
            ..ProcMap::default()
        });
    }
    out.sort_by_key(|m| (m.pid, m.at.map(|a| a.ts)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProcEvent::*;

    fn snap(pid: u32, path: &str) -> ProcMap {
        ProcMap {
            pid,
            maps: vec![LibMap {
                start: 0x40_1000,
                end: 0x40_2000,
                path: path.into(),
            }],
            ..ProcMap::default()
        }
    }

    fn mark(seq: u64, b: u64, a: u64) -> [ProcEvent; 2] {
        let m = |ts, before| Mark { ts, seq, before };
        [m(b, true), m(a, false)]
    }

    /// The kernel switches an exec'ing task's mm before it logs
    /// `sched_process_exec`: a read that ended between the entry of execve
    /// and the exec may have seen the new program, and must not stand for
    /// the old image (CI once symbolized a child's pre-exec stacks with the
    /// program it exec'd next, at the same non-PIE addresses).
    #[test]
    fn a_read_between_execve_entry_and_the_exec_is_dropped() {
        // Pid 10 (thread 12 execs): read 0 before execve, read 1 ends after
        // its entry (showing the new program), read 2 after the exec.
        let stamped = [
            (0, snap(10, "/old")),
            (1, snap(10, "/new")),
            (2, snap(10, "/new")),
        ];
        let threads = BTreeMap::from([(10, BTreeSet::from([12]))]);
        let mut ev = Vec::new();
        ev.extend(mark(0, 100, 110));
        ev.extend(mark(1, 200, 230));
        ev.push(ExecStart { ts: 220, tid: 12 });
        ev.push(Exec { ts: 240, pid: 10 });
        ev.extend(mark(2, 300, 310));
        ev.sort_by_key(|e| e.ts());
        let kept = |ev: &[ProcEvent]| -> Vec<(u64, String)> {
            timed_maps(&stamped, &threads, std::iter::empty(), ev)
                .into_iter()
                .filter_map(|m| Some((m.at?.ts, m.maps.first()?.path.clone())))
                .collect()
        };
        let want = [(110, "/old".to_string()), (310, "/new".to_string())];
        assert_eq!(kept(&ev), want);
        // A failed execve (no exec after it) drops nothing.
        let failed: Vec<_> = ev
            .iter()
            .copied()
            .filter(|e| !matches!(e, Exec { .. }))
            .collect();
        let seen = [(110, "/old".to_string()), (230, "/new".to_string())];
        assert_eq!(kept(&failed), seen);
        // Without the syscall events only reads around the exec go.
        let blind: Vec<_> = ev
            .iter()
            .copied()
            .filter(|e| !matches!(e, ExecStart { .. }))
            .collect();
        assert_eq!(kept(&blind)[1], (230, "/new".to_string()));
    }
}
