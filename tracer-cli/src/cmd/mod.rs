//! One module per subcommand.
pub mod bre;
pub mod docs;
pub mod extract;
pub mod list;
pub mod opts;
pub mod record;
pub mod report;
pub mod report_forms;
pub mod reset;
pub mod select;
pub mod show;
pub mod start;
pub mod stat;
pub mod stop;
pub mod tui;
