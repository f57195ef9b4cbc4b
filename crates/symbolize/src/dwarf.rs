//! DWARF line information of one ELF file, parsed only where an address
//! falls.
//!
//! `addr2line::Loader` decompresses every DWARF section and parses the
//! header, the abbreviations and the ranges of every compilation unit when
//! it opens a file: for the separate debug file of libc (about 4,100 units)
//! that is about 37 MB held for the life of the symbolizer, whatever the
//! trace needs. Here nothing is read until the first lookup; then only the
//! sections line lookups use are decompressed (not the location lists,
//! which are the largest), `.debug_aranges` tells which unit holds an
//! address, and an `addr2line::Context` is built for that unit alone (its
//! `.debug_info` bytes as a section of their own) and kept for the next
//! lookups. Files without `.debug_aranges` get one context over all their
//! units, as before.
//!
//! The decompressed sections (8.5 MB for libc) are streamed into an
//! unlinked temporary file that is mapped read-only, and the mapped pages
//! are given back to the kernel after each lookup: a lookup reads a few
//! pages of them again from the page cache, and what the process keeps is
//! the parsed units. Where no temporary file can be made, the sections are
//! held in memory.
//!
//! A unit seen alone cannot follow `DW_FORM_ref_addr` references into other
//! units (LTO builds use them for inlined functions): such a lookup finds
//! no location rather than a wrong one.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Deref;

use gimli::{EndianReader, Reader as _, RunTimeEndian, SectionId};
use object::{CompressionFormat, Object, ObjectSection};

use crate::elf::Mapped;

type R = EndianReader<RunTimeEndian, Bytes>;

/// The decompressed sections: a read-only mapping of an unlinked temporary
/// file, or memory.
#[derive(Debug)]
enum Store {
    Map(memmap2::Mmap),
    Mem(Vec<u8>),
}

/// A shared handle on a [`Store`], which gimli reads through.
#[derive(Debug, Clone)]
struct Bytes(Arc<Store>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &*self.0 {
            Store::Map(m) => m,
            Store::Mem(v) => v,
        }
    }
}

// SAFETY: the bytes are those of a read-only mapping or a vector owned by
// the `Arc`: moving or cloning the handle does not move them, and nothing
// writes them while a handle lives.
unsafe impl stable_deref_trait::StableDeref for Bytes {}
// SAFETY: a clone shares the same `Arc`, so it derefs to the same bytes.
unsafe impl stable_deref_trait::CloneStableDeref for Bytes {}

impl Bytes {
    /// Gives the mapped pages back to the kernel; they are read again from
    /// the page cache when next touched.
    fn release(&self) {
        if let Store::Map(m) = &*self.0 {
            // SAFETY: MADV_DONTNEED on a shared read-only file mapping only
            // drops this process's page table entries: the file keeps the
            // bytes and the next access reads them again, so no slice of
            // the mapping sees a change.
            let _ = unsafe { m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

/// The line information of one file, loaded on first use.
pub(crate) struct LazyDwarf {
    path: PathBuf,
    loaded: OnceCell<Option<Loaded>>,
}

/// The sections, the address ranges of the units and the units parsed.
struct Loaded {
    /// The bytes behind all of `sections`.
    bytes: Bytes,
    /// Every section addr2line reads, `.debug_info` whole.
    sections: HashMap<SectionId, R>,
    /// An empty section, for those the file does not have.
    empty: R,
    /// (start, end, `.debug_info` offset of the unit), sorted by start.
    ranges: Vec<(u64, u64, usize)>,
    /// The context of each unit looked up so far, by offset (`None`: the
    /// unit could not be parsed).
    units: RefCell<HashMap<usize, Option<addr2line::Context<R>>>>,
    /// One context over the whole file, when it has no `.debug_aranges`.
    whole: Option<addr2line::Context<R>>,
}

/// The sections addr2line reads to find lines and inlined calls.
const SECTIONS: [SectionId; 9] = [
    SectionId::DebugInfo,
    SectionId::DebugAbbrev,
    SectionId::DebugLine,
    SectionId::DebugLineStr,
    SectionId::DebugStr,
    SectionId::DebugStrOffsets,
    SectionId::DebugAddr,
    SectionId::DebugRanges,
    SectionId::DebugRngLists,
];

impl LazyDwarf {
    /// The DWARF of the file at `path` (checked to have line tables),
    /// read at the first lookup.
    pub(crate) fn new(path: PathBuf) -> LazyDwarf {
        LazyDwarf {
            path,
            loaded: OnceCell::new(),
        }
    }

    /// `file:line` of `vaddr` in the function the symbol names: the
    /// outermost of the inline frames there (the innermost may be code
    /// inlined from anywhere).
    pub(crate) fn location(&self, vaddr: u64) -> Option<String> {
        let loaded = self
            .loaded
            .get_or_init(|| Loaded::new(&self.path))
            .as_ref()?;
        if let Some(ctx) = &loaded.whole {
            let out = outermost(ctx, vaddr);
            loaded.bytes.release();
            return out;
        }
        let off = loaded.unit_of(vaddr)?;
        let mut units = loaded.units.borrow_mut();
        let ctx = units.entry(off).or_insert_with(|| loaded.unit(off));
        let out = outermost(ctx.as_ref()?, vaddr);
        loaded.bytes.release();
        out
    }
}

/// The location of the outermost frame at `vaddr` that has a file.
fn outermost(ctx: &addr2line::Context<R>, vaddr: u64) -> Option<String> {
    let mut frames = ctx.find_frames(vaddr).skip_all_loads().ok()?;
    let mut out = None;
    while let Ok(Some(f)) = frames.next() {
        if let Some(loc) = f.location {
            if let Some(file) = loc.file {
                out = Some(match loc.line {
                    Some(l) => format!("{file}:{l}"),
                    None => file.to_string(),
                });
            }
        }
    }
    out
}

impl Loaded {
    /// Reads the section headers of the file, then decompresses the
    /// sections line lookups need (and `.debug_aranges`) one after the
    /// other into the store, streaming from the file.
    fn new(path: &Path) -> Option<Loaded> {
        let (endian, wanted) = {
            let map = Mapped::open(path)?;
            let file = object::File::parse(map.bytes()).ok()?;
            let endian = if file.is_little_endian() {
                RunTimeEndian::Little
            } else {
                RunTimeEndian::Big
            };
            let wanted: Vec<_> = SECTIONS
                .iter()
                .chain([&SectionId::DebugAranges])
                .filter_map(|&id| {
                    let r = file
                        .section_by_name(id.name())?
                        .compressed_file_range()
                        .ok()?;
                    Some((id, r))
                })
                .collect();
            (endian, wanted)
        };
        let mut src = File::open(path).ok()?;
        let mut out = Sink::new();
        let mut placed = Vec::new();
        for (id, r) in wanted {
            let start = out.len();
            let ok = copy_section(&mut src, &r, &mut out).is_ok();
            let end = out.len();
            if ok && (end - start) as u64 == r.uncompressed_size {
                placed.push((id, start..end));
            } else {
                out.truncate(start).ok()?;
            }
        }
        let bytes = Bytes(Arc::new(out.finish()?));
        let all = EndianReader::new(bytes.clone(), endian);
        let mut sections: HashMap<SectionId, R> = placed
            .into_iter()
            .map(|(id, r)| (id, all.range(r)))
            .collect();
        let empty = all.range(0..0);
        let aranges = gimli::DebugAranges::from(
            sections
                .remove(&SectionId::DebugAranges)
                .unwrap_or_else(|| empty.clone()),
        );
        let mut ranges = Vec::new();
        let mut headers = aranges.headers();
        while let Ok(Some(h)) = headers.next() {
            let off = h.debug_info_offset().0;
            let mut entries = h.entries();
            while let Ok(Some(e)) = entries.next() {
                let r = e.range();
                if r.begin < r.end {
                    ranges.push((r.begin, r.end, off));
                }
            }
        }
        ranges.sort_unstable();
        let mut loaded = Loaded {
            bytes,
            sections,
            empty,
            ranges,
            units: RefCell::new(HashMap::new()),
            whole: None,
        };
        if loaded.ranges.is_empty() {
            let info = loaded.section(SectionId::DebugInfo);
            loaded.whole = Some(addr2line::Context::from_dwarf(loaded.dwarf(info)).ok()?);
        }
        loaded.bytes.release();
        Some(loaded)
    }

    /// Section `id`, empty when the file has none.
    fn section(&self, id: SectionId) -> R {
        self.sections.get(&id).unwrap_or(&self.empty).clone()
    }

    /// The sections as a `gimli::Dwarf` whose `.debug_info` is `info`
    /// (and without `.debug_aranges`, whose offsets would not match it).
    fn dwarf(&self, info: R) -> gimli::Dwarf<R> {
        let mut d = gimli::Dwarf::load(|id| -> Result<R, ()> { Ok(self.section(id)) })
            .unwrap_or_else(|()| unreachable!("the loader does not fail"));
        d.debug_info = gimli::DebugInfo::from(info);
        d
    }

    /// The `.debug_info` offset of the unit whose ranges hold `vaddr`.
    fn unit_of(&self, vaddr: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.0 <= vaddr);
        let &(_, end, off) = self.ranges.get(i.checked_sub(1)?)?;
        (vaddr < end).then_some(off)
    }

    /// A context for the unit at `off` of `.debug_info` alone.
    fn unit(&self, off: usize) -> Option<addr2line::Context<R>> {
        let info = self.section(SectionId::DebugInfo);
        let header = gimli::DebugInfo::from(info.clone())
            .header_from_offset(gimli::DebugInfoOffset(off))
            .ok()?;
        let len = header.length_including_self();
        let mut unit = info.clone();
        unit.skip(off).ok()?;
        unit.truncate(len).ok()?;
        addr2line::Context::from_dwarf(self.dwarf(unit)).ok()
    }
}

/// Copies the section at `r` of `src` into `out`, decompressing it.
fn copy_section(
    src: &mut File,
    r: &object::CompressedFileRange,
    out: &mut Sink,
) -> std::io::Result<()> {
    src.seek(SeekFrom::Start(r.offset))?;
    let input = std::io::BufReader::new(src.take(r.compressed_size));
    // One byte more than declared, so that a longer stream shows.
    let limit = r.uncompressed_size.saturating_add(1);
    match r.format {
        CompressionFormat::None => std::io::copy(&mut input.take(limit), out),
        CompressionFormat::Zlib => std::io::copy(
            &mut flate2::bufread::ZlibDecoder::new(input).take(limit),
            out,
        ),
        CompressionFormat::Zstandard => std::io::copy(
            &mut zstd::stream::read::Decoder::with_buffer(input)?.take(limit),
            out,
        ),
        _ => Err(std::io::ErrorKind::Unsupported.into()),
    }
    .map(drop)
}

/// Where the sections are written: an unlinked temporary file, else
/// memory.
enum Sink {
    File(std::io::BufWriter<File>, usize),
    Mem(Vec<u8>),
}

impl Sink {
    fn new() -> Sink {
        match tempfile::tempfile() {
            Ok(f) => Sink::File(std::io::BufWriter::new(f), 0),
            Err(_) => Sink::Mem(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Sink::File(_, n) => *n,
            Sink::Mem(v) => v.len(),
        }
    }

    /// Drops what was written after `len`.
    fn truncate(&mut self, len: usize) -> std::io::Result<()> {
        match self {
            Sink::File(w, n) => {
                w.flush()?;
                w.get_mut().set_len(len as u64)?;
                w.get_mut().seek(SeekFrom::Start(len as u64))?;
                *n = len;
            }
            Sink::Mem(v) => v.truncate(len),
        }
        Ok(())
    }

    fn finish(self) -> Option<Store> {
        match self {
            Sink::File(_, 0) => Some(Store::Mem(Vec::new())),
            Sink::File(w, _) => {
                let f = w.into_inner().ok()?;
                // SAFETY: the file is unlinked and only this process has it
                // open (`f`, closed on return, and the mapping); nothing
                // writes or truncates it while it is mapped.
                unsafe { memmap2::Mmap::map(&f) }.ok().map(Store::Map)
            }
            Sink::Mem(v) => Some(Store::Mem(v)),
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::File(w, n) => {
                let k = w.write(buf)?;
                *n += k;
                Ok(k)
            }
            Sink::Mem(v) => v.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::File(w, _) => w.flush(),
            Sink::Mem(_) => Ok(()),
        }
    }
}
