//! Tracing setup shared by `record`, `start` and `tui --live`: the tracing
//! options ([`TraceOpts`]), `-e`/`-f` pairing, applying them to tracefs
//! under a restoring guard ([`setup`]), and the command held before exec
//! until tracing is on ([`HeldChild`]).

use anyhow::{bail, Context, Result};
use std::ffi::CString;
use ustack_tracefs::{EventId, EventSpec, Guard, Instance, Tracefs};

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
            Err(ustack_tracefs::Error::NotFound { .. }) => {
                guard.adopt_instance(fs.create_instance(name)?)
            }
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
    pub(super) go: Option<std::os::fd::OwnedFd>,
    /// Read end of a close-on-exec pipe: EOF once exec succeeded, the errno
    /// (4 bytes) if it failed.
    exec_err: Option<std::os::fd::OwnedFd>,
    pub(super) program: String,
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
        let failed = self
            .take_exec_errno()
            .context("waiting for the command to start")?;
        if let Some(errno) = failed {
            let _ = nix::sys::wait::waitpid(self.pid, None);
            bail!("cannot run {}: {}", self.program, errno.desc());
        }
        Ok(())
    }

    /// Reads the exec-error pipe (once; later calls give `Ok(None)`): the
    /// errno the child wrote when its exec failed, `None` at EOF (the exec
    /// succeeded, or the child ended without trying).
    pub(super) fn take_exec_errno(&mut self) -> nix::Result<Option<nix::errno::Errno>> {
        let Some(er) = self.exec_err.take() else {
            return Ok(None);
        };
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match nix::unistd::read(&er, &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok((got == 4).then(|| nix::errno::Errno::from_raw(i32::from_ne_bytes(buf))))
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
