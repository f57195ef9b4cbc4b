//! `tracer-cli list`: what `trace-cmd list` prints, byte for byte: events
//! (`-e [REGEX]`, with `-F` formats, `-l` filters or `-R` triggers), tracers
//! (`-t`), options (`-o`), libtraceevent plugins (`-P`), systems (`-s`),
//! instances (`-B`), clocks (`-C`) and compression algorithms (`-c`). Without one of those, the systems,
//! events, tracers, options and compression algorithms.

use super::bre::Bre;
use anyhow::{bail, Result};
use std::io::{self, Write};
use ustack_tracefs::{Instance, Tracefs};

/// Arguments of `tracer-cli list`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  tracer-cli list -e '^sched:'
  tracer-cli list -e sched:sched_switch -F
  tracer-cli list -o -B mine")]
pub struct Args {
    /// List events, or those matching REGEX (POSIX basic syntax, ignoring
    /// case, as trace-cmd): `SYS:EVENT` matches the system and the event
    /// separately, `SYS:` only systems, and a REGEX without `:` systems or
    /// events.
    #[arg(short = 'e', value_name = "REGEX", num_args = 0..=1)]
    pub events: Option<Option<String>>,
    /// With -e REGEX: show the format file of each event.
    #[arg(short = 'F')]
    pub formats: bool,
    /// With -F: also show the print fmt.
    #[arg(long = "full")]
    pub full: bool,
    /// With -e REGEX: show each event's filter.
    #[arg(short = 'l')]
    pub filters: bool,
    /// With -e REGEX: show each event's triggers.
    #[arg(short = 'R')]
    pub triggers: bool,
    /// List the options and their state (of the instance given with -B).
    #[arg(short = 'o')]
    pub options: bool,
    /// List the tracers.
    #[arg(short = 't', visible_short_alias = 'p')]
    pub tracers: bool,
    /// List the libtraceevent plugins (the files loaded).
    #[arg(short = 'P')]
    pub plugins: bool,
    /// List the event systems.
    #[arg(short = 's')]
    pub systems: bool,
    /// List the trace clocks (the current one in brackets).
    #[arg(short = 'C')]
    pub clocks: bool,
    /// List the supported trace file compression algorithms.
    #[arg(short = 'c')]
    pub compression: bool,
    /// Without a value: list the instances. With one: use that instance
    /// for -o and -C (an extension of trace-cmd's `list`).
    #[arg(short = 'B', value_name = "INSTANCE", num_args = 0..=1)]
    pub instance: Option<Option<String>>,
}

/// Copies a tracefs file (relative to `inst`) to `out` as it is.
fn cat(out: &mut impl Write, inst: &Instance, rel: &str) -> Result<()> {
    out.write_all(&inst.read(rel)?)?;
    Ok(())
}

/// What to print for each matching event.
#[derive(Clone, Copy)]
enum Show {
    Name,
    Format { full: bool },
    Filter,
    Trigger,
}

fn show_event(out: &mut impl Write, top: &Instance, sys: &str, ev: &str, what: Show) -> Result<()> {
    let dir = format!("events/{sys}/{ev}");
    match what {
        Show::Name => writeln!(out, "{sys}:{ev}")?,
        Show::Filter | Show::Trigger => {
            writeln!(out, "{sys}:{ev}")?;
            let file = if matches!(what, Show::Filter) {
                "filter"
            } else {
                "trigger"
            };
            cat(out, top, &format!("{dir}/{file}"))?;
            writeln!(out)?;
        }
        Show::Format { full } => {
            writeln!(out, "system: {sys}")?;
            let text = top.read(&format!("{dir}/format"))?;
            for line in text.split_inclusive(|&b| b == b'\n') {
                if !full && line.starts_with(b"print fmt") {
                    break;
                }
                out.write_all(line)?;
            }
        }
    }
    Ok(())
}

/// Events of a system whose name matches `re`.
fn show_matching(
    out: &mut impl Write,
    top: &Instance,
    sys: &str,
    re: &Bre,
    what: Show,
) -> Result<()> {
    for ev in top.subdirs(&format!("events/{sys}"))? {
        if re.is_match(&ev) {
            show_event(out, top, sys, &ev, what)?;
        }
    }
    Ok(())
}

fn show_system(out: &mut impl Write, top: &Instance, sys: &str, what: Show) -> Result<()> {
    for ev in top.subdirs(&format!("events/{sys}"))? {
        show_event(out, top, sys, &ev, what)?;
    }
    Ok(())
}

/// Splits a pattern as trace-cmd does with `strtok(":")` then
/// `strtok("")`: leading colons are skipped, the system part ends at the
/// next colon, the event part is the rest (none when empty).
fn split_pattern(re: &str) -> (&str, Option<&str>) {
    let s = re.trim_start_matches(':');
    match s.find(':') {
        None => (s, None),
        Some(i) => {
            let rest = &s[i + 1..];
            (&s[..i], (!rest.is_empty()).then_some(rest))
        }
    }
}

/// `list -e REGEX`: the systems are matched first. `SYS:EVENT` shows the
/// matching events of matching systems; `SYS:` whole matching systems;
/// `WORD` whole matching systems plus, in the other systems, the events
/// whose name matches. The `ftrace` pseudo-system (no `enable` file) only
/// shows up here, first, as in trace-cmd.
fn show_events_re(out: &mut impl Write, top: &Instance, pattern: &str, what: Show) -> Result<()> {
    let (sys_re, ev_re) = split_pattern(pattern);
    let sys_re = Bre::new(sys_re)?;
    let ev_re = ev_re.map(Bre::new).transpose()?;
    let just_systems = ev_re.is_some() || pattern.ends_with(':');
    let mut systems = Vec::new();
    for s in top.subdirs("events")? {
        if top.exists(&format!("events/{s}/enable")) {
            systems.push(s);
        }
    }
    let mut order: Vec<&str> = Vec::new();
    if top.is_dir("events/ftrace") && !systems.iter().any(|s| s == "ftrace") {
        order.push("ftrace");
    }
    order.extend(systems.iter().map(String::as_str));
    for sys in order {
        // None: the whole system; Some(re): its events that match re.
        let filter = if sys_re.is_match(sys) {
            ev_re.as_ref()
        } else if !just_systems {
            Some(&sys_re)
        } else {
            continue;
        };
        match filter {
            None => show_system(out, top, sys, what)?,
            Some(re) => show_matching(out, top, sys, re, what)?,
        }
    }
    Ok(())
}

fn show_events(out: &mut impl Write, top: &Instance, args: &Args) -> Result<()> {
    let pattern = args.events.clone().flatten();
    let what = if args.formats {
        Show::Format { full: args.full }
    } else if args.filters {
        Show::Filter
    } else if args.triggers {
        Show::Trigger
    } else {
        Show::Name
    };
    match pattern.as_deref() {
        None | Some("") if !matches!(what, Show::Name) => {
            bail!("When specifying event files, an event must be named")
        }
        None | Some("") => cat(out, top, "available_events"),
        Some(p) => show_events_re(out, top, p, what),
    }
}

/// `list -o`: every file of `options/` in readdir order, `no` before the
/// ones that are off.
fn show_options(out: &mut impl Write, inst: &Instance) -> Result<()> {
    if !inst.is_dir("options") {
        return cat(out, inst, "trace_options");
    }
    for name in inst.entries("options")? {
        let Ok(v) = inst.read_string(&format!("options/{name}")) else {
            continue;
        };
        match v.trim().parse::<i64>() {
            Ok(0) => writeln!(out, "no{name}")?,
            Ok(_) => writeln!(out, "{name}")?,
            Err(_) => {}
        }
    }
    Ok(())
}

fn show_systems(out: &mut impl Write, top: &Instance) -> Result<()> {
    for s in top.subdirs("events")? {
        writeln!(out, "{s}")?;
    }
    writeln!(out)?;
    Ok(())
}

fn show_instances(out: &mut impl Write, top: &Instance) -> Result<()> {
    let names = top.entries("instances")?;
    if names.is_empty() {
        writeln!(out, "No buffer instances defined")?;
    }
    for n in names {
        writeln!(out, "{n}")?;
    }
    Ok(())
}

fn show_clocks(out: &mut impl Write, inst: &Instance) -> Result<()> {
    let clocks = inst.read_string("trace_clock")?;
    writeln!(out, "{}", clocks.strip_suffix('\n').unwrap_or(&clocks))?;
    Ok(())
}

/// The compression algorithms our trace.dat writer supports.
fn show_compression(out: &mut impl Write) -> Result<()> {
    writeln!(out, "Supported compression algorithms:")?;
    writeln!(
        out,
        "\tzstd, {}",
        ustack_tracedata::compress::Compression::Zstd.version()
    )?;
    Ok(())
}

/// Runs `tracer-cli list`.
pub fn run(args: Args) -> Result<()> {
    let fs = Tracefs::open()?;
    let top = fs.top();
    let named = args.instance.clone().flatten();
    let inst = fs.instance_or_top(named.as_deref())?;
    let list_instances = matches!(args.instance, Some(None));
    let all = args.events.is_none()
        && !args.options
        && !args.plugins
        && !args.tracers
        && !args.systems
        && !args.clocks
        && !args.compression
        && !list_instances;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    if args.events.is_some() {
        show_events(&mut out, &top, &args)?;
    }
    if args.tracers {
        cat(&mut out, &top, "available_tracers")?;
    }
    if args.options {
        show_options(&mut out, &inst)?;
    }
    if args.plugins {
        out.write_all(&ustack_printer::listings::plugin_list()?)?;
    }
    if list_instances {
        show_instances(&mut out, &top)?;
    }
    if args.clocks {
        show_clocks(&mut out, &inst)?;
    }
    if args.systems {
        show_systems(&mut out, &top)?;
    }
    if args.compression {
        show_compression(&mut out)?;
    }
    if all {
        writeln!(out, "event systems:")?;
        show_systems(&mut out, &top)?;
        writeln!(out, "events:")?;
        cat(&mut out, &top, "available_events")?;
        writeln!(out, "\ntracers:")?;
        cat(&mut out, &top, "available_tracers")?;
        writeln!(out, "\noptions:")?;
        show_options(&mut out, &inst)?;
        show_compression(&mut out)?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_pattern;

    #[test]
    fn patterns_split_as_strtok() {
        assert_eq!(split_pattern("^irq:"), ("^irq", None));
        assert_eq!(split_pattern("sched:sched_s"), ("sched", Some("sched_s")));
        assert_eq!(split_pattern("::x"), ("x", None));
        assert_eq!(split_pattern("a::b"), ("a", Some(":b")));
        assert_eq!(split_pattern("irq"), ("irq", None));
    }
}
