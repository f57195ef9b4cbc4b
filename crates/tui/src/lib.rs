//! Interactive terminal browser of stitched traces (`tracer-cli tui`).
//!
//! Built on ratatui and crossterm, in the usual shape:
//!
//! * [`app::App`] is the whole state, plain data: the trace index (24
//!   bytes per event, built in one pass by `stitch`), the visible groups
//!   and events after filtering and sorting, selections, prompt, message.
//! * [`keys`] maps terminal input to [`app::Msg`]; [`app::App::update`]
//!   applies it. [`app::App::refresh`] then fills the only caches: the field
//!   text of the rows on screen and the symbolized detail of the selected
//!   group, read lazily through a [`source::Source`].
//! * [`ui::render`] draws the state; it reads nothing else, so tests render
//!   into ratatui's `TestBackend` and compare the screen text. It returns
//!   the [`app::Viewport`] it drew (pane sizes), which the loop hands to
//!   [`app::App::drawn`]: the state never calls the renderer.
//! * [`lines`] holds the text of the detail panes as data, so the state can
//!   count what the renderer styles.
//!
//! Lists are virtualized: only the rows on screen are built, so a file of
//! a million events opens as fast as it can be indexed.

pub mod app;
pub mod cursor;
mod filter;
pub mod keys;
pub mod lines;
pub mod loader;
mod model;
pub mod search;
pub mod source;
mod stackview;
pub mod tree;
pub mod ui;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::Terminal;
/// What the command line selects (`-F`, `--cpu`, `--pid`...), as
/// `report --stacks` takes it.
pub use ustack_printer::select::Selection;

use crate::app::App;
use crate::loader::{Loader, Target, FIRST_EVENTS};
use crate::source::{FileSource, Source};
use ustack_stitch::file::Extent;

/// Error of the TUI: what failed and why.
#[derive(Debug)]
pub struct Error(pub(crate) String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Options of [`run`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The trace.dat file.
    pub input: PathBuf,
    /// Buffer (instance) name; `None` for the top buffer.
    pub buffer: Option<String>,
    /// Also read `/proc/PID/maps` of live processes for symbols.
    pub live_maps: bool,
    /// Look the files that user stacks map up under this directory.
    pub symfs: Option<PathBuf>,
    /// Only these groups and events (`-F`, `--cpu`, `--pid`, `--comm`,
    /// `--time`, as `report --stacks` chooses them).
    pub select: Selection,
}

/// Opens a trace file and builds the initial state for a terminal of
/// `size`, over the whole file.
pub fn open(
    path: &Path,
    buffer: Option<&str>,
    size: (u16, u16),
) -> Result<(App, FileSource), Error> {
    open_selected(path, buffer, size, &Selection::default())
}

/// [`open`], showing only what `select` chooses.
pub fn open_selected(
    path: &Path,
    buffer: Option<&str>,
    size: (u16, u16),
    select: &Selection,
) -> Result<(App, FileSource), Error> {
    let target = Target::open(path, buffer, size, select)?;
    let (app, _) = target.app(Extent::All, |_, _| true)?;
    Ok((app, FileSource::new(target.file, target.buffer)))
}

/// [`open_selected`] for the screen: the state over the first
/// [`FIRST_EVENTS`] events, and the [`Loader`] that indexes the rest, if
/// there is more.
pub fn open_first(
    path: &Path,
    buffer: Option<&str>,
    size: (u16, u16),
    select: &Selection,
) -> Result<(App, FileSource, Option<Loader>), Error> {
    let target = Target::open(path, buffer, size, select)?;
    let (app, whole) = target.app(Extent::First(FIRST_EVENTS), |_, _| true)?;
    let src = FileSource::new(Arc::clone(&target.file), target.buffer);
    let showing = format!("showing the first {FIRST_EVENTS} events");
    let loader = (!whole).then(|| Loader::spawn(target, &showing));
    Ok((app, src, loader))
}

/// The groups and events of `src` that `select` chooses, one flag each,
/// judged as `report --stacks` judges them.
fn selection(
    f: &ustack_tracedata::TraceFile,
    buffer: usize,
    idx: &ustack_stitch::trace::Index,
    select: &Selection,
) -> Result<(Vec<bool>, Vec<bool>), Error> {
    let Some(buf) = f.buffers().get(buffer) else {
        return Ok((Vec::new(), Vec::new()));
    };
    // libtraceevent's handle first (see FileSource::new).
    let mut texts = ustack_printer::text::Texts::for_file(f);
    let sym = ustack_stitch::file::symbolizer(f);
    texts
        .set_filters(&select.filters, &select.neg_filters)
        .map_err(Error)?;
    let rec = |s: u64| ustack_stitch::file::record(f, buf, idx.events.get(s as usize)?);
    let comm = |pid| ustack_stitch::view::comm(idx, &sym, pid);
    let chosen = ustack_printer::select::choose(select, idx, rec, &mut texts, comm);
    let mut groups = vec![false; idx.stitched.groups.len()];
    for &g in chosen.groups.iter() {
        groups[g as usize] = true;
    }
    let events = (0..idx.events.len() as u64)
        .map(|s| ustack_printer::select::event_passes(select, idx, s, rec, &mut texts, comm))
        .collect();
    idx.release();
    Ok((groups, events))
}

/// Draws `app` on `term` and records what was drawn; a draw that finds the
/// panes resized refreshes the caches for the new rows and draws once more.
pub fn draw<B: Backend>(
    term: &mut Terminal<B>,
    app: &mut App,
    src: &mut dyn Source,
) -> io::Result<()> {
    for _ in 0..2 {
        let mut vp = app.viewport;
        term.draw(|f| vp = ui::render(f, app))?;
        if !app.drawn(vp, src) {
            break;
        }
    }
    Ok(())
}

fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), LeaveAlternateScreen, DisableMouseCapture);
}

/// A trace that grows while the TUI shows it (live mode). It is polled on
/// a thread of its own, so that writing a snapshot never holds the screen.
pub trait Live: Send {
    /// Called about once a second: a new snapshot file to show, if any,
    /// and a status text for the status line (e.g. how much was recorded).
    fn poll(&mut self) -> (Option<PathBuf>, Option<String>);
}

/// Runs the TUI on a terminal until the user quits.
pub fn run(opts: &Options) -> Result<(), Error> {
    run_with(opts, None)
}

/// Waits for the first terminal event (at most `wait`, for ever with
/// `None`), then takes what is queued behind it, so that a fast key repeat
/// or wheel does not lag behind.
fn next_events(wait: Option<Duration>) -> io::Result<Vec<event::Event>> {
    let mut evs = Vec::new();
    let ready = match wait {
        Some(w) => event::poll(w)?,
        None => true,
    };
    if ready {
        evs.push(event::read()?);
        while event::poll(Duration::ZERO)? {
            evs.push(event::read()?);
        }
    }
    Ok(evs)
}

/// Runs the TUI; with `live`, the file is reopened whenever `live` gives a
/// new snapshot, keeping the user's view.
pub fn run_with(opts: &Options, mut live: Option<&mut dyn Live>) -> Result<(), Error> {
    let io_err = |what: &str| {
        let what = what.to_string();
        move |e: io::Error| Error(format!("{what}: {e}"))
    };
    let (w, h) = crossterm::terminal::size().map_err(io_err("cannot get the terminal size"))?;
    let (mut app, src, mut loader) =
        open_first(&opts.input, opts.buffer.as_deref(), (w, h), &opts.select)?;
    if live.is_some() {
        app.title = "live".to_string();
    }
    // Live snapshots are read while their processes run: their maps too.
    let live_maps = opts.live_maps || live.is_some();
    let configure = |src: FileSource| {
        let src = src.with_symfs(opts.symfs.clone());
        if live_maps {
            src.with_live_maps()
        } else {
            src
        }
    };
    let mut src = configure(src);
    enable_raw_mode().map_err(io_err("cannot set the terminal to raw mode"))?;
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        prev(info);
    }));
    let res = std::thread::scope(|scope| {
        execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)
            .map_err(io_err("cannot set up the terminal"))?;
        let mut term = Terminal::new(CrosstermBackend::new(io::stdout()))
            .map_err(io_err("cannot set up the terminal"))?;
        app.loading = loader.as_ref().map(Loader::status);
        app.refresh(&mut src);
        // Live mode: when the recorder was last asked for a snapshot, and
        // the thread that asks it (it holds `live` meanwhile).
        let live_mode = live.is_some();
        let mut asked = std::time::Instant::now();
        let mut polling = None;
        loop {
            draw(&mut term, &mut app, &mut src).map_err(io_err("cannot draw"))?;
            // Not at all while a search goes on; at most a tenth of a
            // second while indexing or taking a live snapshot, to show
            // progress; in live mode at most a second, to refresh.
            let wait = if app.searching.is_some() {
                Some(Duration::ZERO)
            } else if loader.is_some() || polling.is_some() {
                Some(Duration::from_millis(100))
            } else if live_mode {
                Some(Duration::from_secs(1).saturating_sub(asked.elapsed()))
            } else {
                None
            };
            for ev in next_events(wait).map_err(io_err("cannot read input"))? {
                if let Some(msg) = keys::map_event(&ev, app.prompt.is_some()) {
                    app.update(msg, &mut src);
                }
            }
            if app.quit {
                return Ok(());
            }
            // A search under way goes on for a slice between keys.
            app.search_more(&mut src);
            if let Some(done) = loader.as_ref().and_then(Loader::poll) {
                loader = None;
                match done {
                    Ok(loaded) => {
                        let mut next = loaded.app;
                        next.title = app.title.clone();
                        next.carry_over(&app);
                        // Freeing an index of millions of events (its
                        // temporary file's mapping) is done beside the
                        // screen, not on its time.
                        let old = std::mem::replace(&mut app, next);
                        std::thread::spawn(move || drop(old));
                        if !Arc::ptr_eq(&loaded.file, src.file()) {
                            // A live snapshot keeps libtraceevent's handle.
                            src = configure(if live_mode {
                                src.refile(loaded.file, loaded.buffer)
                            } else {
                                FileSource::new(loaded.file, loaded.buffer)
                            });
                        }
                    }
                    // A snapshot that cannot be read keeps the previous
                    // view; the next one may be fine.
                    Err(e) => app.message = format!("cannot index the trace: {e}"),
                }
            }
            // The recorder writes a snapshot of everything so far: on a
            // thread of its own, one at a time, and not while one is being
            // indexed.
            if loader.is_none() && polling.is_none() && asked.elapsed() >= Duration::from_secs(1) {
                if let Some(l) = live.take() {
                    asked = std::time::Instant::now();
                    polling = Some(scope.spawn(move || {
                        let got = l.poll();
                        (l, got)
                    }));
                }
            }
            if polling.as_ref().is_some_and(|p| p.is_finished()) {
                if let Some(p) = polling.take() {
                    let (l, (snap, status)) = p
                        .join()
                        .map_err(|_| Error("the live recording's thread died".into()))?;
                    live = Some(l);
                    // Opened and indexed beside the screen; a snapshot
                    // that cannot be read keeps the previous view.
                    if let Some(path) = snap {
                        loader = Some(Loader::open(
                            path,
                            opts.buffer.clone(),
                            app.size,
                            opts.select.clone(),
                            "showing the last snapshot",
                        ));
                    }
                    if let (Some(s), true) = (status, app.prompt.is_none()) {
                        app.message = s;
                    }
                }
            }
            app.loading = loader.as_ref().map(Loader::status);
            app.refresh(&mut src);
        }
    });
    restore();
    let _ = std::panic::take_hook();
    res
}
