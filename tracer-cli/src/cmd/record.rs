//! `tracer-cli record`: set up tracing, read every CPU's ring buffer with
//! splice into per-CPU files, and write a trace.dat file.
//!
//! It follows `trace-cmd record`: the same option letters, per-CPU temp files
//! named `<output>.cpuN`, a flush of every CPU on stop (tracing_on 0, then
//! drain `trace_pipe_raw` including the partial last page), CPUSTAT taken at
//! the end. Every tracefs setting that is changed is put back afterwards
//! (also after Ctrl-C/SIGTERM), and an instance created for `-B` is removed.
//!
//! The setup part ([`TraceOpts`], [`setup`]) is shared with `start`, and the
//! metadata/writing part ([`collect_meta`], [`write_dat`]) with `extract`.
//!
//! PROCMAPS (the memory maps that let user stacks be symbolized later):
//! the command given on the command line runs under ptrace
//! ([`TracedCommand`], module `tracee`), so every process it execs has its
//! maps read at its exec and its exit, however short it lives; `--no-ptrace`
//! polls instead. `-P` pids are someone else's processes: they and their
//! descendants are polled ([`MapsTracker`]), as are the processes seen with
//! user stacks in the data. All snapshots of a pid are merged into its one
//! PROCMAPS entry ([`merge_maps`]: union, the newest wins on overlap).

use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::CString;
use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracedata::compress::Compression;
use tracedata::writer::{
    write_trace_dat, BufferData, CpuData, EventSystem, FileVersion, LibMap, ProcMap, TraceMeta,
    WriteOptions, WriteSummary,
};
use tracefs::{signals, CpuStats, EventId, EventSpec, Guard, Instance, Tracefs};

use super::opts::OutputOpts;

mod tracee;
pub(crate) use tracee::TracedCommand;

/// Which user-space stacks to record.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UserStacks {
    /// No user stacks.
    #[default]
    Off,
    /// The stock `userstacktrace` option: a `user_stack` event (8 frames)
    /// right after each event, taken in place.
    Sync,
    /// The `userstacktrace_delay` option of the ustack kernel patches: a
    /// cookie after each event, the stack when the task returns to user space.
    Deferred,
}

/// Tracing options shared by `record` and `start`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TraceOpts {
    /// Event to enable: SYSTEM, SYSTEM:EVENT, EVENT or `all` (globs allowed). Repeatable.
    #[arg(short = 'e', value_name = "SYSTEM[:EVENT]")]
    pub events: Vec<String>,
    /// Filter for the events of the preceding -e (kernel filter syntax).
    #[arg(short = 'f', value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Use this instance (created when missing, and then removed by record).
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instance: Option<String>,
    /// Ring-buffer size per CPU in KiB.
    #[arg(short = 'b', value_name = "KB")]
    pub buffer_kb: Option<u64>,
    /// Record a kernel stack after every event (the `stacktrace` option).
    #[arg(short = 'T')]
    pub kernel_stacks: bool,
    /// Record user stacks: off, sync (`userstacktrace`) or deferred (`userstacktrace_delay`).
    #[arg(long = "user-stacks", value_enum, default_value_t = UserStacks::Off)]
    pub user_stacks: UserStacks,
    /// Tracer to use (e.g. `user_unwind`); by default the current one is kept.
    #[arg(short = 'p', value_name = "TRACER")]
    pub tracer: Option<String>,
    /// Only trace these pids (set_event_pid). Repeatable.
    #[arg(short = 'P', value_name = "PID")]
    pub pids: Vec<u32>,
    /// Only trace the command given on the command line (and its children).
    #[arg(short = 'F')]
    pub filter_command: bool,
    /// With -P, also trace the children the pids fork (event-fork option).
    #[arg(short = 'c')]
    pub children: bool,
    /// Trace clock (e.g. local, global, mono).
    #[arg(short = 'C', value_name = "CLOCK")]
    pub clock: Option<String>,
    /// Set a tracefs option: NAME to enable it, noNAME to disable it. Repeatable.
    #[arg(short = 'O', value_name = "OPTION")]
    pub options: Vec<String>,
}

/// Arguments of `tracer-cli record`.
#[derive(clap::Args, Debug)]
#[command(trailing_var_arg = true)]
pub struct Args {
    #[command(flatten)]
    pub trace: TraceOpts,
    /// Where and how to write.
    #[command(flatten)]
    pub out: OutputOpts,
    /// Do not show live progress.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Do not ptrace the command: poll its processes' /proc/PID/maps
    /// instead (misses short-lived ones). For a command that must not be
    /// traced, e.g. one that runs under a debugger or uses PTRACE_TRACEME.
    #[arg(long = "no-ptrace")]
    pub no_ptrace: bool,
    /// Command to run and trace; recording stops when it exits.
    #[arg(allow_hyphen_values = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The exact message printed when deferred user stacks are asked for on a
/// kernel without the ustack patches.
pub const NO_DELAY_OPTION: &str =
    "this kernel has no userstacktrace_delay option (deferred user stacks need the ustack kernel patches)";

/// Pairs each `-e` with the `-f` filters that follow it, using the order of
/// the arguments on the command line (clap does not keep the order between
/// two different options, so the subcommand's arguments are parsed again
/// with their indices).
pub(crate) fn pair_filters(
    opts: &TraceOpts,
    subcommand: &str,
    cmd: clap::Command,
) -> Result<Vec<(String, Option<String>)>> {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    pair_filters_in(opts, &argv, subcommand, cmd)
}

/// [`pair_filters`] for the subcommand `subcommand` whose arguments are `A`.
pub(crate) fn pair_filters_of<A: clap::Args>(
    opts: &TraceOpts,
    subcommand: &'static str,
) -> Result<Vec<(String, Option<String>)>> {
    pair_filters(
        opts,
        subcommand,
        A::augment_args(clap::Command::new(subcommand)),
    )
}

/// [`pair_filters`] on a given command line (`argv[0]` is the program).
pub(crate) fn pair_filters_in(
    opts: &TraceOpts,
    argv: &[std::ffi::OsString],
    subcommand: &str,
    cmd: clap::Command,
) -> Result<Vec<(String, Option<String>)>> {
    if opts.filters.is_empty() {
        return Ok(opts.events.iter().map(|e| (e.clone(), None)).collect());
    }
    let pos = argv
        .iter()
        .skip(1)
        .position(|a| a == subcommand)
        .map(|p| p + 2)
        .context("cannot find the subcommand in the command line to order -e and -f")?;
    let m = cmd
        .no_binary_name(true)
        .try_get_matches_from(&argv[pos..])
        .context("re-reading -e/-f")?;
    let ev_idx: Vec<usize> = m
        .indices_of("events")
        .map(|i| i.collect())
        .unwrap_or_default();
    let f_idx: Vec<usize> = m
        .indices_of("filters")
        .map(|i| i.collect())
        .unwrap_or_default();
    let mut out: Vec<(String, Option<String>)> =
        opts.events.iter().map(|e| (e.clone(), None)).collect();
    for (fi, f) in f_idx.iter().zip(&opts.filters) {
        let Some(owner) = ev_idx.iter().rposition(|ei| ei < fi) else {
            bail!("-f {f}: a filter must follow the -e it applies to");
        };
        let slot = &mut out[owner].1;
        *slot = Some(match slot.take() {
            None => f.clone(),
            // Two -f for one -e: both must hold.
            Some(prev) => format!("({prev}) && ({f})"),
        });
    }
    Ok(out)
}

/// A configured tracing session: the instance, the enabled events and the
/// guard that will restore everything.
pub(crate) struct Session {
    pub fs: Tracefs,
    pub inst: Instance,
    pub guard: Guard,
    pub events: Vec<EventId>,
}

/// Applies `opts` to tracefs (instance, events, filters, options, buffer
/// size, clock, tracer, pid filter) with every change recorded in a guard.
/// Tracing is left off and the buffer cleared; the caller turns it on.
/// `command_pid` is the pid of the command to trace, if any.
pub(crate) fn setup(
    opts: &TraceOpts,
    events: &[(String, Option<String>)],
    command_pid: Option<u32>,
) -> Result<Session> {
    if events.is_empty() && opts.tracer.is_none() {
        bail!("no events or tracer given (use -e SYSTEM[:EVENT] or -p TRACER)");
    }
    let fs = Tracefs::open()?;
    let guard = Guard::new();
    let inst = match &opts.instance {
        None => fs.top(),
        Some(name) => match fs.instance(name) {
            Ok(i) => i,
            Err(tracefs::Error::NotFound { .. }) => guard.adopt_instance(fs.create_instance(name)?),
            Err(e) => return Err(e.into()),
        },
    };
    // Check what the kernel must have before changing anything else.
    match opts.user_stacks {
        UserStacks::Deferred if !inst.has_option("userstacktrace_delay") => bail!(NO_DELAY_OPTION),
        UserStacks::Sync if !inst.has_option("userstacktrace") => {
            bail!("this kernel has no userstacktrace option")
        }
        _ => {}
    }
    if let Some(t) = &opts.tracer {
        let avail = fs.available_tracers()?;
        if !avail.contains(t) {
            bail!(
                "this kernel has no tracer {t} (available: {})",
                avail.join(" ")
            );
        }
    }
    if opts.kernel_stacks && !inst.has_option("stacktrace") {
        bail!("this kernel has no stacktrace option");
    }
    let mut resolved: Vec<(EventId, Option<String>)> = Vec::new();
    for (spec, filter) in events {
        let spec = EventSpec::parse(spec)?;
        for e in fs.resolve(&spec)? {
            resolved.push((e, filter.clone()));
        }
    }

    guard.set_tracing_on(&inst, false)?;
    guard.disable_all_events(&inst)?;

    // Options: what was asked for, and the stack options off otherwise so the
    // recording contains what the command line says.
    let mut want: Vec<(String, bool)> = vec![
        ("stacktrace".into(), opts.kernel_stacks),
        (
            "userstacktrace".into(),
            opts.user_stacks == UserStacks::Sync,
        ),
        (
            "userstacktrace_delay".into(),
            opts.user_stacks == UserStacks::Deferred,
        ),
    ];
    for o in &opts.options {
        match o.strip_prefix("no") {
            Some(name) if inst.has_option(name) && !inst.has_option(o) => {
                want.push((name.into(), false))
            }
            _ => want.push((o.clone(), true)),
        }
    }
    let mut pids: Vec<u32> = opts.pids.clone();
    if opts.filter_command {
        match command_pid {
            Some(p) => pids.push(p),
            None => bail!("-F needs a command to run"),
        }
    }
    if !pids.is_empty() && (opts.children || opts.filter_command) {
        want.push(("event-fork".into(), true));
    }
    for (name, on) in &want {
        if !on && !inst.has_option(name) {
            continue;
        }
        guard.set_option(&inst, name, *on)?;
    }
    if let Some(kb) = opts.buffer_kb {
        guard.set_buffer_size_kb(&inst, kb)?;
    }
    if let Some(clock) = &opts.clock {
        guard.set_trace_clock(&inst, clock)?;
    }
    if let Some(t) = &opts.tracer {
        guard.set_current_tracer(&inst, t)?;
    }
    if !pids.is_empty() || !inst.event_pids()?.is_empty() {
        guard.set_event_pids(&inst, &pids)?;
    }
    let mut enabled = Vec::new();
    for (e, filter) in &resolved {
        if filter.is_some() || inst.event_filter(e)?.is_some() {
            guard.set_event_filter(&inst, e, filter.as_deref())?;
        }
        guard.set_event_enabled(&inst, e, true)?;
        if !enabled.contains(e) {
            enabled.push(e.clone());
        }
    }
    inst.clear_buffer()?;
    Ok(Session {
        fs,
        inst,
        guard,
        events: enabled,
    })
}

/// A command forked and held before exec until [`HeldChild::release`], so
/// its pid can go into the pid filter and tracing is on before it runs.
pub(crate) struct HeldChild {
    pub pid: nix::unistd::Pid,
    go: Option<std::os::fd::OwnedFd>,
    /// Read end of a close-on-exec pipe: EOF once exec succeeded, the errno
    /// (4 bytes) if it failed.
    exec_err: Option<std::os::fd::OwnedFd>,
    program: String,
}

impl HeldChild {
    /// Forks; the child waits for the go byte, then execs `argv` (PATH
    /// lookup) with a clean signal mask.
    pub fn spawn(argv: &[String]) -> Result<HeldChild> {
        use std::os::fd::AsRawFd;
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_str()))
            .collect::<Result<_, _>>()
            .context("command argument contains a NUL byte")?;
        let Some(first) = cargs.first() else {
            bail!("no command given");
        };
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating a pipe")?;
        let (er, ew) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating a pipe")?;
        // SAFETY: after fork the child only calls async-signal-safe functions
        // (close, read, sigprocmask, sigaction, execvp, write, _exit) on data
        // prepared before the fork; the parent continues normally.
        match unsafe { nix::unistd::fork() }.context("fork")? {
            nix::unistd::ForkResult::Child => unsafe {
                libc::close(w.as_raw_fd());
                libc::close(er.as_raw_fd());
                let mut b = 0u8;
                loop {
                    let n = libc::read(r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
                    if n == 1 {
                        break;
                    }
                    if n == 0 || *libc::__errno_location() != libc::EINTR {
                        libc::_exit(126);
                    }
                }
                libc::close(r.as_raw_fd());
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
                // The Rust runtime ignores SIGPIPE; the command gets the
                // default back, as std::process::Command would do.
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGPIPE, &dfl, std::ptr::null_mut());
                libc::execvp(first.as_ptr(), ptrs.as_ptr());
                let errno = (*libc::__errno_location()).to_ne_bytes();
                libc::write(ew.as_raw_fd(), errno.as_ptr().cast(), errno.len());
                libc::_exit(127);
            },
            nix::unistd::ForkResult::Parent { child } => {
                drop(r);
                drop(ew);
                Ok(HeldChild {
                    pid: child,
                    go: Some(w),
                    exec_err: Some(er),
                    program: argv[0].clone(),
                })
            }
        }
    }

    /// Lets the child exec, and waits until the exec happened: a command
    /// that cannot be run is an error here.
    pub fn release(&mut self) -> Result<()> {
        if let Some(w) = self.go.take() {
            nix::unistd::write(&w, b"g").context("starting the command")?;
        }
        if let Some(er) = self.exec_err.take() {
            let mut buf = [0u8; 4];
            let mut got = 0;
            while got < 4 {
                match nix::unistd::read(&er, &mut buf[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e).context("waiting for the command to start"),
                }
            }
            if got == 4 {
                let _ = nix::sys::wait::waitpid(self.pid, None);
                let errno = nix::errno::Errno::from_raw(i32::from_ne_bytes(buf));
                bail!("cannot run {}: {}", self.program, errno.desc());
            }
        }
        Ok(())
    }

    /// Non-blocking: `Some(status)` once the child exited.
    pub fn try_wait(&self) -> Option<i32> {
        use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
        match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => Some(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => Some(128 + sig as i32),
            Ok(_) => None,
            Err(_) => Some(-1),
        }
    }
}

impl Drop for HeldChild {
    fn drop(&mut self) {
        // Closing the go pipe unreleased makes the child exit without
        // running; reap it.
        if self.go.take().is_some() {
            let _ = nix::sys::wait::waitpid(self.pid, None);
        }
    }
}

/// Merges a snapshot of one process's maps into what is known of it.
///
/// PROCMAPS holds one entry per pid, so everything seen of a process is
/// folded into one map: the union of the mappings of all its snapshots
/// (libraries loaded and unloaded between two snapshots, the images before
/// and after an exec). Where two snapshots disagree about an address range
/// the newer one wins: its mappings are kept whole and the older mappings
/// that overlap any of them are dropped. So the image in effect at the end
/// (e.g. `ls` after `sh` exec'd it) is exact, and the earlier images fill
/// only the address ranges the later one does not use. The comm is the
/// newest non-empty one.
///
/// `newer` says which of the two is the more recent snapshot (a poll can
/// finish after a later exec snapshot was already merged).
pub(crate) fn merge_maps(known: &mut ProcMap, snap: ProcMap, newer: bool) {
    let overlaps = |a: &LibMap, b: &LibMap| a.start < b.end && b.start < a.end;
    let (mut keep, old) = if newer {
        if !snap.comm.is_empty() {
            known.comm = snap.comm;
        }
        (snap.maps, std::mem::take(&mut known.maps))
    } else {
        if known.comm.is_empty() {
            known.comm = snap.comm;
        }
        (std::mem::take(&mut known.maps), snap.maps)
    };
    let fixed = keep.len();
    for m in old {
        if !keep[..fixed].iter().any(|k| overlaps(k, &m)) {
            keep.push(m);
        }
    }
    keep.sort_by_key(|m| m.start);
    known.maps = keep;
}

/// What is known of one process's maps.
struct MapsEntry {
    /// All its snapshots merged.
    merged: ProcMap,
    /// The newest snapshot alone, and when it was taken.
    last: ProcMap,
    at: Instant,
}

#[derive(Default)]
struct MapsState {
    /// Maps per tgid.
    maps: BTreeMap<u32, MapsEntry>,
    /// Processes of the ptrace'd command tree (ever seen).
    traced: HashSet<u32>,
    /// Processes of the ptrace'd command tree still alive: polled too, to
    /// catch mappings made and removed between their exec and exit.
    traced_live: HashSet<u32>,
}

/// The process maps gathered during one recording, shared between the
/// poller ([`MapsTracker`]) and the ptrace thread of the traced command
/// ([`TracedCommand`]); snapshots are merged per process with
/// [`merge_maps`].
#[derive(Clone, Default)]
pub(crate) struct MapsStore(Arc<Mutex<MapsState>>);

impl MapsStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, MapsState> {
        // A panic elsewhere while holding the lock leaves valid data.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Merges a snapshot taken at `taken` (empty ones are ignored: a zombie
    /// or kernel thread has no maps).
    pub fn add(&self, snap: ProcMap, taken: Instant) {
        if snap.maps.is_empty() {
            return;
        }
        let mut st = self.lock();
        match st.maps.get_mut(&snap.pid) {
            Some(e) => {
                let newer = taken >= e.at;
                if newer {
                    e.last = snap.clone();
                    e.at = taken;
                }
                merge_maps(&mut e.merged, snap, newer);
            }
            None => {
                st.maps.insert(
                    snap.pid,
                    MapsEntry {
                        merged: snap.clone(),
                        last: snap,
                        at: taken,
                    },
                );
            }
        }
    }

    /// Reads `/proc/TGID/{comm,maps}` now and merges it.
    pub fn read(&self, tgid: u32) -> bool {
        let taken = Instant::now();
        match ProcMap::read_proc(tgid) {
            Ok(m) if !m.maps.is_empty() => {
                self.add(m, taken);
                true
            }
            _ => false,
        }
    }

    /// A forked child starts with its parent's mappings: the parent's
    /// newest snapshot (not its merged history: the child never ran the
    /// parent's earlier images) serves for the child's stacks until it
    /// execs, as an older snapshot than any of the child's own.
    ///
    /// The child may have been seen already (its first stop can be handled
    /// before the parent's fork event, and it may have exec'd since): then
    /// the parent's image only fills the ranges its own snapshots leave free.
    pub fn inherit(&self, child: u32, parent: u32) {
        let mut st = self.lock();
        let Some(p) = st.maps.get(&parent) else {
            return;
        };
        let mut m = p.last.clone();
        m.pid = child;
        let at = p.at;
        match st.maps.get_mut(&child) {
            Some(e) => merge_maps(&mut e.merged, m, false),
            None => {
                st.maps.insert(
                    child,
                    MapsEntry {
                        merged: m.clone(),
                        last: m,
                        at,
                    },
                );
            }
        }
    }

    /// Notes that `tgid` belongs to the ptrace'd tree and whether it is alive.
    pub fn set_traced(&self, tgid: u32, alive: bool) {
        let mut st = self.lock();
        st.traced.insert(tgid);
        if alive {
            st.traced_live.insert(tgid);
        } else {
            st.traced_live.remove(&tgid);
        }
    }

    /// True when `tgid` is (or was) in the ptrace'd tree.
    pub fn is_traced(&self, tgid: u32) -> bool {
        self.lock().traced.contains(&tgid)
    }

    fn traced_live(&self) -> Vec<u32> {
        self.lock().traced_live.iter().copied().collect()
    }

    /// The merged maps, by pid.
    pub fn maps(&self) -> Vec<ProcMap> {
        self.lock()
            .maps
            .values()
            .map(|e| e.merged.clone())
            .collect()
    }
}

/// Polls `/proc/PID/maps` of the processes whose user stacks may be in the
/// trace: the -P pids and their descendants (found by scanning /proc), the
/// processes seen with user stacks in the data, and the live processes of
/// a ptrace'd command (whose execs and exits [`TracedCommand`] snapshots
/// itself). Every snapshot is merged into a [`MapsStore`].
#[derive(Default)]
pub(crate) struct MapsTracker {
    roots: Vec<u32>,
    pids: HashSet<u32>,
    /// Processes seen with user stacks in the recorded data (tgids); their
    /// maps are read when first seen and once more at the end.
    seen: HashSet<u32>,
    store: MapsStore,
}

fn tgid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

impl MapsTracker {
    /// Tracks `roots` (polled, with their descendants).
    pub fn new(roots: Vec<u32>) -> MapsTracker {
        MapsTracker::with_store(roots, MapsStore::default())
    }

    /// Like [`MapsTracker::new`], merging into `store` (shared with a
    /// [`TracedCommand`]).
    pub fn with_store(roots: Vec<u32>, store: MapsStore) -> MapsTracker {
        let pids = roots.iter().copied().collect();
        MapsTracker {
            roots,
            pids,
            seen: HashSet::new(),
            store,
        }
    }

    /// Adds the descendants of the roots (scans /proc for parent pids).
    pub fn scan_children(&mut self) {
        if self.roots.is_empty() {
            return;
        }
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for ent in rd.flatten() {
            let Some(pid) = ent.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            if let Some(ppid) = rest
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u32>().ok())
            {
                children.entry(ppid).or_default().push(pid);
            }
        }
        let mut todo: Vec<u32> = self.pids.iter().copied().collect();
        while let Some(p) = todo.pop() {
            for &c in children.get(&p).into_iter().flatten() {
                if self.pids.insert(c) {
                    todo.push(c);
                }
            }
        }
    }

    /// Reads the maps of every tracked process that is still alive.
    pub fn snapshot(&mut self) {
        let pids: Vec<u32> = self.pids.iter().copied().collect();
        for pid in pids {
            match tgid_of(pid) {
                Some(tgid) => {
                    self.store.read(tgid);
                }
                // Gone: keep its last maps, stop looking (and never look
                // again at a recycled pid that is not a descendant).
                None if !self.roots.contains(&pid) => {
                    self.pids.remove(&pid);
                }
                None => {}
            }
        }
        for tgid in self.store.traced_live() {
            self.store.read(tgid);
        }
    }

    /// Adds a task seen with a user stack in the trace and reads its
    /// process's maps right away (before it can exit).
    pub fn add_seen(&mut self, pid: u32) {
        if pid == 0 || self.pids.contains(&pid) {
            return;
        }
        let Some(tgid) = tgid_of(pid) else { return };
        // The ptrace'd tree is snapshotted at its execs and exits already.
        if self.store.is_traced(tgid) {
            return;
        }
        if self.seen.insert(tgid) {
            self.store.read(tgid);
        }
    }

    /// Reads the maps of the processes seen in the trace once more (those
    /// still alive), to catch libraries loaded since they were first seen.
    pub fn refresh_seen(&mut self) {
        for &tgid in &self.seen {
            self.store.read(tgid);
        }
    }

    /// The merged maps of every process seen.
    pub fn into_maps(self) -> Vec<ProcMap> {
        self.store.maps()
    }
}

/// Finds the tasks that have user stacks in the data recorded so far, by
/// reading back the new whole pages of the per-CPU files (from the page
/// cache; this side path does not slow the splice path down) and looking
/// at the `user_stack` / `user_unwind_*` events.
pub(crate) struct StackPidScanner {
    files: Vec<(File, u64)>,
    ids: HashSet<u16>,
    header: tracedata::header::HeaderPage,
    page_size: u64,
}

impl StackPidScanner {
    /// `None` when the kernel has none of the stack events.
    pub fn new(
        fs: &Tracefs,
        page_size: usize,
        paths: &[(u32, PathBuf)],
    ) -> Result<Option<StackPidScanner>> {
        let mut ids = HashSet::new();
        for name in ["user_stack", "user_unwind_stack", "user_unwind_cookie"] {
            if let Ok(f) = fs.event_format("ftrace", name) {
                if let Some(id) = f
                    .lines()
                    .find_map(|l| l.strip_prefix("ID:"))
                    .and_then(|v| v.trim().parse().ok())
                {
                    ids.insert(id);
                }
            }
        }
        if ids.is_empty() {
            return Ok(None);
        }
        let header = tracedata::header::HeaderPage::parse(&fs.header_page()?)?;
        let mut files = Vec::new();
        for (_, p) in paths {
            files.push((
                File::open(p).with_context(|| format!("cannot open {}", p.display()))?,
                0,
            ));
        }
        Ok(Some(StackPidScanner {
            files,
            ids,
            header,
            page_size: page_size as u64,
        }))
    }

    /// Scans the pages written since the last call; returns the pids found.
    pub fn scan(&mut self) -> HashSet<u32> {
        use std::os::unix::fs::FileExt;
        let mut pids = HashSet::new();
        let mut buf = vec![0u8; (self.page_size as usize) * 64];
        for (file, done) in &mut self.files {
            let Ok(len) = file.metadata().map(|m| m.len()) else {
                continue;
            };
            let end = len - len % self.page_size;
            while *done < end {
                let want = ((end - *done) as usize).min(buf.len());
                let Ok(n) = file.read_at(&mut buf[..want], *done) else {
                    break;
                };
                let n = n - n % self.page_size as usize;
                if n == 0 {
                    break;
                }
                for page in buf[..n].chunks(self.page_size as usize) {
                    let Ok(p) = tracedata::page::Page::new(page, &self.header) else {
                        continue;
                    };
                    for (_, data) in p.events().flatten() {
                        if data.len() >= 8
                            && self.ids.contains(&u16::from_le_bytes([data[0], data[1]]))
                        {
                            let pid = i32::from_le_bytes([data[4], data[5], data[6], data[7]]);
                            if pid > 0 {
                                pids.insert(pid as u32);
                            }
                        }
                    }
                }
                *done += n as u64;
            }
        }
        pids
    }
}

/// Builds the trace.dat metadata from tracefs: headers, the ftrace formats,
/// the formats of `events` (all events when `None`), kallsyms, printk
/// formats, saved_cmdlines, uname, clock and CPU count.
pub(crate) fn collect_meta(
    fs: &Tracefs,
    inst: &Instance,
    events: Option<&[EventId]>,
    procmaps: Vec<ProcMap>,
) -> Result<TraceMeta> {
    let mut systems: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    let all;
    let list: &[EventId] = match events {
        Some(l) => l,
        None => {
            all = fs.all_events()?;
            &all
        }
    };
    for e in list {
        if e.system == "ftrace" {
            continue;
        }
        // Some events have no format file (e.g. ftrace-only markers): skip them.
        if let Ok(f) = fs.event_format(&e.system, &e.name) {
            systems
                .entry(e.system.clone())
                .or_default()
                .push(f.into_bytes());
        }
    }
    let mut ftrace_formats = Vec::new();
    for name in fs.events("ftrace").unwrap_or_default() {
        if let Ok(f) = fs.event_format("ftrace", &name) {
            ftrace_formats.push(f.into_bytes());
        }
    }
    Ok(TraceMeta {
        page_size: inst.page_size() as u32,
        header_page: fs.header_page()?.into_bytes(),
        header_event: fs.header_event()?.into_bytes(),
        ftrace_formats,
        event_systems: systems
            .into_iter()
            .map(|(name, formats)| EventSystem { name, formats })
            .collect(),
        kallsyms: Tracefs::kallsyms()?,
        printk_formats: fs.printk_formats()?,
        cmdlines: fs.saved_cmdlines()?,
        uname: Some(Tracefs::uname()),
        trace_clock: Some(inst.read_string("trace_clock")?.trim_end().to_string()),
        cpu_count: inst.cpu_count()?,
        procmaps,
        ..TraceMeta::default()
    })
}

/// The writer options for `--file-version` / `--compression`.
pub(crate) fn write_options(version: u32, compression: Option<&str>) -> Result<WriteOptions> {
    let version = FileVersion::from_number(version).context("--file-version must be 6 or 7")?;
    let compression = match (version, compression) {
        (FileVersion::V6, None | Some("none")) => Compression::None,
        (FileVersion::V6, Some(c)) => {
            bail!("--compression {c}: file version 6 cannot be compressed")
        }
        (FileVersion::V7, None) => Compression::Zstd,
        (FileVersion::V7, Some(c)) => Compression::from_name(c)
            .with_context(|| format!("--compression {c}: use none or zstd"))?,
    };
    Ok(WriteOptions {
        version,
        compression,
    })
}

/// The writer's description of one buffer: the instance's name and clock
/// and its per-CPU page files with the stats taken at the end.
pub(crate) fn buffer_data(
    inst: &Instance,
    cpu_files: &[(u32, PathBuf, CpuStats)],
) -> Result<BufferData> {
    Ok(BufferData {
        name: inst.name().unwrap_or("").to_string(),
        clock: inst.trace_clock()?.0,
        cpus: cpu_files
            .iter()
            .map(|(cpu, path, stats)| CpuData {
                cpu: *cpu,
                path: path.clone(),
                stats: Some(stats.raw.clone()),
            })
            .collect(),
    })
}

/// Writes trace.dat from the per-CPU page files of one instance.
pub(crate) fn write_dat(
    output: &Path,
    meta: &TraceMeta,
    inst: &Instance,
    cpu_files: &[(u32, PathBuf, CpuStats)],
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    let buffer = buffer_data(inst, cpu_files)?;
    Ok(write_trace_dat(output, meta, &[buffer], opts)?)
}

/// Per-CPU temp files `<output>.cpuN`, removed when dropped.
pub(crate) struct TempFiles(pub Vec<(u32, PathBuf)>);

impl TempFiles {
    /// Creates `<output>.cpuN` for every CPU.
    pub fn create(output: &Path, cpus: &[u32]) -> Result<(TempFiles, Vec<File>)> {
        Self::create_tagged(output, None, cpus)
    }

    /// Creates `<output>.<instance>.cpuN` (trace-cmd's names) for every CPU;
    /// without an instance name, `<output>.cpuN`.
    pub fn create_tagged(
        output: &Path,
        instance: Option<&str>,
        cpus: &[u32],
    ) -> Result<(TempFiles, Vec<File>)> {
        let mut t = TempFiles(Vec::new());
        let mut files = Vec::new();
        for &cpu in cpus {
            let mut name = output.as_os_str().to_owned();
            if let Some(i) = instance {
                name.push(format!(".{i}"));
            }
            name.push(format!(".cpu{cpu}"));
            let path = PathBuf::from(name);
            let f =
                File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
            t.0.push((cpu, path));
            files.push(f);
        }
        Ok((t, files))
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        for (_, p) in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// What one reader thread reports when it is done.
struct ReaderResult {
    bytes: u64,
    flushed: tracefs::DrainStats,
}

/// The reader threads. Dropping them (on an error path) turns tracing off
/// and joins them, so no trace_pipe_raw stays open when the guard removes
/// an instance.
struct Readers {
    inst: Instance,
    flush: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<tracefs::Result<ReaderResult>>>,
}

impl Readers {
    /// Turns tracing off, lets every thread drain its CPU and joins them.
    fn finish(&mut self) -> (Vec<ReaderResult>, Option<anyhow::Error>) {
        let mut first_err: Option<anyhow::Error> =
            self.inst.set_tracing_on(false).err().map(Into::into);
        self.flush.store(true, Ordering::SeqCst);
        let mut results = Vec::new();
        for t in self.threads.drain(..) {
            match t.join() {
                Ok(Ok(r)) => results.push(r),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e.into());
                }
                Err(_) => {
                    first_err.get_or_insert(anyhow::anyhow!("a reader thread panicked"));
                }
            }
        }
        (results, first_err)
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            let _ = self.finish();
        }
    }
}

fn reader_thread(
    mut reader: tracefs::CpuReader,
    mut out: File,
    flush: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
) -> tracefs::Result<ReaderResult> {
    let mut total = 0u64;
    while !flush.load(Ordering::SeqCst) {
        let ready = reader.wait(Duration::from_millis(100))?;
        let n = reader.splice_into(&out, 4 << 20)?;
        total += n;
        bytes.fetch_add(n, Ordering::Relaxed);
        if ready && n == 0 {
            // Readable but no complete page yet: do not spin.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let flushed = reader.flush_into(&mut out)?;
    total += flushed.bytes;
    bytes.fetch_add(flushed.bytes, Ordering::Relaxed);
    Ok(ReaderResult {
        bytes: total,
        flushed,
    })
}

fn human(b: u64) -> String {
    if b >= 10 << 20 {
        format!("{} MiB", b >> 20)
    } else if b >= 10 << 10 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Live progress on a terminal: per CPU the kernel's event count (events
/// read so far plus still buffered, from `stats`), bytes moved to the file,
/// and events lost (overrun + dropped, from `stats`).
struct Progress {
    lines: usize,
}

impl Progress {
    fn show(&mut self, inst: &Instance, cpus: &[u32], bytes: &[Arc<AtomicU64>], elapsed: Duration) {
        let mut err = std::io::stderr().lock();
        if self.lines > 0 {
            let _ = write!(err, "\x1b[{}A", self.lines);
        }
        let _ = writeln!(
            err,
            "\x1b[2Krecording {:.1}s   (events = kernel count: read + buffered; lost = overrun + dropped)",
            elapsed.as_secs_f64()
        );
        for (i, &cpu) in cpus.iter().enumerate() {
            let (ev, lost) = match inst.cpu_stats(cpu) {
                Ok(s) => (s.written().to_string(), s.lost().to_string()),
                Err(_) => ("?".into(), "?".into()),
            };
            let _ = writeln!(
                err,
                "\x1b[2K  CPU{cpu:<3} events {ev:>10}   bytes {:>10}   lost {lost:>8}",
                human(bytes[i].load(Ordering::Relaxed))
            );
        }
        self.lines = cpus.len() + 1;
    }
}

/// Runs `tracer-cli record`.
pub fn run(args: Args) -> Result<()> {
    let pairs = pair_filters_of::<Args>(&args.trace, "record")?;
    let wopts = args.out.write_options()?;
    signals::install()?;

    // The command's maps are snapshotted at its execs and exits by the
    // ptrace thread, and polled; -P pids are only polled.
    let store = MapsStore::default();
    let mut child = if args.command.is_empty() {
        None
    } else {
        Some(TracedCommand::spawn(
            &args.command,
            store.clone(),
            !args.no_ptrace,
        )?)
    };
    let child_pid = child.as_ref().map(|c| c.pid().as_raw() as u32);
    let session = setup(&args.trace, &pairs, child_pid)?;
    signals::set_restorer(Some(session.guard.restorer()));
    let inst = &session.inst;

    let cpus = inst.cpus()?;
    let (temps, files) = TempFiles::create(&args.out.output, &cpus)?;
    let mut partial: Vec<PathBuf> = temps.0.iter().map(|(_, p)| p.clone()).collect();
    partial.push(args.out.output.clone());
    signals::remove_on_abort(partial);
    let counters: Vec<Arc<AtomicU64>> = cpus.iter().map(|_| Arc::new(AtomicU64::new(0))).collect();
    let mut readers = Readers {
        inst: inst.clone(),
        flush: Arc::new(AtomicBool::new(false)),
        threads: Vec::new(),
    };
    for ((&cpu, file), ctr) in cpus.iter().zip(files).zip(&counters) {
        let reader = inst.cpu_reader(cpu)?;
        let (flush, ctr) = (readers.flush.clone(), ctr.clone());
        readers.threads.push(
            std::thread::Builder::new()
                .name(format!("record-cpu{cpu}"))
                .spawn(move || reader_thread(reader, file, flush, ctr))
                .context("cannot start a reader thread")?,
        );
    }

    let mut roots: Vec<u32> = args.trace.pids.clone();
    if let Some(c) = child.as_ref().filter(|c| !c.is_traced()) {
        if !args.no_ptrace {
            eprintln!("tracer-cli: warning: cannot ptrace the command; polling its maps instead (short-lived processes may lack them)");
        }
        roots.push(c.pid().as_raw() as u32);
    }
    let mut maps = MapsTracker::with_store(roots, store);
    let mut scanner = if args.trace.user_stacks == UserStacks::Off {
        None
    } else {
        StackPidScanner::new(&session.fs, inst.page_size(), &temps.0)?
    };
    let show = !args.quiet && std::io::stderr().is_terminal();
    let mut progress = Progress { lines: 0 };
    let start = Instant::now();
    session.inst.set_tracing_on(true)?;
    if let Some(c) = child.as_mut() {
        c.release()?;
    }
    if child.is_none() && !args.quiet {
        eprintln!("tracer-cli: recording; press Ctrl-C to stop");
    }
    let mut tick = 0u64;
    let mut child_status = None;
    loop {
        if tick % 4 == 0 {
            maps.scan_children();
        }
        maps.snapshot();
        if let Some(sc) = scanner.as_mut().filter(|_| tick % 2 == 0) {
            for pid in sc.scan() {
                maps.add_seen(pid);
            }
        }
        if signals::stop_requested() {
            break;
        }
        if let Some(c) = &child {
            if let Some(st) = c.try_wait() {
                child_status = Some(st);
                break;
            }
        }
        if readers.threads.iter().any(|t| t.is_finished()) {
            break; // a reader failed; its error is reported below
        }
        if show && tick % 10 == 0 {
            progress.show(inst, &cpus, &counters, start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
        tick += 1;
    }

    // Stop writing, then let every reader drain its CPU completely.
    let (results, first_err) = readers.finish();
    if let Some(sc) = scanner.as_mut() {
        for pid in sc.scan() {
            maps.add_seen(pid);
        }
        maps.refresh_seen();
    }
    if show {
        progress.show(inst, &cpus, &counters, start.elapsed());
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let stats: Vec<CpuStats> = cpus
        .iter()
        .map(|&c| inst.cpu_stats(c))
        .collect::<Result<_, _>>()?;
    let meta = collect_meta(&session.fs, inst, Some(&session.events), maps.into_maps())?;
    let cpu_files: Vec<(u32, PathBuf, CpuStats)> = temps
        .0
        .iter()
        .zip(stats.iter())
        .map(|((cpu, p), s)| (*cpu, p.clone(), s.clone()))
        .collect();
    let summary = write_dat(&args.out.output, &meta, inst, &cpu_files, &wopts)?;
    // The file is complete: an abort from now on must not delete it.
    signals::remove_on_abort(Vec::new());
    drop(temps);

    if !args.quiet {
        for ((s, r), cpu) in stats.iter().zip(&results).zip(&cpus) {
            eprintln!(
                "CPU{cpu}: {} events, {} lost, {} bytes ({} pages spliced at the end, {} read partial)",
                s.read_events.unwrap_or(0),
                s.lost(),
                r.bytes,
                r.flushed.spliced_pages,
                r.flushed.read_pages
            );
        }
        eprintln!(
            "tracer-cli: wrote {} ({} bytes, {} user-space memory maps)",
            args.out.output.display(),
            summary.file_size,
            meta.procmaps.len()
        );
        if let Some(c) = child.as_ref().filter(|c| c.is_traced()) {
            let t = c.stats();
            eprintln!(
                "tracer-cli: command under ptrace: {} processes, {} threads, {} execs, {} exits, {} signals, {} stops, {} maps snapshots in {:.1} ms",
                t.processes,
                t.threads,
                t.execs,
                t.exits,
                t.signals,
                t.stops,
                t.snapshots,
                t.snapshot_time.as_secs_f64() * 1e3
            );
        }
        if let Some(st) = child_status.filter(|s| *s != 0) {
            eprintln!("tracer-cli: the command exited with status {st}");
        }
    }
    // Restore now (rather than in drop) so a failure is reported.
    session.guard.restore()?;
    signals::set_restorer(None);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Args as _;

    fn parse(args: &[&str]) -> Result<Vec<(String, Option<String>)>> {
        let argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let m = Args::augment_args(clap::Command::new("record"))
            .no_binary_name(true)
            .try_get_matches_from(&argv[2..])
            .unwrap();
        let a = <Args as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
        pair_filters_in(
            &a.trace,
            &argv,
            "record",
            Args::augment_args(clap::Command::new("record")),
        )
    }

    #[test]
    fn filters_go_to_the_preceding_event() {
        let got = parse(&[
            "tracer-cli",
            "record",
            "-e",
            "sched:sched_switch",
            "-T",
            "-e",
            "syscalls",
            "-f",
            "common_pid == 1",
            "-e",
            "irq",
            "-f",
            "irq > 3",
            "-f",
            "irq < 9",
            "--",
            "ls",
            "-e",
            "x",
        ])
        .unwrap();
        assert_eq!(
            got,
            vec![
                ("sched:sched_switch".to_string(), None),
                ("syscalls".to_string(), Some("common_pid == 1".to_string())),
                (
                    "irq".to_string(),
                    Some("(irq > 3) && (irq < 9)".to_string())
                ),
            ]
        );
    }

    #[test]
    fn a_filter_before_any_event_is_an_error() {
        let err = parse(&["tracer-cli", "record", "-f", "x == 1", "-e", "sched"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-f x == 1: a filter must follow the -e it applies to"
        );
    }

    fn payload(id: u16, pid: i32) -> Vec<u8> {
        let mut p = vec![0u8; 16];
        p[0..2].copy_from_slice(&id.to_le_bytes());
        p[4..8].copy_from_slice(&pid.to_le_bytes());
        p
    }

    #[test]
    fn stack_pid_scanner_finds_user_stack_tasks_in_new_pages_only() {
        use tracedata::page::build::PageBuilder;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tracefs");
        let put = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            "events/header_page",
            "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
             \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
             \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
             \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
        );
        put(
            "events/ftrace/user_stack/format",
            "name: user_stack\nID: 12\n",
        );
        put(
            "events/ftrace/kernel_stack/format",
            "name: kernel_stack\nID: 4\n",
        );
        let fs = Tracefs::at(&root).unwrap();
        let data = dir.path().join("cpu0");
        std::fs::write(&data, b"").unwrap();
        let mut sc = StackPidScanner::new(&fs, 4096, &[(0, data.clone())])
            .unwrap()
            .unwrap();
        assert!(sc.scan().is_empty());

        let page = |events: &[(u16, i32)]| {
            let mut b = PageBuilder::new(1000);
            for &(id, pid) in events {
                b = b.event(1, &payload(id, pid), false);
            }
            b.finish(4096).unwrap()
        };
        let mut bytes = page(&[(300, 7), (12, 42), (4, 43), (12, 42)]);
        bytes.extend(page(&[(12, 99)]));
        std::fs::write(&data, &bytes).unwrap();
        let got: std::collections::BTreeSet<u32> = sc.scan().into_iter().collect();
        assert_eq!(got, [42, 99].into_iter().collect());
        // A partial page at the end is left for later; old pages are not read again.
        bytes.extend(page(&[(12, 5)]));
        bytes.extend_from_slice(&page(&[(12, 6)])[..100]);
        std::fs::write(&data, &bytes).unwrap();
        let got: Vec<u32> = sc.scan().into_iter().collect();
        assert_eq!(got, vec![5]);
    }

    fn pm(pid: u32, comm: &str, maps: &[(u64, u64, &str)]) -> ProcMap {
        ProcMap {
            pid,
            comm: comm.into(),
            maps: maps
                .iter()
                .map(|&(start, end, path)| LibMap {
                    start,
                    end,
                    path: path.into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_newer_snapshot_wins_where_ranges_overlap_and_the_rest_is_kept() {
        // sh forked, then exec'd ls: ls's libc lands over sh's libc, sh's
        // binary range stays free.
        let mut known = pm(
            7,
            "sh",
            &[
                (0x1000, 0x3000, "/usr/bin/dash"),
                (0x10000, 0x20000, "/lib/libc.so.6"),
            ],
        );
        let ls = pm(
            7,
            "ls",
            &[
                (0x5000, 0x6000, "/usr/bin/ls"),
                (0x18000, 0x28000, "/lib/libc.so.6"),
            ],
        );
        merge_maps(&mut known, ls.clone(), true);
        assert_eq!(
            known,
            pm(
                7,
                "ls",
                &[
                    (0x1000, 0x3000, "/usr/bin/dash"),
                    (0x5000, 0x6000, "/usr/bin/ls"),
                    (0x18000, 0x28000, "/lib/libc.so.6"),
                ]
            )
        );
        // The same sh snapshot arriving late (a poll that started before
        // the exec) changes nothing that the newer one covers.
        let mut late = ls.clone();
        merge_maps(
            &mut late,
            pm(
                7,
                "sh",
                &[
                    (0x1000, 0x3000, "/usr/bin/dash"),
                    (0x10000, 0x20000, "/lib/libc.so.6"),
                    (0x40000, 0x41000, "/lib/libdl.so"),
                ],
            ),
            false,
        );
        assert_eq!(
            late,
            pm(
                7,
                "ls",
                &[
                    (0x1000, 0x3000, "/usr/bin/dash"),
                    (0x5000, 0x6000, "/usr/bin/ls"),
                    (0x18000, 0x28000, "/lib/libc.so.6"),
                    (0x40000, 0x41000, "/lib/libdl.so"),
                ]
            )
        );
        // A library unloaded since the last snapshot stays (its addresses
        // may be in earlier stacks); touching ranges do not overlap.
        let mut k = pm(
            1,
            "a",
            &[(0x1000, 0x2000, "/x"), (0x2000, 0x3000, "/plugin")],
        );
        merge_maps(&mut k, pm(1, "", &[(0x1000, 0x2000, "/x")]), true);
        assert_eq!(
            k,
            pm(
                1,
                "a",
                &[(0x1000, 0x2000, "/x"), (0x2000, 0x3000, "/plugin")]
            )
        );
    }

    #[test]
    fn the_store_merges_by_time_taken_and_forks_inherit() {
        let store = MapsStore::default();
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(5);
        // pid 5 was the recorder's copy before exec'ing sh: a child of sh
        // inherits sh's image only.
        store.add(pm(5, "rec", &[(0x9000, 0xa000, "/rec")]), t0);
        store.add(pm(5, "sh", &[(0x1000, 0x2000, "/bin/sh")]), t0);
        store.inherit(6, 5);
        store.add(pm(6, "ls", &[(0x1800, 0x2800, "/bin/ls")]), t1);
        // Older than what pid 6 has: only fills free ranges.
        store.add(pm(6, "sh", &[(0x1000, 0x2000, "/bin/sh")]), t0);
        // Empty snapshots (zombies) are ignored; inheriting again only
        // fills free ranges.
        store.add(pm(6, "zombie", &[]), t1 + Duration::from_millis(1));
        store.inherit(6, 5);
        assert_eq!(
            store.maps(),
            vec![
                pm(
                    5,
                    "sh",
                    &[(0x1000, 0x2000, "/bin/sh"), (0x9000, 0xa000, "/rec")]
                ),
                pm(6, "ls", &[(0x1800, 0x2800, "/bin/ls")]),
            ]
        );
        store.add(pm(5, "sh", &[(0x3000, 0x4000, "/lib/libc")]), t1);
        store.inherit(6, 5);
        assert_eq!(
            store.maps()[1],
            pm(
                6,
                "ls",
                &[(0x1800, 0x2800, "/bin/ls"), (0x3000, 0x4000, "/lib/libc")]
            )
        );
        store.set_traced(6, true);
        assert!(store.is_traced(6) && !store.is_traced(5));
        assert_eq!(store.traced_live(), vec![6]);
        store.set_traced(6, false);
        assert!(store.is_traced(6));
        assert!(store.traced_live().is_empty());
    }

    #[test]
    fn write_options_follow_the_flags() {
        let o = write_options(7, None).unwrap();
        assert_eq!(
            (o.version, o.compression),
            (FileVersion::V7, Compression::Zstd)
        );
        let o = write_options(7, Some("none")).unwrap();
        assert_eq!(o.compression, Compression::None);
        let o = write_options(6, None).unwrap();
        assert_eq!(
            (o.version, o.compression),
            (FileVersion::V6, Compression::None)
        );
        assert!(write_options(6, Some("zstd")).is_err());
        assert!(write_options(7, Some("lz4")).is_err());
        assert!(write_options(5, None).is_err());
    }
}
