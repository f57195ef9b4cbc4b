//! A process's maps read while it execs: the kernel installs the new mm
//! (`exec_mmap()`) before it has mapped the new program and before it logs
//! `sched_process_exec`, so a `/proc/PID/maps` read that ends before the
//! exec event may already show the new program, or a part of it. CI once
//! symbolized a child's pre-exec stacks with the program it exec'd next
//! that way. [`MapsStore::timed_maps`] must drop every read that ended
//! after the entry of `execve`: this test reads a shell's maps in a tight
//! loop while it execs, until such a read happens, and checks that no
//! snapshot kept for the old image shows anything but the shell.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use ustack_record::{MapsStore, ProcEvent, ProcWatch};
use ustack_tracedata::MapsKind;
use ustack_tracefs::{Guard, Tracefs};

/// Reads that ended inside an exec window wanted before the test judges.
const HITS_WANTED: usize = 20;

#[test]
#[ignore = "needs root and tracefs (a private instance with syscall events)"]
fn reads_during_an_exec_never_stand_for_the_old_image() {
    let fs = Tracefs::open().expect("tracefs is mounted and writable");
    let guard = Guard::new();
    let mut watch = ProcWatch::start(&fs, &guard, "local").unwrap();
    let store = MapsStore::default();
    store.set_stamper(watch.stamper());
    let shell = std::fs::canonicalize("/bin/sh").unwrap();
    let shell = shell.to_string_lossy().into_owned();
    let mut pids = Vec::new();
    let t0 = Instant::now();
    let mut events = Vec::new();
    let hits = loop {
        // The shell says it runs, waits for a line, then execs `true`,
        // while this thread reads its maps as fast as it can until it is
        // gone. `spawn` returns once the child has released the parent's
        // memory in its exec, before the new program is mapped: without
        // the `ready` line, a loaded machine made every read of some
        // shells fall inside an exec, and no snapshot of the shell's
        // image was there to check.
        let mut child = Command::new("sh")
            .args(["-c", "echo ready; read x; exec true"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready, "ready\n");
        let pid = child.id();
        pids.push(pid);
        store.read(pid);
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        while child.try_wait().unwrap().is_none() {
            store.read(pid);
        }
        events.extend(watch.poll());
        let hits = in_window_reads(&events, &pids);
        if hits >= HITS_WANTED || t0.elapsed() > Duration::from_secs(60) {
            break hits;
        }
    };
    events.extend(watch.finish());
    guard.restore().unwrap();
    assert!(
        hits >= HITS_WANTED,
        "only {hits} reads ended inside an exec in {} execs: no syscall events?",
        pids.len()
    );
    events.sort_by_key(|e| e.ts());
    let timed = store.timed_maps(&events);
    let mut checked = 0;
    for &pid in &pids {
        let Some(exec) = exec_of(&events, pid) else {
            panic!("no exec event of pid {pid}");
        };
        for m in timed.iter().filter(|m| m.pid == pid) {
            let Some(at) = m.at.filter(|a| a.ts < exec && a.kind == MapsKind::Snapshot) else {
                continue;
            };
            let paths: Vec<&str> = m.maps.iter().map(|l| l.path.as_str()).collect();
            assert!(
                paths.contains(&shell.as_str()) && !paths.iter().any(|p| p.ends_with("/true")),
                "pid {pid}: a snapshot at {} (exec at {exec}) kept for the shell's image: {paths:?}",
                at.ts
            );
            checked += 1;
        }
    }
    assert!(checked >= pids.len(), "{checked} pre-exec snapshots kept");
    eprintln!(
        "{} execs, {hits} reads ended inside an exec, {checked} pre-exec snapshots all the shell's",
        pids.len()
    );
}

/// The trace time of `pid`'s last exec (into `true`; the first one, into
/// the shell, happened before the test knew the pid).
fn exec_of(events: &[ProcEvent], pid: u32) -> Option<u64> {
    events.iter().rev().find_map(|e| match *e {
        ProcEvent::Exec { ts, pid: p } if p == pid => Some(ts),
        _ => None,
    })
}

/// How many reads ended between the entry of execve of one of `pids` and
/// its exec: the reads the old rule (only reads around the exec event)
/// kept.
fn in_window_reads(events: &[ProcEvent], pids: &[u32]) -> usize {
    let mut sorted = events.to_vec();
    sorted.sort_by_key(|e| e.ts());
    let mut windows = Vec::new();
    for &pid in pids {
        let Some(x) = exec_of(&sorted, pid) else {
            continue;
        };
        // The last entry of execve before it: the shell's search of PATH
        // fails before it finds `true`.
        let start = sorted.iter().rev().find_map(|e| match *e {
            ProcEvent::ExecStart { ts, tid } if tid == pid && ts <= x => Some(ts),
            _ => None,
        });
        windows.extend(start.map(|s| (s, x)));
    }
    sorted
        .iter()
        .filter(|e| {
            matches!(e, ProcEvent::Mark { ts, before: false, .. }
                if windows.iter().any(|&(s, x)| s < *ts && *ts < x))
        })
        .count()
}
