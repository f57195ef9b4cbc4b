//! The live progress display of `record` on a terminal.

use std::io::Write;
use std::time::Duration;
use ustack_tracefs::Instance;

fn human(b: u64) -> String {
    if b >= 10 << 20 {
        format!("{} MiB", b >> 20)
    } else if b >= 10 << 10 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Live progress on a terminal: per CPU the kernel's event count (events
/// read so far plus still buffered, from `stats`), bytes moved to the file,
/// and events lost (overrun + dropped, from `stats`).
#[derive(Default)]
pub(super) struct Progress {
    lines: usize,
}

impl Progress {
    pub(super) fn show(&mut self, inst: &Instance, cpus: &[u32], bytes: &[u64], elapsed: Duration) {
        let mut err = std::io::stderr().lock();
        if self.lines > 0 {
            let _ = write!(err, "\x1b[{}A", self.lines);
        }
        let _ = writeln!(
            err,
            "\x1b[2Krecording {:.1}s   (events = kernel count: read + buffered; lost = overrun + dropped)",
            elapsed.as_secs_f64()
        );
        for (i, &cpu) in cpus.iter().enumerate() {
            let (ev, lost) = match inst.cpu_stats(cpu) {
                Ok(s) => (s.written().to_string(), s.lost().to_string()),
                Err(_) => ("?".into(), "?".into()),
            };
            let _ = writeln!(
                err,
                "\x1b[2K  CPU{cpu:<3} events {ev:>10}   bytes {:>10}   lost {lost:>8}",
                human(bytes[i])
            );
        }
        self.lines = cpus.len() + 1;
    }
}
