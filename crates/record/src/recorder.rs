//! The per-CPU reader threads of a recording ([`Recorder`]): one thread per
//! CPU splices whole pages from `trace_pipe_raw` into a temp file until the
//! recording is finished, then drains what is left, partial page included.
//! A trace.dat can be written from the pages so far at any time
//! ([`Recorder::write`]), and a [`LiveSnapshot`] brought up to them
//! ([`Recorder::refresh`]), which is how `tui --live` refreshes its view.

use crate::output::{buffer_data, write_dat, TempFiles};
use crate::snapshot::{LiveSnapshot, Refresh};
use anyhow::{Context, Result};
use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use ustack_tracedata::writer::{TraceMeta, WriteOptions, WriteSummary};
use ustack_tracefs::{CpuStats, DrainStats, Instance};

/// What one CPU's reader did, once the recording is finished.
#[derive(Debug, Clone)]
pub struct CpuResult {
    /// The CPU.
    pub cpu: u32,
    /// Bytes moved to the temp file in all.
    pub bytes: u64,
    /// What the final drain moved.
    pub flushed: DrainStats,
    /// CPU time (user+system) of the CPU's reader thread.
    pub cpu_time: Duration,
}

type ReaderThread = JoinHandle<ustack_tracefs::Result<(u64, DrainStats, Duration)>>;

/// The reader threads of one instance and their temp files
/// `<base>.cpuN`. Tracing itself is turned on by the caller (after
/// [`Recorder::start`], so no page is written before a reader waits for
/// it) and off by [`Recorder::finish`]. Dropping an unfinished recorder
/// finishes it, so no `trace_pipe_raw` stays open when a guard removes
/// the instance; the temp files are removed with it.
pub struct Recorder {
    inst: Instance,
    temps: TempFiles,
    bytes: Vec<Arc<AtomicU64>>,
    flush: Arc<AtomicBool>,
    /// Written once by `finish`: wakes every reader blocked in poll, so a
    /// stop does not wait for its timeout. Never read, so it stays readable.
    wake: (Arc<OwnedFd>, OwnedFd),
    threads: Vec<ReaderThread>,
}

impl Recorder {
    /// Creates `<base>.cpuN` for every CPU of `inst` and starts one reader
    /// thread per CPU.
    pub fn start(inst: &Instance, base: &Path) -> Result<Recorder> {
        let cpus = inst.cpus()?;
        let (temps, files) = TempFiles::create(base, &cpus)?;
        let (wake_r, wake_w) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).context("cannot create the wake-up pipe")?;
        let mut rec = Recorder {
            inst: inst.clone(),
            temps,
            bytes: Vec::new(),
            flush: Arc::new(AtomicBool::new(false)),
            wake: (Arc::new(wake_r), wake_w),
            threads: Vec::new(),
        };
        for (&cpu, file) in cpus.iter().zip(files) {
            let reader = inst.cpu_reader(cpu)?;
            let bytes = Arc::new(AtomicU64::new(0));
            let (flush, ctr, wake) = (rec.flush.clone(), bytes.clone(), rec.wake.0.clone());
            rec.bytes.push(bytes);
            rec.threads.push(
                std::thread::Builder::new()
                    .name(format!("record-cpu{cpu}"))
                    .spawn(move || reader_thread(reader, file, flush, ctr, &wake))
                    .context("cannot start a reader thread")?,
            );
        }
        Ok(rec)
    }

    /// The instance recorded.
    pub fn instance(&self) -> &Instance {
        &self.inst
    }

    /// The CPUs recorded, with their temp files.
    pub fn temp_files(&self) -> &[(u32, PathBuf)] {
        &self.temps.0
    }

    /// The CPUs recorded.
    pub fn cpus(&self) -> Vec<u32> {
        self.temps.0.iter().map(|(c, _)| *c).collect()
    }

    /// Bytes moved to each CPU's temp file so far, in the order of
    /// [`Recorder::cpus`].
    pub fn bytes(&self) -> Vec<u64> {
        self.bytes
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }

    /// Bytes moved so far, all CPUs.
    pub fn total_bytes(&self) -> u64 {
        self.bytes().iter().sum()
    }

    /// True when a reader thread ended before [`Recorder::finish`] (it
    /// failed; `finish` returns its error).
    pub fn reader_failed(&self) -> bool {
        self.threads.iter().any(|t| t.is_finished())
    }

    /// True once [`Recorder::finish`] ran.
    pub fn is_finished(&self) -> bool {
        self.threads.is_empty()
    }

    /// Turns tracing off, lets every reader drain its CPU and joins them.
    /// The first error of any reader (or of turning tracing off) is
    /// returned after all of them were joined; the pages they wrote stay
    /// in the temp files. A second call returns an empty list.
    pub fn finish(&mut self) -> Result<Vec<CpuResult>> {
        let mut first_err: Option<anyhow::Error> =
            self.inst.set_tracing_on(false).err().map(Into::into);
        self.flush.store(true, Ordering::SeqCst);
        // Cannot fail short of a closed pipe; the readers then still stop
        // at their poll timeout.
        let _ = nix::unistd::write(&self.wake.1, b"x");
        let mut results = Vec::new();
        for (t, (cpu, _)) in self.threads.drain(..).zip(&self.temps.0) {
            match t.join() {
                Ok(Ok((bytes, flushed, cpu_time))) => results.push(CpuResult {
                    cpu: *cpu,
                    bytes,
                    flushed,
                    cpu_time,
                }),
                Ok(Err(e)) => {
                    let path = self.temps.0.iter().find(|(c, _)| c == cpu).map(|(_, p)| p);
                    first_err.get_or_insert(anyhow::Error::from(e).context(format!(
                        "recording CPU{cpu} into {}",
                        path.map_or(String::new(), |p| p.display().to_string())
                    )));
                }
                Err(_) => {
                    first_err.get_or_insert(anyhow::anyhow!("a reader thread panicked"));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(results),
        }
    }

    /// Cuts each temp file back to whole pages: after a failed write (a
    /// full disk) the last page may be partly written, and a trace.dat
    /// holds whole pages only.
    pub fn trim_to_pages(&self) -> Result<()> {
        let page = self.inst.page_size() as u64;
        for (_, p) in &self.temps.0 {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .with_context(|| format!("cannot open {}", p.display()))?;
            let len = f.metadata()?.len();
            if len % page != 0 {
                f.set_len(len - len % page)
                    .with_context(|| format!("cannot truncate {}", p.display()))?;
            }
        }
        Ok(())
    }

    /// The temp files with each CPU's stats as the kernel reports them now.
    pub fn cpu_files(&self) -> Result<Vec<(u32, PathBuf, CpuStats)>> {
        self.temps
            .0
            .iter()
            .map(|(cpu, p)| Ok((*cpu, p.clone(), self.inst.cpu_stats(*cpu)?)))
            .collect()
    }

    /// Writes a trace.dat of the pages so far (all of them once finished)
    /// to `path`, with the CPU stats of now.
    pub fn write(
        &self,
        path: &Path,
        meta: &TraceMeta,
        opts: &WriteOptions,
    ) -> Result<WriteSummary> {
        write_dat(path, meta, &self.inst, &self.cpu_files()?, opts)
    }

    /// Brings `snap` up to the pages so far (all of them once finished),
    /// with `meta` and the CPU stats of now: only what is new since its
    /// last update is written (see [`LiveSnapshot::update`]).
    pub fn refresh(&self, snap: &mut LiveSnapshot, meta: &TraceMeta) -> Result<Refresh> {
        let buffer = buffer_data(&self.inst, &self.cpu_files()?)?;
        snap.update(meta, &[buffer])
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            let _ = self.finish();
        }
    }
}

/// The body of one CPU's reader thread: splices whole pages from `reader`
/// into `out` until `flush` is set, then drains what is left, partial page
/// included; `bytes` counts what moved. Returns the bytes, what the drain
/// moved and the thread's CPU time.
fn reader_thread(
    mut reader: ustack_tracefs::CpuReader,
    mut out: File,
    flush: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
    wake: &OwnedFd,
) -> ustack_tracefs::Result<(u64, DrainStats, Duration)> {
    let mut total = 0u64;
    while !flush.load(Ordering::SeqCst) {
        let ready = reader.wait_or_wake(Duration::from_millis(100), Some(wake.as_fd()))?;
        if flush.load(Ordering::SeqCst) {
            break;
        }
        let n = reader.splice_into(&out, 4 << 20)?;
        total += n;
        bytes.fetch_add(n, Ordering::Relaxed);
        if ready && n == 0 {
            // Readable but no complete page yet: do not spin (but stop at
            // once when woken).
            let mut fds = [PollFd::new(wake.as_fd(), PollFlags::POLLIN)];
            let _ = poll(&mut fds, PollTimeout::from(20u8));
        }
    }
    let flushed = reader.flush_into(&mut out)?;
    total += flushed.bytes;
    bytes.fetch_add(flushed.bytes, Ordering::Relaxed);
    Ok((total, flushed, crate::thread_cpu()))
}
