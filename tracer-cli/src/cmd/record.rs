//! `tracer-cli record`: set up tracing, read every CPU's ring buffer with
//! splice into per-CPU files, and write a trace.dat file.
//!
//! It follows `trace-cmd record`: the same option letters, per-CPU temp files
//! named `<output>.cpuN`, a flush of every CPU on stop (tracing_on 0, then
//! drain `trace_pipe_raw` including the partial last page), CPUSTAT taken at
//! the end. Every tracefs setting that is changed is put back afterwards
//! (also after Ctrl-C/SIGTERM), and an instance created for `-B` is removed.
//!
//! The setup part ([`TraceOpts`], [`setup`]) is shared with `start`, and the
//! metadata/writing part ([`collect_meta`], [`write_dat`]) with `extract`.
//!
//! PROCMAPS (the memory maps that let user stacks be symbolized later):
//! the command given on the command line runs under ptrace
//! ([`TracedCommand`], module `tracee`), so every process it execs has its
//! maps read at its exec and its exit, however short it lives; `--no-ptrace`
//! polls instead. `-P` pids are someone else's processes: they and their
//! descendants are polled ([`MapsTracker`]), as are the processes seen with
//! user stacks in the data. All snapshots of a pid are merged into its one
//! PROCMAPS entry ([`merge_maps`](maps::merge_maps): union, the newest wins on overlap).

use anyhow::{Context, Result};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};
use ustack_tracefs::{signals, CpuStats};

use super::opts::OutputOpts;

mod maps;
mod output;
mod readers;
mod session;
mod tracee;

pub(crate) use maps::{MapsStore, MapsTracker, StackPidScanner};
pub(crate) use output::{buffer_data, collect_meta, write_dat, write_options, TempFiles};
pub(crate) use readers::reader_thread;
use readers::{Progress, Readers};
pub(crate) use session::{pair_filters_of, setup, HeldChild, Session};
pub use session::{TraceOpts, UserStacks};
pub(crate) use tracee::TracedCommand;

/// Arguments of `tracer-cli record`.
#[derive(clap::Args, Debug)]
#[command(trailing_var_arg = true)]
pub struct Args {
    #[command(flatten)]
    pub trace: TraceOpts,
    /// Where and how to write.
    #[command(flatten)]
    pub out: OutputOpts,
    /// Do not show live progress.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Do not ptrace the command: poll its processes' /proc/PID/maps
    /// instead (misses short-lived ones). For a command that must not be
    /// traced, e.g. one that runs under a debugger or uses PTRACE_TRACEME.
    #[arg(long = "no-ptrace")]
    pub no_ptrace: bool,
    /// Command to run and trace; recording stops when it exits.
    #[arg(allow_hyphen_values = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `tracer-cli record`.
pub fn run(args: Args) -> Result<()> {
    let pairs = pair_filters_of::<Args>(&args.trace, "record")?;
    let wopts = args.out.write_options()?;
    signals::install()?;

    // The command's maps are snapshotted at its execs and exits by the
    // ptrace thread, and polled; -P pids are only polled.
    let store = MapsStore::default();
    let mut child = if args.command.is_empty() {
        None
    } else {
        Some(TracedCommand::spawn(
            &args.command,
            store.clone(),
            !args.no_ptrace,
        )?)
    };
    let child_pid = child.as_ref().map(|c| c.pid().as_raw() as u32);
    let session = setup(&args.trace, &pairs, child_pid)?;
    signals::set_restorer(Some(session.guard.restorer()));
    let inst = &session.inst;

    let cpus = inst.cpus()?;
    let (temps, files) = TempFiles::create(&args.out.output, &cpus)?;
    let mut partial: Vec<PathBuf> = temps.0.iter().map(|(_, p)| p.clone()).collect();
    partial.push(args.out.output.clone());
    signals::remove_on_abort(partial);
    let counters: Vec<Arc<AtomicU64>> = cpus.iter().map(|_| Arc::new(AtomicU64::new(0))).collect();
    let mut readers = Readers {
        inst: inst.clone(),
        flush: Arc::new(AtomicBool::new(false)),
        threads: Vec::new(),
    };
    for ((&cpu, file), ctr) in cpus.iter().zip(files).zip(&counters) {
        let reader = inst.cpu_reader(cpu)?;
        let (flush, ctr) = (readers.flush.clone(), ctr.clone());
        readers.threads.push(
            std::thread::Builder::new()
                .name(format!("record-cpu{cpu}"))
                .spawn(move || reader_thread(reader, file, flush, ctr))
                .context("cannot start a reader thread")?,
        );
    }

    let mut roots: Vec<u32> = args.trace.pids.clone();
    if let Some(c) = child.as_ref().filter(|c| !c.is_traced()) {
        if !args.no_ptrace {
            eprintln!("tracer-cli: warning: cannot ptrace the command; polling its maps instead (short-lived processes may lack them)");
        }
        roots.push(c.pid().as_raw() as u32);
    }
    let mut maps = MapsTracker::with_store(roots, store);
    let mut scanner = if args.trace.user_stacks == UserStacks::Off {
        None
    } else {
        StackPidScanner::new(&session.fs, inst.page_size(), &temps.0)?
    };
    let show = !args.quiet && std::io::stderr().is_terminal();
    let mut progress = Progress { lines: 0 };
    let start = Instant::now();
    session.inst.set_tracing_on(true)?;
    if let Some(c) = child.as_mut() {
        c.release()?;
    }
    if child.is_none() && !args.quiet {
        eprintln!("tracer-cli: recording; press Ctrl-C to stop");
    }
    let mut tick = 0u64;
    let mut child_status = None;
    loop {
        if tick % 4 == 0 {
            maps.scan_children();
        }
        maps.snapshot();
        if let Some(sc) = scanner.as_mut().filter(|_| tick % 2 == 0) {
            for pid in sc.scan() {
                maps.add_seen(pid);
            }
        }
        if signals::stop_requested() {
            break;
        }
        if let Some(c) = &child {
            if let Some(st) = c.try_wait() {
                child_status = Some(st);
                break;
            }
        }
        if readers.threads.iter().any(|t| t.is_finished()) {
            break; // a reader failed; its error is reported below
        }
        if show && tick % 10 == 0 {
            progress.show(inst, &cpus, &counters, start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
        tick += 1;
    }

    // Stop writing, then let every reader drain its CPU completely.
    let (results, first_err) = readers.finish();
    if let Some(sc) = scanner.as_mut() {
        for pid in sc.scan() {
            maps.add_seen(pid);
        }
        maps.refresh_seen();
    }
    if show {
        progress.show(inst, &cpus, &counters, start.elapsed());
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let stats: Vec<CpuStats> = cpus
        .iter()
        .map(|&c| inst.cpu_stats(c))
        .collect::<Result<_, _>>()?;
    let meta = collect_meta(&session.fs, inst, Some(&session.events), maps.into_maps())?;
    let cpu_files: Vec<(u32, PathBuf, CpuStats)> = temps
        .0
        .iter()
        .zip(stats.iter())
        .map(|((cpu, p), s)| (*cpu, p.clone(), s.clone()))
        .collect();
    let summary = write_dat(&args.out.output, &meta, inst, &cpu_files, &wopts)?;
    // The file is complete: an abort from now on must not delete it.
    signals::remove_on_abort(Vec::new());
    drop(temps);

    if !args.quiet {
        for ((s, r), cpu) in stats.iter().zip(&results).zip(&cpus) {
            eprintln!(
                "CPU{cpu}: {} events, {} lost, {} bytes ({} pages spliced at the end, {} read partial)",
                s.read_events.unwrap_or(0),
                s.lost(),
                r.bytes,
                r.flushed.spliced_pages,
                r.flushed.read_pages
            );
        }
        eprintln!(
            "tracer-cli: wrote {} ({} bytes, {} user-space memory maps)",
            args.out.output.display(),
            summary.file_size,
            meta.procmaps.len()
        );
        if let Some(c) = child.as_ref().filter(|c| c.is_traced()) {
            let t = c.stats();
            eprintln!(
                "tracer-cli: command under ptrace: {} processes, {} threads, {} execs, {} exits, {} signals, {} stops, {} maps snapshots in {:.1} ms",
                t.processes,
                t.threads,
                t.execs,
                t.exits,
                t.signals,
                t.stops,
                t.snapshots,
                t.snapshot_time.as_secs_f64() * 1e3
            );
        }
        if let Some(st) = child_status.filter(|s| *s != 0) {
            eprintln!("tracer-cli: the command exited with status {st}");
        }
    }
    // Restore now (rather than in drop) so a failure is reported.
    session.guard.restore()?;
    signals::set_restorer(None);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::session::pair_filters_in;
    use super::*;
    use clap::Args as _;

    fn parse(args: &[&str]) -> Result<Vec<(String, Option<String>)>> {
        let argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let m = Args::augment_args(clap::Command::new("record"))
            .no_binary_name(true)
            .try_get_matches_from(&argv[2..])
            .unwrap();
        let a = <Args as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
        pair_filters_in(
            &a.trace,
            &argv,
            "record",
            Args::augment_args(clap::Command::new("record")),
        )
    }

    #[test]
    fn filters_go_to_the_preceding_event() {
        let got = parse(&[
            "tracer-cli",
            "record",
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
        let err = parse(&["tracer-cli", "record", "-f", "x == 1", "-e", "sched"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-f x == 1: a filter must follow the -e it applies to"
        );
    }
}
