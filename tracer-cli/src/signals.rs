//! Stopping cleanly on SIGINT/SIGTERM/SIGHUP: the program's signal policy
//! (the library crates print nothing and never exit).
//!
//! [`install`] blocks these signals in the calling thread (threads spawned
//! afterwards inherit the mask; child processes started with
//! `std::process::Command` get a clean mask) and starts one thread that
//! waits for them with sigwait(2):
//!
//! * the first signal only sets a flag ([`stop_requested`]): the recorder
//!   sees it, stops, flushes every CPU, writes its file, and its
//!   [`ustack_tracefs::Guard`] restores the settings;
//! * a later signal (more than a second after the first: duplicates that
//!   arrive together, as from a terminal plus `timeout`, are ignored) only
//!   says that the stop is in progress; one more aborts: the settings are
//!   restored through the registered [`Restorer`] right away, instances
//!   still held open are removed by a helper process once this one has
//!   exited, and the process exits with 128 + signal.
//!
//! No code runs in signal-handler context, so there is no async-signal-safety
//! problem.

use anyhow::{Context, Result};
use nix::sys::signal::{SigSet, Signal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use ustack_tracefs::Restorer;

static STOP: AtomicBool = AtomicBool::new(false);
static EXIT_ON_HANGUP: AtomicBool = AtomicBool::new(false);
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
    set.thread_block().context("cannot block SIGINT/SIGTERM")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut first: Option<std::time::Instant> = None;
            let mut later = 0u32;
            loop {
                let Ok(sig) = set.wait() else { continue };
                STOP.store(true, Ordering::SeqCst);
                if sig == Signal::SIGHUP && EXIT_ON_HANGUP.load(Ordering::SeqCst) {
                    abort(sig);
                }
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
                    say(
                        "tracer-cli: still stopping (draining the buffers, writing the file); \
                         signal once more to abort",
                    );
                    continue;
                }
                // The clean path did not finish: restore and go.
                abort(sig);
            }
        })
        .context("cannot start the signal thread")?;
    let _ = INSTALLED.set(());
    Ok(())
}

/// Prints a line on stderr, if there still is one: the signal thread must
/// outlive a terminal that went away (a hangup), or the signals it blocks
/// in every other thread could never stop the process again.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
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

/// Restores the settings through the registered restorer, removes the
/// abort files and exits with 128 + `sig`.
fn abort(sig: Signal) -> ! {
    let restorer = RESTORER.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(r) = restorer {
        let (errors, busy) = r.restore_deferring_busy();
        for e in errors {
            say(&format!("tracer-cli: {e}"));
        }
        ustack_tracefs::remove_dirs_after_exit(&busy, r.journal().as_deref());
    }
    for f in ABORT_FILES.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        let _ = std::fs::remove_file(f);
    }
    std::process::exit(128 + sig as i32);
}

/// From now on a hangup (SIGHUP: the terminal went away) aborts at once,
/// as a third signal does: for a program whose only output is that
/// terminal. The TUI's input library never returns once its terminal has
/// hung up, so the clean path could not run.
pub fn exit_on_hangup() {
    EXIT_ON_HANGUP.store(true, Ordering::SeqCst);
}

/// Whether a stop was requested by a signal.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Prints an error of a restore that happened on drop (for
/// [`ustack_tracefs::Guard::on_drop_error`]).
pub fn report(e: &ustack_tracefs::Error) {
    eprintln!("tracer-cli: {e}");
}
