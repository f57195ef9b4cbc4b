//! The per-CPU reader threads of `record` (splice from `trace_pipe_raw`
//! into the temp files, flush on stop) and the live progress display.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use ustack_tracefs::Instance;

/// What one reader thread reports when it is done.
pub(crate) struct ReaderResult {
    pub bytes: u64,
    pub flushed: ustack_tracefs::DrainStats,
}

/// The reader threads. Dropping them (on an error path) turns tracing off
/// and joins them, so no trace_pipe_raw stays open when the guard removes
/// an instance.
pub(super) struct Readers {
    pub inst: Instance,
    pub flush: Arc<AtomicBool>,
    pub threads: Vec<std::thread::JoinHandle<ustack_tracefs::Result<ReaderResult>>>,
}

impl Readers {
    /// Turns tracing off, lets every thread drain its CPU and joins them.
    pub(super) fn finish(&mut self) -> (Vec<ReaderResult>, Option<anyhow::Error>) {
        let mut first_err: Option<anyhow::Error> =
            self.inst.set_tracing_on(false).err().map(Into::into);
        self.flush.store(true, Ordering::SeqCst);
        let mut results = Vec::new();
        for t in self.threads.drain(..) {
            match t.join() {
                Ok(Ok(r)) => results.push(r),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e.into());
                }
                Err(_) => {
                    first_err.get_or_insert(anyhow::anyhow!("a reader thread panicked"));
                }
            }
        }
        (results, first_err)
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            let _ = self.finish();
        }
    }
}

/// The body of one CPU's reader thread (`record` and `tui --live`):
/// splices whole pages from `reader` into `out` until `flush` is set, then
/// drains what is left, partial page included; `bytes` counts what moved.
pub(crate) fn reader_thread(
    mut reader: ustack_tracefs::CpuReader,
    mut out: File,
    flush: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
) -> ustack_tracefs::Result<ReaderResult> {
    let mut total = 0u64;
    while !flush.load(Ordering::SeqCst) {
        let ready = reader.wait(Duration::from_millis(100))?;
        let n = reader.splice_into(&out, 4 << 20)?;
        total += n;
        bytes.fetch_add(n, Ordering::Relaxed);
        if ready && n == 0 {
            // Readable but no complete page yet: do not spin.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let flushed = reader.flush_into(&mut out)?;
    total += flushed.bytes;
    bytes.fetch_add(flushed.bytes, Ordering::Relaxed);
    Ok(ReaderResult {
        bytes: total,
        flushed,
    })
}

pub(super) fn human(b: u64) -> String {
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
pub(super) struct Progress {
    pub lines: usize,
}

impl Progress {
    pub(super) fn show(
        &mut self,
        inst: &Instance,
        cpus: &[u32],
        bytes: &[Arc<AtomicU64>],
        elapsed: Duration,
    ) {
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
                human(bytes[i].load(Ordering::Relaxed))
            );
        }
        self.lines = cpus.len() + 1;
    }
}
