//! `tracer-cli list`: events (`-e [REGEX]`, with `-F` fields), options
//! (`-o`), tracers (`-t`), systems (`-s`) and clocks (`-C`). Without an
//! option, everything.

use anyhow::{anyhow, Result};
use regex::Regex;
use std::io::Write;
use ustack_tracefs::Tracefs;

/// Arguments of `tracer-cli list`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  tracer-cli list -e '^sched:'
  tracer-cli list -e sched:sched_switch -F
  tracer-cli list -o -B mine")]
pub struct Args {
    /// List events, optionally only those matching a regular expression
    /// (extended syntax, as trace-cmd's) against `system:event`.
    #[arg(short = 'e', value_name = "REGEX", num_args = 0..=1, default_missing_value = "")]
    pub events: Option<String>,
    /// With -e: show the fields of each event.
    #[arg(short = 'F')]
    pub fields: bool,
    /// With -F: also show the print fmt.
    #[arg(long = "full")]
    pub full: bool,
    /// With -e: show each event's filter.
    #[arg(short = 'l')]
    pub filters: bool,
    /// List the options (of the instance given with -B).
    #[arg(short = 'o')]
    pub options: bool,
    /// List the tracers.
    #[arg(short = 't', visible_short_alias = 'p')]
    pub tracers: bool,
    /// List the event systems.
    #[arg(short = 's')]
    pub systems: bool,
    /// List the trace clocks.
    #[arg(short = 'C')]
    pub clocks: bool,
    /// Instance for -o, -C and -l.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instance: Option<String>,
}

fn print_fields(out: &mut dyn Write, format: &str, full: bool) -> std::io::Result<()> {
    let mut in_fields = false;
    for line in format.lines() {
        if line.starts_with("format:") {
            in_fields = true;
            continue;
        }
        if line.starts_with("print fmt:") {
            if full {
                writeln!(out, "{line}")?;
            }
            break;
        }
        if in_fields && !line.trim().is_empty() {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// Runs `tracer-cli list`.
pub fn run(args: Args) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    list(&args, &mut out)?;
    out.flush()?;
    Ok(())
}

fn list(args: &Args, out: &mut dyn Write) -> Result<()> {
    let fs = Tracefs::open()?;
    let inst = fs.instance_or_top(args.instance.as_deref())?;
    let nothing =
        args.events.is_none() && !args.options && !args.tracers && !args.systems && !args.clocks;
    if args.events.is_some() || nothing {
        if nothing {
            writeln!(out, "events:")?;
        }
        let re = match args.events.as_deref() {
            Some(p) if !p.is_empty() => Some(Regex::new(p).map_err(|e| {
                // regex's message draws the pattern over several lines:
                // keep its last line, the reason.
                let why = e.to_string();
                let why = why
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim_start_matches("error: ");
                anyhow!("bad regular expression '{p}': {why}")
            })?),
            _ => None,
        };
        for e in fs.all_events()? {
            let name = e.to_string();
            if re.as_ref().is_some_and(|r| !r.is_match(&name)) {
                continue;
            }
            if args.filters {
                let f = inst.event_filter(&e).unwrap_or(None);
                writeln!(out, "{name} {}", f.as_deref().unwrap_or("none"))?;
            } else {
                writeln!(out, "{name}")?;
            }
            if args.fields || args.full {
                if let Ok(f) = fs.event_format(&e.system, &e.name) {
                    print_fields(out, &f, args.full)?;
                }
            }
        }
    }
    if args.systems || nothing {
        if nothing {
            writeln!(out, "\nsystems:")?;
        }
        for s in fs.systems()? {
            writeln!(out, "{s}")?;
        }
    }
    if args.tracers || nothing {
        if nothing {
            writeln!(out, "\ntracers:")?;
        }
        writeln!(out, "{}", fs.available_tracers()?.join(" "))?;
    }
    if args.options || nothing {
        if nothing {
            writeln!(out, "\noptions:")?;
        }
        write!(out, "{}", inst.read_string("trace_options")?)?;
    }
    if args.clocks {
        write!(out, "{}", inst.read_string("trace_clock")?)?;
    }
    Ok(())
}
