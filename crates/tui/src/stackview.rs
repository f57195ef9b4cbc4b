//! The stack views of the state: the frames of a stack row (events tab)
//! and the call tree.

use ustack_stitch::internal;
use ustack_stitch::stitcher::StackId;
use ustack_symbolize::Frame;

use crate::app::App;
use crate::model::{DroppedBefore, EventDetail, Focus, Tab};
use crate::source::Source;
use crate::tree::{CallTree, TreeFrame};

impl App {
    /// Event `seq` resolved for the events tab's detail pane: its text, the
    /// kernel stack it has (or is, for a `kernel_stack` record), the user
    /// stack it is, its group and the drops just before it.
    pub(crate) fn event_detail(&self, seq: u64, src: &mut dyn Source) -> EventDetail {
        let (name, info) = src.event_text(&self.idx, seq);
        let st = &self.idx.stitched;
        let kernel = match st
            .kernel_stack_of(seq)
            .or_else(|| self.kernel_stack_record_of(seq))
        {
            Some(k) => src.kernel_frames(st.stacks.get(k)),
            None => Vec::new(),
        };
        let group = self.group_of(seq);
        let user = group
            .and_then(|g| {
                let grp = st.groups.get(g);
                let u = grp.user_stack.filter(|u| u.seq == seq)?;
                Some(src.user_frames(&self.idx, grp.pid, grp.last_ts, u))
            })
            .unwrap_or_default();
        let dropped_before = match self.idx.loss_before(seq).map(|l| l.count) {
            None => DroppedBefore::Nothing,
            Some(Some(n)) => DroppedBefore::Count(n),
            Some(None) => DroppedBefore::Unknown,
        };
        EventDetail {
            seq,
            name,
            info,
            kernel,
            user,
            group,
            dropped_before,
        }
    }

    /// Shows tab `t`, with the focus on its list.
    pub(crate) fn show_tab(&mut self, t: Tab) {
        self.tab = t;
        self.focus = Focus::List;
    }

    /// Whether the selected row of the events tab is a stack record
    /// (`kernel_stack`, `user_stack`, `user_unwind_stack`): Enter then
    /// shows its frames.
    pub fn selected_is_stack(&self) -> bool {
        self.event_at(self.events_at.sel).is_some_and(|seq| {
            let n = self.idx.event_name(seq);
            let n = n.rsplit(':').next().unwrap_or("");
            matches!(
                n,
                "kernel_stack" | "user_stack" | "user_unwind_stack" | "user_unwind_stack_snapshot"
            )
        })
    }

    /// The stack a `kernel_stack` record `seq` holds: the stitcher files
    /// it under the event it follows on the same CPU.
    pub(crate) fn kernel_stack_record_of(&self, seq: u64) -> Option<StackId> {
        let e = self.idx.events.get(seq as usize)?;
        if !self.idx.event_name(seq).ends_with("kernel_stack") {
            return None;
        }
        // The event is the previous record of that CPU; other CPUs'
        // records may come in between.
        (0..seq)
            .rev()
            .find(|&s| self.idx.events[s as usize].cpu == e.cpu)
            .and_then(|s| self.idx.stitched.kernel_stack_of(s))
    }

    /// The stacks of the visible groups, symbolized, outermost frame first:
    /// the user stack, then the kernel stack of the group's first event
    /// that has one.
    pub(crate) fn build_tree(&self, src: &mut dyn Source) -> CallTree {
        let st = &self.idx.stitched;
        let stacks = self.groups.iter().map(|&g| {
            let grp = st.groups.get(g as usize);
            let mut frames: Vec<TreeFrame> = Vec::new();
            if let Some(u) = grp.user_stack {
                let fs = src.user_frames(&self.idx, grp.pid, grp.last_ts, u);
                frames.extend(fs.iter().rev().map(|f| (tree_label(f), false)));
            }
            if let Some(k) = st.groups.events(&grp).iter().find_map(|e| e.kernel_stack()) {
                let fs = src.kernel_frames(st.stacks.get(k));
                frames.extend(
                    internal::shown(&fs, self.show_internal)
                        .rev()
                        .map(|f| (tree_label(f), true)),
                );
            }
            frames
        });
        // Streamed: one symbolized stack at a time (collecting them first
        // took 70 MB on 150,000 groups).
        CallTree::build(stacks, self.bottom_up)
    }

    /// Enter on a tree row: expands or collapses it.
    pub(crate) fn tree_toggle(&mut self) {
        let Some(t) = &mut self.tree else { return };
        let Some(r) = t.rows.get(self.tree_at.sel).copied() else {
            return;
        };
        let open = t.node(r.node).expanded;
        t.set_expanded(r.node, !open);
    }

    /// Right / left on a tree row: expands it; collapses it, or when it is
    /// collapsed already, moves to its parent.
    pub(crate) fn tree_expand(&mut self, expand: bool) {
        let Some(t) = &mut self.tree else { return };
        let Some(r) = t.rows.get(self.tree_at.sel).copied() else {
            return;
        };
        let node = t.node(r.node);
        if expand || (node.expanded && !node.children.is_empty()) {
            t.set_expanded(r.node, expand);
        } else if node.parent != 0 {
            if let Some(row) = t.row_of(node.parent) {
                self.tree_at.sel = row;
            }
        }
    }
}

/// A frame's node name in the call tree: its function, or its address and
/// object when it has no symbol (so that unknown functions stay apart).
fn tree_label(f: &Frame) -> String {
    match (&f.symbol, &f.object) {
        (Some(s), _) => s.clone(),
        (None, Some(o)) => format!("{:#x} [{}]", f.addr, o.rsplit('/').next().unwrap_or(o)),
        (None, None) => format!("{:#x}", f.addr),
    }
}
