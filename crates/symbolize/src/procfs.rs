//! Reading a live process's maps and threads from `/proc` (the recorder
//! and live views use this; trace files never do).

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
        let t = std::thread::spawn(gettid).join().unwrap();
        assert_eq!(tgid_of(t), None, "an exited thread has no status");
        assert!(threads_of(me).contains(&me));
        assert!(read_proc_map(u32::MAX).is_err());
    }

    fn gettid() -> u32 {
        // SAFETY: gettid has no arguments and cannot fail.
        unsafe { libc::gettid() as u32 }
    }
}
