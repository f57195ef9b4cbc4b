//! `tracer-cli start`: set tracing up the way `record` does and leave it
//! running, without reading anything (read later with `extract` or `show`).

use super::opts::{TraceOpts, Unsupported};
use anyhow::Result;
use clap::ArgMatches;
use ustack_record::{setup, HeldChild};

/// Arguments of `tracer-cli start`.
#[derive(clap::Args, Debug)]
#[command(
    trailing_var_arg = true,
    after_help = "Examples:
  tracer-cli start -B mine -e sched:sched_switch -b 4096
  tracer-cli stop -B mine && tracer-cli extract -B mine -o sched.dat
  tracer-cli reset -B mine -d"
)]
pub struct Args {
    #[command(flatten)]
    pub trace: TraceOpts,
    /// trace-cmd options refused by name.
    #[command(flatten)]
    pub unsupported: Unsupported,
    /// Return right after starting the command instead of waiting for it.
    #[arg(long = "fork")]
    pub fork: bool,
    /// Command to run once tracing is on (start waits for it unless --fork).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `tracer-cli start`; `m` are its matches (for `-e`/`-f` order).
pub fn run(args: Args, m: &ArgMatches) -> Result<()> {
    args.unsupported.check("start")?;
    let config = args.trace.config(m)?;
    let mut child = if args.command.is_empty() {
        None
    } else {
        Some(HeldChild::spawn(&args.command)?)
    };
    let mut session = setup(&config, child.as_ref().map(|c| c.pid.as_raw() as u32))?;
    super::opts::note_leftover(session.leftover_restored);
    session.guard.on_drop_error(crate::signals::report);
    session.inst.set_tracing_on(true)?;
    // A command that cannot run fails the start: the guard, still armed,
    // puts every setting back as it is dropped.
    if let Some(c) = child.as_mut() {
        c.release()?;
    }
    // start leaves its settings (and a created instance) in place.
    session.guard.forget();
    if let Some(c) = child.as_ref().filter(|_| !args.fork) {
        nix::sys::wait::waitpid(c.pid, None)?;
    }
    Ok(())
}
