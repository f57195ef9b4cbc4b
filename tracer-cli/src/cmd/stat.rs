//! `tracer-cli stat`: the state of the tracing system (one instance, or the
//! top one and a list of instances).

use anyhow::Result;
use std::io::Write;
use ustack_tracefs::{Instance, Tracefs};

/// Arguments of `tracer-cli stat`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Show this instance instead of the top one.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instance: Option<String>,
}

fn show(fs: &Tracefs, inst: &Instance, out: &mut dyn Write) -> Result<()> {
    let tracer = inst.current_tracer()?;
    if tracer != "nop" {
        writeln!(out, "Tracer: {tracer}\n")?;
    }
    let events = inst.enabled_events()?;
    if !events.is_empty() {
        writeln!(out, "Events:")?;
        let mut last = "";
        for e in &events {
            if e.system != last {
                writeln!(out, "  {}:", e.system)?;
                last = &e.system;
            }
            match inst.event_filter(e).unwrap_or(None) {
                Some(f) => writeln!(out, "    {}   filter: {f}", e.name)?,
                None => writeln!(out, "    {}", e.name)?,
            }
        }
        writeln!(out)?;
    }
    let pids = inst.event_pids().unwrap_or_default();
    if !pids.is_empty() {
        let p: Vec<String> = pids.iter().map(u32::to_string).collect();
        writeln!(out, "Event pid filter: {}\n", p.join(" "))?;
    }
    let set: Vec<&str> = [
        "stacktrace",
        "userstacktrace",
        "userstacktrace_delay",
        "event-fork",
        "overwrite",
    ]
    .into_iter()
    .filter(|o| inst.has_option(o))
    .filter(|o| inst.option(o).unwrap_or(false))
    .collect();
    writeln!(
        out,
        "Options set: {}\n",
        if set.is_empty() {
            "(none of the stack options)".into()
        } else {
            set.join(" ")
        }
    )?;
    match inst.buffer_size_kb()? {
        Some(kb) => writeln!(out, "Buffer size in kilobytes (per cpu):\n   {kb}\n")?,
        None => {
            writeln!(out, "Buffer size in kilobytes (per cpu):")?;
            for cpu in inst.cpus()? {
                writeln!(out, "   CPU{cpu}: {}", inst.cpu_buffer_size_kb(cpu)?)?;
            }
            writeln!(out)?;
        }
    }
    writeln!(out, "Trace clock: {}\n", inst.trace_clock()?.0)?;
    writeln!(
        out,
        "Tracing is {}\n",
        if inst.tracing_on()? { "on" } else { "disabled" }
    )?;
    writeln!(out, "Per CPU buffer:")?;
    for cpu in inst.cpus()? {
        let s = inst.cpu_stats(cpu)?;
        writeln!(
            out,
            "   CPU{cpu}: entries {}  read {}  overrun {}  dropped {}  bytes {}",
            s.entries.unwrap_or(0),
            s.read_events.unwrap_or(0),
            s.overrun.unwrap_or(0),
            s.dropped_events.unwrap_or(0),
            s.bytes.unwrap_or(0)
        )?;
    }
    if inst.name().is_none() {
        let names = fs.instances()?;
        if !names.is_empty() {
            writeln!(out, "\nInstances:")?;
            for n in names {
                writeln!(out, "   {n}")?;
            }
        }
    }
    Ok(())
}

/// Runs `tracer-cli stat`.
pub fn run(args: Args) -> Result<()> {
    let fs = Tracefs::open()?;
    let inst = fs.instance_or_top(args.instance.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    show(&fs, &inst, &mut out)?;
    out.flush()?;
    Ok(())
}
