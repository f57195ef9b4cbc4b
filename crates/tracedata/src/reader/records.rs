//! [`Records`]: the events of one buffer, decoded page by page from each
//! CPU's data and merged by timestamp, with the lost-events marks.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::*;
use std::ops::Range;

use crate::page::{Missed, Page, PageItem, PageItems};

/// Up to this many CPUs the merge scans them all for each event; above it
/// uses a heap.
const LINEAR_MERGE_MAX: usize = 4;

/// Adds up two losses; an unknown count makes the sum unknown.
fn merge_missed(a: Option<Missed>, b: Missed) -> Missed {
    match (a.unwrap_or(Missed::None), b) {
        (Missed::None, m) | (m, Missed::None) => m,
        (Missed::Count(x), Missed::Count(y)) => Missed::Count(x.saturating_add(y)),
        _ => Missed::Unknown,
    }
}

/// Where a CPU stream's pages come from.
#[derive(Clone, Copy)]
pub(in crate::reader) enum Source<'a> {
    /// Uncompressed data.
    Slice(&'a [u8]),
    /// Compressed chunks (and the file they are in), decompressed as the
    /// stream reaches them.
    Lazy(&'a LazyData, &'a [u8]),
}

impl<'a> Source<'a> {
    /// The bytes from `r.start` on, as far as they are available (at
    /// least to `r.end`, within `len()`), decompressing up to there.
    fn shared(&self, r: Range<usize>) -> Result<&'a [u8]> {
        let (d, what) = match *self {
            Source::Slice(d) => (d, "page past the end of the data"),
            Source::Lazy(l, file) => (l.upto(file, r.end)?, "compressed data ends early"),
        };
        d.get(r.clone())
            .and_then(|_| d.get(r.start..))
            .ok_or_else(|| crate::Error::corrupt(what))
    }
}

/// A CPU's page data as a [`CpuStream`] reads it: pages are loaded in
/// order, and the bytes of the page being read are asked for again for
/// each of its events.
pub(in crate::reader) trait Pages {
    /// Size of the whole data.
    fn len(&self) -> usize;
    /// Makes the bytes `r` (within `len()`) available to [`Pages::bytes`].
    fn load(&mut self, r: Range<usize>) -> Result<()>;
    /// The bytes `r`, loaded by an earlier [`Pages::load`] (empty if they
    /// were not).
    fn bytes(&self, r: Range<usize>) -> &[u8];
    /// The loaded bytes from `from` on (empty if there are none).
    fn loaded_from(&self, from: usize) -> &[u8];
}

impl Pages for Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Slice(d) => d.len(),
            Source::Lazy(l, _) => l.len(),
        }
    }

    fn load(&mut self, r: Range<usize>) -> Result<()> {
        self.shared(r).map(|_| ())
    }

    fn bytes(&self, r: Range<usize>) -> &[u8] {
        match self {
            Source::Slice(d) => d.get(r).unwrap_or_default(),
            Source::Lazy(l, _) => l.decoded().get(r).unwrap_or_default(),
        }
    }

    fn loaded_from(&self, from: usize) -> &[u8] {
        match self {
            Source::Slice(d) => d.get(from..).unwrap_or_default(),
            Source::Lazy(l, _) => l.decoded().get(from..).unwrap_or_default(),
        }
    }
}

/// The page a stream is reading: its data area (as a range of the CPU's
/// data) and where in it the next item is.
struct PageAt {
    data: Range<usize>,
    pos: usize,
    ts: u64,
}

pub(super) struct CpuStream<'a, S: Pages = Source<'a>> {
    /// The mapped file pages of `data`, given back as they are read.
    behind: Option<Behind<'a>>,
    pub(super) cpu: u32,
    pub(super) data: S,
    page_size: usize,
    next_page: usize,
    page: Option<PageAt>,
    /// Next event of this CPU: (ts, payload as a range of `data`).
    pub(super) peeked: Option<(u64, Range<usize>)>,
    /// Lost-events info of the page of `peeked`, if it is the page's first event.
    pub(super) lost: Option<Missed>,
    /// Whether `peeked` is the first event of its page at data offset 0.
    pub(super) first_on_page: bool,
    /// Losses of earlier pages that had no event to attach them to.
    carry: Option<Missed>,
    /// trace-cmd mode: losses of pages without events are forgotten.
    pub(super) compat: bool,
    done: bool,
    error_ctx: String,
}

impl<'a, S: Pages> CpuStream<'a, S> {
    /// The stream of `cpu`'s page `data` of the buffer named `buffer`.
    pub(super) fn new(cpu: u32, data: S, page_size: usize, buffer: &str) -> Self {
        CpuStream {
            behind: None,
            cpu,
            data,
            page_size,
            next_page: 0,
            page: None,
            peeked: None,
            lost: None,
            first_on_page: false,
            carry: None,
            compat: false,
            done: false,
            error_ctx: buffer.to_string(),
        }
    }

    /// Gives the pages of `data`, which starts at `at` in `map`, back to
    /// the kernel once read (see [`Behind`]).
    pub(super) fn release_read_pages(mut self, map: &'a memmap2::Mmap, at: usize) -> Self {
        self.behind = Some(Behind {
            pages: Released::Map(map, at),
            released: 0,
        });
        self
    }

    /// Gives the pages of decoded data `lazy` back to the kernel once read
    /// (see [`Behind`]), and the pages of its compressed frames in `map`,
    /// the file mapping, once decoded.
    pub(super) fn release_decoded(
        mut self,
        lazy: &'a LazyData,
        map: Option<&'a memmap2::Mmap>,
    ) -> Self {
        self.behind = Some(Behind {
            pages: Released::Lazy(lazy, map.map(FramePages::new)),
            released: 0,
        });
        self
    }

    /// Makes `peeked` hold the next event, loading pages as needed.
    pub(super) fn fill(&mut self, hp: &HeaderPage) -> Result<()> {
        if self.peeked.is_some() || self.done {
            return Ok(());
        }
        loop {
            if let Some(p) = &mut self.page {
                let bytes = self.data.bytes(p.data.clone());
                let mut items = PageItems::resume(bytes, p.pos, p.ts);
                let item = items.next();
                p.pos = items.position();
                p.ts = items.time();
                match item {
                    Some(Ok(PageItem::Event { ts, data, offset })) => {
                        let start =
                            p.data.start + (data.as_ptr() as usize - bytes.as_ptr() as usize);
                        self.peeked = Some((ts, start..start + data.len()));
                        // kbuffer only reports missed events for an event at
                        // the very start of the page data.
                        self.first_on_page = self.lost.is_some() && offset <= 8;
                        return Ok(());
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => {
                        self.done = true;
                        let page_at = self.next_page.saturating_sub(self.page_size) as u64;
                        return Err(e
                            .context(format!("page at {page_at:#x}"))
                            .context(self.ctx()));
                    }
                    None => {
                        self.page = None;
                        if let Some(m) = self.lost.take() {
                            if !self.compat {
                                self.carry = Some(merge_missed(self.carry, m));
                            }
                        }
                    }
                }
            }
            let start = self.next_page;
            if let Some(b) = &mut self.behind {
                b.release_to(start);
            }
            let len = self.data.len();
            if start >= len {
                self.done = true;
                return Ok(());
            }
            let end = (start + self.page_size).min(len);
            self.next_page = start + self.page_size;
            if let Err(e) = self.data.load(start..end) {
                self.done = true;
                return Err(e.context(self.ctx()));
            }
            let bytes = self.data.bytes(start..end);
            let page = match Page::new(bytes, hp) {
                Ok(p) => p,
                Err(e) => {
                    self.done = true;
                    return Err(e.context(format!("page at {start:#x}")).context(self.ctx()));
                }
            };
            let off = start + (page.data().as_ptr() as usize - bytes.as_ptr() as usize);
            self.lost = match (self.carry.take(), page.missed()) {
                (None, Missed::None) => None,
                (None, m) => Some(m),
                (Some(c), m) => Some(merge_missed(Some(c), m)),
            };
            self.page = Some(PageAt {
                data: off..off + page.data().len(),
                pos: 0,
                ts: page.timestamp(),
            });
        }
    }

    fn ctx(&self) -> String {
        if self.error_ctx.is_empty() {
            format!("cpu {}", self.cpu)
        } else {
            format!("buffer {:?} cpu {}", self.error_ctx, self.cpu)
        }
    }
}

/// Iterator over the merged events of one buffer; see [`TraceFile::records`].
///
/// After an error the CPU that failed stops; the other CPUs go on.
pub struct Records<'a> {
    streams: Vec<CpuStream<'a>>,
    header: HeaderPage,
    pending: Option<Record<'a>>,
    failed: bool,
    compat_lost: bool,
    /// Streams with a peeked event, by (timestamp, stream index): the
    /// smallest timestamp first, the lowest CPU on ties (like trace-cmd).
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    started: bool,
    /// Stream whose event was just returned and must be refilled.
    refill: Option<usize>,
    errors: VecDeque<Error>,
}

impl<'a> Records<'a> {
    /// Merges `streams`, whose pages have the layout `header`.
    pub(super) fn new(streams: Vec<CpuStream<'a>>, header: HeaderPage) -> Self {
        Records {
            streams,
            header,
            pending: None,
            failed: false,
            compat_lost: false,
            heap: BinaryHeap::new(),
            started: false,
            refill: None,
            errors: VecDeque::new(),
        }
    }

    /// Reports lost events exactly when `trace-cmd report` (libtraceevent's
    /// kbuffer) does: only if the page's first event sits at the very start
    /// of the page data (not after a time extend or padding).
    pub fn trace_cmd_compat(mut self) -> Self {
        self.compat_lost = true;
        for s in &mut self.streams {
            s.compat = true;
        }
        self
    }

    /// Whether any CPU stream stopped on an error.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// How far the merge got: bytes of CPU data whose pages were reached,
    /// and the bytes of CPU data in all (uncompressed), over every CPU.
    pub fn progress(&self) -> (u64, u64) {
        self.streams.iter().fold((0, 0), |(done, all), s| {
            let len = s.data.len();
            let reached = if s.done { len } else { s.next_page.min(len) };
            (done + reached as u64, all + len as u64)
        })
    }

    /// Loads the next event of stream `i` and queues it by timestamp.
    #[inline]
    fn fill_and_push(&mut self, i: usize) {
        let s = &mut self.streams[i];
        match s.fill(&self.header) {
            Err(e) => {
                self.failed = true;
                self.errors.push_back(e);
            }
            Ok(()) => {
                if let Some((ts, _)) = s.peeked {
                    self.heap.push(Reverse((ts, i)));
                }
            }
        }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Item<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(r) = self.pending.take() {
            return Some(Ok(Item::Event(r)));
        }
        let (ts, i) = if self.streams.len() <= LINEAR_MERGE_MAX {
            // Few CPUs: a scan is cheaper than a heap.
            let mut best: Option<(u64, usize)> = None;
            for i in 0..self.streams.len() {
                let s = &mut self.streams[i];
                if let Err(e) = s.fill(&self.header) {
                    self.failed = true;
                    return Some(Err(e));
                }
                if let Some((ts, _)) = s.peeked {
                    if best.is_none_or(|(bts, _)| ts < bts) {
                        best = Some((ts, i));
                    }
                }
            }
            best?
        } else {
            if !self.started {
                self.started = true;
                for i in 0..self.streams.len() {
                    self.fill_and_push(i);
                }
            } else if let Some(i) = self.refill.take() {
                self.fill_and_push(i);
            }
            if let Some(e) = self.errors.pop_front() {
                return Some(Err(e));
            }
            let Reverse((ts, i)) = self.heap.pop()?;
            self.refill = Some(i);
            (ts, i)
        };
        let s = &mut self.streams[i];
        let (_, r) = s.peeked.take().expect("peeked");
        // `fill` loaded these bytes, and shared sources keep them.
        let extent = s.data.shared(r.clone()).unwrap_or_default();
        let rec = Record {
            cpu: s.cpu,
            ts,
            data: extent.get(..r.len()).unwrap_or_default(),
            extent,
        };
        if let Some(m) = s.lost.take() {
            let report = !self.compat_lost || s.first_on_page;
            if report {
                self.pending = Some(rec);
                let count = match m {
                    Missed::Count(n) => Some(n),
                    _ => None,
                };
                return Some(Ok(Item::Lost {
                    cpu: s.cpu,
                    ts,
                    count,
                }));
            }
        }
        Some(Ok(Item::Event(rec)))
    }
}

/// Gives the pages of a CPU's data back to the kernel once the stream has
/// read past them, so that reading a file keeps about [`Behind::STEP`] of
/// it per CPU resident instead of all of it (trace-cmd reads page by page
/// into a buffer it reuses).
///
/// The pages are those of the read-only file mapping, or of the temporary
/// file compressed data is decoded into ([`LazyData::release`]): a page
/// given back is read again from the page cache on the next access, with
/// the same bytes, so records still borrowed from it (and later reads
/// through [`crate::TraceFile::cpu_data`]) stay valid.
struct Behind<'a> {
    pages: Released<'a>,
    /// Bytes of the data given back so far.
    released: usize,
}

/// Whose pages a [`Behind`] gives back.
enum Released<'a> {
    /// The file mapping, the CPU's data at this offset in it.
    Map(&'a memmap2::Mmap, usize),
    /// Decoded compressed data, and the pages of its frames in the file
    /// mapping.
    Lazy(&'a LazyData, Option<FramePages<'a>>),
}

impl Behind<'_> {
    /// Bytes read between two releases.
    const STEP: usize = RELEASE_STEP;

    /// Releases the data before `offset` once `STEP` bytes are pending.
    fn release_to(&mut self, offset: usize) {
        if offset < self.released + Self::STEP {
            return;
        }
        // From MAPPED_AROUND back: the reads since the last release mapped
        // pages behind it again.
        let from = self.released.saturating_sub(MAPPED_AROUND);
        match &mut self.pages {
            Released::Map(map, at) => dont_need(map, *at + from, offset - from),
            Released::Lazy(l, frames) => {
                l.release(from..offset);
                if let Some(frames) = frames {
                    let done = l.frames_decoded();
                    frames.release(done.start, done.end, 1);
                }
            }
        }
        self.released = offset;
    }
}

/// How far behind the page it faults on the kernel may map the pages of a
/// file that are in its page cache: the fault-around window
/// (`fault_around_bytes`, 64 KiB by default), and the whole large folio
/// the page is in (ext4 and tmpfs make folios up to a PMD, 2 MiB on
/// x86-64; 256 KiB ones are common). Pages given back before a read come
/// back with it, so a release goes back this far.
pub(super) const MAPPED_AROUND: usize = 2 << 20;

/// Bytes a reader moves on between two releases of the pages behind it.
pub(super) const RELEASE_STEP: usize = 1 << 20;

/// The pages of the compressed frames a reader has decoded, in the file
/// mapping, given back to the kernel behind the reader.
pub(super) struct FramePages<'a> {
    map: &'a memmap2::Mmap,
    /// File offset up to which they were given back.
    from: usize,
}

impl<'a> FramePages<'a> {
    /// Frames of `map`, none given back yet.
    pub(super) fn new(map: &'a memmap2::Mmap) -> Self {
        FramePages { map, from: 0 }
    }

    /// Gives back the frame pages of the file range `start..end` not given
    /// back yet, once that is at least `min_step` bytes.
    pub(super) fn release(&mut self, start: usize, end: usize, min_step: usize) {
        let new = self.from.max(start);
        if end > new && end - new >= min_step {
            // Reading the next frame maps file pages around it again, some
            // of them behind `from` (see MAPPED_AROUND).
            let start = self.from.saturating_sub(MAPPED_AROUND).max(start);
            dont_need(self.map, start, end - start);
            self.from = end;
        }
    }
}

/// Gives `len` bytes of `map` from `start` back to the kernel: the next
/// access reads the same file bytes again.
pub(super) fn dont_need(map: &memmap2::Mmap, start: usize, len: usize) {
    // SAFETY: MADV_DONTNEED on a read-only shared file mapping only drops
    // this process's page table entries: the next access reads the same
    // file bytes again, so no borrowed slice sees a change. Callers pass a
    // range within the map (data cut from it).
    let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    /// Whether the page of `map` at `offset` is mapped in this process
    /// (bit 63 of its /proc/self/pagemap entry).
    fn present(map: &memmap2::Mmap, offset: usize) -> bool {
        let page = (map.as_ptr() as usize + offset) / 4096;
        let mut f = std::fs::File::open("/proc/self/pagemap").unwrap();
        f.seek(SeekFrom::Start(page as u64 * 8)).unwrap();
        let mut e = [0u8; 8];
        f.read_exact(&mut e).unwrap();
        u64::from_le_bytes(e) >> 63 == 1
    }

    /// Reads a byte of every page of `r` (volatile: an optimized build
    /// must not leave the reads out).
    fn touch(map: &memmap2::Mmap, r: Range<usize>) {
        for i in r.step_by(4096) {
            // SAFETY: `i` is within the map (the callers' ranges are).
            unsafe { std::ptr::read_volatile(map.as_ptr().add(i)) };
        }
    }

    /// A read after a release maps pages behind it again (the kernel's
    /// fault-around and large folios, simulated here by reading such a
    /// page): the next release gives them back too. Each release here ends
    /// in another 2 MiB block than the page behind, so that no huge page
    /// mapping of the file is split, which would unmap it anyway.
    #[test]
    fn a_release_gives_back_what_reads_mapped_behind_the_last_one() {
        const MIB: usize = 1 << 20;
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, &vec![1u8; 8 * MIB]).unwrap();
        // SAFETY: the file is unlinked and only this test has it.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        let behind = 2 * MIB - 4096;

        let mut frames = FramePages::new(&map);
        touch(&map, 0..2 * MIB);
        frames.release(0, 2 * MIB, 1);
        touch(&map, behind..3 * MIB);
        assert!(present(&map, behind));
        frames.release(0, 3 * MIB, 1);
        assert!(!present(&map, behind));

        let mut reader = Behind {
            pages: Released::Map(&map, 0),
            released: 0,
        };
        touch(&map, 0..2 * MIB);
        reader.release_to(2 * MIB);
        touch(&map, behind..2 * MIB + RELEASE_STEP);
        assert!(present(&map, behind));
        reader.release_to(2 * MIB + RELEASE_STEP);
        assert!(!present(&map, behind));
    }
}
