//! The CPU data of a compressed file, decompressed chunk by chunk as the
//! reader reaches it.
//!
//! trace-cmd stores each CPU's pages as a list of compressed chunks (a few
//! pages each). Decompressing them all at open made the first line of a
//! zstd `report` wait for the whole file; here a chunk is decompressed when
//! a page in it is first asked for. The buffer for the whole CPU is
//! allocated at open but only becomes resident as chunks are written into
//! it, and the decoded prefix is never written again, so slices of it stay
//! valid for the life of the file.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{ChunkDecoder, Codec, Cur, MAX_UNCOMPRESSED};
use crate::error::{Error, ErrorKind, Result};
use crate::limits::{self, Budget};

/// One compressed chunk.
#[derive(Debug)]
struct Chunk {
    /// File offset of its header (for errors).
    at: u64,
    /// The compressed frame, as a range of the file.
    frame: Range<usize>,
    /// Its uncompressed size.
    size: usize,
}

/// How far decoding got.
struct Progress {
    next_chunk: usize,
    decoder: Option<ChunkDecoder>,
    /// The chunk that failed and why; decoding stops there.
    failed: Option<(usize, String)>,
}

/// A CPU's compressed data, decompressed on demand.
///
/// # Invariants
/// `buf` is the allocation of a `Box<[MaybeUninit<u8>]>` of `total` bytes,
/// owned by this value. Its first `done` bytes are initialized and never
/// written again; bytes at and after `done` are only written, by the
/// holder of the `progress` lock, before `done` grows over them.
pub(super) struct LazyData {
    codec: Codec,
    chunks: Vec<Chunk>,
    total: usize,
    buf: *mut MaybeUninit<u8>,
    done: AtomicUsize,
    progress: Mutex<Progress>,
}

// SAFETY: the buffer is owned (type invariant); shared access only reads
// the decoded prefix, and the writes past it are serialized by the mutex
// and published through `done` with release/acquire ordering.
unsafe impl Send for LazyData {}
// SAFETY: as for Send.
unsafe impl Sync for LazyData {}

impl std::fmt::Debug for LazyData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "<{} chunks, {} of {} bytes decoded>",
            self.chunks.len(),
            self.done.load(Ordering::Acquire),
            self.total
        )
    }
}

impl LazyData {
    /// Reads the chunk table at `off` in `file` (`u32 count`, then per
    /// chunk `u32 compressed size, u32 uncompressed size, frame`; `size`
    /// leaves out the count), checks the declared sizes against the frames
    /// and `budget`, and allocates the buffer, without decompressing.
    pub(super) fn new(
        codec: Codec,
        file: &[u8],
        off: u64,
        size: u64,
        budget: &Budget,
    ) -> Result<LazyData> {
        let r = super::mapped_range(file, off, size.saturating_add(4))?;
        let mut c = Cur::new(&file[r.clone()], off, "compressed data");
        let count = c.u32()?;
        let mut chunks = Vec::new();
        let mut total = 0usize;
        for i in 0..count {
            let at = c.base + c.pos as u64;
            let ctx = |e: Error| e.context(format!("chunk {i}")).at(at);
            let csize = c.u32()? as usize;
            let usize_ = c.u32()? as usize;
            let start = r.start + c.pos;
            c.take(csize)?;
            if usize_ > MAX_UNCOMPRESSED {
                return Err(ctx(Error::corrupt(format!(
                    "uncompressed size {usize_} is over the {MAX_UNCOMPRESSED} byte limit"
                ))));
            }
            limits::check_ratio(csize, usize_).map_err(ctx)?;
            total += usize_;
            if total > MAX_UNCOMPRESSED * 4 {
                return Err(Error::corrupt("decompressed data too large").at(at));
            }
            chunks.push(Chunk {
                at,
                frame: start..start + csize,
                size: usize_,
            });
        }
        budget.take(total).map_err(|e| e.at(off))?;
        let mut v: Vec<MaybeUninit<u8>> = Vec::new();
        v.try_reserve_exact(total)
            .map_err(|_| Error::corrupt(format!("cannot allocate {total} bytes")).at(off))?;
        // SAFETY: MaybeUninit needs no initialization; the capacity is
        // exactly `total` (try_reserve_exact on an empty Vec).
        unsafe { v.set_len(total) };
        let buf = Box::into_raw(v.into_boxed_slice()) as *mut MaybeUninit<u8>;
        Ok(LazyData {
            codec,
            chunks,
            total,
            buf,
            done: AtomicUsize::new(0),
            progress: Mutex::new(Progress {
                next_chunk: 0,
                decoder: None,
                failed: None,
            }),
        })
    }

    /// Size of the whole data once decompressed.
    pub(super) fn len(&self) -> usize {
        self.total
    }

    /// The decoded prefix.
    fn prefix(&self) -> &[u8] {
        let done = self.done.load(Ordering::Acquire);
        // SAFETY: the first `done` bytes are initialized and never written
        // again (type invariant).
        unsafe { std::slice::from_raw_parts(self.buf as *const u8, done) }
    }

    /// The decoded data, at least its first `end` bytes (or all of it),
    /// decompressing the chunks up to there. `file` is the file the chunk
    /// table was read from.
    pub(super) fn upto(&self, file: &[u8], end: usize) -> Result<&[u8]> {
        let end = end.min(self.total);
        if self.done.load(Ordering::Acquire) >= end {
            return Ok(self.prefix());
        }
        let mut p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        while self.done.load(Ordering::Acquire) < end {
            if let Some((i, why)) = &p.failed {
                return Err(Error::decompress(why.clone())
                    .context(format!("chunk {i}"))
                    .at(self.chunks[*i].at));
            }
            let i = p.next_chunk;
            let Some(chunk) = self.chunks.get(i) else {
                break;
            };
            if p.decoder.is_none() {
                p.decoder = Some(ChunkDecoder::new(self.codec)?);
            }
            let done = self.done.load(Ordering::Acquire);
            // SAFETY: [done, done + size) lies within the buffer (the sizes
            // add up to `total`) and past the decoded prefix, so nothing
            // borrows it; the lock makes this the only writer. Zeroing first
            // makes it initialized before a `&mut [u8]` is made of it.
            let out = unsafe {
                let dst = self.buf.add(done) as *mut u8;
                dst.write_bytes(0, chunk.size);
                std::slice::from_raw_parts_mut(dst, chunk.size)
            };
            let frame = file.get(chunk.frame.clone()).unwrap_or_default();
            let dec = p.decoder.as_mut().expect("set above");
            if let Err(e) = dec.fill(frame, out) {
                let why = match e.kind {
                    ErrorKind::Decompress(m) => m,
                    _ => e.to_string(),
                };
                p.failed = Some((i, why));
                continue;
            }
            p.next_chunk = i + 1;
            self.done.store(done + chunk.size, Ordering::Release);
        }
        Ok(self.prefix())
    }

    /// All the data, decompressed; on a bad chunk, the data before it.
    pub(super) fn all(&self, file: &[u8]) -> &[u8] {
        match self.upto(file, self.total) {
            Ok(d) => d,
            Err(_) => self.prefix(),
        }
    }
}

impl Drop for LazyData {
    fn drop(&mut self) {
        // SAFETY: `buf` came from Box::into_raw of a boxed slice of `total`
        // elements (type invariant) and is freed once.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.buf, self.total,
            )))
        };
    }
}
