//! `tracer-cli stat`: the state of the tracing system (one instance, or the
//! top one and a list of instances).

use anyhow::Result;
use ustack_tracefs::{Instance, Tracefs};

/// Arguments of `tracer-cli stat`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Show this instance instead of the top one.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instance: Option<String>,
}

fn show(fs: &Tracefs, inst: &Instance) -> Result<()> {
    let tracer = inst.current_tracer()?;
    if tracer != "nop" {
        println!("Tracer: {tracer}\n");
    }
    let events = inst.enabled_events()?;
    if !events.is_empty() {
        println!("Events:");
        let mut last = "";
        for e in &events {
            if e.system != last {
                println!("  {}:", e.system);
                last = &e.system;
            }
            match inst.event_filter(e).unwrap_or(None) {
                Some(f) => println!("    {}   filter: {f}", e.name),
                None => println!("    {}", e.name),
            }
        }
        println!();
    }
    let pids = inst.event_pids().unwrap_or_default();
    if !pids.is_empty() {
        let p: Vec<String> = pids.iter().map(u32::to_string).collect();
        println!("Event pid filter: {}\n", p.join(" "));
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
    println!(
        "Options set: {}\n",
        if set.is_empty() {
            "(none of the stack options)".into()
        } else {
            set.join(" ")
        }
    );
    match inst.buffer_size_kb()? {
        Some(kb) => println!("Buffer size in kilobytes (per cpu):\n   {kb}\n"),
        None => {
            println!("Buffer size in kilobytes (per cpu):");
            for cpu in inst.cpus()? {
                println!("   CPU{cpu}: {}", inst.cpu_buffer_size_kb(cpu)?);
            }
            println!();
        }
    }
    println!("Trace clock: {}\n", inst.trace_clock()?.0);
    println!(
        "Tracing is {}\n",
        if inst.tracing_on()? { "on" } else { "disabled" }
    );
    println!("Per CPU buffer:");
    for cpu in inst.cpus()? {
        let s = inst.cpu_stats(cpu)?;
        println!(
            "   CPU{cpu}: entries {}  read {}  overrun {}  dropped {}  bytes {}",
            s.entries.unwrap_or(0),
            s.read_events.unwrap_or(0),
            s.overrun.unwrap_or(0),
            s.dropped_events.unwrap_or(0),
            s.bytes.unwrap_or(0)
        );
    }
    if inst.name().is_none() {
        let names = fs.instances()?;
        if !names.is_empty() {
            println!("\nInstances:");
            for n in names {
                println!("   {n}");
            }
        }
    }
    Ok(())
}

/// Runs `tracer-cli stat`.
pub fn run(args: Args) -> Result<()> {
    let fs = Tracefs::open()?;
    let inst = fs.instance_or_top(args.instance.as_deref())?;
    show(&fs, &inst)
}
