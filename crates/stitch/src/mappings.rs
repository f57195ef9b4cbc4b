//! The kernel's mapping records (`ftrace:user_unwind_mapping`): which file
//! each user address of a process was in, written into the trace itself,
//! so that a process that exited long before the trace was read still
//! symbolizes, without `/proc` or ptrace.
//!
//! With the `userstacktrace_maps` option, the kernel writes one record per
//! file mapping that frames of a `user_unwind_stack` entry are in, before
//! that stack entry, once per process image (exec) and tracing session
//! (again after events were lost on the CPU it went to). A record carries
//! the process (`tgid`, and `exec_id`, which changes on each exec), the
//! range, the file offset, the ELF build ID and the path; `common_pid` is
//! the thread whose stack needed it.
//!
//! [`KernelMaps`] holds them per process in time order and answers "which
//! mapping held `addr` in process `tgid` at time `ts`" ([`KernelMaps::find`]):
//! the latest record of the process before `ts` names its image (its
//! `exec_id`), and only records of that image count. [`KernelMaps::proc_maps`]
//! gives the same records without times, as PROCMAPS-like entries, for
//! symbolizers that have no time.

use std::collections::{BTreeSet, HashMap};

use ustack_tracedata::format::EventFormat;
use ustack_tracedata::{LibMap, MapsAt, MapsKind, ProcMap, Record};

/// One `user_unwind_mapping` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Time of the record (ns, as the trace's clock).
    pub ts: u64,
    /// The thread whose stack needed the record (`common_pid`).
    pub tid: u32,
    /// Its process.
    pub tgid: u32,
    /// Changes on each exec of the process.
    pub exec_id: u32,
    /// First address of the mapping.
    pub start: u64,
    /// End of the mapping (exclusive).
    pub end: u64,
    /// Offset in the file of `start`.
    pub offset: u64,
    /// ELF build ID of the file (empty when it has none).
    pub build_id: Vec<u8>,
    /// Path of the file, as the process saw it.
    pub path: String,
}

impl Mapping {
    /// The build ID in hex (as `readelf -n` prints it).
    pub fn build_id_hex(&self) -> String {
        self.build_id.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Where the file's offset 0 would be mapped: its load base.
    pub fn base(&self) -> u64 {
        self.start.saturating_sub(self.offset)
    }

    fn holds(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }
}

/// The decoder of `user_unwind_mapping` records of one file.
#[derive(Debug, Clone)]
pub struct MappingFormat {
    format: EventFormat,
}

impl MappingFormat {
    /// Finds `ftrace:user_unwind_mapping` among `formats`.
    pub fn new<'f>(formats: impl IntoIterator<Item = &'f EventFormat>) -> Option<Self> {
        formats
            .into_iter()
            .find(|f| f.system == "ftrace" && f.name == "user_unwind_mapping")
            .map(|f| MappingFormat { format: f.clone() })
    }

    /// The event id of the records.
    pub fn id(&self) -> u16 {
        self.format.id
    }

    /// Decodes one record; `None` for another event or a record that does
    /// not decode (truncated, a field missing, a range that is empty).
    pub fn decode(&self, rec: &Record<'_>) -> Option<Mapping> {
        let f = &self.format;
        if rec.common_type()? != f.id {
            return None;
        }
        let field = |n| rec.u64_field(f, n).ok();
        let (start, end, offset) = (field("start")?, field("end")?, field("offset")?);
        let tgid = u32::try_from(rec.i64_field(f, "tgid").ok()?).ok()?;
        let tid = u32::try_from(rec.common_pid()?).ok()?;
        let exec_id = u32::try_from(field("exec_id")?).ok()?;
        let id = rec.field_bytes(f, "build_id").ok()?;
        let n = usize::try_from(field("build_id_size")?).ok()?.min(id.len());
        let path = rec.str_field(f, "path").ok()?.into_owned();
        (start < end).then(|| Mapping {
            ts: rec.ts,
            tid,
            tgid,
            exec_id,
            start,
            end,
            offset,
            build_id: id[..n].to_vec(),
            path,
        })
    }
}

/// Records of one process that [`KernelMaps::proc_maps`] looks at (the
/// latest): far more than the file mappings of any real process.
pub const MAX_PROC_MAPS_RECORDS: usize = 4096;

/// The mapping records of a trace, per process, in time order.
#[derive(Debug, Clone, Default)]
pub struct KernelMaps {
    procs: HashMap<u32, Vec<Mapping>>,
    /// Records pushed.
    len: usize,
}

impl KernelMaps {
    /// Adds a record. Records of a process are kept sorted by time.
    pub fn push(&mut self, m: Mapping) {
        let v = self.procs.entry(m.tgid).or_default();
        let at = v.partition_point(|o| o.ts <= m.ts);
        v.insert(at, m);
        self.len += 1;
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the trace has no record.
    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }

    /// The processes with records, in ascending order.
    pub fn tgids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.procs.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The records of process `tgid`, in time order.
    pub fn of(&self, tgid: u32) -> &[Mapping] {
        self.procs.get(&tgid).map_or(&[], Vec::as_slice)
    }

    /// The threads that wrote records, with their process, in ascending
    /// order: what the records tell of which task belongs to which process.
    pub fn threads(&self) -> Vec<(u32, u32)> {
        let set: BTreeSet<(u32, u32)> = self
            .procs
            .values()
            .flatten()
            .map(|m| (m.tid, m.tgid))
            .collect();
        set.into_iter().collect()
    }

    /// The mapping that held `addr` in process `tgid` at time `ts`: among
    /// the records written up to `ts`, those of the process's image at
    /// that time (the `exec_id` of the latest one), the latest that covers
    /// `addr`. `None`: the address was in no file mapping the kernel
    /// described (anonymous memory, or no record for the process).
    pub fn find(&self, tgid: u32, ts: u64, addr: u64) -> Option<&Mapping> {
        let v = self.procs.get(&tgid)?;
        let upto = &v[..v.partition_point(|m| m.ts <= ts)];
        let image = upto.last()?.exec_id;
        upto.iter()
            .rev()
            .filter(|m| m.exec_id == image)
            .find(|m| m.holds(addr))
    }

    /// The records without times, as one PROCMAPS-like entry per process:
    /// the mappings of its last image as `maps` (one per file and load
    /// base, as PROCMAPS has them), those of earlier images, and those a
    /// later record of the same image mapped over, as `replaced`; the
    /// threads that wrote records as `threads`.
    pub fn proc_maps(&self) -> Vec<ProcMap> {
        self.proc_maps_with(|_, (start, _), offset| start.saturating_sub(offset))
    }

    /// Like [`KernelMaps::proc_maps`], with the load base of each record
    /// given by `base(path, (start, end), offset)`: PROCMAPS names where a file's
    /// lowest segment is mapped, which only the file's program headers tell
    /// from a (start, offset) pair (`ustack_symbolize::elf::base_distance`).
    /// [`KernelMaps::proc_maps`] assumes that file offsets and addresses
    /// move together (`start - offset`), true of most but not all files.
    pub fn proc_maps_with(
        &self,
        mut base: impl FnMut(&str, (u64, u64), u64) -> u64,
    ) -> Vec<ProcMap> {
        let threads = self.threads();
        self.tgids()
            .into_iter()
            .map(|tgid| {
                // Overlaps are found pairwise: a hostile file cannot make that
                // quadratic beyond the last records of a process.
                let v = self.of(tgid);
                let v = &v[v.len().saturating_sub(MAX_PROC_MAPS_RECORDS)..];
                let last = v.last().map_or(0, |m| m.exec_id);
                let mut maps: Vec<LibMap> = Vec::new();
                let mut replaced: Vec<LibMap> = Vec::new();
                for (i, m) in v.iter().enumerate() {
                    let later_over = v[i + 1..].iter().any(|o| {
                        o.exec_id == m.exec_id
                            && o.start < m.end
                            && m.start < o.end
                            && (o.path != m.path || o.base() != m.base())
                    });
                    let lib = LibMap {
                        start: base(&m.path, (m.start, m.end), m.offset),
                        end: m.end,
                        path: m.path.clone(),
                    };
                    if m.exec_id == last && !later_over {
                        merge(&mut maps, lib);
                    } else {
                        merge(&mut replaced, lib);
                    }
                }
                maps.sort_by_key(|l| l.start);
                ProcMap {
                    pid: tgid,
                    comm: String::new(),
                    maps,
                    threads: threads
                        .iter()
                        .filter(|&&(t, g)| g == tgid && t != tgid)
                        .map(|&(t, _)| t)
                        .collect(),
                    replaced,
                    at: None,
                }
            })
            .collect()
    }

    /// Each record as a timed observation for
    /// `ustack_symbolize::spaces::AddressSpaces`: [`MapsKind::Add`] at the
    /// record's time, or [`MapsKind::Exec`] where the process's `exec_id`
    /// changed since its previous record (a new image), with the load base
    /// given by `base` as in [`KernelMaps::proc_maps_with`]. Only the
    /// latest [`MAX_PROC_MAPS_RECORDS`] of a process count.
    pub fn timed_proc_maps_with(
        &self,
        mut base: impl FnMut(&str, (u64, u64), u64) -> u64,
    ) -> Vec<ProcMap> {
        let mut out = Vec::new();
        for tgid in self.tgids() {
            let v = self.of(tgid);
            let mut image = None;
            for m in &v[v.len().saturating_sub(MAX_PROC_MAPS_RECORDS)..] {
                let kind = match image.replace(m.exec_id) {
                    Some(i) if i != m.exec_id => MapsKind::Exec,
                    _ => MapsKind::Add,
                };
                out.push(ProcMap {
                    pid: tgid,
                    comm: String::new(),
                    maps: vec![LibMap {
                        start: base(&m.path, (m.start, m.end), m.offset),
                        end: m.end,
                        path: m.path.clone(),
                    }],
                    threads: if m.tid == tgid { vec![] } else { vec![m.tid] },
                    replaced: Vec::new(),
                    at: Some(MapsAt { ts: m.ts, kind }),
                });
            }
        }
        out
    }
}

/// Adds `lib` to `v`, as one range per (path, load base).
fn merge(v: &mut Vec<LibMap>, lib: LibMap) {
    match v
        .iter_mut()
        .find(|l| l.path == lib.path && l.start == lib.start)
    {
        Some(l) => l.end = l.end.max(lib.end),
        None => v.push(lib),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ts: u64, tgid: u32, exec_id: u32, start: u64, end: u64, off: u64, path: &str) -> Mapping {
        Mapping {
            ts,
            tid: tgid,
            tgid,
            exec_id,
            start,
            end,
            offset: off,
            build_id: vec![0xab, 0x01],
            path: path.into(),
        }
    }

    #[test]
    fn find_follows_time_and_exec() {
        let mut k = KernelMaps::default();
        // pid 5 runs /bin/a, then execs /bin/b, whose heap is anonymous
        // where /bin/a's libx was.
        k.push(m(100, 5, 1, 0x401000, 0x480000, 0x1000, "/bin/a"));
        k.push(m(150, 5, 1, 0x7f00_0000, 0x7f10_0000, 0, "/lib/x"));
        k.push(m(300, 5, 2, 0x401000, 0x420000, 0x1000, "/bin/b"));
        assert_eq!(k.find(5, 99, 0x401000), None, "before any record");
        assert_eq!(k.find(5, 100, 0x401000).unwrap().path, "/bin/a");
        assert_eq!(k.find(5, 200, 0x7f00_0010).unwrap().path, "/lib/x");
        assert_eq!(k.find(5, 300, 0x401000).unwrap().path, "/bin/b");
        assert_eq!(k.find(5, 400, 0x7f00_0010), None, "libx died with exec");
        assert_eq!(k.find(5, 400, 0x430000), None);
        assert_eq!(k.find(6, 400, 0x401000), None);
    }

    #[test]
    fn timed_records_resolve_by_time_in_address_spaces() {
        use ustack_symbolize::spaces::AddressSpaces;
        let mut k = KernelMaps::default();
        k.push(m(100, 5, 1, 0x401000, 0x480000, 0x1000, "/bin/a"));
        k.push(m(150, 5, 1, 0x7f00_0000, 0x7f10_0000, 0, "/lib/x"));
        let mut b = m(300, 5, 2, 0x401000, 0x420000, 0x1000, "/bin/b");
        b.tid = 7;
        k.push(b);
        let timed = k.timed_proc_maps_with(|_, (start, _), off| start - off);
        let kinds: Vec<_> = timed.iter().map(|p| p.at.unwrap().kind).collect();
        assert_eq!(kinds, [MapsKind::Add, MapsKind::Add, MapsKind::Exec]);
        let spaces = AddressSpaces::new(timed);
        let path = |tid, ts, addr| spaces.find_at(tid, Some(ts), addr).map(|l| l.path.clone());
        assert_eq!(path(5, 200, 0x401000).as_deref(), Ok("/bin/a"));
        assert_eq!(path(5, 200, 0x7f00_0010).as_deref(), Ok("/lib/x"));
        assert_eq!(path(7, 400, 0x401000).as_deref(), Ok("/bin/b"), "thread");
        assert!(path(5, 400, 0x7f00_0010).is_err(), "libx died with exec");
    }

    #[test]
    fn a_later_record_wins_in_its_image() {
        let mut k = KernelMaps::default();
        // dlopen(libp), dlclose, dlopen(libq) at the same address
        k.push(m(10, 7, 1, 0x1000_0000, 0x1001_0000, 0, "/lib/p"));
        k.push(m(20, 7, 1, 0x1000_0000, 0x1002_0000, 0, "/lib/q"));
        assert_eq!(k.find(7, 15, 0x1000_0100).unwrap().path, "/lib/p");
        assert_eq!(k.find(7, 25, 0x1000_0100).unwrap().path, "/lib/q");
        let pm = k.proc_maps();
        assert_eq!(pm.len(), 1);
        assert_eq!(pm[0].maps.len(), 1);
        assert_eq!(pm[0].maps[0].path, "/lib/q");
        assert_eq!(pm[0].replaced.len(), 1);
        assert_eq!(pm[0].replaced[0].path, "/lib/p");
    }

    #[test]
    fn proc_maps_merges_segments_by_load_base() {
        let mut k = KernelMaps::default();
        let mut t = m(10, 9, 1, 0x401000, 0x480000, 0x1000, "/bin/a");
        t.tid = 11;
        k.push(t);
        k.push(m(20, 9, 1, 0x480000, 0x4a0000, 0x80000, "/bin/a"));
        k.push(m(30, 9, 1, 0x7f00_1000, 0x7f00_9000, 0x1000, "/lib/c"));
        let pm = k.proc_maps();
        assert_eq!(pm[0].pid, 9);
        assert_eq!(pm[0].threads, vec![11]);
        let got: Vec<_> = pm[0]
            .maps
            .iter()
            .map(|l| (l.start, l.end, l.path.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0x400000, 0x4a0000, "/bin/a"),
                (0x7f00_0000, 0x7f00_9000, "/lib/c")
            ]
        );
        assert!(pm[0].replaced.is_empty());
        assert_eq!(k.threads(), vec![(9, 9), (11, 9)]);
        assert_eq!(k.of(9)[0].build_id_hex(), "ab01");
    }
}
