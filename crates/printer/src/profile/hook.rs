//! `report -H`: a user-defined pair of events that `--profile` times, in
//! trace-cmd's syntax
//! `[SYSTEM:]START,START_MATCH[,PID]/[SYSTEM:]END,END_MATCH[,FLAGS]`.

use anyhow::{bail, Result};

/// One `-H` pair of events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// System of the start event (any system when `None`).
    pub start_system: Option<String>,
    /// Name of the start event.
    pub start_event: String,
    /// Field of the start event that the end event's field must equal.
    pub start_match: String,
    /// Field of the start event naming the task to account to, instead of
    /// `common_pid`.
    pub pid: Option<String>,
    /// System of the end event (any system when `None`).
    pub end_system: Option<String>,
    /// Name of the end event.
    pub end_event: String,
    /// Field of the end event matched against the start's.
    pub end_match: String,
    /// The flags as given (printed back by trace-cmd).
    pub flags: Option<String>,
    /// The pair may start on one CPU and end on another (no `P` flag).
    pub migrate: bool,
    /// Timed for the whole system, not per task (`G` flag).
    pub global: bool,
}

impl Hook {
    /// Parses one `-H` argument the way trace-cmd 3.1.6 splits it: `:`
    /// right after the first token makes it a system, `,` after the match
    /// field introduces the pid field (start) or the flags (end). Unknown
    /// flag letters are ignored.
    pub fn parse(arg: &str) -> Result<Hook> {
        let Some((start, end)) = arg.split_once('/') else {
            bail!("invalid hook format {arg:?}: no '/' between start and end");
        };
        let (start_system, start_event, rest) = system_and_event(arg, start)?;
        let (start_match, pid) = match rest.split_once(',') {
            Some((m, p)) => (m, Some(p)),
            None => (rest, None),
        };
        let (end_system, end_event, rest) = system_and_event(arg, end)?;
        let (end_match, flags) = match rest.split_once(',') {
            Some((m, f)) => (m, Some(f)),
            None => (rest, None),
        };
        if start_match.is_empty() || end_match.is_empty() || pid == Some("") {
            bail!("invalid hook format {arg:?}");
        }
        let lower = flags.unwrap_or("").to_ascii_lowercase();
        Ok(Hook {
            start_system: start_system.map(str::to_string),
            start_event: start_event.to_string(),
            start_match: start_match.to_string(),
            pid: pid.map(str::to_string),
            end_system: end_system.map(str::to_string),
            end_event: end_event.to_string(),
            end_match: end_match.to_string(),
            flags: flags.map(str::to_string),
            migrate: !lower.contains('p'),
            global: lower.contains('g'),
        })
    }

    /// The line trace-cmd prints when it reads the option (C's `%s` of a
    /// missing part is `(null)`).
    pub fn describe(&self) -> String {
        let s = |o: &Option<String>| o.clone().unwrap_or_else(|| "(null)".into());
        format!(
            "start {}:{}:{} ({}) end {}:{}:{} ({})",
            s(&self.start_system),
            self.start_event,
            self.start_match,
            s(&self.pid),
            s(&self.end_system),
            self.end_event,
            self.end_match,
            s(&self.flags)
        )
    }
}

/// Splits `[SYSTEM:]EVENT,REST`.
fn system_and_event<'a>(arg: &str, part: &'a str) -> Result<(Option<&'a str>, &'a str, &'a str)> {
    let Some((head, rest)) = part.split_once(',') else {
        bail!("invalid hook format {arg:?}: no match field after the event");
    };
    let (system, event) = match head.split_once(':') {
        Some((s, e)) => (Some(s), e),
        None => (None, head),
    };
    if event.is_empty() || system == Some("") {
        bail!("invalid hook format {arg:?}");
    }
    Ok((system, event, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_and_short_forms() {
        let h = Hook::parse("sched:sched_waking,pid,common_pid/sched:sched_switch,next_pid,pG")
            .unwrap();
        assert_eq!(h.start_system.as_deref(), Some("sched"));
        assert_eq!(h.pid.as_deref(), Some("common_pid"));
        assert!(!h.migrate && h.global);
        assert_eq!(
            h.describe(),
            "start sched:sched_waking:pid (common_pid) end sched:sched_switch:next_pid (pG)"
        );
        let h = Hook::parse("irq_handler_entry,irq/irq_handler_exit,irq").unwrap();
        assert_eq!(
            h.describe(),
            "start (null):irq_handler_entry:irq ((null)) end (null):irq_handler_exit:irq ((null))"
        );
        assert!(h.migrate && !h.global);
    }

    #[test]
    fn bad_forms_are_errors() {
        for bad in ["", "a,b", "a/b", "a,b/c", ":a,b/c,d", "a,,/c,d"] {
            assert!(Hook::parse(bad).is_err(), "{bad:?}");
        }
    }
}
