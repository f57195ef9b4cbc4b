//! `report -w`: wakeup latencies as trace-cmd prints them. A successful
//! `sched_wakeup` (or `sched_wakeup_new`) of a pid starts a latency; the
//! next `sched_switch` to that pid ends it and appends
//! ` Latency: U.FFF usecs` to the switch's line. The summary gives the
//! average, maximum and minimum, and again for real-time tasks (switched in
//! with a priority below 100).

use std::collections::HashMap;
use std::io::{self, Write};

use ustack_tracedata::{EventFormat, Record, TraceFile};

/// Min, max and total of a set of latencies.
#[derive(Debug, Clone, Copy)]
struct Stats {
    total: u64,
    count: u64,
    max: (u64, u64),
    min: (u64, u64),
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            total: 0,
            count: 0,
            max: (0, 0),
            min: (u64::MAX, 0),
        }
    }
}

impl Stats {
    fn add(&mut self, lat: u64, at: u64) {
        if lat > self.max.0 {
            self.max = (lat, at);
        }
        if lat < self.min.0 {
            self.min = (lat, at);
        }
        self.total += lat;
        self.count += 1;
    }

    fn print(&self, out: &mut dyn Write) -> io::Result<()> {
        let avg = self.total / self.count;
        // trace-cmd rounds the fraction alone, without carrying.
        let ts = |t: u64| {
            format!(
                "{}.{:06}",
                t / 1_000_000_000,
                ((t + 500) % 1_000_000_000) / 1000
            )
        };
        write!(
            out,
            "\nAverage wakeup latency: {}.{:03} usecs\n",
            avg / 1000,
            avg % 1000
        )?;
        writeln!(
            out,
            "Maximum Latency: {}.{:03} usecs at timestamp: {}",
            self.max.0 / 1000,
            self.max.0 % 1000,
            ts(self.max.1)
        )?;
        write!(
            out,
            "Minimum Latency: {}.{:03} usecs at timestamp: {}\n\n",
            self.min.0 / 1000,
            self.min.0 % 1000,
            ts(self.min.1)
        )
    }
}

/// Wakeups waiting for their switch, and the latencies seen.
#[derive(Debug)]
pub struct Wakeups<'f> {
    wakeup: Option<&'f EventFormat>,
    wakeup_new: Option<&'f EventFormat>,
    switch: Option<&'f EventFormat>,
    pending: HashMap<u64, u64>,
    all: Stats,
    rt: Stats,
}

impl<'f> Wakeups<'f> {
    /// Looks the scheduler events up in `file`; without `sched_wakeup`
    /// and `sched_switch` (with their fields) nothing is measured.
    pub fn new(file: &'f TraceFile) -> Wakeups<'f> {
        let f = |n| file.formats().by_name("sched", n);
        let usable = f("sched_wakeup").is_some_and(|e| e.field("pid").is_some())
            && f("sched_switch")
                .is_some_and(|e| e.field("next_pid").is_some() && e.field("next_prio").is_some());
        Wakeups {
            wakeup: f("sched_wakeup").filter(|_| usable),
            wakeup_new: f("sched_wakeup_new").filter(|_| usable),
            switch: f("sched_switch").filter(|_| usable),
            pending: HashMap::new(),
            all: Stats::default(),
            rt: Stats::default(),
        }
    }

    /// Accounts one shown record at time `ts`, appending the latency to its
    /// line when it ends one.
    pub fn record(&mut self, r: &Record<'_>, ts: u64, out: &mut dyn Write) -> io::Result<()> {
        let id = r.common_type();
        let is = |f: Option<&EventFormat>| f.is_some_and(|f| Some(f.id) == id);
        if is(self.wakeup) || is(self.wakeup_new) {
            let f = if is(self.wakeup) {
                self.wakeup
            } else {
                self.wakeup_new
            };
            let f = f.expect("matched");
            if f.field("success").is_some() && r.u64_field(f, "success").ok() == Some(0) {
                return Ok(());
            }
            if let Ok(pid) = r.u64_field(f, "pid") {
                self.pending.insert(pid, ts);
            }
        } else if let (true, Some(f)) = (is(self.switch), self.switch) {
            let (Ok(prio), Ok(pid)) = (r.u64_field(f, "next_prio"), r.u64_field(f, "next_pid"))
            else {
                return Ok(());
            };
            let Some(start) = self.pending.remove(&pid) else {
                return Ok(());
            };
            let lat = ts.wrapping_sub(start);
            self.all.add(lat, ts);
            if prio <= 99 {
                self.rt.add(lat, ts);
            }
            write!(out, " Latency: {}.{:03} usecs", lat / 1000, lat % 1000)?;
        }
        Ok(())
    }

    /// The summary after the events (nothing when no latency was seen).
    pub fn summary(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.all.count == 0 {
            return Ok(());
        }
        self.all.print(out)?;
        if self.rt.count > 0 {
            writeln!(out, "RT task timings:")?;
            self.rt.print(out)?;
        }
        Ok(())
    }
}
