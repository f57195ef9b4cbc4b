//! `tracer-cli tui`: browse a trace.dat file interactively, events grouped
//! by cookie with their symbolized stacks.
//!
//! When stdout is not a terminal, the same data is printed as
//! `report --stacks` text instead, so scripts and pipes still get it.
//!
//! `--live` records instead of reading a file (the `record` options, and
//! optionally a command): the per-CPU pages are spliced to temp files as in
//! `record`, and about once a second a snapshot trace.dat is written from
//! them and the view is refreshed, keeping the selection, filters and sort.
//! On quit, tracing is restored and, with `-o`, the full trace is saved.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use ustack_tracedata::compress::Compression;
use ustack_tracedata::writer::{FileVersion, TraceMeta, WriteOptions};
use ustack_tracefs::{signals, CpuStats};

use super::record::{
    collect_meta, pair_filters_of, reader_thread, setup, write_dat, HeldChild, MapsTracker,
    Session, TempFiles, TraceOpts,
};

/// Arguments of `tracer-cli tui`.
#[derive(clap::Args, Debug)]
#[command(trailing_var_arg = true)]
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
    /// With --live: save the whole recording to this file on quit.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// With --live: command to run and trace (its output goes to
    /// `<tmp>/command.log`).
    #[arg(allow_hyphen_values = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `tracer-cli tui`.
pub fn run(args: Args) -> Result<()> {
    let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    if args.live {
        if !tty {
            anyhow::bail!("tui --live needs a terminal");
        }
        return run_live(args);
    }
    if !args.command.is_empty() || !args.trace.events.is_empty() {
        anyhow::bail!("recording options and a command need --live");
    }
    if !tty {
        let f = ustack_tracedata::TraceFile::open(&args.input)?;
        let view = super::stacks::View {
            symfs: args.symfs,
            ..super::stacks::View::text()
        };
        return super::stacks::print_file(&f, &view);
    }
    ustack_tui::run(&ustack_tui::Options {
        input: args.input,
        buffer: args.buffer,
        live_maps: args.proc_maps,
        symfs: args.symfs,
    })?;
    Ok(())
}

/// One reader thread per CPU, splicing pages into its temp file.
struct Reader {
    stop: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<ustack_tracefs::Result<()>>>,
}

/// The live recording behind the TUI.
struct LiveRec {
    session: Session,
    cpus: Vec<u32>,
    temps: TempFiles,
    readers: Vec<Reader>,
    child: Option<HeldChild>,
    child_status: Option<i32>,
    maps: Option<MapsTracker>,
    meta: TraceMeta,
    dir: PathBuf,
    snaps: u64,
    last_bytes: u64,
    last_snap: Option<PathBuf>,
    start: Instant,
    stopped: bool,
    error: Option<String>,
}

impl LiveRec {
    fn bytes(&self) -> u64 {
        self.readers
            .iter()
            .map(|r| r.bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Turns tracing off and drains every CPU.
    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let _ = self.session.inst.set_tracing_on(false);
        for r in &self.readers {
            r.stop.store(true, Ordering::SeqCst);
        }
        for r in &mut self.readers {
            if let Some(t) = r.thread.take() {
                match t.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        self.error.get_or_insert(e.to_string());
                    }
                    Err(_) => {
                        self.error.get_or_insert("a reader thread panicked".into());
                    }
                }
            }
        }
    }

    fn cpu_files(&self) -> Result<Vec<(u32, PathBuf, CpuStats)>> {
        self.temps
            .0
            .iter()
            .zip(&self.cpus)
            .map(|((cpu, p), &c)| Ok((*cpu, p.clone(), self.session.inst.cpu_stats(c)?)))
            .collect()
    }

    fn write(&mut self, path: &Path, opts: &WriteOptions) -> Result<()> {
        if let Ok(c) = self.session.fs.saved_cmdlines() {
            self.meta.cmdlines = c;
        }
        let files = self.cpu_files()?;
        write_dat(path, &self.meta, &self.session.inst, &files, opts)?;
        Ok(())
    }

    /// Writes the next snapshot; the previous one is unlinked (the TUI may
    /// still map it, which unlinking keeps valid).
    fn snapshot(&mut self) -> Result<PathBuf> {
        let path = self.dir.join(format!("live-{}.dat", self.snaps));
        self.snaps += 1;
        let opts = WriteOptions {
            version: FileVersion::V7,
            compression: Compression::None,
        };
        self.write(&path, &opts)?;
        if let Some(old) = self.last_snap.replace(path.clone()) {
            let _ = std::fs::remove_file(old);
        }
        Ok(path)
    }

    fn status(&self) -> String {
        let state = if self.stopped {
            match self.child_status {
                Some(s) => format!("stopped: the command exited with status {s}"),
                None => "stopped".to_string(),
            }
        } else {
            "recording".to_string()
        };
        let mut s = format!(
            "live: {state}, {:.0}s, {} KiB",
            self.start.elapsed().as_secs_f64(),
            self.bytes() >> 10
        );
        if let Some(e) = &self.error {
            s.push_str(&format!(" | error: {e}"));
        }
        s
    }
}

impl ustack_tui::Live for LiveRec {
    fn poll(&mut self) -> (Option<PathBuf>, Option<String>) {
        let mut changed = false;
        if let Some(m) = self.maps.as_mut() {
            m.scan_children();
            m.snapshot();
        }
        if !self.stopped {
            let exited = self.child.as_ref().and_then(|c| c.try_wait());
            if exited.is_some() || signals::stop_requested() {
                self.child_status = exited;
                self.stop();
                changed = true;
            }
        }
        let bytes = self.bytes();
        if bytes != self.last_bytes {
            self.last_bytes = bytes;
            changed = true;
        }
        let snap = if changed {
            match self.snapshot() {
                Ok(p) => Some(p),
                Err(e) => {
                    self.error = Some(format!("{e:#}"));
                    None
                }
            }
        } else {
            None
        };
        (snap, Some(self.status()))
    }
}

fn run_live(args: Args) -> Result<()> {
    let pairs = pair_filters_of::<Args>(&args.trace, "tui")?;
    let dir = std::env::temp_dir().join(format!("tracer-cli-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let res = live_in(&args, &pairs, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    res
}

fn live_in(args: &Args, pairs: &[(String, Option<String>)], dir: &Path) -> Result<()> {
    signals::install()?;
    let mut child = if args.command.is_empty() {
        None
    } else {
        // The command's output would garble the screen: send it to a log.
        let log = dir.join("command.log");
        let mut argv = vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            format!("exec \"$@\" >'{}' 2>&1 </dev/null", log.display()),
            "sh".to_string(),
        ];
        argv.extend(args.command.iter().cloned());
        Some(HeldChild::spawn(&argv)?)
    };
    let child_pid = child.as_ref().map(|c| c.pid.as_raw() as u32);
    let session = setup(&args.trace, pairs, child_pid)?;
    signals::set_restorer(Some(session.guard.restorer()));
    let inst = session.inst.clone();
    let cpus = inst.cpus()?;
    let (temps, files) = TempFiles::create(&dir.join("rec"), &cpus)?;
    let mut readers = Vec::new();
    for (&cpu, file) in cpus.iter().zip(files) {
        let r = inst.cpu_reader(cpu)?;
        let stop = Arc::new(AtomicBool::new(false));
        let bytes = Arc::new(AtomicU64::new(0));
        let (s2, b2) = (stop.clone(), bytes.clone());
        let thread = std::thread::Builder::new()
            .name(format!("live-cpu{cpu}"))
            .spawn(move || reader_thread(r, file, s2, b2).map(drop))
            .context("cannot start a reader thread")?;
        readers.push(Reader {
            stop,
            bytes,
            thread: Some(thread),
        });
    }
    let meta = collect_meta(&session.fs, &inst, Some(&session.events), Vec::new())?;
    let mut roots: Vec<u32> = args.trace.pids.clone();
    roots.extend(child_pid);
    let mut live = LiveRec {
        session,
        cpus,
        temps,
        readers,
        child: None,
        child_status: None,
        maps: Some(MapsTracker::new(roots)),
        meta,
        dir: dir.to_path_buf(),
        snaps: 0,
        last_bytes: 0,
        last_snap: None,
        start: Instant::now(),
        stopped: false,
        error: None,
    };
    live.session.inst.set_tracing_on(true)?;
    if let Some(c) = child.as_mut() {
        c.release()?;
    }
    live.child = child;
    let first = live.snapshot()?;
    let res = ustack_tui::run_with(
        &ustack_tui::Options {
            input: first,
            buffer: None,
            live_maps: true,
            symfs: None,
        },
        Some(&mut live),
    );
    live.stop();
    let saved = match (&args.output, &res) {
        (Some(out), Ok(())) => {
            let maps = live.maps.take().map(|m| m.into_maps()).unwrap_or_default();
            live.meta.procmaps = maps;
            let opts = super::record::write_options(7, None)?;
            Some(live.write(out, &opts).map(|_| out.clone()))
        }
        _ => None,
    };
    if let Some(c) = live.child.take() {
        if c.try_wait().is_none() {
            // Quitting the TUI ends the traced command too.
            let _ = nix::sys::signal::kill(c.pid, nix::sys::signal::Signal::SIGTERM);
            let _ = nix::sys::wait::waitpid(c.pid, None);
        }
    }
    live.session.guard.restore()?;
    signals::set_restorer(None);
    res?;
    if let Some(s) = saved {
        eprintln!("tracer-cli: wrote {}", s?.display());
    }
    Ok(())
}
