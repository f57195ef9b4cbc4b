//! The accounting of `--profile`: trace-cmd 3.1.6's state machine over the
//! records as the report shows them (after `-F`, `--cpu`, `-I`, `-S`).
//!
//! A *start* event (sched_switch out, a wakeup, sys_enter, irq entry, ...)
//! opens a pending pair on a task; the matching *end* event closes it and
//! adds the time between them to the task's statistics of the start event
//! (keyed by the event and its values). A `kernel_stack` record goes to the
//! pair or event its task saw last (or, after a wakeup, to the woken task).
//! Every other event is counted by its first field.

use std::collections::HashMap;

use anyhow::{bail, Result};
use ustack_tracedata::field::until_nul;
use ustack_tracedata::{EventFormat, FieldRef, Record, TraceFile};

use super::chain::Stack;

/// The non-common field `name` of `f`. Numeric fields are read raw, as
/// trace-cmd reads them: 1, 2, 4 or 8 bytes, zero-extended
/// ([`FieldRef::u64`]).
pub(super) fn field(f: &EventFormat, name: &str) -> Option<FieldRef> {
    f.fields
        .iter()
        .find(|x| x.name == name && !x.name.starts_with("common_"))
        .map(|x| FieldRef::new(x, f.long_size))
}

/// [`field`], an error naming the event when it has no such field.
pub(super) fn need_field(f: &EventFormat, name: &str) -> Result<FieldRef> {
    match field(f, name) {
        Some(x) => Ok(x),
        None => bail!("Event: {} does not have field {name}", f.name),
    }
}

/// A `char[]` field as C prints it: its inline bytes up to the first NUL.
fn text(f: FieldRef, data: &[u8]) -> String {
    let b = f.inline(data).unwrap_or(&[]);
    String::from_utf8_lossy(until_nul(b)).into_owned()
}

/// What an event is to the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Other,
    SchedSwitch,
    Wakeup,
    Func,
}

/// How an event's records are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handler {
    Pair,
    SchedSwitch,
    Wakeup,
    Stack,
    FgraphEntry,
    FgraphExit,
    ProcessExec,
}

/// How an event's values are named in `Event:` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Label {
    Hex,
    SchedSwitch,
    Softirq,
    Func,
    Syscall,
}

/// trace-cmd's `event_data`.
#[derive(Debug, Clone)]
pub(super) struct EventData {
    pub(super) id: u16,
    pub(super) name: String,
    pub(super) kind: Kind,
    pub(super) handler: Handler,
    pub(super) label: Label,
    /// The start event of the pair this one ends.
    pub(super) start: Option<usize>,
    /// The end event of the pair this one starts.
    pub(super) end: Option<usize>,
    pub(super) pid_field: Option<FieldRef>,
    /// (end event) the field compared with the start's value.
    pub(super) start_match: Option<FieldRef>,
    /// (start event) the value an end must match.
    pub(super) end_match: Option<FieldRef>,
    pub(super) data_field: Option<FieldRef>,
    pub(super) migrate: bool,
    pub(super) global: bool,
}

/// An event's statistics within a task: key (event, value matched, value).
pub(super) type Key = (usize, u64, u64);

/// Count and times of one event (and value) of one task or group.
#[derive(Debug, Clone, Default)]
pub(super) struct EventStats {
    pub count: u64,
    pub total: u64,
    pub max: (u64, u64),
    pub min: (u64, u64),
    last_time: u64,
    pub(super) stacks: HashMap<Vec<u8>, Stack>,
}

impl EventStats {
    fn add_stack(&mut self, caller: &[u8], time: u64, ts: u64) {
        self.stacks
            .entry(caller.to_vec())
            .or_insert_with(|| Stack {
                caller: caller.to_vec(),
                ..Stack::default()
            })
            .add(time, ts);
    }

    /// Adds another task's statistics of the same key (`--by-comm`).
    pub(super) fn merge(&mut self, o: EventStats) {
        self.count += o.count;
        self.total += o.total;
        if self.max.0 < o.max.0 {
            self.max = o.max;
        }
        if self.min.0 > o.min.0 {
            self.min = o.min;
        }
        for (k, s) in o.stacks {
            match self.stacks.get_mut(&k) {
                Some(e) => e.merge(&s),
                None => {
                    self.stacks.insert(k, s);
                }
            }
        }
    }
}

/// A pending start of a pair.
#[derive(Debug)]
pub(super) struct Start {
    ed: usize,
    task: usize,
    ts: u64,
    search_val: u64,
    val: u64,
    cpu: u32,
    migrate: bool,
    /// The kernel stack recorded with the start, and when.
    stack: Option<(Vec<u8>, u64)>,
}

#[derive(Debug, Default)]
pub(super) struct Task {
    pub(super) pid: i32,
    pub(super) sleeping: bool,
    pub(super) comm: Option<String>,
    /// Ids of the pending starts, oldest first.
    pub(super) starts: Vec<usize>,
    pub(super) events: HashMap<Key, EventStats>,
    pub(super) proxy: Option<usize>,
    pub(super) last_start: Option<usize>,
    pub(super) last_event: Option<Key>,
    /// A kernel stack not used yet (for a function graph entry): serial,
    /// caller, time.
    pub(super) last_stack: Option<(u64, Vec<u8>, u64)>,
    /// Merged into a `--by-comm` group.
    pub(super) grouped: bool,
}

/// The profile of one trace file being read.
#[derive(Debug)]
pub struct Profile {
    pub(super) events: Vec<EventData>,
    pub(super) by_id: HashMap<u16, usize>,
    /// Event ids seen without a known format.
    pub(super) unknown: Vec<u16>,
    pub(super) tasks: Vec<Task>,
    pub(super) pids: HashMap<i32, usize>,
    pub(super) starts: Vec<Option<Start>>,
    pub(super) global_task: usize,
    pub(super) percpu: Vec<usize>,
    pub(super) wakeup_comm: Option<FieldRef>,
    pub(super) prev_comm: Option<FieldRef>,
    pub(super) next_comm: Option<FieldRef>,
    pub(super) stack_caller: Option<FieldRef>,
    pub(super) serial: u64,
    pub(super) long: usize,
    pub(super) by_comm: bool,
}

impl Profile {
    /// The description of event `id`; events without a role are counted
    /// by their first field.
    fn event_data(&mut self, file: &TraceFile, id: u16) -> Option<usize> {
        if let Some(&e) = self.by_id.get(&id) {
            return Some(e);
        }
        if self.unknown.contains(&id) {
            return None;
        }
        let Some(fmt) = file.formats().by_id(id) else {
            self.unknown.push(id);
            return None;
        };
        let e = self.add_event(fmt, Kind::Other);
        self.events[e].data_field = fmt
            .fields
            .iter()
            .find(|f| !f.name.starts_with("common_"))
            .map(|f| FieldRef::new(f, fmt.long_size));
        Some(e)
    }

    fn task(&mut self, pid: i32) -> usize {
        if let Some(&t) = self.pids.get(&pid) {
            return t;
        }
        let t = self.tasks.len();
        self.tasks.push(Task {
            pid,
            ..Task::default()
        });
        self.pids.insert(pid, t);
        t
    }

    /// Accounts one record shown at `ts`; `missed`: events were lost on its
    /// CPU just before it.
    pub fn record(&mut self, file: &TraceFile, r: &Record<'_>, ts: u64, missed: bool) {
        if missed {
            self.drop_starts(r.cpu);
        }
        let Some(id) = r.common_type() else { return };
        let Some(ed) = self.event_data(file, id) else {
            return;
        };
        let pid = u64::from(r.common_pid().unwrap_or(0) as u32);
        let t = self.task(pid as i32);
        let before = self.tasks[t].last_stack.as_ref().map(|s| s.0);
        match self.events[ed].handler {
            Handler::Pair => self.pair(ed, r, ts, pid),
            Handler::SchedSwitch => self.sched_switch(ed, r, ts),
            Handler::Wakeup => self.wakeup(ed, r, ts, pid),
            Handler::Stack => self.stack(ed, r, ts, pid),
            Handler::FgraphEntry => self.fgraph_entry(ed, r, ts, pid),
            Handler::FgraphExit => {
                let t = self.end_event(ed, r, ts, pid);
                self.tasks[t].last_event = None;
            }
            Handler::ProcessExec => {
                let pid = self.events[ed]
                    .data_field
                    .and_then(|f| f.u64(r.data))
                    .unwrap_or(pid);
                let t = self.task(pid as i32);
                self.tasks[t].comm = None;
            }
        }
        let task = &mut self.tasks[t];
        if before.is_some() && task.last_stack.as_ref().map(|s| s.0) == before {
            task.last_stack = None;
        }
    }

    /// Lost events on `cpu`: the pairs started there, and all those that
    /// may end on another CPU, can no longer be matched.
    fn drop_starts(&mut self, cpu: u32) {
        for id in 0..self.starts.len() {
            if let Some(s) = &self.starts[id] {
                if s.migrate || s.cpu == cpu {
                    self.free_start(id);
                }
            }
        }
    }

    fn add_start(
        &mut self,
        t: usize,
        ed: usize,
        r: &Record<'_>,
        ts: u64,
        sv: u64,
        val: u64,
    ) -> usize {
        let id = self.starts.len();
        self.starts.push(Some(Start {
            ed,
            task: t,
            ts,
            search_val: sv,
            val,
            cpu: r.cpu,
            migrate: self.events[ed].migrate,
            stack: None,
        }));
        self.tasks[t].starts.push(id);
        id
    }

    fn free_start(&mut self, id: usize) {
        if let Some(s) = self.starts[id].take() {
            let task = &mut self.tasks[s.task];
            if task.last_start == Some(id) {
                task.last_start = None;
            }
            task.starts.retain(|&x| x != id);
        }
    }

    /// Closes the newest pending start of event `ed` with value `sv` on
    /// task `t`, at `ts`; returns the statistics it was added to.
    fn close(&mut self, t: usize, ed: Option<usize>, ts: u64, sv: u64) -> Option<Key> {
        let ed = ed?;
        let starts = &self.starts;
        let id = *self.tasks[t].starts.iter().rev().find(|&&i| {
            starts[i]
                .as_ref()
                .is_some_and(|s| s.ed == ed && s.search_val == sv)
        })?;
        let s = self.starts[id].as_mut().expect("live");
        let delta = ts.saturating_sub(s.ts);
        let key = (ed, s.search_val, s.val);
        let stack = s.stack.take();
        let e = self.tasks[t].events.entry(key).or_default();
        e.count += 1;
        e.total += delta;
        e.last_time = delta;
        if delta > e.max.0 {
            e.max = (delta, ts);
        }
        if e.count == 1 || delta < e.min.0 {
            e.min = (delta, ts);
        }
        if let Some((caller, sts)) = stack {
            e.add_stack(&caller, delta, sts);
        }
        self.free_start(id);
        Some(key)
    }

    fn event_task(&mut self, ed: usize, r: &Record<'_>, pid: u64) -> usize {
        let e = &self.events[ed];
        if e.global {
            if e.migrate {
                return self.global_task;
            }
            return self
                .percpu
                .get(r.cpu as usize)
                .copied()
                .unwrap_or(self.global_task);
        }
        let pid = e.pid_field.and_then(|f| f.u64(r.data)).unwrap_or(pid);
        self.task(pid as i32)
    }

    fn end_event(&mut self, ed: usize, r: &Record<'_>, ts: u64, pid: u64) -> usize {
        let t = self.event_task(ed, r, pid);
        let val = self.events[ed]
            .start_match
            .and_then(|f| f.u64(r.data))
            .unwrap_or(0);
        let key = self.close(t, self.events[ed].start, ts, val);
        self.tasks[t].last_start = None;
        self.tasks[t].last_event = key;
        t
    }

    fn start_event(&mut self, ed: usize, r: &Record<'_>, ts: u64, pid: u64) -> usize {
        let t = self.event_task(ed, r, pid);
        let val = self.events[ed]
            .end_match
            .and_then(|f| f.u64(r.data))
            .unwrap_or(0);
        let s = self.add_start(t, ed, r, ts, val, val);
        self.tasks[t].last_start = Some(s);
        self.tasks[t].last_event = None;
        t
    }

    /// trace-cmd's handle_event_data(): end and/or start a pair, or count.
    fn pair(&mut self, ed: usize, r: &Record<'_>, ts: u64, pid: u64) {
        let mut handled = false;
        if self.events[ed].start.is_some() {
            self.end_event(ed, r, ts, pid);
            handled = true;
        }
        if self.events[ed].end.is_some() {
            self.start_event(ed, r, ts, pid);
            handled = true;
        }
        if handled {
            return;
        }
        let mut t = self.task(pid as i32);
        let task = &mut self.tasks[t];
        task.proxy = None;
        task.last_start = None;
        task.last_event = None;
        let (pid_field, data_field) = (self.events[ed].pid_field, self.events[ed].data_field);
        if let Some(f) = pid_field {
            let other = self.task(f.u64(r.data).unwrap_or(pid) as i32);
            self.tasks[t].proxy = Some(other);
            t = other;
        }
        let val = data_field.and_then(|f| f.u64(r.data)).unwrap_or(0);
        let key = (ed, val, val);
        self.tasks[t].events.entry(key).or_default().count += 1;
        self.tasks[t].last_event = Some(key);
    }

    fn sched_switch(&mut self, ed: usize, r: &Record<'_>, ts: u64) {
        let e = &self.events[ed];
        let read = |f: Option<FieldRef>| f.and_then(|f| f.u64(r.data)).unwrap_or(0);
        let prev_pid = read(e.pid_field);
        let prev_state = read(e.data_field) & 1023;
        let next_pid = read(e.end_match);
        let wakeup = e.start;
        let t = self.task(prev_pid as i32);
        if self.tasks[t].comm.is_none() {
            self.tasks[t].comm = self.prev_comm.map(|f| text(f, r.data));
        }
        self.tasks[t].sleeping = prev_state != 0;
        let s = self.add_start(t, ed, r, ts, prev_pid, prev_state);
        self.tasks[t].last_start = Some(s);
        self.tasks[t].last_event = None;
        let n = self.task(next_pid as i32);
        if self.tasks[n].comm.is_none() {
            self.tasks[n].comm = self.next_comm.map(|f| text(f, r.data));
        }
        // Blocked: its wakeup; preempted: its switch out.
        self.close(n, wakeup, ts, next_pid);
        self.close(n, Some(ed), ts, next_pid);
    }

    fn wakeup(&mut self, ed: usize, r: &Record<'_>, ts: u64, pid: u64) {
        let proxy = self.task(pid as i32);
        let e = &self.events[ed];
        if let Some(f) = e.data_field {
            if f.u64(r.data) == Some(0) {
                return;
            }
        }
        let woken = e.pid_field.and_then(|f| f.u64(r.data)).unwrap_or(pid);
        let switch = e.start;
        let t = self.task(woken as i32);
        if self.tasks[t].comm.is_none() {
            self.tasks[t].comm = self.wakeup_comm.map(|f| text(f, r.data));
        }
        if !self.tasks[t].sleeping {
            let p = &mut self.tasks[proxy];
            p.proxy = None;
            p.last_start = None;
            p.last_event = None;
            return;
        }
        self.tasks[t].sleeping = false;
        // The stack that follows belongs to the woken task.
        self.tasks[proxy].proxy = Some(t);
        self.close(t, switch, ts, woken);
        let s = self.add_start(t, ed, r, ts, woken, woken);
        self.tasks[t].last_event = None;
        self.tasks[t].last_start = Some(s);
    }

    fn stack(&mut self, ed: usize, r: &Record<'_>, ts: u64, pid: u64) {
        let orig = self.task(pid as i32);
        self.tasks[orig].last_stack = None;
        let mut t = orig;
        let proxy = self.tasks[orig].proxy.take();
        if let Some(p) = proxy {
            t = p;
        }
        let off = self.events[ed].data_field.map_or(0, |f| f.offset());
        let caller = r.data.get(off..).unwrap_or(&[]);
        if self.tasks[t].last_start.is_none() && self.tasks[t].last_event.is_none() {
            // Kept for a function graph entry that may follow.
            self.serial += 1;
            self.tasks[orig].last_stack = Some((self.serial, caller.to_vec(), ts));
            return;
        }
        if let Some(s) = self.tasks[t].last_start.take() {
            if let Some(st) = self.starts[s].as_mut() {
                st.stack = Some((caller.to_vec(), ts));
            }
            self.tasks[t].last_event = None;
            return;
        }
        let key = self.tasks[t].last_event.take().expect("checked");
        if caller.len() < 4 {
            return;
        }
        let e = self.tasks[t].events.entry(key).or_default();
        let time = e.last_time;
        e.add_stack(caller, time, ts);
    }

    fn fgraph_entry(&mut self, ed: usize, r: &Record<'_>, ts: u64, pid: u64) {
        let t = self.start_event(ed, r, ts, pid);
        if let Some((_, caller, sts)) = self.tasks[t].last_stack.take() {
            if let Some(s) = self.tasks[t]
                .last_start
                .and_then(|s| self.starts[s].as_mut())
            {
                s.stack = Some((caller, sts));
            }
            self.tasks[t].last_event = None;
        }
        self.tasks[t].last_start = None;
    }
}
