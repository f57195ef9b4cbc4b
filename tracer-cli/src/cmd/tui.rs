//! `tracer-cli tui`: browse a trace.dat file interactively, events grouped
//! by cookie with their symbolized stacks.
//!
//! When stdout is not a terminal, the same data is printed as
//! `report --stacks` text instead, so scripts and pipes still get it.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;

/// Arguments of `tracer-cli tui`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Input file.
    #[arg(short = 'i', long = "input", default_value = "trace.dat")]
    pub input: PathBuf,
    /// Buffer (instance) to show; the top buffer by default.
    #[arg(short = 'B', long = "buffer", value_name = "INSTANCE")]
    pub buffer: Option<String>,
    /// Also symbolize through /proc/PID/maps of running processes (for
    /// traces taken on this machine without saved process maps).
    #[arg(long = "proc-maps")]
    pub proc_maps: bool,
}

/// Runs `tracer-cli tui`.
pub fn run(args: Args) -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        let f = tracedata::TraceFile::open(&args.input)?;
        let out = super::stacks::render_file(&f, super::stacks::Mode::Text)?;
        print!("{out}");
        return Ok(());
    }
    tui::run(&tui::Options {
        input: args.input,
        buffer: args.buffer,
        live_maps: args.proc_maps,
    })?;
    Ok(())
}
