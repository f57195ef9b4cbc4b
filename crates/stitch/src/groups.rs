//! Where the stitched groups live: fixed-size plain records in
//! [`SpillVec`]s, so that the groups of tens of millions of events go to a
//! temporary file instead of staying resident.
//!
//! While stitching, a `GroupStore` holds one `GroupRec` per group and a
//! log of the events as they are placed (each with its group), since events
//! reach their groups in any order. `GroupStore::finish` sorts the groups
//! by time and lays each group's events out next to each other: the
//! [`Groups`] that the views read, a group at a time ([`Groups::get`]) with
//! its events as one slice ([`Groups::events`]).

use std::num::NonZeroU64;

use ustack_tracedata::spill::{Plain, SpillVec};

use crate::stitcher::{Group, GroupKind, StackId, Status, UserStackRef};

/// "No stack" in a stack id field.
const NO_STACK: u32 = u32::MAX;
/// "Not merged" in [`GroupRec::merged_into`].
const NOT_MERGED: u32 = u32::MAX;
/// Groups read (or events placed) between two releases of the pages
/// behind a reader.
const RELEASE_EVERY: usize = 1 << 16;

/// A kernel event of a group: its handle and, when a `kernel_stack`
/// followed it, that stack. 16 plain bytes, since report --stacks and the
/// TUI hold every grouped event. Its CPU and time are the caller's, found
/// by `seq` (the index of `crate::trace` has them).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef {
    /// Caller's handle of the event.
    pub seq: u64,
    /// Its kernel stack, [`NO_STACK`] for none.
    stack: u32,
    /// The group while stitching (see [`GroupStore`]), 0 after.
    group: u32,
}

// SAFETY: two integers and an explicit padding word, no implicit padding
// (the size check below).
unsafe impl Plain for EventRef {}
const _: () = assert!(std::mem::size_of::<EventRef>() == 16);

impl EventRef {
    /// Event `seq`, with its kernel stack if it has one.
    pub fn new(seq: u64, kernel_stack: Option<StackId>) -> Self {
        EventRef {
            seq,
            stack: kernel_stack.unwrap_or(NO_STACK),
            group: 0,
        }
    }

    /// Its kernel stack, when a `kernel_stack` record followed it.
    pub fn kernel_stack(&self) -> Option<StackId> {
        (self.stack != NO_STACK).then_some(self.stack)
    }

    /// Gives it kernel stack `id`.
    pub(crate) fn set_kernel_stack(&mut self, id: StackId) {
        self.stack = id;
    }
}

/// The events of a group: where they start in [`Groups`]' event array and
/// how many there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventSpan {
    start: u64,
    len: u32,
}

impl EventSpan {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when the group has no kernel event (an orphan stack).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A group as stored: 64 plain bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupRec {
    /// 0 for none.
    cookie: u64,
    pub(crate) first_ts: u64,
    pub(crate) last_ts: u64,
    stack_seq: u64,
    /// Start in the event array (after [`GroupStore::finish`]).
    events_start: u64,
    pub(crate) pid: i32,
    pub(crate) cookie_events: u32,
    /// User stack id, [`NO_STACK`] for none.
    stack: u32,
    events_len: u32,
    /// The group whose events these became ([`NOT_MERGED`]: none).
    merged_into: u32,
    kind: u8,
    status: u8,
    pub(crate) loss_while_open: bool,
    _pad: u8,
}

// SAFETY: integers and one bool laid out without implicit padding (the
// last byte is explicit); the only field with invalid bytes is the bool,
// and only `true` or `false` is ever written to it (the size check below
// holds the layout to its 64 bytes).
unsafe impl Plain for GroupRec {}
const _: () = assert!(std::mem::size_of::<GroupRec>() == 64);

impl GroupRec {
    fn new(pid: i32, kind: GroupKind, cookie: Option<NonZeroU64>, ts: u64) -> Self {
        GroupRec {
            cookie: cookie.map_or(0, NonZeroU64::get),
            first_ts: ts,
            last_ts: ts,
            stack_seq: 0,
            events_start: 0,
            pid,
            cookie_events: 0,
            stack: NO_STACK,
            events_len: 0,
            merged_into: NOT_MERGED,
            kind: kind as u8,
            status: Status::Pending as u8,
            loss_while_open: false,
            _pad: 0,
        }
    }

    pub(crate) fn cookie(&self) -> Option<NonZeroU64> {
        NonZeroU64::new(self.cookie)
    }

    pub(crate) fn status(&self) -> Status {
        match self.status {
            0 => Status::Complete,
            1 => Status::Pending,
            2 => Status::StackLost,
            _ => Status::OrphanStack,
        }
    }

    pub(crate) fn set_status(&mut self, s: Status) {
        self.status = s as u8;
    }

    fn kind(&self) -> GroupKind {
        match self.kind {
            0 => GroupKind::Deferred,
            1 => GroupKind::Sync,
            _ => GroupKind::Kernel,
        }
    }

    pub(crate) fn user_stack(&self) -> Option<UserStackRef> {
        (self.stack != NO_STACK).then_some(UserStackRef {
            seq: self.stack_seq,
            stack: self.stack,
        })
    }

    pub(crate) fn set_user_stack(&mut self, u: UserStackRef) {
        self.stack_seq = u.seq;
        self.stack = u.stack;
    }

    pub(crate) fn group(&self) -> Group {
        Group {
            pid: self.pid,
            kind: self.kind(),
            cookie: self.cookie(),
            events: EventSpan {
                start: self.events_start,
                len: self.events_len,
            },
            cookie_events: self.cookie_events,
            user_stack: self.user_stack(),
            status: self.status(),
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            loss_while_open: self.loss_while_open,
        }
    }
}

/// The groups of a trace, ordered by the time of their first record, and
/// their events (see the module documentation).
///
/// # Invariants
///
/// Each record's event span lies in `events`; the spans follow each other
/// in group order, and each span's events are in seq order.
#[derive(Debug, Default, Clone)]
pub struct Groups {
    recs: SpillVec<GroupRec>,
    events: SpillVec<EventRef>,
}

impl Groups {
    /// Number of groups.
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    /// True when there is no group.
    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Group `i`.
    ///
    /// # Panics
    ///
    /// When `i` is out of range, as indexing a slice does.
    pub fn get(&self, i: usize) -> Group {
        self.recs[i].group()
    }

    /// The kernel events of `g` (a group of these groups), in time order.
    pub fn events(&self, g: &Group) -> &[EventRef] {
        let start = g.events.start as usize;
        self.events
            .get(start..start + g.events.len())
            .unwrap_or(&[])
    }

    /// Every group in order. The pages behind the iterator are given back
    /// as it goes, so that a pass over all groups keeps few of them
    /// resident.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Group> + '_ {
        (0..self.len()).map(move |i| {
            if i % RELEASE_EVERY == 0 && i > 0 {
                self.recs.release_range(0..i);
                self.events
                    .release_range(0..self.recs[i].events_start as usize);
            }
            self.recs[i].group()
        })
    }

    /// Gives the pages of spilled groups back to the kernel: for readers
    /// that went over many of them in any order (they are read again from
    /// the temporary file when used).
    pub fn release(&self) {
        self.recs.release();
        self.events.release();
    }
}

impl PartialEq for Groups {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|(a, b)| a == b && self.events(&a) == other.events(&b))
    }
}

/// A group's place in time, for sorting.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct SortKey {
    ts: u64,
    group: u64,
}

// SAFETY: two integers, no padding.
unsafe impl Plain for SortKey {}

/// The groups while stitching: their records by creation, and every
/// placed event with its group.
#[derive(Debug, Default)]
pub(crate) struct GroupStore {
    recs: SpillVec<GroupRec>,
    log: SpillVec<EventRef>,
}

impl GroupStore {
    /// A new group; returns its id.
    pub(crate) fn push(
        &mut self,
        pid: i32,
        kind: GroupKind,
        cookie: Option<NonZeroU64>,
        ts: u64,
    ) -> usize {
        self.recs.push(GroupRec::new(pid, kind, cookie, ts));
        self.recs.len() - 1
    }

    /// Group `g`.
    pub(crate) fn rec(&self, g: usize) -> &GroupRec {
        &self.recs[g]
    }

    /// Group `g`, to change.
    pub(crate) fn rec_mut(&mut self, g: usize) -> &mut GroupRec {
        &mut self.recs[g]
    }

    /// Places event `ev` in group `g`; returns where it was logged, for
    /// [`GroupStore::set_kernel_stack`].
    pub(crate) fn add_event(&mut self, g: usize, mut ev: EventRef) -> usize {
        ev.group = u32::try_from(g).expect("more than 4 G groups");
        self.log.push(ev);
        self.recs[g].events_len += 1;
        self.log.len() - 1
    }

    /// Gives kernel stack `id` to the event logged at `at`.
    pub(crate) fn set_kernel_stack(&mut self, at: usize, id: StackId) {
        if let Some(ev) = self.log.get_mut(at) {
            ev.set_kernel_stack(id);
        }
    }

    /// Moves the events of group `from` into group `into` (`from` is left
    /// out of the result).
    pub(crate) fn merge(&mut self, from: usize, into: usize) {
        let n = std::mem::take(&mut self.recs[from].events_len);
        self.recs[from].merged_into = into as u32;
        self.recs[into].events_len += n;
    }

    /// The event logged at `at`, and the group it went to.
    pub(crate) fn logged(&self, at: usize) -> (EventRef, usize) {
        let ev = self.log[at];
        (EventRef { group: 0, ..ev }, self.target(ev.group as usize))
    }

    /// The group that `g`'s events went to.
    fn target(&self, mut g: usize) -> usize {
        while self.recs[g].merged_into != NOT_MERGED {
            g = self.recs[g].merged_into as usize;
        }
        g
    }

    /// The groups ordered by their first timestamp (creation order on
    /// ties), merged ones left out, each with its events in seq order.
    pub(crate) fn finish(self) -> Groups {
        let recs = &self.recs;
        // The sort reads its keys only, in an array of their own: reading
        // the records at random would keep all of them resident.
        let mut order: SpillVec<SortKey> = SpillVec::new();
        for (g, r) in recs.iter().enumerate() {
            if r.merged_into == NOT_MERGED {
                order.push(SortKey {
                    ts: r.first_ts,
                    group: g as u64,
                });
            }
            if g % RELEASE_EVERY == 0 {
                recs.release_range(0..g);
            }
        }
        let order = order.into_sorted_by_key(|k| (k.ts, k.group));
        // Where each group goes, and its events' start there.
        let mut pos = SpillVec::filled(u32::MAX, recs.len());
        let mut out = Groups::default();
        let mut start = 0;
        for (j, k) in order.iter().enumerate() {
            let g = k.group as usize;
            pos[g] = j as u32;
            let mut r = recs[g];
            r.events_start = start;
            start += u64::from(r.events_len);
            // Counts the events placed below.
            r.events_len = 0;
            r.merged_into = NOT_MERGED;
            out.recs.push(r);
            if j % RELEASE_EVERY == 0 {
                // Nearly in creation order: the records behind are done.
                order.release_range(0..j);
                self.release_all(&out, &pos);
            }
        }
        drop(order);
        out.events = SpillVec::filled(EventRef::new(0, None), start as usize);
        for (i, ev) in self.log.iter().enumerate() {
            let r = &mut out.recs[pos[self.target(ev.group as usize)] as usize];
            let at = (r.events_start + u64::from(r.events_len)) as usize;
            r.events_len += 1;
            out.events[at] = EventRef { group: 0, ..*ev };
            if i % (4 * RELEASE_EVERY) == 0 {
                self.release_all(&out, &pos);
            }
        }
        for i in 0..out.recs.len() {
            if i % RELEASE_EVERY == 0 {
                out.release();
            }
            let g = out.recs[i].group();
            let start = g.events.start as usize;
            // Creation order is nearly seq order already; make it exact. A
            // group's events can come out of order when an interrupt's
            // event took its cookie first.
            out.events[start..start + g.events.len()].sort_by_key(|e| e.seq);
        }
        out.release();
        out
    }

    /// Gives back the pages of everything `finish` goes over.
    fn release_all(&self, out: &Groups, pos: &SpillVec<u32>) {
        self.recs.release();
        self.log.release();
        pos.release();
        out.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups made with first timestamps out of creation order, events
    /// placed out of seq order and across groups, a merge and kernel
    /// stacks given after placing: enough of them that the records and
    /// the log move to temporary files, and `finish` gives pages back on
    /// its way.
    #[test]
    fn finish_orders_groups_by_time_and_lays_out_their_events() {
        let n = 300_000usize;
        let ts = |g: usize| (g as u64 * 7919) % 1000;
        let mut store = GroupStore::default();
        for g in 0..n {
            store.push(
                g as i32,
                GroupKind::Deferred,
                NonZeroU64::new(g as u64 + 1),
                ts(g),
            );
        }
        // Group g gets events 10g+2, 10g+1 (in that order), and the first
        // gets a kernel stack after it was placed.
        let mut logged = Vec::new();
        for g in 0..n {
            for k in [2u64, 1] {
                logged.push(store.add_event(g, EventRef::new(10 * g as u64 + k, None)));
            }
        }
        for g in (0..n).step_by(3) {
            store.set_kernel_stack(logged[2 * g], g as u32);
        }
        // Group 5 goes into group 4.
        store.merge(5, 4);
        let groups = store.finish();
        assert_eq!(groups.len(), n - 1);
        // Expected order: by (ts, creation), group 5 left out.
        let mut want: Vec<usize> = (0..n).filter(|&g| g != 5).collect();
        want.sort_by_key(|&g| (ts(g), g));
        assert!(groups.recs.spilled() && groups.events.spilled());
        for (g, (got, &w)) in groups.iter().zip(&want).enumerate() {
            assert_eq!((got.pid, got.first_ts), (w as i32, ts(w)), "position {g}");
            let mut seqs: Vec<(u64, Option<u32>)> = [w]
                .into_iter()
                .chain((w == 4).then_some(5))
                .flat_map(|o| {
                    let stack = (o % 3 == 0).then_some(o as u32);
                    [(10 * o as u64 + 2, stack), (10 * o as u64 + 1, None)]
                })
                .collect();
            seqs.sort();
            let got_events: Vec<_> = groups
                .events(&got)
                .iter()
                .map(|e| (e.seq, e.kernel_stack()))
                .collect();
            assert_eq!(got_events, seqs, "group {w}");
        }
    }

    #[test]
    fn a_group_keeps_what_it_was_given() {
        let mut store = GroupStore::default();
        let g = store.push(-3, GroupKind::Sync, None, 40);
        let r = store.rec_mut(g);
        r.set_status(Status::OrphanStack);
        r.set_user_stack(UserStackRef { seq: 9, stack: 2 });
        r.loss_while_open = true;
        r.cookie_events = 6;
        r.last_ts = 50;
        let groups = store.finish();
        let got = groups.get(0);
        assert_eq!(
            (got.pid, got.kind, got.cookie, got.status, got.cookie_events),
            (-3, GroupKind::Sync, None, Status::OrphanStack, 6)
        );
        assert_eq!(
            (got.first_ts, got.last_ts, got.loss_while_open),
            (40, 50, true)
        );
        assert_eq!(got.user_stack, Some(UserStackRef { seq: 9, stack: 2 }));
        assert!(got.events.is_empty() && groups.events(&got).is_empty());
        for s in [Status::Complete, Status::Pending, Status::StackLost] {
            let mut r = GroupRec::new(1, GroupKind::Kernel, NonZeroU64::new(7), 0);
            r.set_status(s);
            assert_eq!(
                (r.status(), r.kind(), r.cookie().map(|c| c.get())),
                (s, GroupKind::Kernel, Some(7))
            );
        }
    }
}
