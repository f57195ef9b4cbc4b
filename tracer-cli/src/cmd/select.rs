//! The options that choose what a report or the TUI shows: trace-cmd's
//! `-F` (negated after `-v`) and `--cpu`, perf report's `--pid`, `--comm`
//! and `--time`; one definition for `report` and `tui`.

use anyhow::{bail, Context, Result};
use ustack_printer::select::Selection;

/// `-F`, `-v`, `--cpu`, `--pid`, `--comm` and `--time`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SelectArgs {
    /// Only show events of these CPUs (repeatable; lists like `0,2-3` work).
    #[arg(long = "cpu", value_name = "CPUS")]
    pub cpu: Vec<String>,
    /// Event filter in trace-cmd (libtraceevent) syntax, e.g. `sched_switch`,
    /// `sched/sched_switch` or `sched_switch: prev_pid == 1` (repeatable).
    #[arg(short = 'F', long = "filter", value_name = "FILTER")]
    pub filter: Vec<String>,
    /// Negate the `-F` filters given after it: hide the events they match.
    #[arg(short = 'v')]
    pub invert: bool,
    /// Only the groups of these tasks in the stitched views (as perf
    /// report's --pid); in the plain report, the events of these tasks and
    /// those naming them in `pid` or `next_pid`, as trace-cmd's --pid
    /// (repeatable, comma lists work).
    #[arg(long = "pid", value_name = "PIDS", value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// Only the groups of tasks with these exact command names in the
    /// stitched views (as perf report's --comm); in the plain report, --pid
    /// of the pids the file's cmdlines give these names, as trace-cmd's
    /// --comm (repeatable, comma lists work).
    #[arg(long = "comm", value_name = "COMMS", value_delimiter = ',')]
    pub comm: Vec<String>,
    /// With the stitched views: only the events of this time window,
    /// `START,END` in seconds as the report prints them (either may be
    /// empty), as perf report's --time.
    #[arg(long = "time", value_name = "START,END")]
    pub time: Option<String>,
}

impl SelectArgs {
    /// The CPUs selected with `--cpu`, or `None` for all.
    pub fn cpus(&self) -> Result<Option<Vec<u32>>> {
        if self.cpu.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::new();
        for spec in &self.cpu {
            for part in spec.split([',', ':']).filter(|p| !p.trim().is_empty()) {
                let (a, b) = match part.split_once('-') {
                    Some((a, b)) => (a.trim(), b.trim()),
                    None => (part.trim(), part.trim()),
                };
                let a: u32 = a
                    .parse()
                    .with_context(|| format!("bad cpu list {spec:?}"))?;
                let b: u32 = b
                    .parse()
                    .with_context(|| format!("bad cpu list {spec:?}"))?;
                if a > b {
                    bail!("bad cpu list {spec:?}: range must go from lower to greater");
                }
                for c in a..=b {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
        }
        Ok(Some(out))
    }

    /// trace-cmd's `-v`: it negates the `-F` filters given after it.
    /// Returns the positive and the negative filters; `matches` are those
    /// of the subcommand (they keep the order of the options).
    pub fn split_filters(&self, matches: &clap::ArgMatches) -> (Vec<String>, Vec<String>) {
        let v_at = matches.index_of("invert").filter(|_| self.invert);
        let at: Vec<usize> = matches
            .indices_of("filter")
            .map_or(Vec::new(), |i| i.collect());
        let (mut pos, mut neg) = (Vec::new(), Vec::new());
        for (n, f) in self.filter.iter().enumerate() {
            let after_v = v_at.is_some_and(|v| at.get(n).is_none_or(|&i| i > v));
            if after_v { &mut neg } else { &mut pos }.push(f.clone());
        }
        (pos, neg)
    }

    /// The selection of the stitched views and the TUI.
    pub fn selection(&self, matches: &clap::ArgMatches) -> Result<Selection> {
        let mut select = Selection {
            cpus: self.cpus()?,
            pids: self.pid.clone(),
            comms: self.comm.clone(),
            ..Selection::default()
        };
        (select.filters, select.neg_filters) = self.split_filters(matches);
        if let Some(t) = &self.time {
            select.set_time(t)?;
        }
        Ok(select)
    }
}
