//! Which groups and events the stitched views show: trace-cmd's `-F`
//! filters (negated after `-v`) and `--cpu`, perf report's `--pid`, `--comm` and
//! `--time`.
//!
//! The event filters (`-F`, `--cpu`, `--time`) choose kernel events: a
//! group is shown with the events chosen, and not at all when none is. A
//! group without kernel events (an orphan stack) is shown when no `-F` is
//! given and its stack record passes `--cpu` and `--time`. `--pid` and
//! `--comm` choose whole groups.

use crate::text::Texts;
use anyhow::{bail, Context, Result};
use ustack_stitch::trace::Index;
use ustack_stitch::{EventRef, Group};
use ustack_tracedata::spill::SpillVec;
use ustack_tracedata::Record;

/// What to show; the default shows everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only events on these CPUs.
    pub cpus: Option<Vec<u32>>,
    /// Only groups of these tasks (none: all).
    pub pids: Vec<i32>,
    /// Only groups of tasks with these exact command names (none: all).
    pub comms: Vec<String>,
    /// Only events at or after this time (ns, as in the file).
    pub start: Option<u64>,
    /// Only events at or before this time (ns).
    pub end: Option<u64>,
    /// trace-cmd event filters (`-F`).
    pub filters: Vec<String>,
    /// Filters whose matches are hidden (`-F` after `-v`).
    pub neg_filters: Vec<String>,
}

impl Selection {
    /// True when nothing is filtered.
    pub fn is_all(&self) -> bool {
        *self == Selection::default()
    }

    /// Sets the time window from perf's `--time START,END` (seconds, as
    /// the reports print them; either side may be empty).
    pub fn set_time(&mut self, spec: &str) -> Result<()> {
        let Some((a, b)) = spec.split_once(',') else {
            bail!("bad time window {spec:?}: give START,END in seconds (either may be empty)");
        };
        let secs = |s: &str| -> Result<Option<u64>> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            let (int, frac) = s.split_once('.').unwrap_or((s, ""));
            if frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
                bail!("bad time {s:?} in {spec:?}: seconds with at most 9 decimals");
            }
            let int: u64 = int
                .parse()
                .with_context(|| format!("bad time {s:?} in {spec:?}"))?;
            let frac: u64 = format!("{frac:0<9}").parse().unwrap_or(0);
            int.checked_mul(1_000_000_000)
                .and_then(|n| n.checked_add(frac))
                .map(Some)
                .with_context(|| format!("time {s:?} in {spec:?} is too large"))
        };
        let (start, end) = (secs(a)?, secs(b)?);
        if let (Some(s), Some(e)) = (start, end) {
            if s > e {
                bail!("bad time window {spec:?}: START is after END");
            }
        }
        (self.start, self.end) = (start, end);
        Ok(())
    }

    fn cpu_and_time(&self, cpu: u32, ts: u64) -> bool {
        self.cpus.as_ref().is_none_or(|c| c.contains(&cpu))
            && self.start.is_none_or(|s| ts >= s)
            && self.end.is_none_or(|e| ts <= e)
    }
}

/// A [`Selection`] applied to one index: the groups to show and, in them,
/// the events.
#[derive(Debug, Default)]
pub struct Chosen {
    /// Indexes of the groups to show, in order (in a temporary file once
    /// many).
    pub groups: SpillVec<u32>,
    /// One bit per event seq: chosen (empty: all are).
    events: Vec<u64>,
    /// Number of events chosen in the groups shown.
    pub event_count: usize,
}

impl Chosen {
    /// Whether event `seq` of a shown group is to be shown.
    pub fn has_event(&self, seq: u64) -> bool {
        self.events.is_empty()
            || self
                .events
                .get(seq as usize / 64)
                .is_some_and(|w| w & (1 << (seq % 64)) != 0)
    }
}

/// Applies `sel` to the groups of `idx`: `rec` reads an event's record
/// (for `-F`), `texts` holds the filters (set with [`Texts::set_filters`]),
/// `comm` names a task as the views do.
pub fn choose<'r>(
    sel: &Selection,
    idx: &Index,
    rec: impl Fn(u64) -> Option<Record<'r>>,
    texts: &mut Texts,
    mut comm: impl FnMut(i32) -> String,
) -> Chosen {
    let groups = &idx.stitched.groups;
    if sel.is_all() {
        return Chosen {
            groups: (0..groups.len() as u32).collect(),
            events: Vec::new(),
            event_count: groups.iter().map(|g| g.events.len()).sum(),
        };
    }
    let mut out = Chosen {
        events: vec![0; idx.events.len().div_ceil(64).max(1)],
        ..Chosen::default()
    };
    for (i, g) in groups.iter().enumerate() {
        let events = groups.events(&g);
        if let Some(kept) = choose_in_group(sel, idx, &g, events, &rec, texts, &mut comm) {
            for &seq in &kept {
                out.events[seq as usize / 64] |= 1 << (seq % 64);
            }
            out.groups.push(i as u32);
            out.event_count += kept.len();
        }
    }
    // Every grouped event's entry was read: give the spilled index's
    // pages back.
    idx.release();
    out
}

/// What `sel` shows of group `g` (whose kernel events are `events`): the
/// seqs of the events it shows, or `None` when it hides the group (an
/// orphan stack is shown, without events, when its stack passes).
pub fn choose_in_group<'r>(
    sel: &Selection,
    idx: &Index,
    g: &Group,
    events: &[EventRef],
    rec: impl Fn(u64) -> Option<Record<'r>>,
    texts: &mut Texts,
    mut comm: impl FnMut(i32) -> String,
) -> Option<Vec<u64>> {
    if !group_passes(sel, g, &mut comm) {
        return None;
    }
    let filtered = !sel.filters.is_empty() || !sel.neg_filters.is_empty();
    let kept: Vec<u64> = events
        .iter()
        .map(|e| e.seq)
        .filter(|&seq| {
            let (cpu, ts) = idx.cpu_ts(seq);
            sel.cpu_and_time(cpu, ts) && (!filtered || rec(seq).is_some_and(|r| texts.selects(&r)))
        })
        .collect();
    let orphan_shown = events.is_empty()
        && !filtered
        && g.user_stack.is_some_and(|u| {
            let (cpu, ts) = idx.cpu_ts(u.seq);
            sel.cpu_and_time(cpu, ts)
        });
    (!kept.is_empty() || orphan_shown).then_some(kept)
}

/// Whether event `seq` of `idx` passes `sel` on its own, in a group or
/// not (the TUI's list of all events): its CPU, time and task, and the
/// `-F` filters, as [`choose`] judges the events of a group.
pub fn event_passes<'r>(
    sel: &Selection,
    idx: &Index,
    seq: u64,
    rec: impl Fn(u64) -> Option<Record<'r>>,
    texts: &mut Texts,
    mut comm: impl FnMut(i32) -> String,
) -> bool {
    let Some(e) = idx.events.get(seq as usize) else {
        return false;
    };
    let (cpu, ts) = idx.cpu_ts(seq);
    let filtered = !sel.filters.is_empty() || !sel.neg_filters.is_empty();
    (sel.pids.is_empty() || sel.pids.contains(&e.pid))
        && (sel.comms.is_empty() || sel.comms.contains(&comm(e.pid)))
        && sel.cpu_and_time(cpu, ts)
        && (!filtered || rec(seq).is_some_and(|r| texts.selects(&r)))
}

fn group_passes(sel: &Selection, g: &Group, comm: &mut impl FnMut(i32) -> String) -> bool {
    (sel.pids.is_empty() || sel.pids.contains(&g.pid))
        && (sel.comms.is_empty() || sel.comms.contains(&comm(g.pid)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_windows_are_seconds_with_open_ends() {
        let mut s = Selection::default();
        s.set_time("1.5,2").unwrap();
        assert_eq!((s.start, s.end), (Some(1_500_000_000), Some(2_000_000_000)));
        s.set_time(",0.000002").unwrap();
        assert_eq!((s.start, s.end), (None, Some(2_000)));
        s.set_time("3,").unwrap();
        assert_eq!((s.start, s.end), (Some(3_000_000_000), None));
        for bad in ["1", "a,2", "2,1", "1.0000000001,", "99999999999999999999,"] {
            assert!(s.set_time(bad).is_err(), "{bad}");
        }
    }
}
