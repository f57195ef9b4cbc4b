//! The traced command under ptrace, so that the memory maps of every
//! process it runs are saved, even of those that live for a millisecond.
//!
//! Polling `/proc/PID/maps` misses a process that execs and exits between
//! two polls (a shell's `ls`), and then its user stacks cannot be
//! symbolized. So the command is attached with `PTRACE_SEIZE` before it
//! execs, with exec, exit, fork, vfork and clone events but no syscall
//! stops: each exec, exit and fork stops the task once, long enough to read
//! `/proc/PID/{comm,maps}`:
//!
//! * at an exec stop (the new image is in place),
//! * at the exit stop of a process's last thread (the mm is still there,
//!   with everything loaded since the exec),
//! * at a fork of the parent (stopped there), whose maps the child
//!   inherits: its image until it execs; the command's own process is
//!   read once before it is released (a copy of the recorder until its
//!   exec, which runs a few traced syscalls).
//!
//! Between those, the record loop polls the live processes of the tree too
//! (see `MapsTracker::snapshot`). Everything is merged per process in a
//! [`MapsStore`] (see [`crate::merge_maps`] for the rule).
//!
//! The command must behave as without tracing: a signal-delivery stop is
//! resumed with the same signal, a group-stop (SIGSTOP, SIGTSTP, ...) is
//! left in place with `PTRACE_LISTEN` until SIGCONT, and the exit status
//! is the command's own. All ptrace requests and waits run in one
//! dedicated thread, which forks the command (a tracer is a thread, and
//! only it may send requests to its tracees). When the command's process
//! exits the thread ends, and the kernel detaches any tracee left (e.g. a
//! background job that outlives it), which then runs on untraced.
//!
//! The thread waits with `waitpid(-1, __WALL)`: the process must have no
//! other children whose status someone else waits for (record has none).

use crate::{HeldChild, MapsStore};
use anyhow::{anyhow, bail, Context, Result};
use nix::sys::ptrace;
use nix::unistd::Pid;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the ptrace thread saw and did, for the summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TraceStats {
    /// Distinct processes (thread groups) of the command tree.
    pub processes: u64,
    /// Threads started with clone (not counted in `processes`).
    pub threads: u64,
    /// Exec stops.
    pub execs: u64,
    /// Exit stops.
    pub exits: u64,
    /// Signals delivered to the tree (each a stop, resumed with the signal).
    pub signals: u64,
    /// Group-stops (SIGSTOP and friends) left in place with PTRACE_LISTEN.
    pub group_stops: u64,
    /// All ptrace stops.
    pub stops: u64,
    /// /proc maps snapshots taken at stops.
    pub snapshots: u64,
    /// Time spent reading those snapshots (the tracee waits meanwhile).
    pub snapshot_time: Duration,
    /// CPU time (user+system) of the ptrace thread so far.
    pub thread_cpu: Duration,
}

#[derive(Default)]
struct Shared {
    /// The command's exit status once it exited (128 + N for signal N).
    status: Mutex<Option<i32>>,
    /// Notified when `status` is set.
    exited: Condvar,
    stats: Mutex<TraceStats>,
    done: AtomicBool,
}

/// The command of `record COMMAND`, forked and held before its exec, then
/// run under ptrace by a dedicated thread (see the module docs). Without
/// permission to ptrace (e.g. inside a sandbox) it runs untraced and its
/// maps are only polled ([`TracedCommand::is_traced`] is false).
pub struct TracedCommand {
    pid: Pid,
    traced: bool,
    go: Option<mpsc::Sender<()>>,
    started: mpsc::Receiver<Result<(), String>>,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    released: bool,
}

/// What the thread reports once the child is forked (and seized).
type Forked = Result<(Pid, bool), String>;

impl TracedCommand {
    /// Forks `argv` (held before exec) in a new thread and attaches to it
    /// with ptrace unless `ptrace` is false. Snapshots go to `store`.
    pub fn spawn(argv: &[String], store: MapsStore, ptrace: bool) -> Result<TracedCommand> {
        let argv = argv.to_vec();
        let (forked_tx, forked_rx) = mpsc::channel::<Forked>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<Result<(), String>>();
        let shared = Arc::new(Shared::default());
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("record-ptrace".into())
            .spawn(move || {
                let held = match HeldChild::spawn(&argv) {
                    Ok(h) => h,
                    Err(e) => {
                        let _ = forked_tx.send(Err(format!("{e:#}")));
                        return;
                    }
                };
                let traced = ptrace && seize(held.pid).is_ok();
                if traced {
                    // Its image until the exec (a copy of ours): the few
                    // events between the release and the exec have their
                    // stacks there.
                    store.read(held.pid.as_raw() as u32);
                }
                let _ = forked_tx.send(Ok((held.pid, traced)));
                let go = go_rx.recv().is_ok();
                let mut t = Tracer::new(held, store, sh.clone(), started_tx, traced);
                t.run(go);
                sh.done.store(true, Ordering::SeqCst);
            })
            .context("cannot start the ptrace thread")?;
        match forked_rx.recv() {
            Ok(Ok((pid, traced))) => Ok(TracedCommand {
                pid,
                traced,
                go: Some(go_tx),
                started: started_rx,
                shared,
                thread: Some(thread),
                released: false,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(anyhow!(e))
            }
            Err(_) => {
                let _ = thread.join();
                bail!("the ptrace thread ended before starting the command")
            }
        }
    }

    /// The command's pid (its process before exec, then the command).
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// True when the command runs under ptrace (maps taken at every exec
    /// and exit); false when it only gets polled.
    pub fn is_traced(&self) -> bool {
        self.traced
    }

    /// Lets the command exec and waits until it did: a command that cannot
    /// be run is an error here.
    pub fn release(&mut self) -> Result<()> {
        let Some(go) = self.go.take() else {
            return Ok(());
        };
        self.released = true;
        go.send(()).context("the ptrace thread is gone")?;
        match self.started.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(anyhow!(e)),
            Err(_) => bail!("the ptrace thread ended before the command started"),
        }
    }

    /// Non-blocking: `Some(status)` once the command exited (its exit code,
    /// or 128 + N when killed by signal N).
    pub fn try_wait(&self) -> Option<i32> {
        *self.shared.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits up to `timeout` for the command to exit: `Some(status)` as
    /// soon as it did (as [`TracedCommand::try_wait`]), `None` at the
    /// timeout. Lets the record loop notice the exit at once instead of at
    /// its next tick.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<i32> {
        let st = self.shared.status.lock().unwrap_or_else(|e| e.into_inner());
        let (st, _) = self
            .shared
            .exited
            .wait_timeout_while(st, timeout, |s| s.is_none())
            .unwrap_or_else(|e| e.into_inner());
        *st
    }

    /// Ends a command that still runs: SIGTERM, then up to `wait` for it to
    /// exit (under ptrace its last maps are taken at its exit stop).
    /// Returns its status if it ended.
    pub fn terminate(&self, wait: Duration) -> Option<i32> {
        if let Some(st) = self.try_wait() {
            return Some(st);
        }
        let _ = nix::sys::signal::kill(self.pid, nix::sys::signal::Signal::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < wait {
            if let Some(st) = self.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The ptrace counters so far.
    pub fn stats(&self) -> TraceStats {
        self.shared
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for TracedCommand {
    fn drop(&mut self) {
        // Unreleased: closing the go channel makes the thread let the child
        // exit without running and reap it; wait for that. A released
        // command that still runs is left running (as without ptrace); the
        // thread detaches from it when the process exits.
        self.go.take();
        if !self.released || self.shared.done.load(Ordering::SeqCst) {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

const OPTIONS: ptrace::Options = ptrace::Options::PTRACE_O_TRACEEXEC
    .union(ptrace::Options::PTRACE_O_TRACEEXIT)
    .union(ptrace::Options::PTRACE_O_TRACEFORK)
    .union(ptrace::Options::PTRACE_O_TRACEVFORK)
    .union(ptrace::Options::PTRACE_O_TRACECLONE);

fn seize(pid: Pid) -> nix::Result<()> {
    ptrace::seize(pid, OPTIONS)
}

/// PTRACE_CONT with a raw signal number (0: none). nix's `Signal` cannot
/// hold real-time signals, which must be delivered too.
fn cont(pid: i32, sig: i32) {
    // SAFETY: PTRACE_CONT takes no pointers; the data argument is the
    // signal number. An error (the tracee died meanwhile) is harmless.
    unsafe {
        libc::ptrace(
            libc::PTRACE_CONT,
            pid,
            std::ptr::null_mut::<libc::c_void>(),
            sig as libc::c_long as *mut libc::c_void,
        );
    }
}

/// PTRACE_LISTEN: leave a group-stopped tracee stopped, but let it report
/// the next change (SIGCONT, SIGKILL) as a stop.
fn listen(pid: i32) {
    // SAFETY: PTRACE_LISTEN takes no pointers.
    unsafe {
        libc::ptrace(
            libc::PTRACE_LISTEN,
            pid,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
        );
    }
}

/// `waitpid(-1, __WALL)`, retried on EINTR; `None` when no child is left.
fn wait_any() -> Option<(i32, i32)> {
    loop {
        let mut status = 0;
        // SAFETY: status is a valid out pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if pid > 0 {
            return Some((pid, status));
        }
        if nix::errno::Errno::last() != nix::errno::Errno::EINTR {
            return None;
        }
    }
}

fn read_tgid(tid: i32) -> Option<i32> {
    crate::maps::tgid_of(u32::try_from(tid).ok()?).and_then(|t| i32::try_from(t).ok())
}

/// The state of the ptrace thread.
struct Tracer {
    held: HeldChild,
    root: i32,
    store: MapsStore,
    shared: Arc<Shared>,
    started: Option<mpsc::Sender<Result<(), String>>>,
    traced: bool,
    /// Live tasks: tid -> tgid.
    tasks: HashMap<i32, i32>,
    /// Live tasks per thread group.
    group_size: HashMap<i32, u32>,
    /// Every thread group seen.
    groups: HashSet<i32>,
    stats: TraceStats,
}

impl Tracer {
    fn new(
        held: HeldChild,
        store: MapsStore,
        shared: Arc<Shared>,
        started: mpsc::Sender<Result<(), String>>,
        traced: bool,
    ) -> Tracer {
        let root = held.pid.as_raw();
        let mut t = Tracer {
            held,
            root,
            store,
            shared,
            started: Some(started),
            traced,
            tasks: HashMap::new(),
            group_size: HashMap::new(),
            groups: HashSet::new(),
            stats: TraceStats::default(),
        };
        t.add_task(root, root);
        t
    }

    fn add_task(&mut self, tid: i32, tgid: i32) {
        self.store.add_thread(tid as u32, tgid as u32);
        if self.tasks.insert(tid, tgid).is_none() {
            let n = self.group_size.entry(tgid).or_insert(0);
            *n += 1;
            if *n == 1 && self.traced {
                self.store.set_traced(tgid as u32, true);
            }
            if self.groups.insert(tgid) {
                self.stats.processes += 1;
            } else if *n > 1 {
                self.stats.threads += 1;
            }
        }
    }

    /// Removes a task; true when it was the last of its thread group.
    fn remove_task(&mut self, tid: i32) -> bool {
        let Some(tgid) = self.tasks.remove(&tid) else {
            return false;
        };
        let n = self.group_size.entry(tgid).or_insert(1);
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.group_size.remove(&tgid);
            self.store.set_traced(tgid as u32, false);
            return true;
        }
        false
    }

    fn tgid(&self, tid: i32) -> i32 {
        match self.tasks.get(&tid) {
            Some(&g) => g,
            None => read_tgid(tid).unwrap_or(tid),
        }
    }

    fn snapshot(&mut self, tgid: i32) {
        let t0 = Instant::now();
        if self.store.read(tgid as u32) {
            self.stats.snapshots += 1;
        }
        self.stats.snapshot_time += t0.elapsed();
    }

    fn publish(&mut self) {
        self.stats.thread_cpu = crate::thread_cpu();
        *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner()) = self.stats.clone();
    }

    fn set_status(&self, status: i32) {
        *self.shared.status.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
        self.shared.exited.notify_all();
    }

    /// Tells `release` how the start went (once).
    fn report_start(&mut self, r: Result<(), String>) {
        if let Some(tx) = self.started.take() {
            let _ = tx.send(r);
        }
    }

    /// The errno the child wrote into the exec-error pipe when its exec
    /// failed; `None` at EOF (the exec succeeded, or it never tried) and
    /// when the pipe cannot be read.
    fn exec_errno(&mut self) -> Option<nix::errno::Errno> {
        self.held.take_exec_errno().ok().flatten()
    }

    /// Why the command ended before its exec.
    fn exec_error(&mut self, status: i32) -> String {
        match self.exec_errno() {
            Some(errno) => format!("cannot run {}: {}", self.held.program, errno.desc()),
            None => format!(
                "{} ended (status {status}) before it could be run",
                self.held.program
            ),
        }
    }

    fn run(&mut self, go: bool) {
        // Without the go byte the child exits (126) instead of exec'ing.
        if let Some(w) = self.held.go.take() {
            if go {
                if let Err(e) = nix::unistd::write(&w, b"g") {
                    self.report_start(Err(format!("starting the command: {e}")));
                }
            }
        }
        if !self.traced {
            self.run_untraced();
        } else {
            self.run_traced();
        }
        self.publish();
    }

    /// Without ptrace: wait for the exec (EOF on the exec-error pipe), then
    /// for the exit.
    fn run_untraced(&mut self) {
        let mut exec_failed = None;
        if self.started.is_some() {
            match self.exec_errno() {
                Some(errno) => {
                    exec_failed = Some(format!(
                        "cannot run {}: {}",
                        self.held.program,
                        errno.desc()
                    ))
                }
                None => self.report_start(Ok(())),
            }
        }
        use nix::sys::wait::{waitpid, WaitStatus};
        let status = loop {
            match waitpid(self.held.pid, None) {
                Ok(WaitStatus::Exited(_, code)) => break code,
                Ok(WaitStatus::Signaled(_, sig, _)) => break 128 + sig as i32,
                Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => break -1,
            }
        };
        if let Some(m) = exec_failed {
            self.report_start(Err(m));
        }
        self.set_status(status);
    }

    fn run_traced(&mut self) {
        while let Some((pid, st)) = wait_any() {
            if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
                self.remove_task(pid);
                if pid == self.root {
                    let code = if libc::WIFEXITED(st) {
                        libc::WEXITSTATUS(st)
                    } else {
                        128 + libc::WTERMSIG(st)
                    };
                    if self.started.is_some() {
                        let msg = self.exec_error(code);
                        self.report_start(Err(msg));
                    }
                    self.set_status(code);
                    // The tracees left (background jobs) are detached by
                    // the kernel when this thread ends.
                    return;
                }
                continue;
            }
            if !libc::WIFSTOPPED(st) {
                continue;
            }
            self.stats.stops += 1;
            let sig = libc::WSTOPSIG(st);
            let event = st >> 16;
            if !self.tasks.contains_key(&pid) {
                // A new task's first stop can come before its parent's
                // fork/clone event.
                let tgid = read_tgid(pid).unwrap_or(pid);
                self.add_task(pid, tgid);
            }
            match event {
                0 => {
                    // Signal-delivery stop: deliver it as the kernel would.
                    self.stats.signals += 1;
                    cont(pid, sig);
                }
                libc::PTRACE_EVENT_EXEC => {
                    self.stats.execs += 1;
                    // A non-leader thread that execs takes over the
                    // leader's pid; forget its old tid.
                    if let Ok(old) = ptrace::getevent(Pid::from_raw(pid)) {
                        let old = old as i32;
                        if old != pid {
                            self.remove_task(old);
                            self.add_task(pid, pid);
                        }
                    }
                    let tgid = self.tgid(pid);
                    self.snapshot(tgid);
                    if pid == self.root {
                        self.report_start(Ok(()));
                    }
                    cont(pid, 0);
                }
                libc::PTRACE_EVENT_EXIT => {
                    self.stats.exits += 1;
                    let tgid = self.tgid(pid);
                    // The last thread of a process (or its leader) takes
                    // the final snapshot: everything loaded since the exec.
                    if self.remove_task(pid) || pid == tgid {
                        self.snapshot(tgid);
                    }
                    cont(pid, 0);
                }
                libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                    if let Ok(child) = ptrace::getevent(Pid::from_raw(pid)) {
                        let child = child as i32;
                        let parent = self.tgid(pid);
                        if !self.tasks.contains_key(&child) {
                            self.add_task(child, child);
                        }
                        // The parent, stopped here, has the child's image
                        // (libraries loaded since its exec snapshot too).
                        self.snapshot(parent);
                        self.store.inherit(child as u32, parent as u32);
                    }
                    cont(pid, 0);
                }
                libc::PTRACE_EVENT_CLONE => {
                    if let Ok(child) = ptrace::getevent(Pid::from_raw(pid)) {
                        let child = child as i32;
                        if !self.tasks.contains_key(&child) {
                            let tgid = read_tgid(child).unwrap_or(child);
                            self.add_task(child, tgid);
                            if tgid == child {
                                // clone() of a new process.
                                let parent = self.tgid(pid);
                                self.snapshot(parent);
                                self.store.inherit(child as u32, parent as u32);
                            }
                        }
                    }
                    cont(pid, 0);
                }
                libc::PTRACE_EVENT_STOP => {
                    if matches!(
                        sig,
                        libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
                    ) {
                        // Group-stop: stay stopped until SIGCONT.
                        self.stats.group_stops += 1;
                        listen(pid);
                    } else {
                        // A new task's first stop, or the end of a
                        // group-stop under PTRACE_LISTEN.
                        cont(pid, 0);
                    }
                }
                _ => cont(pid, 0),
            }
            if self.stats.stops % 64 == 0 {
                self.publish();
            }
        }
        // No child left without having seen the command exit: cannot
        // happen for our own child, but never leave `release` hanging.
        self.report_start(Err("the command vanished".into()));
        self.set_status(-1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `wait_timeout` times out while the command runs and returns its
    /// status as soon as it exits (not at the end of the timeout), with and
    /// without ptrace. (Under ptrace the thread reaps any child of the
    /// process: no other unit test of this crate may fork.)
    #[test]
    fn wait_timeout_returns_the_status_as_soon_as_the_command_exits() {
        for ptrace in [false, true] {
            let argv: Vec<String> = ["sh", "-c", "sleep 0.3; exit 3"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let mut c = TracedCommand::spawn(&argv, MapsStore::default(), ptrace).unwrap();
            c.release().unwrap();
            assert_eq!(c.wait_timeout(Duration::from_millis(10)), None);
            let t0 = Instant::now();
            assert_eq!(c.wait_timeout(Duration::from_secs(20)), Some(3));
            assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
            assert_eq!(c.try_wait(), Some(3));
        }
    }
}
