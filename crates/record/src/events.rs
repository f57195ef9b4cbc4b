//! The `-e`/`-f` pairs of a session resolved to tracefs events: which
//! events to enable, which filter goes on each event, and which filters go
//! on a whole system (`-e sched -f 'prev_pid == 1'`, as trace-cmd writes
//! `events/sched/filter`). A name that matches nothing suggests the
//! closest one.

use anyhow::{bail, Result};
use ustack_tracefs::{glob_match, EventId, EventSpec, Guard, Instance, Tracefs};

/// The resolved events of a session.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    /// Every event to enable, with its own filter.
    pub events: Vec<(EventId, Option<String>)>,
    /// Filters for whole systems.
    pub system_filters: Vec<(String, String)>,
}

/// Resolves `-e`/`-f` pairs; nothing is changed in tracefs.
pub(crate) fn resolve(fs: &Tracefs, pairs: &[(String, Option<String>)]) -> Result<Resolved> {
    let mut out = Resolved::default();
    let mut all = None;
    for (text, filter) in pairs {
        let spec = EventSpec::parse(text)?;
        let found = match fs.resolve(&spec) {
            Ok(f) => f,
            Err(ustack_tracefs::Error::NotFound { .. }) => {
                let all = match &all {
                    Some(a) => a,
                    None => all.insert(fs.all_events()?),
                };
                match did_you_mean(text, all) {
                    Some(s) => bail!("no such event: {text} (did you mean {s}?)"),
                    None => bail!("no such event: {text}"),
                }
            }
            Err(e) => return Err(e.into()),
        };
        // `-e SYSTEM` (or a glob of systems) with a filter: the filter is
        // the systems', which the kernel applies to the events that have
        // its fields.
        let whole_systems = spec.event.is_none()
            && spec
                .system
                .as_deref()
                .is_some_and(|p| found.iter().all(|e| glob_match(p, &e.system)));
        match filter {
            Some(f) if whole_systems => {
                for e in &found {
                    if !out.system_filters.iter().any(|(s, _)| *s == e.system) {
                        out.system_filters.push((e.system.clone(), f.clone()));
                    }
                }
                out.events.extend(found.into_iter().map(|e| (e, None)));
            }
            _ => out
                .events
                .extend(found.into_iter().map(|e| (e, filter.clone()))),
        }
    }
    Ok(out)
}

/// Applies the filters and enables the events under `guard`; returns the
/// events enabled, each once.
pub(crate) fn apply(guard: &Guard, inst: &Instance, r: &Resolved) -> Result<Vec<EventId>> {
    let mut enabled: Vec<EventId> = Vec::new();
    for (e, filter) in &r.events {
        if filter.is_some() || inst.event_filter(e)?.is_some() {
            guard.set_event_filter(inst, e, filter.as_deref())?;
        }
        guard.set_event_enabled(inst, e, true)?;
        if !enabled.contains(e) {
            enabled.push(e.clone());
        }
    }
    for (system, filter) in &r.system_filters {
        guard.set_system_filter(inst, system, &enabled, filter)?;
        // The kernel accepts a system filter that fits none of its events
        // (and says why in error_log only): that would trace everything.
        let mut applied = false;
        for e in enabled.iter().filter(|e| e.system == *system) {
            applied |= inst.event_filter(e)?.is_some();
        }
        if !applied {
            let log = inst.read_string("error_log").unwrap_or_default();
            let why = log
                .lines()
                .rev()
                .find_map(|l| l.rsplit_once("error: ").map(|(_, r)| r.to_string()))
                .unwrap_or_else(|| "no event of the system has the fields it names".into());
            bail!("bad filter for {system}: {why}: {filter}");
        }
    }
    Ok(enabled)
}

/// The event or system name closest to `text` in edit distance (at most a
/// third of its length, between 1 and 3 edits), spelt the way `text` is:
/// `system:event` when it names a system, else a bare event or system name.
fn did_you_mean(text: &str, all: &[EventId]) -> Option<String> {
    let limit = (text.chars().count() / 3).clamp(1, 3);
    let mut best: Option<(usize, String)> = None;
    let mut consider = |cand: String| {
        let d = distance(text, &cand);
        if d <= limit && best.as_ref().is_none_or(|(b, _)| d < *b) {
            best = Some((d, cand));
        }
    };
    for e in all {
        if text.contains(':') || text.contains('/') {
            let sep = if text.contains(':') { ':' } else { '/' };
            consider(format!("{}{sep}{}", e.system, e.name));
        } else {
            consider(e.name.clone());
            consider(e.system.clone());
        }
    }
    best.map(|(_, s)| s)
}

/// Levenshtein distance between two strings (by chars).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str, n: &str) -> EventId {
        EventId {
            system: s.into(),
            name: n.into(),
        }
    }

    #[test]
    fn a_misspelt_event_suggests_the_closest_one() {
        let all = [
            ev("sched", "sched_switch"),
            ev("sched", "sched_wakeup"),
            ev("raw_syscalls", "sys_enter"),
            ev("irq", "irq_handler_entry"),
        ];
        assert_eq!(
            did_you_mean("sched:sched_swich", &all).as_deref(),
            Some("sched:sched_switch")
        );
        assert_eq!(
            did_you_mean("sched/sched_wakup", &all).as_deref(),
            Some("sched/sched_wakeup")
        );
        assert_eq!(
            did_you_mean("sys_entre", &all).as_deref(),
            Some("sys_enter")
        );
        assert_eq!(did_you_mean("schd", &all).as_deref(), Some("sched"));
        assert_eq!(did_you_mean("block", &all), None);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "ab"), 2);
    }
}
