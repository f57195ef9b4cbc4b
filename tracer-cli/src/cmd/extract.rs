//! `tracer-cli extract`: write what is in the ring buffers now into a
//! trace.dat file (typically after `start` and `stop`). Tracing settings are
//! not touched; the buffers are consumed.
//!
//! As in trace-cmd, the top instance is extracted by default; `-B NAME`
//! (repeatable) and `-a` (all instances) select instances instead, and `-t`
//! adds the top instance back.
//!
//! The processes with user stacks in the extracted data that are still
//! alive have their maps read from `/proc` (PROCMAPS, valid for the whole
//! trace), with the threads of the kernel's `saved_tgids`, by
//! `ustack_record::Extraction`, as a recording does at its end; nothing
//! more can be known after the fact on a stock kernel.

use super::opts::{InstanceSelection, OutputOpts};
use anyhow::Result;
use ustack_record::Extraction;
use ustack_tracedata::writer::write_trace_dat;
use ustack_tracefs::Tracefs;

/// Arguments of `tracer-cli extract`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  tracer-cli extract -o trace.dat
  tracer-cli extract -B mine -t -o both.dat   # instance mine and the top one")]
pub struct Args {
    /// The instances to extract.
    #[command(flatten)]
    pub select: InstanceSelection,
    /// Where and how to write.
    #[command(flatten)]
    pub out: OutputOpts,
    /// Print nothing on success.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Runs `tracer-cli extract`.
pub fn run(args: Args) -> Result<()> {
    let wopts = args.out.write_options()?;
    ustack_record::check_output(&args.out.output)?;
    let fs = Tracefs::open()?;
    let insts = args.select.select(&fs)?;
    let mut ex = Extraction::read(&fs, &insts, &args.out.output)?;
    let Some(first) = insts.first() else {
        anyhow::bail!("no instance to extract");
    };
    let meta = ex.meta(&fs, first)?;
    let summary = write_trace_dat(&args.out.output, &meta, ex.buffers(), &wopts)?;
    drop(ex);
    if !args.quiet {
        eprintln!(
            "tracer-cli: wrote {} ({} bytes, {} buffer(s))",
            args.out.output.display(),
            summary.file_size,
            insts.len()
        );
    }
    Ok(())
}
