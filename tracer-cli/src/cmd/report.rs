//! `tracer-cli report`: prints a trace.dat file like `trace-cmd report`
//! (`ustack_printer::report`), or with `--stacks`, `--json`, `--folded` or
//! `--pprof FILE` the stitched view (`ustack_printer::stacks`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use ustack_printer::report::{report_files, CpuList, Input, Plugins, ReportOptions};
use ustack_printer::select::Selection;
use ustack_printer::stacks::{self, Mode, View};
use ustack_tracedata::TraceFile;

/// Arguments of `tracer-cli report`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:
  tracer-cli report -i trace.dat
  tracer-cli report -F 'sched_switch: prev_pid != 0' --cpu 0-1
  tracer-cli report --stacks
  tracer-cli report --folded | flamegraph.pl > flame.svg")]
pub struct Args {
    /// Input file (default trace.dat).
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Vec<PathBuf>,
    /// Input file, as trace-cmd takes it after the options.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Only show events of these CPUs (repeatable; lists like `0,2-3` work).
    #[arg(long = "cpu", value_name = "CPUS")]
    pub cpu: Vec<String>,
    /// Event filter in trace-cmd (libtraceevent) syntax, e.g. `sched_switch`,
    /// `sched/sched_switch` or `sched_switch: prev_pid == 1` (repeatable).
    #[arg(short = 'F', long = "filter", value_name = "FILTER")]
    pub filter: Vec<String>,
    /// Negate the `-F` filters given after it: hide the events they match.
    #[arg(short = 'v')]
    pub invert: bool,
    /// Print timestamps in nanoseconds.
    #[arg(short = 't')]
    pub nsec: bool,
    /// Latency format: short comm, the irqs-off/need-resched/hardirq/
    /// softirq/preempt-depth flags column.
    #[arg(short = 'l')]
    pub latency: bool,
    /// Print the kernel buffer statistics stored in the file (CPUSTAT).
    #[arg(long)]
    pub stat: bool,
    /// Print the uname and version of the traced system and tool.
    #[arg(long)]
    pub uname: bool,
    /// Print the version of the tool that wrote the file.
    #[arg(long)]
    pub version: bool,
    /// Group events by cookie and show their user stacks (stitched view).
    #[arg(long)]
    pub stacks: bool,
    /// With the stitched views: look the files that user stacks map up under
    /// this directory (the root of the machine or VM that recorded the
    /// trace), as perf's --symfs.
    #[arg(long = "symfs", value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// Stitched view as JSON.
    #[arg(long)]
    pub json: bool,
    /// Stitched view as folded stacks (for flame graphs).
    #[arg(long)]
    pub folded: bool,
    /// Print every event's fields raw instead of its print format.
    #[arg(short = 'R')]
    pub raw: bool,
    /// Print the events matching EVENTS (a regular expression matched
    /// against whole event or system names) raw (repeatable).
    #[arg(short = 'r', value_name = "EVENTS")]
    pub raw_events: Vec<String>,
    /// Print the events matching EVENTS without their plugin handler.
    #[arg(short = 'n', value_name = "EVENTS")]
    pub no_handler: Vec<String>,
    /// Load no libtraceevent plugin.
    #[arg(short = 'N')]
    pub no_plugins: bool,
    /// Load only the user's plugins (~/.local/lib/traceevent/plugins).
    #[arg(short = 'L')]
    pub local_plugins: bool,
    /// Plugin option `[plugin:]name[=value]` (repeatable).
    #[arg(short = 'O', value_name = "OPTION")]
    pub plugin_options: Vec<String>,
    /// Hide events that happened in hard interrupt context.
    #[arg(short = 'I')]
    pub no_irqs: bool,
    /// Hide events that happened in soft interrupt context.
    #[arg(short = 'S')]
    pub no_softirqs: bool,
    /// Show wakeup latencies.
    #[arg(short = 'w')]
    pub wakeup: bool,
    /// Print the -F filters as parsed (`'event: expression'`), then exit.
    #[arg(short = 'T', long = "filter-test")]
    pub test_filters: bool,
    /// Do not print warnings (those of --ts-check).
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Show the endianness of the file and of this machine, then exit.
    #[arg(short = 'e')]
    pub endian: bool,
    /// Show the page size of the file and of this machine, then exit.
    #[arg(short = 'p')]
    pub page_size: bool,
    /// List the events of the file (system:event), then exit.
    #[arg(short = 'E')]
    pub list_events: bool,
    /// List the kernel functions of the file, then exit.
    #[arg(short = 'f')]
    pub functions: bool,
    /// List the printk formats of the file, then exit.
    #[arg(short = 'P')]
    pub printk: bool,
    /// Exit 0 if every event format of the file parses, 22 (EINVAL) if not.
    #[arg(long = "check-events")]
    pub check_events: bool,
    /// As trace-cmd 3.1.6: prints nothing (the formats are not read yet).
    #[arg(long = "events")]
    pub events: bool,
    /// As trace-cmd 3.1.6: prints nothing (the formats are not read yet).
    #[arg(long = "event", value_name = "EVENT")]
    pub event: Option<String>,
    /// List the CPUs of the top buffer that hold events, then exit.
    #[arg(long = "cpus")]
    pub list_cpus: bool,
    /// With the CPU list: the time of each CPU's first event.
    #[arg(long = "first-event")]
    pub first_event: bool,
    /// With the CPU list: the time of each CPU's last event.
    #[arg(long = "last-event")]
    pub last_event: bool,
    /// Accepted after -i as trace-cmd does; trace-cmd 3.1.6 applies no
    /// offset to a single file, and neither does tracer-cli.
    #[arg(long = "ts-offset", value_name = "NS", allow_hyphen_values = true)]
    pub ts_offset: Option<i64>,
    /// The timestamps count HZ ticks per second: show them in seconds. With
    /// several -i files, after the second -i it applies to the file before
    /// it; otherwise to every file.
    #[arg(long = "ts2secs", value_name = "HZ")]
    pub ts2secs: Vec<u64>,
    /// Show the time since the previous event.
    #[arg(long = "ts-diff")]
    pub ts_diff: bool,
    /// Warn (on stderr) when a CPU's timestamps go backwards.
    #[arg(long = "ts-check")]
    pub ts_check: bool,
    /// Show timestamps as recorded, without any correction.
    #[arg(long = "raw-ts")]
    pub raw_ts: bool,
    /// Ignore the date offset the file was recorded with (record --date).
    #[arg(long = "nodate")]
    pub nodate: bool,
    /// Show timestamps relative to the first event.
    #[arg(long = "align-ts")]
    pub align_ts: bool,
    /// Write the stitched stacks to FILE as a pprof profile (profile.proto,
    /// gzip) for go tool pprof, speedscope, Pyroscope or Parca.
    #[arg(long, value_name = "FILE")]
    pub pprof: Option<PathBuf>,
    /// With the stitched views: only the groups of these tasks (as perf
    /// report's --pid; repeatable, comma lists work).
    #[arg(long = "pid", value_name = "PIDS", value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// With the stitched views: only the groups of tasks with these exact
    /// command names (as perf report's --comm; repeatable, comma lists work).
    #[arg(long = "comm", value_name = "COMMS", value_delimiter = ',')]
    pub comm: Vec<String>,
    /// With the stitched views: only the events of this time window,
    /// `START,END` in seconds as the report prints them (either may be
    /// empty), as perf report's --time.
    #[arg(long = "time", value_name = "START,END")]
    pub time: Option<String>,
    /// With the stitched views: show the tracing-internal kernel frames
    /// (`trace_event_raw_event_*`, ftrace callbacks, stack savers) that are
    /// hidden by default.
    #[arg(long = "internal-frames")]
    pub internal_frames: bool,
}

impl Args {
    /// The input files: the `-i FILE`s, else the file after the options,
    /// else trace.dat.
    pub fn paths(&self) -> Result<Vec<PathBuf>> {
        match (self.input.as_slice(), &self.file) {
            ([], None) => Ok(vec![PathBuf::from("trace.dat")]),
            ([], Some(f)) => Ok(vec![f.clone()]),
            (i, None) => Ok(i.to_vec()),
            (_, Some(_)) => bail!("give the input files either with -i or after the options"),
        }
    }

    /// The one input file of the views that read one.
    pub fn path(&self) -> Result<PathBuf> {
        match self.paths()?.as_slice() {
            [p] => Ok(p.clone()),
            _ => bail!("--stacks, --json, --folded and --pprof read one file"),
        }
    }

    /// The ids of the events of `file` whose name or system matches one of
    /// `patterns` as a whole (trace-cmd: `^PATTERN$`, basic regular
    /// expression, ignoring case).
    fn event_ids(file: &TraceFile, patterns: &[String]) -> Result<Vec<u16>> {
        let mut ids = Vec::new();
        for p in patterns {
            let re = crate::cmd::bre::Bre::new(&format!("^{p}$"))?;
            for f in file.formats().iter() {
                if (re.is_match(&f.name) || re.is_match(&f.system)) && !ids.contains(&f.id) {
                    ids.push(f.id);
                }
            }
        }
        Ok(ids)
    }

    /// The CPUs selected with `--cpu`, or `None` for all.
    pub fn cpus(&self) -> Result<Option<Vec<u32>>> {
        if self.cpu.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::new();
        for spec in &self.cpu {
            for part in spec.split([',', ':']).filter(|p| !p.trim().is_empty()) {
                let (a, b) = match part.split_once('-') {
                    Some((a, b)) => (a.trim(), b.trim()),
                    None => (part.trim(), part.trim()),
                };
                let a: u32 = a
                    .parse()
                    .with_context(|| format!("bad cpu list {spec:?}"))?;
                let b: u32 = b
                    .parse()
                    .with_context(|| format!("bad cpu list {spec:?}"))?;
                if a > b {
                    bail!("bad cpu list {spec:?}: range must go from lower to greater");
                }
                for c in a..=b {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
        }
        Ok(Some(out))
    }
}

/// Runs `tracer-cli report`.
pub fn run(args: Args, matches: &clap::ArgMatches) -> Result<()> {
    if args.stacks || args.json || args.folded || args.pprof.is_some() {
        return run_stacks(&args, matches);
    }
    let paths = args.paths()?;
    let first_input = matches.indices_of("input").and_then(|mut i| i.next());
    if let Some(at) = matches.index_of("ts_offset") {
        if first_input.is_none_or(|i| i > at) {
            bail!("--ts-offset must come after -i");
        }
    }
    let files = paths
        .iter()
        .map(TraceFile::open)
        .collect::<Result<Vec<_>, _>>()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if let Some(r) = super::report_forms::run(&args, &files[0], &mut out) {
        return r;
    }
    let (default_hz, file_hz) = ts2secs_per_file(&args, matches, files.len());
    let mut inputs = Vec::new();
    for (n, f) in files.iter().enumerate() {
        let mut input = Input::new(f);
        input.ts2secs = file_hz[n];
        input.raw_events = Args::event_ids(f, &args.raw_events)?;
        input.no_handler_events = Args::event_ids(f, &args.no_handler)?;
        inputs.push(input);
    }
    let plugin_options = args
        .plugin_options
        .iter()
        .map(|o| match o.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (o.clone(), None),
        })
        .collect();
    let list = args.list_cpus || args.first_event || args.last_event;
    let (pos, neg) = split_filters(&args, matches);
    if !args.pid.is_empty() || !args.comm.is_empty() || args.time.is_some() || args.internal_frames
    {
        bail!("--pid, --comm, --time and --internal-frames apply to --stacks, --json, --folded and --pprof");
    }
    let opts = ReportOptions {
        cpus: args.cpus()?,
        filters: pos,
        neg_filters: neg,
        nsec: args.nsec,
        latency: args.latency,
        stat: args.stat,
        uname: args.uname,
        version: args.version,
        raw: args.raw,
        plugins: if args.no_plugins {
            Plugins::None
        } else if args.local_plugins {
            Plugins::NoSystem
        } else {
            Plugins::All
        },
        plugin_options,
        no_irqs: args.no_irqs,
        no_softirqs: args.no_softirqs,
        ts_diff: args.ts_diff,
        raw_ts: args.raw_ts,
        nodate: args.nodate,
        align_ts: args.align_ts,
        ts2secs: default_hz,
        wakeup: args.wakeup,
        test_filters: args.test_filters,
        ts_check: args.ts_check,
        cpu_list: list.then_some(CpuList {
            first: args.first_event,
            last: args.last_event,
        }),
    };
    match report_files(&inputs, &opts, &mut out) {
        Err(e) if is_broken_pipe(&e) => Ok(()),
        Err(e) => Err(e),
        Ok(w) => {
            if !args.quiet {
                for warning in w.warnings {
                    eprintln!("tracer-cli: warning: {warning}");
                }
            }
            Ok(())
        }
    }
}

/// trace-cmd's `--ts2secs`: one given once a second `-i` was read applies
/// to the last file named; one before that is the default of every file.
/// Returns the default and the per-file values.
fn ts2secs_per_file(
    args: &Args,
    matches: &clap::ArgMatches,
    files: usize,
) -> (Option<u64>, Vec<Option<u64>>) {
    let inputs_at: Vec<usize> = matches
        .indices_of("input")
        .map_or(Vec::new(), |i| i.collect());
    let hz_at = matches
        .indices_of("ts2secs")
        .map_or(Vec::new(), |i| i.collect());
    let mut default_hz = None;
    let mut file_hz = vec![None; files];
    for (&hz, at) in args.ts2secs.iter().zip(hz_at) {
        match inputs_at.iter().filter(|&&i| i < at).count() {
            n if n >= 2 => file_hz[n - 1] = Some(hz),
            _ => default_hz = Some(hz),
        }
    }
    (default_hz, file_hz)
}

/// trace-cmd's `-v`: it negates the `-F` filters given after it. Returns
/// the positive and the negative filters.
fn split_filters(args: &Args, matches: &clap::ArgMatches) -> (Vec<String>, Vec<String>) {
    let v_at = matches.index_of("invert").filter(|_| args.invert);
    let at: Vec<usize> = matches
        .indices_of("filter")
        .map_or(Vec::new(), |i| i.collect());
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    for (n, f) in args.filter.iter().enumerate() {
        let after_v = v_at.is_some_and(|v| at.get(n).is_none_or(|&i| i > v));
        if after_v { &mut neg } else { &mut pos }.push(f.clone());
    }
    (pos, neg)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// `report --stacks|--json|--folded`.
fn run_stacks(args: &Args, matches: &clap::ArgMatches) -> Result<()> {
    let mode = if args.pprof.is_some() {
        Mode::Pprof
    } else if args.json {
        Mode::Json
    } else if args.folded {
        Mode::Folded
    } else {
        Mode::Text
    };
    let mut select = Selection {
        cpus: args.cpus()?,
        pids: args.pid.clone(),
        comms: args.comm.clone(),
        ..Selection::default()
    };
    (select.filters, select.neg_filters) = split_filters(args, matches);
    if let Some(t) = &args.time {
        select.set_time(t)?;
    }
    let path = args.path()?;
    // The reader's errors name the file already.
    let f = TraceFile::open(&path)?;
    let view = View {
        mode,
        nsec: args.nsec,
        symfs: args.symfs.clone(),
        internal: args.internal_frames,
        select,
    };
    if let Some(path) = &args.pprof {
        let mut out = std::fs::File::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let w = stacks::write_file(&f, &view, &mut out)
            .with_context(|| format!("cannot write {}", path.display()))?;
        return cut_short(w);
    }
    print_stacks(&f, &view)
}

/// Writes the stitched view of `f` to stdout; a closed pipe (`| head`) is
/// not an error.
pub fn print_stacks(f: &TraceFile, view: &View) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = stacks::write_file(f, view, &mut out);
    match written.and_then(|w| out.flush().map(|_| w).map_err(Into::into)) {
        Err(e) if is_broken_pipe(&e) => Ok(()),
        Err(e) if e.downcast_ref::<std::io::Error>().is_some() => {
            Err(e.context("cannot write the report"))
        }
        Err(e) => Err(e),
        Ok(w) => cut_short(w),
    }
}

/// The data read before an error was shown; fail as the plain report does.
fn cut_short(w: stacks::Written) -> Result<()> {
    match w.cut_short {
        Some(e) => bail!("trace data cut short: {e}"),
        None => Ok(()),
    }
}
