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
    let mut forks = Vec::new();
    for e in events {
        match *e {
            ProcEvent::Exec { ts, pid } => execs.entry(pid).or_default().push(ts),
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
        let overlapped = execs
            .get(&m.pid)
            .is_some_and(|v| v.iter().any(|&t| b < t && t <= a));
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
