//! Setting `--profile` up for a file: the events trace-cmd 3.1.6 gives a
//! role (scheduler, interrupts, softirqs, syscalls, function graph, exec,
//! kernel stacks), paired start with end, then the `-H` hooks.

use std::collections::HashMap;

use anyhow::Result;
use ustack_tracedata::{EventFormat, TraceFile};

use super::state::{field, need_field, EventData, Handler, Kind, Label, Profile, Task};
use super::ProfileOptions;

impl Profile {
    /// Sets the profile up for `file`: the scheduler, interrupt, softirq,
    /// syscall, function graph, exec and kernel stack events it has, paired
    /// as trace-cmd pairs them, then the `-H` hooks.
    pub fn new(file: &TraceFile, opts: &ProfileOptions) -> Result<Profile> {
        let cpus = file.cpu_count() as usize;
        let mut p = Profile {
            events: Vec::new(),
            by_id: HashMap::new(),
            unknown: Vec::new(),
            tasks: Vec::new(),
            pids: HashMap::new(),
            starts: Vec::new(),
            global_task: 0,
            percpu: Vec::new(),
            wakeup_comm: None,
            prev_comm: None,
            next_comm: None,
            stack_caller: None,
            serial: 0,
            long: file.long_size().max(1),
            by_comm: opts.by_comm,
        };
        p.tasks.push(Task {
            pid: -1,
            comm: Some("Global Events".into()),
            ..Task::default()
        });
        for i in 0..cpus {
            p.percpu.push(p.tasks.len());
            p.tasks.push(Task {
                pid: -1 - i as i32,
                comm: Some(format!("Global CPU[{i}] Events")),
                ..Task::default()
            });
        }
        let f = |s: &str, n: &str| file.formats().by_name(s, n);
        let add = |p: &mut Profile, sys: &str, name: &str, kind: Kind| {
            f(sys, name).map(|fmt| p.add_event(fmt, kind))
        };
        let irq_entry = add(&mut p, "irq", "irq_handler_entry", Kind::Other);
        let irq_exit = add(&mut p, "irq", "irq_handler_exit", Kind::Other);
        let sirq_entry = add(&mut p, "irq", "softirq_entry", Kind::Other);
        let sirq_exit = add(&mut p, "irq", "softirq_exit", Kind::Other);
        let sirq_raise = add(&mut p, "irq", "softirq_raise", Kind::Other);
        let wakeup = add(&mut p, "sched", "sched_wakeup", Kind::Wakeup);
        let switch = add(&mut p, "sched", "sched_switch", Kind::SchedSwitch);
        let fg_entry = add(&mut p, "ftrace", "funcgraph_entry", Kind::Func);
        let fg_exit = add(&mut p, "ftrace", "funcgraph_exit", Kind::Func);
        let sys_enter = add(&mut p, "raw_syscalls", "sys_enter", Kind::Other);
        let sys_exit = add(&mut p, "raw_syscalls", "sys_exit", Kind::Other);
        let exec = add(&mut p, "sched", "sched_process_exec", Kind::Other);
        let stack = add(&mut p, "ftrace", "kernel_stack", Kind::Other);
        if let Some(s) = stack {
            p.events[s].handler = Handler::Stack;
            let c = need_field(f("ftrace", "kernel_stack").expect("added"), "caller")?;
            p.events[s].data_field = Some(c);
            p.stack_caller = Some(c);
        }
        if let Some(e) = exec {
            p.events[e].handler = Handler::ProcessExec;
            p.events[e].data_field =
                field(f("sched", "sched_process_exec").expect("added"), "old_pid");
        }
        if let Some(s) = switch {
            let fmt = f("sched", "sched_switch").expect("added");
            p.events[s].handler = Handler::SchedSwitch;
            p.events[s].data_field = Some(need_field(fmt, "prev_state")?);
            p.prev_comm = Some(need_field(fmt, "prev_comm")?);
            p.next_comm = Some(need_field(fmt, "next_comm")?);
            p.events[s].label = Label::SchedSwitch;
        }
        if let (Some(s), Some(w)) = (switch, wakeup) {
            p.mate(file, s, Some("prev_pid"), "next_pid", w, "pid", true, false)?;
            p.mate(file, w, Some("pid"), "pid", s, "prev_pid", true, false)?;
            let fmt = f("sched", "sched_wakeup").expect("added");
            p.events[w].handler = Handler::Wakeup;
            p.events[w].data_field = field(fmt, "success");
            p.wakeup_comm = Some(need_field(fmt, "comm")?);
        }
        if let (Some(a), Some(b)) = (irq_entry, irq_exit) {
            p.mate(file, a, None, "irq", b, "irq", false, opts.global)?;
        }
        for e in [sirq_entry, sirq_exit, sirq_raise].into_iter().flatten() {
            p.events[e].label = Label::Softirq;
        }
        if let (Some(a), Some(b)) = (sirq_entry, sirq_exit) {
            p.mate(file, a, None, "vec", b, "vec", false, opts.global)?;
        }
        if let (Some(a), Some(b)) = (sirq_entry, sirq_raise) {
            p.mate(file, b, None, "vec", a, "vec", false, opts.global)?;
        }
        if let (Some(a), Some(b)) = (fg_entry, fg_exit) {
            p.mate(file, a, None, "func", b, "func", true, false)?;
            p.events[a].handler = Handler::FgraphEntry;
            p.events[b].handler = Handler::FgraphExit;
            p.events[a].label = Label::Func;
        }
        if let (Some(a), Some(b)) = (sys_enter, sys_exit) {
            p.mate(file, a, None, "id", b, "id", true, false)?;
            p.events[a].label = Label::Syscall;
            p.events[b].label = Label::Syscall;
        }
        if let Some(fmt) = f("ftrace", "function") {
            let e = p.add_event(fmt, Kind::Func);
            p.events[e].data_field = field(fmt, "ip");
        }
        p.add_hooks(file, opts)?;
        Ok(p)
    }

    /// The `-H` hooks: each pairs a start event with an end event; trace-cmd
    /// prepends each to its list, so the last one given comes first.
    fn add_hooks(&mut self, file: &TraceFile, opts: &ProfileOptions) -> Result<()> {
        for h in opts.hooks.iter().rev() {
            let find = |sys: &Option<String>, name: &str| match sys {
                Some(s) => file.formats().by_name(s, name),
                None => {
                    let mut ids: Vec<u16> = file.formats().ids().collect();
                    ids.sort_unstable();
                    ids.into_iter()
                        .filter_map(|id| file.formats().by_id(id))
                        .find(|f| f.name == name)
                }
            };
            let start =
                find(&h.start_system, &h.start_event).map(|f| self.add_event(f, Kind::Other));
            let end = find(&h.end_system, &h.end_event).map(|f| self.add_event(f, Kind::Other));
            if let (Some(s), Some(e)) = (start, end) {
                self.mate(
                    file,
                    s,
                    h.pid.as_deref(),
                    &h.start_match,
                    e,
                    &h.end_match,
                    h.migrate,
                    h.global,
                )?;
            }
        }
        Ok(())
    }

    /// trace-cmd's add_event(): a new description of `fmt`'s event, which
    /// takes over from any earlier one.
    pub(super) fn add_event(&mut self, fmt: &EventFormat, kind: Kind) -> usize {
        let n = self.events.len();
        self.events.push(EventData {
            id: fmt.id,
            name: fmt.name.clone(),
            kind,
            handler: Handler::Pair,
            label: if kind == Kind::Func {
                Label::Func
            } else {
                Label::Hex
            },
            start: None,
            end: None,
            pid_field: None,
            start_match: None,
            end_match: None,
            data_field: None,
            migrate: false,
            global: false,
        });
        self.by_id.insert(fmt.id, n);
        n
    }

    /// Pairs start event `s` with end event `e`: `end_match` is the field
    /// of `s` that `e`'s `start_match` must equal.
    #[allow(clippy::too_many_arguments)]
    fn mate(
        &mut self,
        file: &TraceFile,
        s: usize,
        pid: Option<&str>,
        end_match: &str,
        e: usize,
        start_match: &str,
        migrate: bool,
        global: bool,
    ) -> Result<()> {
        let fmt = |i: usize| {
            file.formats()
                .by_id(self.events[i].id)
                .expect("events come from formats")
        };
        let (sf, ef) = (fmt(s), fmt(e));
        let pid_field = pid.map(|n| need_field(sf, n)).transpose()?;
        let end_match = need_field(sf, end_match)?;
        let start_match = need_field(ef, start_match)?;
        let ev = &mut self.events;
        ev[s].end = Some(e);
        ev[e].start = Some(s);
        if pid_field.is_some() {
            ev[s].pid_field = pid_field;
        }
        ev[s].end_match = Some(end_match);
        ev[e].start_match = Some(start_match);
        for i in [s, e] {
            ev[i].migrate = migrate;
            ev[i].global = global;
        }
        Ok(())
    }
}
