//! Parsing of `per_cpu/cpuN/stats`.

/// The counters of one CPU's ring buffer, from `per_cpu/cpuN/stats`.
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
    /// The file as read.
    pub raw: String,
}

impl CpuStats {
    /// Parses the text of a `stats` file. Unknown lines are ignored, and a
    /// value that is not a number leaves its field `None`.
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
}
