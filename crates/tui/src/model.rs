//! The plain-data types of the TUI state and the messages that update it.

use ratatui::layout::Rect;
use ustack_stitch::view::GroupDetail;
use ustack_symbolize::Frame;

/// Which list is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// Groups, with the detail pane of the selected one.
    Groups,
    /// Every event in time order.
    Events,
    /// The stacks of the visible groups merged into a call tree.
    Tree,
}

impl Tab {
    /// The tab after this one.
    pub fn next(self) -> Tab {
        match self {
            Tab::Groups => Tab::Events,
            Tab::Events => Tab::Tree,
            Tab::Tree => Tab::Groups,
        }
    }
}

/// Which pane of the groups or events tab gets the movement keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The list.
    List,
    /// The detail pane (scrolls): the selected group's, or the selected
    /// event's frames.
    Detail,
}

/// Sort order of the group list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// First timestamp.
    Time,
    /// Pid.
    Pid,
    /// Command name.
    Comm,
    /// Cookie.
    Cookie,
    /// Number of events.
    Events,
    /// User stack depth.
    Depth,
    /// Status.
    Status,
}

impl SortKey {
    /// The next key in column order.
    pub fn next(self) -> SortKey {
        match self {
            SortKey::Time => SortKey::Pid,
            SortKey::Pid => SortKey::Comm,
            SortKey::Comm => SortKey::Cookie,
            SortKey::Cookie => SortKey::Events,
            SortKey::Events => SortKey::Depth,
            SortKey::Depth => SortKey::Status,
            SortKey::Status => SortKey::Time,
        }
    }

    /// Column name.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Time => "time",
            SortKey::Pid => "pid",
            SortKey::Comm => "comm",
            SortKey::Cookie => "cookie",
            SortKey::Events => "events",
            SortKey::Depth => "depth",
            SortKey::Status => "status",
        }
    }
}

/// What a text prompt is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    /// `/`: search.
    Search,
    /// `p`: filter by pid.
    Pid,
    /// `c`: filter by command name (exact; `~text`: contains).
    Comm,
    /// `e`: filter by event name (substring).
    Event,
}

impl Prompt {
    /// Prompt text.
    pub fn label(self) -> &'static str {
        match self {
            Prompt::Search => "/",
            Prompt::Pid => "filter pid: ",
            Prompt::Comm => "filter comm (~ for substring): ",
            Prompt::Event => "filter event: ",
        }
    }
}

/// The selected event of the events tab, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventDetail {
    /// Its seq.
    pub seq: u64,
    /// Event name.
    pub name: String,
    /// All its fields.
    pub info: String,
    /// Its kernel stack, if a `kernel_stack` followed it.
    pub kernel: Vec<Frame>,
    /// The user stack it carries (a user stack record), symbolized.
    pub user: Vec<Frame>,
    /// The group it belongs to (as an event or as its user stack).
    pub group: Option<usize>,
    /// Events dropped just before it on its CPU.
    pub dropped_before: DroppedBefore,
}

/// Events dropped on a CPU just before an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DroppedBefore {
    /// None.
    Nothing,
    /// This many.
    Count(u64),
    /// Some, the kernel did not say how many.
    Unknown,
}

/// Dropped events of one CPU, for the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuDrops {
    /// The CPU.
    pub cpu: u32,
    /// Events known to be dropped.
    pub count: u64,
    /// Some loss of unknown size was seen too (`count` is a lower bound).
    pub unknown: bool,
}

/// Number of groups of each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// Complete.
    pub complete: usize,
    /// Pending at the end of the trace.
    pub pending: usize,
    /// Stack lost.
    pub lost: usize,
    /// Stack without its events.
    pub orphan: usize,
}

/// An open text prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptState {
    /// What it is for.
    pub kind: Prompt,
    /// The text typed so far.
    pub text: String,
}

/// The resolved detail of the selected group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectedGroup {
    /// Index into `idx.stitched.groups`.
    pub group: usize,
    /// Its detail.
    pub detail: GroupDetail,
}

/// What the last draw showed: where each pane is and how many rows of
/// content it holds. Recorded by [`crate::app::App::drawn`]; all zero before the first
/// draw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Viewport {
    /// Group list block (groups tab).
    pub groups: Rect,
    /// Data rows of the group list.
    pub group_rows: usize,
    /// Detail block (groups tab).
    pub detail: Rect,
    /// Text rows of the detail pane.
    pub detail_rows: usize,
    /// Event list block (events tab).
    pub events: Rect,
    /// Data rows of the event list.
    pub event_rows: usize,
    /// Event detail block (events tab).
    pub event_detail: Rect,
    /// Text rows of the event detail block.
    pub event_detail_rows: usize,
    /// Call tree block.
    pub tree: Rect,
    /// Data rows of the call tree.
    pub tree_rows: usize,
}

/// One input, already decoded from keys, mouse or terminal events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// Move the selection (or scroll the detail pane) up.
    Up(usize),
    /// Move down.
    Down(usize),
    /// One page up.
    PageUp,
    /// One page down.
    PageDown,
    /// Half a page up.
    HalfUp,
    /// Half a page down.
    HalfDown,
    /// First row.
    Top,
    /// Last row.
    Bottom,
    /// Switch between the groups and events tabs.
    NextTab,
    /// Show a tab.
    ShowTab(Tab),
    /// Move focus to the detail pane (groups tab).
    FocusDetail,
    /// Move focus to the list.
    FocusList,
    /// Enter: open the detail pane, or jump from an event to its group.
    Enter,
    /// Esc: close help, leave the detail pane, clear the message.
    Back,
    /// Sort by the next column.
    NextSort,
    /// Reverse the sort order.
    ReverseSort,
    /// Show or hide help.
    ToggleHelp,
    /// Open a prompt.
    StartPrompt(Prompt),
    /// A character typed into the prompt.
    Char(char),
    /// Backspace in the prompt.
    Backspace,
    /// Enter in the prompt.
    Submit,
    /// Esc in the prompt.
    Cancel,
    /// Next search match.
    SearchNext,
    /// Previous search match.
    SearchPrev,
    /// Clear every filter.
    ClearFilters,
    /// Show or hide tracing-internal kernel frames.
    ToggleInternal,
    /// Call tree: switch between top-down and bottom-up.
    ToggleDirection,
    /// Call tree: expand the selected node and everything below it.
    ExpandAll,
    /// Left click at (column, row): selects the row under it, or focuses
    /// the pane.
    Click(u16, u16),
    /// The terminal was resized.
    Resize(u16, u16),
    /// Quit.
    Quit,
}
