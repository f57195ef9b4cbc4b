//! Indexing a trace in the background while the TUI already shows it.
//!
//! Opening a file indexes only its first [`FIRST_EVENTS`] events (in time
//! order) before the first screen is drawn, so that screen comes at once
//! whatever the file's size. A [`Loader`] thread then indexes the whole
//! buffer, sharing the mapped file, and hands a complete [`App`] back; the
//! event loop swaps it in, keeping the user's view
//! ([`App::carry_over`]). Until then the status line shows how far it got.
//! A live snapshot is indexed the same way, so that the screen answers
//! keys while a large snapshot is read.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::Arc;
use std::thread;

use ustack_printer::select::Selection;
use ustack_stitch::file::{self, Extent};
use ustack_tracedata::TraceFile;

use crate::app::App;
use crate::Error;

/// Events indexed before the first screen: enough to fill it many times
/// over, and read in a few tens of milliseconds.
pub const FIRST_EVENTS: usize = 100_000;

/// What is opened: a buffer of a trace file, and how it is shown.
#[derive(Debug, Clone)]
pub struct Target {
    /// The file, shared by the screen and the loader.
    pub file: Arc<TraceFile>,
    /// Index of the buffer in `file.buffers()`.
    pub buffer: usize,
    /// Window title.
    pub title: String,
    /// Terminal size.
    pub size: (u16, u16),
    /// What the command line selects.
    pub select: Selection,
}

impl Target {
    /// Opens `path` and picks its buffer `buffer` (`None`: the first one
    /// that holds data).
    pub fn open(
        path: &Path,
        buffer: Option<&str>,
        size: (u16, u16),
        select: &Selection,
    ) -> Result<Target, Error> {
        let file = TraceFile::open(path).map_err(|e| Error(e.to_string()))?;
        let bi = {
            let b = file::buffer(&file, buffer).map_err(|e| Error(e.to_string()))?;
            file.buffers()
                .iter()
                .position(|x| std::ptr::eq(x, b))
                .unwrap_or(0)
        };
        let title = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Ok(Target {
            file: Arc::new(file),
            buffer: bi,
            title,
            size,
            select: select.clone(),
        })
    }

    /// The state over `extent` of the buffer; `progress(done, all)` as
    /// [`file::load_with`] calls it (false stops). Also says whether the
    /// index holds every record of the buffer.
    pub fn app(
        &self,
        extent: Extent,
        mut progress: impl FnMut(u64, u64) -> bool,
    ) -> Result<(App, bool), Error> {
        let f = &self.file;
        let Some(buf) = f.buffers().get(self.buffer) else {
            let app = App::new(Default::default(), &self.title, f.cpu_count(), self.size);
            return Ok((app, true));
        };
        let mut stopped = false;
        let idx = file::load_with(f, buf, extent, |done, all| {
            stopped = !progress(done, all);
            !stopped
        });
        if stopped {
            return Err(Error("indexing stopped".into()));
        }
        let whole = match extent {
            Extent::All => true,
            Extent::First(n) => idx.events.len() + idx.losses.len() < n,
        };
        let chosen = (!self.select.is_all())
            .then(|| crate::selection(f, self.buffer, &idx, &self.select))
            .transpose()?;
        let mut app = App::new(idx, &self.title, f.cpu_count(), self.size);
        if let Some((groups, events)) = chosen {
            app.restrict(groups, events);
        }
        if let Some(e) = &app.idx.error {
            app.message = format!("trace data cut short: {e}");
        }
        Ok((app, whole))
    }
}

/// A complete index, built by a [`Loader`].
pub struct Loaded {
    /// The state over the whole buffer.
    pub app: App,
    /// The file it indexes.
    pub file: Arc<TraceFile>,
    /// Index of the buffer in `file.buffers()`.
    pub buffer: usize,
}

/// A thread that indexes a whole buffer; dropping it stops the thread.
pub struct Loader {
    rx: Receiver<Result<Loaded, Error>>,
    /// Set when the result is no longer wanted.
    cancel: Arc<AtomicBool>,
    /// Bytes of CPU data read, in thousandths of all of it.
    permille: Arc<AtomicU64>,
    /// What the screen shows meanwhile.
    showing: String,
}

impl Loader {
    /// Starts indexing all of `target`; `showing` says what the screen
    /// shows until it is done.
    pub fn spawn(target: Target, showing: &str) -> Loader {
        Loader::start(move || Ok(target), showing)
    }

    /// [`Loader::spawn`] on the file at `path`, opened on the loader's
    /// thread too ([`Target::open`]), so that the screen does not wait for
    /// its metadata to be read (a live snapshot, every second).
    pub fn open(
        path: PathBuf,
        buffer: Option<String>,
        size: (u16, u16),
        select: Selection,
        showing: &str,
    ) -> Loader {
        Loader::start(
            move || Target::open(&path, buffer.as_deref(), size, &select),
            showing,
        )
    }

    /// Indexes all of what `target` opens on a thread of its own.
    fn start(
        target: impl FnOnce() -> Result<Target, Error> + Send + 'static,
        showing: &str,
    ) -> Loader {
        let (tx, rx) = mpsc::channel();
        let permille = Arc::new(AtomicU64::new(0));
        let cancel = Arc::new(AtomicBool::new(false));
        let (p, c) = (Arc::clone(&permille), Arc::clone(&cancel));
        thread::spawn(move || {
            let progress = |done: u64, all: u64| {
                p.store(
                    (done * 1000).checked_div(all).unwrap_or(0),
                    Ordering::Relaxed,
                );
                !c.load(Ordering::Relaxed)
            };
            let res = target().and_then(|target| {
                target.app(Extent::All, progress).map(|(app, _)| Loaded {
                    app,
                    file: target.file,
                    buffer: target.buffer,
                })
            });
            // The screen may be gone (the user quit): nothing to tell.
            let _ = tx.send(res);
        });
        Loader {
            rx,
            cancel,
            permille,
            showing: showing.to_string(),
        }
    }

    /// The complete state, once built; `Err` also when the thread died.
    pub fn poll(&self) -> Option<Result<Loaded, Error>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => {
                Some(Err(Error("the indexing thread stopped".into())))
            }
        }
    }

    /// Waits for the complete state.
    pub fn wait(self) -> Result<Loaded, Error> {
        self.rx
            .recv()
            .unwrap_or_else(|_| Err(Error("the indexing thread stopped".into())))
    }

    /// The status text while it runs.
    pub fn status(&self) -> String {
        let p = self.permille.load(Ordering::Relaxed).min(999);
        format!("indexing {}.{}% | {}", p / 10, p % 10, self.showing)
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}
