//! `tracer-cli show`: print the kernel's own text of the trace (`trace`,
//! `trace_pipe` or `snapshot`), or one setting.

use anyhow::{Context, Result};
use std::io::Write;
use ustack_tracefs::Tracefs;

/// Arguments of `tracer-cli show`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Use this instance.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instance: Option<String>,
    /// Read `trace_pipe` (consuming, waits for data) instead of `trace`.
    #[arg(short = 'p')]
    pub pipe: bool,
    /// Read the `snapshot` file instead of `trace`.
    #[arg(short = 's')]
    pub snapshot: bool,
    /// Only this CPU (per_cpu/cpuN/...).
    #[arg(short = 'c', value_name = "CPU")]
    pub cpu: Option<u32>,
    /// Print the path of the file first.
    #[arg(short = 'f')]
    pub full_path: bool,
    /// Show whether tracing is on.
    #[arg(long = "tracing_on")]
    pub tracing_on: bool,
    /// Show the current tracer.
    #[arg(long = "current_tracer")]
    pub current_tracer: bool,
    /// Show the per-CPU buffer size.
    #[arg(long = "buffer_size")]
    pub buffer_size: bool,
    /// Show the total buffer size.
    #[arg(long = "buffer_total_size")]
    pub buffer_total_size: bool,
    /// Show the CPU mask.
    #[arg(long = "cpumask")]
    pub cpumask: bool,
}

/// Runs `tracer-cli show`.
pub fn run(args: Args) -> Result<()> {
    let fs = Tracefs::open()?;
    let inst = fs.instance_or_top(args.instance.as_deref())?;
    let setting = [
        (args.tracing_on, "tracing_on"),
        (args.current_tracer, "current_tracer"),
        (args.buffer_size, "buffer_size_kb"),
        (args.buffer_total_size, "buffer_total_size_kb"),
        (args.cpumask, "tracing_cpumask"),
    ];
    let base = if args.pipe {
        "trace_pipe"
    } else if args.snapshot {
        "snapshot"
    } else {
        "trace"
    };
    let rel = match setting.iter().find(|(on, _)| *on) {
        Some((_, file)) => file.to_string(),
        None => match args.cpu {
            Some(c) => format!("per_cpu/cpu{c}/{base}"),
            None => base.to_string(),
        },
    };
    let path = inst.path(&rel);
    let mut out = std::io::stdout().lock();
    if args.full_path {
        writeln!(out, "{}", path.display())?;
    }
    let mut f = inst.open_read(&rel)?;
    match std::io::copy(&mut f, &mut out) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", inst.shown(&rel))),
    }
}
