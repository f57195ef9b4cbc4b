//! Writing into a ring buffer from user space (`trace_marker`) and reading
//! pages back with read(2) (`trace_pipe_raw`, non-blocking): the small side
//! channel of a program that stamps its own actions into a private instance
//! and reads them back, where the record path's splice readers
//! ([`crate::CpuReader`]) would be more machinery than the data needs.

use crate::error::{Error, Op, Result};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// An open `trace_marker`: each [`Marker::write`] becomes one `ftrace:print`
/// event in the instance's ring buffer, in its clock. Dropping it closes the
/// file (an open file keeps the kernel from removing the instance).
#[derive(Debug)]
pub struct Marker {
    file: File,
    shown: String,
}

impl Marker {
    pub(crate) fn open(abs: &Path, shown: String) -> Result<Marker> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(abs)
            .map_err(|e| Error::io(Op::Open, &shown, e))?;
        Ok(Marker { file, shown })
    }

    /// Writes `text` as one event (one write(2)).
    pub fn write(&self, text: &str) -> Result<()> {
        (&self.file)
            .write_all(text.as_bytes())
            .map_err(|e| Error::io(Op::Write, &self.shown, e))
    }
}

/// A non-blocking reader of one CPU's `trace_pipe_raw` that copies each
/// ring-buffer page into a buffer of the caller's (partial pages included,
/// when the writer is quiet).
#[derive(Debug)]
pub struct PageReader {
    cpu: u32,
    file: File,
    shown: String,
}

impl PageReader {
    pub(crate) fn open(cpu: u32, abs: &Path, shown: String) -> Result<PageReader> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(abs)
            .map_err(|e| Error::io(Op::Open, &shown, e))?;
        Ok(PageReader { cpu, file, shown })
    }

    /// The CPU this reader reads.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// Reads the next page that is ready into `buf` (at least a page
    /// long) and returns its length; `None` when nothing is ready now.
    pub fn read_page(&mut self, buf: &mut [u8]) -> Result<Option<usize>> {
        loop {
            match self.file.read(buf) {
                Ok(0) => return Ok(None),
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(Error::io(Op::Read, &self.shown, e)),
            }
        }
    }
}
