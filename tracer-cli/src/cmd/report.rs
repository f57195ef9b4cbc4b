//! `tracer-cli report`: prints a trace.dat file like `trace-cmd report`
//! (`ustack_printer::report`), or with `--stacks`, `--json`, `--folded` or
//! `--pprof FILE` the stitched view (`ustack_printer::stacks`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use ustack_printer::report::{report, ReportOptions};
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
    /// Input file.
    #[arg(short = 'i', long = "input", default_value = "trace.dat")]
    pub input: PathBuf,
    /// Only show events of these CPUs (repeatable; lists like `0,2-3` work).
    #[arg(long = "cpu", value_name = "CPUS")]
    pub cpu: Vec<String>,
    /// Event filter in trace-cmd (libtraceevent) syntax, e.g. `sched_switch`,
    /// `sched/sched_switch` or `sched_switch: prev_pid == 1` (repeatable).
    #[arg(short = 'F', long = "filter", value_name = "FILTER")]
    pub filter: Vec<String>,
    /// Invert the `-F` filters: hide the events they match.
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
    /// Write the stitched stacks to FILE as a pprof profile (profile.proto,
    /// gzip) for go tool pprof, speedscope, Pyroscope or Parca.
    #[arg(long, value_name = "FILE")]
    pub pprof: Option<PathBuf>,
}

impl Args {
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
pub fn run(args: Args) -> Result<()> {
    if args.stacks || args.json || args.folded || args.pprof.is_some() {
        return run_stacks(&args);
    }
    let opts = ReportOptions {
        cpus: args.cpus()?,
        filters: args.filter.clone(),
        invert: args.invert,
        nsec: args.nsec,
        latency: args.latency,
        stat: args.stat,
        uname: args.uname,
        version: args.version,
    };
    let file = TraceFile::open(&args.input)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match report(&file, &opts, &mut out) {
        Err(e) if is_broken_pipe(&e) => Ok(()),
        r => r,
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// `report --stacks|--json|--folded`.
fn run_stacks(args: &Args) -> Result<()> {
    let mode = if args.pprof.is_some() {
        Mode::Pprof
    } else if args.json {
        Mode::Json
    } else if args.folded {
        Mode::Folded
    } else {
        Mode::Text
    };
    if !args.cpu.is_empty() || !args.filter.is_empty() {
        bail!("--cpu and -F do not apply to --stacks, --json, --folded or --pprof");
    }
    let f = TraceFile::open(&args.input)
        .with_context(|| format!("cannot open {}", args.input.display()))?;
    let view = View {
        mode,
        nsec: args.nsec,
        symfs: args.symfs.clone(),
    };
    if let Some(path) = &args.pprof {
        let mut out = std::fs::File::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let w = stacks::write_file(&f, &view, &mut out)
            .with_context(|| format!("cannot write {}", path.display()))?;
        warn_cut_short(w);
        return Ok(());
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
        Err(e) => Err(e.context("cannot write the report")),
        Ok(w) => {
            warn_cut_short(w);
            Ok(())
        }
    }
}

/// The data read before an error was shown; say it is partial.
fn warn_cut_short(w: stacks::Written) {
    if let Some(e) = w.cut_short {
        eprintln!("tracer-cli: warning: trace data cut short: {e}");
    }
}
