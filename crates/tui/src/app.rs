//! The TUI state (plain data) and its updates.
//!
//! Input is mapped to a [`Msg`] ([`crate::keys`]); [`App::update`] applies
//! it; [`App::refresh`] then fills the small caches the visible rows need
//! (field text of the events on screen, the symbolized detail of the
//! selected group) from a [`Source`]. Rendering ([`crate::ui`]) only reads
//! the state and returns the [`Viewport`] it drew, which [`App::drawn`]
//! records: the state never calls the renderer.

use std::collections::HashMap;

use ratatui::layout::Rect;
use ustack_stitch::trace::Index;
use ustack_stitch::{Group, Status};
use ustack_tracedata::spill::SpillVec;

use crate::cursor::ListCursor;
pub use crate::filter::{Filter, TextMatch};
use crate::lines;
pub use crate::model::{
    CpuDrops, DroppedBefore, EventDetail, Focus, Msg, Prompt, PromptState, SelectedGroup, SortKey,
    StatusCounts, Tab, Viewport,
};
use crate::search::{Searching, SEARCH_SLICE};
use crate::source::Source;
use crate::tree::{CallTree, Expansion};

/// No group: the value of [`App::group_of_event`] for an event in none.
const NO_GROUP: u32 = u32::MAX;

/// Groups gone over between two releases of the pages written behind.
const RELEASE_EVERY: usize = 1 << 16;

/// The whole TUI state.
#[derive(Debug)]
pub struct App {
    /// The trace index (read-only).
    pub idx: Index,
    /// Title (the file name).
    pub title: String,
    /// Shown tab.
    pub tab: Tab,
    /// Focused pane of the groups tab.
    pub focus: Focus,
    /// Help shown.
    pub show_help: bool,
    /// Quit requested.
    pub quit: bool,
    /// Group sort key.
    pub sort: SortKey,
    /// Descending sort.
    pub sort_rev: bool,
    /// Filters.
    pub filter: Filter,
    /// Open prompt and its text.
    pub prompt: Option<PromptState>,
    /// Last search.
    pub search: Option<String>,
    /// The list search under way ([`App::search_more`]).
    pub searching: Option<Searching>,
    /// How long one slice of a list search may take before the screen is
    /// drawn again ([`crate::search::SEARCH_SLICE`]).
    pub search_slice: std::time::Duration,
    /// Status line message.
    pub message: String,
    /// What the status line says while the whole trace is being indexed
    /// (this state then holds only its beginning).
    pub loading: Option<String>,
    /// Visible groups (indexes into `idx.stitched.groups`), sorted.
    pub groups: SpillVec<u32>,
    /// Where the group list is (rows of `groups`).
    pub groups_at: ListCursor,
    /// Visible events (seqs), `None` when unfiltered (all of them).
    pub events: Option<SpillVec<u32>>,
    /// Where the event list is.
    pub events_at: ListCursor,
    /// Detail pane scroll.
    pub dscroll: usize,
    /// Event detail pane scroll (events tab, frames of a stack row).
    pub edscroll: usize,
    /// Show tracing-internal kernel frames (`trace_event_raw_event_*`, the
    /// ftrace callbacks); hidden by default.
    pub show_internal: bool,
    /// The call tree of the visible groups, built when first shown and
    /// dropped when what it is built from changes.
    pub tree: Option<CallTree>,
    /// Build the call tree bottom-up.
    pub bottom_up: bool,
    /// What of the call tree a previous state had expanded, applied when
    /// the tree is built ([`App::carry_over`]).
    expansion: Option<Expansion>,
    /// Where the call tree is (its rows).
    pub tree_at: ListCursor,

    /// Terminal size, as last reported (live mode reopens with it).
    pub size: (u16, u16),
    /// What the last draw showed.
    pub viewport: Viewport,
    /// User stack depth of each group.
    pub depth: SpillVec<u16>,
    /// The group of each event by seq ([`NO_GROUP`] for none): grouped
    /// events and attached user stack records.
    group_of_event: SpillVec<u32>,
    /// Cached detail of the selected event (events tab).
    pub edetail: Option<EventDetail>,
    /// Cached detail of the selected group.
    pub detail: Option<SelectedGroup>,
    /// Cached (name, info) of the events on screen.
    pub event_text: HashMap<u64, (String, String)>,
    /// Drops per CPU, for every CPU of the trace.
    pub drops: Vec<CpuDrops>,
    /// Groups per status.
    pub counts: StatusCounts,
    /// The groups the command line's selection shows (all when `None`).
    chosen_groups: Option<Vec<bool>>,
    /// The events the command line's selection shows (all when `None`).
    chosen_events: Option<Vec<bool>>,
}

impl App {
    /// A new state over `idx`, for a terminal of `size`; `ncpus` CPUs get a
    /// drop counter in the header.
    pub fn new(idx: Index, title: &str, ncpus: u32, size: (u16, u16)) -> App {
        let depth = idx
            .stitched
            .groups
            .iter()
            .map(|g| {
                g.user_stack
                    .map(|u| {
                        idx.stitched
                            .stacks
                            .get(u.stack)
                            .len()
                            .min(u16::MAX as usize) as u16
                    })
                    .unwrap_or(0)
            })
            .collect();
        let mut group_of_event = SpillVec::filled(NO_GROUP, idx.events.len());
        for (i, g) in idx.stitched.groups.iter().enumerate() {
            // Written nearly in order: give the pages behind back as it goes.
            if i % RELEASE_EVERY == RELEASE_EVERY - 1 {
                group_of_event.release();
            }
            let seqs = idx.stitched.groups.events(&g).iter().map(|e| e.seq);
            for s in seqs.chain(g.user_stack.map(|u| u.seq)) {
                if let Some(slot) = group_of_event.get_mut(s as usize) {
                    *slot = i as u32;
                }
            }
        }
        // Written all over: give the pages back (read again when used).
        group_of_event.release();
        // Every CPU of the trace gets a counter, even without drops; a CPU
        // the file's count leaves out still shows up.
        let mut drops: Vec<CpuDrops> = (0..ncpus)
            .map(|cpu| CpuDrops {
                cpu,
                count: 0,
                unknown: false,
            })
            .collect();
        for (cpu, count, unknown) in idx.drops_per_cpu() {
            let d = CpuDrops {
                cpu,
                count,
                unknown,
            };
            match drops.iter_mut().find(|d| d.cpu == cpu) {
                Some(slot) => *slot = d,
                None => drops.push(d),
            }
        }
        let mut counts = StatusCounts::default();
        for g in idx.stitched.groups.iter() {
            *match g.status {
                Status::Complete => &mut counts.complete,
                Status::Pending => &mut counts.pending,
                Status::StackLost => &mut counts.lost,
                Status::OrphanStack => &mut counts.orphan,
            } += 1;
        }
        let mut app = App {
            counts,
            idx,
            title: title.to_string(),
            tab: Tab::Groups,
            focus: Focus::List,
            show_help: false,
            quit: false,
            sort: SortKey::Time,
            sort_rev: false,
            filter: Filter::default(),
            prompt: None,
            search: None,
            message: String::new(),
            loading: None,
            searching: None,
            search_slice: SEARCH_SLICE,
            groups: SpillVec::new(),
            groups_at: ListCursor::default(),
            events: None,
            events_at: ListCursor::default(),
            dscroll: 0,
            edscroll: 0,
            show_internal: false,
            tree: None,
            bottom_up: false,
            expansion: None,
            tree_at: ListCursor::default(),
            size,
            viewport: Viewport::default(),
            depth,
            group_of_event,
            edetail: None,
            detail: None,
            event_text: HashMap::new(),
            drops,
            chosen_groups: None,
            chosen_events: None,
        };
        app.apply_filter();
        if app.idx.stitched.groups.is_empty() && !app.idx.events.is_empty() {
            app.tab = Tab::Events;
        }
        app
    }

    /// Shows only the groups and events flagged (the command line's
    /// `-F`, `--cpu`, `--pid`, `--comm` and `--time`, one flag per group
    /// and per event); the interactive filters apply on top.
    pub fn restrict(&mut self, groups: Vec<bool>, events: Vec<bool>) {
        self.chosen_groups = Some(groups);
        self.chosen_events = Some(events);
        self.apply_filter();
    }

    /// Number of rows of the event list.
    pub fn event_count(&self) -> usize {
        match &self.events {
            Some(v) => v.len(),
            None => self.idx.events.len(),
        }
    }

    /// Seq of row `row` of the event list.
    pub fn event_at(&self, row: usize) -> Option<u64> {
        match &self.events {
            Some(v) => v.get(row).map(|&s| u64::from(s)),
            None => (row < self.idx.events.len()).then_some(row as u64),
        }
    }

    /// The selected group (index into `idx.stitched.groups`).
    pub fn selected_group(&self) -> Option<usize> {
        self.groups.get(self.groups_at.sel).map(|&g| g as usize)
    }

    /// The group of event `seq`, if it is in one.
    pub fn group_of(&self, seq: u64) -> Option<usize> {
        self.group_of_event
            .get(seq as usize)
            .filter(|&&g| g != NO_GROUP)
            .map(|&g| g as usize)
    }

    pub(crate) fn comm_of(&self, pid: i32) -> &str {
        self.idx.comms.get(pid)
    }

    /// Whether task `pid` passes the pid and comm filters.
    fn task_matches(&self, pid: i32) -> bool {
        self.filter.pid.is_none_or(|p| p == pid)
            && self
                .filter
                .comm
                .as_ref()
                .is_none_or(|c| c.matches(self.comm_of(pid)))
    }

    /// Whether an event of format `id` passes the event name filter.
    fn name_matches(&self, id: u16) -> bool {
        self.filter.event.as_ref().is_none_or(|n| {
            self.idx
                .formats
                .get(&id)
                .is_some_and(|f| f.name.contains(n.as_str()))
        })
    }

    fn event_matches(&self, seq: u64) -> bool {
        self.chosen_events
            .as_ref()
            .is_none_or(|c| c.get(seq as usize) == Some(&true))
            && self
                .idx
                .events
                .get(seq as usize)
                .is_some_and(|e| self.task_matches(e.pid) && self.name_matches(e.id))
    }

    fn group_matches(&self, g: usize, grp: &Group) -> bool {
        self.chosen_groups
            .as_ref()
            .is_none_or(|c| c.get(g) == Some(&true))
            && self.task_matches(grp.pid)
            && (self.filter.event.is_none()
                || self.idx.stitched.groups.events(grp).iter().any(|e| {
                    self.idx
                        .events
                        .get(e.seq as usize)
                        .is_some_and(|m| self.name_matches(m.id))
                }))
    }

    /// Recomputes the visible groups and events after a filter or sort
    /// change, keeping the selected group and event when still visible.
    pub fn apply_filter(&mut self) {
        let keep_g = self.selected_group();
        let keep_e = self.event_at(self.events_at.sel);
        let mut groups: SpillVec<u32> = (self.idx.stitched.groups.iter().enumerate())
            .filter(|(g, grp)| self.group_matches(*g, grp))
            .map(|(g, _)| g as u32)
            .collect();
        self.sort_groups(&mut groups);
        self.groups = groups;
        self.events = if self.filter.is_empty() && self.chosen_events.is_none() {
            None
        } else {
            Some(
                (0..self.idx.events.len() as u64)
                    .filter(|&s| self.event_matches(s))
                    .map(|s| s as u32)
                    .collect(),
            )
        };
        self.groups_at.sel = keep_g
            .and_then(|k| self.groups.iter().position(|&g| g as usize == k))
            .unwrap_or(0);
        self.events_at.sel = keep_e
            .and_then(|k| match &self.events {
                Some(v) => v.binary_search(&(k as u32)).ok(),
                None => Some(k as usize),
            })
            .unwrap_or(0);
        self.dscroll = 0;
        self.tree = None;
        // The filters may have read every event's entry, and the sort
        // every visible group: give the pages of the spilled index and
        // lists back (the screen reads a window of them again).
        self.idx.release();
        self.groups.release();
        if let Some(events) = &self.events {
            events.release();
        }
    }

    fn sort_groups(&self, groups: &mut [u32]) {
        let gs = &self.idx.stitched.groups;
        let key = self.sort;
        // The groups are stored in time order (ties by index): sorting
        // their indexes sorts by time without reading every group.
        if key == SortKey::Time {
            groups.sort_unstable();
            if self.sort_rev {
                groups.reverse();
            }
            return;
        }
        groups.sort_by(|&a, &b| {
            let (ga, gb) = (gs.get(a as usize), gs.get(b as usize));
            let o = match key {
                SortKey::Time => ga.first_ts.cmp(&gb.first_ts),
                SortKey::Pid => ga.pid.cmp(&gb.pid),
                SortKey::Comm => self.comm_of(ga.pid).cmp(self.comm_of(gb.pid)),
                SortKey::Cookie => ga.cookie.cmp(&gb.cookie),
                SortKey::Events => ga.events.len().cmp(&gb.events.len()),
                SortKey::Depth => self.depth[a as usize].cmp(&self.depth[b as usize]),
                SortKey::Status => ga.status.cmp(&gb.status),
            };
            o.then(ga.first_ts.cmp(&gb.first_ts)).then(a.cmp(&b))
        });
        // Read at random: give the pages of the spilled groups back.
        gs.release();
        if self.sort_rev {
            groups.reverse();
        }
    }

    fn list_rows(&self) -> usize {
        let v = &self.viewport;
        match (self.tab, self.focus) {
            (Tab::Groups, Focus::Detail) => v.detail_rows,
            (Tab::Groups, Focus::List) => v.group_rows,
            (Tab::Events, Focus::Detail) => v.event_detail_rows,
            (Tab::Events, Focus::List) => v.event_rows,
            (Tab::Tree, _) => v.tree_rows,
        }
        .max(1)
    }

    fn move_sel(&mut self, delta: isize) {
        let ecount = self.event_count();
        let (cursor, len) = match (self.tab, self.focus) {
            (Tab::Groups, Focus::Detail) => {
                let lines = self.detail_lines();
                let page = self.viewport.detail_rows.max(1);
                let max = lines.saturating_sub(page);
                self.dscroll = (self.dscroll as isize + delta).clamp(0, max as isize) as usize;
                return;
            }
            (Tab::Events, Focus::Detail) => {
                let lines = self.event_detail_lines();
                let page = self.viewport.event_detail_rows.max(1);
                let max = lines.saturating_sub(page);
                self.edscroll = (self.edscroll as isize + delta).clamp(0, max as isize) as usize;
                return;
            }
            (Tab::Groups, Focus::List) => (&mut self.groups_at, self.groups.len()),
            (Tab::Events, Focus::List) => (&mut self.events_at, ecount),
            (Tab::Tree, _) => {
                let n = self.tree.as_ref().map_or(0, |t| t.rows.len());
                (&mut self.tree_at, n)
            }
        };
        cursor.step(delta, len);
        if len == 0 {
            return;
        }
        match self.tab {
            Tab::Groups => self.dscroll = 0,
            Tab::Events => self.edscroll = 0,
            Tab::Tree => {}
        }
    }

    /// Number of lines of the detail pane for the cached detail.
    pub fn detail_lines(&self) -> usize {
        self.detail
            .as_ref()
            .map(|d| lines::group(&d.detail, self.show_internal).len())
            .unwrap_or(0)
    }

    /// Number of lines of the event detail pane.
    pub fn event_detail_lines(&self) -> usize {
        self.edetail
            .as_ref()
            .map(|d| lines::event(&self.idx, d, self.show_internal).len())
            .unwrap_or(0)
    }

    /// Records what a draw showed (the renderer returns it); when the
    /// panes changed size, refreshes the caches for the new rows and
    /// returns true: draw again.
    pub fn drawn(&mut self, viewport: Viewport, src: &mut dyn Source) -> bool {
        if viewport == self.viewport {
            return false;
        }
        self.viewport = viewport;
        self.refresh(src);
        true
    }

    /// Applies one message.
    pub fn update(&mut self, msg: Msg, src: &mut dyn Source) {
        // Any key stops a search under way; Esc does nothing else.
        if !matches!(msg, Msg::Resize(..)) && self.stop_search() && msg == Msg::Back {
            self.refresh(src);
            return;
        }
        if self.prompt.is_some() {
            self.update_prompt(msg, src);
            self.refresh(src);
            return;
        }
        if self.show_help && !matches!(msg, Msg::Resize(..) | Msg::Quit) {
            // Any key closes the help.
            self.show_help = false;
            self.refresh(src);
            return;
        }
        let rows = self.list_rows() as isize;
        match msg {
            Msg::Up(n) => self.move_sel(-(n as isize)),
            Msg::Down(n) => self.move_sel(n as isize),
            Msg::PageUp => self.move_sel(-rows),
            Msg::PageDown => self.move_sel(rows),
            Msg::HalfUp => self.move_sel(-(rows / 2).max(1)),
            Msg::HalfDown => self.move_sel((rows / 2).max(1)),
            Msg::Top => self.move_sel(isize::MIN / 2),
            Msg::Bottom => self.move_sel(isize::MAX / 2),
            Msg::NextTab => self.show_tab(self.tab.next()),
            Msg::ShowTab(t) => self.show_tab(t),
            Msg::FocusDetail => match self.tab {
                Tab::Groups => self.focus = Focus::Detail,
                Tab::Events => {
                    if self.selected_is_stack() {
                        self.focus = Focus::Detail;
                    }
                }
                Tab::Tree => self.tree_expand(true),
            },
            Msg::FocusList => match self.tab {
                Tab::Tree => self.tree_expand(false),
                _ => self.focus = Focus::List,
            },
            Msg::Enter => match (self.tab, self.focus) {
                (Tab::Groups, Focus::List) => self.focus = Focus::Detail,
                (Tab::Groups, Focus::Detail) => self.focus = Focus::List,
                (Tab::Events, Focus::List) if self.selected_is_stack() => {
                    self.focus = Focus::Detail;
                    self.edscroll = 0;
                }
                (Tab::Events, _) => self.jump_to_group(),
                (Tab::Tree, _) => self.tree_toggle(),
            },
            Msg::Back => {
                if self.focus == Focus::Detail {
                    self.focus = Focus::List;
                } else {
                    self.message.clear();
                }
            }
            Msg::NextSort => {
                self.sort = self.sort.next();
                self.resort();
            }
            Msg::ReverseSort => {
                self.sort_rev = !self.sort_rev;
                self.resort();
            }
            Msg::ToggleHelp => self.show_help = !self.show_help,
            Msg::StartPrompt(p) => self.start_prompt(p),
            Msg::SearchNext => self.search_step(true, src),
            Msg::SearchPrev => self.search_step(false, src),
            Msg::ClearFilters => {
                self.filter = Filter::default();
                self.apply_filter();
                self.message = "filters cleared".into();
            }
            Msg::ToggleInternal => self.toggle_internal(),
            Msg::ToggleDirection => self.toggle_direction(),
            Msg::ExpandAll => {
                if let Some(t) = &mut self.tree {
                    if let Some(r) = t.rows.get(self.tree_at.sel) {
                        t.expand_all(r.node);
                    }
                }
            }
            Msg::Click(x, y) => self.click(x, y),
            Msg::Resize(w, h) => self.size = (w, h),
            Msg::Quit => self.quit = true,
            Msg::Char(_) | Msg::Backspace | Msg::Submit | Msg::Cancel => {}
        }
        self.refresh(src);
    }

    /// A message while the prompt is open: it edits the prompt's text.
    fn update_prompt(&mut self, msg: Msg, src: &mut dyn Source) {
        let Some(PromptState { kind, text }) = &mut self.prompt else {
            return;
        };
        let kind = *kind;
        match msg {
            Msg::Char(c) => text.push(c),
            Msg::Backspace => {
                text.pop();
            }
            Msg::Cancel | Msg::Back => self.prompt = None,
            Msg::Submit => {
                let text = std::mem::take(text);
                self.prompt = None;
                self.submit(kind, text.trim().to_string(), src);
            }
            Msg::Resize(w, h) => self.size = (w, h),
            Msg::Quit => self.quit = true,
            _ => {}
        }
    }

    /// Sorts the visible groups by the current key, keeping the selection.
    fn resort(&mut self) {
        let keep = self.selected_group();
        let mut g = std::mem::take(&mut self.groups);
        self.sort_groups(&mut g);
        self.groups = g;
        self.groups_at.sel = keep
            .and_then(|k| self.groups.iter().position(|&g| g as usize == k))
            .unwrap_or(0);
        self.message = format!(
            "sorted by {}{}",
            self.sort.name(),
            if self.sort_rev { " (descending)" } else { "" }
        );
    }

    /// Opens prompt `p`, filled with the filter it edits.
    fn start_prompt(&mut self, p: Prompt) {
        let init = match p {
            Prompt::Search => String::new(),
            Prompt::Pid => self.filter.pid.map(|p| p.to_string()).unwrap_or_default(),
            Prompt::Comm => self
                .filter
                .comm
                .as_ref()
                .map(TextMatch::prompt_text)
                .unwrap_or_default(),
            Prompt::Event => self.filter.event.clone().unwrap_or_default(),
        };
        self.prompt = Some(PromptState {
            kind: p,
            text: init,
        });
    }

    fn toggle_internal(&mut self) {
        self.show_internal = !self.show_internal;
        self.tree = None;
        self.dscroll = 0;
        self.edscroll = 0;
        let shown = if self.show_internal {
            "shown"
        } else {
            "hidden"
        };
        self.message = format!("tracing-internal kernel frames {shown}");
    }

    fn toggle_direction(&mut self) {
        self.bottom_up = !self.bottom_up;
        self.tree = None;
        self.tree_at = ListCursor::default();
        let way = if self.bottom_up {
            "bottom-up"
        } else {
            "top-down"
        };
        self.message = format!("call tree {way}");
    }

    fn click(&mut self, x: u16, y: u16) {
        let l = self.viewport;
        let inside = |r: Rect| x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height;
        // Data rows start below the top border and the column header.
        let row_in = |r: Rect, rows: usize| {
            let first = r.y + 2;
            (y >= first && ((y - first) as usize) < rows).then(|| (y - first) as usize)
        };
        match self.tab {
            Tab::Groups if inside(l.groups) => {
                self.focus = Focus::List;
                let len = self.groups.len();
                if let Some(i) =
                    row_in(l.groups, l.group_rows).and_then(|r| self.groups_at.row_at(r, len))
                {
                    self.groups_at.sel = i;
                    self.dscroll = 0;
                }
            }
            Tab::Groups if inside(l.detail) => self.focus = Focus::Detail,
            Tab::Events if inside(l.events) => {
                let len = self.event_count();
                if let Some(i) =
                    row_in(l.events, l.event_rows).and_then(|r| self.events_at.row_at(r, len))
                {
                    self.events_at.sel = i;
                }
            }
            _ => {}
        }
    }

    fn submit(&mut self, kind: Prompt, text: String, src: &mut dyn Source) {
        match kind {
            Prompt::Search => {
                if text.is_empty() {
                    self.search = None;
                    self.message.clear();
                } else {
                    self.search = Some(text);
                    self.search_step(true, src);
                }
            }
            Prompt::Pid => {
                if text.is_empty() {
                    self.filter.pid = None;
                } else {
                    match text.parse::<i32>() {
                        Ok(p) => self.filter.pid = Some(p),
                        Err(_) => {
                            self.message = format!("not a pid: {text}");
                            return;
                        }
                    }
                }
                self.after_filter();
            }
            Prompt::Comm => {
                self.filter.comm = TextMatch::parse(&text);
                self.after_filter();
            }
            Prompt::Event => {
                self.filter.event = (!text.is_empty()).then_some(text);
                self.after_filter();
            }
        }
    }

    fn after_filter(&mut self) {
        self.apply_filter();
        self.message = if self.filter.is_empty() {
            "filters cleared".into()
        } else {
            format!(
                "filter {}: {} groups, {} events",
                self.filter.describe(),
                self.groups.len(),
                self.event_count()
            )
        };
    }

    fn jump_to_group(&mut self) {
        let Some(seq) = self.event_at(self.events_at.sel) else {
            return;
        };
        match self.group_of(seq) {
            Some(g) => match self.groups.iter().position(|&x| x as usize == g) {
                Some(row) => {
                    self.groups_at.sel = row;
                    self.show_tab(Tab::Groups);
                    self.dscroll = 0;
                }
                None => self.message = "its group is hidden by the filter".into(),
            },
            None => self.message = "this event is in no group".into(),
        }
    }

    /// Keeps the selections visible and fills the caches the next render
    /// needs from `src`.
    pub fn refresh(&mut self, src: &mut dyn Source) {
        let v = self.viewport;
        let (gr, er) = (v.group_rows.max(1), v.event_rows.max(1));
        self.groups_at.fit(self.groups.len(), gr);
        self.events_at.fit(self.event_count(), er);
        if self.tab == Tab::Tree {
            if self.tree.is_none() {
                let mut tree = self.build_tree(src);
                if let Some(e) = self.expansion.take() {
                    tree.expand(&e);
                }
                self.tree = Some(tree);
            }
            let n = self.tree.as_ref().map_or(0, |t| t.rows.len());
            self.tree_at.fit(n, v.tree_rows);
        }
        // Detail of the selected group.
        match self.selected_group() {
            Some(g) if self.detail.as_ref().map(|d| d.group) != Some(g) => {
                let mut detail = src.group_detail(&self.idx, g);
                // A group shows the events the selection keeps, as in
                // `report --stacks`.
                if let Some(c) = &self.chosen_events {
                    detail
                        .events
                        .retain(|e| c.get(e.seq as usize) == Some(&true));
                }
                self.detail = Some(SelectedGroup { group: g, detail });
            }
            None => self.detail = None,
            _ => {}
        }
        // Detail of the selected event (events tab).
        let esel = self.event_at(self.events_at.sel);
        if self.tab != Tab::Events || esel.is_none() {
            self.edetail = None;
        } else if self.edetail.as_ref().map(|d| d.seq) != esel {
            let seq = esel.unwrap_or(0);
            self.edetail = Some(self.event_detail(seq, src));
            self.edscroll = 0;
            if !self.selected_is_stack() {
                self.focus = Focus::List;
            }
        }
        // Field text of the events on screen (only in the events tab).
        if self.tab == Tab::Events {
            let wanted: Vec<u64> = (self.events_at.off..self.events_at.off + er)
                .filter_map(|r| self.event_at(r))
                .collect();
            self.event_text.retain(|k, _| wanted.contains(k));
            for s in wanted {
                if !self.event_text.contains_key(&s) {
                    let t = src.event_text(&self.idx, s);
                    self.event_text.insert(s, t);
                }
            }
        }
    }
}

impl App {
    /// Carries the user's view (tab, focus, sort, filters, search, prompt,
    /// help, message unless this state has its own, selections, the
    /// expanded call-tree nodes) over from
    /// `old`, the state of a previous snapshot of the same, growing trace
    /// (or of its first events only). The selected group is found
    /// again by (pid, cookie, first timestamp); a selection on the last
    /// event stays on the last event (follows the tail).
    pub fn carry_over(&mut self, old: &App) {
        self.tab = old.tab;
        self.focus = old.focus;
        self.show_internal = old.show_internal;
        self.bottom_up = old.bottom_up;
        self.expansion = old
            .tree
            .as_ref()
            .map(CallTree::expansion)
            .or_else(|| old.expansion.clone());
        self.tree_at.sel = old.tree_at.sel;
        self.tree_at.off = old.tree_at.off;
        self.sort = old.sort;
        self.sort_rev = old.sort_rev;
        self.filter = old.filter.clone();
        self.search = old.search.clone();
        self.prompt = old.prompt.clone();
        self.show_help = old.show_help;
        // What the new state says of itself (its data cut short) wins.
        if self.message.is_empty() {
            self.message = if old.searching.is_some() {
                // Its rows are not the old ones.
                "search stopped: the trace was indexed again".into()
            } else {
                old.message.clone()
            };
        }
        self.apply_filter();
        let key = old.selected_group().map(|g| {
            let g = old.idx.stitched.groups.get(g);
            (g.pid, g.cookie, g.first_ts)
        });
        self.groups_at.sel = key
            .and_then(|k| {
                self.groups.iter().position(|&g| {
                    let g = self.idx.stitched.groups.get(g as usize);
                    (g.pid, g.cookie, g.first_ts) == k
                })
            })
            .unwrap_or(old.groups_at.sel);
        self.groups_at.off = old.groups_at.off;
        self.viewport = old.viewport;
        let at_tail = old.events_at.sel + 1 >= old.event_count() && old.event_count() > 0;
        self.events_at.sel = if at_tail {
            self.event_count().saturating_sub(1)
        } else {
            old.events_at.sel
        };
        self.events_at.off = old.events_at.off;
        self.dscroll = if self.selected_group() == old.selected_group() {
            old.dscroll
        } else {
            0
        };
    }
}
