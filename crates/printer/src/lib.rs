//! Everything ustack prints about a trace: the output side of `report` and
//! of the TUI's text.
//!
//! * [`tracecmd::Printer`] writes one event line exactly as `trace-cmd
//!   report` does, and [`report::report`] the whole report with trace-cmd's
//!   filters and forms (`--stat`, `--uname`, `--version`);
//! * [`stacks`] writes the stitched views (text blocks, JSON through serde,
//!   folded stacks for flame graphs, and [`pprof`] profiles);
//! * `plain` writes the info of events whose print fmt is plain integer
//!   conversions (most system calls) as libtraceevent would, faster;
//! * [`select`] chooses the groups and events the stitched views show;
//! * [`profile`] is `report --profile` (times and call trees per task);
//! * [`group`] is the text of one stitched group and [`frame`] the one
//!   place a stack frame is spelt, for each kind of output;
//! * [`text`] gives the stitched views their event text (libtraceevent's,
//!   as `trace-cmd report` prints it, else the fields) and `-F` filters.
//!
//! It writes to any `io::Write` and prints nothing else: what to do with a
//! closed pipe or a warning is the program's choice.

pub mod event_filter;
pub mod frame;
pub mod group;
pub mod listings;
mod plain;
pub mod pprof;
pub mod profile;
pub mod report;
pub mod select;
pub mod stacks;
pub mod stream;
pub mod text;
pub mod tracecmd;
pub mod verbose;
pub mod wakeup;
