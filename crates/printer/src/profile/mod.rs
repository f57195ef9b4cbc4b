//! `report --profile` as trace-cmd 3.1.6 prints it: per task, how long it
//! slept or was preempted (`sched_switch`, by the state it left in), how
//! long its wakeups took to run it (`sched_wakeup`), the time of each pair
//! of start and end events (syscalls, interrupts, softirqs, function graph,
//! `-H` hooks) and the count of every other event, each with the call tree
//! of the kernel stacks (`-T`) recorded with it.
//!
//! Like trace-cmd: `-G` times interrupts and softirqs per CPU instead of per
//! task, `--by-comm` merges the tasks of one command name into a group, and
//! events lost on a CPU drop the pairs started there.
//!
//! Order: tasks by pid, events by trace-cmd's rule (`sched_switch` by
//! state, then wakeups, then by event id, then by total time, longest
//! first). trace-cmd leaves events that tie under that rule (two counted
//! events of one id, e.g. page faults at two addresses) and the groups of
//! `--by-comm` in the order of a hash keyed by heap addresses, which
//! changes from run to run of trace-cmd itself; here ties are ordered by
//! the event's value and groups by name.

mod chain;
mod hook;
mod output;
mod setup;
mod state;

use std::io::{self, Write};

pub use chain::ts_text;
pub use hook::Hook;
pub use state::Profile;

/// How `--profile` accounts events.
#[derive(Debug, Clone, Default)]
pub struct ProfileOptions {
    /// Interrupts and softirqs per CPU, not per task (`-G`).
    pub global: bool,
    /// Merge tasks of the same command name (`--by-comm`).
    pub by_comm: bool,
    /// User-defined pairs of events (`-H`), in the order given.
    pub hooks: Vec<Hook>,
}

/// Names what the profile prints: kernel functions and the command names
/// of tasks that no event named.
pub trait Names {
    /// The kernel function containing `addr`.
    fn function(&self, addr: u64) -> Option<String>;
    /// The command name of `pid` from the file's saved cmdlines (`<...>`
    /// when unknown).
    fn comm(&self, pid: i32) -> String;
}

/// Writes one line per event: `  Event: NAME (COUNT)` and the times.
fn write_event_line(out: &mut dyn Write, name: &str, e: &state::EventStats) -> io::Result<()> {
    write!(out, "  Event: {name} ({})", e.count)?;
    if e.total > 0 {
        write!(
            out,
            " Total: {} Avg: {} Max: {}(ts:{}) Min:{}(ts:{})",
            e.total,
            e.total / e.count.max(1),
            e.max.0,
            ts_text(e.max.1),
            e.min.0,
            ts_text(e.min.1)
        )?;
    }
    writeln!(out)
}

/// `--profile` met a record of an instance buffer: trace-cmd 3.1.6 profiles
/// the top buffer only and stops there (`Handle not found?`, exit 255).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceRecord;

impl std::fmt::Display for InstanceRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("--profile reads the top buffer only, and this file has events in an instance")
    }
}

impl std::error::Error for InstanceRecord {}

impl Names for crate::tracecmd::Printer<'_> {
    fn function(&self, addr: u64) -> Option<String> {
        self.tep.tep().find_function(addr)
    }

    fn comm(&self, pid: i32) -> String {
        self.tep
            .tep()
            .comm_of_pid(pid)
            .map_or_else(|| "<...>".into(), |c| c.to_string_lossy().into_owned())
    }
}
