//! The CPU data of a compressed file, decompressed chunk by chunk as the
//! reader reaches it.
//!
//! trace-cmd stores each CPU's pages as a list of compressed chunks (a few
//! pages each). Decompressing them all at open made the first line of a
//! zstd `report` wait for the whole file; here a chunk is decompressed when
//! a page in it is first asked for. The decoded prefix is never written
//! again, so slices of it stay valid for the life of the file.
//!
//! Readers that hand out slices (the merged [`super::Records`], and
//! [`crate::TraceFile::cpu_data`] for the stitched views, which come back
//! to records at random) need every decoded byte to stay where it is. The
//! buffer is therefore an unlinked temporary file mapped shared, as
//! libtracecmd's "zfile" mode decompresses into a temporary file: pages
//! written or read are given back to the kernel behind the reader
//! ([`LazyData::release`]) and read again from the page cache when needed,
//! so the process keeps about what it is reading resident, as with a
//! mapped uncompressed file, and the kernel can write the rest out under
//! memory pressure. Where no temporary file can be made, the buffer is
//! anonymous memory and stays resident. [`super::CpuCursor`] does not use
//! this buffer at all.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::codec::{ChunkDecoder, Codec, MAX_UNCOMPRESSED};
use super::records::MAPPED_AROUND;
use super::sections::Cur;
use crate::error::{Error, ErrorKind, Result};
use crate::limits::{self, Budget};

/// Decoded bytes between two releases of the pages just written.
const WRITE_BACK_STEP: usize = 1 << 20;

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
    /// Bytes of the decoded prefix whose pages were given back after they
    /// were written.
    written_back: usize,
}

/// The memory of the decoded data.
///
/// # Invariants
/// `ptr` is the start of `len` writable bytes owned by this value: the
/// shared mapping `map` of a temporary file nobody else has open, or the
/// allocation of a `Box<[MaybeUninit<u8>]>` of `len` bytes when `map` is
/// `None`.
struct Backing {
    ptr: *mut MaybeUninit<u8>,
    len: usize,
    map: Option<memmap2::MmapMut>,
}

impl Backing {
    /// A mapped unlinked temporary file of `len` bytes, or else `len`
    /// bytes of anonymous memory.
    fn new(len: usize) -> Result<Backing> {
        if len > 0 {
            if let Some(mut map) = Self::temp_map(len) {
                let ptr = map.as_mut_ptr().cast::<MaybeUninit<u8>>();
                return Ok(Backing {
                    ptr,
                    len,
                    map: Some(map),
                });
            }
        }
        let mut v: Vec<MaybeUninit<u8>> = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| Error::corrupt(format!("cannot allocate {len} bytes")))?;
        // SAFETY: MaybeUninit needs no initialization; the capacity is
        // exactly `len` (try_reserve_exact on an empty Vec).
        unsafe { v.set_len(len) };
        let ptr = Box::into_raw(v.into_boxed_slice()).cast::<MaybeUninit<u8>>();
        Ok(Backing {
            ptr,
            len,
            map: None,
        })
    }

    fn temp_map(len: usize) -> Option<memmap2::MmapMut> {
        let f = tempfile::tempfile().ok()?;
        f.set_len(len as u64).ok()?;
        // SAFETY: the file is unlinked and only this process has it open
        // (through `f`, closed on return, and the mapping): nothing else
        // truncates or writes it while it is mapped.
        unsafe { memmap2::MmapMut::map_mut(&f) }.ok()
    }

    /// Gives the whole pages of `r` back to the kernel when file-backed.
    fn release(&self, r: Range<usize>) {
        let Some(map) = &self.map else { return };
        const PAGE: usize = 4096;
        let start = r.start.next_multiple_of(PAGE);
        let end = r.end.min(self.len) / PAGE * PAGE;
        if start < end {
            // SAFETY: MADV_DONTNEED on a shared file mapping only drops
            // this process's page table entries: the written bytes stay in
            // the file (page cache) and the next access reads them again,
            // so no borrowed slice sees a change.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }
}

impl Drop for Backing {
    fn drop(&mut self) {
        if self.map.is_none() {
            // SAFETY: without a map, `ptr` came from Box::into_raw of a
            // boxed slice of `len` elements (type invariant), freed once.
            unsafe {
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.ptr, self.len,
                )))
            };
        }
    }
}

/// A CPU's compressed data, decompressed on demand.
///
/// # Invariants
/// `buf`, once set, is a [`Backing`] of `total` bytes. `done` is 0 until
/// it is set. The first `done` bytes of `buf` are initialized and never
/// written again; bytes at and after `done` are only written, by the
/// holder of the `progress` lock, before `done` grows over them.
pub(super) struct LazyData {
    codec: Codec,
    /// The chunk table and frames, as a range of the file.
    extent: Range<usize>,
    /// Whether [`LazyData::all_once`] returned true already.
    all_seen: std::sync::atomic::AtomicBool,
    chunks: Vec<Chunk>,
    total: usize,
    buf: OnceLock<Backing>,
    done: AtomicUsize,
    /// File offset where the frame of the last decoded chunk ends (0
    /// before the first): the frames before it are not read again.
    frames_done: AtomicUsize,
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
    /// `release` is given each range of `file` the table was read from,
    /// about every megabyte, to give its pages back.
    pub(super) fn new(
        codec: Codec,
        file: &[u8],
        off: u64,
        size: u64,
        budget: &Budget,
        release: &dyn Fn(Range<usize>),
    ) -> Result<LazyData> {
        let r = super::sections::mapped_range(file, off, size.saturating_add(4))?;
        let mut c = Cur::new(&file[r.clone()], off, "compressed data");
        let count = c.u32()?;
        let mut chunks = Vec::new();
        let mut total = 0usize;
        let mut released = r.start;
        // Reading a header maps the file pages around it again (see
        // MAPPED_AROUND), some of them behind the last release.
        let behind = |at: usize| at.saturating_sub(MAPPED_AROUND).max(r.start);
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
            if start + csize >= released + WRITE_BACK_STEP {
                release(behind(released)..start + csize);
                released = start + csize;
            }
        }
        release(behind(released)..r.end);
        budget.take(total).map_err(|e| e.at(off))?;
        Ok(LazyData {
            codec,
            extent: r,
            all_seen: std::sync::atomic::AtomicBool::new(false),
            chunks,
            total,
            buf: OnceLock::new(),
            done: AtomicUsize::new(0),
            frames_done: AtomicUsize::new(0),
            progress: Mutex::new(Progress {
                next_chunk: 0,
                decoder: None,
                failed: None,
                written_back: 0,
            }),
        })
    }

    /// The compression of the chunks.
    pub(super) fn codec(&self) -> Codec {
        self.codec
    }

    /// Chunk `i` of the table: its compressed frame in `file`, its
    /// uncompressed size and the file offset of its header (for errors).
    pub(super) fn chunk<'f>(&self, i: usize, file: &'f [u8]) -> Option<(&'f [u8], usize, u64)> {
        let c = self.chunks.get(i)?;
        Some((file.get(c.frame.clone()).unwrap_or_default(), c.size, c.at))
    }

    /// Size of the whole data once decompressed.
    pub(super) fn len(&self) -> usize {
        self.total
    }

    /// The decoded prefix.
    pub(super) fn decoded(&self) -> &[u8] {
        let done = self.done.load(Ordering::Acquire);
        let Some(b) = self.buf.get() else {
            return &[];
        };
        // SAFETY: the first `done` bytes are initialized and never written
        // again (type invariant).
        unsafe { std::slice::from_raw_parts(b.ptr as *const u8, done) }
    }

    /// Gives the decoded bytes `r` back to the kernel (see the module
    /// documentation): slices of them stay valid.
    pub(super) fn release(&self, r: Range<usize>) {
        if let Some(b) = self.buf.get() {
            b.release(r.start..r.end.min(self.done.load(Ordering::Acquire)));
        }
    }

    /// The decoded data, at least its first `end` bytes (or all of it),
    /// decompressing the chunks up to there. `file` is the file the chunk
    /// table was read from.
    pub(super) fn upto(&self, file: &[u8], end: usize) -> Result<&[u8]> {
        let end = end.min(self.total);
        if self.done.load(Ordering::Acquire) >= end {
            return Ok(self.decoded());
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
            let buf = match self.buf.get() {
                Some(b) => b,
                None => {
                    let b = Backing::new(self.total).map_err(|e| e.at(chunk.at))?;
                    self.buf.get_or_init(|| b)
                }
            };
            let done = self.done.load(Ordering::Acquire);
            // SAFETY: [done, done + size) lies within the buffer (the sizes
            // add up to `total`) and past the decoded prefix, so nothing
            // borrows it; the lock makes this the only writer. Zeroing first
            // makes it initialized before a `&mut [u8]` is made of it.
            let out = unsafe {
                let dst = buf.ptr.add(done) as *mut u8;
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
            self.frames_done.store(chunk.frame.end, Ordering::Release);
            self.done.store(done + chunk.size, Ordering::Release);
            // What was just written is read back from the page cache when
            // a reader gets to it.
            if done + chunk.size >= p.written_back + WRITE_BACK_STEP {
                buf.release(p.written_back..done + chunk.size);
                p.written_back = (done + chunk.size) / 4096 * 4096;
            }
        }
        Ok(self.decoded())
    }

    /// The file bytes of the compressed frames already decoded (they are
    /// not read again), as a range of the file.
    pub(super) fn frames_decoded(&self) -> Range<usize> {
        let end = self.frames_done.load(Ordering::Acquire);
        self.extent.start..end.max(self.extent.start)
    }

    /// The chunk table and compressed frames, as a range of the file.
    pub(super) fn extent(&self) -> Range<usize> {
        self.extent.clone()
    }

    /// Whether every chunk was decoded (or failed), true only for the
    /// first caller that sees it: that one may give the file pages of the
    /// frames back.
    pub(super) fn all_once(&self) -> bool {
        if self.all_seen.load(Ordering::Acquire) {
            return false;
        }
        let p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        (p.next_chunk == self.chunks.len() || p.failed.is_some())
            && !self.all_seen.swap(true, Ordering::AcqRel)
    }

    /// All the data, decompressed; on a bad chunk, the data before it.
    pub(super) fn all(&self, file: &[u8]) -> &[u8] {
        match self.upto(file, self.total) {
            Ok(d) => d,
            Err(_) => self.decoded(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn frame(codec: Codec, data: &[u8]) -> Vec<u8> {
        match codec {
            Codec::Zstd => zstd::bulk::compress(data, 3).unwrap(),
            Codec::Zlib => {
                let mut e =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Codec::None => unreachable!(),
        }
    }

    /// `count`, then per chunk `csize, usize, frame`; `usize` is the real
    /// size plus `lie`.
    fn chunks(codec: Codec, parts: &[Vec<u8>], lie: i64) -> Vec<u8> {
        let mut b = (parts.len() as u32).to_le_bytes().to_vec();
        for p in parts {
            let f = frame(codec, p);
            b.extend_from_slice(&(f.len() as u32).to_le_bytes());
            b.extend_from_slice(&((p.len() as i64 + lie) as u32).to_le_bytes());
            b.extend_from_slice(&f);
        }
        b
    }

    #[test]
    fn chunks_decompress_on_demand_into_one_buffer() {
        let parts: Vec<Vec<u8>> = (0..5u32)
            .map(|i| (0..4096 * (i + 1)).map(|j| (j * 7 + i) as u8).collect())
            .collect();
        let all = parts.concat();
        let lazy = |b: &[u8]| {
            LazyData::new(
                Codec::Zstd,
                b,
                0,
                b.len() as u64 - 4,
                &Budget::new(1 << 30),
                &|_| {},
            )
        };
        for codec in [Codec::Zstd, Codec::Zlib] {
            let b = chunks(codec, &parts, 0);
            let l = LazyData::new(
                codec,
                &b,
                0,
                b.len() as u64 - 4,
                &Budget::new(1 << 30),
                &|_| {},
            )
            .unwrap();
            assert_eq!(l.len(), all.len());
            // Only the chunks up to the asked offset are decoded.
            assert_eq!(l.upto(&b, 1).unwrap(), &all[..4096]);
            assert_eq!(l.upto(&b, 4097).unwrap(), &all[..4096 * 3]);
            assert_eq!(l.upto(&b, usize::MAX).unwrap(), &all[..]);
            assert_eq!(l.all(&b), &all[..]);
            // A header that claims more or less than the frame holds fails
            // when that chunk is reached; the chunks before it stay readable.
            for lie in [-1, 1] {
                let mut p = parts.clone();
                p.rotate_left(1);
                let b = chunks(codec, &parts[..1], 0);
                let mut bad = chunks(codec, &p[..1], lie);
                bad.drain(..4);
                let b = [&2u32.to_le_bytes()[..], &b[4..], &bad].concat();
                let budget = Budget::new(1 << 30);
                let l = LazyData::new(codec, &b, 0, b.len() as u64 - 4, &budget, &|_| {}).unwrap();
                assert_eq!(l.upto(&b, 10).unwrap(), &parts[0][..]);
                let e = l.upto(&b, 4097).unwrap_err().to_string();
                assert!(e.contains("chunk 1"), "{e}");
                assert_eq!(l.all(&b), &parts[0][..]);
            }
        }
        let empty = 0u32.to_le_bytes();
        assert_eq!(lazy(&empty).unwrap().all(&empty), b"");
        // The declared sizes are checked at open.
        let e = lazy(&chunks(Codec::Zstd, &parts, 1 << 20))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("chunk 0") && e.contains("more than 1024 times"),
            "{e}"
        );
    }
}
