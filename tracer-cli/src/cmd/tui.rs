//! `tracer-cli tui`: browse a trace.dat file interactively, events grouped
//! by cookie with their symbolized stacks.
//!
//! When stdout is not a terminal, the same data is printed as
//! `report --stacks` text instead, so scripts and pipes still get it.
//!
//! `--live` records instead of reading a file (the `record` options, and
//! optionally a command) with the session `record` runs
//! (`ustack_record::Recording`): the same readers, and the same maps and
//! names gathered for symbolization (the ptrace'd command, the exec and
//! fork watch, the processes with stacks in the data, `saved_tgids`, the
//! merged command names). About once a second a snapshot trace.dat is
//! written from it and the view is refreshed, keeping the selection,
//! filters and sort. On quit, tracing is restored and, with `-o`, the full
//! trace is saved.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::ArgMatches;
use ustack_printer::select::Selection;
use ustack_record::{write_options, Launch, Recording, Tick, TraceConfig, TICK};
use ustack_tracedata::compress::Compression;
use ustack_tracedata::writer::{FileVersion, WriteOptions};

use super::opts::TraceOpts;
use crate::signals;

/// Arguments of `tracer-cli tui`.
#[derive(clap::Args, Debug)]
#[command(
    // -F and -v are record's here (--live); the filters are --filter and
    // --invert.
    mut_arg("filter", |a| a.short(None)),
    mut_arg("invert", |a| a.short(None).long("invert")),
    trailing_var_arg = true,
    after_help = "Examples:
  tracer-cli tui -i trace.dat
  tracer-cli tui -i trace.dat --filter sched_switch --cpu 0 --comm make --time 10.5,11
  tracer-cli tui --live -e sched --user-stacks sync -F -o saved.dat -- ./myprog"
)]
pub struct Args {
    /// Input file.
    #[arg(short = 'i', long = "input", default_value = "trace.dat")]
    pub input: PathBuf,
    /// Buffer (instance) of the file to show; by default the first one
    /// with data.
    #[arg(long = "buffer", value_name = "NAME")]
    pub buffer: Option<String>,
    /// Also symbolize through /proc/PID/maps of running processes (for
    /// traces taken on this machine without saved process maps).
    #[arg(long = "proc-maps")]
    pub proc_maps: bool,
    /// Look the files that user stacks map up under this directory (the
    /// root of the machine or VM that recorded the trace), as perf's --symfs.
    #[arg(long = "symfs", value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// Record live with the `record` options below and refresh the view as
    /// data arrives.
    #[arg(long = "live")]
    pub live: bool,
    /// Tracing options (with --live).
    #[command(flatten)]
    pub trace: TraceOpts,
    /// What to show: --filter (trace-cmd -F syntax; negated after
    /// --invert), --cpu, --pid, --comm, --time, as report --stacks.
    #[command(flatten)]
    pub select: super::select::SelectArgs,
    /// With --live: save the whole recording to this file on quit.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// With --live: command to run and trace (its output goes to
    /// `<tmp>/command.log`).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `tracer-cli tui`; `m` are its matches (for `-e`/`-f` order).
pub fn run(args: Args, m: &ArgMatches) -> Result<()> {
    let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let select = args.select.selection(m)?;
    if args.live {
        if !tty {
            anyhow::bail!("tui --live needs a terminal");
        }
        if let Some(out) = &args.output {
            ustack_record::check_output(out)?;
        }
        return run_live(&args, &args.trace.config(m)?, select);
    }
    if !args.command.is_empty() || !args.trace.events.is_empty() {
        anyhow::bail!("recording options and a command need --live");
    }
    if !tty {
        let f = ustack_tracedata::TraceFile::open(&args.input)?;
        let view = ustack_printer::stacks::View {
            symfs: args.symfs,
            select,
            ..ustack_printer::stacks::View::text()
        };
        return super::report::print_stacks(&f, &view);
    }
    ustack_tui::run(&ustack_tui::Options {
        input: args.input,
        buffer: args.buffer,
        live_maps: args.proc_maps,
        symfs: args.symfs,
        select,
    })?;
    Ok(())
}

/// The live recording behind the TUI: a [`Recording`], as `record` runs
/// it, ticked on a thread of its own (so that processes are read at their
/// exec whatever the view does) while the view writes a snapshot of it
/// about once a second.
struct LiveRec {
    shared: Arc<Mutex<Shared>>,
    dir: PathBuf,
    snaps: u64,
    last_bytes: u64,
    /// The snapshot after the stop was written.
    stopped_shown: bool,
    last_snap: Option<PathBuf>,
    start: Instant,
}

/// What the ticking thread and the view share.
struct Shared {
    rec: Recording,
    error: Option<String>,
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    // A panic on the other side leaves the recording usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// Turns tracing off and drains every CPU (once).
    fn stop(&mut self) {
        if self.rec.is_stopped() {
            return;
        }
        if let Err(e) = self.rec.stop() {
            self.error.get_or_insert(format!("{e:#}"));
        }
    }

    /// Writes the recording so far to `path`, with the maps and names
    /// gathered so far.
    fn write(&mut self, path: &Path, opts: &WriteOptions) -> Result<()> {
        self.rec.update_meta()?;
        self.rec.write(path, opts)?;
        Ok(())
    }

    fn status(&self, start: Instant) -> String {
        let state = if self.rec.is_stopped() {
            match self.rec.command_status() {
                Some(s) => format!("stopped: the command exited with status {s}"),
                None => "stopped".to_string(),
            }
        } else {
            "recording".to_string()
        };
        let mut s = format!(
            "live: {state}, {:.0}s, {} KiB",
            start.elapsed().as_secs_f64(),
            self.rec.recorder().total_bytes() >> 10
        );
        if let Some(e) = &self.error {
            s.push_str(&format!(" | error: {e}"));
        }
        s
    }
}

/// Ticks the recording every [`TICK`] until it stops: at the command's
/// exit, a failed reader or a signal, or when `quit` is set.
fn tick_until_stopped(shared: &Mutex<Shared>, quit: &AtomicBool) {
    while !quit.load(Ordering::SeqCst) {
        {
            let mut s = lock(shared);
            if s.rec.is_stopped() {
                return;
            }
            let tick = s.rec.tick();
            if tick != Tick::Running || signals::stop_requested() {
                s.stop();
                return;
            }
        }
        std::thread::sleep(TICK);
    }
}

impl LiveRec {
    /// Writes the next snapshot; the previous one is unlinked (the TUI may
    /// still map it, which unlinking keeps valid).
    fn snapshot(&mut self, s: &mut Shared) -> Result<PathBuf> {
        let path = self.dir.join(format!("live-{}.dat", self.snaps));
        self.snaps += 1;
        let opts = WriteOptions {
            version: FileVersion::V7,
            compression: Compression::None,
        };
        s.write(&path, &opts)?;
        if let Some(old) = self.last_snap.replace(path.clone()) {
            let _ = std::fs::remove_file(old);
        }
        Ok(path)
    }
}

impl ustack_tui::Live for LiveRec {
    fn poll(&mut self) -> (Option<PathBuf>, Option<String>) {
        let shared = self.shared.clone();
        let mut s = lock(&shared);
        let mut changed = false;
        if s.rec.is_stopped() && !self.stopped_shown {
            self.stopped_shown = true;
            changed = true;
        }
        let bytes = s.rec.recorder().total_bytes();
        if bytes != self.last_bytes {
            self.last_bytes = bytes;
            changed = true;
        }
        let snap = if changed {
            match self.snapshot(&mut s) {
                Ok(p) => Some(p),
                Err(e) => {
                    s.error = Some(format!("{e:#}"));
                    None
                }
            }
        } else {
            None
        };
        (snap, Some(s.status(self.start)))
    }
}

fn run_live(args: &Args, config: &TraceConfig, select: Selection) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("tracer-cli-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let res = live_in(args, config, &dir, select);
    let _ = std::fs::remove_dir_all(&dir);
    res
}

fn live_in(args: &Args, config: &TraceConfig, dir: &Path, select: Selection) -> Result<()> {
    signals::install()?;
    // The command's output would garble the screen: send it to a log.
    let mut argv = Vec::new();
    if !args.command.is_empty() {
        let log = dir.join("command.log");
        argv = vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            format!("exec \"$@\" >'{}' 2>&1 </dev/null", log.display()),
            "sh".to_string(),
        ];
        argv.extend(args.command.iter().cloned());
    }
    let mut prep = Launch::spawn(&argv, true)?.setup(config)?;
    super::opts::guard_recording(&mut prep);
    let error = prep
        .watch_error()
        .map(|e| format!("cannot follow execs and forks ({e:#})"));
    let mut rec = prep.start(&dir.join("rec"), None)?;
    rec.go()?;
    let shared = Arc::new(Mutex::new(Shared { rec, error }));
    let mut live = LiveRec {
        shared: shared.clone(),
        dir: dir.to_path_buf(),
        snaps: 0,
        last_bytes: 0,
        stopped_shown: false,
        last_snap: None,
        start: Instant::now(),
    };
    let first = live.snapshot(&mut lock(&shared))?;
    let quit = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (shared, quit) = (shared.clone(), quit.clone());
        std::thread::Builder::new()
            .name("live-tick".into())
            .spawn(move || tick_until_stopped(&shared, &quit))
            .context("cannot start the recording's thread")?
    };
    // The terminal is all the TUI has: once it hangs up, restore and go
    // (the -o file is not written then).
    signals::exit_on_hangup();
    let res = ustack_tui::run_with(
        &ustack_tui::Options {
            input: first,
            buffer: None,
            live_maps: true,
            symfs: None,
            select,
        },
        Some(&mut live),
    );
    quit.store(true, Ordering::SeqCst);
    let _ = ticker.join();
    drop(live);
    let Ok(shared) = Arc::try_unwrap(shared) else {
        anyhow::bail!("the live recording is still in use");
    };
    let mut s = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    s.stop();
    // Quitting the TUI ends the traced command too.
    s.rec.terminate_command(Duration::from_secs(2));
    let saved = match (&args.output, &res) {
        (Some(out), Ok(())) => {
            let opts = write_options(7, None)?;
            Some(s.write(out, &opts).map(|_| out.clone()))
        }
        _ => None,
    };
    s.rec.restore()?;
    signals::set_restorer(None);
    res?;
    if let Some(saved) = saved {
        eprintln!("tracer-cli: wrote {}", saved?.display());
    }
    Ok(())
}
