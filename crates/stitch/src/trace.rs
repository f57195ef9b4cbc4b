//! Adapter from trace.dat records (`tracedata`) to stitcher [`Input`]s, and
//! the compact per-event index that the report and the TUI share.
//!
//! [`crate::file::load`] makes one pass over a buffer of a `TraceFile`: every record
//! becomes an [`EventMeta`] (24 bytes: enough to list it, filter it and find
//! it again) and an [`Input`] for the [`Stitcher`]. Payloads are not kept:
//! [`crate::file::record`] finds the record of an event again when a view
//! needs its fields.

use std::collections::HashMap;

use ustack_tracedata::format::{EventFormat, FieldKind};
use ustack_tracedata::reader::Item;
use ustack_tracedata::spill::{Plain, SpillVec};
use ustack_tracedata::{FieldRef, Record};

use crate::mappings::{KernelMaps, MappingFormat};
use crate::stitcher::{ClosedGroup, Input, Stacks, Stitched, Stitcher};

/// The events the stitcher treats specially, found by name in a file's
/// formats, each with the fields it reads of them resolved once.
#[derive(Debug, Clone, Default)]
pub struct SpecialEvents {
    cookie: Option<Special>,
    page_cookie: Option<Special>,
    unwind_stack: Option<Special>,
    syscall: Option<Special>,
    user_stack: Option<Special>,
    kernel_stack: Option<Special>,
    /// `user_unwind_stack_snapshot`: a stack entry that also holds the
    /// user registers and stack bytes of its kernel entry.
    stack_snapshot: Option<Special>,
    /// Ids of the `ftrace` system's other records (`print`, `function`...):
    /// they never ask for a stack.
    unrequested: Vec<u16>,
}

/// One special event: its format and the fields the stitcher reads.
#[derive(Debug, Clone)]
struct Special {
    fmt: EventFormat,
    /// `cookie`, when a scalar.
    cookie: Option<FieldRef>,
    /// The frames: `stack` of the deferred stack entries, `caller` of the
    /// stock stack events.
    frames: Option<FieldRef>,
    /// `prev` and `links` (kernels since kernel-patch tracing/0013), and
    /// `size` (`kernel_stack`), when scalars.
    prev: Option<FieldRef>,
    links: Option<FieldRef>,
    size: Option<FieldRef>,
}

impl Special {
    fn new(fmt: &EventFormat) -> Special {
        // Record::u64_field reads scalars only: a field of another shape
        // does not decode.
        let scalar = |name| FieldRef::of(fmt, name).filter(|f| f.kind() == FieldKind::Scalar);
        let frames = match fmt.name.as_str() {
            "user_stack" | "kernel_stack" => "caller",
            _ => "stack",
        };
        Special {
            cookie: scalar("cookie"),
            frames: FieldRef::of(fmt, frames),
            prev: scalar("prev"),
            links: scalar("links"),
            size: scalar("size"),
            fmt: fmt.clone(),
        }
    }
}

impl SpecialEvents {
    /// Picks the special events among `formats` (the `ftrace` system's
    /// `user_unwind_cookie`, `user_unwind_page_cookie`, `user_unwind_stack`,
    /// `user_unwind_stack_snapshot`, `user_unwind_syscall`, `user_stack`,
    /// `kernel_stack`).
    pub fn new<'f>(formats: impl IntoIterator<Item = &'f EventFormat>) -> Self {
        let mut s = SpecialEvents::default();
        for f in formats {
            if f.system != "ftrace" {
                continue;
            }
            let slot = match f.name.as_str() {
                "user_unwind_cookie" => &mut s.cookie,
                "user_unwind_page_cookie" => &mut s.page_cookie,
                "user_unwind_stack" => &mut s.unwind_stack,
                "user_unwind_syscall" => &mut s.syscall,
                "user_stack" => &mut s.user_stack,
                "kernel_stack" => &mut s.kernel_stack,
                "user_unwind_stack_snapshot" => &mut s.stack_snapshot,
                _ => {
                    s.unrequested.push(f.id);
                    continue;
                }
            };
            *slot = Some(Special::new(f));
        }
        s.unrequested.sort_unstable();
        s
    }

    /// True when the file has the deferred unwinding events.
    pub fn has_deferred(&self) -> bool {
        self.cookie.is_some()
            || self.page_cookie.is_some()
            || self.unwind_stack.is_some()
            || self.stack_snapshot.is_some()
            || self.syscall.is_some()
    }

    /// The format of `user_unwind_stack_snapshot`, when the file has it.
    pub fn stack_snapshot(&self) -> Option<&EventFormat> {
        self.stack_snapshot.as_ref().map(|s| &s.fmt)
    }

    fn is(f: &Option<Special>, id: u16) -> Option<&Special> {
        f.as_ref().filter(|f| f.fmt.id == id)
    }

    /// Maps one record to a stitcher input. Stacks are decoded into
    /// `scratch`. A special record that does not decode (truncated, missing
    /// field) becomes an [`Input::Unrequested`], so that bad data never
    /// attaches anything.
    pub fn input<'s>(&self, seq: u64, rec: &Record<'_>, scratch: &'s mut Vec<u64>) -> Input<'s> {
        let cpu = rec.cpu;
        let ts = rec.ts;
        let pid = rec.common_pid().unwrap_or(-1);
        // Nothing attaches to a record that does not decode.
        let plain = Input::Unrequested { seq, cpu, ts, pid };
        let Some(id) = rec.common_type() else {
            return plain;
        };
        scratch.clear();
        let data = rec.data;
        let cookie = |s: &Special| s.cookie?.u64(data);
        if let Some(s) = Self::is(&self.cookie, id) {
            return cookie(s).map_or(plain, |cookie| Input::Cookie {
                seq,
                cpu,
                ts,
                pid,
                cookie,
            });
        }
        if let Some(s) = Self::is(&self.page_cookie, id) {
            return cookie(s).map_or(plain, |cookie| Input::PageCookie {
                seq,
                cpu,
                ts,
                pid,
                cookie,
            });
        }
        if let Some(s) = Self::is(&self.syscall, id) {
            return cookie(s).map_or(plain, |cookie| Input::EventCookie {
                seq,
                cpu,
                ts,
                pid,
                cookie,
            });
        }
        if let Some(s) =
            Self::is(&self.unwind_stack, id).or_else(|| Self::is(&self.stack_snapshot, id))
        {
            let (Some(cookie), Some(stack)) = (cookie(s), s.frames.and_then(|f| f.array(data)))
            else {
                return plain;
            };
            scratch.extend(stack);
            // Kernels before links (kernel-patch tracing/0013) have neither field.
            let field = |f: Option<FieldRef>| f.and_then(|f| f.u64(data)).unwrap_or(0);
            let (prev, links) = (field(s.prev), field(s.links) != 0);
            return Input::UserStack {
                seq,
                cpu,
                ts,
                pid,
                cookie,
                prev,
                links,
                stack: scratch,
            };
        }
        if let Some(s) = Self::is(&self.user_stack, id) {
            if !stack_words(s.frames, data, scratch) {
                return plain;
            }
            // Unused slots of the fixed array are zero.
            let n = scratch
                .iter()
                .position(|&a| a == 0)
                .unwrap_or(scratch.len());
            scratch.truncate(n);
            return Input::SyncUserStack {
                seq,
                cpu,
                ts,
                pid,
                stack: scratch,
            };
        }
        if let Some(s) = Self::is(&self.kernel_stack, id) {
            if !stack_words(s.frames, data, scratch) {
                return plain;
            }
            // `size` is the number of entries; the record may be shorter
            // than the declared array, and -1 ends the stack.
            if let Some(size) = s.size.and_then(|f| f.u64(data)) {
                scratch.truncate(size as usize);
            }
            let n = scratch
                .iter()
                .position(|&a| a == u64::MAX || a == 0)
                .unwrap_or(scratch.len());
            scratch.truncate(n);
            return Input::KernelStack {
                seq,
                cpu,
                ts,
                pid,
                stack: scratch,
            };
        }
        if self.unrequested.binary_search(&id).is_ok() {
            plain
        } else {
            Input::Kernel { seq, cpu, ts, pid }
        }
    }
}

/// Reads the words of an inline `unsigned long caller[N]` array that may be
/// cut short by the record length (the kernel sizes stack records by the
/// number of entries), or of a `__data_loc` array. 32-bit kernels use
/// 4-byte words; an all-ones word of an inline array becomes `u64::MAX`.
fn stack_words(field: Option<FieldRef>, data: &[u8], out: &mut Vec<u64>) -> bool {
    let Some(field) = field else {
        return false;
    };
    out.clear();
    if matches!(field.kind(), FieldKind::DataLoc | FieldKind::RelLoc) {
        return match field.array(data) {
            Some(v) => {
                out.extend(v);
                true
            }
            None => false,
        };
    }
    let narrow = field.elem_size() == 4;
    out.extend(field.inline_elems(data).map(|w| {
        if narrow && w == u64::from(u32::MAX) {
            u64::MAX
        } else {
            w
        }
    }));
    true
}

/// What the index keeps of one record (24 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventMeta {
    /// Timestamp.
    pub ts: u64,
    /// Where the payload is: `offset << 16 | len` in its CPU's data (see
    /// [`Locator`]), or `u64::MAX` when unknown.
    pub loc: u64,
    /// Task (`common_pid`).
    pub pid: i32,
    /// CPU.
    pub cpu: u16,
    /// Event id (`common_type`), 0 when the record is too short.
    pub id: u16,
}

// No padding: 8 + 8 + 4 + 2 + 2 bytes.
const _: () = assert!(std::mem::size_of::<EventMeta>() == 24);

// SAFETY: integers only, no padding (asserted above), no Drop.
unsafe impl Plain for EventMeta {}

impl EventMeta {
    /// The payload of this event in `cpu_data`, the data of its CPU.
    pub fn payload<'d>(&self, cpu_data: &'d [u8]) -> Option<&'d [u8]> {
        if self.loc == u64::MAX {
            return None;
        }
        let off = (self.loc >> 16) as usize;
        let len = (self.loc & 0xffff) as usize;
        cpu_data.get(off..off.checked_add(len)?)
    }

    /// Where the payload ends in its CPU's data, when known.
    pub fn end(&self) -> Option<usize> {
        (self.loc != u64::MAX).then(|| ((self.loc >> 16) + (self.loc & 0xffff)) as usize)
    }

    /// The payload and the bytes after it in the CPU's data (see
    /// `ustack_tracedata::Record::extent`).
    pub fn extent<'d>(&self, cpu_data: &'d [u8]) -> Option<&'d [u8]> {
        self.payload(cpu_data)?;
        cpu_data.get((self.loc >> 16) as usize..)
    }
}

/// Finds where record payloads sit in the per-CPU data they were sliced
/// from: `(cpu, data)` pairs.
#[derive(Debug, Default, Clone)]
pub struct Locator {
    /// (cpu, start address, length) of each CPU's data.
    bases: Vec<(u32, usize, usize)>,
    /// Ring-buffer page size of the data, 0 when unknown.
    page_size: usize,
}

impl Locator {
    /// A locator over CPU data of which only a prefix is at hand:
    /// `(cpu, prefix, length of the whole data)`. The data that follows
    /// the prefix must come to lie right after it (lazily decompressed
    /// data does).
    pub fn with_lengths<'d>(cpus: impl IntoIterator<Item = (u32, &'d [u8], usize)>) -> Self {
        Locator {
            bases: cpus
                .into_iter()
                .map(|(c, d, len)| (c, d.as_ptr() as usize, len.max(d.len())))
                .collect(),
            page_size: 0,
        }
    }

    /// The same, telling the ring-buffer page size of the data (pages are
    /// where `user_unwind_page_cookie`s apply).
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size;
        self
    }

    /// The page of `cpu`'s data that `data` is in, when known.
    pub fn page(&self, cpu: u32, data: &[u8]) -> Option<u64> {
        if self.page_size == 0 {
            return None;
        }
        let p = data.as_ptr() as usize;
        self.bases
            .iter()
            .find(|&&(c, start, len)| c == cpu && p >= start && p < start + len)
            .map(|&(_, start, _)| ((p - start) / self.page_size) as u64)
    }

    /// `offset << 16 | len` of `data` inside the data of `cpu`, or
    /// `u64::MAX` if it is not there (or is 64 KiB or longer).
    pub fn locate(&self, cpu: u32, data: &[u8]) -> u64 {
        let p = data.as_ptr() as usize;
        for &(c, start, len) in &self.bases {
            if c == cpu && p >= start && p + data.len() <= start + len && data.len() < 0x10000 {
                return ((p - start) as u64) << 16 | data.len() as u64;
            }
        }
        u64::MAX
    }
}

/// A loss, placed in the event sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossMark {
    /// Seq of the first event after the gap.
    pub before_seq: u64,
    /// CPU.
    pub cpu: u32,
    /// Timestamp of the first record after the gap.
    pub ts: u64,
    /// Count, when known.
    pub count: Option<u64>,
}

/// `saved_cmdlines`: pid to command name.
#[derive(Debug, Default, Clone)]
pub struct Comms {
    map: HashMap<i32, String>,
}

impl Comms {
    /// Parses `PID COMM` lines.
    pub fn parse(text: &str) -> Self {
        let mut map = HashMap::new();
        for line in text.lines() {
            let line = line.trim_end_matches('\0');
            if let Some((p, c)) = line.trim_start().split_once(' ') {
                if let Ok(p) = p.parse::<i32>() {
                    map.insert(p, c.trim().to_string());
                }
            }
        }
        Comms { map }
    }

    /// Sets the name of `pid`.
    pub fn insert(&mut self, pid: i32, comm: &str) {
        self.map.insert(pid, comm.to_string());
    }

    /// The name of `pid`: `<idle>` for 0, `<...>` when unknown.
    pub fn get(&self, pid: i32) -> &str {
        if pid == 0 {
            return "<idle>";
        }
        self.map.get(&pid).map(|s| s.as_str()).unwrap_or("<...>")
    }
}

/// Everything the views need about one buffer of a trace, without payloads.
#[derive(Debug, Default)]
pub struct Index {
    /// One entry per record, in merged time order; the position is the seq.
    /// In a temporary file once large ([`SpillVec`]).
    pub events: SpillVec<EventMeta>,
    /// Losses, in order.
    pub losses: Vec<LossMark>,
    /// The stitched groups.
    pub stitched: Stitched,
    /// Event formats by id.
    pub formats: HashMap<u16, EventFormat>,
    /// Command names.
    pub comms: Comms,
    /// The first read error (the CPU that failed stops, others go on).
    pub error: Option<String>,
    /// Events the kernel lost per CPU by its own count (`overrun` plus
    /// `dropped events` of the per-CPU stats saved in the file), when known.
    pub kernel_lost: Vec<(u32, u64)>,
    /// The kernel's mapping records (`user_unwind_mapping`), per process.
    pub mappings: KernelMaps,
    /// Id of the `user_unwind_stack_snapshot` format (stack entries with
    /// a stack snapshot), when the file has it.
    pub snapshot_id: Option<u16>,
}

impl Index {
    /// The format of the stack entries with a stack snapshot, when the
    /// file has it.
    pub fn special_snapshot(&self) -> Option<&EventFormat> {
        self.formats.get(&self.snapshot_id?)
    }

    /// Gives the pages of the spilled event index and groups back to the
    /// kernel: for readers that went over much of them, in any order.
    /// What is read later is read again from the temporary files.
    pub fn release(&self) {
        self.events.release();
        self.stitched.groups.release();
        self.stitched.kernel_stacks.release();
    }

    /// The loss placed just before event `seq` on that event's CPU (events
    /// were dropped there right before it), if any.
    pub fn loss_before(&self, seq: u64) -> Option<&LossMark> {
        let cpu = u32::from(self.events.get(seq as usize)?.cpu);
        let i = self.losses.partition_point(|l| l.before_seq < seq);
        self.losses[i..]
            .iter()
            .take_while(|l| l.before_seq == seq)
            .find(|l| l.cpu == cpu)
    }

    /// Builds the index from a sequence of items (records and losses): the
    /// core of [`crate::file::load`], usable without a file.
    pub fn build<'a, E: std::fmt::Display>(
        formats: impl IntoIterator<Item = EventFormat>,
        comms: Comms,
        locator: &Locator,
        items: impl IntoIterator<Item = Result<Item<'a>, E>>,
    ) -> Index {
        let mut b = IndexBuilder::new(formats, comms, locator, false);
        for item in items {
            b.push(item);
        }
        b.finish().0
    }

    /// Events dropped per CPU, sorted by CPU: `(cpu, count, unknown)`.
    ///
    /// The count is the sum of the counts the ring-buffer pages stored.
    /// When a page only says that events were lost, not how many, the
    /// kernel's own count for that CPU ([`Index::kernel_lost`]) is used
    /// instead if the file has it; otherwise `unknown` is set and the count
    /// is a lower bound.
    pub fn drops_per_cpu(&self) -> Vec<(u32, u64, bool)> {
        let mut drops = self.stitched.drops_per_cpu();
        for d in &mut drops {
            let kernel = self.kernel_lost.iter().find(|k| k.0 == d.0).map(|k| k.1);
            if let (true, Some(k)) = (d.2, kernel) {
                *d = (d.0, k.max(d.1), false);
            }
        }
        drops
    }

    /// CPU and timestamp of event `seq` (`(0, 0)` when out of range).
    pub fn cpu_ts(&self, seq: u64) -> (u32, u64) {
        self.events
            .get(seq as usize)
            .map_or((0, 0), |e| (u32::from(e.cpu), e.ts))
    }

    /// `system:name` of event `seq`'s format, or `#ID` when unknown.
    pub fn event_name(&self, seq: u64) -> String {
        match self.events.get(seq as usize) {
            Some(e) => match self.formats.get(&e.id) {
                Some(f) => f.name.clone(),
                None => format!("#{}", e.id),
            },
            None => String::new(),
        }
    }
}

fn learn_switch_comms(comms: &mut Comms, f: &EventFormat, rec: &Record<'_>) {
    for (c, p) in [("prev_comm", "prev_pid"), ("next_comm", "next_pid")] {
        if let (Ok(comm), Ok(pid)) = (rec.str_field(f, c), rec.i64_field(f, p)) {
            if pid != 0 && !comm.is_empty() {
                comms.insert(pid as i32, &comm);
            }
        }
    }
}

/// [`Index::build`] an item at a time. A streaming builder also hands out
/// the groups that nothing can change any more while the items go on
/// ([`IndexBuilder::take_closed`]), with the index built so far to show
/// them ([`IndexBuilder::index`]).
pub struct IndexBuilder<'l> {
    idx: Index,
    st: Stitcher,
    special: SpecialEvents,
    locator: &'l Locator,
    scratch: Vec<u64>,
    /// Per CPU, the page of its last record (pages tell where page
    /// cookies apply; an unknown page is a page of its own).
    pages: HashMap<u32, u64>,
    mapping: Option<MappingFormat>,
    comm_of_switch: Option<EventFormat>,
}

impl<'l> IndexBuilder<'l> {
    /// A builder over records of `formats`, located with `locator`; with
    /// `stream`, it hands out groups as they close.
    pub fn new(
        formats: impl IntoIterator<Item = EventFormat>,
        comms: Comms,
        locator: &'l Locator,
        stream: bool,
    ) -> Self {
        let formats: HashMap<u16, EventFormat> = formats.into_iter().map(|f| (f.id, f)).collect();
        let special = SpecialEvents::new(formats.values());
        let mapping = MappingFormat::new(formats.values());
        let comm_of_switch = formats
            .values()
            .find(|f| f.system == "sched" && f.name == "sched_switch")
            .cloned();
        let snapshot_id = special.stack_snapshot().map(|f| f.id);
        IndexBuilder {
            idx: Index {
                formats,
                comms,
                snapshot_id,
                ..Index::default()
            },
            st: if stream {
                Stitcher::streaming()
            } else {
                Stitcher::new()
            },
            special,
            locator,
            scratch: Vec::new(),
            pages: HashMap::new(),
            mapping,
            comm_of_switch,
        }
    }

    /// Takes one item.
    pub fn push<E: std::fmt::Display>(&mut self, item: Result<Item<'_>, E>) {
        let idx = &mut self.idx;
        match item {
            Ok(Item::Event(rec)) => {
                let seq = idx.events.len() as u64;
                let id = rec.common_type().unwrap_or(0);
                let pid = rec.common_pid().unwrap_or(-1);
                idx.events.push(EventMeta {
                    ts: rec.ts,
                    loc: self.locator.locate(rec.cpu, rec.data),
                    pid,
                    cpu: rec.cpu as u16,
                    id,
                });
                if let Some(f) = self.comm_of_switch.as_ref().filter(|f| f.id == id) {
                    learn_switch_comms(&mut idx.comms, f, &rec);
                }
                let page = self
                    .locator
                    .page(rec.cpu, rec.data)
                    .unwrap_or(u64::MAX - seq);
                if self.pages.insert(rec.cpu, page) != Some(page) {
                    self.st.push(Input::Page { cpu: rec.cpu, page });
                }
                // A mapping record describes the process, not a kernel
                // event of its task: it joins no group (the unwind
                // callback writes it after the task's page cookie, in the
                // same page as the events it covers).
                if let Some(m) = self.mapping.as_ref().filter(|f| f.id() == id) {
                    if let Some(m) = m.decode(&rec) {
                        idx.mappings.push(m);
                    }
                    return;
                }
                let input = self.special.input(seq, &rec, &mut self.scratch);
                self.st.push(input);
            }
            Ok(Item::Lost { cpu, ts, count }) => {
                idx.losses.push(LossMark {
                    before_seq: idx.events.len() as u64,
                    cpu,
                    ts,
                    count,
                });
                self.st.push(Input::Lost { cpu, ts, count });
            }
            Err(e) => {
                // The reader stops the CPU that failed; the others go on.
                // Keep the first error to show it.
                if idx.error.is_none() {
                    idx.error = Some(e.to_string());
                }
            }
        }
    }

    /// The index so far: its events, names, formats and mappings, without
    /// groups (those come with [`IndexBuilder::finish`]).
    pub fn index(&self) -> &Index {
        &self.idx
    }

    /// The stacks stored so far, which the groups handed out refer to.
    pub fn stacks(&self) -> &Stacks {
        self.st.stacks()
    }

    /// The groups of a streaming builder that closed since the last call,
    /// by time (see [`Stitcher::take_closed`]).
    pub fn take_closed(&mut self) -> Vec<ClosedGroup> {
        self.st.take_closed()
    }

    /// The whole index, and the groups of a streaming builder it had not
    /// handed out yet (those are not in the index, nor the ones handed
    /// out before; without groups at all, the index has the kernel-only
    /// ones, see [`Stitched::kernel_only_groups`]).
    pub fn finish(mut self) -> (Index, Vec<ClosedGroup>) {
        let (mut stitched, closed, handed_out) = std::mem::take(&mut self.st).finish_with_closed();
        if closed.is_empty() && handed_out == 0 {
            let events = &self.idx.events;
            stitched.kernel_only_groups(|seq| {
                let e = events.get(seq as usize)?;
                Some((e.pid, e.ts))
            });
        }
        self.idx.stitched = stitched;
        (self.idx, closed)
    }
}
