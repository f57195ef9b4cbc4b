//! `/` search: the next row whose text, or one of whose stack frames,
//! contains the pattern.
//!
//! Over the groups or events of a large trace a search symbolizes
//! millions of stacks, so it runs in slices of about
//! [`App::search_slice`]: the event loop calls [`App::search_more`] between
//! keys, the status line shows how far it got, and any key stops it.

use std::time::{Duration, Instant};

use ustack_stitch::internal;
use ustack_symbolize::Frame;

use crate::app::{App, Tab};
use crate::source::Source;

/// Rows a slice looks at before it checks the time: a list of up to this
/// many rows is searched at once.
const SLICE_MIN_ROWS: usize = 4096;

/// Time of one slice of a search, by default.
pub const SEARCH_SLICE: Duration = Duration::from_millis(50);

/// A list search that is not done yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Searching {
    pat: String,
    forward: bool,
    /// The row it started from.
    from: usize,
    /// Rows of the list.
    len: usize,
    /// The next row to look at is `step` rows from `from`.
    step: usize,
}

/// Whether a shown frame's function, object (the file or module it is
/// in: `/libc` finds the stacks through libc, also where no symbol was
/// found) or source location contains `pat`.
fn frames_match(frames: &[Frame], internal: bool, pat: &str) -> bool {
    internal::shown(frames, internal).any(|f| {
        f.symbol.as_deref().is_some_and(|s| s.contains(pat))
            || f.object.as_deref().is_some_and(|o| o.contains(pat))
            || f.location.as_deref().is_some_and(|l| l.contains(pat))
    })
}

impl App {
    /// Whether group `g` matches: its task, cookie, status, event names or
    /// the functions of its stacks.
    fn group_matches_text(&self, g: usize, pat: &str, src: &mut dyn Source) -> bool {
        let st = &self.idx.stitched;
        let grp = st.groups.get(g);
        if self.comm_of(grp.pid).contains(pat)
            || grp.pid.to_string() == pat
            || grp.cookie.is_some_and(|c| format!("{c:x}").contains(pat))
            || grp.status.name().contains(pat)
            || st
                .groups
                .events(&grp)
                .iter()
                .any(|e| self.idx.event_name(e.seq).contains(pat))
        {
            return true;
        }
        if let Some(u) = grp.user_stack {
            let fs = src.user_frames(&self.idx, grp.pid, grp.last_ts, u);
            if frames_match(&fs, true, pat) {
                return true;
            }
        }
        st.groups
            .events(&grp)
            .iter()
            .filter_map(|e| e.kernel_stack())
            .any(|k| {
                let fs = src.kernel_frames(st.stacks.get(k));
                frames_match(&fs, self.show_internal, pat)
            })
    }

    /// Whether event `seq` matches: its task, name, field text or the
    /// functions of the stack it has or is.
    fn event_matches_text(&self, seq: u64, pat: &str, src: &mut dyn Source) -> bool {
        let e = self.idx.events[seq as usize];
        if self.comm_of(e.pid).contains(pat)
            || e.pid.to_string() == pat
            || self.idx.event_name(seq).contains(pat)
            || src.event_text(&self.idx, seq).1.contains(pat)
        {
            return true;
        }
        let st = &self.idx.stitched;
        let kernel = st
            .kernel_stack_of(seq)
            .or_else(|| self.kernel_stack_record_of(seq));
        if let Some(k) = kernel {
            let fs = src.kernel_frames(st.stacks.get(k));
            if frames_match(&fs, self.show_internal, pat) {
                return true;
            }
        }
        let user = self.group_of(seq).and_then(|g| {
            let grp = st.groups.get(g);
            grp.user_stack
                .filter(|u| u.seq == seq)
                .map(|u| (grp.pid, grp.last_ts, u))
        });
        user.is_some_and(|(pid, ts, u)| {
            frames_match(&src.user_frames(&self.idx, pid, ts, u), true, pat)
        })
    }

    /// Call tree: the next node (in the order of the fully expanded tree)
    /// whose function contains `pat`, shown and selected.
    fn tree_search(&mut self, forward: bool, pat: &str) -> Option<(usize, bool)> {
        let t = self.tree.as_mut()?;
        let order = t.preorder();
        let cur = t
            .rows
            .get(self.tree_at.sel)
            .and_then(|r| order.iter().position(|&n| n == r.node))
            .unwrap_or(0);
        let len = order.len();
        for step in 1..=len {
            let i = if forward {
                (cur + step) % len
            } else {
                (cur + len - step % len) % len
            };
            if t.node(order[i]).name.contains(pat) {
                let row = t.reveal(order[i])?;
                self.tree_at.sel = row;
                let wrapped = if forward { i <= cur } else { i >= cur };
                return Some((row, wrapped));
            }
        }
        None
    }

    /// Moves to the next (or previous) match of the last search.
    pub(crate) fn search_step(&mut self, forward: bool, src: &mut dyn Source) {
        let Some(pat) = self.search.clone() else {
            self.message = "no search: press / first".into();
            return;
        };
        if self.tab == Tab::Tree {
            let found = self.tree_search(forward, &pat);
            self.message = found_message(&pat, found);
            return;
        }
        let (len, from) = match self.tab {
            Tab::Groups => (self.groups.len(), self.groups_at.sel),
            _ => (self.event_count(), self.events_at.sel),
        };
        self.searching = Some(Searching {
            pat,
            forward,
            from,
            len,
            step: 1,
        });
        self.search_more(src);
    }

    /// Goes on with the list search under way for about
    /// [`App::search_slice`]; true while it is not done.
    pub fn search_more(&mut self, src: &mut dyn Source) -> bool {
        let Some(mut s) = self.searching.take() else {
            return false;
        };
        let start = Instant::now();
        let mut looked = 0;
        while s.step <= s.len {
            let row = if s.forward {
                (s.from + s.step) % s.len
            } else {
                (s.from + s.len - s.step % s.len) % s.len
            };
            if self.row_matches(row, &s.pat, src) {
                match self.tab {
                    Tab::Groups => {
                        self.groups_at.sel = row;
                        self.dscroll = 0;
                    }
                    _ => self.events_at.sel = row,
                }
                let wrapped = if s.forward {
                    row <= s.from
                } else {
                    row >= s.from
                };
                self.message = found_message(&s.pat, Some((row, wrapped)));
                return false;
            }
            s.step += 1;
            looked += 1;
            if looked >= SLICE_MIN_ROWS && start.elapsed() >= self.search_slice {
                self.message = format!(
                    "searching /{}: {}% (any key stops)",
                    s.pat,
                    s.step * 100 / s.len.max(1)
                );
                self.searching = Some(s);
                return true;
            }
        }
        self.message = found_message(&s.pat, None);
        false
    }

    /// Stops the search under way, if any; true if there was one.
    pub(crate) fn stop_search(&mut self) -> bool {
        let stopped = self.searching.take().is_some();
        if stopped {
            self.message = "search stopped".into();
        }
        stopped
    }

    fn row_matches(&self, row: usize, pat: &str, src: &mut dyn Source) -> bool {
        match self.tab {
            Tab::Groups => self
                .groups
                .get(row)
                .is_some_and(|&g| self.group_matches_text(g as usize, pat, src)),
            _ => self
                .event_at(row)
                .is_some_and(|seq| self.event_matches_text(seq, pat, src)),
        }
    }
}

/// The status text of a search's end.
fn found_message(pat: &str, found: Option<(usize, bool)>) -> String {
    match found {
        Some((row, wrapped)) => format!(
            "/{pat}: row {}{}",
            row + 1,
            if wrapped { " (wrapped)" } else { "" }
        ),
        None => format!("not found: {pat}"),
    }
}
