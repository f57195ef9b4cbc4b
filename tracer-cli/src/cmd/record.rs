//! `tracer-cli record`: set up tracing, read every CPU's ring buffer with
//! splice into per-CPU files, and write a trace.dat file.
//!
//! It follows `trace-cmd record`: the same option letters, per-CPU temp files
//! named `<output>.cpuN`, a flush of every CPU on stop (tracing_on 0, then
//! drain `trace_pipe_raw` including the partial last page), CPUSTAT taken at
//! the end. Every tracefs setting that is changed is put back afterwards
//! (also after Ctrl-C/SIGTERM), and an instance created for `-B` is removed.
//!
//! The work is done by `ustack_record`: this module is the wiring and the
//! policy (progress on the terminal, the summary, signals).
//!
//! PROCMAPS (the memory maps that let user stacks be symbolized later):
//! the command given on the command line runs under ptrace
//! ([`TracedCommand`]), so every process it execs has its maps read at its
//! exec and its exit, however short it lives; `--no-ptrace` polls instead.
//! `-P` pids are someone else's processes: they and their descendants are
//! polled ([`MapsTracker`]), as are the processes seen with user stacks in
//! the data. A private instance follows execs and forks ([`ProcWatch`]):
//! every read of maps gets a trace time, a process is read when it execs
//! (when recording the whole system), and PROCMAPS says which maps were
//! valid when, so each stack is resolved with the maps of its time.

use anyhow::{bail, Result};
use clap::ArgMatches;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use ustack_record::{
    check_output, collect_meta, last_comms, setup_watched, Cmdlines, CpuResult, MapsStore,
    MapsTracker, ProcWatch, Recorder, SpaceReserve, StackPidScanner, TraceStats, TracedCommand,
    UserStacks,
};

use super::opts::{OutputOpts, TraceOpts, Unsupported};
use crate::signals;
use ustack_tracedata::writer::{TraceMeta, WriteSummary};
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
    phases.end("spawn");
    let (mut session, watch) = setup_watched(&config, child_pid)?;
    super::opts::note_leftover(session.leftover_restored);
    session.guard.on_drop_error(signals::report);
    signals::set_restorer(Some(session.guard.restorer()));
    let inst = &session.inst;
    let mut watch = match watch {
        Ok(w) => {
            store.set_stamper(w.stamper());
            Some(w)
        }
        Err(e) => {
            if !args.quiet {
                eprintln!("tracer-cli: warning: cannot follow execs and forks ({e:#}); user stacks of processes that exec may resolve less");
            }
            None
        }
    };
    let everyone = child.is_none() && args.trace.pids.is_empty();
    phases.end("setup");

    // Room for the trace.dat even if the per-CPU files fill the disk
    // (taken once the setup worked, so a typo does not clobber an old file).
    let mut reserve = SpaceReserve::take(&args.out.output)?;
    let mut rec = Recorder::start(inst, &args.out.output)?;
    let cpus = rec.cpus();
    let mut partial: Vec<PathBuf> = rec.temp_files().iter().map(|(_, p)| p.clone()).collect();
    partial.push(args.out.output.clone());
    signals::remove_on_abort(partial);

    let mut roots: Vec<u32> = args.trace.pids.clone();
    if let Some(c) = child.as_ref().filter(|c| !c.is_traced()) {
        if !args.no_ptrace {
            eprintln!("tracer-cli: warning: cannot ptrace the command; polling its maps instead (short-lived processes may lack them)");
        }
        roots.push(c.pid().as_raw() as u32);
    }
    let mut maps = MapsTracker::with_store(roots, store.clone());
    let mut scanner = match args.trace.user_stacks.mode {
        UserStacks::Off => None,
        _ => StackPidScanner::new(&session.fs, inst.page_size(), rec.temp_files())?,
    };
    let show = !args.quiet && std::io::stderr().is_terminal();
    let mut progress = progress::Progress::default();
    let start = Instant::now();
    phases.end("readers");
    inst.set_tracing_on(true)?;
    if let Some(c) = child.as_mut() {
        c.release()?;
    }
    phases.end("start");
    if child.is_none() && !args.quiet {
        eprintln!("tracer-cli: recording; press Ctrl-C to stop");
    }
    let mut tick = 0u64;
    let mut child_status = None;
    // Names of the tasks that ran, before the kernel's cache drops them.
    // Tasks created or renamed while recording are named by the ProcWatch;
    // these reads keep the names of older ones, and a cache of thousands
    // (6.8 and later) turns over in far more than a second: once a second
    // (each read is the whole cache, 80 KB on 6.18) rather than every tick.
    let mut cmdlines = Cmdlines::default();
    loop {
        if tick % 20 == 0 {
            if let Ok(saved) = session.fs.saved_cmdlines() {
                cmdlines.absorb(&saved);
            }
        }
        if tick % 4 == 0 {
            maps.scan_children();
        }
        maps.snapshot();
        if let Some(w) = watch.as_mut() {
            let ev = w.poll();
            maps.on_events(&ev, everyone);
        }
        if let Some(sc) = scanner.as_mut().filter(|_| tick % 2 == 0) {
            for pid in sc.scan() {
                maps.add_seen(pid);
            }
        }
        if signals::stop_requested() {
            break;
        }
        if let Some(st) = child.as_ref().and_then(|c| c.try_wait()) {
            child_status = Some(st);
            break;
        }
        if rec.reader_failed() {
            break; // its error is reported by finish
        }
        if show && tick % 10 == 0 {
            progress.show(inst, &cpus, &rec.bytes(), start.elapsed());
        }
        // The command's exit ends the wait at once (the stop latency).
        match child.as_ref() {
            Some(c) => {
                if let Some(st) = c.wait_timeout(Duration::from_millis(50)) {
                    child_status = Some(st);
                    break;
                }
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
        tick += 1;
    }

    phases.end("recording");
    // A reader that failed (a full disk) ends the recording: the command
    // we started is stopped too, rather than left running untraced.
    if rec.reader_failed() {
        if let Some(c) = &child {
            child_status = c.terminate(Duration::from_secs(2));
        }
    }
    // Stop writing, then let every reader drain its CPU completely.
    let finished = rec.finish();
    phases.end("drain");
    if let Some(sc) = scanner.as_mut() {
        for pid in sc.scan() {
            maps.add_seen(pid);
        }
        maps.refresh_seen();
    }
    if show {
        progress.show(inst, &cpus, &rec.bytes(), start.elapsed());
    }
    // After a failed reader, what the files hold (whole pages) is still
    // written as a readable trace.dat, and the failure reported after.
    let (results, failed) = match finished {
        Ok(r) => (r, None),
        Err(e) => {
            rec.trim_to_pages()?;
            (Vec::new(), Some(e))
        }
    };
    let cpu_files = rec.cpu_files()?;
    if let Ok(t) = session.fs.read("saved_tgids") {
        maps.add_saved_tgids(&String::from_utf8_lossy(&t));
    }
    let lifecycle = watch.map(ProcWatch::finish);
    let procmaps = match &lifecycle {
        Some(ev) => maps.into_timed_maps(ev),
        None => maps.into_maps(),
    };
    let mut meta = collect_meta(&session.fs, inst, Some(&session.events), procmaps)?;
    cmdlines.absorb(&meta.cmdlines);
    for (pid, comm) in lifecycle.as_deref().map(last_comms).unwrap_or_default() {
        cmdlines.set_comm(pid, &comm);
    }
    meta.cmdlines = cmdlines.to_saved_cmdlines();
    phases.end("metadata");
    reserve.release();
    let summary = rec.write(&args.out.output, &meta, &wopts);
    phases.end("write");
    let summary = match (summary, failed) {
        (Ok(s), None) => s,
        (Ok(_), Some(e)) => {
            signals::remove_on_abort(Vec::new());
            drop(rec);
            session.guard.restore()?;
            return Err(e.context(format!(
                "recording stopped; {} holds what was recorded before",
                args.out.output.display()
            )));
        }
        (Err(w), Some(e)) => return Err(e.context(format!("{w:#}"))),
        (Err(w), None) => return Err(w),
    };
    // The file is complete: an abort from now on must not delete it.
    signals::remove_on_abort(Vec::new());
    drop(rec);

    if !args.quiet {
        print_summary(&cpu_files, &results, &args.out.output, &summary, &meta);
        if let Some(c) = child.as_ref().filter(|c| c.is_traced()) {
            print_ptrace_stats(&c.stats());
        }
    }
    // Restore now (rather than in drop) so a failure is reported.
    session.guard.restore()?;
    phases.end("restore");
    phases.print(&results, child.as_ref().map(|c| c.stats()).as_ref());
    signals::set_restorer(None);
    // The trace is kept, but a command that failed (or could not run at
    // all, like strace refused PTRACE_TRACEME under our ptrace) is a
    // failed record.
    if let Some(st) = child_status.filter(|s| *s != 0) {
        let hint = if child.as_ref().is_some_and(|c| c.is_traced()) {
            " (a command that uses ptrace itself, such as strace or gdb, needs --no-ptrace)"
        } else {
            ""
        };
        bail!("the command exited with status {st}{hint}");
    }
    Ok(())
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
