//! Tracing setup shared by `record`, `start` and `tui --live`: the tracing
//! options ([`TraceConfig`]) applied to tracefs under a restoring guard
//! ([`setup`]).

use crate::InstanceLock;
use crate::ProcWatch;
use anyhow::{bail, Result};
use ustack_tracefs::{EventId, Guard, Instance, Tracefs};

/// Which user-space stacks to record.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
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

/// What a session sets up: the tracing options of `record`, `start` and
/// `tui --live`, with each event already paired with its filter.
#[derive(Debug, Clone, Default)]
pub struct TraceConfig {
    /// Events to enable (`SYSTEM`, `SYSTEM:EVENT`, `EVENT`, `all`, globs),
    /// each with the filter that applies to it.
    pub events: Vec<(String, Option<String>)>,
    /// The instance to use (created when missing, and then removed again
    /// when the session's guard restores); the top instance when `None`.
    pub instance: Option<String>,
    /// Ring-buffer size per CPU in KiB.
    pub buffer_kb: Option<u64>,
    /// A kernel stack after every event (the `stacktrace` option).
    pub kernel_stacks: bool,
    /// Which user stacks to record.
    pub user_stacks: UserStacks,
    /// With deferred user stacks: bytes of the user stack the kernel
    /// copies beside each stack, for unwinding with the binaries' CFI
    /// (`None`: the default, [`DEFAULT_SNAPSHOT`] where the kernel can;
    /// 0: none).
    pub snapshot_bytes: Option<u64>,
    /// The tracer to set; the current one is kept when `None`.
    pub tracer: Option<String>,
    /// Only trace these pids (`set_event_pid`).
    pub pids: Vec<u32>,
    /// Only trace the command (its pid joins the pid filter).
    pub filter_command: bool,
    /// With pids, also trace the children they fork (`event-fork`).
    pub children: bool,
    /// The trace clock.
    pub clock: Option<String>,
    /// tracefs options: `NAME` to enable, `noNAME` to disable.
    pub options: Vec<String>,
}

/// Every option [`setup`] may turn on by itself (the stack options it
/// asks for, and what they need), with the kernel's default for it:
/// `tracer-cli reset` sets them all back to that default, so an instance
/// left by `start` passes none of them into the next session, nor to
/// instances created later (a new instance copies the top instance's
/// options). The ustack kernel describes mappings by default.
pub const SETUP_OPTIONS: &[(&str, bool)] = &[
    ("stacktrace", false),
    ("userstacktrace", false),
    ("userstacktrace_delay", false),
    ("userstacktrace_maps", true),
    ("record-tgid", false),
    ("event-fork", false),
];

/// The options [`setup`] sets by itself for `opts` (`pids_filtered`: a
/// pid filter is set; `has`: the instance has that option): the stack
/// options asked for on, the others off, so the recording contains what
/// the command line says, and what they need. Every name turned on here
/// is in [`SETUP_OPTIONS`] (a unit test walks every combination).
fn own_options(
    opts: &TraceConfig,
    pids_filtered: bool,
    has: impl Fn(&str) -> bool,
) -> Vec<(String, bool)> {
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
    // Threads of the processes with user stacks: the kernel's pid -> tgid
    // table (`saved_tgids`, read at the end) knows threads that exited
    // before the recorder looked at /proc.
    if opts.user_stacks != UserStacks::Off && has("record-tgid") {
        want.push(("record-tgid".into(), true));
    }
    // The kernel's mapping records (patched kernels) let a process that is
    // gone before its maps are read still be symbolized. `-O
    // nouserstacktrace_maps` (later wins) turns them off.
    if opts.user_stacks == UserStacks::Deferred && has("userstacktrace_maps") {
        want.push(("userstacktrace_maps".into(), true));
    }
    if pids_filtered && (opts.children || opts.filter_command) {
        want.push(("event-fork".into(), true));
    }
    want
}

/// The sub-buffer size (KiB, a power of two) that a stack entry with a
/// snapshot of `bytes` and 128 frames fits in, when `page` (the current
/// sub-buffer size, bytes) is too small: the kernel caps an entry at the
/// largest event of a sub-buffer, frames first, so a larger snapshot than
/// that would silently be cut. Room: the sub-buffer header (16), the event
/// header and length (8), the entry's fields (56) and the frames.
pub fn subbuf_kb_for_snapshot(bytes: u64, page: u64) -> Option<u64> {
    let need = bytes + 16 + 8 + 56 + 128 * 8;
    (need > page).then(|| need.div_ceil(1024).next_power_of_two())
}

/// The default stack snapshot of deferred user stacks: what makes stacks
/// of frame-pointer code exact (the caller of a frameless libc wrapper).
pub const DEFAULT_SNAPSHOT: u64 = ustack_symbolize::unwind::DEFAULT_SNAPSHOT as u64;

/// The exact message printed when deferred user stacks are asked for on a
/// kernel without the ustack patches.
pub const NO_DELAY_OPTION: &str =
    "this kernel has no userstacktrace_delay option (deferred user stacks need the ustack kernel patches)";

/// A configured tracing session: the instance, the enabled events and the
/// guard that will restore everything.
pub struct Session {
    /// The tracefs mount.
    pub fs: Tracefs,
    /// The instance traced.
    pub inst: Instance,
    /// Every change made, to be restored (or forgotten, by `start`).
    pub guard: Guard,
    /// The events enabled, each once.
    pub events: Vec<EventId>,
    /// Settings restored before the setup, left by a session that was
    /// killed (0 normally).
    pub leftover_restored: usize,
    /// Held for the session's life: no other session on this instance.
    pub lock: InstanceLock,
}

/// Applies `opts` to tracefs (instance, events, filters, options, buffer
/// size, clock, tracer, pid filter) with every change recorded in a guard.
/// Tracing is left off and the buffer cleared; the caller turns it on.
/// `command_pid` is the pid of the command to trace, if any.
pub fn setup(opts: &TraceConfig, command_pid: Option<u32>) -> Result<Session> {
    Ok(setup_inner(opts, command_pid, |_, _, _| ())?.0)
}

/// Like [`setup`], with a [`ProcWatch`] (or why it could not start)
/// started in the session's clock just before the session's events are
/// enabled. Its tracepoint probes are then registered first and run
/// first: its `sched_process_exec` of a task is written before the
/// session's, so the user stack that follows the session's (the first
/// stack of the new image) is never older than the exec it belongs to.
pub fn setup_watched(
    opts: &TraceConfig,
    command_pid: Option<u32>,
) -> Result<(Session, Result<ProcWatch>)> {
    setup_inner(opts, command_pid, |fs, guard, inst| {
        let clock = inst.trace_clock().map(|c| c.0).unwrap_or_default();
        ProcWatch::start(fs, guard, &clock)
    })
}

/// The setup, with `before_events` run once everything but the events is
/// in place (the clock included).
fn setup_inner<T>(
    opts: &TraceConfig,
    command_pid: Option<u32>,
    before_events: impl FnOnce(&Tracefs, &Guard, &Instance) -> T,
) -> Result<(Session, T)> {
    let events = &opts.events;
    if events.is_empty() && opts.tracer.is_none() {
        bail!("no events or tracer given (use -e SYSTEM[:EVENT] or -p TRACER)");
    }
    // A pid filter of a process that is not there would record nothing.
    for pid in &opts.pids {
        if !ustack_symbolize::procfs::exists(*pid) {
            bail!("-P {pid}: no such process");
        }
    }
    let fs = Tracefs::open()?;
    // One session per instance; what a killed one left is put back first.
    let lock = InstanceLock::acquire(opts.instance.as_deref())?;
    let leftover_restored = ustack_tracefs::replay_journal(lock.state_file())?;
    let guard = Guard::new();
    guard.journal_to(lock.state_file().to_path_buf())?;
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
    // Someone else's events (trace-cmd, a `start` not reset): recording
    // here would turn them off under their feet.
    let others = inst.enabled_events()?;
    if let Some(first) = others.first() {
        bail!(
            "{} is in use: {} events are enabled ({first}{}); use -B NAME to trace in an instance of your own, or `tracer-cli reset{}` if they are left over",
            opts.instance.as_deref().map_or("the top instance".to_string(), |n| format!("instance {n}")),
            others.len(),
            if others.len() > 1 { ", ..." } else { "" },
            opts.instance.as_deref().map_or(String::new(), |n| format!(" -B {n}")),
        );
    }
    check_kernel(opts, &fs, &inst)?;
    let resolved = crate::events::resolve(&fs, events)?;

    guard.set_tracing_on(&inst, false)?;
    guard.disable_all_events(&inst)?;

    let mut pids: Vec<u32> = opts.pids.clone();
    if opts.filter_command {
        match command_pid {
            Some(p) => pids.push(p),
            None => bail!("-F needs a command to run"),
        }
    }
    set_options(opts, &guard, &inst, !pids.is_empty())?;
    if let Some(clock) = &opts.clock {
        guard.set_trace_clock(&inst, clock)?;
    }
    if let Some(t) = &opts.tracer {
        guard.set_current_tracer(&inst, t)?;
    }
    if !pids.is_empty() || !inst.event_pids()?.is_empty() {
        guard.set_event_pids(&inst, &pids)?;
    }
    let before = before_events(&fs, &guard, &inst);
    let enabled = crate::events::apply(&guard, &inst, &resolved)?;
    inst.clear_buffer()?;
    let session = Session {
        fs,
        inst,
        guard,
        events: enabled,
        leftover_restored,
        lock,
    };
    Ok((session, before))
}

/// Fails, before anything is changed, if the kernel lacks what `opts`
/// asks for: the stack options and the tracer.
fn check_kernel(opts: &TraceConfig, fs: &Tracefs, inst: &Instance) -> Result<()> {
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
    Ok(())
}

/// Sets the options of `opts` (the stack options and what they need, then
/// the command line's `-O`, later wins), the buffer size and the stack
/// snapshot size; `pids_filtered`: a pid filter is set.
fn set_options(
    opts: &TraceConfig,
    guard: &Guard,
    inst: &Instance,
    pids_filtered: bool,
) -> Result<()> {
    let mut want = own_options(opts, pids_filtered, |o| inst.has_option(o));
    // Then what the command line asked for (later wins).
    for o in &opts.options {
        match o.strip_prefix("no") {
            Some(name) if inst.has_option(name) && !inst.has_option(o) => {
                want.push((name.into(), false))
            }
            _ => want.push((o.clone(), true)),
        }
    }
    for (name, on) in &want {
        if !on && !inst.has_option(name) {
            continue;
        }
        guard.set_option(inst, name, *on)?;
    }
    if let Some(kb) = opts.buffer_kb {
        guard.set_buffer_size_kb(inst, kb)?;
    }
    // Stack snapshots: asked for explicitly, they must be there; the
    // default is taken where the kernel has them.
    if opts.user_stacks == UserStacks::Deferred {
        let bytes = opts.snapshot_bytes.unwrap_or(DEFAULT_SNAPSHOT);
        if inst.exists("user_stack_snapshot_size") {
            guard.set_user_stack_snapshot_size(inst, bytes)?;
            // A snapshot larger than a sub-buffer holds gets larger sub-buffers.
            if inst.exists("buffer_subbuf_size_kb") {
                if let Some(kb) = subbuf_kb_for_snapshot(bytes, inst.page_size() as u64) {
                    guard.set_subbuf_size_kb(inst, kb)?;
                }
            }
        } else if opts.snapshot_bytes.is_some_and(|n| n > 0) {
            bail!(
                "this kernel has no user_stack_snapshot_size (stack snapshots need the ustack kernel patches of this release)"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod subbuf_tests {
    use super::subbuf_kb_for_snapshot;

    #[test]
    fn snapshots_that_fit_a_page_keep_it_and_larger_ones_get_a_power_of_two() {
        assert_eq!(subbuf_kb_for_snapshot(128, 4096), None);
        assert_eq!(subbuf_kb_for_snapshot(2048, 4096), None);
        // 3,000 bytes and 128 frames do not fit in 4 KiB
        assert_eq!(subbuf_kb_for_snapshot(3000, 4096), Some(8));
        assert_eq!(subbuf_kb_for_snapshot(4096, 4096), Some(8));
        assert_eq!(subbuf_kb_for_snapshot(8192, 4096), Some(16));
        assert_eq!(subbuf_kb_for_snapshot(65536, 4096), Some(128));
        // already large enough
        assert_eq!(subbuf_kb_for_snapshot(8192, 16384), None);
    }
}

#[cfg(test)]
mod own_options_tests {
    use super::*;

    /// `tracer-cli reset` sets [`SETUP_OPTIONS`] back to their defaults:
    /// any option setup turns on by itself and that list lacks would
    /// outlive the session (and pass into every instance created later).
    #[test]
    fn every_option_setup_turns_on_is_one_reset_turns_off() {
        let mut seen = std::collections::BTreeSet::new();
        for user_stacks in [UserStacks::Off, UserStacks::Sync, UserStacks::Deferred] {
            for bits in 0..16u8 {
                let opts = TraceConfig {
                    user_stacks,
                    kernel_stacks: bits & 1 != 0,
                    children: bits & 2 != 0,
                    filter_command: bits & 4 != 0,
                    ..TraceConfig::default()
                };
                for (name, on) in own_options(&opts, bits & 8 != 0, |_| true) {
                    assert!(
                        !on || SETUP_OPTIONS.iter().any(|&(n, _)| n == name),
                        "setup turns on {name}, which reset leaves on"
                    );
                    seen.insert(name);
                }
            }
        }
        // And reset turns off nothing setup never touches.
        let seen: Vec<&str> = seen.iter().map(String::as_str).collect();
        let mut want: Vec<&str> = SETUP_OPTIONS.iter().map(|&(n, _)| n).collect();
        want.sort_unstable();
        assert_eq!(seen, want);
    }
}
