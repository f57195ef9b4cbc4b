//! Where `record`'s time goes, phase by phase: printed at the end when the
//! environment variable `USTACK_RECORD_PROFILE` is set (used by
//! bench/record.sh; see Documentation/benchmarks.md). Off, it costs one
//! environment lookup.

use std::time::{Duration, Instant};
use ustack_record::{process_cpu, CpuResult, TraceStats};

/// Wall and process CPU time at the end of each phase.
pub(super) struct Phases {
    on: bool,
    last: (Instant, Duration),
    done: Vec<(&'static str, Duration, Duration)>,
}

impl Phases {
    /// Starts the clock (when profiling is asked for).
    pub(super) fn start() -> Phases {
        let on = std::env::var_os("USTACK_RECORD_PROFILE").is_some_and(|v| !v.is_empty());
        Phases {
            on,
            last: (
                Instant::now(),
                if on { process_cpu() } else { Duration::ZERO },
            ),
            done: Vec::new(),
        }
    }

    /// Ends phase `name`.
    pub(super) fn end(&mut self, name: &'static str) {
        if !self.on {
            return;
        }
        let now = (Instant::now(), process_cpu());
        self.done
            .push((name, now.0 - self.last.0, now.1.saturating_sub(self.last.1)));
        self.last = now;
    }

    /// Prints the phases, then the CPU of the reader and ptrace threads
    /// (included in the phases' process CPU).
    pub(super) fn print(&self, readers: &[CpuResult], ptrace: Option<&TraceStats>) {
        if !self.on {
            return;
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        for (name, wall, cpu) in &self.done {
            eprintln!(
                "tracer-cli: profile: {name:<10} wall {:8.1} ms  process CPU {:7.1} ms",
                ms(*wall),
                ms(*cpu)
            );
        }
        for r in readers {
            eprintln!(
                "tracer-cli: profile: reader CPU{} CPU {:.1} ms",
                r.cpu,
                ms(r.cpu_time)
            );
        }
        if let Some(t) = ptrace {
            eprintln!(
                "tracer-cli: profile: ptrace thread CPU {:.1} ms",
                ms(t.thread_cpu)
            );
        }
    }
}
