//! `tracer-cli`: a trace-cmd style frontend for ftrace with deferred user
//! stack traces.
//!
//! The binary stays thin: argument parsing lives here, each subcommand lives
//! in its own module under [`cmd`], and the real work is done by the library
//! crates (`ustack-record`, `ustack-printer`, `ustack-tui`, ...).

// Output goes through `write!` so that a closed pipe is an error `main`
// can end quietly on, not a panic (see `epipe`).
#![warn(clippy::print_stdout)]

mod cmd;
mod epipe;
mod signals;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Command line of `tracer-cli`.
#[derive(Parser)]
#[command(after_help = "Examples:
  tracer-cli record -e syscalls -e sched:sched_switch -T --user-stacks sync -F -- ./myprog
  tracer-cli report                 # the same text as trace-cmd report
  tracer-cli report --stacks        # events grouped with their user stacks
  tracer-cli tui -i trace.dat

Man pages: tracer-cli man DIR; shell completions: tracer-cli completions SHELL.")]
#[command(
    name = "tracer-cli",
    version,
    about = "ftrace recorder and reporter with deferred user stacks"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Record a trace into a trace.dat file.
    Record(cmd::record::Args),
    /// Start tracing without recording (leave the data in the ring buffer).
    Start(cmd::start::Args),
    /// Stop tracing (turn `tracing_on` off) without clearing anything.
    Stop(cmd::stop::Args),
    /// Extract the current ring buffer contents into a trace.dat file.
    Extract(cmd::extract::Args),
    /// Disable all events and options and clear the buffers.
    Reset(cmd::reset::Args),
    /// Show the contents of the `trace` file.
    Show(cmd::show::Args),
    /// List events, options or tracers.
    List(cmd::list::Args),
    /// Show the state of the tracing system.
    Stat(cmd::stat::Args),
    /// Read a trace.dat file and print its events.
    Report(cmd::report::Args),
    /// Browse a trace.dat file interactively, grouped by cookie.
    Tui(cmd::tui::Args),
    /// Print a shell completion script.
    Completions(cmd::docs::CompletionsArgs),
    /// Write the man pages into a directory.
    Man(cmd::docs::ManArgs),
}

fn run(command: Command, sub: &clap::ArgMatches) -> anyhow::Result<()> {
    match command {
        Command::Record(a) => cmd::record::run(a, sub),
        Command::Start(a) => cmd::start::run(a, sub),
        Command::Stop(a) => cmd::stop::run(a),
        Command::Extract(a) => cmd::extract::run(a),
        Command::Reset(a) => cmd::reset::run(a),
        Command::Show(a) => cmd::show::run(a),
        Command::List(a) => cmd::list::run(a),
        Command::Stat(a) => cmd::stat::run(a),
        Command::Report(a) => cmd::report::run(a, sub),
        Command::Tui(a) => cmd::tui::run(a, sub),
        Command::Completions(a) => cmd::docs::completions(a),
        Command::Man(a) => cmd::docs::man(a),
    }
}

/// Keeps glibc's threshold for mapped allocations fixed. By default it
/// rises to the size of each mapped block freed, up to 32 MiB, so that
/// after the first large buffer (a decompressed kallsyms section, a page
/// index) later ones of that size come from the heap, which keeps their
/// pages after they are freed: peak memory grows by one large buffer for
/// nothing, and `report` would hold more than trace-cmd on small files.
fn fix_mmap_threshold() {
    #[cfg(target_env = "gnu")]
    {
        /// Allocations of this size and more get their own mapping, given
        /// back to the system when freed (glibc's default threshold).
        const MMAP_THRESHOLD: libc::c_int = 128 * 1024;
        // SAFETY: mallopt only changes allocator parameters; it is called
        // before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        }
    }
}

fn main() {
    fix_mmap_threshold();
    // The subcommand's matches stay available: they keep the order of the
    // options (which -f follows which -e).
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let sub = matches
        .subcommand()
        .map(|(_, m)| m.clone())
        .unwrap_or_default();
    match run(cli.command, &sub) {
        Ok(()) => {}
        // A reader that went away (`| head`) is not a failure.
        Err(err) if epipe::is_broken_pipe(&err) => std::process::exit(0),
        Err(err) => {
            // One line, whatever went wrong: the chain is joined with ": ".
            eprintln!("tracer-cli: {err:#}");
            std::process::exit(1);
        }
    }
}
