//! PROCMAPS collection: the merge rule of snapshots of one process
//! ([`merge_maps`]), the store they are merged into ([`MapsStore`]), the
//! poller of `-P` pids, their descendants and the processes seen in the
//! data ([`MapsTracker`]), and the scan of new pages for those processes
//! ([`StackPidScanner`]).

use crate::procwatch::{ProcEvent, Stamper};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use ustack_symbolize::procfs;
use ustack_tracedata::writer::{LibMap, ProcMap};
use ustack_tracedata::{FieldRef, Record};
use ustack_tracefs::Tracefs;

/// Merges a snapshot of one process's maps into what is known of it.
///
/// PROCMAPS holds one entry per pid, so everything seen of a process is
/// folded into one map: the union of the mappings of all its snapshots
/// (libraries loaded and unloaded between two snapshots, the images before
/// and after an exec). Where two snapshots disagree about an address range
/// the newer one wins: its mappings are kept whole and the older mappings
/// that overlap any of them are dropped. So the image in effect at the end
/// (e.g. `ls` after `sh` exec'd it) is exact, and the earlier images fill
/// only the address ranges the later one does not use. The comm is the
/// newest non-empty one.
///
/// An older mapping dropped that way is kept in `replaced` when it names
/// another file or base than the newer mapping over it: its addresses may
/// be in stacks taken before the exec, and the reader must not take them
/// for the newer image's.
///
/// `newer` says which of the two is the more recent snapshot (a poll can
/// finish after a later exec snapshot was already merged).
pub fn merge_maps(known: &mut ProcMap, snap: ProcMap, newer: bool) {
    let overlaps = |a: &LibMap, b: &LibMap| a.start < b.end && b.start < a.end;
    let (mut keep, old) = if newer {
        if !snap.comm.is_empty() {
            known.comm = snap.comm;
        }
        (snap.maps, std::mem::take(&mut known.maps))
    } else {
        if known.comm.is_empty() {
            known.comm = snap.comm;
        }
        (std::mem::take(&mut known.maps), snap.maps)
    };
    let fixed = keep.len();
    for r in snap.replaced {
        if !known.replaced.contains(&r) {
            known.replaced.push(r);
        }
    }
    for m in old {
        let mut over = keep[..fixed].iter().filter(|k| overlaps(k, &m)).peekable();
        if over.peek().is_none() {
            keep.push(m);
        } else if over.any(|k| k.path != m.path || k.start != m.start)
            && !known.replaced.contains(&m)
        {
            known.replaced.push(m);
        }
    }
    keep.sort_by_key(|m| m.start);
    known.maps = keep;
    known.replaced.sort_by_key(|m| m.start);
}

/// What is known of one process's maps.
struct MapsEntry {
    /// All its snapshots merged.
    merged: ProcMap,
    /// The newest snapshot alone, and when it was taken.
    last: ProcMap,
    at: Instant,
}

#[derive(Default)]
struct MapsState {
    /// Maps per tgid.
    maps: BTreeMap<u32, MapsEntry>,
    /// Processes of the ptrace'd command tree (ever seen).
    traced: HashSet<u32>,
    /// Processes of the ptrace'd command tree still alive: polled too, to
    /// catch mappings made and removed between their exec and exit.
    traced_live: HashSet<u32>,
    /// The threads known of each process (tgid -> tids): saved with its
    /// maps so that a reader resolves a thread through its process.
    threads: BTreeMap<u32, BTreeSet<u32>>,
    /// Stamps each /proc read with trace time, when a [`crate::ProcWatch`] runs.
    stamper: Option<Arc<Stamper>>,
    /// The stamped reads: (sequence number, snapshot).
    stamped: Vec<(u64, ProcMap)>,
}

/// The process maps gathered during one recording, shared between the
/// poller ([`MapsTracker`]) and the ptrace thread of the traced command
/// ([`crate::TracedCommand`]); snapshots are merged per process with
/// [`merge_maps`].
#[derive(Clone, Default)]
pub struct MapsStore(Arc<Mutex<MapsState>>);

impl MapsStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, MapsState> {
        // A panic elsewhere while holding the lock leaves valid data.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Merges a snapshot taken at `taken` (empty ones are ignored: a zombie
    /// or kernel thread has no maps).
    pub fn add(&self, snap: ProcMap, taken: Instant) {
        if snap.maps.is_empty() {
            return;
        }
        let mut st = self.lock();
        match st.maps.get_mut(&snap.pid) {
            Some(e) => {
                let newer = taken >= e.at;
                if newer {
                    e.last = snap.clone();
                    e.at = taken;
                }
                merge_maps(&mut e.merged, snap, newer);
            }
            None => {
                st.maps.insert(
                    snap.pid,
                    MapsEntry {
                        merged: snap.clone(),
                        last: snap,
                        at: taken,
                    },
                );
            }
        }
    }

    /// Stamps every later read with trace time (see [`crate::ProcWatch`]), so
    /// that [`MapsStore::timed_maps`] can say when each snapshot was true.
    pub fn set_stamper(&self, stamper: Arc<Stamper>) {
        self.lock().stamper = Some(stamper);
    }

    /// Reads `/proc/TGID/{comm,maps}` and its live threads now and merges
    /// them.
    pub fn read(&self, tgid: u32) -> bool {
        let stamper = self.lock().stamper.clone();
        let seq = stamper.as_ref().map(|s| {
            let seq = s.next();
            s.mark(seq, true);
            seq
        });
        let taken = Instant::now();
        let snap = procfs::read_proc_map(tgid);
        if let (Some(s), Some(seq)) = (&stamper, seq) {
            s.mark(seq, false);
        }
        let read = match snap {
            // A process that began to exit while its maps were read may
            // have lost mappings half-way through the read (exit_mm()
            // tears them down while /proc reads them without the mmap
            // lock): such a partial snapshot would replace good ranges.
            // PF_EXITING is set before exit_mm(), so a read that ended
            // before it is whole; a ptrace exit stop comes before both.
            Ok(_) if procfs::exiting(tgid) => false,
            Ok(m) if !m.maps.is_empty() => {
                if let Some(seq) = seq {
                    self.lock().stamped.push((seq, m.clone()));
                }
                self.add(m, taken);
                true
            }
            _ => false,
        };
        for tid in procfs::threads_of(tgid) {
            self.add_thread(tid, tgid);
        }
        read
    }

    /// Notes that task `tid` belongs to process `tgid`.
    pub fn add_thread(&self, tid: u32, tgid: u32) {
        if tid != tgid {
            self.lock().threads.entry(tgid).or_default().insert(tid);
        }
    }

    /// A forked child starts with its parent's mappings: the parent's
    /// newest snapshot (not its merged history: the child never ran the
    /// parent's earlier images) serves for the child's stacks until it
    /// execs, as an older snapshot than any of the child's own.
    ///
    /// The child may have been seen already (its first stop can be handled
    /// before the parent's fork event, and it may have exec'd since): then
    /// the parent's image only fills the ranges its own snapshots leave free.
    pub fn inherit(&self, child: u32, parent: u32) {
        let mut st = self.lock();
        let Some(p) = st.maps.get(&parent) else {
            return;
        };
        let mut m = p.last.clone();
        m.pid = child;
        let at = p.at;
        match st.maps.get_mut(&child) {
            Some(e) => merge_maps(&mut e.merged, m, false),
            None => {
                st.maps.insert(
                    child,
                    MapsEntry {
                        merged: m.clone(),
                        last: m,
                        at,
                    },
                );
            }
        }
    }

    /// Notes that `tgid` belongs to the ptrace'd tree and whether it is alive.
    pub fn set_traced(&self, tgid: u32, alive: bool) {
        let mut st = self.lock();
        st.traced.insert(tgid);
        if alive {
            st.traced_live.insert(tgid);
        } else {
            st.traced_live.remove(&tgid);
        }
    }

    /// True when `tgid` is (or was) in the ptrace'd tree.
    pub fn is_traced(&self, tgid: u32) -> bool {
        self.lock().traced.contains(&tgid)
    }

    fn traced_live(&self) -> Vec<u32> {
        self.lock().traced_live.iter().copied().collect()
    }

    /// The maps as timed PROCMAPS entries (see
    /// `ustack_tracedata::procmaps`), from the stamped reads and the
    /// lifecycle `events` of a [`crate::ProcWatch`] (all of them, in time order):
    /// each read at its time (a read that overlapped an exec of its
    /// process, from the entry of `execve` to the exec, is dropped: which
    /// image it saw is not known), each exec, each fork
    /// of a process whose maps matter (read, or forked from one that
    /// matters); the threads with their process. A process without any
    /// timed read keeps its merged, untimed entry.
    pub fn timed_maps(&self, events: &[ProcEvent]) -> Vec<ProcMap> {
        let st = self.lock();
        let untimed = st.maps.iter().map(|(&tgid, e)| (tgid, &e.merged));
        crate::timed::timed_maps(&st.stamped, &st.threads, untimed, events)
    }

    /// The merged maps, by pid, each with the threads known of it.
    pub fn maps(&self) -> Vec<ProcMap> {
        let st = self.lock();
        st.maps
            .iter()
            .map(|(tgid, e)| {
                let mut m = e.merged.clone();
                m.threads = st
                    .threads
                    .get(tgid)
                    .map(|t| t.iter().copied().collect())
                    .unwrap_or_default();
                m
            })
            .collect()
    }
}

/// Polls `/proc/PID/maps` of the processes whose user stacks may be in the
/// trace: the -P pids and their descendants (found by scanning /proc), the
/// processes seen with user stacks in the data, and the live processes of
/// a ptrace'd command (whose execs and exits [`crate::TracedCommand`] snapshots
/// itself). Every snapshot is merged into a [`MapsStore`].
#[derive(Default)]
pub struct MapsTracker {
    roots: Vec<u32>,
    pids: HashSet<u32>,
    /// Processes seen with user stacks in the recorded data (tgids); their
    /// maps are read when first seen, when seen again and once more at
    /// the end.
    seen: HashSet<u32>,
    /// When each seen process was last read.
    last_read: HashMap<u32, Instant>,
    /// Processes to read again at the next poll.
    again: Vec<u32>,
    store: MapsStore,
}

/// A process seen again with stacks is read again after this long.
const REREAD_AFTER: std::time::Duration = std::time::Duration::from_millis(50);

pub(crate) use procfs::tgid_of;

impl MapsTracker {
    /// Tracks `roots` (polled, with their descendants).
    pub fn new(roots: Vec<u32>) -> MapsTracker {
        MapsTracker::with_store(roots, MapsStore::default())
    }

    /// Like [`MapsTracker::new`], merging into `store` (shared with a
    /// [`crate::TracedCommand`]).
    pub fn with_store(roots: Vec<u32>, store: MapsStore) -> MapsTracker {
        let pids = roots.iter().copied().collect();
        MapsTracker {
            roots,
            pids,
            seen: HashSet::new(),
            last_read: HashMap::new(),
            again: Vec::new(),
            store,
        }
    }

    /// Adds the descendants of the roots (scans /proc for parent pids).
    pub fn scan_children(&mut self) {
        if self.roots.is_empty() {
            return;
        }
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for pid in procfs::pids() {
            if let Some(ppid) = procfs::parent_of(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
        let mut todo: Vec<u32> = self.pids.iter().copied().collect();
        while let Some(p) = todo.pop() {
            for &c in children.get(&p).into_iter().flatten() {
                if self.pids.insert(c) {
                    todo.push(c);
                }
            }
        }
    }

    /// Reads the maps of every tracked process that is still alive.
    pub fn snapshot(&mut self) {
        let pids: Vec<u32> = self.pids.iter().copied().collect();
        for pid in pids {
            match tgid_of(pid) {
                Some(tgid) => {
                    self.store.read(tgid);
                }
                // Gone: keep its last maps, stop looking (and never look
                // again at a recycled pid that is not a descendant).
                None if !self.roots.contains(&pid) => {
                    self.pids.remove(&pid);
                }
                None => {}
            }
        }
        for tgid in self.store.traced_live() {
            self.store.read(tgid);
        }
    }

    /// Adds a task seen with a user stack in the trace and reads its
    /// process's maps right away (before it can exit).
    pub fn add_seen(&mut self, pid: u32) {
        if pid == 0 || self.pids.contains(&pid) {
            return;
        }
        let Some(tgid) = tgid_of(pid) else { return };
        self.store.add_thread(pid, tgid);
        // The ptrace'd tree is snapshotted at its execs and exits already.
        if self.store.is_traced(tgid) {
            return;
        }
        self.seen.insert(tgid);
        self.read_seen(tgid);
    }

    /// Reads a seen process's maps, again when it shows up again (a
    /// library it loaded since, or its loader had not mapped its
    /// libraries yet at the last read), at most once per poll.
    fn read_seen(&mut self, tgid: u32) {
        let now = Instant::now();
        let fresh = self
            .last_read
            .get(&tgid)
            .is_some_and(|&t| now.duration_since(t) < REREAD_AFTER);
        if !fresh {
            self.last_read.insert(tgid, now);
            self.store.read(tgid);
        }
    }

    /// Reads the maps of the processes seen in the trace once more (those
    /// still alive), to catch libraries loaded since they were first seen.
    pub fn refresh_seen(&mut self) {
        for &tgid in &self.seen {
            self.store.read(tgid);
        }
    }

    /// Reads the maps of the processes that the lifecycle events `ev` show
    /// first, or show exec'ing: all of them when `everyone` (a recording
    /// of the whole system), else those of the tracked pids and the
    /// processes seen with stacks (the ptrace'd command is read at its
    /// own stops).
    pub fn on_events(&mut self, ev: &[ProcEvent], everyone: bool) {
        // Read right after an exec, the loader may not have mapped the
        // libraries yet: those are read again one poll later.
        for tgid in std::mem::take(&mut self.again) {
            self.read_seen(tgid);
        }
        for e in ev {
            match *e {
                ProcEvent::Exec { pid, .. } => {
                    let ours = everyone || self.pids.contains(&pid) || self.seen.contains(&pid);
                    if ours && !self.store.is_traced(pid) {
                        self.seen.insert(pid);
                        self.last_read.insert(pid, Instant::now());
                        self.store.read(pid);
                        self.again.push(pid);
                    }
                }
                ProcEvent::NewTask {
                    parent,
                    thread: false,
                    ..
                } if everyone => self.add_seen(parent),
                // A child of a tracked process is tracked from its fork
                // (its exec is read above), not from the next /proc scan.
                ProcEvent::NewTask {
                    parent,
                    child,
                    thread: false,
                    ..
                } if self.pids.contains(&parent) => {
                    self.pids.insert(child);
                }
                _ => {}
            }
        }
    }

    /// Adds the threads of the kernel's `saved_tgids` table (`PID TGID`
    /// lines, filled while the `record-tgid` option is on).
    pub fn add_saved_tgids(&mut self, text: &str) {
        for l in text.lines() {
            let mut w = l.split_ascii_whitespace().map(str::parse::<u32>);
            if let (Some(Ok(tid)), Some(Ok(tgid))) = (w.next(), w.next()) {
                if tgid != 0 {
                    self.store.add_thread(tid, tgid);
                }
            }
        }
    }

    /// Adds the threads of `fs`'s `saved_tgids` (see
    /// [`MapsTracker::add_saved_tgids`]), when it can be read.
    pub fn add_saved_tgids_of(&mut self, fs: &Tracefs) {
        if let Ok(t) = fs.read("saved_tgids") {
            self.add_saved_tgids(&String::from_utf8_lossy(&t));
        }
    }

    /// The merged maps of every process seen so far.
    pub fn maps(&self) -> Vec<ProcMap> {
        self.store.maps()
    }

    /// The maps of every process seen so far, timed by the lifecycle
    /// events of a [`crate::ProcWatch`] (see [`MapsStore::timed_maps`]).
    pub fn timed_maps(&self, events: &[ProcEvent]) -> Vec<ProcMap> {
        self.store.timed_maps(events)
    }
}

/// Finds the tasks that have user stacks in the data recorded so far, by
/// reading back the new whole pages of the per-CPU files (from the page
/// cache; this side path does not slow the splice path down) and looking
/// at the `user_stack` / `user_unwind_*` events.
pub struct StackPidScanner {
    files: Vec<(File, u64)>,
    /// The stack events: event id -> its `common_pid` (an `int`).
    ids: HashMap<u16, FieldRef>,
    header: ustack_tracedata::header::HeaderPage,
    page_size: u64,
}

impl StackPidScanner {
    /// `None` when the kernel has none of the stack events.
    pub fn new(
        fs: &Tracefs,
        page_size: usize,
        paths: &[(u32, PathBuf)],
    ) -> Result<Option<StackPidScanner>> {
        let mut ids = HashMap::new();
        for name in [
            "user_stack",
            "user_unwind_stack",
            "user_unwind_stack_snapshot",
            "user_unwind_cookie",
        ] {
            let Ok(text) = fs.event_format("ftrace", name) else {
                continue;
            };
            let Ok(f) = ustack_tracedata::format::EventFormat::parse("ftrace", &text) else {
                continue;
            };
            if let Some(pid) = FieldRef::of(&f, "common_pid").filter(|p| p.size() == 4) {
                ids.insert(f.id, pid);
            }
        }
        if ids.is_empty() {
            return Ok(None);
        }
        let header = ustack_tracedata::header::HeaderPage::parse(&fs.header_page()?)?;
        let mut files = Vec::new();
        for (_, p) in paths {
            files.push((
                File::open(p).with_context(|| format!("cannot open {}", p.display()))?,
                0,
            ));
        }
        Ok(Some(StackPidScanner {
            files,
            ids,
            header,
            page_size: page_size as u64,
        }))
    }

    /// Scans everything written, the last partial page included (the
    /// files are complete: `extract`); returns the pids found.
    pub fn scan_all(&mut self) -> HashSet<u32> {
        use std::os::unix::fs::FileExt;
        let mut pids = self.scan();
        // A partial last page, padded to a whole one.
        for (file, done) in &mut self.files {
            let len = file.metadata().map_or(*done, |m| m.len());
            let mut rest =
                vec![0u8; (len.saturating_sub(*done) as usize).min(self.page_size as usize)];
            if rest.is_empty() || file.read_at(&mut rest, *done).is_err() {
                continue;
            }
            rest.resize(self.page_size as usize, 0);
            if let Ok(p) = ustack_tracedata::page::Page::new(&rest, &self.header) {
                for (_, data) in p.events().flatten() {
                    if let Some(pid) = stack_pid(&self.ids, data) {
                        pids.insert(pid);
                    }
                }
            }
            *done += rest.len() as u64;
        }
        pids
    }

    /// Scans the pages written since the last call; returns the pids found.
    pub fn scan(&mut self) -> HashSet<u32> {
        use std::os::unix::fs::FileExt;
        let mut pids = HashSet::new();
        let mut buf = vec![0u8; (self.page_size as usize) * 64];
        for (file, done) in &mut self.files {
            let Ok(len) = file.metadata().map(|m| m.len()) else {
                continue;
            };
            let end = len - len % self.page_size;
            while *done < end {
                let want = ((end - *done) as usize).min(buf.len());
                let Ok(n) = file.read_at(&mut buf[..want], *done) else {
                    break;
                };
                let n = n - n % self.page_size as usize;
                if n == 0 {
                    break;
                }
                for page in buf[..n].chunks(self.page_size as usize) {
                    let Ok(p) = ustack_tracedata::page::Page::new(page, &self.header) else {
                        continue;
                    };
                    for (_, data) in p.events().flatten() {
                        if let Some(pid) = stack_pid(&self.ids, data) {
                            pids.insert(pid);
                        }
                    }
                }
                *done += n as u64;
            }
        }
        pids
    }
}

/// The pid of a stack event (one of `ids`), if `data` is one.
fn stack_pid(ids: &HashMap<u16, FieldRef>, data: &[u8]) -> Option<u32> {
    let id = Record::new(0, 0, data).common_type()?;
    let pid = ids.get(&id)?.i64(data)?;
    (pid > 0).then_some(pid as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use ustack_tracedata::{MapsAt, MapsKind};

    fn payload(id: u16, pid: i32) -> Vec<u8> {
        let mut p = vec![0u8; 16];
        p[0..2].copy_from_slice(&id.to_le_bytes());
        p[4..8].copy_from_slice(&pid.to_le_bytes());
        p
    }

    #[test]
    fn stack_pid_scanner_finds_user_stack_tasks_in_new_pages_only() {
        use ustack_tracedata::page::build::PageBuilder;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tracefs");
        let put = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            "events/header_page",
            "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
             \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
             \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
             \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
        );
        let common =
            "format:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
             \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
             \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
             \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";
        put(
            "events/ftrace/user_stack/format",
            &format!("name: user_stack\nID: 12\n{common}"),
        );
        put(
            "events/ftrace/kernel_stack/format",
            &format!("name: kernel_stack\nID: 4\n{common}"),
        );
        let fs = Tracefs::at(&root).unwrap();
        let data = dir.path().join("cpu0");
        std::fs::write(&data, b"").unwrap();
        let mut sc = StackPidScanner::new(&fs, 4096, &[(0, data.clone())])
            .unwrap()
            .unwrap();
        assert!(sc.scan().is_empty());

        let page = |events: &[(u16, i32)]| {
            let mut b = PageBuilder::new(1000);
            for &(id, pid) in events {
                b = b.event(1, &payload(id, pid), false);
            }
            b.finish(4096).unwrap()
        };
        let mut bytes = page(&[(300, 7), (12, 42), (4, 43), (12, 42)]);
        bytes.extend(page(&[(12, 99)]));
        std::fs::write(&data, &bytes).unwrap();
        let got: std::collections::BTreeSet<u32> = sc.scan().into_iter().collect();
        assert_eq!(got, [42, 99].into_iter().collect());
        // A partial page at the end is left for later; old pages are not read again.
        bytes.extend(page(&[(12, 5)]));
        bytes.extend_from_slice(&page(&[(12, 6)])[..100]);
        std::fs::write(&data, &bytes).unwrap();
        let got: Vec<u32> = sc.scan().into_iter().collect();
        assert_eq!(got, vec![5]);
    }

    trait WithReplaced {
        fn with_replaced(self, r: &[(u64, u64, &str)]) -> ProcMap;
    }

    impl WithReplaced for ProcMap {
        fn with_replaced(mut self, r: &[(u64, u64, &str)]) -> ProcMap {
            self.replaced = pm(0, "", r).maps;
            self
        }
    }

    fn pm(pid: u32, comm: &str, maps: &[(u64, u64, &str)]) -> ProcMap {
        ProcMap {
            pid,
            comm: comm.into(),
            maps: maps
                .iter()
                .map(|&(start, end, path)| LibMap {
                    start,
                    end,
                    path: path.into(),
                })
                .collect(),
            threads: vec![],
            replaced: Vec::new(),
            at: None,
        }
    }

    #[test]
    fn a_newer_snapshot_wins_where_ranges_overlap_and_the_rest_is_kept() {
        // sh forked, then exec'd ls: ls's libc lands over sh's libc, sh's
        // binary range stays free.
        let mut known = pm(
            7,
            "sh",
            &[
                (0x1000, 0x3000, "/usr/bin/dash"),
                (0x10000, 0x20000, "/lib/libc.so.6"),
            ],
        );
        let ls = pm(
            7,
            "ls",
            &[
                (0x5000, 0x6000, "/usr/bin/ls"),
                (0x18000, 0x28000, "/lib/libc.so.6"),
            ],
        );
        merge_maps(&mut known, ls.clone(), true);
        // sh's libc at another base is kept as replaced: an address there
        // belongs to sh or to ls.
        let sh_libc = LibMap {
            start: 0x10000,
            end: 0x20000,
            path: "/lib/libc.so.6".into(),
        };
        assert_eq!(known.replaced, [sh_libc]);
        known.replaced.clear();
        assert_eq!(
            known,
            pm(
                7,
                "ls",
                &[
                    (0x1000, 0x3000, "/usr/bin/dash"),
                    (0x5000, 0x6000, "/usr/bin/ls"),
                    (0x18000, 0x28000, "/lib/libc.so.6"),
                ]
            )
        );
        // The same file at the same base is no replacement.
        let mut same = pm(8, "x", &[(0x1000, 0x2000, "/x")]);
        merge_maps(&mut same, pm(8, "x", &[(0x1000, 0x3000, "/x")]), true);
        assert!(same.replaced.is_empty());
        // The same sh snapshot arriving late (a poll that started before
        // the exec) changes nothing that the newer one covers.
        let mut late = ls.clone();
        late.replaced.clear();
        merge_maps(
            &mut late,
            pm(
                7,
                "sh",
                &[
                    (0x1000, 0x3000, "/usr/bin/dash"),
                    (0x10000, 0x20000, "/lib/libc.so.6"),
                    (0x40000, 0x41000, "/lib/libdl.so"),
                ],
            ),
            false,
        );
        assert_eq!(
            late,
            pm(
                7,
                "ls",
                &[
                    (0x1000, 0x3000, "/usr/bin/dash"),
                    (0x5000, 0x6000, "/usr/bin/ls"),
                    (0x18000, 0x28000, "/lib/libc.so.6"),
                    (0x40000, 0x41000, "/lib/libdl.so"),
                ]
            )
            .with_replaced(&[(0x10000, 0x20000, "/lib/libc.so.6")])
        );
        // A library unloaded since the last snapshot stays (its addresses
        // may be in earlier stacks); touching ranges do not overlap.
        let mut k = pm(
            1,
            "a",
            &[(0x1000, 0x2000, "/x"), (0x2000, 0x3000, "/plugin")],
        );
        merge_maps(&mut k, pm(1, "", &[(0x1000, 0x2000, "/x")]), true);
        assert_eq!(
            k,
            pm(
                1,
                "a",
                &[(0x1000, 0x2000, "/x"), (0x2000, 0x3000, "/plugin")]
            )
        );
    }

    #[test]
    fn the_store_merges_by_time_taken_and_forks_inherit() {
        let store = MapsStore::default();
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(5);
        // pid 5 was the recorder's copy before exec'ing sh: a child of sh
        // inherits sh's image only.
        store.add(pm(5, "rec", &[(0x9000, 0xa000, "/rec")]), t0);
        store.add(pm(5, "sh", &[(0x1000, 0x2000, "/bin/sh")]), t0);
        store.inherit(6, 5);
        store.add(pm(6, "ls", &[(0x1800, 0x2800, "/bin/ls")]), t1);
        // Older than what pid 6 has: only fills free ranges.
        store.add(pm(6, "sh", &[(0x1000, 0x2000, "/bin/sh")]), t0);
        // Empty snapshots (zombies) are ignored; inheriting again only
        // fills free ranges.
        store.add(pm(6, "zombie", &[]), t1 + Duration::from_millis(1));
        store.inherit(6, 5);
        assert_eq!(
            store.maps(),
            vec![
                pm(
                    5,
                    "sh",
                    &[(0x1000, 0x2000, "/bin/sh"), (0x9000, 0xa000, "/rec")]
                ),
                // sh's image under ls's: stacks from before the exec
                // must not be read as ls's.
                pm(6, "ls", &[(0x1800, 0x2800, "/bin/ls")])
                    .with_replaced(&[(0x1000, 0x2000, "/bin/sh")]),
            ]
        );
        store.add(pm(5, "sh", &[(0x3000, 0x4000, "/lib/libc")]), t1);
        store.inherit(6, 5);
        assert_eq!(
            store.maps()[1],
            pm(
                6,
                "ls",
                &[(0x1800, 0x2800, "/bin/ls"), (0x3000, 0x4000, "/lib/libc")]
            )
            .with_replaced(&[(0x1000, 0x2000, "/bin/sh")])
        );
        // Threads are saved with their process, never as processes.
        store.add_thread(9, 5);
        store.add_thread(8, 5);
        store.add_thread(5, 5);
        store.add_thread(10, 11);
        let maps = store.maps();
        assert_eq!(maps.iter().map(|m| m.pid).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(maps[0].threads, [8, 9]);
        assert!(maps[1].threads.is_empty());
        let mut tracker = MapsTracker::with_store(vec![], store.clone());
        tracker.add_saved_tgids("12 5\n13 0\nbad\n14 99\n");
        assert_eq!(store.maps()[0].threads, [8, 9, 12]);
        store.set_traced(6, true);
        assert!(store.is_traced(6) && !store.is_traced(5));
        assert_eq!(store.traced_live(), vec![6]);
        store.set_traced(6, false);
        assert!(store.is_traced(6));
        assert!(store.traced_live().is_empty());
    }

    #[test]
    fn timed_maps_say_when_each_read_was_true() {
        use ProcEvent::*;
        let store = MapsStore::default();
        let mark = |seq, b, a| {
            [
                Mark {
                    ts: b,
                    seq,
                    before: true,
                },
                Mark {
                    ts: a,
                    seq,
                    before: false,
                },
            ]
        };
        let mut st = store.lock();
        // Read 0 of pid 10 at 100..110; read 1 of pid 10 at 200..210, which
        // its exec at 205 overlapped; read 2 of pid 30 (an untouched
        // process); pid 40 has an untimed snapshot only.
        st.stamped.push((0, pm(10, "a", &[(0x1000, 0x2000, "/a")])));
        st.stamped.push((1, pm(10, "b", &[(0x1000, 0x2000, "/b")])));
        st.stamped.push((2, pm(30, "c", &[(0x5000, 0x6000, "/c")])));
        st.stamped
            .push((9, pm(31, "lost", &[(0x5000, 0x6000, "/c")])));
        drop(st);
        store.add(pm(40, "d", &[(0x7000, 0x8000, "/d")]), Instant::now());
        store.add(pm(10, "a", &[(0x1000, 0x2000, "/a")]), Instant::now());
        store.add_thread(12, 10);
        let mut ev = Vec::new();
        ev.extend(mark(0, 100, 110));
        ev.push(NewTask {
            ts: 120,
            parent: 12,
            child: 11,
            thread: false,
        });
        ev.push(NewTask {
            ts: 130,
            parent: 11,
            child: 13,
            thread: true,
        });
        ev.push(NewTask {
            ts: 140,
            parent: 99,
            child: 98,
            thread: false,
        });
        ev.extend(mark(1, 200, 210));
        ev.push(Exec { ts: 205, pid: 10 });
        ev.push(Exec { ts: 300, pid: 98 });
        ev.extend(mark(2, 400, 410));
        ev.sort_by_key(|e| e.ts());
        let at = |ts, kind| Some(MapsAt { ts, kind });
        let timed = |mut p: ProcMap, ts, kind| {
            p.at = at(ts, kind);
            p
        };
        let bare = |pid, ts, kind| timed(pm(pid, "", &[]), ts, kind);
        let mut want = vec![
            timed(
                pm(10, "a", &[(0x1000, 0x2000, "/a")]),
                110,
                MapsKind::Snapshot,
            ),
            bare(10, 205, MapsKind::Exec),
            bare(11, 120, MapsKind::Fork { parent: 10 }),
            timed(
                pm(30, "c", &[(0x5000, 0x6000, "/c")]),
                410,
                MapsKind::Snapshot,
            ),
            pm(40, "d", &[(0x7000, 0x8000, "/d")]),
        ];
        let mut threads = pm(10, "", &[]);
        threads.threads = vec![12];
        want.push(threads);
        let mut threads = pm(11, "", &[]);
        threads.threads = vec![13];
        want.push(threads);
        want.sort_by_key(|m| (m.pid, m.at.map(|a| a.ts)));
        assert_eq!(store.timed_maps(&ev), want);
    }
}
