//! Address spaces of the processes of a trace: which file each address of
//! a task maps, through the task's process.
//!
//! Mappings belong to a process (thread group); a thread finds them through
//! the thread list saved with its process (the `tasks:` line of PROCMAPS)
//! or, live, through `/proc/PID/status`. A task whose process is not known
//! is not guessed at: its addresses stay unresolved, and say why.

use std::collections::HashMap;

use ustack_tracedata::{LibMap, ProcMap};

/// Why a user address has no symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unresolved {
    /// No maps were saved for the task's process (the process was gone
    /// before its maps were read, or a thread of an unknown process).
    ProcessUnknown,
    /// The address is in no file mapping of its process: anonymous memory
    /// (JIT code) or unmapped.
    Anonymous,
    /// The address was mapped by two images of the process (an exec during
    /// the recording mapped another file there): which one the stack saw
    /// is not known.
    Replaced,
    /// The address is in a special mapping of the kernel's (`[vdso]`,
    /// `[vsyscall]`) or in `[heap]`/`[stack]`: no file to read.
    Special,
    /// The mapped file could not be opened as an ELF file here.
    FileUnreadable,
    /// The file has no symbol covering the address (stripped, no debug
    /// file found).
    NoSymbol,
}

impl Unresolved {
    /// The reason as the report prints it.
    pub fn reason(self) -> &'static str {
        match self {
            Unresolved::ProcessUnknown => "process gone before its maps were read",
            Unresolved::Anonymous => "anonymous memory (JIT) or unmapped",
            Unresolved::Special => "in [vdso], [heap] or [stack]",
            Unresolved::Replaced => "address used by two images of the process (exec)",
            Unresolved::FileUnreadable => "mapped file not readable as ELF",
            Unresolved::NoSymbol => "no symbol (stripped, no debug file)",
        }
    }
}

/// One process: its command name, its mappings sorted by start, and the
/// mappings of earlier images that those replaced.
#[derive(Debug, Default, Clone)]
struct Process {
    comm: String,
    maps: Vec<LibMap>,
    replaced: Vec<LibMap>,
}

/// The mappings of the processes of a trace, and which process each known
/// task belongs to.
#[derive(Debug, Default, Clone)]
pub struct AddressSpaces {
    /// By process id (tgid).
    procs: HashMap<u32, Process>,
    /// Thread id -> process id, for the threads that are not the process's
    /// main thread.
    tgids: HashMap<u32, u32>,
}

impl AddressSpaces {
    /// The address spaces of the given processes (PROCMAPS entries; several
    /// entries of one pid add up).
    pub fn new(maps: impl IntoIterator<Item = ProcMap>) -> Self {
        let mut s = AddressSpaces::default();
        for m in maps {
            s.add(m);
        }
        s
    }

    /// Adds one process's maps and threads.
    pub fn add(&mut self, m: ProcMap) {
        for &t in &m.threads {
            if t != m.pid {
                self.tgids.insert(t, m.pid);
            }
        }
        let p = self.procs.entry(m.pid).or_default();
        if !m.comm.is_empty() {
            p.comm = m.comm;
        }
        p.maps.extend(m.maps);
        p.maps.sort_by_key(|l| l.start);
        p.replaced.extend(m.replaced);
    }

    /// Notes that task `tid` belongs to process `tgid`.
    pub fn add_thread(&mut self, tid: u32, tgid: u32) {
        if tid != tgid {
            self.tgids.insert(tid, tgid);
        }
    }

    /// The process of task `tid`, when known.
    pub fn tgid(&self, tid: u32) -> Option<u32> {
        match self.tgids.get(&tid) {
            Some(&p) => Some(p),
            None => self.procs.contains_key(&tid).then_some(tid),
        }
    }

    /// True when the process of task `tid` is known.
    pub fn has(&self, tid: u32) -> bool {
        self.tgid(tid).is_some()
    }

    /// The command name recorded for `tid`'s process, if any.
    pub fn comm(&self, tid: u32) -> Option<&str> {
        let p = self.procs.get(&self.tgid(tid)?)?;
        (!p.comm.is_empty()).then_some(p.comm.as_str())
    }

    /// The mapping that holds `addr` in task `tid`'s process. An address
    /// that an earlier image mapped differently (see
    /// [`ProcMap::replaced`]) has no one answer; one that only an earlier
    /// image mapped resolves through that image.
    pub fn find(&self, tid: u32, addr: u64) -> Result<&LibMap, Unresolved> {
        let p = self
            .tgid(tid)
            .and_then(|t| self.procs.get(&t))
            .ok_or(Unresolved::ProcessUnknown)?;
        let i = p.maps.partition_point(|m| m.start <= addr);
        let cur = i
            .checked_sub(1)
            .and_then(|i| p.maps.get(i))
            .filter(|m| addr < m.end);
        let mut old = p
            .replaced
            .iter()
            .filter(|r| r.start <= addr && addr < r.end);
        match (cur, old.next()) {
            (Some(m), None) => Ok(m),
            (Some(m), Some(r)) if r.path == m.path && r.start == m.start => Ok(m),
            (Some(_), Some(_)) => Err(Unresolved::Replaced),
            (None, Some(r)) if old.all(|o| o.path == r.path && o.start == r.start) => Ok(r),
            (None, Some(_)) => Err(Unresolved::Replaced),
            (None, None) => Err(Unresolved::Anonymous),
        }
    }

    /// Process ids with mappings.
    pub fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.procs.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pm(pid: u32, threads: &[u32], maps: &[(u64, u64, &str)]) -> ProcMap {
        ProcMap {
            pid,
            comm: format!("p{pid}"),
            maps: maps
                .iter()
                .map(|&(start, end, path)| LibMap {
                    start,
                    end,
                    path: path.into(),
                })
                .collect(),
            threads: threads.to_vec(),
            replaced: Vec::new(),
        }
    }

    #[test]
    fn threads_resolve_through_their_process_only() {
        // Two non-PIE programs map the same addresses: each thread finds
        // its own process's file, an unknown task finds nothing.
        let s = AddressSpaces::new([
            pm(10, &[11, 12], &[(0x400000, 0x500000, "/bin/threads")]),
            pm(20, &[], &[(0x400000, 0x480000, "/bin/busybox")]),
        ]);
        assert_eq!(s.find(12, 0x400100).unwrap().path, "/bin/threads");
        assert_eq!(s.find(10, 0x400100).unwrap().path, "/bin/threads");
        assert_eq!(s.find(20, 0x400100).unwrap().path, "/bin/busybox");
        assert_eq!(s.find(13, 0x400100), Err(Unresolved::ProcessUnknown));
        assert_eq!(s.find(20, 0x490000), Err(Unresolved::Anonymous));
        assert_eq!(s.find(11, 0x1000), Err(Unresolved::Anonymous));
        assert_eq!(s.comm(11), Some("p10"));
        assert_eq!(s.tgid(13), None);
    }

    #[test]
    fn addresses_of_two_images_are_not_given_to_either() {
        // pid 30 ran /bin/a (non-PIE), then exec'd /bin/b over it.
        let mut p = pm(30, &[], &[(0x400000, 0x480000, "/bin/b")]);
        p.replaced = pm(
            0,
            &[],
            &[(0x400000, 0x500000, "/bin/a"), (0x7f00, 0x8000, "/lib/x")],
        )
        .maps;
        let s = AddressSpaces::new([p]);
        assert_eq!(s.find(30, 0x401000), Err(Unresolved::Replaced));
        // Only the old image mapped these: they are its.
        assert_eq!(s.find(30, 0x490000).unwrap().path, "/bin/a");
        assert_eq!(s.find(30, 0x7f10).unwrap().path, "/lib/x");
        assert_eq!(s.find(30, 0x900000), Err(Unresolved::Anonymous));
    }
}
