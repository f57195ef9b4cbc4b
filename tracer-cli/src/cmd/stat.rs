//! `tracer-cli stat`: the state of the tracing system, in the text of
//! `trace-cmd stat` (only what differs from the defaults, then whether
//! tracing is on), for the top instance or the instances given with `-B`.

use anyhow::Result;
use std::fs;
use std::io::{self, Write};
use ustack_tracefs::{Instance, Tracefs};

/// Arguments of `tracer-cli stat`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Show this instance instead of the top one (repeatable).
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instances: Vec<String>,
    /// With -B: show the top instance too, first.
    #[arg(short = 't')]
    pub top: bool,
    /// Also list the options and their state.
    #[arg(short = 'o')]
    pub options: bool,
}

/// A file of `inst` with surrounding white space removed; `None` when it
/// cannot be read (missing, or refused on this kernel).
fn read_trimmed(inst: &Instance, rel: &str) -> Option<String> {
    inst.read_string(rel).ok().map(|s| s.trim().to_string())
}

/// `\n{label}{value}` when the file exists and differs from `default`.
fn report_file(
    out: &mut impl Write,
    inst: &Instance,
    file: &str,
    default: &str,
    label: &str,
) -> Result<()> {
    if let Some(v) = read_trimmed(inst, file) {
        if !v.is_empty() && v != default {
            write!(out, "\n{label}{v}\n")?;
        }
    }
    Ok(())
}

/// The first byte of `DIR/enable` (`events/...`): `1`, `0` or `X` (mixed).
fn enable_state(inst: &Instance, dir: &str) -> Option<u8> {
    inst.read(&format!("{dir}/enable")).ok()?.first().copied()
}

/// `Events:` — all on, all off, or the fully enabled systems and then the
/// enabled events of the partly enabled ones.
fn report_events(out: &mut impl Write, inst: &Instance) -> Result<()> {
    let Some(all) = read_trimmed(inst, "events/enable") else {
        return Ok(());
    };
    write!(out, "\nEvents:\n")?;
    match all.as_bytes().first() {
        Some(b'1') => return Ok(writeln!(out, " All enabled")?),
        Some(b'0') => return Ok(writeln!(out, " All disabled")?),
        _ => {}
    }
    let systems = inst.subdirs("events")?;
    let mut any = false;
    for sys in &systems {
        if enable_state(inst, &format!("events/{sys}")) == Some(b'1') {
            if !any {
                writeln!(out, " Individual systems:")?;
            }
            writeln!(out, "   {sys}")?;
            any = true;
        }
    }
    let mut header = false;
    for sys in &systems {
        if matches!(
            enable_state(inst, &format!("events/{sys}")),
            None | Some(b'0') | Some(b'1')
        ) {
            continue;
        }
        let mut sys_shown = false;
        for ev in inst.subdirs(&format!("events/{sys}"))? {
            if enable_state(inst, &format!("events/{sys}/{ev}")) != Some(b'1') {
                continue;
            }
            if !header {
                writeln!(out, " Individual events:")?;
                header = true;
            }
            if !sys_shown {
                writeln!(out, "    {sys}")?;
                sys_shown = true;
            }
            writeln!(out, "        {ev}")?;
        }
    }
    if !any && !header {
        writeln!(out, "  (none enabled)")?;
    }
    Ok(())
}

/// `Filters:` or `Triggers:`: every event whose `file` holds something,
/// as `  system:event "text"`.
fn report_per_event(out: &mut impl Write, inst: &Instance, file: &str, title: &str) -> Result<()> {
    let mut first = true;
    for sys in inst.subdirs("events")? {
        for ev in inst.subdirs(&format!("events/{sys}"))? {
            let Some(v) = read_trimmed(inst, &format!("events/{sys}/{ev}/{file}")) else {
                continue;
            };
            let unset = if file == "filter" {
                v == "none"
            } else {
                v.starts_with('#')
            };
            if unset {
                continue;
            }
            if first {
                write!(out, "\n{title}:\n")?;
                first = false;
            }
            writeln!(out, "  {sys}:{ev} \"{v}\"")?;
        }
    }
    Ok(())
}

/// Function lists (`set_ftrace_filter`, ...): the lines that are not
/// comments, indented, under a title.
fn report_functions(out: &mut impl Write, inst: &Instance, file: &str, title: &str) -> Result<()> {
    let Ok(text) = inst.read_string(file) else {
        return Ok(());
    };
    let mut first = true;
    for line in text.split_inclusive('\n') {
        if line.starts_with('#') || line == "\n" {
            continue;
        }
        if first {
            write!(out, "\n{title}:\n")?;
            first = false;
        }
        write!(out, "   {line}")?;
    }
    Ok(())
}

fn report_buffers(out: &mut impl Write, inst: &Instance) -> Result<()> {
    let Some(size) = read_trimmed(inst, "buffer_size_kb") else {
        return Ok(());
    };
    // Not expanded yet (nothing was ever traced): trace-cmd says nothing.
    if size.contains("expanded") {
        return Ok(());
    }
    if size != "X" {
        write!(out, "\nBuffer size in kilobytes (per cpu):\n   {size}\n")?;
    } else {
        for cpu in 0.. {
            let file = format!("per_cpu/cpu{cpu}/buffer_size_kb");
            let Some(kb) = read_trimmed(inst, &file) else {
                break;
            };
            if cpu == 0 {
                writeln!(out)?;
            }
            writeln!(out, "CPU {cpu} buffer size (kb): {kb}")?;
        }
    }
    if let Some(total) = read_trimmed(inst, "buffer_total_size_kb") {
        write!(out, "\nBuffer total size in kilobytes:\n   {total}\n")?;
    }
    Ok(())
}

/// The CPUs of this machine, online or not, as glibc counts them for
/// `sysconf(_SC_NPROCESSORS_CONF)` (trace-cmd's count): the `cpuN`
/// directories of /sys/devices/system/cpu.
fn configured_cpus() -> i64 {
    let n = fs::read_dir("/sys/devices/system/cpu").map_or(0, |rd| {
        rd.filter_map(|e| e.ok())
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.strip_prefix("cpu")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            })
            .count()
    });
    (n as i64).max(1)
}

/// `CPU mask:` when the mask leaves out a CPU of this machine.
fn report_cpumask(out: &mut impl Write, inst: &Instance) -> Result<()> {
    let Some(mask) = read_trimmed(inst, "tracing_cpumask") else {
        return Ok(());
    };
    let mut cpus = configured_cpus();
    for c in mask.bytes().rev() {
        if cpus <= 0 {
            break;
        }
        if c == b',' {
            continue;
        }
        if c == b'f' {
            cpus -= 4;
            continue;
        }
        if cpus >= 4 {
            break;
        }
        let mut n = (c as char).to_digit(16).unwrap_or(0);
        while cpus > 0 && n & 1 == 1 {
            n >>= 1;
            cpus -= 1;
        }
        break;
    }
    if cpus > 0 {
        write!(out, "\nCPU mask: {mask}\n")?;
    }
    Ok(())
}

/// `kprobe_events` and the like: each line indented under a title.
fn report_probes(out: &mut impl Write, inst: &Instance, file: &str, title: &str) -> Result<()> {
    let Some(v) = read_trimmed(inst, file) else {
        return Ok(());
    };
    if v.is_empty() {
        return Ok(());
    }
    write!(out, "\n{title}:\n")?;
    for line in v.split('\n') {
        writeln!(out, "   {line}")?;
    }
    Ok(())
}

/// `Options:` (with -o): as `list -o`, indented.
fn report_options(out: &mut impl Write, inst: &Instance) -> Result<()> {
    write!(out, "\nOptions:\n")?;
    for name in inst.entries("options")? {
        let Some(v) = read_trimmed(inst, &format!("options/{name}")) else {
            continue;
        };
        match v.parse::<i64>() {
            Ok(0) => writeln!(out, "   no{name}")?,
            Ok(_) => writeln!(out, "   {name}")?,
            Err(_) => {}
        }
    }
    Ok(())
}

fn stat_instance(out: &mut impl Write, fs: &Tracefs, inst: &Instance, opts: bool) -> Result<()> {
    if let Some(name) = inst.name() {
        writeln!(out, "Instance: {name}")?;
    }
    report_file(out, inst, "current_tracer", "nop", "Tracer: ")?;
    report_events(out, inst)?;
    report_per_event(out, inst, "filter", "Filters")?;
    report_per_event(out, inst, "trigger", "Triggers")?;
    for (file, title) in [
        ("set_ftrace_filter", "Function Filter"),
        ("set_ftrace_notrace", "Function No Trace"),
        ("set_graph_function", "Function Graph Filter"),
        ("set_graph_notrace", "Function Graph No Trace"),
    ] {
        report_functions(out, inst, file, title)?;
    }
    report_buffers(out, inst)?;
    if let Ok((clock, _)) = inst.trace_clock() {
        if clock != "local" {
            write!(out, "\nClock: {clock}\n")?;
        }
    }
    report_cpumask(out, inst)?;
    report_file(out, inst, "tracing_max_latency", "0", "Max Latency: ")?;
    report_probes(out, inst, "kprobe_events", "Kprobe events")?;
    report_probes(out, inst, "uprobe_events", "Uprobe events")?;
    report_probes(out, inst, "synthetic_events", "Synthetic events")?;
    for (file, default, label) in [
        ("set_event_pid", "", "Filtered event PIDs:\n"),
        (
            "set_event_notrace_pid",
            "",
            "Filtered notrace event PIDs:\n",
        ),
        (
            "set_ftrace_pid",
            "no pid",
            "Filtered function tracer PIDs:\n",
        ),
        (
            "set_ftrace_notrace_pid",
            "no pid",
            "Filtered function tracer notrace PIDs:\n",
        ),
    ] {
        report_file(out, inst, file, default, label)?;
    }
    if opts {
        report_options(out, inst)?;
    }
    if let Some(on) = read_trimmed(inst, "tracing_on") {
        let state = if on == "0" { "disabled" } else { "enabled" };
        write!(out, "\nTracing is {state}\n\n")?;
    }
    report_file(out, inst, "error_log", "", "Error log:\n")?;
    if inst.name().is_none() {
        let names = fs.top().entries("instances")?;
        if !names.is_empty() {
            write!(out, "\nInstances:\n")?;
        }
        for n in names {
            writeln!(out, " {n}")?;
        }
    }
    Ok(())
}

/// Runs `tracer-cli stat`.
pub fn run(args: Args) -> Result<()> {
    let fs = Tracefs::open()?;
    // trace-cmd shows the -B instances last named first, after the top
    // instance when -t is given.
    let mut list = Vec::new();
    if args.top || args.instances.is_empty() {
        list.push(fs.top());
    }
    for name in args.instances.iter().rev() {
        list.push(fs.instance(name)?);
    }
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for (i, inst) in list.iter().enumerate() {
        if i > 0 {
            writeln!(out, "---------------")?;
        }
        stat_instance(&mut out, &fs, inst, args.options)?;
    }
    if Tracefs::stack_tracer_enabled() == Some(true) {
        write!(out, "Stack tracing is enabled\n\n")?;
    }
    out.flush()?;
    Ok(())
}
