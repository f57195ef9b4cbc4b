//! `tracer-cli stop`: turn `tracing_on` off, keeping the buffers and every
//! setting (events stay enabled; use `reset` to turn everything off).

use super::opts::InstanceSelection;
use anyhow::Result;
use ustack_tracefs::Tracefs;

/// Arguments of `tracer-cli stop`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The instances to stop.
    #[command(flatten)]
    pub select: InstanceSelection,
}

/// Runs `tracer-cli stop`.
pub fn run(args: Args) -> Result<()> {
    let fs = Tracefs::open()?;
    for inst in args.select.select(&fs)? {
        inst.set_tracing_on(false)?;
    }
    Ok(())
}
