//! trace.dat reader: versions 6 and 7, uncompressed, zlib or zstd.
//!
//! [`TraceFile::open`] maps the file, parses every metadata section and
//! option, and decompresses compressed per-CPU data once. Events are then
//! decoded lazily, page by page, straight from the mapped (or decompressed)
//! bytes by [`TraceFile::records`], which merges the CPUs of one buffer by
//! timestamp like `trace-cmd report` does (on equal timestamps the lowest
//! CPU wins).
//!
//! What trace-cmd 3.1.6 writes, beyond its format documentation:
//! - v7 section headers hold a u64 size (the documentation says 4 bytes);
//!   a compressed section's size includes its 8-byte csize/usize header;
//! - the BUFFER option has a u32 sub-buffer size before the CPU count;
//! - for compressed CPU data, the size in the BUFFER option leaves out the
//!   u32 chunk count that starts the data;
//! - v6 BUFFER options point at a `"flyrecord\0"` marker before the CPU table;
//! - a STRINGS section (section descriptions) follows the last options
//!   section; nothing points to it and it is not needed to read the file;
//! - CPUSTAT options hold the top buffer's CPUs, then a `"\nBuffer: NAME\n\n"`
//!   option before each instance's CPUs.

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::clock::selected_clock;
use crate::dat::{self, option};
use crate::error::{Error, Result};
use crate::header::{HeaderEvent, HeaderPage};
use crate::record::Record;
use crate::stats::BufferStats;

mod codec;
mod cursor;
mod formats;
mod lazy;
mod records;
mod sections;
mod v6;
mod v7;

use codec::Codec;
pub use cursor::CpuCursor;
pub use formats::Formats;
use lazy::LazyData;
pub use records::Records;
use records::{CpuStream, Source};
use sections::{skip_u32_blob, text, Cur, KallsymsAt, Meta};

/// One element of the merged event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// An event.
    Event(Record<'a>),
    /// Events were lost on `cpu` before the page whose first event follows
    /// (`ts` is that event's timestamp). `count` is `None` if the kernel did
    /// not store how many. Losses flagged on pages without events are added
    /// to the next one (except in [`Records::trace_cmd_compat`] mode).
    Lost {
        /// CPU that lost events.
        cpu: u32,
        /// Timestamp of the first event after the loss.
        ts: u64,
        /// Number of lost events, if known.
        count: Option<u64>,
    },
}

/// The per-CPU section of one buffer in a trace.dat file (where it is and how
/// big; the bytes come from [`TraceFile::cpu_data`]). The writer's input
/// counterpart is [`crate::writer::CpuData`].
#[derive(Debug)]
pub struct CpuSection {
    /// CPU id.
    pub cpu: u32,
    /// Offset of the data in the file.
    pub file_offset: u64,
    /// Size of the data in the file (compressed size if compressed).
    pub file_size: u64,
    data: DataRef,
}

#[derive(Debug)]
enum DataRef {
    /// Uncompressed, this range of the file.
    Mapped(Range<usize>),
    /// Compressed chunks, decompressed as they are reached.
    Lazy(LazyData),
}

impl CpuSection {
    /// Uncompressed size of the data, in bytes.
    pub fn data_size(&self) -> usize {
        match &self.data {
            DataRef::Mapped(r) => r.len(),
            DataRef::Lazy(l) => l.len(),
        }
    }
}

/// A buffer: the top instance (`name` empty) or a named instance.
#[derive(Debug)]
pub struct Buffer {
    /// Instance name, empty for the top buffer.
    pub name: String,
    /// Trace clock of the buffer, if known.
    pub clock: Option<String>,
    /// Sub-buffer (page) size.
    pub page_size: usize,
    /// Per-CPU data, in CPU order.
    pub cpus: Vec<CpuSection>,
}

impl Buffer {
    /// True for the top-level buffer.
    pub fn is_top(&self) -> bool {
        self.name.is_empty()
    }
}

/// A raw option as stored in the file.
#[derive(Debug, Clone)]
pub struct RawOption {
    /// Option id (see [`crate::dat::option`]).
    pub id: u16,
    /// Option data.
    pub data: Vec<u8>,
}

enum Bytes {
    Map(memmap2::Mmap),
    Vec(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Vec(v) => v,
        }
    }
}

impl Bytes {
    /// Gives the pages of `r` back to the kernel, when mapped (see
    /// [`records::dont_need`]); bytes in memory stay.
    fn give_back(&self, r: Range<usize>) {
        if let Bytes::Map(m) = self {
            records::dont_need(m, r.start, r.len());
        }
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} bytes>", self.len())
    }
}

/// An open trace.dat file.
#[derive(Debug)]
pub struct TraceFile {
    path: PathBuf,
    bytes: Bytes,
    version: u32,
    long_size: usize,
    page_size: usize,
    compression: Option<(String, String)>,
    header_page_text: Vec<u8>,
    header_event_text: Vec<u8>,
    header_page: HeaderPage,
    formats: Formats,
    kallsyms: KallsymsAt,
    /// How version 7 sections are compressed (for [`TraceFile::kallsyms`]).
    codec: Codec,
    printk_formats: Vec<u8>,
    cmdlines: Vec<u8>,
    cpu_count: u32,
    options: Vec<RawOption>,
    buffers: Vec<Buffer>,
}

impl TraceFile {
    /// Opens and parses `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<TraceFile> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let bytes = if len == 0 {
            Bytes::Vec(Vec::new())
        } else {
            // SAFETY: the map is read-only and private to this process; the
            // file may change under us, but every access is bounds-checked
            // against the length of the map, so a change can only produce
            // wrong data, not out-of-bounds reads.
            match unsafe { memmap2::Mmap::map(&file) } {
                Ok(m) => Bytes::Map(m),
                // Not read into memory instead when it would not fit (a
                // sparse file that grows with a recording is far larger
                // than what it holds).
                Err(e) if len > crate::limits::Budget::of_machine().total() as u64 => {
                    return Err(Error::io(path, e).context("cannot map the file"));
                }
                Err(_) => {
                    let mut v = Vec::new();
                    (&file)
                        .read_to_end(&mut v)
                        .map_err(|e| Error::io(path, e))?;
                    Bytes::Vec(v)
                }
            }
        };
        Self::parse(path.to_path_buf(), bytes).map_err(|e| e.with_path(path))
    }

    /// Parses a trace.dat held in memory (`name` is used in errors).
    pub fn from_bytes(name: impl AsRef<Path>, data: Vec<u8>) -> Result<TraceFile> {
        let name = name.as_ref();
        Self::parse(name.to_path_buf(), Bytes::Vec(data)).map_err(|e| e.with_path(name))
    }

    fn parse(path: PathBuf, bytes: Bytes) -> Result<TraceFile> {
        let b: &[u8] = &bytes;
        let mut c = Cur::new(b, 0, "file header");
        if c.take(3).ok() != Some(&dat::MAGIC[..]) || c.take(7).ok() != Some(&dat::TRACING[..]) {
            return Err(Error::corrupt("not a trace.dat file (bad magic)").context("file header"));
        }
        let vs = c.cstr()?;
        let version: u32 = vs
            .parse()
            .map_err(|_| c.err(format!("bad version string {vs:?}")))?;
        if version != dat::VERSION_6 && version != dat::VERSION_7 {
            return Err(
                Error::unsupported(format!("file version {version}")).context("file header")
            );
        }
        if c.u8()? != 0 {
            return Err(Error::unsupported("big-endian trace file").context("file header"));
        }
        let long_size = c.u8()? as usize;
        if long_size != 4 && long_size != 8 {
            return Err(c.err(format!("long size {long_size} is not 4 or 8")));
        }
        let page_size = c.u32()? as usize;
        if !(64..=(1 << 24)).contains(&page_size) {
            return Err(c.err(format!("page size {page_size} is not plausible")));
        }
        let mut meta = Meta::default();
        let mut options = Vec::new();
        let mut compression = None;
        let mut cpu_count = 0;
        let mut buffers = Vec::new();
        let mut file_codec = Codec::None;
        if version == dat::VERSION_6 {
            Self::parse_v6(
                &mut c,
                &mut meta,
                &mut options,
                &mut cpu_count,
                &mut buffers,
                page_size,
            )?;
        } else {
            let name = c.cstr()?.to_string();
            let ver = c.cstr()?.to_string();
            let codec = match name.as_str() {
                dat::COMPRESSION_NONE => Codec::None,
                dat::COMPRESSION_ZLIB => Codec::Zlib,
                dat::COMPRESSION_ZSTD => Codec::Zstd,
                other => {
                    return Err(
                        Error::unsupported(format!("compression {other:?}")).context("file header")
                    )
                }
            };
            compression = Some((name, ver));
            file_codec = codec;
            let first = c.u64()?;
            // The chunk tables of compressed data are read at open: their
            // pages (and, by the kernel's fault-around, their neighbours)
            // are given back as the tables are read.
            let release = |r: Range<usize>| bytes.give_back(r);
            Self::parse_v7(
                b,
                &release,
                codec,
                first,
                page_size,
                &mut meta,
                &mut options,
                &mut cpu_count,
                &mut buffers,
            )?;
        }

        let header_page = HeaderPage::parse(&String::from_utf8_lossy(&meta.header_page))?;
        if !meta.header_event.is_empty() {
            HeaderEvent::parse(&String::from_utf8_lossy(&meta.header_event))?;
        }
        let formats = Formats::new(meta.ftrace, meta.events, header_page.commit_size)?;
        if cpu_count == 0 {
            cpu_count = buffers
                .iter()
                .map(|b| b.cpus.len() as u32)
                .max()
                .unwrap_or(0);
        }
        Ok(TraceFile {
            path,
            bytes,
            version,
            long_size,
            page_size,
            compression,
            header_page_text: meta.header_page,
            header_event_text: meta.header_event,
            header_page,
            formats,
            kallsyms: meta.kallsyms,
            codec: file_codec,
            printk_formats: meta.printk,
            cmdlines: meta.cmdlines,
            cpu_count,
            options,
            buffers,
        })
    }

    /// Path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File version (6 or 7).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Page size of the traced machine.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// User-space `sizeof(long)` recorded in the file header.
    pub fn long_size(&self) -> usize {
        self.long_size
    }

    /// Kernel `sizeof(long)` (size of the page commit word).
    pub fn kernel_long_size(&self) -> usize {
        self.header_page.commit_size
    }

    /// Compression name and version (v7 only).
    pub fn compression(&self) -> Option<(&str, &str)> {
        self.compression
            .as_ref()
            .map(|(a, b)| (a.as_str(), b.as_str()))
    }

    /// Number of CPUs of the traced machine.
    pub fn cpu_count(&self) -> u32 {
        self.cpu_count
    }

    /// Parsed page header layout.
    pub fn header_page(&self) -> &HeaderPage {
        &self.header_page
    }

    /// Raw text of `events/header_page`.
    pub fn header_page_text(&self) -> &[u8] {
        &self.header_page_text
    }

    /// Raw text of `events/header_event`.
    pub fn header_event(&self) -> &[u8] {
        &self.header_event_text
    }

    /// All parsed event formats.
    pub fn formats(&self) -> &Formats {
        &self.formats
    }

    /// Raw ftrace format files, in file order.
    pub fn ftrace_format_texts(&self) -> &[Vec<u8>] {
        &self.formats.ftrace_texts
    }

    /// Raw event format files by system, in file order.
    pub fn event_format_texts(&self) -> &[(String, Vec<Vec<u8>>)] {
        &self.formats.event_texts
    }

    /// Raw `/proc/kallsyms` contents, read from the file at each call: it
    /// is the largest metadata block, and its readers (libtraceevent, the
    /// symbolizer) each need it once, so the file does not hold it. It was
    /// checked at open: an error means that the file changed since.
    pub fn kallsyms(&self) -> Result<Vec<u8>> {
        const WHAT: &str = "KALLSYMS section";
        match &self.kallsyms {
            KallsymsAt::Absent => Ok(Vec::new()),
            KallsymsAt::Range(r) => {
                let b: &[u8] = &self.bytes;
                let text = b
                    .get(r.clone())
                    .ok_or_else(|| Error::corrupt("kallsyms past the end of the file"))?
                    .to_vec();
                self.bytes.give_back(r.clone());
                Ok(text)
            }
            KallsymsAt::Section(off) => {
                let budget = crate::limits::Budget::of_machine();
                let (_, mut body, pages) =
                    v7::read_section(&self.bytes, self.codec, &budget, *off, WHAT)?;
                self.bytes.give_back(pages);
                let text = skip_u32_blob(&mut Cur::new(&body, *off, WHAT))?;
                body.truncate(text.end);
                body.drain(..text.start);
                Ok(body)
            }
        }
    }

    /// Raw `printk_formats` contents.
    pub fn printk_formats(&self) -> &[u8] {
        &self.printk_formats
    }

    /// Raw `saved_cmdlines` contents.
    pub fn cmdlines(&self) -> &[u8] {
        &self.cmdlines
    }

    /// All options in file order.
    pub fn options(&self) -> &[RawOption] {
        &self.options
    }

    fn option_text(&self, id: u16) -> Option<String> {
        self.options
            .iter()
            .find(|o| o.id == id)
            .map(|o| text(&o.data))
    }

    /// UNAME option.
    pub fn uname(&self) -> Option<String> {
        self.option_text(option::UNAME)
    }

    /// VERSION option (version of the writing tool).
    pub fn tool_version(&self) -> Option<String> {
        self.option_text(option::VERSION)
    }

    /// Trace clock: the selected clock of the TRACECLOCK option, else the
    /// clock of the first buffer.
    pub fn clock(&self) -> Option<String> {
        self.option_text(option::TRACECLOCK)
            .map(|t| selected_clock(&t))
            .or_else(|| self.buffers.iter().find_map(|b| b.clock.clone()))
    }

    /// Whether timestamps count nanoseconds (printed as seconds with
    /// microseconds): see the TRACECLOCK and TSC2NSEC options.
    pub fn clock_counts_ns(&self) -> bool {
        crate::clock::counts_nanoseconds(&self.options)
    }

    /// The shift to add to every timestamp (nanoseconds, wrapping): the
    /// OFFSET options, and the DATE options if `with_date`.
    pub fn ts_offset(&self, with_date: bool) -> i64 {
        crate::clock::ts_offset(&self.options, with_date)
    }

    /// CPUSTAT option texts, in file order (one per CPU per buffer, with
    /// the `Buffer: NAME` markers between buffers).
    pub fn cpustat_texts(&self) -> Vec<String> {
        self.options
            .iter()
            .filter(|o| o.id == option::CPUSTAT)
            .map(|o| text(&o.data))
            .collect()
    }

    /// The CPUSTAT options parsed and grouped by buffer (see
    /// [`stats::group_by_buffer`](crate::stats::group_by_buffer)).
    pub fn buffer_stats(&self) -> Vec<BufferStats> {
        crate::stats::group_by_buffer(self.cpustat_texts())
    }

    /// PROCMAPS option texts, joined: trace-cmd (and our writer) store one
    /// option per process.
    pub fn procmaps(&self) -> Option<String> {
        let all: Vec<String> = self
            .options
            .iter()
            .filter(|o| o.id == option::PROCMAPS)
            .map(|o| text(&o.data))
            .collect();
        (!all.is_empty()).then(|| all.concat())
    }

    /// The processes of the PROCMAPS options, parsed (empty when there are
    /// none).
    pub fn proc_maps(&self) -> Vec<crate::procmaps::ProcMap> {
        self.procmaps()
            .map(|t| crate::procmaps::ProcMap::parse_all(&t))
            .unwrap_or_default()
    }

    /// Buffers: the top one (if the file has it) first, then instances.
    pub fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }

    /// The buffer called `name` (`""` for the top buffer).
    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// The raw ring-buffer pages of one CPU of a buffer (decompressed).
    /// Record payloads returned by [`TraceFile::records`] are slices of it,
    /// so an index can keep their offsets and find them again.
    pub fn cpu_data<'s>(&'s self, c: &'s CpuSection) -> &'s [u8] {
        self.cpu_bytes(c)
    }

    /// The raw pages of one CPU of a buffer, at least their first `end`
    /// bytes: [`TraceFile::cpu_data`] without decompressing past `end`
    /// (fewer bytes when a chunk before `end` does not decompress). The
    /// slice starts where `cpu_data`'s does.
    pub fn cpu_data_upto<'s>(&'s self, c: &'s CpuSection, end: usize) -> &'s [u8] {
        match &c.data {
            DataRef::Mapped(r) => &self.bytes[r.clone()],
            DataRef::Lazy(l) => l.upto(&self.bytes, end).unwrap_or_else(|_| l.decoded()),
        }
    }

    /// Gives the mapped pages of `c`'s data back to the kernel, as
    /// [`TraceFile::records`] does while it reads: for readers that come
    /// back to [`TraceFile::cpu_data`] at random, and so would otherwise
    /// keep every page they touched resident. Slices of it stay valid (the
    /// pages are read again from the file, or from the temporary file
    /// compressed data is decoded into; data decoded into memory, where no
    /// temporary file could be made, is not affected).
    pub fn release_cpu_data(&self, c: &CpuSection) {
        match &c.data {
            DataRef::Mapped(r) => self.bytes.give_back(r.clone()),
            DataRef::Lazy(l) => l.release(0..usize::MAX),
        }
    }

    fn cpu_bytes<'s>(&'s self, c: &'s CpuSection) -> &'s [u8] {
        match &c.data {
            DataRef::Mapped(r) => &self.bytes[r.clone()],
            DataRef::Lazy(l) => {
                let d = l.all(&self.bytes);
                // The compressed frames are not read again: give their
                // mapped file pages back once.
                if l.all_once() {
                    self.bytes.give_back(l.extent());
                }
                d
            }
        }
    }

    /// The events of `cpu` in `buffer`, one at a time, holding only about
    /// a page (uncompressed) or a chunk (compressed) of its data in memory;
    /// `None` if the buffer has no such CPU.
    pub fn cpu_cursor<'s>(&'s self, buffer: &'s Buffer, cpu: u32) -> Option<CpuCursor<'s>> {
        let c = buffer.cpus.iter().find(|c| c.cpu == cpu)?;
        let data = match &c.data {
            DataRef::Mapped(r) => cursor::CursorData::Slice(&self.bytes[r.clone()]),
            DataRef::Lazy(l) => {
                let map = match &self.bytes {
                    Bytes::Map(m) => Some(m),
                    Bytes::Vec(_) => None,
                };
                cursor::CursorData::Window(cursor::Window::new(l, &self.bytes, map))
            }
        };
        let s = CpuStream::new(c.cpu, data, buffer.page_size, &buffer.name);
        let s = match (&self.bytes, &c.data) {
            (Bytes::Map(m), DataRef::Mapped(r)) => s.release_read_pages(m, r.start),
            _ => s,
        };
        Some(CpuCursor::new(s, self.header_page))
    }

    /// Events of `buffer`, all CPUs merged by timestamp.
    pub fn records<'s>(&'s self, buffer: &'s Buffer) -> Records<'s> {
        self.records_of_cpus(buffer, None)
    }

    /// Events of `buffer` on the given CPUs only (`None` = all), merged by
    /// timestamp.
    pub fn records_of_cpus<'s>(&'s self, buffer: &'s Buffer, cpus: Option<&[u32]>) -> Records<'s> {
        let streams = buffer
            .cpus
            .iter()
            .filter(|c| cpus.is_none_or(|l| l.contains(&c.cpu)))
            .map(|c| {
                let src = match &c.data {
                    DataRef::Mapped(r) => Source::Slice(&self.bytes[r.clone()]),
                    DataRef::Lazy(l) => Source::Lazy(l, &self.bytes),
                };
                let s = CpuStream::new(c.cpu, src, buffer.page_size, &buffer.name);
                match (&self.bytes, &c.data) {
                    (Bytes::Map(m), DataRef::Mapped(r)) => s.release_read_pages(m, r.start),
                    (Bytes::Map(m), DataRef::Lazy(l)) => s.release_decoded(l, Some(m)),
                    (_, DataRef::Lazy(l)) => s.release_decoded(l, None),
                    _ => s,
                }
            })
            .collect();
        Records::new(streams, self.header_page)
    }
}
