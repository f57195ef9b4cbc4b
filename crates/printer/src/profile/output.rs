//! Printing the `--profile` accounting as trace-cmd 3.1.6 prints it: the
//! global tasks (`-G`), the `--by-comm` groups, the tasks by pid; within
//! each, the events in trace-cmd's order, each with its call tree.

use std::collections::HashMap;
use std::io::{self, Write};

use super::chain::{self, Stack};
use super::state::{EventStats, Key, Kind, Label, Profile};
use super::{write_event_line, Names};

const SOFTIRQS: [&str; 10] = [
    "HI",
    "TIMER",
    "NET_TX",
    "NET_RX",
    "BLOCK",
    "BLOCK_IOPOLL",
    "TASKLET",
    "SCHED",
    "HRTIMER",
    "RCU",
];

/// trace-cmd's hash of a 32-bit value (its buckets order `--by-comm`'s
/// merge, which decides ties of maxima between tasks).
fn trace_hash(val: u32) -> u32 {
    let mut hash: u32 = 12_546_869;
    hash = hash.wrapping_add(val & 0xffff);
    let tmp = (val >> 16) ^ hash;
    hash = (hash << 16) ^ tmp;
    hash = hash.wrapping_add(hash >> 11);
    hash ^= hash << 3;
    hash = hash.wrapping_add(hash >> 5);
    hash ^= hash << 4;
    hash = hash.wrapping_add(hash >> 17);
    hash ^= hash << 25;
    hash.wrapping_add(hash >> 6)
}

impl Profile {
    /// Writes the profile: the global tasks (`-G`), the groups
    /// (`--by-comm`), then the tasks by pid.
    pub fn write(&mut self, out: &mut dyn Write, names: &dyn Names) -> io::Result<()> {
        let groups = if self.by_comm {
            self.merge_by_comm()
        } else {
            Vec::new()
        };
        let mut globals = vec![self.global_task];
        globals.extend(self.percpu.iter().copied());
        for g in globals {
            if !self.tasks[g].events.is_empty() {
                let task = &self.tasks[g];
                writeln!(out, "{}", task.comm.as_deref().unwrap_or(""))?;
                self.write_events(out, &task.events, names)?;
            }
        }
        for (comm, events) in &groups {
            write!(out, "\ngroup: {comm}\n")?;
            self.write_events(out, events, names)?;
        }
        let mut order: Vec<usize> = self.pids.values().copied().collect();
        order.sort_by_key(|&t| self.tasks[t].pid);
        for t in order {
            let task = &self.tasks[t];
            if task.grouped {
                continue;
            }
            let comm = task.comm.clone().unwrap_or_else(|| names.comm(task.pid));
            write!(out, "\ntask: {comm}-{}\n", task.pid)?;
            self.write_events(out, &task.events, names)?;
        }
        Ok(())
    }

    /// `--by-comm`: moves the events of every task with a name into the
    /// group of that name; the groups, by name.
    fn merge_by_comm(&mut self) -> Vec<(String, HashMap<Key, EventStats>)> {
        // trace-cmd merges in the order of its task hash: bucket, then the
        // newest task first (ties of maxima keep the first one merged).
        let mut order: Vec<usize> = self.pids.values().copied().collect();
        order.sort_by_key(|&t| {
            let pid = self.tasks[t].pid;
            (trace_hash(pid as u32) & 1023, std::cmp::Reverse(t))
        });
        let mut groups: Vec<(String, HashMap<Key, EventStats>)> = Vec::new();
        for t in order {
            let Some(comm) = self.tasks[t].comm.clone() else {
                continue;
            };
            self.tasks[t].grouped = true;
            let g = match groups.iter().position(|(c, _)| *c == comm) {
                Some(g) => g,
                None => {
                    groups.push((comm, HashMap::new()));
                    groups.len() - 1
                }
            };
            for ((ed, sv, val), stats) in std::mem::take(&mut self.tasks[t].events) {
                let key = match self.events[ed].kind {
                    Kind::Wakeup => (ed, 0, 0),
                    Kind::SchedSwitch => (ed, val, val),
                    _ => (ed, sv, val),
                };
                match groups[g].1.get_mut(&key) {
                    Some(e) => e.merge(stats),
                    None => {
                        groups[g].1.insert(key, stats);
                    }
                }
            }
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        groups
    }

    fn write_events(
        &self,
        out: &mut dyn Write,
        events: &HashMap<Key, EventStats>,
        names: &dyn Names,
    ) -> io::Result<()> {
        let mut list: Vec<(&Key, &EventStats)> = events.iter().collect();
        list.sort_by(|a, b| self.order(a, b));
        let func = |a: u64| names.function(a);
        for (&(ed, _, val), stats) in list {
            let name = self.label(ed, val, names);
            write_event_line(out, &name, stats)?;
            let stacks: Vec<&Stack> = stats.stacks.values().collect();
            chain::write_tree(out, &stacks, self.long, &func)?;
        }
        Ok(())
    }

    /// trace-cmd's order of events within a task (compare_events), ties
    /// (which trace-cmd leaves in hash order) by value.
    fn order(&self, a: &(&Key, &EventStats), b: &(&Key, &EventStats)) -> std::cmp::Ordering {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let (ea, eb) = (&self.events[a.0 .0], &self.events[b.0 .0]);
        let rank = |k: Kind| match k {
            Kind::SchedSwitch => 0,
            Kind::Wakeup => 1,
            _ => 2,
        };
        let by_rule = match (rank(ea.kind), rank(eb.kind)) {
            (x, y) if x != y => x.cmp(&y),
            (0, _) => a.0 .2.cmp(&b.0 .2),
            (1, _) => Equal,
            _ => ea.id.cmp(&eb.id).then(b.1.total.cmp(&a.1.total)),
        };
        match by_rule {
            Equal => (a.0 .2, a.0 .1).cmp(&(b.0 .2, b.0 .1)),
            o @ (Less | Greater) => o,
        }
    }

    fn label(&self, ed: usize, val: u64, names: &dyn Names) -> String {
        let e = &self.events[ed];
        match e.label {
            Label::SchedSwitch => {
                let mut s = format!("{}:", e.name);
                if val == 0 {
                    s.push('R');
                }
                let states = b"RSDTtXZxKWP";
                let mut v = val as i32;
                let mut i = 0;
                while v != 0 && i < states.len() - 1 {
                    if v & 1 != 0 {
                        s.push(states[i + 1] as char);
                    }
                    v >>= 1;
                    i += 1;
                }
                s
            }
            Label::Softirq => match SOFTIRQS.get(val as i32 as usize) {
                Some(n) if (val as i32) >= 0 => format!("{}:{n}", e.name),
                _ => format!("{}:{}", e.name, val as i32),
            },
            Label::Func => match names.function(val) {
                Some(f) => format!("func: {f}()"),
                None => format!("func: 0x{val:x}"),
            },
            Label::Syscall => format!("{}:{}", e.name, val as i32),
            Label::Hex => format!("{}:0x{val:x}", e.name),
        }
    }
}
