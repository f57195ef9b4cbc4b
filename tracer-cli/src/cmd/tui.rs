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
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::ArgMatches;
use ustack_printer::select::Selection;
use ustack_record::{
    collect_meta, setup, write_options, MapsStore, MapsTracker, Recorder, Session, TraceConfig,
    TracedCommand,
};
use ustack_tracedata::compress::Compression;
use ustack_tracedata::writer::{FileVersion, TraceMeta, WriteOptions};

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

/// The live recording behind the TUI.
struct LiveRec {
    session: Session,
    rec: Recorder,
    child: Option<TracedCommand>,
    child_status: Option<i32>,
    maps: MapsTracker,
    meta: TraceMeta,
    dir: PathBuf,
    snaps: u64,
    last_bytes: u64,
    last_snap: Option<PathBuf>,
    start: Instant,
    error: Option<String>,
}

impl LiveRec {
    /// Turns tracing off and drains every CPU (once).
    fn stop(&mut self) {
        if self.rec.is_finished() {
            return;
        }
        if let Err(e) = self.rec.finish() {
            self.error.get_or_insert(format!("{e:#}"));
        }
    }

    fn write(&mut self, path: &Path, opts: &WriteOptions) -> Result<()> {
        if let Ok(c) = self.session.fs.saved_cmdlines() {
            self.meta.cmdlines = c;
        }
        self.rec.write(path, &self.meta, opts)?;
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
        let state = if self.rec.is_finished() {
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
            self.rec.total_bytes() >> 10
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
        self.maps.scan_children();
        self.maps.snapshot();
        if !self.rec.is_finished() {
            let exited = self.child.as_ref().and_then(|c| c.try_wait());
            if exited.is_some() || signals::stop_requested() {
                self.child_status = exited;
                self.stop();
                changed = true;
            }
        }
        let bytes = self.rec.total_bytes();
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

fn run_live(args: &Args, config: &TraceConfig, select: Selection) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("tracer-cli-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let res = live_in(args, config, &dir, select);
    let _ = std::fs::remove_dir_all(&dir);
    res
}

fn live_in(args: &Args, config: &TraceConfig, dir: &Path, select: Selection) -> Result<()> {
    signals::install()?;
    // The command's maps are taken at its execs and exits under ptrace, as
    // in record.
    let store = MapsStore::default();
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
        Some(TracedCommand::spawn(&argv, store.clone(), true)?)
    };
    let child_pid = child.as_ref().map(|c| c.pid().as_raw() as u32);
    let mut session = setup(config, child_pid)?;
    super::opts::note_leftover(session.leftover_restored);
    session.guard.on_drop_error(signals::report);
    signals::set_restorer(Some(session.guard.restorer()));
    let rec = Recorder::start(&session.inst, &dir.join("rec"))?;
    let meta = collect_meta(
        &session.fs,
        &session.inst,
        Some(&session.events),
        Vec::new(),
    )?;
    let mut roots: Vec<u32> = config.pids.clone();
    roots.extend(
        child
            .as_ref()
            .filter(|c| !c.is_traced())
            .map(|c| c.pid().as_raw() as u32),
    );
    session.inst.set_tracing_on(true)?;
    if let Some(c) = child.as_mut() {
        c.release()?;
    }
    let mut live = LiveRec {
        session,
        rec,
        child,
        child_status: None,
        maps: MapsTracker::with_store(roots, store),
        meta,
        dir: dir.to_path_buf(),
        snaps: 0,
        last_bytes: 0,
        last_snap: None,
        start: Instant::now(),
        error: None,
    };
    let first = live.snapshot()?;
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
    live.stop();
    if let Some(c) = live.child.take() {
        // Quitting the TUI ends the traced command too.
        c.terminate(Duration::from_secs(2));
    }
    let saved = match (&args.output, &res) {
        (Some(out), Ok(())) => {
            live.meta.procmaps = live.maps.maps();
            let opts = write_options(7, None)?;
            Some(live.write(out, &opts).map(|_| out.clone()))
        }
        _ => None,
    };
    live.session.guard.restore()?;
    signals::set_restorer(None);
    res?;
    if let Some(s) = saved {
        eprintln!("tracer-cli: wrote {}", s?.display());
    }
    Ok(())
}
