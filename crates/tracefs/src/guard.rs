//! A guard that restores every tracefs setting it changed.

use crate::error::{Error, Result};
use crate::instance::{parse_buffer_size, OwnedInstance};
use crate::journal::{self, Line};
use crate::{fsio, EventId, Instance};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
enum Entry {
    /// Write `value` back to `abs` (O_TRUNC, one write).
    Write {
        abs: PathBuf,
        shown: String,
        value: String,
    },
    /// Remove an instance we created.
    Instance(OwnedInstance),
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    seen: HashSet<PathBuf>,
    /// Where the entries are kept on disk (see [`crate::journal`]).
    journal: Option<PathBuf>,
}

impl Inner {
    /// Rewrites the journal, if any. Callers other than
    /// [`Guard::journal_to`] ignore a failure: the file is a safety net for
    /// a killed process, the entries in memory are what restores.
    fn save_journal(&self) -> Result<()> {
        let Some(path) = &self.journal else {
            return Ok(());
        };
        let lines: Vec<Line> = self
            .entries
            .iter()
            .map(|e| match e {
                Entry::Write { abs, value, .. } => Line::Write(abs.clone(), value.clone()),
                Entry::Instance(owned) => Line::Rmdir(owned.dir()),
            })
            .collect();
        journal::save(path, &lines)
    }

    fn remove_journal(&mut self) {
        if let Some(path) = self.journal.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A cloneable handle that can restore a [`Guard`]'s settings from another
/// thread (the signal thread uses it). Restoring twice is harmless: the
/// first call takes the list of saved values.
#[derive(Debug, Clone, Default)]
pub struct Restorer {
    inner: Arc<Mutex<Inner>>,
}

impl Restorer {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts every saved value back, newest change first, and removes the
    /// instances that were handed over. Returns the errors (all restores are
    /// attempted even when one fails).
    pub fn restore(&self) -> Vec<Error> {
        self.restore_inner(false).0
    }

    /// Like [`Restorer::restore`], but an instance that cannot be removed
    /// because it is still in use (EBUSY: files of it are open in this
    /// process) is not an error: its directory is returned, to be removed
    /// once the process is gone.
    pub fn restore_deferring_busy(&self) -> (Vec<Error>, Vec<PathBuf>) {
        self.restore_inner(true)
    }

    fn restore_inner(&self, defer_busy: bool) -> (Vec<Error>, Vec<PathBuf>) {
        let (entries, journal) = {
            let mut inner = self.lock();
            inner.seen.clear();
            (std::mem::take(&mut inner.entries), inner.journal.take())
        };
        let mut errors = Vec::new();
        let mut busy = Vec::new();
        for e in entries.into_iter().rev() {
            match e {
                Entry::Write { abs, shown, value } => {
                    if let Err(err) = fsio::write(&abs, &shown, value.as_bytes(), true) {
                        errors.push(err);
                    }
                }
                Entry::Instance(owned) => {
                    let dir = owned.dir();
                    if let Err(err) = owned.remove() {
                        if defer_busy && err.raw_os_error() == Some(libc::EBUSY) {
                            busy.push(dir);
                        } else {
                            errors.push(err);
                        }
                    }
                }
            }
        }
        match journal {
            // Everything is back: nothing for a later run to restore.
            Some(path) if errors.is_empty() && busy.is_empty() => {
                let _ = std::fs::remove_file(path);
            }
            // Keep the file for the next run (or reset) to try again.
            Some(path) => self.lock().journal = Some(path),
            None => {}
        }
        (errors, busy)
    }

    /// The journal file of the settings, while it is kept: after a restore
    /// that left instances to remove later, for whoever removes them.
    pub fn journal(&self) -> Option<PathBuf> {
        self.lock().journal.clone()
    }

    /// How many settings are waiting to be restored.
    pub fn pending(&self) -> usize {
        self.lock().entries.len()
    }
}

/// Removes the directories (instances still held open by this process's
/// readers, as [`Restorer::restore_deferring_busy`] returns them) from a
/// small child process once this process has exited (waiting up to 10 s
/// for that), then `journal` (see [`Restorer::journal`]) if every one is
/// gone: nothing is left to restore. For a process about to exit without
/// closing its readers.
///
/// The child closes every file it inherited first: a copy of a reader's
/// file in it would keep the instance busy for good.
pub fn remove_dirs_after_exit(dirs: &[PathBuf], journal: Option<&std::path::Path>) {
    use std::os::unix::ffi::OsStrExt;
    let cstr = |p: &std::path::Path| std::ffi::CString::new(p.as_os_str().as_bytes()).ok();
    let paths: Vec<std::ffi::CString> = dirs.iter().filter_map(|d| cstr(d)).collect();
    if paths.is_empty() {
        return;
    }
    // The journal as it is now: a run that starts once this process is
    // gone writes a new one at the same path, which must stay.
    let journal = journal.and_then(|j| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(j).ok()?;
        Some((cstr(j)?, m.dev(), m.ino()))
    });
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the child only calls async-signal-safe functions (sysconf,
    // close, getppid, nanosleep, rmdir, stat, unlink, _exit) on data
    // prepared before the fork.
    if let Ok(nix::unistd::ForkResult::Child) = unsafe { nix::unistd::fork() } {
        // SAFETY: in the forked child: only async-signal-safe libc calls,
        // on the C strings built before the fork; it ends with _exit.
        unsafe {
            let max = match libc::sysconf(libc::_SC_OPEN_MAX) {
                n if n > 0 => n.min(1 << 16) as libc::c_int,
                _ => 1024,
            };
            for fd in 3..max {
                libc::close(fd);
            }
            let tick = libc::timespec {
                tv_sec: 0,
                tv_nsec: 20_000_000,
            };
            // Up to 10 s for the parent to go away.
            for _ in 0..500 {
                if libc::getppid() != parent {
                    break;
                }
                libc::nanosleep(&tick, std::ptr::null_mut());
            }
            let mut all = true;
            for p in &paths {
                if libc::rmdir(p.as_ptr()) != 0 && *libc::__errno_location() != libc::ENOENT {
                    all = false;
                }
            }
            if let (true, Some((j, dev, ino))) = (all, &journal) {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::stat(j.as_ptr(), &mut st) == 0 && st.st_dev == *dev && st.st_ino == *ino {
                    libc::unlink(j.as_ptr());
                }
            }
            libc::_exit(0);
        }
    }
}

/// Changes tracefs settings and remembers their previous values; the values
/// are put back when the guard is dropped (or [`Guard::restore`] is called).
///
/// Only the first change of a file saves its value, so the original value is
/// what comes back. Settings are restored newest first; instances handed to
/// [`Guard::adopt_instance`] are removed after their settings.
///
/// Errors of the restore that happens on drop go to the function given to
/// [`Guard::on_drop_error`] (none by default: the library prints nothing);
/// call [`Guard::restore`] to get them as a `Result` instead.
#[derive(Default)]
pub struct Guard {
    restorer: Restorer,
    on_drop_error: Option<ErrorSink>,
}

/// Where the errors of a restore on drop go.
type ErrorSink = Box<dyn Fn(&Error) + Send>;

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("restorer", &self.restorer)
            .finish_non_exhaustive()
    }
}

impl Guard {
    /// A guard with nothing to restore yet.
    pub fn new() -> Guard {
        Guard::default()
    }

    /// Where the errors of the restore on drop go (e.g. the program's
    /// stderr).
    pub fn on_drop_error(&mut self, report: impl Fn(&Error) + Send + 'static) {
        self.on_drop_error = Some(Box::new(report));
    }

    /// A handle for restoring from elsewhere (e.g. a signal thread).
    pub fn restorer(&self) -> Restorer {
        self.restorer.clone()
    }

    /// Saves `value` as what `inst/rel` must be set back to, unless that file
    /// was saved already.
    pub fn remember(&self, inst: &Instance, rel: &str, value: String) {
        let abs = inst.path(rel);
        let mut inner = self.restorer.lock();
        if inner.seen.insert(abs.clone()) {
            inner.entries.push(Entry::Write {
                abs,
                shown: inst.shown(rel),
                value,
            });
            let _ = inner.save_journal();
        }
    }

    fn saved(&self, inst: &Instance, rel: &str) -> bool {
        self.restorer.lock().seen.contains(&inst.path(rel))
    }

    /// Takes an instance this program created; it is removed on restore,
    /// after the settings changed in it.
    pub fn adopt_instance(&self, owned: OwnedInstance) -> Instance {
        let inst = owned.instance().clone();
        let mut inner = self.restorer.lock();
        inner.entries.push(Entry::Instance(owned));
        let _ = inner.save_journal();
        inst
    }

    /// Sets an option by name.
    pub fn set_option(&self, inst: &Instance, name: &str, on: bool) -> Result<()> {
        let old = inst.option(name)?;
        if old == on {
            return Ok(());
        }
        self.remember(
            inst,
            &format!("options/{name}"),
            if old { "1" } else { "0" }.into(),
        );
        inst.set_option(name, on)
    }

    /// Enables or disables one event.
    pub fn set_event_enabled(&self, inst: &Instance, e: &EventId, on: bool) -> Result<()> {
        let old = inst.event_enabled(e)?;
        if old != on {
            self.remember(
                inst,
                &format!("events/{}/{}/enable", e.system, e.name),
                if old { "1" } else { "0" }.into(),
            );
        }
        inst.set_event_enabled(e, on)
    }

    /// Disables every event of the instance, remembering which were
    /// enabled (from `set_event`) so exactly those come back.
    pub fn disable_all_events(&self, inst: &Instance) -> Result<()> {
        for e in inst.enabled_events()? {
            self.remember(
                inst,
                &format!("events/{}/{}/enable", e.system, e.name),
                "1".into(),
            );
        }
        inst.disable_all_events()
    }

    /// Sets the system-wide filter of `system` (see
    /// [`Instance::set_system_filter`]). The filters of `events` (the
    /// system's events) are saved first, so they come back after the
    /// system filter is cleared.
    pub fn set_system_filter(
        &self,
        inst: &Instance,
        system: &str,
        events: &[EventId],
        filter: &str,
    ) -> Result<()> {
        for e in events.iter().filter(|e| e.system == system) {
            let old = inst.event_filter(e)?;
            self.remember(
                inst,
                &format!("events/{}/{}/filter", e.system, e.name),
                old.unwrap_or_else(|| "0".into()),
            );
        }
        self.remember(inst, &format!("events/{system}/filter"), "0".into());
        inst.set_system_filter(system, Some(filter))
    }

    /// Sets (or with `None` clears) an event filter.
    pub fn set_event_filter(
        &self,
        inst: &Instance,
        e: &EventId,
        filter: Option<&str>,
    ) -> Result<()> {
        let old = inst.event_filter(e)?;
        self.remember(
            inst,
            &format!("events/{}/{}/filter", e.system, e.name),
            old.unwrap_or_else(|| "0".into()),
        );
        inst.set_event_filter(e, filter)
    }

    /// Sets `buffer_size_kb` (all CPUs).
    pub fn set_buffer_size_kb(&self, inst: &Instance, kb: u64) -> Result<()> {
        if !self.saved(inst, "buffer_size_kb") {
            let raw = inst.read_string("buffer_size_kb")?;
            match parse_buffer_size(&raw) {
                Ok(Some(old)) => self.remember(inst, "buffer_size_kb", old.to_string()),
                _ => {
                    // CPUs differ: save each one.
                    for cpu in inst.cpus()? {
                        let old = inst.cpu_buffer_size_kb(cpu)?;
                        self.remember(
                            inst,
                            &format!("per_cpu/cpu{cpu}/buffer_size_kb"),
                            old.to_string(),
                        );
                    }
                    // Mark the top file as saved so a later call does not save "X".
                    self.restorer
                        .lock()
                        .seen
                        .insert(inst.path("buffer_size_kb"));
                }
            }
        }
        inst.set_buffer_size_kb(kb)
    }

    /// Sets `buffer_subbuf_size_kb` (the ring buffer's sub-buffer size, a
    /// power of two; changing it empties the buffer).
    pub fn set_subbuf_size_kb(&self, inst: &Instance, kb: u64) -> Result<()> {
        self.set_number(inst, "buffer_subbuf_size_kb", kb)
    }

    /// Sets `user_stack_snapshot_size` (bytes of user stack the ustack
    /// kernel patches copy per kernel entry; 0 is off).
    pub fn set_user_stack_snapshot_size(&self, inst: &Instance, bytes: u64) -> Result<()> {
        self.set_number(inst, "user_stack_snapshot_size", bytes)
    }

    /// Writes number `value` to file `rel`, remembering the old text, when
    /// it differs.
    fn set_number(&self, inst: &Instance, rel: &str, value: u64) -> Result<()> {
        let old = inst.read_string(rel)?;
        if old.trim() == value.to_string() {
            return Ok(());
        }
        self.remember(inst, rel, old.trim().to_string());
        inst.write(rel, &value.to_string())
    }

    /// Sets `trace_clock`.
    pub fn set_trace_clock(&self, inst: &Instance, clock: &str) -> Result<()> {
        let (old, _) = inst.trace_clock()?;
        if old == clock {
            return Ok(());
        }
        self.remember(inst, "trace_clock", old);
        inst.set_trace_clock(clock)
    }

    /// Sets `tracing_on`.
    pub fn set_tracing_on(&self, inst: &Instance, on: bool) -> Result<()> {
        let old = inst.tracing_on()?;
        self.remember(inst, "tracing_on", if old { "1" } else { "0" }.into());
        inst.set_tracing_on(on)
    }

    /// Sets `current_tracer` (only written when it differs).
    pub fn set_current_tracer(&self, inst: &Instance, tracer: &str) -> Result<()> {
        let old = inst.current_tracer()?;
        if old == tracer {
            return Ok(());
        }
        self.remember(inst, "current_tracer", old);
        inst.set_current_tracer(tracer)
    }

    /// Replaces `set_event_pid`.
    pub fn set_event_pids(&self, inst: &Instance, pids: &[u32]) -> Result<()> {
        let old = inst.event_pids()?;
        let list: Vec<String> = old.iter().map(|p| p.to_string()).collect();
        self.remember(inst, "set_event_pid", list.join(" "));
        inst.set_event_pids(pids)
    }

    /// Restores now; returns the first error after attempting everything.
    pub fn restore(&self) -> Result<()> {
        match self.restorer.restore().into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Forgets the saved values: the changes stay (used by `start`).
    /// Adopted instances are kept too.
    pub fn forget(self) {
        let mut inner = self.restorer.lock();
        for e in std::mem::take(&mut inner.entries) {
            if let Entry::Instance(owned) = e {
                let _ = owned.keep();
            }
        }
        inner.seen.clear();
        inner.remove_journal();
    }

    /// Keeps the saved values in the file `path` too, rewritten before
    /// each change, so that [`crate::replay_journal`] can restore them if
    /// this process is killed before it restores. The file is removed once
    /// everything is restored (or forgotten).
    pub fn journal_to(&self, path: PathBuf) -> Result<()> {
        let mut inner = self.restorer.lock();
        inner.journal = Some(path);
        inner.save_journal()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let errors = self.restorer.restore();
        if let Some(report) = &self.on_drop_error {
            for e in &errors {
                report(e);
            }
        }
    }
}
