//! Everything the workspace reads about live processes from `/proc`: maps
//! and names, thread groups, parents, exit state, the own vDSO and the
//! running kernel's release. The recorder and the live views use this;
//! trace files never do. The text of `/proc/PID/maps` is tracedata's
//! format ([`ProcMap::from_proc_maps`]); the rest is parsed here.

use std::io;

use ustack_tracedata::ProcMap;

/// Reads `/proc/<pid>/comm` and `/proc/<pid>/maps` of a live process.
pub fn read_proc_map(pid: u32) -> io::Result<ProcMap> {
    let with_path = |what: &str| {
        let p = format!("/proc/{pid}/{what}");
        std::fs::read_to_string(&p).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))
    };
    let comm = with_path("comm")?;
    let maps = with_path("maps")?;
    Ok(ProcMap::from_proc_maps(pid, &comm, &maps))
}

/// The thread group (process) of task `pid`, from `/proc/PID/status`.
pub fn tgid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The tasks of process `tgid` alive now (`/proc/TGID/task`), ascending.
pub fn threads_of(tgid: u32) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(format!("/proc/{tgid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// Whether a process or thread `pid` exists now.
pub fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The processes alive now (the numeric entries of `/proc`), in no order.
pub fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The parent of process `pid`, from `/proc/PID/stat`.
pub fn parent_of(pid: u32) -> Option<u32> {
    stat(pid)?.ppid
}

/// `PF_EXITING` in `/proc/PID/stat`'s flags.
const PF_EXITING: u64 = 0x4;

/// Whether process `pid` is exiting (`PF_EXITING`, set before the kernel
/// tears its mappings down), or gone.
pub fn exiting(pid: u32) -> bool {
    stat(pid)
        .and_then(|s| s.flags)
        .is_none_or(|f| f & PF_EXITING != 0)
}

/// The fields of `/proc/PID/stat` read here.
#[derive(Debug, PartialEq, Eq)]
struct Stat {
    /// The 4th field.
    ppid: Option<u32>,
    /// The 9th field.
    flags: Option<u64>,
}

fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parses a `/proc/PID/stat` line; the command name in parentheses may
/// itself hold spaces and parentheses, so the fields are counted from the
/// last `)`.
fn parse_stat(line: &str) -> Option<Stat> {
    let rest = &line[line.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    // state, ppid, pgrp, session, tty_nr, tpgid, flags
    let ppid = f.nth(1).and_then(|s| s.parse().ok());
    let flags = f.nth(4).and_then(|s| s.parse().ok());
    Some(Stat { ppid, flags })
}

/// The running kernel's release and version (`uname -r`, `uname -v`),
/// from `/proc/sys/kernel`.
pub fn running_kernel() -> Option<(String, String)> {
    let read = |what: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{what}")).ok();
    let (release, version) = (read("osrelease")?, read("version")?);
    Some((release.trim().to_string(), version.trim().to_string()))
}

/// The bytes of this process's own `[vdso]` mapping (the running kernel's
/// vDSO image), through its maps and `/proc/self/mem`.
pub fn own_vdso() -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let me = read_proc_map(std::process::id()).ok()?;
    let m = me.maps.iter().find(|m| m.path == "[vdso]")?;
    let mut buf = vec![0u8; usize::try_from(m.end.checked_sub(m.start)?).ok()?];
    std::fs::File::open("/proc/self/mem")
        .ok()?
        .read_exact_at(&mut buf, m.start)
        .ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process() {
        let me = std::process::id();
        let m = read_proc_map(me).unwrap();
        assert_eq!(m.pid, me);
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert!(m.maps.iter().any(|l| std::path::Path::new(&l.path) == exe));
        assert_eq!(tgid_of(me), Some(me));
        assert!(threads_of(me).contains(&me));
        assert!(read_proc_map(u32::MAX).is_err());
        assert!(exists(me) && !exists(u32::MAX));
        assert!(pids().contains(&me));
        assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
        assert!(!exiting(me));
        assert!(
            exiting(u32::MAX),
            "a process that is gone counts as exiting"
        );
    }

    #[test]
    fn released_threads_have_no_status() {
        // join() returns at the thread's clear_child_tid wake-up, in
        // exit_mm(); the task leaves /proc only later, in release_task().
        // About 1 in 1,000 joins still finds it there (seen in CI), so each
        // round waits for the release before it asks.
        for _ in 0..3000 {
            let t = std::thread::spawn(gettid).join().unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while exists(t) && std::time::Instant::now() < deadline {
                std::thread::yield_now();
            }
            assert_eq!(tgid_of(t), None, "a released thread has no status");
        }
    }

    #[test]
    fn stat_fields_are_counted_after_any_command_name() {
        let line = "1115 (a) b (c) R 1103 1103 1 0 -1 4194624 86 0 0 0 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: Some(1103),
                flags: Some(4194624)
            })
        );
        let init = parse_stat("1 (init) S 0 1 1 0 -1 4194564 9").unwrap();
        assert_eq!((init.ppid, init.flags), (Some(0), Some(4194564)));
        assert_eq!(
            parse_stat("1 (init) S 0"),
            Some(Stat {
                ppid: Some(0),
                flags: None
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_ne!(4194564 & PF_EXITING, 0);
        assert_eq!(4194624 & PF_EXITING, 0);
    }

    fn gettid() -> u32 {
        // SAFETY: gettid has no arguments and cannot fail.
        unsafe { libc::gettid() as u32 }
    }
}
