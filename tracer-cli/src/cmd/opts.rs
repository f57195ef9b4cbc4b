//! Groups of command-line options shared by several subcommands.

use anyhow::{bail, Result};
use clap::ArgMatches;
use std::path::PathBuf;
use ustack_record::{TraceConfig, UserStacks};
use ustack_tracedata::writer::WriteOptions;
use ustack_tracefs::{Instance, Tracefs};

/// `-B`/`-a`/`-t` instance selection of `stop`, `extract` and `reset`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct InstanceSelection {
    /// Use this instance (repeatable); the top instance then only with -t.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instances: Vec<String>,
    /// Use all instances; the top instance then only with -t.
    #[arg(short = 'a')]
    pub all: bool,
    /// Use the top instance too.
    #[arg(short = 't')]
    pub top: bool,
}

impl InstanceSelection {
    /// The selected instances, trace-cmd style: the top instance when none
    /// of -B/-a is given, otherwise only with -t.
    pub fn select(&self, fs: &Tracefs) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        if (self.instances.is_empty() && !self.all) || self.top {
            out.push(fs.top());
        }
        if self.all {
            for n in fs.instances()? {
                out.push(fs.instance(&n)?);
            }
        } else {
            for n in &self.instances {
                out.push(fs.instance(n)?);
            }
        }
        Ok(out)
    }
}

/// `--memory-budget` of the stitched views (`report --stacks` and the
/// forms beside it, `tui`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct MemoryOpts {
    /// Memory the stitched index may take, in MiB (at least 64): its
    /// arrays stay in memory up to about this much less 48 MiB (what
    /// reading the file, libtraceevent and sorting take) and go to
    /// temporary files past it. By default they go there at 1 MiB each,
    /// for the least memory (about 30-50 MiB whatever the trace's size); a
    /// budget that holds the whole index builds it faster.
    #[arg(long = "memory-budget", value_name = "MIB", value_parser = MemoryOpts::parse_mib)]
    pub memory_budget: Option<u64>,
}

impl MemoryOpts {
    /// The smallest budget: what the process takes besides the index.
    const MIN_MIB: u64 = 64;
    /// What reading the file, libtraceevent and sorting take, in MiB.
    const RESERVED_MIB: u64 = 48;

    fn parse_mib(s: &str) -> std::result::Result<u64, String> {
        match s.parse::<u64>() {
            Ok(n) if n >= Self::MIN_MIB => Ok(n),
            Ok(_) => Err(format!("the index needs at least {} MiB", Self::MIN_MIB)),
            Err(_) => Err("not a number of MiB".into()),
        }
    }

    /// Sets the budget of the index's arrays for this process.
    pub fn apply(&self) {
        if let Some(mib) = self.memory_budget {
            let arrays = mib.saturating_sub(Self::RESERVED_MIB) << 20;
            ustack_tracedata::spill::set_memory_budget(
                usize::try_from(arrays).unwrap_or(usize::MAX),
            );
        }
    }
}

/// The trace.dat output options of `record` and `extract`.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputOpts {
    /// Output file.
    #[arg(short = 'o', value_name = "FILE", default_value = "trace.dat")]
    pub output: PathBuf,
    /// trace.dat version to write (6 or 7).
    #[arg(long = "file-version", default_value_t = 7, value_parser = clap::value_parser!(u32).range(6..=7))]
    pub file_version: u32,
    /// Compression of a version 7 file: none or zstd (default zstd; version 6 is never compressed).
    #[arg(long = "compression", value_name = "none|zstd")]
    pub compression: Option<String>,
}

impl OutputOpts {
    /// The writer options these flags select.
    pub fn write_options(&self) -> Result<WriteOptions> {
        ustack_record::write_options(self.file_version, self.compression.as_deref())
    }
}

/// Tracing options shared by `record` and `start`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TraceOpts {
    /// Event to enable: SYSTEM, SYSTEM:EVENT, EVENT or `all` (globs allowed). Repeatable.
    #[arg(short = 'e', value_name = "SYSTEM[:EVENT]")]
    pub events: Vec<String>,
    /// Filter for the events of the preceding -e (kernel filter syntax).
    #[arg(short = 'f', value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Use this instance; one that does not exist is created (and removed
    /// again at the end, except by start, which leaves it for extract).
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instance: Option<String>,
    /// Ring-buffer size per CPU in KiB.
    #[arg(short = 'b', value_name = "KB")]
    pub buffer_kb: Option<u64>,
    /// Record a kernel stack after every event (the `stacktrace` option).
    #[arg(short = 'T')]
    pub kernel_stacks: bool,
    /// Record user stacks: off, sync (`userstacktrace`) or deferred
    /// (`userstacktrace_delay`). `deferred,SIZE` also copies SIZE bytes of
    /// the user stack (e.g. `deferred,8k`) per kernel entry, for unwinding
    /// with the binaries' unwind tables: code without frame pointers needs
    /// its whole stack; by default 128 bytes, which make stacks of
    /// frame-pointer code exact; `deferred,0` copies none.
    #[arg(long = "user-stacks", value_name = "off|sync|deferred[,SIZE]", default_value = "off", value_parser = parse_user_stacks)]
    pub user_stacks: UserStacksArg,
    /// Tracer to use (e.g. `user_unwind`); by default the current one is kept.
    #[arg(short = 'p', value_name = "TRACER")]
    pub tracer: Option<String>,
    /// Only trace these pids (set_event_pid). Repeatable.
    #[arg(short = 'P', value_name = "PID")]
    pub pids: Vec<u32>,
    /// Only trace the command given on the command line (and its children).
    #[arg(short = 'F')]
    pub filter_command: bool,
    /// With -P, also trace the children the pids fork (event-fork option).
    #[arg(short = 'c')]
    pub children: bool,
    /// Trace clock (e.g. local, global, mono).
    #[arg(short = 'C', value_name = "CLOCK")]
    pub clock: Option<String>,
    /// Set a tracefs option: NAME to enable it, noNAME to disable it. Repeatable.
    #[arg(short = 'O', value_name = "OPTION")]
    pub options: Vec<String>,
}

/// trace-cmd record/start options that tracer-cli does not have: accepted
/// by the parser only to be refused by name (so they are never taken for
/// the command to run).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Unsupported {
    #[arg(short = 'a', hide = true)]
    all_instances: bool,
    #[arg(short = 'v', hide = true)]
    invert: bool,
    #[arg(short = 'M', hide = true)]
    cpumask: Option<String>,
    #[arg(short = 's', hide = true)]
    sleep_interval: Option<String>,
    #[arg(short = 'm', hide = true)]
    max_pages: Option<String>,
    #[arg(short = 'k', hide = true)]
    keep: bool,
    #[arg(short = 'i', hide = true)]
    ignore_missing: bool,
    #[arg(short = 'R', hide = true)]
    trigger: Option<String>,
    #[arg(short = 'd', hide = true)]
    no_function_filter: bool,
    #[arg(short = 'D', hide = true)]
    no_function_filter_all: bool,
    #[arg(short = 'r', hide = true)]
    priority: Option<String>,
    #[arg(long = "date", hide = true)]
    date: bool,
    #[arg(long = "max-graph-depth", hide = true)]
    max_graph_depth: Option<String>,
}

impl Unsupported {
    /// An error naming the first trace-cmd option given that tracer-cli
    /// does not have.
    pub fn check(&self, subcommand: &str) -> Result<()> {
        let given = [
            ("-a", self.all_instances),
            ("-v", self.invert),
            ("-M", self.cpumask.is_some()),
            ("-s", self.sleep_interval.is_some()),
            ("-m", self.max_pages.is_some()),
            ("-k", self.keep),
            ("-i", self.ignore_missing),
            ("-R", self.trigger.is_some()),
            ("-d", self.no_function_filter),
            ("-D", self.no_function_filter_all),
            ("-r", self.priority.is_some()),
            ("--date", self.date),
            ("--max-graph-depth", self.max_graph_depth.is_some()),
        ];
        match given.iter().find(|(_, on)| *on) {
            Some((opt, _)) => bail!(
                "{subcommand} {opt}: trace-cmd has this option, tracer-cli does not (see tracer-cli {subcommand} --help)"
            ),
            None => Ok(()),
        }
    }
}

impl TraceOpts {
    /// The session these options describe. `m` are the subcommand's
    /// matches: they give the positions of `-e` and `-f` on the command
    /// line, which pair each filter with the event before it (the parsed
    /// struct keeps the values of each option, not their order).
    pub fn config(&self, m: &ArgMatches) -> Result<TraceConfig> {
        Ok(TraceConfig {
            events: pair_filters(&self.events, &self.filters, m)?,
            instance: self.instance.clone(),
            buffer_kb: self.buffer_kb,
            kernel_stacks: self.kernel_stacks,
            user_stacks: self.user_stacks.mode,
            snapshot_bytes: self.user_stacks.snapshot,
            tracer: self.tracer.clone(),
            pids: self.pids.clone(),
            filter_command: self.filter_command,
            children: self.children,
            clock: self.clock.clone(),
            options: self.options.clone(),
        })
    }
}

/// Readies a recording session's restoring (`record`, `tui --live`): says
/// what a killed run had left, reports the errors of the guard's drop, and
/// lets a signal restore tracefs before the process goes.
pub fn guard_recording(prep: &mut ustack_record::Prepared) {
    note_leftover(prep.session().leftover_restored);
    let guard = &mut prep.session_mut().guard;
    guard.on_drop_error(crate::signals::report);
    crate::signals::set_restorer(Some(guard.restorer()));
}

/// Says so when the setup first restored what a killed run had left.
pub fn note_leftover(n: usize) {
    if n > 0 {
        eprintln!("tracer-cli: restored {n} settings left by a tracer-cli that was killed");
    }
}

/// Pairs each `-e` with the `-f` filters that follow it (two filters for
/// one event must both hold).
fn pair_filters(
    events: &[String],
    filters: &[String],
    m: &ArgMatches,
) -> Result<Vec<(String, Option<String>)>> {
    let idx =
        |id: &str| -> Vec<usize> { m.indices_of(id).map(|i| i.collect()).unwrap_or_default() };
    let (ev_idx, f_idx) = (idx("events"), idx("filters"));
    let mut out: Vec<(String, Option<String>)> = events.iter().map(|e| (e.clone(), None)).collect();
    for (fi, f) in f_idx.iter().zip(filters) {
        let Some(owner) = ev_idx.iter().rposition(|ei| ei < fi) else {
            bail!("-f {f}: a filter must follow the -e it applies to");
        };
        let slot = &mut out[owner].1;
        *slot = Some(match slot.take() {
            None => f.clone(),
            Some(prev) => format!("({prev}) && ({f})"),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args as _, FromArgMatches as _};

    #[derive(clap::Args)]
    #[command(trailing_var_arg = true)]
    struct Args {
        #[command(flatten)]
        trace: TraceOpts,
        command: Vec<String>,
    }

    fn parse(args: &[&str]) -> Result<Vec<(String, Option<String>)>> {
        let m = Args::augment_args(clap::Command::new("record"))
            .no_binary_name(true)
            .try_get_matches_from(args)
            .unwrap();
        let a = Args::from_arg_matches(&m).unwrap();
        Ok(a.trace.config(&m)?.events)
    }

    #[test]
    fn filters_go_to_the_preceding_event() {
        let got = parse(&[
            "-e",
            "sched:sched_switch",
            "-T",
            "-e",
            "syscalls",
            "-f",
            "common_pid == 1",
            "-e",
            "irq",
            "-f",
            "irq > 3",
            "-f",
            "irq < 9",
            "--",
            "ls",
            "-e",
            "x",
        ])
        .unwrap();
        assert_eq!(
            got,
            vec![
                ("sched:sched_switch".to_string(), None),
                ("syscalls".to_string(), Some("common_pid == 1".to_string())),
                (
                    "irq".to_string(),
                    Some("(irq > 3) && (irq < 9)".to_string())
                ),
            ]
        );
    }

    #[test]
    fn a_filter_before_any_event_is_an_error() {
        let err = parse(&["-f", "x == 1", "-e", "sched"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-f x == 1: a filter must follow the -e it applies to"
        );
    }
}

/// The value of `--user-stacks`: the mode and, for `deferred,SIZE`, the
/// stack snapshot size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserStacksArg {
    /// Which user stacks.
    pub mode: UserStacks,
    /// Bytes of stack snapshot asked for (`None`: the default).
    pub snapshot: Option<u64>,
}

/// Largest stack snapshot the kernel copies per kernel entry.
const MAX_SNAPSHOT: u64 = 65536;

/// Parses `off`, `sync`, `deferred` or `deferred,SIZE` (SIZE in bytes, or
/// with a `k` suffix in KiB, at most 64k).
fn parse_user_stacks(s: &str) -> std::result::Result<UserStacksArg, String> {
    let (mode, size) = match s.split_once(',') {
        Some((m, size)) => (m, Some(size)),
        None => (s, None),
    };
    let mode = match mode {
        "off" => UserStacks::Off,
        "sync" => UserStacks::Sync,
        "deferred" => UserStacks::Deferred,
        _ => return Err(format!("{mode:?} is not off, sync or deferred[,SIZE]")),
    };
    let snapshot = match size {
        None => None,
        Some(_) if mode != UserStacks::Deferred => {
            return Err("a stack snapshot size goes with deferred only".into())
        }
        Some(size) => {
            let (num, unit) = match size.strip_suffix(['k', 'K']) {
                Some(n) => (n, 1024),
                None => (size, 1),
            };
            let n = num
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(unit))
                .filter(|&n| n <= MAX_SNAPSHOT)
                .ok_or_else(|| {
                    format!("stack snapshot size {size:?}: bytes (or KiB with k) up to 64k")
                })?;
            Some(n)
        }
    };
    Ok(UserStacksArg { mode, snapshot })
}

#[cfg(test)]
mod user_stacks_tests {
    use super::*;

    #[test]
    fn user_stacks_values() {
        let p = |s| parse_user_stacks(s);
        assert_eq!(p("off").unwrap().mode, UserStacks::Off);
        assert_eq!(
            p("sync").unwrap(),
            UserStacksArg {
                mode: UserStacks::Sync,
                snapshot: None
            }
        );
        assert_eq!(
            p("deferred").unwrap(),
            UserStacksArg {
                mode: UserStacks::Deferred,
                snapshot: None
            }
        );
        assert_eq!(p("deferred,8192").unwrap().snapshot, Some(8192));
        assert_eq!(p("deferred,8k").unwrap().snapshot, Some(8192));
        assert_eq!(p("deferred,0").unwrap().snapshot, Some(0));
        assert_eq!(p("deferred,64k").unwrap().snapshot, Some(65536));
        assert!(p("deferred,65k").is_err());
        assert!(p("deferred,x").is_err());
        assert!(p("sync,64").is_err());
        assert!(p("dwarf").is_err());
    }
}
