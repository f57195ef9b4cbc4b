//! The kernel's per-CPU ring-buffer counters (`per_cpu/cpuN/stats`).
//!
//! One type for the text wherever it comes from: read live from tracefs
//! (the tracefs crate only reads the file) or stored in a trace.dat CPUSTAT
//! option (where trace-cmd prefixes it with `CPU: N` and announces each
//! instance with a `Buffer: NAME` option).

/// The counters of one CPU's ring buffer.
///
/// Missing lines (older kernels) leave the field `None`; the raw text is kept
/// as well because trace.dat stores it verbatim (CPUSTAT option).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// The CPU number.
    pub cpu: u32,
    /// Events currently in the buffer (not yet read).
    pub entries: Option<u64>,
    /// Events lost because the writer overwrote unread pages (overwrite mode).
    pub overrun: Option<u64>,
    /// Events lost to commit overruns (nested writers).
    pub commit_overrun: Option<u64>,
    /// Bytes currently in the buffer.
    pub bytes: Option<u64>,
    /// Events dropped because the buffer was full (non-overwrite mode).
    pub dropped_events: Option<u64>,
    /// Events consumed by readers since the buffer was reset.
    pub read_events: Option<u64>,
    /// `oldest event ts` as printed by the kernel (seconds.micros or counter).
    pub oldest_event_ts: Option<String>,
    /// `now ts` as printed by the kernel.
    pub now_ts: Option<String>,
    /// The text as read.
    pub raw: String,
}

impl CpuStats {
    /// Parses the text of a `stats` file. Unknown lines (such as the
    /// `CPU: N` line of a CPUSTAT option) are ignored, and a value that is
    /// not a number leaves its field `None`.
    pub fn parse(cpu: u32, text: &str) -> CpuStats {
        let mut s = CpuStats {
            cpu,
            raw: text.to_string(),
            ..CpuStats::default()
        };
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            let num = value.parse::<u64>().ok();
            match key.trim() {
                "entries" => s.entries = num,
                "overrun" => s.overrun = num,
                "commit overrun" => s.commit_overrun = num,
                "bytes" => s.bytes = num,
                "dropped events" => s.dropped_events = num,
                "read events" => s.read_events = num,
                "oldest event ts" => s.oldest_event_ts = Some(value.to_string()),
                "now ts" => s.now_ts = Some(value.to_string()),
                _ => {}
            }
        }
        s
    }

    /// Events the kernel lost on this CPU: overrun + commit overrun + dropped.
    pub fn lost(&self) -> u64 {
        self.overrun.unwrap_or(0)
            + self.commit_overrun.unwrap_or(0)
            + self.dropped_events.unwrap_or(0)
    }

    /// Events written into the buffer and not lost: read so far plus still
    /// in the buffer. This is the kernel's own count, not a count of what the
    /// recorder has decoded.
    pub fn written(&self) -> u64 {
        self.read_events.unwrap_or(0) + self.entries.unwrap_or(0)
    }
}

/// The CPU stats of one buffer of a trace.dat file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferStats {
    /// Buffer name, empty for the top buffer.
    pub name: String,
    /// Per CPU, in file order.
    pub cpus: Vec<CpuStats>,
}

/// Groups CPUSTAT option texts by buffer, as trace-cmd writes them: the top
/// buffer's CPUs first, then a `"\nBuffer: NAME\n\n"` marker before the CPUs
/// of each instance. Each CPU text starts with `CPU: N`; one without it
/// takes the next CPU number of its buffer. Buffers without CPUs are left out.
pub fn group_by_buffer<I: IntoIterator<Item = String>>(texts: I) -> Vec<BufferStats> {
    let mut out = vec![BufferStats {
        name: String::new(),
        cpus: Vec::new(),
    }];
    for t in texts {
        let trimmed = t.trim_start_matches('\n');
        if let Some(rest) = trimmed.strip_prefix("Buffer: ") {
            out.push(BufferStats {
                name: rest.lines().next().unwrap_or("").trim().to_string(),
                cpus: Vec::new(),
            });
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        let cpu = trimmed
            .strip_prefix("CPU: ")
            .and_then(|r| r.lines().next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(cur.cpus.len() as u32);
        cur.cpus.push(CpuStats::parse(cpu, &t));
    }
    out.retain(|b| !b.cpus.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "entries: 12\noverrun: 3400\ncommit overrun: 1\nbytes: 4096\n\
oldest event ts:  2087.201519\nnow ts:  2111.452104\ndropped events: 7\nread events: 99\n";

    #[test]
    fn parses_all_counters() {
        let s = CpuStats::parse(1, TEXT);
        assert_eq!(s.cpu, 1);
        assert_eq!(s.entries, Some(12));
        assert_eq!(s.overrun, Some(3400));
        assert_eq!(s.commit_overrun, Some(1));
        assert_eq!(s.bytes, Some(4096));
        assert_eq!(s.dropped_events, Some(7));
        assert_eq!(s.read_events, Some(99));
        assert_eq!(s.oldest_event_ts.as_deref(), Some("2087.201519"));
        assert_eq!(s.now_ts.as_deref(), Some("2111.452104"));
        assert_eq!(s.lost(), 3408);
        assert_eq!(s.written(), 111);
        assert_eq!(s.raw, TEXT);
    }

    #[test]
    fn garbage_is_not_a_panic() {
        let s = CpuStats::parse(0, "entries: lots\n\u{0}\nno colon here\noverrun:\n");
        assert_eq!(s.entries, None);
        assert_eq!(s.overrun, None);
        assert_eq!(s.lost(), 0);
    }

    #[test]
    fn groups_cpustat_options_by_buffer() {
        let texts = [
            "CPU: 0\noverrun: 5\n",
            "CPU: 3\ndropped events: 2\n",
            "\nBuffer: inst\n\n",
            "overrun: 9\n",
            "\nBuffer: empty\n\n",
        ];
        let g = group_by_buffer(texts.iter().map(|t| t.to_string()));
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].name, "");
        let cpus: Vec<(u32, Option<u64>, Option<u64>)> = g[0]
            .cpus
            .iter()
            .map(|c| (c.cpu, c.overrun, c.dropped_events))
            .collect();
        assert_eq!(cpus, [(0, Some(5), None), (3, None, Some(2))]);
        assert_eq!((g[1].name.as_str(), g[1].cpus[0].cpu), ("inst", 0));
        assert_eq!(g[1].cpus[0].overrun, Some(9));
        assert_eq!(g[1].cpus[0].raw, "overrun: 9\n");
    }
}
