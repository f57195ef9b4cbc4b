//! The stitching algorithm, independent of any file format.
//!
//! Feed [`Input`]s in time order (all CPUs merged) to a [`Stitcher`], then
//! call [`Stitcher::finish`] to get the [`Stitched`] groups.
//!
//! # Rules
//!
//! * A `user_unwind_cookie`, `user_stack` or `kernel_stack` belongs to the
//!   newest of the last few kernel events on the same CPU that has the same
//!   pid and no such record yet (normally the event just before it; an
//!   interrupt can slip its own event and cookie in between). A loss on a
//!   CPU forgets that CPU's recent events, so nothing is ever attached
//!   across a gap.
//! * A `user_unwind_page_cookie` (the `userstacktrace_delay` option writes
//!   one per task, kernel entry and ring-buffer page, before the events it
//!   covers) gives its cookie to the kernel events of its pid that follow it
//!   in the same page of the same CPU, up to the pid's next page cookie
//!   there ([`Input::Page`] starts a page). A zero cookie covers nothing; a
//!   page cookie of pid 0 with cookie 0 ends every pid's page cookie in the
//!   page. A `user_unwind_cookie` after an event still takes it (the
//!   trigger writes it; kernels before v3 also wrote it after an event that
//!   landed in another page than its page cookie); events of the pid before a page cookie are closed to later
//!   `user_unwind_cookie`s. Nothing else is needed inside one page, so
//!   losses (whole pages, or stretches between pages) never attach a wrong
//!   cookie.
//! * A `user_unwind_stack` with `links` set stands for a page cookie of the
//!   task's next kernel entry (kernel-patch tracing/0013, "Links"): the kernel
//!   events of its pid that follow it in the same page of the same CPU, up
//!   to the pid's next page cookie there, belong to the kernel entry whose
//!   stack has `prev` equal to its cookie. They wait in a linked group
//!   until that stack comes (on any CPU); a stack of another `prev`, or the
//!   end of the trace, leaves them without a stack. The kernel writes the
//!   link only when nothing else of the task follows the stack in its
//!   page, so `prev` names the kernel entry exactly, across any loss.
//! * The `ftrace` system's own records (`print`, function entries) never
//!   ask for a stack ([`Input::Unrequested`]): no cover or cookie record is
//!   theirs, only a stock `kernel_stack` or `user_stack` after them.
//! * A `user_unwind_syscall` (the `user_unwind` tracer's system call entry)
//!   is a kernel event with its own cookie: it joins the group of that
//!   cookie, and no page cookie or cookie record gives it another.
//! * Deferred groups are keyed by `(pid, cookie)`. At most one group per pid
//!   is open (waiting for its stack); a cookie event with another cookie for
//!   the same pid means the task went back to user space and entered the
//!   kernel again, so the open group's stack was lost.
//! * A `user_unwind_stack` is attached only to the group with the same pid
//!   and cookie: the open group, or the one closed just before (the stack can
//!   appear slightly out of order when it was written on another CPU). Any
//!   other stack is an orphan: its request side was lost.
//! * A cookie event whose cookie matches the group of the same pid that got
//!   its stack last joins that group: the kernel entry went on after the
//!   unwind callback ran (a signal or ptrace stop on the way back to user
//!   space), and the unwinder hands out the same cookie without a new stack.
//! * At the end of the trace, an open group is pending, unless events were
//!   dropped (on any CPU, since the task may have migrated) while it was
//!   open: then its stack is counted as lost.

use std::collections::HashMap;
use std::num::NonZeroU64;

use ustack_tracedata::spill::{Plain, SpillVec};

use crate::groups::{EventRef, EventSpan, GroupStore, Groups};

/// Index of a stack in [`Stacks`].
pub type StackId = u32;

/// Arena of stacks (raw addresses, innermost frame first), each distinct
/// stack stored once: a trace repeats the same few stacks (one call site,
/// one kernel path) millions of times.
///
/// # Invariants
///
/// `ends` is non-decreasing and its last entry is `addrs.len()`: stack `i`
/// is `addrs[ends[i - 1]..ends[i]]` (from 0 for the first). One `usize`
/// per stack instead of a (start, length) pair. `seen` maps the hash of a
/// stored stack ([`Stacks::hash`]) to one stack with that hash.
#[derive(Debug, Default, Clone)]
pub struct Stacks {
    addrs: Vec<u64>,
    ends: Vec<usize>,
    seen: HashMap<u64, StackId>,
}

impl Stacks {
    /// Stores a stack, unless an equal one is stored already, and returns
    /// its id.
    pub fn push(&mut self, stack: &[u64]) -> StackId {
        let h = Self::hash(stack);
        if let Some(&id) = self.seen.get(&h) {
            if self.get(id) == stack {
                return id;
            }
        }
        self.addrs.extend_from_slice(stack);
        self.ends.push(self.addrs.len());
        let id = (self.ends.len() - 1) as StackId;
        // On a collision the first stack keeps the slot: the later one is
        // stored again each time, which is correct, only not shared.
        self.seen.entry(h).or_insert(id);
        id
    }

    /// A 64-bit hash of the words of a stack (multiply and rotate, as
    /// rustc's FxHash: addresses are not chosen by an adversary, and the
    /// stored stack is compared before it is shared).
    fn hash(stack: &[u64]) -> u64 {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        stack.iter().fold(stack.len() as u64, |h, &w| {
            (h.rotate_left(5) ^ w).wrapping_mul(K)
        })
    }

    /// The addresses of stack `id` (empty for an unknown id).
    pub fn get(&self, id: StackId) -> &[u64] {
        let i = id as usize;
        match self.ends.get(i) {
            Some(&end) => {
                let start = if i == 0 { 0 } else { self.ends[i - 1] };
                &self.addrs[start..end]
            }
            None => &[],
        }
    }

    /// Number of stacks stored.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when no stack is stored.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// One input record of the stitcher.
///
/// `seq` is the caller's handle of the record (its position in the merged
/// stream, say); it is carried through to the output so that the caller can
/// find the record again. `pid` is the record's `common_pid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input<'a> {
    /// Any traced event that is not one of the special ones below.
    Kernel {
        /// Caller's handle.
        seq: u64,
        /// CPU buffer the record came from.
        cpu: u32,
        /// Timestamp.
        ts: u64,
        /// Task.
        pid: i32,
    },
    /// A record of the `ftrace` system that is no special one (`print`
    /// from `trace_marker`, function tracer entries): it never asks for a
    /// deferred stack, so no page cookie or linking stack covers it and no
    /// cookie record follows it. A `kernel_stack` or stock `user_stack`
    /// record may still follow it.
    Unrequested {
        /// Caller's handle.
        seq: u64,
        /// CPU buffer the record came from.
        cpu: u32,
        /// Timestamp.
        ts: u64,
        /// Task.
        pid: i32,
    },
    /// `ftrace:user_unwind_page_cookie`: the following events of `pid` in
    /// this page of this CPU belong to `cookie` (see the module rules).
    PageCookie {
        /// Caller's handle.
        seq: u64,
        /// CPU buffer.
        cpu: u32,
        /// Timestamp.
        ts: u64,
        /// Task (0 with a zero cookie: a reset of every task's).
        pid: i32,
        /// The cookie, 0 for none.
        cookie: u64,
    },
    /// The records of `cpu` that follow are in another ring-buffer page
    /// than the ones before (`page` identifies it; only changes matter).
    Page {
        /// CPU buffer.
        cpu: u32,
        /// The page.
        page: u64,
    },
    /// `ftrace:user_unwind_cookie`: the event before it on this CPU asked
    /// for a deferred user stack.
    Cookie {
        /// Caller's handle.
        seq: u64,
        /// CPU buffer.
        cpu: u32,
        /// Timestamp.
        ts: u64,
        /// Task.
        pid: i32,
        /// The cookie (opaque, unique per thread per kernel entry).
        cookie: u64,
    },
    /// A traced event that carries the cookie of its own kernel entry
    /// (`ftrace:user_unwind_syscall`, written by the `user_unwind` tracer at
    /// a system call entry): it is the event and its cookie entry at once.
    EventCookie {
        /// Caller's handle.
        seq: u64,
        /// CPU buffer.
        cpu: u32,
        /// Timestamp.
        ts: u64,
        /// Task.
        pid: i32,
        /// The cookie (0: the event has none and stays ungrouped).
        cookie: u64,
    },
    /// `ftrace:user_unwind_stack`: the deferred user stack of a kernel entry.
    UserStack {
        /// Caller's handle.
        seq: u64,
        /// CPU buffer (may differ from the cookie's, after a migration).
        cpu: u32,
        /// Timestamp.
        ts: u64,
        /// Task.
        pid: i32,
        /// The cookie of the kernel entry.
        cookie: u64,
        /// The cookie of the task's previous stack from the unwind
        /// callback (0: none, or an older kernel without the field).
        prev: u64,
        /// The stack links the task's next kernel entry (see the rules).
        links: bool,
        /// Return addresses, innermost first (may be empty).
        stack: &'a [u64],
    },
    /// `ftrace:user_stack` of stock kernels: the user stack of the event
    /// just before it on the same CPU.
    SyncUserStack {
        /// Caller's handle.
        seq: u64,
        /// CPU buffer.
        cpu: u32,
        /// Timestamp.
        ts: u64,
        /// Task.
        pid: i32,
        /// Return addresses, innermost first, trailing zeros removed.
        stack: &'a [u64],
    },
    /// `ftrace:kernel_stack`: the kernel stack of the event just before it
    /// on the same CPU.
    KernelStack {
        /// Caller's handle.
        seq: u64,
        /// CPU buffer.
        cpu: u32,
        /// Timestamp.
        ts: u64,
        /// Task.
        pid: i32,
        /// Kernel addresses, innermost first.
        stack: &'a [u64],
    },
    /// Events were dropped on `cpu` just before `ts`.
    Lost {
        /// CPU that dropped events.
        cpu: u32,
        /// Timestamp of the first record after the gap.
        ts: u64,
        /// Number of events dropped, when the kernel stored it.
        count: Option<u64>,
    },
}

/// Status of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Events and their user stack.
    Complete = 0,
    /// The trace ended before the task went back to user space.
    Pending = 1,
    /// The user stack never came: events were dropped while waiting for it,
    /// or the task entered the kernel again without it.
    StackLost = 2,
    /// A user stack whose request side (cookie events) was not seen.
    OrphanStack = 3,
}

impl Status {
    /// Short lower-case name, as printed by reports.
    pub fn name(self) -> &'static str {
        match self {
            Status::Complete => "complete",
            Status::Pending => "pending",
            Status::StackLost => "stack-lost",
            Status::OrphanStack => "orphan-stack",
        }
    }
}

/// How the user stack of a group was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupKind {
    /// Deferred unwinding: events sharing a cookie, stack at return to user.
    Deferred = 0,
    /// Stock kernel `user_stack`: one event with its own stack.
    Sync = 1,
    /// No user stack was recorded at all (`record -T` alone): one event
    /// and its kernel stack (see [`Stitched::kernel_only_groups`]).
    Kernel = 2,
}

/// The user stack of a group (CPU and time found by `seq`, as for
/// [`EventRef`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserStackRef {
    /// Caller's handle of the stack record.
    pub seq: u64,
    /// The addresses.
    pub stack: StackId,
}

/// Kernel events that share one user stack. Its events are in the
/// [`Groups`] it came from ([`Groups::events`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// Task.
    pub pid: i32,
    /// Deferred or synchronous.
    pub kind: GroupKind,
    /// The cookie (`None` for synchronous and kernel-only groups). The
    /// unwinder never hands out 0, so 8 bytes hold it.
    pub cookie: Option<NonZeroU64>,
    /// Its kernel events (in time order, in [`Groups`]).
    pub events: EventSpan,
    /// Number of cookie events seen, including those whose kernel event was
    /// not found (dropped, or not the last one on its CPU).
    pub cookie_events: u32,
    /// The user stack, if it came.
    pub user_stack: Option<UserStackRef>,
    /// Classification.
    pub status: Status,
    /// Timestamp of the first record of the group (event, cookie or stack).
    pub first_ts: u64,
    /// Timestamp of the last record of the group.
    pub last_ts: u64,
    /// Events were dropped somewhere while the group was waiting for its
    /// stack (a complete group may then miss some of its events).
    pub loss_while_open: bool,
}

/// How a group is named in the report and the TUI: `cookie=<hex>`, or
/// `cookie=?` for deferred events whose stack (and so their cookie) never
/// came after a linking stack, `sync` or `kernel`.
pub fn cookie_label(cookie: Option<u64>, kind: GroupKind) -> String {
    match (cookie, kind) {
        (Some(c), _) => format!("cookie={c:x}"),
        (None, GroupKind::Deferred) => "cookie=?".to_string(),
        (None, GroupKind::Sync) => "sync".to_string(),
        (None, GroupKind::Kernel) => "kernel".to_string(),
    }
}

/// Events dropped on one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loss {
    /// CPU.
    pub cpu: u32,
    /// Timestamp of the first record after the gap.
    pub ts: u64,
    /// Count, when known.
    pub count: Option<u64>,
}

/// An event that got a kernel stack.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqStack {
    /// The event.
    pub seq: u64,
    /// Its kernel stack.
    pub stack: StackId,
    _pad: u32,
}

// SAFETY: two integers and an explicit padding word, no implicit padding
// (the size check below).
unsafe impl Plain for SeqStack {}
const _: () = assert!(std::mem::size_of::<SeqStack>() == 16);

/// Result of stitching.
#[derive(Debug, Default, Clone)]
pub struct Stitched {
    /// Groups, ordered by the time of their first record.
    pub groups: Groups,
    /// Stack arena for all stack ids.
    pub stacks: Stacks,
    /// Every event that got a kernel stack (grouped or not), sorted by seq.
    pub kernel_stacks: SpillVec<SeqStack>,
    /// Every loss, in input order.
    pub losses: Vec<Loss>,
    /// Cookie events whose kernel event was not found.
    pub cookies_without_event: u64,
    /// `kernel_stack` records whose event was not found.
    pub kernel_stacks_without_event: u64,
}

impl Stitched {
    /// The kernel stack of event `seq`, if it had one.
    pub fn kernel_stack_of(&self, seq: u64) -> Option<StackId> {
        self.kernel_stacks
            .binary_search_by_key(&seq, |k| k.seq)
            .ok()
            .map(|i| self.kernel_stacks[i].stack)
    }

    /// When the trace holds kernel stacks but no group (no user stack of
    /// any kind was recorded), makes one [`GroupKind::Kernel`] group per
    /// event with a kernel stack, so that the stitched views show the
    /// kernel stacks instead of nothing. `event` gives the `(pid, ts)`
    /// of an event seq. Does nothing when there are groups.
    pub fn kernel_only_groups(&mut self, event: impl Fn(u64) -> Option<(i32, u64)>) {
        if !self.groups.is_empty() {
            return;
        }
        let mut store = GroupStore::default();
        for k in self.kernel_stacks.iter() {
            let Some((pid, ts)) = event(k.seq) else {
                continue;
            };
            let g = store.push(pid, GroupKind::Kernel, None, ts);
            store.rec_mut(g).set_status(Status::Complete);
            store.add_event(g, EventRef::new(k.seq, Some(k.stack)));
        }
        self.groups = store.finish();
    }

    /// Total events dropped per CPU (`None` in the count means some loss of
    /// unknown size was seen). Sorted by CPU.
    pub fn drops_per_cpu(&self) -> Vec<(u32, u64, bool)> {
        let mut map: HashMap<u32, (u64, bool)> = HashMap::new();
        for l in &self.losses {
            let e = map.entry(l.cpu).or_default();
            match l.count {
                Some(c) => e.0 += c,
                None => e.1 = true,
            }
        }
        let mut v: Vec<_> = map.into_iter().map(|(c, (n, u))| (c, n, u)).collect();
        v.sort_unstable();
        v
    }
}

/// How many recent kernel events per CPU a cookie or stack record may
/// belong to.
const RECENT: usize = 4;

/// A recent kernel event of a CPU.
#[derive(Debug, Clone, Copy)]
struct Last {
    pid: i32,
    ts: u64,
    ev: EventRef,
    /// Where the event was placed in groups (its positions in the log
    /// of [`GroupStore`]).
    placed: [Option<usize>; 2],
    got_cookie: bool,
    got_sync: bool,
    got_kstack: bool,
}

#[derive(Debug, Default, Clone, Copy)]
struct TaskState {
    /// The group waiting for its stack.
    open: Option<usize>,
    /// The loss epoch when `open` was created or last checked.
    open_epoch: u64,
    /// The group closed last without a stack (a late stack may still
    /// match it by cookie).
    prev: Option<usize>,
    /// The group that got its stack last. The unwinder delivers one stack
    /// per kernel entry, but the entry can go on after the callback ran
    /// (a signal or ptrace stop on the way back to user space): further
    /// requests get the same cookie and no new stack, so their events join
    /// this group.
    done: Option<usize>,
    /// The linked group (events that followed a linking stack) and the
    /// cookie of that stack: the stack whose `prev` is it completes it.
    linked: Option<(usize, NonZeroU64)>,
    /// The loss epoch when `linked` was created.
    linked_epoch: u64,
}

/// What covers the events of a pid in a page: a page cookie (its cookie,
/// 0 for none) or a linking stack (its cookie).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cover {
    PageCookie(u64),
    Link(NonZeroU64),
}

/// A group that nothing can change any more, with its events (in seq
/// order), as a streaming stitcher hands it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedGroup {
    /// The group (its event span counts `events`).
    pub group: Group,
    /// Its kernel events.
    pub events: Vec<EventRef>,
}

/// Inputs between two looks for closed groups.
const CLOSED_CHECK: usize = 4096;

/// What a streaming stitcher keeps of the groups not handed out yet.
#[derive(Debug, Default)]
struct Stream {
    /// Where the events of each such group are in the log.
    members: HashMap<usize, Vec<usize>>,
    /// Closed groups not taken yet.
    closed: Vec<ClosedGroup>,
    /// Groups handed out so far.
    handed_out: u64,
    pushes: usize,
}

/// Incremental stitcher: push inputs in time order, then finish.
#[derive(Debug, Default)]
pub struct Stitcher {
    out: Stitched,
    /// The groups so far (`out.groups` is made of them at the end).
    groups: GroupStore,
    /// The last few kernel events of each CPU, newest last.
    cpus: HashMap<u32, Vec<Last>>,
    /// Per CPU: its current page and what covers each pid there (page
    /// cookies and linking stacks), newest last.
    pages: HashMap<u32, (u64, Vec<(i32, Cover)>)>,
    tasks: HashMap<i32, TaskState>,
    /// Incremented on every loss: a group opened at epoch `e` has seen a
    /// loss iff the epoch moved on.
    loss_epoch: u64,
    /// Streaming: the groups not handed out yet.
    stream: Option<Stream>,
}

impl Stitcher {
    /// An empty stitcher.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty stitcher that hands out each group once nothing can
    /// change it any more ([`Stitcher::take_closed`]) instead of keeping
    /// it: no task state or recent event refers to it. A group whose task
    /// keeps it (a stack-lost group a late stack may still match, the
    /// last complete one whose kernel entry may go on) waits for the
    /// task's next kernel entry, or for the end.
    pub fn streaming() -> Self {
        Stitcher {
            stream: Some(Stream::default()),
            ..Self::default()
        }
    }

    /// The stacks stored so far (those of the groups handed out among
    /// them).
    pub fn stacks(&self) -> &Stacks {
        &self.out.stacks
    }

    /// The groups closed since the last call, by time of their first
    /// record (a streaming stitcher; none otherwise).
    pub fn take_closed(&mut self) -> Vec<ClosedGroup> {
        self.stream
            .as_mut()
            .map(|s| std::mem::take(&mut s.closed))
            .unwrap_or_default()
    }

    /// Hands out the groups nothing refers to any more; with `all`, every
    /// group not handed out yet (the end of the trace).
    fn close_groups(&mut self, all: bool) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let mut live = std::collections::HashSet::new();
        if !all {
            for t in self.tasks.values() {
                let linked = t.linked.map(|(g, _)| g);
                live.extend([t.open, t.prev, t.done, linked].into_iter().flatten());
            }
            let placed = self.cpus.values().flatten().flat_map(|l| l.placed);
            for at in placed.flatten() {
                live.insert(self.groups.logged(at).1);
            }
        }
        let mut done: Vec<(u64, usize)> = stream
            .members
            .keys()
            .filter(|g| !live.contains(*g))
            .map(|&g| (self.groups.rec(g).first_ts, g))
            .collect();
        done.sort_unstable();
        for (_, g) in done {
            let at = stream.members.remove(&g).unwrap_or_default();
            let mut events: Vec<EventRef> = at.iter().map(|&a| self.groups.logged(a).0).collect();
            events.sort_by_key(|e| e.seq);
            stream.closed.push(ClosedGroup {
                group: self.groups.rec(g).group(),
                events,
            });
            stream.handed_out += 1;
        }
    }

    /// Places `ev` in group `g` and returns its log position.
    fn log_event(&mut self, g: usize, ev: EventRef) -> usize {
        let at = self.groups.add_event(g, ev);
        if let Some(s) = self.stream.as_mut() {
            s.members.entry(g).or_default().push(at);
        }
        at
    }

    /// Feeds one input.
    pub fn push(&mut self, input: Input<'_>) {
        match input {
            Input::Kernel { seq, cpu, ts, pid } => {
                let i = self.recent(seq, cpu, ts, pid);
                let covered = self
                    .pages
                    .get(&cpu)
                    .and_then(|(_, v)| v.iter().rev().find(|&&(p, _)| p == pid))
                    .map(|&(_, c)| c);
                match covered {
                    Some(Cover::PageCookie(c)) if c != 0 => {
                        self.attach(cpu, ts, pid, c, Some(i));
                    }
                    Some(Cover::Link(link)) => self.link(cpu, ts, pid, link, i),
                    _ => {}
                }
            }
            Input::Unrequested { seq, cpu, ts, pid } => {
                let i = self.recent(seq, cpu, ts, pid);
                if let Some(last) = self.cpus.get_mut(&cpu).and_then(|r| r.get_mut(i)) {
                    last.got_cookie = true;
                }
            }
            Input::EventCookie {
                seq,
                cpu,
                ts,
                pid,
                cookie,
            } => {
                let i = self.recent(seq, cpu, ts, pid);
                // Its own cookie, not a page cookie's nor a later cookie
                // entry's: no other cookie record takes it.
                if let Some(last) = self.cpus.get_mut(&cpu).and_then(|r| r.get_mut(i)) {
                    last.got_cookie = true;
                }
                if cookie != 0 {
                    let g = self.attach(cpu, ts, pid, cookie, Some(i));
                    self.groups.rec_mut(g).cookie_events += 1;
                }
            }
            Input::Page { cpu, page } => {
                let e = self.pages.entry(cpu).or_default();
                if e.0 != page {
                    *e = (page, Vec::new());
                }
            }
            Input::PageCookie {
                cpu,
                ts,
                pid,
                cookie,
                ..
            } => self.page_cookie(cpu, ts, pid, cookie),
            Input::KernelStack {
                cpu, pid, stack, ..
            } => self.kernel_stack(cpu, pid, stack),
            Input::Cookie {
                cpu,
                ts,
                pid,
                cookie,
                ..
            } => self.cookie(cpu, ts, pid, cookie),
            Input::UserStack {
                seq,
                cpu,
                ts,
                pid,
                cookie,
                prev,
                links,
                stack,
            } => {
                let g = self.user_stack(seq, ts, pid, cookie, stack);
                if let Some(g) = g {
                    self.resolve_link(pid, prev, g);
                }
                if let (true, Some(c)) = (links, NonZeroU64::new(cookie)) {
                    self.cover(cpu, pid, Cover::Link(c));
                }
            }
            Input::SyncUserStack {
                seq,
                cpu,
                ts,
                pid,
                stack,
            } => self.sync_stack(seq, cpu, ts, pid, stack),
            Input::Lost { cpu, ts, count } => {
                self.out.losses.push(Loss { cpu, ts, count });
                self.cpus.remove(&cpu);
                self.pages.remove(&cpu);
                self.loss_epoch += 1;
            }
        }
        if let Some(s) = self.stream.as_mut() {
            s.pushes += 1;
            if s.pushes % CLOSED_CHECK == 0 {
                self.close_groups(false);
            }
        }
    }

    /// Closes every open group and returns the result.
    pub fn finish(self) -> Stitched {
        self.finish_with_closed().0
    }

    /// [`Stitcher::finish`], and the groups a streaming stitcher did not
    /// hand out yet (by time; they are not in the result, and neither are
    /// those it handed out before), with how many it handed out in all.
    pub fn finish_with_closed(mut self) -> (Stitched, Vec<ClosedGroup>, u64) {
        let mut open: Vec<(usize, u64)> = self
            .tasks
            .values()
            .flat_map(|t| {
                let linked = t.linked.map(|(g, _)| (g, t.linked_epoch));
                t.open.map(|g| (g, t.open_epoch)).into_iter().chain(linked)
            })
            .collect();
        open.sort_unstable();
        for (g, epoch) in open {
            let lost = epoch != self.loss_epoch;
            let grp = self.groups.rec_mut(g);
            grp.loss_while_open |= lost;
            grp.set_status(if lost {
                Status::StackLost
            } else {
                Status::Pending
            });
        }
        self.out.kernel_stacks =
            std::mem::take(&mut self.out.kernel_stacks).into_sorted_by_key(|k| k.seq);
        if self.stream.is_some() {
            self.close_groups(true);
            let closed = self.take_closed();
            let n = self.stream.as_ref().map_or(0, |s| s.handed_out);
            return (self.out, closed, n);
        }
        self.out.groups = self.groups.finish();
        (self.out, Vec::new(), 0)
    }

    /// Remembers kernel event `seq` as the newest recent event of `cpu`
    /// and returns its index there.
    fn recent(&mut self, seq: u64, cpu: u32, ts: u64, pid: i32) -> usize {
        let recent = self.cpus.entry(cpu).or_default();
        if recent.len() == RECENT {
            recent.remove(0);
        }
        recent.push(Last {
            pid,
            ts,
            ev: EventRef::new(seq, None),
            placed: [None, None],
            got_cookie: false,
            got_sync: false,
            got_kstack: false,
        });
        recent.len() - 1
    }

    /// The newest recent event of `pid` on `cpu` that `free` accepts. A
    /// cookie or stack record normally follows its event directly; looking
    /// a few events back handles an interrupt whose events (and cookie)
    /// were written between an event and its own cookie.
    fn pick(&self, cpu: u32, pid: i32, free: impl Fn(&Last) -> bool) -> Option<usize> {
        let recent = self.cpus.get(&cpu)?;
        recent.iter().rposition(|l| l.pid == pid && free(l))
    }

    fn kernel_stack(&mut self, cpu: u32, pid: i32, stack: &[u64]) {
        let Some(i) = self.pick(cpu, pid, |l| !l.got_kstack) else {
            self.out.kernel_stacks_without_event += 1;
            return;
        };
        let id = self.out.stacks.push(stack);
        let Some(last) = self.cpus.get_mut(&cpu).and_then(|r| r.get_mut(i)) else {
            return;
        };
        last.got_kstack = true;
        last.ev.set_kernel_stack(id);
        for &at in last.placed.iter().flatten() {
            self.groups.set_kernel_stack(at, id);
        }
        self.out.kernel_stacks.push(SeqStack {
            seq: last.ev.seq,
            stack: id,
            _pad: 0,
        });
    }

    fn place(&mut self, cpu: u32, i: usize, at: usize) {
        if let Some(last) = self.cpus.get_mut(&cpu).and_then(|r| r.get_mut(i)) {
            let slot = if last.placed[0].is_none() { 0 } else { 1 };
            last.placed[slot] = Some(at);
        }
    }

    fn new_group(
        &mut self,
        pid: i32,
        kind: GroupKind,
        cookie: Option<NonZeroU64>,
        ts: u64,
    ) -> usize {
        let g = self.groups.push(pid, kind, cookie, ts);
        if let Some(s) = self.stream.as_mut() {
            s.members.insert(g, Vec::new());
        }
        g
    }

    /// Closes the open group of a task as stack-lost, keeping it as the
    /// task's `prev` so that a late stack can still match it.
    fn close_lost(&mut self, pid: i32) {
        let epoch = self.loss_epoch;
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        if let Some(g) = t.open.take() {
            let grp = self.groups.rec_mut(g);
            grp.set_status(Status::StackLost);
            grp.loss_while_open |= t.open_epoch != epoch;
            t.prev = Some(g);
        }
    }

    fn page_cookie(&mut self, cpu: u32, ts: u64, pid: i32, cookie: u64) {
        if pid == 0 && cookie == 0 {
            self.pages.entry(cpu).or_default().1.clear();
            return;
        }
        self.cover(cpu, pid, Cover::PageCookie(cookie));
        // Earlier events of the task are not the ones a later cookie entry
        // follows.
        if let Some(recent) = self.cpus.get_mut(&cpu) {
            for l in recent.iter_mut().filter(|l| l.pid == pid) {
                l.got_cookie = true;
            }
        }
        if let Some(c) = NonZeroU64::new(cookie) {
            let g = self.join(ts, pid, c);
            self.groups.rec_mut(g).cookie_events += 1;
        }
    }

    fn cookie(&mut self, cpu: u32, ts: u64, pid: i32, cookie: u64) {
        // A zero cookie is no cookie (the unwinder never gives it out): the
        // event stays ungrouped.
        if cookie == 0 {
            return;
        }
        // The event this cookie belongs to.
        let picked = self.pick(cpu, pid, |l| !l.got_cookie);
        if picked.is_none() {
            self.out.cookies_without_event += 1;
        }
        let g = self.attach(cpu, ts, pid, cookie, picked);
        self.groups.rec_mut(g).cookie_events += 1;
    }

    /// The group of `(pid, cookie)`: the task's open group, the one closed
    /// just before, or the one that got its stack last, if it has this
    /// cookie; otherwise a new open group (the task entered the kernel
    /// again: whatever was open never got its stack).
    fn join(&mut self, ts: u64, pid: i32, cookie: NonZeroU64) -> usize {
        let epoch = self.loss_epoch;
        let state = self.tasks.get(&pid).copied().unwrap_or_default();
        let known = [state.open, state.prev, state.done]
            .into_iter()
            .flatten()
            .find(|&g| self.groups.rec(g).cookie() == Some(cookie));
        let g = if let Some(g) = known {
            g
        } else {
            self.close_lost(pid);
            let g = self.new_group(pid, GroupKind::Deferred, Some(cookie), ts);
            let t = self.tasks.entry(pid).or_default();
            t.open = Some(g);
            t.open_epoch = epoch;
            g
        };
        let grp = self.groups.rec_mut(g);
        grp.last_ts = grp.last_ts.max(ts);
        g
    }

    /// Puts recent event `picked` of `cpu` (if any) into the group of
    /// `(pid, cookie)` (`cookie` is not zero) and returns the group.
    fn attach(&mut self, cpu: u32, ts: u64, pid: i32, cookie: u64, picked: Option<usize>) -> usize {
        let cookie = NonZeroU64::new(cookie).expect("attach: zero cookie");
        let g = self.join(ts, pid, cookie);
        if let Some(i) = picked {
            self.add_event(cpu, i, g);
        }
        g
    }

    /// Puts recent event `i` of `cpu` (if it is still there) into group
    /// `g`; no cookie record takes it after that.
    fn add_event(&mut self, cpu: u32, i: usize, g: usize) {
        let Some(last) = self.cpus.get_mut(&cpu).and_then(|r| r.get_mut(i)) else {
            return;
        };
        last.got_cookie = true;
        let (ev, ev_ts) = (last.ev, last.ts);
        let grp = self.groups.rec_mut(g);
        grp.first_ts = grp.first_ts.min(ev_ts);
        let at = self.log_event(g, ev);
        self.place(cpu, i, at);
    }

    /// Makes `cover` what covers the following events of `pid` in the
    /// current page of `cpu`.
    fn cover(&mut self, cpu: u32, pid: i32, cover: Cover) {
        let list = &mut self.pages.entry(cpu).or_default().1;
        list.retain(|&(p, _)| p != pid);
        list.push((pid, cover));
    }

    /// Gives a `user_unwind_stack` to its group and returns the group.
    fn user_stack(
        &mut self,
        seq: u64,
        ts: u64,
        pid: i32,
        cookie: u64,
        stack: &[u64],
    ) -> Option<usize> {
        // A stack with a zero cookie matches nothing and names no group.
        let cookie = NonZeroU64::new(cookie)?;
        let epoch = self.loss_epoch;
        let state = self.tasks.get(&pid).copied().unwrap_or_default();
        let matches = |g: usize, groups: &GroupStore| {
            let grp = groups.rec(g);
            grp.cookie() == Some(cookie) && grp.user_stack().is_none()
        };
        let stack_ref = self.store_stack(seq, stack);
        if let Some(g) = state.open.filter(|&g| matches(g, &self.groups)) {
            let grp = self.groups.rec_mut(g);
            grp.set_user_stack(stack_ref);
            grp.set_status(Status::Complete);
            grp.loss_while_open |= state.open_epoch != epoch;
            grp.last_ts = grp.last_ts.max(ts);
            let t = self.tasks.entry(pid).or_default();
            t.open = None;
            t.prev = None;
            t.done = Some(g);
            Some(g)
        } else if let Some(g) = state.prev.filter(|&g| matches(g, &self.groups)) {
            // Late stack of the group closed just before: the cookie matches,
            // so it is safe to attach.
            let grp = self.groups.rec_mut(g);
            grp.set_user_stack(stack_ref);
            grp.set_status(Status::Complete);
            grp.last_ts = grp.last_ts.max(ts);
            let t = self.tasks.entry(pid).or_default();
            t.prev = None;
            t.done = Some(g);
            Some(g)
        } else {
            // The request side of this stack was lost. The task is back in
            // user space, so an open group of another cookie lost its stack.
            self.close_lost(pid);
            let g = self.new_group(pid, GroupKind::Deferred, Some(cookie), ts);
            let grp = self.groups.rec_mut(g);
            grp.set_user_stack(stack_ref);
            grp.set_status(Status::OrphanStack);
            Some(g)
        }
    }

    /// Puts recent event `i` of `cpu`, which follows a linking stack of
    /// cookie `link` in its page, into the task's linked group for `link`.
    fn link(&mut self, cpu: u32, ts: u64, pid: i32, link: NonZeroU64, i: usize) {
        let epoch = self.loss_epoch;
        let state = self.tasks.get(&pid).copied().unwrap_or_default();
        let g = match state.linked {
            Some((g, l)) if l == link => g,
            older => {
                // A new kernel entry: whatever waited for its stack before
                // never got it.
                self.close_lost(pid);
                if let Some((g, _)) = older {
                    self.groups.rec_mut(g).set_status(Status::StackLost);
                }
                let g = self.new_group(pid, GroupKind::Deferred, None, ts);
                let t = self.tasks.entry(pid).or_default();
                t.linked = Some((g, link));
                t.linked_epoch = epoch;
                g
            }
        };
        let grp = self.groups.rec_mut(g);
        grp.last_ts = grp.last_ts.max(ts);
        self.add_event(cpu, i, g);
    }

    /// A stack of `pid` whose `prev` is `prev` went to group `g`: the
    /// task's linked group waiting for it joins `g`.
    fn resolve_link(&mut self, pid: i32, prev: u64, g: usize) {
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        let Some((l, _)) = t.linked.filter(|&(l, c)| c.get() == prev && l != g) else {
            return;
        };
        t.linked = None;
        let linked_epoch = t.linked_epoch;
        let (first, last) = {
            let from = self.groups.rec(l);
            (from.first_ts, from.last_ts)
        };
        // The events keep their places in the log: kernel stacks still to
        // come for recent events reach them there.
        self.groups.merge(l, g);
        if let Some(s) = self.stream.as_mut() {
            let moved = s.members.remove(&l).unwrap_or_default();
            s.members.entry(g).or_default().extend(moved);
        }
        let grp = self.groups.rec_mut(g);
        grp.first_ts = grp.first_ts.min(first);
        grp.last_ts = grp.last_ts.max(last);
        grp.loss_while_open |= linked_epoch != self.loss_epoch;
        // Its request side is the linked events.
        if grp.status() == Status::OrphanStack {
            grp.set_status(Status::Complete);
            if let Some(t) = self.tasks.get_mut(&pid) {
                t.open = None;
                t.done = Some(g);
            }
        }
    }

    /// Stores the frames of the user stack event `seq` and refers to them.
    fn store_stack(&mut self, seq: u64, stack: &[u64]) -> UserStackRef {
        UserStackRef {
            seq,
            stack: self.out.stacks.push(stack),
        }
    }

    fn sync_stack(&mut self, seq: u64, cpu: u32, ts: u64, pid: i32, stack: &[u64]) {
        let stack_ref = self.store_stack(seq, stack);
        let picked = self.pick(cpu, pid, |l| !l.got_sync);
        let event = picked.and_then(|i| {
            let last = self.cpus.get_mut(&cpu)?.get_mut(i)?;
            last.got_sync = true;
            Some((last.ev, last.ts))
        });
        let g = self.new_group(pid, GroupKind::Sync, None, ts);
        let grp = self.groups.rec_mut(g);
        grp.set_user_stack(stack_ref);
        match event {
            Some((ev, ev_ts)) => {
                grp.first_ts = ev_ts;
                grp.set_status(Status::Complete);
                let at = self.log_event(g, ev);
                if let Some(i) = picked {
                    self.place(cpu, i, at);
                }
            }
            None => grp.set_status(Status::OrphanStack),
        }
    }
}

/// Stitches a whole sequence at once.
pub fn stitch<'a>(inputs: impl IntoIterator<Item = Input<'a>>) -> Stitched {
    let mut s = Stitcher::new();
    for i in inputs {
        s.push(i);
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::Stacks;

    #[test]
    fn equal_stacks_are_stored_once_and_others_apart() {
        let mut s = Stacks::default();
        let a = s.push(&[0x10, 0x20, 0x30]);
        let b = s.push(&[0x10, 0x20]);
        let empty = s.push(&[]);
        assert_eq!(s.push(&[0x10, 0x20, 0x30]), a);
        assert_eq!(s.push(&[]), empty);
        // The same words in another order, or one more: other stacks.
        let c = s.push(&[0x30, 0x20, 0x10]);
        let d = s.push(&[0x10, 0x20, 0x30, 0]);
        let ids = [a, b, empty, c, d];
        for (i, x) in ids.iter().enumerate() {
            assert!(!ids[i + 1..].contains(x), "{ids:?}");
        }
        assert_eq!(s.len(), 5);
        assert_eq!(s.get(b), &[0x10, 0x20]);
        assert_eq!(s.get(d), &[0x10, 0x20, 0x30, 0]);
        // Many distinct stacks each keep their own words.
        let many: Vec<_> = (0..10_000u64).map(|i| s.push(&[i, i * 7, !i])).collect();
        for (i, &id) in many.iter().enumerate() {
            let i = i as u64;
            assert_eq!(s.get(id), &[i, i * 7, !i]);
        }
        assert_eq!(s.len(), 5 + 10_000);
    }
}
