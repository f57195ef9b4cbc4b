//! `/` search: the next row whose text, or one of whose stack frames,
//! contains the pattern.

use ustack_stitch::internal;
use ustack_symbolize::Frame;

use crate::app::{App, Tab};
use crate::source::Source;

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
        let grp = &st.groups[g];
        if self.comm_of(grp.pid).contains(pat)
            || grp.pid.to_string() == pat
            || grp.cookie.is_some_and(|c| format!("{c:x}").contains(pat))
            || grp.status.name().contains(pat)
            || grp
                .events
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
        grp.events.iter().filter_map(|e| e.kernel_stack).any(|k| {
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
            let grp = &st.groups[g];
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
            .get(self.tsel)
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
                self.tsel = row;
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
        let found = match self.tab {
            Tab::Tree => self.tree_search(forward, &pat),
            Tab::Groups | Tab::Events => self.list_search(forward, &pat, src),
        };
        self.message = match found {
            Some((row, wrapped)) => format!(
                "/{pat}: row {}{}",
                row + 1,
                if wrapped { " (wrapped)" } else { "" }
            ),
            None => format!("not found: {pat}"),
        };
    }

    fn list_search(
        &mut self,
        forward: bool,
        pat: &str,
        src: &mut dyn Source,
    ) -> Option<(usize, bool)> {
        let (len, cur) = match self.tab {
            Tab::Groups => (self.groups.len(), self.gsel),
            _ => (self.event_count(), self.esel),
        };
        for step in 1..=len {
            let row = if forward {
                (cur + step) % len
            } else {
                (cur + len - step % len) % len
            };
            let hit = match self.tab {
                Tab::Groups => self.group_matches_text(self.groups[row] as usize, pat, src),
                _ => {
                    let seq = self.event_at(row)?;
                    self.event_matches_text(seq, pat, src)
                }
            };
            if hit {
                match self.tab {
                    Tab::Groups => {
                        self.gsel = row;
                        self.dscroll = 0;
                    }
                    _ => self.esel = row,
                }
                let wrapped = if forward { row <= cur } else { row >= cur };
                return Some((row, wrapped));
            }
        }
        None
    }
}
