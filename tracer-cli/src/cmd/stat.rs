//! `tracer-cli stat`: the state of the tracing system, in the text of
//! `trace-cmd stat` (only what differs from the defaults, then whether
//! tracing is on), for the top instance or the instances given with `-B`.

use super::list::dir_entries;
use anyhow::Result;
use std::fs;
use std::io::{self, Write};
use std::path::Path;
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

/// A tracefs file with surrounding white space removed; `None` when it
/// cannot be read (missing, or refused on this kernel).
fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// `\n{label}{value}` when the file exists and differs from `default`.
fn report_file(
    out: &mut impl Write,
    dir: &Path,
    file: &str,
    default: &str,
    label: &str,
) -> Result<()> {
    if let Some(v) = read_trimmed(&dir.join(file)) {
        if !v.is_empty() && v != default {
            write!(out, "\n{label}{v}\n")?;
        }
    }
    Ok(())
}

/// The first byte of `events/.../enable`: `1`, `0` or `X` (mixed).
fn enable_state(path: &Path) -> Option<u8> {
    fs::read(path.join("enable")).ok()?.first().copied()
}

/// `Events:` — all on, all off, or the fully enabled systems and then the
/// enabled events of the partly enabled ones.
fn report_events(out: &mut impl Write, dir: &Path) -> Result<()> {
    let events = dir.join("events");
    let Some(all) = read_trimmed(&events.join("enable")) else {
        return Ok(());
    };
    write!(out, "\nEvents:\n")?;
    match all.as_bytes().first() {
        Some(b'1') => return Ok(writeln!(out, " All enabled")?),
        Some(b'0') => return Ok(writeln!(out, " All disabled")?),
        _ => {}
    }
    let systems = dir_entries(&events, true)?;
    let mut any = false;
    for sys in &systems {
        if enable_state(&events.join(sys)) == Some(b'1') {
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
            enable_state(&events.join(sys)),
            None | Some(b'0') | Some(b'1')
        ) {
            continue;
        }
        let mut sys_shown = false;
        for ev in dir_entries(&events.join(sys), true)? {
            if enable_state(&events.join(sys).join(&ev)) != Some(b'1') {
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
fn report_per_event(out: &mut impl Write, dir: &Path, file: &str, title: &str) -> Result<()> {
    let events = dir.join("events");
    let mut first = true;
    for sys in dir_entries(&events, true)? {
        for ev in dir_entries(&events.join(&sys), true)? {
            let Some(v) = read_trimmed(&events.join(&sys).join(&ev).join(file)) else {
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
fn report_functions(out: &mut impl Write, path: &Path, title: &str) -> Result<()> {
    let Ok(text) = fs::read_to_string(path) else {
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

fn report_buffers(out: &mut impl Write, dir: &Path) -> Result<()> {
    let Some(size) = read_trimmed(&dir.join("buffer_size_kb")) else {
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
            let file = dir.join(format!("per_cpu/cpu{cpu}/buffer_size_kb"));
            let Some(kb) = read_trimmed(&file) else { break };
            if cpu == 0 {
                writeln!(out)?;
            }
            writeln!(out, "CPU {cpu} buffer size (kb): {kb}")?;
        }
    }
    if let Some(total) = read_trimmed(&dir.join("buffer_total_size_kb")) {
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
fn report_cpumask(out: &mut impl Write, dir: &Path) -> Result<()> {
    let Some(mask) = read_trimmed(&dir.join("tracing_cpumask")) else {
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
fn report_probes(out: &mut impl Write, dir: &Path, file: &str, title: &str) -> Result<()> {
    let Some(v) = read_trimmed(&dir.join(file)) else {
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
fn report_options(out: &mut impl Write, dir: &Path) -> Result<()> {
    write!(out, "\nOptions:\n")?;
    let opts = dir.join("options");
    for name in dir_entries(&opts, false)? {
        let Some(v) = read_trimmed(&opts.join(&name)) else {
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
    let dir = inst.dir();
    let dir = dir.as_path();
    if let Some(name) = inst.name() {
        writeln!(out, "Instance: {name}")?;
    }
    report_file(out, dir, "current_tracer", "nop", "Tracer: ")?;
    report_events(out, dir)?;
    report_per_event(out, dir, "filter", "Filters")?;
    report_per_event(out, dir, "trigger", "Triggers")?;
    for (file, title) in [
        ("set_ftrace_filter", "Function Filter"),
        ("set_ftrace_notrace", "Function No Trace"),
        ("set_graph_function", "Function Graph Filter"),
        ("set_graph_notrace", "Function Graph No Trace"),
    ] {
        report_functions(out, &dir.join(file), title)?;
    }
    report_buffers(out, dir)?;
    if let Ok((clock, _)) = inst.trace_clock() {
        if clock != "local" {
            write!(out, "\nClock: {clock}\n")?;
        }
    }
    report_cpumask(out, dir)?;
    report_file(out, dir, "tracing_max_latency", "0", "Max Latency: ")?;
    report_probes(out, dir, "kprobe_events", "Kprobe events")?;
    report_probes(out, dir, "uprobe_events", "Uprobe events")?;
    report_probes(out, dir, "synthetic_events", "Synthetic events")?;
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
        report_file(out, dir, file, default, label)?;
    }
    if opts {
        report_options(out, dir)?;
    }
    if let Some(on) = read_trimmed(&dir.join("tracing_on")) {
        let state = if on == "0" { "disabled" } else { "enabled" };
        write!(out, "\nTracing is {state}\n\n")?;
    }
    report_file(out, dir, "error_log", "", "Error log:\n")?;
    if inst.name().is_none() {
        let names = dir_entries(&fs.root().join("instances"), false)?;
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
    if let Some(v) = read_trimmed(Path::new("/proc/sys/kernel/stack_tracer_enabled")) {
        if v.parse::<i64>().unwrap_or(0) > 0 {
            write!(out, "Stack tracing is enabled\n\n")?;
        }
    }
    out.flush()?;
    Ok(())
}
