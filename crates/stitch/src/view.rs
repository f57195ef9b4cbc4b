//! Resolved, display-ready views of groups, shared by the report and the
//! TUI: events with their names and info text (through [`EventText`]),
//! symbolized kernel and user stacks. How they are written, event text
//! included, is the printer's (`ustack-printer`).

use ustack_tracedata::format::EventFormat;
use ustack_tracedata::Record;

use crate::groups::EventRef;
use crate::stitcher::{Group, GroupKind, Stacks, Status, UserStackRef};
use crate::trace::Index;
use ustack_symbolize::unwind::{End, Snapshot};
use ustack_symbolize::{Frame, Symbolizer};

/// The cookie in hex, `-` for synchronous and kernel-only groups.
pub fn fmt_cookie(g: &Group) -> String {
    match g.cookie {
        Some(c) => format!("{:x}", c.get()),
        None => "-".to_string(),
    }
}

/// One kernel event of a group, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLine {
    /// Seq in the index.
    pub seq: u64,
    /// CPU.
    pub cpu: u32,
    /// Timestamp.
    pub ts: u64,
    /// Event name.
    pub name: String,
    /// Field text.
    pub info: String,
    /// Symbolized kernel stack (empty if none).
    pub kernel: Vec<Frame>,
}

/// The user stack record of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserStackAt {
    /// Seq in the index.
    pub seq: u64,
    /// CPU it was written on.
    pub cpu: u32,
    /// Timestamp.
    pub ts: u64,
}

/// A group, resolved for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDetail {
    /// Task.
    pub pid: i32,
    /// Command name.
    pub comm: String,
    /// Deferred or synchronous.
    pub kind: GroupKind,
    /// The cookie.
    pub cookie: Option<u64>,
    /// Status.
    pub status: Status,
    /// First timestamp.
    pub first_ts: u64,
    /// Last timestamp.
    pub last_ts: u64,
    /// Whether events were dropped while the group was open.
    pub loss_while_open: bool,
    /// Cookie events seen.
    pub cookie_events: u32,
    /// Kernel events.
    pub events: Vec<EventLine>,
    /// The user stack record, if any.
    pub user: Option<UserStackAt>,
    /// Its symbolized frames.
    pub user_frames: Vec<Frame>,
    /// For a stack unwound from a snapshot that is not complete: the index
    /// of the first frame the CFI walk did not find, and why it stopped.
    pub user_cut: Option<(usize, End)>,
}

/// The name and info text of events, as a view shows them. Writing the
/// text is the printer's (`ustack-printer`'s `text::Texts`: libtraceevent's
/// text, or the fields); [`NamesOnly`] gives the names alone.
pub trait EventText {
    /// Name and info text of event `seq`, given its record if it can be
    /// read.
    fn event_text(&mut self, idx: &Index, seq: u64, rec: Option<&Record<'_>>) -> (String, String);
}

/// Event names without info text, for views that show no event text.
#[derive(Debug, Default, Clone, Copy)]
pub struct NamesOnly;

impl EventText for NamesOnly {
    fn event_text(&mut self, idx: &Index, seq: u64, _rec: Option<&Record<'_>>) -> (String, String) {
        (idx.event_name(seq), String::new())
    }
}

/// The command name of `pid`: the trace's saved and learnt names, else the
/// name PROCMAPS gave it, else `<...>`.
pub fn comm(idx: &Index, sym: &Symbolizer, pid: i32) -> String {
    match idx.comms.get(pid) {
        "<...>" => sym.maps().comm(pid as u32).unwrap_or("<...>").to_string(),
        c => c.to_string(),
    }
}

/// Resolves group `g` of the index: `rec` finds the record of an event
/// seq, `texts` formats it, `sym` symbolizes (lazily, cached).
pub fn detail<'r>(
    idx: &Index,
    g: &Group,
    rec: impl Fn(u64) -> Option<Record<'r>>,
    texts: &mut impl EventText,
    sym: &mut Symbolizer,
) -> GroupDetail {
    let st = &idx.stitched;
    detail_with(idx, &st.stacks, g, st.groups.events(g), rec, texts, sym)
}

/// [`detail`] of a group whose events are `events` and whose stacks are
/// in `stacks` (a group a streaming load handed out, which the index does
/// not keep).
pub fn detail_with<'r>(
    idx: &Index,
    stacks: &Stacks,
    g: &Group,
    events: &[EventRef],
    rec: impl Fn(u64) -> Option<Record<'r>>,
    texts: &mut impl EventText,
    sym: &mut Symbolizer,
) -> GroupDetail {
    let events = events
        .iter()
        .map(|e| {
            let r = rec(e.seq);
            let (name, info) = texts.event_text(idx, e.seq, r.as_ref());
            let kernel = e
                .kernel_stack()
                .map(|k| stacks.get(k).iter().map(|&a| sym.kernel(a)).collect())
                .unwrap_or_default();
            EventLine {
                seq: e.seq,
                cpu: idx.cpu_ts(e.seq).0,
                ts: idx.cpu_ts(e.seq).1,
                name,
                info,
                kernel,
            }
        })
        .collect();
    let (user_frames, user_cut) = g
        .user_stack
        .map(|u| {
            // The maps of the image the process ran when the stack was taken.
            let ts = Some(idx.cpu_ts(u.seq).1);
            user_stack_in(idx, stacks, g.pid, ts, u, &rec, sym)
        })
        .unwrap_or_default();
    let comm = comm(idx, sym, g.pid);
    GroupDetail {
        pid: g.pid,
        comm,
        kind: g.kind,
        cookie: g.cookie.map(|c| c.get()),
        status: g.status,
        first_ts: g.first_ts,
        last_ts: g.last_ts,
        loss_while_open: g.loss_while_open,
        cookie_events: g.cookie_events,
        events,
        user: g.user_stack.map(|u| {
            let (cpu, ts) = idx.cpu_ts(u.seq);
            UserStackAt {
                seq: u.seq,
                cpu,
                ts,
            }
        }),
        user_frames,
        user_cut,
    }
}

/// The frames of user stack `u` of task `pid`, symbolized with the maps
/// of trace time `ts`: unwound from the stack's snapshot when it has one
/// (with where it stops being exact, see [`Symbolizer::user_unwound`]),
/// else the kernel's walk as written. `rec` finds a record by seq.
pub fn user_stack<'r>(
    idx: &Index,
    pid: i32,
    ts: Option<u64>,
    u: UserStackRef,
    rec: impl Fn(u64) -> Option<Record<'r>>,
    sym: &mut Symbolizer,
) -> (Vec<Frame>, Option<(usize, End)>) {
    user_stack_in(idx, &idx.stitched.stacks, pid, ts, u, rec, sym)
}

/// [`user_stack`] with the stacks in `stacks`.
fn user_stack_in<'r>(
    idx: &Index,
    stacks: &Stacks,
    pid: i32,
    ts: Option<u64>,
    u: UserStackRef,
    rec: impl Fn(u64) -> Option<Record<'r>>,
    sym: &mut Symbolizer,
) -> (Vec<Frame>, Option<(usize, End)>) {
    let kernel = stacks.get(u.stack);
    // Only stack entries with a snapshot pay for finding the record again.
    let entry = idx
        .special_snapshot()
        .filter(|f| idx.events.get(u.seq as usize).is_some_and(|e| e.id == f.id))
        .and_then(|f| Some((f, rec(u.seq)?)));
    if let Some((f, entry)) = entry {
        if let Some(sn) = snapshot(f, &entry, kernel) {
            return sym.user_unwound(pid, ts, &sn, kernel);
        }
    }
    let frames = kernel
        .iter()
        .enumerate()
        .map(|(i, &a)| sym.user_at(pid, ts, a, i > 0))
        .collect();
    (frames, None)
}

/// The registers and stack bytes of a `user_unwind_stack_snapshot` record
/// whose frames are `kernel`: the first frame is the user ip.
fn snapshot<'r>(f: &EventFormat, rec: &Record<'r>, kernel: &[u64]) -> Option<Snapshot<'r>> {
    Some(Snapshot {
        ip: *kernel.first()?,
        sp: rec.u64_field(f, "sp").ok()?,
        bp: rec.u64_field(f, "bp").ok()?,
        data: rec.field_bytes(f, "data").ok()?,
    })
}
