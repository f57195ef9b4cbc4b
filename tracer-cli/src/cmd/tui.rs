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
//! merged command names). About once a second the snapshot trace.dat the
//! view shows is brought up to date and the view is refreshed, keeping the
//! selection, filters and sort: the snapshot grows with the recording
//! (`ustack_record::LiveSnapshot`), each refresh appends only the pages
//! recorded since the last one, so its cost does not grow with the
//! recording. On quit, tracing is restored and, with `-o`, the full trace
//! is saved.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::ArgMatches;
use ustack_printer::select::Selection;
use ustack_record::{write_options, Launch, LiveSnapshot, Recording, Tick, TraceConfig, TICK};
use ustack_tracedata::writer::WriteOptions;

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
    /// --memory-budget of the index.
    #[command(flatten)]
    pub memory: super::opts::MemoryOpts,
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
    args.memory.apply();
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
/// exec whatever the view does) while the view brings its snapshot up to
/// date about once a second.
struct LiveRec {
    shared: Arc<Mutex<Shared>>,
    snap: LiveSnapshot,
    last_bytes: u64,
    /// The snapshot after the stop was written.
    stopped_shown: bool,
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
    /// A live view of `shared`'s recording, its snapshot in `dir`.
    fn new(shared: Arc<Mutex<Shared>>, dir: &Path) -> LiveRec {
        LiveRec {
            shared,
            snap: LiveSnapshot::new(dir),
            last_bytes: 0,
            stopped_shown: false,
            start: Instant::now(),
        }
    }

    /// Brings the snapshot up to the recording: the pages recorded since
    /// the last one are appended (the TUI may map the file meanwhile; what
    /// it was given stays as it is). Returns the file to open again.
    fn snapshot(&mut self, s: &mut Shared) -> Result<PathBuf> {
        Ok(s.rec.snapshot(&mut self.snap)?.path)
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
    let mut live = LiveRec::new(shared.clone(), dir);
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

#[cfg(test)]
mod tests {
    use super::*;
    use ustack_tracedata::{Item, TraceFile};
    use ustack_tui::Live;

    /// Bytes this thread has written so far (`wchar` of
    /// /proc/thread-self/io: write, pwrite and copy_file_range alike).
    fn thread_written() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
        io.lines()
            .find_map(|l| l.strip_prefix("wchar: "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap()
    }

    /// Every event and loss of every buffer of `f`, in order, with its CPU.
    fn events(f: &TraceFile) -> Vec<(u32, String)> {
        let mut v = Vec::new();
        for b in f.buffers() {
            for it in f.records(b) {
                v.push(match it.unwrap() {
                    Item::Event(r) => (r.cpu, format!("{:?} {} {:?}", b.name, r.ts, r.data)),
                    Item::Lost { cpu, ts, count } => (cpu, format!("lost {ts} {count:?}")),
                });
            }
        }
        v
    }

    /// The events of `cpu` in `v`.
    fn of_cpu(v: &[(u32, String)], cpu: u32) -> Vec<&str> {
        v.iter()
            .filter(|e| e.0 == cpu)
            .map(|e| e.1.as_str())
            .collect()
    }

    /// Ends the test's recording, also when the test fails: the command
    /// is told to stop and the ticking thread is stopped and joined, so
    /// that the recording is dropped with the test's last references and
    /// its guard removes the instance.
    struct Ending {
        stop: PathBuf,
        quit: Arc<AtomicBool>,
        ticker: Option<std::thread::JoinHandle<()>>,
    }

    impl Drop for Ending {
        fn drop(&mut self) {
            let _ = std::fs::write(&self.stop, "");
            self.quit.store(true, Ordering::SeqCst);
            if let Some(t) = self.ticker.take() {
                let _ = t.join();
            }
        }
    }

    fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !ok() {
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "timed out: {what}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The live view's snapshots on the host kernel: a refresh after a
    /// little new data writes about that much (not the megabytes already
    /// recorded, nor the metadata again), in the same file, which a view
    /// that opened it before still reads as it was; the last snapshot,
    /// after the stop, holds exactly the events of the file `-o` saves.
    #[test]
    #[ignore = "needs root and tracefs"]
    fn a_refresh_writes_what_is_new_and_the_last_one_holds_the_saved_events() {
        let dir = tempfile::tempdir().unwrap();
        let stop = dir.path().join("stop");
        // A burst of system calls, then a few now and then until told (or
        // the test's directory is gone, or two minutes passed).
        let script = format!(
            "dd if=/dev/zero of=/dev/null bs=16 count=50000 2>/dev/null; echo burst > {0}.burst; \
             i=0; until [ -e {0} ] || [ ! -d {1} ] || [ $i -ge 240 ]; do i=$((i+1)); sleep 0.5; done",
            stop.display(),
            dir.path().display()
        );
        let argv: Vec<String> = ["/bin/sh", "-c", &script].map(String::from).into();
        let config = TraceConfig {
            events: vec![("raw_syscalls".into(), None)],
            instance: Some(format!("tui-live-snap-{}", std::process::id())),
            filter_command: true,
            ..TraceConfig::default()
        };
        let prep = Launch::spawn(&argv, true).unwrap().setup(&config).unwrap();
        let mut rec = prep.start(&dir.path().join("rec"), None).unwrap();
        rec.go().unwrap();
        let shared = Arc::new(Mutex::new(Shared { rec, error: None }));
        let quit = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (shared, quit) = (shared.clone(), quit.clone());
            std::thread::spawn(move || tick_until_stopped(&shared, &quit))
        };
        let mut live = LiveRec::new(shared.clone(), dir.path());
        // Dropped first, also when an assertion fails.
        let ending = Ending {
            stop: stop.clone(),
            quit,
            ticker: Some(ticker),
        };
        let recorded = || lock(&shared).rec.recorder().total_bytes();
        let burst = dir.path().join("stop.burst");
        wait_until("the burst", 60, || burst.exists());
        // The burst's last pages reach the files.
        let mut last = 0;
        wait_until("the burst's pages", 30, || {
            std::thread::sleep(Duration::from_millis(300));
            let now = recorded();
            std::mem::replace(&mut last, now) == now
        });
        let before = recorded();
        assert!(before > 1 << 20, "only {before} bytes recorded");
        let first = live.poll().0.expect("a first snapshot");
        let seen = TraceFile::open(&first).unwrap();
        let seen_events = events(&seen);
        assert!(seen_events.len() > 20_000, "{} events", seen_events.len());

        // A few new pages, and a refresh.
        let at_first = recorded();
        wait_until("new pages", 30, || recorded() >= at_first + 4096);
        let w0 = thread_written();
        let second = live.poll().0.expect("a second snapshot");
        let written = thread_written() - w0;
        let new = recorded() - before;
        let whole = std::fs::metadata(&second).unwrap();
        assert!(
            written <= new + (256 << 10),
            "a refresh after {new} new bytes wrote {written} bytes (the whole snapshot: {})",
            whole.len()
        );
        assert_eq!(second, first, "the snapshot grows in place");
        assert!(
            events(&seen) == seen_events,
            "an open view still reads the same"
        );
        // Each CPU's events go on from where they were (merged by time, a
        // new page may come before the last events of another CPU).
        let grown = events(&TraceFile::open(&second).unwrap());
        assert!(grown.len() > seen_events.len());
        for cpu in 0..64 {
            let (old, new) = (of_cpu(&seen_events, cpu), of_cpu(&grown, cpu));
            assert!(
                new.starts_with(&old),
                "cpu {cpu}: {} then {}",
                old.len(),
                new.len()
            );
        }

        // The stop: the last snapshot is the saved file.
        std::fs::write(&stop, "").unwrap();
        wait_until("the stop", 30, || lock(&shared).rec.is_stopped());
        let last = live.poll().0.expect("the snapshot of the stop");
        let last_events = events(&TraceFile::open(&last).unwrap());
        drop(ending);
        drop(live);
        assert!(!last.exists(), "the snapshot goes with the view");
        let mut s = Arc::try_unwrap(shared)
            .ok()
            .expect("the only user of the recording")
            .into_inner()
            .unwrap();
        // As run_live saves it on quit.
        let saved = dir.path().join("saved.dat");
        s.write(&saved, &write_options(7, None).unwrap()).unwrap();
        s.rec.restore().unwrap();
        let saved_events = events(&TraceFile::open(&saved).unwrap());
        assert!(saved_events.len() > grown.len(), "{}", saved_events.len());
        assert!(
            last_events == saved_events,
            "the last snapshot has {} events, the saved file {}",
            last_events.len(),
            saved_events.len()
        );
    }
}
