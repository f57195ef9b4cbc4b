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
//! * a second signal, more than a second after the first, restores right
//!   away through the registered [`Restorer`] and exits with 128 + signal,
//!   for when the clean path hangs (duplicates arriving together, as from
//!   a terminal plus `timeout`, are ignored).
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
                // Second signal: the clean path did not finish; restore and go.
                let restorer = RESTORER.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if let Some(r) = restorer {
                    for e in r.restore() {
                        eprintln!("{e}");
                    }
                }
                std::process::exit(128 + sig as i32);
            }
        })
        .map_err(|e| Error::io(Op::Signal, "signal thread", e))?;
    let _ = INSTALLED.set(());
    Ok(())
}

/// Registers the restorer used when a second signal arrives.
pub fn set_restorer(r: Option<Restorer>) {
    *RESTORER.lock().unwrap_or_else(|p| p.into_inner()) = r;
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
