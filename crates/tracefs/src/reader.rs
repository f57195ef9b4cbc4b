//! Per-CPU readers of `per_cpu/cpuN/trace_pipe_raw`.
//!
//! Whole ring-buffer pages are moved with splice(2): first from
//! `trace_pipe_raw` into a pipe (the kernel hands over its page references),
//! then from the pipe into the output file. The data never goes through a
//! user-space buffer on this path. Only the final flush, which must also
//! collect the partially filled last page that splice refuses to hand out,
//! uses read(2) for those last pages.

use crate::error::{Error, Op, Result};
use nix::errno::Errno;
use nix::fcntl::{fcntl, splice, FcntlArg, OFlag, SpliceFFlags};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

/// How many pages the pipe between trace_pipe_raw and the file should hold.
const PIPE_PAGES: usize = 64;
/// Upper bound of partial-page reads in one flush (protects against a
/// writer that never stops when tracing was left on).
const MAX_FLUSH_READS: u64 = 1 << 16;
/// Upper bound of the bytes spliced in one flush, for the same reason.
const MAX_FLUSH_SPLICE: u64 = 1 << 32;

/// What a flush moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainStats {
    /// Bytes written to the output.
    pub bytes: u64,
    /// Whole pages moved with splice.
    pub spliced_pages: u64,
    /// Pages (usually partially filled) moved with read.
    pub read_pages: u64,
}

/// A reader of one CPU's `trace_pipe_raw` (opened non-blocking).
#[derive(Debug)]
pub struct CpuReader {
    cpu: u32,
    file: File,
    shown: String,
    pipe_r: OwnedFd,
    pipe_w: OwnedFd,
    page_size: usize,
    chunk: usize,
}

impl CpuReader {
    /// Opens `abs` (shown as `shown` in errors) for CPU `cpu`; `page_size` is
    /// the ring-buffer sub-buffer size.
    pub fn open(cpu: u32, abs: &Path, shown: &str, page_size: usize) -> Result<CpuReader> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(abs)
            .map_err(|e| Error::io(Op::Open, shown, e))?;
        let (pipe_r, pipe_w) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| Error::errno(Op::Pipe, shown, e))?;
        // A bigger pipe lets one splice move many pages; failure is harmless.
        let _ = fcntl(
            &pipe_w,
            FcntlArg::F_SETPIPE_SZ((page_size * PIPE_PAGES) as libc::c_int),
        );
        let cap = fcntl(&pipe_w, FcntlArg::F_GETPIPE_SZ)
            .map_err(|e| Error::errno(Op::Pipe, shown, e))? as usize;
        let chunk = (cap / page_size).max(1) * page_size;
        Ok(CpuReader {
            cpu,
            file,
            shown: shown.to_string(),
            pipe_r,
            pipe_w,
            page_size,
            chunk,
        })
    }

    /// The CPU this reader reads.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// The ring-buffer page size.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Waits until the kernel says data is ready (per `buffer_percent`) or
    /// the timeout passes. Returns whether it was ready.
    pub fn wait(&self, timeout: Duration) -> Result<bool> {
        self.wait_or_wake(timeout, None)
    }

    /// Like [`CpuReader::wait`], but also returns as soon as `wake` is
    /// readable (a pipe the owner writes to when the reader must stop, so
    /// that a stop does not wait for the timeout). Returns whether the
    /// ring buffer was ready.
    pub fn wait_or_wake(&self, timeout: Duration, wake: Option<BorrowedFd<'_>>) -> Result<bool> {
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        let mut fds = vec![PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
        if let Some(w) = wake {
            fds.push(PollFd::new(w, PollFlags::POLLIN));
        }
        match poll(
            &mut fds,
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(n) => Ok(n > 0 && fds[0].revents().is_some_and(|r| !r.is_empty())),
            Err(Errno::EINTR) => Ok(false),
            Err(e) => Err(Error::errno(Op::Poll, &self.shown, e)),
        }
    }

    /// Moves every complete page that is ready now into `out` (at its current
    /// position) with splice. Returns the number of bytes moved; 0 means no
    /// complete page was ready. At most `max_bytes` (rounded up to a chunk)
    /// are moved per call so the caller stays responsive.
    pub fn splice_into(&mut self, out: &File, max_bytes: u64) -> Result<u64> {
        let mut total = 0u64;
        let flags = SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK;
        while total < max_bytes.max(1) {
            match splice(&self.file, None, &self.pipe_w, None, self.chunk, flags) {
                Ok(0) => break,
                Ok(n) => {
                    self.pipe_to(out, n)?;
                    total += n as u64;
                }
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::errno(Op::Splice, &self.shown, e)),
            }
        }
        Ok(total)
    }

    fn pipe_to(&mut self, out: &File, mut n: usize) -> Result<()> {
        while n > 0 {
            match splice(
                &self.pipe_r,
                None,
                out,
                None,
                n,
                SpliceFFlags::SPLICE_F_MOVE,
            ) {
                Ok(0) => {
                    return Err(Error::io(
                        Op::Splice,
                        &self.shown,
                        std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "pipe emptied early",
                        ),
                    ))
                }
                Ok(m) => n -= m,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::errno(Op::SpliceTo, "the output file", e)),
            }
        }
        Ok(())
    }

    /// Drains everything that is left: complete pages with splice, then the
    /// partially filled pages with read(2), until the kernel reports the
    /// buffer empty. Call after `tracing_on` was set to 0 so the buffer does
    /// not keep filling. Each page is written whole (`page_size` bytes).
    pub fn flush_into(&mut self, out: &mut File) -> Result<DrainStats> {
        let mut st = DrainStats::default();
        while st.bytes < MAX_FLUSH_SPLICE {
            let n = self.splice_into(out, u64::MAX)?;
            if n == 0 {
                break;
            }
            st.bytes += n;
            st.spliced_pages += n / self.page_size as u64;
        }
        let mut buf = vec![0u8; self.page_size];
        while st.read_pages < MAX_FLUSH_READS {
            match nix::unistd::read(&self.file, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    // A page is always written whole so the file stays page aligned.
                    buf[n..].fill(0);
                    out.write_all(&buf)
                        .map_err(|e| Error::io(Op::Write, "the output file", e))?;
                    st.bytes += buf.len() as u64;
                    st.read_pages += 1;
                }
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::errno(Op::Read, &self.shown, e)),
            }
        }
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;
    use std::time::Instant;

    /// A FIFO stands in for `trace_pipe_raw`: with no writer it is never
    /// ready, so only the wake pipe (or the timeout) can end the wait.
    #[test]
    fn wait_or_wake_returns_at_once_when_woken_and_says_whether_data_is_ready() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("trace_pipe_raw");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let r = CpuReader::open(0, &fifo, "fifo", 4096).unwrap();
        let (wake_r, wake_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();

        // Nothing ready, not woken: the timeout.
        let t0 = Instant::now();
        assert!(!r
            .wait_or_wake(Duration::from_millis(50), Some(wake_r.as_fd()))
            .unwrap());
        assert!(t0.elapsed() >= Duration::from_millis(50));

        // Woken: at once, and not "ready".
        nix::unistd::write(&wake_w, b"x").unwrap();
        let t0 = Instant::now();
        assert!(!r
            .wait_or_wake(Duration::from_secs(10), Some(wake_r.as_fd()))
            .unwrap());
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());

        // Data in the buffer: ready, woken or not.
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        w.write_all(b"page").unwrap();
        assert!(r
            .wait_or_wake(Duration::from_secs(10), Some(wake_r.as_fd()))
            .unwrap());
        assert!(r.wait(Duration::from_secs(10)).unwrap());
    }
}
