//! One module per subcommand.
pub mod record;
pub mod start;
pub mod stop;
pub mod extract;
pub mod reset;
pub mod show;
pub mod list;
pub mod stacks;
pub mod stat;
pub mod report;
pub mod tui;
