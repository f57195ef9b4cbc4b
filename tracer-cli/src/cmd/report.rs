//! `tracer-cli report`: prints a trace.dat file like `trace-cmd report`
//! (`ustack_printer::report`), or with `--stacks`, `--json`, `--folded` or
//! `--pprof FILE` the stitched view (`ustack_printer::stacks`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::select::SelectArgs;
use crate::epipe::is_broken_pipe;
use ustack_printer::profile::{Hook, InstanceRecord, ProfileOptions};
use ustack_printer::report::{report_files, CpuList, Input, Plugins, ReportOptions};
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
    /// `-F`, `-v`, `--cpu`, `--pid`, `--comm`, `--time`.
    #[command(flatten)]
    pub select: SelectArgs,
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
    /// With --stacks or --json: write each group as soon as nothing in
    /// the trace can change it, the summary last, so that the first groups
    /// of a large file come at once. Groups then come in the order they
    /// complete (by time within a batch).
    #[arg(long, conflicts_with_all = ["folded", "pprof"])]
    pub stream: bool,
    /// With the stitched views: --memory-budget.
    #[command(flatten)]
    pub memory: super::opts::MemoryOpts,
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
    /// Add NS nanoseconds to the timestamps of the file named by the -i
    /// before it, from the second -i on (trace-cmd 3.1.6 applies no offset
    /// to the first or only file, and neither does tracer-cli). Must come
    /// after an -i.
    #[arg(long = "ts-offset", value_name = "NS", allow_hyphen_values = true)]
    pub ts_offset: Vec<i64>,
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
    /// Add the kernel symbols of this file (the format of
    /// /proc/kallsyms) to those of the trace.
    #[arg(long = "kallsyms", value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,
    /// Instead of the events, per task: how long it slept or was
    /// preempted, how long its wakeups took, the time of syscalls,
    /// interrupts and softirqs, the count of every other event, each with
    /// the call tree of its kernel stacks (record with -T).
    #[arg(long = "profile")]
    pub profile: bool,
    /// With --profile: account interrupts and softirqs per CPU
    /// ("Global CPU[N] Events"), not to the task they interrupted.
    #[arg(short = 'G')]
    pub global: bool,
    /// With --profile: time a pair of events,
    /// `[SYS:]START,FIELD[,PID_FIELD]/[SYS:]END,FIELD[,FLAGS]` (flags: P
    /// pinned to its CPU, G global); repeatable.
    #[arg(short = 'H', value_name = "HOOK")]
    pub hooks: Vec<String>,
    /// With --profile: merge the tasks of the same command name.
    #[arg(long = "by-comm")]
    pub by_comm: bool,
    /// Verbose: from level 4 (info; the default of a bare -V) print the
    /// file version, the plugins loaded and the events they take over
    /// before the report. Levels 0-6 or none, crit, err, warn, info,
    /// debug, all (-V4, --verbose=info).
    #[arg(
        short = 'V',
        long = "verbose",
        value_name = "LEVEL",
        num_args = 0..=1,
        default_missing_value = "all"
    )]
    pub verbose: Option<String>,
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
        // `-V FILE`: trace-cmd takes an optional level only attached, so a
        // word after -V that is no level is the file.
        let after_v = self
            .verbose
            .as_ref()
            .filter(|v| verbose_level(Some(v)).is_err() && self.file.is_none());
        let file = after_v.map(PathBuf::from).or_else(|| self.file.clone());
        match (self.input.as_slice(), &file) {
            ([], None) => Ok(vec![PathBuf::from("trace.dat")]),
            ([], Some(f)) => Ok(vec![f.clone()]),
            (i, None) => Ok(i.to_vec()),
            (_, Some(_)) => bail!("give the input files either with -i or after the options"),
        }
    }

    /// The text of the `--kallsyms` file, if one was given.
    pub fn kallsyms_text(&self) -> Result<Option<Vec<u8>>> {
        self.kallsyms
            .as_ref()
            .map(|p| std::fs::read(p).with_context(|| format!("cannot read {}", p.display())))
            .transpose()
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
}

/// Runs `tracer-cli report`.
pub fn run(args: Args, matches: &clap::ArgMatches) -> Result<()> {
    if args.stream && !(args.stacks || args.json) {
        bail!("--stream goes with --stacks or --json");
    }
    if args.stacks || args.json || args.folded || args.pprof.is_some() {
        return run_stacks(&args, matches);
    }
    if args.memory.memory_budget.is_some() {
        bail!("--memory-budget goes with --stacks, --json, --folded or --pprof");
    }
    // A word after -V that is no level is the file, unless there is one.
    if let Some(v) = &args.verbose {
        if args.file.is_some() || !args.input.is_empty() {
            verbose_level(Some(v))?;
        }
    }
    // trace-cmd prints each hook as it reads the options.
    let hooks = args
        .hooks
        .iter()
        .map(|h| Hook::parse(h))
        .collect::<Result<Vec<_>>>()?;
    for h in &hooks {
        writeln!(std::io::stdout(), "{}", h.describe())?;
    }
    let paths = args.paths()?;
    let first_input = matches.indices_of("input").and_then(|mut i| i.next());
    if let Some(at) = matches.index_of("ts_offset") {
        if first_input.is_none_or(|i| i > at) {
            bail!("--ts-offset must come after -i");
        }
    }
    let offsets = ts_offset_per_file(&args, matches, paths.len());
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
        input.ts_offset = offsets[n];
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
    let (mut pos, neg) = args.select.split_filters(matches);
    if args.select.time.is_some() || args.internal_frames {
        bail!("--time and --internal-frames apply to --stacks, --json, --folded and --pprof");
    }
    pos.extend(pid_filter(&args.select, &files[0]));
    let opts = ReportOptions {
        cpus: args.select.cpus()?,
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
        profile: args.profile.then_some(ProfileOptions {
            global: args.global,
            by_comm: args.by_comm,
            hooks,
        }),
        verbose: verbose_level(args.verbose.as_deref()).unwrap_or(6) >= 4,
        kallsyms: args.kallsyms_text()?,
    };
    match report_files(&inputs, &opts, &mut out) {
        Err(e) if is_broken_pipe(&e) => Ok(()),
        Err(e) if e.downcast_ref::<InstanceRecord>().is_some() => {
            // trace-cmd 3.1.6 dies here ("Handle not found?"), exit 255.
            eprintln!("tracer-cli: {e}");
            std::process::exit(255);
        }
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

/// trace-cmd 3.1.6's `--pid` and `--comm` in a plain report: one more
/// `-F` filter, for every event, matching the pids given and those the
/// file's saved cmdlines give the command names, in the event's
/// `common_pid`, `pid` or `next_pid` (an event without such a field does
/// not match on it). A name without a pid is left out, as trace-cmd warns
/// and leaves it out.
fn pid_filter(select: &SelectArgs, file: &TraceFile) -> Option<String> {
    let mut pids: Vec<String> = select.pid.iter().map(i32::to_string).collect();
    let cmdlines = String::from_utf8_lossy(file.cmdlines()).into_owned();
    for comm in &select.comm {
        let found: Vec<&str> = cmdlines
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, c)| c == comm)
            .map(|(pid, _)| pid)
            .collect();
        if found.is_empty() {
            eprintln!("tracer-cli: warning: comm: {comm} not in cmdline list");
        }
        pids.extend(found.iter().map(|p| p.to_string()));
    }
    let terms: Vec<String> = pids
        .iter()
        .map(|p| format!("(common_pid=={p})||(pid=={p})||(next_pid=={p})"))
        .collect();
    (!terms.is_empty()).then(|| format!(".*:{}", terms.join("||")))
}

/// The level of `-V`/`--verbose` (trace-cmd's numbers and names).
fn verbose_level(v: Option<&str>) -> Result<u8> {
    const NAMES: [&str; 7] = ["none", "crit", "err", "warn", "info", "debug", "all"];
    let Some(v) = v else { return Ok(0) };
    // trace-cmd 3.1.6 takes any number (above 6: all) and a word that
    // starts with a level's name ("info2" is info).
    if let Some(n) = NAMES.iter().position(|&n| v.starts_with(n)) {
        return Ok(n as u8);
    }
    match v.parse::<u64>() {
        Ok(n) => Ok(n.min(6) as u8),
        _ => bail!("invalid verbose level {v}"),
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

/// trace-cmd's `--ts-offset`: one given once a second `-i` was read
/// applies to the last file named (the last one given wins); one before
/// that applies to no file, as trace-cmd 3.1.6 has already set up the
/// first file with no offset.
fn ts_offset_per_file(args: &Args, matches: &clap::ArgMatches, files: usize) -> Vec<i64> {
    let inputs_at: Vec<usize> = matches
        .indices_of("input")
        .map_or(Vec::new(), |i| i.collect());
    let at = matches
        .indices_of("ts_offset")
        .map_or(Vec::new(), |i| i.collect());
    let mut offsets = vec![0; files];
    for (&ns, at) in args.ts_offset.iter().zip(at) {
        let n = inputs_at.iter().filter(|&&i| i < at).count();
        if n >= 2 {
            offsets[n - 1] = ns;
        }
    }
    offsets
}

/// `report --stacks|--json|--folded`.
fn run_stacks(args: &Args, matches: &clap::ArgMatches) -> Result<()> {
    args.memory.apply();
    let mode = if args.pprof.is_some() {
        Mode::Pprof
    } else if args.json {
        Mode::Json
    } else if args.folded {
        Mode::Folded
    } else {
        Mode::Text
    };
    let select = args.select.selection(matches)?;
    let path = args.path()?;
    // The reader's errors name the file already.
    let f = TraceFile::open(&path)?;
    let view = View {
        mode,
        nsec: args.nsec,
        symfs: args.symfs.clone(),
        internal: args.internal_frames,
        select,
        stream: args.stream,
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
    let written = if view.stream {
        ustack_printer::stream::write_file(f, view, &mut out)
    } else {
        stacks::write_file(f, view, &mut out)
    };
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
