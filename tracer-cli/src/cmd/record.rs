//! `tracer-cli record`: set up tracing, read every CPU's ring buffer with
//! splice into per-CPU files, and write a trace.dat file.
//!
//! It follows `trace-cmd record`: the same option letters, per-CPU temp files
//! named `<output>.cpuN`, a flush of every CPU on stop (tracing_on 0, then
//! drain `trace_pipe_raw` including the partial last page), CPUSTAT taken at
//! the end. Every tracefs setting that is changed is put back afterwards
//! (also after Ctrl-C/SIGTERM), and an instance created for `-B` is removed.
//!
//! The work is done by one `ustack_record::Recording`, the session that
//! `tui --live` runs too: this module is the wiring and the policy
//! (progress on the terminal, the summary, signals, when to stop).
//!
//! PROCMAPS (the memory maps that let user stacks be symbolized later):
//! the command given on the command line runs under ptrace, so every
//! process it execs has its maps read at its exec and its exit, however
//! short it lives; `--no-ptrace` polls instead. `-P` pids are someone
//! else's processes: they and their descendants are polled, as are the
//! processes seen with user stacks in the data. A private instance follows
//! execs and forks: every read of maps gets a trace time, a process is read
//! when it execs (when recording the whole system), and PROCMAPS says which
//! maps were valid when, so each stack is resolved with the maps of its
//! time.

use anyhow::{bail, Result};
use clap::ArgMatches;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;
use ustack_record::{check_output, CpuResult, Launch, Recording, Tick, TraceStats, TICK};

use super::opts::{OutputOpts, TraceOpts, Unsupported};
use crate::signals;
use ustack_tracedata::writer::{TraceMeta, WriteOptions, WriteSummary};
use ustack_tracefs::CpuStats;

mod phases;
mod progress;

/// Arguments of `tracer-cli record`.
#[derive(clap::Args, Debug)]
#[command(
    trailing_var_arg = true,
    after_help = "Examples:
  tracer-cli record -e sched:sched_switch -e syscalls -T -F -- ./myprog
  tracer-cli record --user-stacks sync -e raw_syscalls -F -- make -j2
  tracer-cli record -e sched -f 'prev_pid == 1' -B mine      # Ctrl-C to stop
  tracer-cli record --user-stacks deferred -e raw_syscalls -P 1234 -o app.dat"
)]
pub struct Args {
    #[command(flatten)]
    pub trace: TraceOpts,
    /// trace-cmd options refused by name.
    #[command(flatten)]
    pub unsupported: Unsupported,
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
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `tracer-cli record`; `m` are its matches (for `-e`/`-f` order).
pub fn run(args: Args, m: &ArgMatches) -> Result<()> {
    args.unsupported.check("record")?;
    let config = args.trace.config(m)?;
    let wopts = args.out.write_options()?;
    check_output(&args.out.output)?;
    signals::install()?;
    let mut phases = phases::Phases::start();

    let launch = Launch::spawn(&args.command, !args.no_ptrace)?;
    phases.end("spawn");
    let mut prep = launch.setup(&config)?;
    super::opts::guard_recording(&mut prep);
    if let Some(e) = prep.watch_error().filter(|_| !args.quiet) {
        eprintln!("tracer-cli: warning: cannot follow execs and forks ({e:#}); user stacks of processes that exec may resolve less");
    }
    phases.end("setup");

    // Room for the trace.dat even if the per-CPU files fill the disk
    // (taken once the setup worked, so a typo does not clobber an old file).
    let mut rec = prep.start(&args.out.output, Some(&args.out.output))?;
    let cpus = rec.recorder().cpus();
    let mut partial: Vec<PathBuf> = rec
        .recorder()
        .temp_files()
        .iter()
        .map(|(_, p)| p.clone())
        .collect();
    partial.push(args.out.output.clone());
    signals::remove_on_abort(partial);
    if rec.command().is_some_and(|c| !c.is_traced()) && !args.no_ptrace {
        eprintln!("tracer-cli: warning: cannot ptrace the command; polling its maps instead (short-lived processes may lack them)");
    }
    let show = !args.quiet && std::io::stderr().is_terminal();
    let mut progress = progress::Progress::default();
    let start = Instant::now();
    phases.end("readers");
    rec.go()?;
    phases.end("start");
    if rec.command().is_none() && !args.quiet {
        eprintln!("tracer-cli: recording; press Ctrl-C to stop");
    }
    let mut child_status = record_until_stopped(&mut rec, |rec| {
        if show {
            progress.show(
                &rec.session().inst,
                &cpus,
                &rec.recorder().bytes(),
                start.elapsed(),
            );
        }
    });
    phases.end("recording");
    // Stop writing, then let every reader drain its CPU completely (a
    // failed reader ends the command too).
    let reader_failed = rec.recorder().reader_failed();
    let finished = rec.stop();
    if reader_failed && rec.command().is_some() {
        child_status = rec.command_status();
    }
    phases.end("drain");
    if show {
        progress.show(
            &rec.session().inst,
            &cpus,
            &rec.recorder().bytes(),
            start.elapsed(),
        );
    }
    // After a failed reader, what the files hold (whole pages) is still
    // written as a readable trace.dat, and the failure reported after.
    let (results, failed) = match finished {
        Ok(r) => (r, None),
        Err(e) => {
            rec.recorder().trim_to_pages()?;
            (Vec::new(), Some(e))
        }
    };
    let cpu_files = rec.recorder().cpu_files()?;
    rec.update_meta()?;
    phases.end("metadata");
    let (rec, summary) = write_file(rec, &args.out.output, &wopts, failed)?;
    phases.end("write");

    let stats = rec.command().map(|c| c.stats());
    let traced = rec.command().is_some_and(|c| c.is_traced());
    if !args.quiet {
        let meta = rec.meta().expect("written with it");
        print_summary(&cpu_files, &results, &args.out.output, &summary, meta);
        if let Some(s) = stats.as_ref().filter(|_| traced) {
            print_ptrace_stats(s);
        }
    }
    // Restore now (rather than in drop) so a failure is reported.
    rec.restore()?;
    phases.end("restore");
    phases.print(&results, stats.as_ref());
    signals::set_restorer(None);
    // The trace is kept, but a command that failed (or could not run at
    // all, like strace refused PTRACE_TRACEME under our ptrace) is a
    // failed record.
    if let Some(st) = child_status.filter(|s| *s != 0) {
        let hint = if traced {
            " (a command that uses ptrace itself, such as strace or gdb, needs --no-ptrace)"
        } else {
            ""
        };
        bail!("the command exited with status {st}{hint}");
    }
    Ok(())
}

/// Runs the recording until Ctrl-C, the command's exit or a failed
/// reader; `each_second` is called about once a second. Returns the
/// command's exit status if it exited.
fn record_until_stopped(
    rec: &mut Recording,
    mut each_second: impl FnMut(&Recording),
) -> Option<i32> {
    for n in 0u64.. {
        let tick = rec.tick();
        if signals::stop_requested() {
            return None;
        }
        match tick {
            Tick::CommandExited(st) => return Some(st),
            Tick::ReaderFailed => return None, // its error is reported by stop
            Tick::Running => {}
        }
        if n % 10 == 0 {
            each_second(rec);
        }
        // The command's exit ends the wait at once (the stop latency).
        if let Some(st) = rec.wait(TICK) {
            return Some(st);
        }
    }
    None
}

/// Writes the trace.dat of a stopped recording. After a failed reader
/// (`failed`) the file written holds what was recorded before, tracefs is
/// restored and the reader's error is returned. Once the file is complete,
/// an abort no longer deletes it.
fn write_file(
    mut rec: Recording,
    output: &Path,
    wopts: &WriteOptions,
    failed: Option<anyhow::Error>,
) -> Result<(Recording, WriteSummary)> {
    let summary = rec.write(output, wopts);
    let summary = match (summary, failed) {
        (Ok(s), None) => s,
        (Ok(_), Some(e)) => {
            signals::remove_on_abort(Vec::new());
            rec.restore()?;
            return Err(e.context(format!(
                "recording stopped; {} holds what was recorded before",
                output.display()
            )));
        }
        (Err(w), Some(e)) => return Err(e.context(format!("{w:#}"))),
        (Err(w), None) => return Err(w),
    };
    signals::remove_on_abort(Vec::new());
    Ok((rec, summary))
}

/// The per-CPU counts and the file written.
fn print_summary(
    cpu_files: &[(u32, PathBuf, CpuStats)],
    results: &[CpuResult],
    output: &Path,
    summary: &WriteSummary,
    meta: &TraceMeta,
) {
    for ((cpu, _, s), r) in cpu_files.iter().zip(results) {
        eprintln!(
            "CPU{cpu}: {} events, {} lost, {} bytes ({} pages spliced at the end, {} read partial)",
            s.read_events.unwrap_or(0),
            s.lost(),
            r.bytes,
            r.flushed.spliced_pages,
            r.flushed.read_pages
        );
    }
    // Processes, not PROCMAPS entries: a process has one per timed read,
    // exec and fork.
    let processes: std::collections::BTreeSet<u32> = meta.procmaps.iter().map(|m| m.pid).collect();
    eprintln!(
        "tracer-cli: wrote {} ({} bytes, {} user-space memory maps)",
        output.display(),
        summary.file_size,
        processes.len()
    );
}

/// What the ptrace thread did for the command.
fn print_ptrace_stats(t: &TraceStats) {
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
