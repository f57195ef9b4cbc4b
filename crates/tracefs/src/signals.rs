//! Stopping cleanly on SIGINT/SIGTERM/SIGHUP.
//!
//! [`install`] blocks these signals in the calling thread (threads spawned
//! afterwards inherit the mask; child processes started with
//! `std::process::Command` get a clean mask) and starts one thread that
//! waits for them with sigwait(2):
//!
//! * the first signal only sets a flag ([`stop_requested`]): the recorder
//!   sees it, stops, flushes every CPU, writes its file, and its
//!   [`crate::Guard`] restores the settings as it is dropped;
//! * a later signal (more than a second after the first: duplicates that
//!   arrive together, as from a terminal plus `timeout`, are ignored) only
//!   says that the stop is in progress; one more aborts: the settings are
//!   restored through the registered [`Restorer`] right away, instances
//!   still held open are removed by a helper process once this one has
//!   exited, and the process exits with 128 + signal.
//!
//! No code runs in signal-handler context, so there is no async-signal-safety
//! problem.

use crate::error::{Error, Op, Result};
use crate::guard::Restorer;
use nix::sys::signal::{SigSet, Signal};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static INSTALLED: OnceLock<()> = OnceLock::new();
static RESTORER: Mutex<Option<Restorer>> = Mutex::new(None);
static ABORT_FILES: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());
/// Signals within this time after the first one are taken as duplicates.
const GRACE: std::time::Duration = std::time::Duration::from_secs(1);

fn stop_set() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGHUP);
    set
}

/// Blocks SIGINT/SIGTERM/SIGHUP and starts the signal thread (once per
/// process). Call it before spawning worker threads.
pub fn install() -> Result<()> {
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let set = stop_set();
    set.thread_block()
        .map_err(|e| Error::errno(Op::Signal, "SIGINT/SIGTERM", e))?;
    std::thread::Builder::new()
        .name("tracefs-signals".into())
        .spawn(move || {
            let mut first: Option<std::time::Instant> = None;
            let mut later = 0u32;
            loop {
                let Ok(sig) = set.wait() else { continue };
                SIGNAL.store(sig as i32, Ordering::SeqCst);
                STOP.store(true, Ordering::SeqCst);
                // The same signal often arrives twice at once (a terminal's
                // Ctrl-C to the process group and `timeout` both signal the
                // process and its group): only a signal that comes later than
                // GRACE after the first one means "stop now".
                match first {
                    None => {
                        first = Some(std::time::Instant::now());
                        continue;
                    }
                    Some(t) if t.elapsed() < GRACE => continue,
                    Some(_) => {}
                }
                later += 1;
                if later == 1 {
                    eprintln!(
                        "tracefs: still stopping (draining the buffers, writing the file); \
                         signal once more to abort"
                    );
                    continue;
                }
                // The clean path did not finish: restore and go.
                let restorer = RESTORER.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if let Some(r) = restorer {
                    let (errors, busy) = r.restore_deferring_busy();
                    for e in errors {
                        eprintln!("{e}");
                    }
                    remove_after_exit(&busy);
                }
                for f in ABORT_FILES.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                    let _ = std::fs::remove_file(f);
                }
                std::process::exit(128 + sig as i32);
            }
        })
        .map_err(|e| Error::io(Op::Signal, "signal thread", e))?;
    let _ = INSTALLED.set(());
    Ok(())
}

/// Removes the directories (instances still held open by this process's
/// readers) from a small child process once this process has exited.
fn remove_after_exit(dirs: &[std::path::PathBuf]) {
    use std::os::unix::ffi::OsStrExt;
    let paths: Vec<std::ffi::CString> = dirs
        .iter()
        .filter_map(|d| std::ffi::CString::new(d.as_os_str().as_bytes()).ok())
        .collect();
    if paths.is_empty() {
        return;
    }
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the child only calls async-signal-safe functions (getppid,
    // nanosleep, rmdir, _exit) on data prepared before the fork.
    if let Ok(nix::unistd::ForkResult::Child) = unsafe { nix::unistd::fork() } {
        unsafe {
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
            for p in &paths {
                libc::rmdir(p.as_ptr());
            }
            libc::_exit(0);
        }
    }
}

/// Registers the restorer used when the stop is aborted.
pub fn set_restorer(r: Option<Restorer>) {
    *RESTORER.lock().unwrap_or_else(|p| p.into_inner()) = r;
}

/// Files to delete if the stop is aborted (temp files, a half-written
/// output); replaces the previous list.
pub fn remove_on_abort(files: Vec<std::path::PathBuf>) {
    *ABORT_FILES.lock().unwrap_or_else(|p| p.into_inner()) = files;
}

/// Whether a stop was requested (by a signal or [`request_stop`]).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Requests a stop as if a signal had arrived (no signal number recorded).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// The last signal received, if any.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
