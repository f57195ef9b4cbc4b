//! Address spaces of the processes of a trace: which file each address of
//! a task maps, through the task's process.
//!
//! Mappings belong to a process (thread group); a thread finds them through
//! the thread list saved with its process (the `tasks:` line of PROCMAPS)
//! or, live, through `/proc/PID/status`. A task whose process is not known
//! is not guessed at: its addresses stay unresolved, and say why.

use std::collections::HashMap;

use ustack_tracedata::{LibMap, MapsAt, MapsKind, ProcMap};

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

/// One timed observation of a process's maps (a PROCMAPS entry with
/// `at:`), sorted by time in [`Process::sets`].
#[derive(Debug, Clone)]
struct Set {
    at: MapsAt,
    maps: Vec<LibMap>,
}

/// One process: its command name, its untimed mappings (sorted by start)
/// with the mappings of earlier images that those replaced, and its timed
/// history.
#[derive(Debug, Default, Clone)]
struct Process {
    comm: String,
    maps: Vec<LibMap>,
    replaced: Vec<LibMap>,
    /// Timed observations, by time; at one time an exec comes first.
    sets: Vec<Set>,
}

/// How deep a chain of forks is followed to find a child's maps in its
/// ancestors.
const MAX_FORK_DEPTH: usize = 32;

/// The mappings of the processes of a trace, and which process each known
/// task belongs to.
///
/// # Sources of maps, and how a new one plugs in
///
/// Every source hands what it saw to [`AddressSpaces::add`] as a
/// [`ProcMap`]: one process (tgid), its file mappings (`start` = the load
/// base of the file, where file offset 0 would be mapped; `end`; `path`),
/// the threads it knows of, and [`ProcMap::at`], the trace time and kind of
/// the observation:
///
/// * `/proc/PID/maps` read by the recorder (on first sight of a process, at
///   a ptrace exec or exit stop): [`MapsKind::Snapshot`] at the time of the
///   read;
/// * an exec (`sched_process_exec`, a ptrace exec stop):
///   [`MapsKind::Exec`], with the new image's maps when they were read;
/// * a fork (`task_newtask` without `CLONE_THREAD`): [`MapsKind::Fork`],
///   no maps;
/// * mappings seen as they are made (the kernel's `user_unwind_mapping`
///   records): [`MapsKind::Add`] at the record's time, one entry per record
///   or per batch, `start = vm_start - pgoff` for the file's load base;
/// * trace-cmd's PROCMAPS and older files: `at: None`, valid for the whole
///   trace.
///
/// A stack taken at time `t` is resolved by [`AddressSpaces::find_at`] with
/// the maps of the image its process ran at `t`: the observations between
/// the last exec before `t` and the first exec after it, nearest to `t`
/// first (earlier ones first, then later ones: a process first seen after
/// the stack still resolves, a library loaded since the last read too);
/// before its first exec a forked child looks in its parent at the fork.
/// A source needs nothing else: no order of calls, no merging of its own.
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

    /// Adds one observation of a process: its maps and threads, timed
    /// (`m.at`) or valid for the whole trace. See the type's docs for
    /// what each source gives.
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
        match m.at {
            Some(at) => {
                let rank = |s: &Set| (s.at.ts, s.at.kind != MapsKind::Exec);
                let mut maps = m.maps;
                maps.sort_by_key(|l| l.start);
                let set = Set { at, maps };
                let i = p.sets.partition_point(|s| rank(s) <= rank(&set));
                p.sets.insert(i, set);
            }
            None => {
                p.maps.extend(m.maps);
                p.maps.sort_by_key(|l| l.start);
                p.replaced.extend(m.replaced);
            }
        }
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

    /// The mapping that holds `addr` in task `tid`'s process as it was at
    /// the end of the trace: [`AddressSpaces::find_at`] without a time.
    pub fn find(&self, tid: u32, addr: u64) -> Result<&LibMap, Unresolved> {
        self.find_at(tid, None, addr)
    }

    /// The mapping that holds `addr` in task `tid`'s process at trace time
    /// `ts` (`None`: the latest image). See the type's docs for the rule.
    pub fn find_at(&self, tid: u32, ts: Option<u64>, addr: u64) -> Result<&LibMap, Unresolved> {
        let tgid = self.tgid(tid).ok_or(Unresolved::ProcessUnknown)?;
        self.find_in(tgid, ts.unwrap_or(u64::MAX), addr, 0)
    }

    fn find_in(&self, tgid: u32, ts: u64, addr: u64, depth: usize) -> Result<&LibMap, Unresolved> {
        let p = self.procs.get(&tgid).ok_or(Unresolved::ProcessUnknown)?;
        // This image's observations: from the last exec or fork (a new
        // process, maybe under a recycled pid) at or before ts to the next.
        let starts = |s: &Set| matches!(s.at.kind, MapsKind::Exec | MapsKind::Fork { .. });
        let end = p.sets.partition_point(|s| s.at.ts <= ts);
        let from = p.sets[..end].iter().rposition(starts);
        let to = end
            + p.sets[end..]
                .iter()
                .position(starts)
                .unwrap_or(p.sets.len() - end);
        let image = &p.sets[from.unwrap_or(0)..to];
        let split = end - from.unwrap_or(0);
        let (before, after) = image.split_at(split);
        if let Some(m) = before
            .iter()
            .rev()
            .chain(after)
            .find_map(|s| holding(&s.maps, addr))
        {
            return Ok(m);
        }
        match from.map(|i| p.sets[i].at) {
            // A forked child runs its parent's image until it execs.
            Some(MapsAt {
                ts: at,
                kind: MapsKind::Fork { parent },
            }) if depth < MAX_FORK_DEPTH && parent != tgid => {
                return self.find_in(parent, at, addr, depth + 1);
            }
            // Before anything timed: what the untimed maps say.
            None if !p.maps.is_empty() || !p.replaced.is_empty() || p.sets.is_empty() => {
                return untimed(p, addr);
            }
            _ => {}
        }
        if image.iter().any(|s| shows_unmapped_at(s, ts)) {
            Err(Unresolved::Anonymous)
        } else {
            Err(Unresolved::ProcessUnknown)
        }
    }

    /// Process ids with mappings.
    pub fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.procs.keys().copied()
    }
}

/// True when `s`, an observation of the image that holds none of a stack's
/// address, says the address was in no file mapping at the stack's time
/// `ts` (`u64::MAX`: the end of the trace). The kernel's records (`Add`,
/// or an `Exec` with maps) name every mapping that a stack of their image
/// has frames in, whenever they were written. A read of `/proc` shows the
/// maps of its own time only: one taken before the stack proves nothing
/// about it (the loader maps the libraries after the exec, a `dlopen` maps
/// more), and when no read after the stack is left, the process was gone
/// (exit or exec) before the maps of the stack's time were read.
fn shows_unmapped_at(s: &Set, ts: u64) -> bool {
    !s.maps.is_empty() && (s.at.kind != MapsKind::Snapshot || s.at.ts > ts || ts == u64::MAX)
}

/// The mapping of `maps` (sorted by start) that holds `addr`.
fn holding(maps: &[LibMap], addr: u64) -> Option<&LibMap> {
    let i = maps.partition_point(|m| m.start <= addr);
    maps[..i].last().filter(|m| addr < m.end)
}

/// The lookup in a process's untimed maps: an address that an earlier
/// image mapped differently (see [`ProcMap::replaced`]) has no one answer;
/// one that only an earlier image mapped resolves through that image.
fn untimed(p: &Process, addr: u64) -> Result<&LibMap, Unresolved> {
    let cur = holding(&p.maps, addr);
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
        (None, None) if p.maps.is_empty() && p.sets.is_empty() => Err(Unresolved::ProcessUnknown),
        (None, None) => Err(Unresolved::Anonymous),
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
            at: None,
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

    fn timed(pid: u32, ts: u64, kind: MapsKind, maps: &[(u64, u64, &str)]) -> ProcMap {
        let mut p = pm(pid, &[], maps);
        p.at = Some(MapsAt { ts, kind });
        p
    }

    #[test]
    fn each_stack_gets_the_maps_of_its_time() {
        use MapsKind::*;
        let a = [(0x400000, 0x500000, "/bin/a")];
        let b = [(0x400000, 0x480000, "/bin/b")];
        let s = AddressSpaces::new([
            // pid 40 runs /bin/a (first read at 50, after its first
            // stacks), dlopens /lib/p (read at 80), execs /bin/b at 100
            // (read at 120 and 160), execs again at 200 and is gone before
            // a read.
            timed(40, 120, Snapshot, &b),
            timed(40, 50, Snapshot, &a),
            timed(40, 100, Exec, &[]),
            timed(40, 80, Snapshot, &[a[0], (0x7f00, 0x8000, "/lib/p")]),
            timed(40, 160, Snapshot, &b),
            timed(40, 200, Exec, &[]),
            // pid 41 forked from 40 at 60 and never exec'd; pid 42 forked
            // at 110, read at 130, then exec'd /bin/a at 140 (its maps
            // came with the exec stop).
            timed(41, 60, Fork { parent: 40 }, &[]),
            timed(42, 110, Fork { parent: 40 }, &[]),
            timed(42, 130, Snapshot, &[b[0], (0x9000, 0xa000, "/lib/q")]),
            timed(42, 140, Exec, &a),
            // pid 43 was another process, gone, then recycled by a fork of
            // 40 at 150.
            timed(43, 10, Snapshot, &[(0x1000, 0x2000, "/old")]),
            timed(43, 150, Fork { parent: 40 }, &[]),
        ]);
        let path = |tid, ts, addr| s.find_at(tid, Some(ts), addr).map(|m| m.path.as_str());
        assert_eq!(path(40, 10, 0x401000), Ok("/bin/a"));
        assert_eq!(path(40, 99, 0x401000), Ok("/bin/a"));
        // Loaded later: found in the later read of the same image.
        assert_eq!(path(40, 60, 0x7f10), Ok("/lib/p"));
        assert_eq!(path(40, 100, 0x401000), Ok("/bin/b"));
        assert_eq!(path(40, 150, 0x490000), Err(Unresolved::Anonymous));
        // The old image's library is not the new image's.
        assert_eq!(path(40, 150, 0x7f10), Err(Unresolved::Anonymous));
        assert_eq!(path(40, 250, 0x401000), Err(Unresolved::ProcessUnknown));
        assert_eq!(s.find(40, 0x401000), Err(Unresolved::ProcessUnknown));
        // The children: the parent's image at the fork, until their exec.
        assert_eq!(path(41, 300, 0x401000), Ok("/bin/a"));
        assert_eq!(path(41, 300, 0x7f10), Ok("/lib/p"));
        assert_eq!(path(42, 115, 0x401000), Ok("/bin/b"));
        assert_eq!(path(42, 115, 0x9010), Ok("/lib/q"));
        assert_eq!(path(42, 140, 0x490000), Ok("/bin/a"));
        assert_eq!(path(42, 140, 0x9010), Err(Unresolved::Anonymous));
        assert_eq!(path(43, 12, 0x1010), Ok("/old"));
        assert_eq!(path(43, 160, 0x401000), Ok("/bin/b"));
        assert_eq!(path(43, 160, 0x1010), Err(Unresolved::Anonymous));
    }

    #[test]
    fn a_fork_loop_ends() {
        let s = AddressSpaces::new([
            timed(1, 5, MapsKind::Fork { parent: 2 }, &[]),
            timed(2, 5, MapsKind::Fork { parent: 1 }, &[]),
        ]);
        assert_eq!(s.find_at(1, Some(9), 0x10), Err(Unresolved::ProcessUnknown));
    }

    /// A read during `dlopen` (ld.so's cache still mapped where the
    /// library goes) and one after it: a stack between them resolves to the
    /// library, not to the cache (CI once lost every frame of a dlopen'd
    /// library this way).
    #[test]
    fn a_read_during_dlopen_does_not_hide_the_library() {
        let read = |ts, maps: &str| {
            let mut p = ProcMap::from_proc_maps(7, "shlib", maps);
            p.at = Some(MapsAt {
                ts,
                kind: MapsKind::Snapshot,
            });
            p
        };
        let prog = "400000-401000 r-xp 00000000 08:01 1 /bin/shlib\n";
        let during =
            format!("{prog}7f00000000-7f00009000 r--p 00000000 08:01 2 /etc/ld.so.cache\n");
        let after = format!(
            "{prog}7f00004000-7f00005000 r--p 00000000 08:01 3 /tmp/libgt.so\n\
             7f00005000-7f00006000 r-xp 00001000 08:01 3 /tmp/libgt.so\n"
        );
        let s = AddressSpaces::new([
            timed(7, 10, MapsKind::Exec, &[]),
            read(20, &during),
            read(90, &after),
        ]);
        let path = |ts, addr| s.find_at(7, Some(ts), addr).map(|m| m.path.as_str());
        assert_eq!(path(50, 0x7f00005100), Ok("/tmp/libgt.so"));
        assert_eq!(path(50, 0x400100), Ok("/bin/shlib"));
    }

    /// A system-wide recording read a short-lived process right after its
    /// exec, before the loader had mapped libc, and the process made its
    /// stacks and exited before the read again (CI counted 10 libc frames
    /// of such a process as anonymous instead of gone): a read before a
    /// stack is no proof that an address was unmapped at the stack.
    #[test]
    fn a_read_before_the_loader_mapped_libc_says_nothing_of_later_stacks() {
        use MapsKind::*;
        let pie = (0x55be_d2a8_0000, 0x55be_d2a8_5000, "/tmp/pie");
        let ld = (0x7f04_23e3_4000, 0x7f04_23e6_9000, "/lib/ld.so");
        let libc = 0x7f04_23d4_0829;
        let only_early = AddressSpaces::new([
            timed(7411, 100, Fork { parent: 1 }, &[]),
            timed(7411, 200, Exec, &[]),
            timed(7411, 250, Snapshot, &[pie, ld]),
        ]);
        let why = |s: &AddressSpaces, ts| s.find_at(7411, Some(ts), libc).map(|_| ());
        assert_eq!(
            only_early
                .find_at(7411, Some(300), 0x55be_d2a8_13f3)
                .unwrap()
                .path,
            "/tmp/pie"
        );
        assert_eq!(why(&only_early, 300), Err(Unresolved::ProcessUnknown));
        // At the end of the trace, the last read is what is known.
        assert_eq!(only_early.find(7411, libc), Err(Unresolved::Anonymous));
        // A stack before the read, or a read after the stack: known.
        assert_eq!(why(&only_early, 240), Err(Unresolved::Anonymous));
        let read_after = AddressSpaces::new([
            timed(7411, 200, Exec, &[]),
            timed(7411, 250, Snapshot, &[pie, ld]),
            timed(7411, 400, Snapshot, &[pie, ld]),
        ]);
        assert_eq!(why(&read_after, 300), Err(Unresolved::Anonymous));
        // The kernel's records name every mapping a stack is in, whenever.
        let records =
            AddressSpaces::new([timed(7411, 200, Exec, &[pie]), timed(7411, 250, Add, &[ld])]);
        assert_eq!(why(&records, 300), Err(Unresolved::Anonymous));
    }
}
