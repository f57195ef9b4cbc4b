//! [`CpuCursor`]: one CPU's events read through a small window of its
//! data, for readers that handle each event before asking for the next.
//!
//! [`crate::TraceFile::records`] hands out records that borrow the file, so
//! the decompressed data of a zstd/zlib file must stay in memory for as
//! long as the file is open. A cursor lends its current record instead:
//! it decompresses a chunk when it reaches it, into a buffer it owns, and
//! drops it (reusing the buffer) when it moves past it, so reading a
//! compressed CPU holds about one chunk of it. Uncompressed data is read
//! from the mapped file, whose pages are given back behind the cursor.

use std::ops::Range;

use super::codec::ChunkDecoder;
use super::lazy::LazyData;
use super::records::{CpuStream, FramePages, Pages, RELEASE_STEP};
use crate::error::{Error, Result};
use crate::header::HeaderPage;
use crate::page::Missed;
use crate::record::Record;

/// The decompressed chunks of a CPU that cover the page being read.
pub(super) struct Window<'a> {
    lazy: &'a LazyData,
    file: &'a [u8],
    decoder: Option<ChunkDecoder>,
    /// Decompressed bytes `base..base + buf.len()` of the CPU's data.
    buf: Vec<u8>,
    base: usize,
    next_chunk: usize,
    /// The pages of the decoded frames, when `file` is a mapping.
    frames: Option<FramePages<'a>>,
}

impl<'a> Window<'a> {
    /// A window on `lazy`, whose chunk table was read from `file`; with
    /// `map`, the mapping `file` is, the pages of decoded frames are given
    /// back as the window moves on.
    pub(super) fn new(lazy: &'a LazyData, file: &'a [u8], map: Option<&'a memmap2::Mmap>) -> Self {
        Window {
            lazy,
            file,
            decoder: None,
            buf: Vec::new(),
            base: 0,
            next_chunk: 0,
            frames: map.map(FramePages::new),
        }
    }
}

impl Pages for Window<'_> {
    fn len(&self) -> usize {
        self.lazy.len()
    }

    fn load(&mut self, r: Range<usize>) -> Result<()> {
        if r.start < self.base {
            return Err(Error::corrupt("page read out of order"));
        }
        if r.end <= self.base + self.buf.len() {
            return Ok(());
        }
        // Keep only what the page still needs (a page may start in the
        // chunk before), then decompress chunks until it is covered.
        let keep_from = (r.start - self.base).min(self.buf.len());
        self.buf.drain(..keep_from);
        self.base += keep_from;
        while self.base + self.buf.len() < r.end {
            let i = self.next_chunk;
            let (frame, size, at) = self
                .lazy
                .chunk(i, self.file)
                .ok_or_else(|| Error::corrupt("compressed data ends early"))?;
            let dec = match &mut self.decoder {
                Some(d) => d,
                None => self.decoder.insert(ChunkDecoder::new(self.lazy.codec())?),
            };
            let old = self.buf.len();
            self.buf.resize(old + size, 0);
            dec.fill(frame, &mut self.buf[old..])
                .map_err(|e| e.context(format!("chunk {i}")).at(at))?;
            self.next_chunk = i + 1;
            if let Some(frames) = &mut self.frames {
                let end = frame.as_ptr() as usize + frame.len() - self.file.as_ptr() as usize;
                frames.release(0, end, RELEASE_STEP);
            }
        }
        Ok(())
    }

    fn bytes(&self, r: Range<usize>) -> &[u8] {
        let (Some(s), Some(e)) = (r.start.checked_sub(self.base), r.end.checked_sub(self.base))
        else {
            return &[];
        };
        self.buf.get(s..e).unwrap_or_default()
    }

    fn loaded_from(&self, from: usize) -> &[u8] {
        from.checked_sub(self.base)
            .and_then(|s| self.buf.get(s..))
            .unwrap_or_default()
    }
}

/// Where a cursor reads its CPU's data from.
pub(super) enum CursorData<'a> {
    /// Uncompressed data in the mapped file.
    Slice(&'a [u8]),
    /// Compressed data, one chunk at a time.
    Window(Window<'a>),
}

impl Pages for CursorData<'_> {
    fn len(&self) -> usize {
        match self {
            CursorData::Slice(d) => d.len(),
            CursorData::Window(w) => w.len(),
        }
    }

    fn load(&mut self, r: Range<usize>) -> Result<()> {
        match self {
            CursorData::Slice(d) if r.end <= d.len() => Ok(()),
            CursorData::Slice(_) => Err(Error::corrupt("page past the end of the data")),
            CursorData::Window(w) => w.load(r),
        }
    }

    fn bytes(&self, r: Range<usize>) -> &[u8] {
        match self {
            CursorData::Slice(d) => d.get(r).unwrap_or_default(),
            CursorData::Window(w) => w.bytes(r),
        }
    }

    fn loaded_from(&self, from: usize) -> &[u8] {
        match self {
            CursorData::Slice(d) => d.get(from..).unwrap_or_default(),
            CursorData::Window(w) => w.loaded_from(from),
        }
    }
}

/// The events of one CPU of a buffer, in order; see
/// [`crate::TraceFile::cpu_cursor`].
///
/// ```no_run
/// # fn f(file: &ustack_tracedata::TraceFile) -> ustack_tracedata::Result<()> {
/// let buf = &file.buffers()[0];
/// let mut c = file.cpu_cursor(buf, buf.cpus[0].cpu).expect("cpu");
/// while c.advance()? {
///     let rec = c.record().expect("advanced");
///     println!("{} {}", rec.ts, rec.data.len());
/// }
/// # Ok(()) }
/// ```
pub struct CpuCursor<'a> {
    stream: CpuStream<'a, CursorData<'a>>,
    header: HeaderPage,
    /// The current event: (ts, payload as a range of the CPU's data).
    current: Option<(u64, Range<usize>)>,
    lost: Option<Option<u64>>,
}

impl<'a> CpuCursor<'a> {
    pub(super) fn new(stream: CpuStream<'a, CursorData<'a>>, header: HeaderPage) -> Self {
        CpuCursor {
            stream,
            header,
            current: None,
            lost: None,
        }
    }

    /// Reports lost events exactly when `trace-cmd report` does (see
    /// [`super::Records::trace_cmd_compat`]).
    pub fn trace_cmd_compat(mut self) -> Self {
        self.stream.compat = true;
        self
    }

    /// Moves to the next event: `Ok(false)` at the end of the CPU's data.
    /// After an error the cursor is at its end.
    pub fn advance(&mut self) -> Result<bool> {
        self.current = None;
        self.lost = None;
        self.stream.fill(&self.header)?;
        let Some(cur) = self.stream.peeked.take() else {
            return Ok(false);
        };
        if let Some(m) = self.stream.lost.take() {
            if !self.stream.compat || self.stream.first_on_page {
                self.lost = Some(match m {
                    Missed::Count(n) => Some(n),
                    _ => None,
                });
            }
        }
        self.current = Some(cur);
        Ok(true)
    }

    /// The current event (`None` before the first [`CpuCursor::advance`]
    /// and at the end).
    pub fn record(&self) -> Option<Record<'_>> {
        let (ts, r) = self.current.clone()?;
        let data = self.stream.data.bytes(r.clone());
        let extent = self.stream.data.loaded_from(r.start);
        Some(Record {
            cpu: self.stream.cpu,
            ts,
            data,
            extent: if extent.len() >= data.len() {
                extent
            } else {
                data
            },
        })
    }

    /// Events lost on this CPU just before the current event: `Some(None)`
    /// if the kernel did not store how many (what [`super::Item::Lost`]
    /// says in the merged stream).
    pub fn lost(&self) -> Option<Option<u64>> {
        self.lost
    }
}
