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
use std::sync::OnceLock;

use crate::clock::selected_clock;
use crate::dat::{self, option};
use crate::error::{Error, Result};
use crate::format::EventFormat;
use crate::header::{HeaderEvent, HeaderPage};
use crate::limits::{self, Budget};
use crate::record::Record;
use crate::stats::BufferStats;

mod cursor;
mod lazy;
mod records;

pub use cursor::CpuCursor;
use lazy::LazyData;
pub use records::Records;
use records::{CpuStream, Source};

/// Largest metadata section or chunk we agree to decompress (1 GiB).
const MAX_UNCOMPRESSED: usize = 1 << 30;

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

/// All event formats of a file, with lookups by id and by name.
///
/// Formats are parsed on first use: opening a file only reads each
/// format's `name:` and `ID:` lines, and [`EventFormat::parse`] runs the
/// first time a format is asked for (a file holds every event of the system,
/// about 2,300 formats, of which a trace uses a few). A format whose fields
/// cannot be parsed is then treated as absent (`None`, left out of
/// [`Formats::iter`]); [`Formats::check`] reports it.
#[derive(Debug, Default)]
pub struct Formats {
    ftrace_texts: Vec<Vec<u8>>,
    event_texts: Vec<(String, Vec<Vec<u8>>)>,
    list: Vec<Slot>,
    /// Index into `list` by event id, `u32::MAX` for none (ids are 16-bit,
    /// so a table beats hashing on the per-event path).
    by_id: Vec<u32>,
    long_size: usize,
    /// The formats without a usable `name:` or `ID:` line, left out:
    /// (index into `event_texts` or `None` for ftrace, index of the text).
    unusable: Vec<(Option<u32>, u32)>,
}

/// One format: what open reads, and the full parse once done.
#[derive(Debug)]
struct Slot {
    id: u16,
    name: String,
    /// Index into `event_texts`, or `None` for the ftrace formats.
    system: Option<u32>,
    /// Index of the text within its system.
    text: u32,
    parsed: OnceLock<Option<EventFormat>>,
}

impl Formats {
    /// Reads the name and id of every format and keeps the texts. A format
    /// without a usable `name:` or `ID:` line is left out (its events, if
    /// any, are unknown), as trace-cmd skips the formats it cannot parse:
    /// one corrupt format of an event absent from the data must not make
    /// the file unreadable. [`Formats::check`] reports it.
    fn new(
        ftrace_texts: Vec<Vec<u8>>,
        event_texts: Vec<(String, Vec<Vec<u8>>)>,
        long_size: usize,
    ) -> Result<Formats> {
        let mut f = Formats {
            by_id: vec![u32::MAX; 1 << 16],
            long_size,
            ..Formats::default()
        };
        let mut list = Vec::new();
        for (i, t) in ftrace_texts.iter().enumerate() {
            let (name, id) = match crate::format::name_and_id("ftrace", &String::from_utf8_lossy(t))
            {
                Ok(v) => v,
                Err(_) => {
                    f.unusable.push((None, i as u32));
                    continue;
                }
            };
            list.push(Slot {
                id,
                name,
                system: None,
                text: i as u32,
                parsed: OnceLock::new(),
            });
        }
        for (si, (sys, texts)) in event_texts.iter().enumerate() {
            for (i, t) in texts.iter().enumerate() {
                let (name, id) = match crate::format::name_and_id(sys, &String::from_utf8_lossy(t))
                {
                    Ok(v) => v,
                    Err(_) => {
                        f.unusable.push((Some(si as u32), i as u32));
                        continue;
                    }
                };
                list.push(Slot {
                    id,
                    name,
                    system: Some(si as u32),
                    text: i as u32,
                    parsed: OnceLock::new(),
                });
            }
        }
        for (i, s) in list.iter().enumerate() {
            f.by_id[s.id as usize] = i as u32;
        }
        f.list = list;
        f.ftrace_texts = ftrace_texts;
        f.event_texts = event_texts;
        Ok(f)
    }

    fn system(&self, s: &Slot) -> &str {
        s.system
            .map_or("ftrace", |i| &self.event_texts[i as usize].0)
    }

    fn text(&self, s: &Slot) -> &[u8] {
        match s.system {
            None => &self.ftrace_texts[s.text as usize],
            Some(i) => &self.event_texts[i as usize].1[s.text as usize],
        }
    }

    fn parse_slot(&self, s: &Slot) -> Result<EventFormat> {
        let text = self.text(s);
        let mut f = EventFormat::parse(self.system(s), &String::from_utf8_lossy(text))?;
        f.long_size = self.long_size;
        Ok(f)
    }

    fn get<'a>(&'a self, s: &'a Slot) -> Option<&'a EventFormat> {
        s.parsed.get_or_init(|| self.parse_slot(s).ok()).as_ref()
    }

    /// The format of event `id` (`common_type`).
    pub fn by_id(&self, id: u16) -> Option<&EventFormat> {
        let i = *self.by_id.get(id as usize)?;
        self.list.get(i as usize).and_then(|s| self.get(s))
    }

    /// The system and raw text of the format of event `id`, without
    /// parsing it (e.g. to hand it to libtraceevent on first use).
    pub fn text_by_id(&self, id: u16) -> Option<(&str, &[u8])> {
        let i = *self.by_id.get(id as usize)?;
        let s = self.list.get(i as usize)?;
        Some((self.system(s), self.text(s)))
    }

    /// The ids of all formats, in file order (ftrace first), without
    /// parsing them.
    pub fn ids(&self) -> impl Iterator<Item = u16> + '_ {
        self.list.iter().map(|s| s.id)
    }

    /// The format of `system:name`.
    pub fn by_name(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.list
            .iter()
            .find(|s| s.name == name && self.system(s) == system)
            .and_then(|s| self.get(s))
    }

    /// The format of a record.
    pub fn of(&self, r: &Record<'_>) -> Option<&EventFormat> {
        r.common_type().and_then(|id| self.by_id(id))
    }

    /// All formats, in file order (ftrace first). Parses every format not
    /// parsed yet; formats that do not parse are left out.
    pub fn iter(&self) -> impl Iterator<Item = &EventFormat> {
        self.list.iter().filter_map(|s| self.get(s))
    }

    /// Parses every format and returns the first error, if any (open only
    /// checks the `name:` and `ID:` lines).
    pub fn check(&self) -> Result<()> {
        if let Some(&(system, text)) = self.unusable.first() {
            let s = Slot {
                id: 0,
                name: String::new(),
                system,
                text,
                parsed: OnceLock::new(),
            };
            let system = self.system(&s);
            let text = String::from_utf8_lossy(self.text(&s));
            return crate::format::name_and_id(system, &text).map(|_| ());
        }
        for s in &self.list {
            if self.get(s).is_none() {
                return self.parse_slot(s).map(|_| ());
            }
        }
        Ok(())
    }

    /// Number of formats.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True if there are no formats.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
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
    kallsyms: Vec<u8>,
    printk_formats: Vec<u8>,
    cmdlines: Vec<u8>,
    cpu_count: u32,
    options: Vec<RawOption>,
    buffers: Vec<Buffer>,
}

/// A bounds-checked little-endian cursor over a byte slice.
struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
    /// Offset of `b` in the file, for error messages.
    base: u64,
    what: &'static str,
}

impl<'a> Cur<'a> {
    fn new(b: &'a [u8], base: u64, what: &'static str) -> Self {
        Cur {
            b,
            pos: 0,
            base,
            what,
        }
    }

    fn err(&self, msg: String) -> Error {
        Error::corrupt(msg)
            .context(self.what)
            .at(self.base + self.pos as u64)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        match self.pos.checked_add(n).filter(|&e| e <= self.b.len()) {
            Some(end) => {
                let s = &self.b[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.err(format!(
                "expected {n} bytes, only {} left",
                self.b.len().saturating_sub(self.pos)
            ))),
        }
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        let s = self.take(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Result<u32> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64> {
        let s = self.take(8)?;
        Ok(u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }
    fn cstr(&mut self) -> Result<&'a str> {
        let rest = &self.b[self.pos.min(self.b.len())..];
        let Some(n) = rest.iter().position(|&c| c == 0) else {
            return Err(self.err("unterminated string".into()));
        };
        let s =
            std::str::from_utf8(&rest[..n]).map_err(|_| self.err("string is not UTF-8".into()))?;
        self.pos += n + 1;
        Ok(s)
    }
    fn len_u64(&mut self) -> Result<usize> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| self.err(format!("size {v} too large")))
    }
    fn seek(&mut self, off: u64) -> Result<()> {
        let o = off
            .checked_sub(self.base)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| o <= self.b.len())
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "offset {off:#x} is outside the file ({} bytes)",
                    self.b.len()
                ))
                .context(self.what)
            })?;
        self.pos = o;
        Ok(())
    }
}

fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Codec {
    None,
    Zlib,
    Zstd,
}

fn decompress(codec: Codec, input: &[u8], usize_: usize, budget: &Budget) -> Result<Vec<u8>> {
    limits::check_ratio(input.len(), usize_)?;
    budget.take(usize_)?;
    if usize_ > MAX_UNCOMPRESSED {
        return Err(Error::corrupt(format!(
            "uncompressed size {usize_} is over the {MAX_UNCOMPRESSED} byte limit"
        )));
    }
    let mut out = Vec::new();
    out.try_reserve_exact(usize_)
        .map_err(|_| Error::corrupt(format!("cannot allocate {usize_} bytes")))?;
    out.resize(usize_, 0);
    ChunkDecoder::new(codec)?.fill(input, &mut out)?;
    Ok(out)
}

/// Result of parsing the metadata blocks (shared by v6 and v7).
#[derive(Default)]
struct Meta {
    header_page: Vec<u8>,
    header_event: Vec<u8>,
    ftrace: Vec<Vec<u8>>,
    events: Vec<(String, Vec<Vec<u8>>)>,
    kallsyms: Vec<u8>,
    printk: Vec<u8>,
    cmdlines: Vec<u8>,
}

fn parse_header_info(c: &mut Cur<'_>, m: &mut Meta) -> Result<()> {
    if c.take(dat::HEADER_PAGE.len())? != dat::HEADER_PAGE {
        return Err(c.err("missing \"header_page\" marker".into()));
    }
    let n = c.len_u64()?;
    m.header_page = c.take(n)?.to_vec();
    if c.take(dat::HEADER_EVENT.len())? != dat::HEADER_EVENT {
        return Err(c.err("missing \"header_event\" marker".into()));
    }
    let n = c.len_u64()?;
    m.header_event = c.take(n)?.to_vec();
    Ok(())
}

fn parse_ftrace_events(c: &mut Cur<'_>, m: &mut Meta) -> Result<()> {
    let count = c.u32()?;
    for _ in 0..count {
        let n = c.len_u64()?;
        m.ftrace.push(c.take(n)?.to_vec());
    }
    Ok(())
}

fn parse_event_formats(c: &mut Cur<'_>, m: &mut Meta) -> Result<()> {
    let systems = c.u32()?;
    for _ in 0..systems {
        let name = c.cstr()?.to_string();
        let count = c.u32()?;
        let mut v = Vec::new();
        for _ in 0..count {
            let n = c.len_u64()?;
            v.push(c.take(n)?.to_vec());
        }
        m.events.push((name, v));
    }
    Ok(())
}

fn parse_u32_blob(c: &mut Cur<'_>) -> Result<Vec<u8>> {
    let n = c.u32()? as usize;
    Ok(c.take(n)?.to_vec())
}

fn parse_u64_blob(c: &mut Cur<'_>) -> Result<Vec<u8>> {
    let n = c.len_u64()?;
    Ok(c.take(n)?.to_vec())
}

/// The body of a v7 CMDLINES section: a u64 size, then `saved_cmdlines`.
///
/// trace-cmd 3.1.6 writes the size from one read of `saved_cmdlines` and
/// the contents from a second read; when the kernel's list changes in
/// between (any process that gets traced meanwhile), the size is wrong
/// (it warns "error in size of file" and still exits 0). The section's own
/// framing is right, so the contents are what the section holds, and no
/// more than the announced size (trace-cmd reads no further).
fn parse_cmdlines_section(c: &mut Cur<'_>) -> Result<Vec<u8>> {
    let n = c.len_u64()?;
    let left = c.b.len().saturating_sub(c.pos);
    Ok(c.take(n.min(left))?.to_vec())
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
            let first = c.u64()?;
            // The chunk tables of compressed data are read at open: their
            // pages (and, by the kernel's fault-around, their neighbours)
            // are given back as the tables are read.
            let release = |r: Range<usize>| {
                if let Bytes::Map(m) = &bytes {
                    records::dont_need(m, r.start, r.len());
                }
            };
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
            printk_formats: meta.printk,
            cmdlines: meta.cmdlines,
            cpu_count,
            options,
            buffers,
        })
    }

    fn parse_v6(
        c: &mut Cur<'_>,
        m: &mut Meta,
        options: &mut Vec<RawOption>,
        cpu_count: &mut u32,
        buffers: &mut Vec<Buffer>,
        page_size: usize,
    ) -> Result<()> {
        c.what = "header info";
        parse_header_info(c, m)?;
        c.what = "ftrace event formats";
        parse_ftrace_events(c, m)?;
        c.what = "event formats";
        parse_event_formats(c, m)?;
        c.what = "kallsyms";
        m.kallsyms = parse_u32_blob(c)?;
        c.what = "printk formats";
        m.printk = parse_u32_blob(c)?;
        c.what = "saved cmdlines";
        m.cmdlines = parse_u64_blob(c)?;
        c.what = "cpu count";
        *cpu_count = c.u32()?;
        limits::check_cpus("CPU count", u64::from(*cpu_count))
            .map_err(|e| e.context("file header"))?;
        let cpus = *cpu_count as usize;
        let mut marker = c.take(10)?;
        let mut buffer_opts = Vec::new();
        if marker == dat::V6_OPTIONS {
            c.what = "options";
            loop {
                let id = c.u16()?;
                if id == option::DONE {
                    break;
                }
                let n = c.u32()? as usize;
                let data = c.take(n)?.to_vec();
                if id == option::BUFFER {
                    buffer_opts.push(data.clone());
                }
                options.push(RawOption { id, data });
            }
            c.what = "data marker";
            marker = c.take(10)?;
        }
        if marker == dat::V6_LATENCY {
            return Err(Error::unsupported("latency (text) trace data").context("data marker"));
        }
        if marker != dat::V6_FLYRECORD {
            return Err(c.err("expected \"flyrecord\"".into()));
        }
        let clock = options
            .iter()
            .find(|o| o.id == option::TRACECLOCK)
            .map(|o| selected_clock(&text(&o.data)));
        let b = c.b;
        let read_table = |c: &mut Cur<'_>, name: String| -> Result<Buffer> {
            let mut list = Vec::new();
            for cpu in 0..cpus {
                let off = c.u64()?;
                let size = c.u64()?;
                let r = mapped_range(b, off, size).map_err(|e| e.context(format!("cpu {cpu}")))?;
                list.push(CpuSection {
                    cpu: cpu as u32,
                    file_offset: off,
                    file_size: size,
                    data: DataRef::Mapped(r),
                });
            }
            Ok(Buffer {
                name,
                clock: clock.clone(),
                page_size,
                cpus: list,
            })
        };
        c.what = "flyrecord";
        buffers.push(read_table(c, String::new())?);
        for data in buffer_opts {
            let mut oc = Cur::new(&data, 0, "BUFFER option");
            let off = oc.u64()?;
            let name = oc.cstr()?.to_string();
            let mut tc = Cur::new(b, 0, "buffer flyrecord");
            tc.seek(off)?;
            // The offset points at a "flyrecord" marker before the CPU table.
            if tc.b.get(tc.pos..tc.pos + 10) == Some(dat::V6_FLYRECORD) {
                tc.pos += 10;
            }
            let buf = read_table(&mut tc, name.clone())
                .map_err(|e| e.context(format!("buffer {name:?}")))?;
            buffers.push(buf);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn parse_v7(
        b: &[u8],
        release: &dyn Fn(Range<usize>),
        codec: Codec,
        first: u64,
        page_size: usize,
        m: &mut Meta,
        options: &mut Vec<RawOption>,
        cpu_count: &mut u32,
        buffers: &mut Vec<Buffer>,
    ) -> Result<()> {
        let budget = Budget::of_machine();
        // Read a section at `off`: returns (id, payload).
        let section = |off: u64, what: &'static str| -> Result<(u16, Vec<u8>)> {
            let mut c = Cur::new(b, 0, what);
            c.seek(off)?;
            let id = c.u16()?;
            let flags = c.u16()?;
            let _desc = c.u32()?;
            let size = c.len_u64()?;
            let payload = c.take(size)?;
            if flags & dat::SECTION_FLAG_COMPRESSED != 0 {
                let mut pc = Cur::new(payload, off + 16, what);
                let csize = pc.u32()? as usize;
                let usize_ = pc.u32()? as usize;
                let data = pc.take(csize)?;
                let out = decompress(codec, data, usize_, &budget)
                    .map_err(|e| e.context(what).at(off))?;
                Ok((id, out))
            } else {
                Ok((id, payload.to_vec()))
            }
        };
        let mut next = first;
        let mut seen = Vec::new();
        let mut buffer_opts: Vec<Vec<u8>> = Vec::new();
        while next != 0 {
            if seen.contains(&next) || seen.len() > 10_000 {
                return Err(Error::corrupt(format!(
                    "options sections loop at {next:#x}"
                )));
            }
            seen.push(next);
            let (id, payload) = section(next, "options section")?;
            if id != dat::section::OPTIONS {
                return Err(
                    Error::corrupt(format!("section id {id}, expected options (0)"))
                        .context("options section")
                        .at(next),
                );
            }
            let mut c = Cur::new(&payload, 0, "options section");
            next = 0;
            loop {
                let id = c.u16()?;
                let n = c.u32()? as usize;
                let data = c.take(n)?;
                if id == option::DONE {
                    if let Ok(n) = Cur::new(data, 0, "DONE option").u64() {
                        next = n;
                    }
                    break;
                }
                let what = match id {
                    option::HEADER_INFO => Some("HEADER_INFO section"),
                    option::FTRACE_EVENTS => Some("FTRACE_EVENTS section"),
                    option::EVENT_FORMATS => Some("EVENT_FORMATS section"),
                    option::KALLSYMS => Some("KALLSYMS section"),
                    option::PRINTK => Some("PRINTK section"),
                    option::CMDLINES => Some("CMDLINES section"),
                    _ => None,
                };
                if let Some(what) = what {
                    let mut dc = Cur::new(data, 0, what);
                    let off = dc.u64()?;
                    let (sid, body) = section(off, what)?;
                    if sid != id {
                        return Err(Error::corrupt(format!("section id {sid}, expected {id}"))
                            .context(what)
                            .at(off));
                    }
                    let mut sc = Cur::new(&body, 0, what);
                    match id {
                        option::HEADER_INFO => parse_header_info(&mut sc, m)?,
                        option::FTRACE_EVENTS => parse_ftrace_events(&mut sc, m)?,
                        option::EVENT_FORMATS => parse_event_formats(&mut sc, m)?,
                        option::KALLSYMS => m.kallsyms = parse_u32_blob(&mut sc)?,
                        option::PRINTK => m.printk = parse_u32_blob(&mut sc)?,
                        _ => m.cmdlines = parse_cmdlines_section(&mut sc)?,
                    }
                } else if id == option::BUFFER {
                    buffer_opts.push(data.to_vec());
                }
                options.push(RawOption {
                    id,
                    data: data.to_vec(),
                });
            }
        }
        if let Some(o) = options.iter().find(|o| o.id == option::CPUCOUNT) {
            let mut c = Cur::new(&o.data, 0, "CPUCOUNT option");
            *cpu_count = c.u32()?;
            limits::check_cpus("CPU count", u64::from(*cpu_count))
                .map_err(|e| e.context("CPUCOUNT option"))?;
        }
        for data in buffer_opts {
            buffers.push(Self::parse_v7_buffer(
                b, release, codec, &data, page_size, &budget,
            )?);
        }
        // The top buffer first, then instances in file order, like trace-cmd.
        buffers.sort_by_key(|b| !b.name.is_empty());
        Ok(())
    }

    fn parse_v7_buffer(
        b: &[u8],
        release: &dyn Fn(Range<usize>),
        codec: Codec,
        data: &[u8],
        page_size: usize,
        budget: &Budget,
    ) -> Result<Buffer> {
        let mut c = Cur::new(data, 0, "BUFFER option");
        let _section = c.u64()?;
        let name = c.cstr()?.to_string();
        let clock = c.cstr()?.to_string();
        // Newer trace-cmd stores the sub-buffer size before the CPU count.
        let rest = data.len() - c.pos;
        let mut psize = page_size;
        let count = {
            let mut p = Cur::new(data, 0, "BUFFER option");
            p.pos = c.pos;
            let a = p.u32()? as usize;
            if rest == 4 + a * 20 {
                c.pos += 4;
                a
            } else {
                psize = a;
                c.pos += 4;
                c.u32()? as usize
            }
        };
        let ctx = |e: Error| e.context(format!("buffer {name:?}"));
        if !(64..=(1 << 24)).contains(&psize) {
            return Err(ctx(c.err(format!("page size {psize} is not plausible"))));
        }
        limits::check_cpus("CPU count", count as u64).map_err(ctx)?;
        if count > 1 << 16 {
            return Err(ctx(c.err(format!("CPU count {count} is not plausible"))));
        }
        let mut cpus = Vec::with_capacity(count);
        for _ in 0..count {
            let cpu = c.u32().map_err(ctx)?;
            limits::check_cpus("CPU number + 1", u64::from(cpu) + 1).map_err(ctx)?;
            let off = c.u64().map_err(ctx)?;
            let size = c.u64().map_err(ctx)?;
            let cctx = |e: Error| e.context(format!("buffer {name:?} cpu {cpu}"));
            let data = if codec == Codec::None || size == 0 {
                DataRef::Mapped(mapped_range(b, off, size).map_err(cctx)?)
            } else {
                // trace-cmd's size leaves out the u32 chunk count in front.
                DataRef::Lazy(LazyData::new(codec, b, off, size, budget, release).map_err(cctx)?)
            };
            cpus.push(CpuSection {
                cpu,
                file_offset: off,
                file_size: size,
                data,
            });
        }
        cpus.sort_by_key(|c| c.cpu);
        Ok(Buffer {
            name,
            clock: Some(clock),
            page_size: psize,
            cpus,
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

    /// Raw `/proc/kallsyms` contents.
    pub fn kallsyms(&self) -> &[u8] {
        &self.kallsyms
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
        match (&self.bytes, &c.data) {
            (Bytes::Map(m), DataRef::Mapped(r)) => records::dont_need(m, r.start, r.len()),
            (_, DataRef::Lazy(l)) => l.release(0..usize::MAX),
            _ => {}
        }
    }

    fn cpu_bytes<'s>(&'s self, c: &'s CpuSection) -> &'s [u8] {
        match &c.data {
            DataRef::Mapped(r) => &self.bytes[r.clone()],
            DataRef::Lazy(l) => {
                let d = l.all(&self.bytes);
                // The compressed frames are not read again: give their
                // mapped file pages back once.
                if let (Bytes::Map(m), true) = (&self.bytes, l.all_once()) {
                    let r = l.extent();
                    records::dont_need(m, r.start, r.len());
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

fn mapped_range(b: &[u8], off: u64, size: u64) -> Result<Range<usize>> {
    let end = off.checked_add(size);
    match end {
        Some(e) if e <= b.len() as u64 => Ok(off as usize..e as usize),
        _ => Err(Error::corrupt(format!(
            "data at {off:#x} of {size} bytes runs past the end of the file ({} bytes)",
            b.len()
        ))),
    }
}

/// One decompressor context, reused for all the chunks of a CPU.
enum ChunkDecoder {
    Zstd(zstd::bulk::Decompressor<'static>),
    Zlib(flate2::Decompress),
}

impl ChunkDecoder {
    fn new(codec: Codec) -> Result<ChunkDecoder> {
        match codec {
            Codec::None => Err(Error::corrupt("compressed data in an uncompressed file")),
            Codec::Zstd => zstd::bulk::Decompressor::new()
                .map(ChunkDecoder::Zstd)
                .map_err(|e| Error::decompress(format!("zstd: {e}"))),
            Codec::Zlib => Ok(ChunkDecoder::Zlib(flate2::Decompress::new(true))),
        }
    }

    /// Decompresses `input` (one whole frame or zlib stream) into `out`,
    /// which it must fill exactly.
    fn fill(&mut self, input: &[u8], out: &mut [u8]) -> Result<()> {
        let want = out.len();
        let got = match self {
            ChunkDecoder::Zstd(d) => d
                .decompress_to_buffer(input, out)
                .map_err(|e| Error::decompress(format!("zstd: {e}")))?,
            ChunkDecoder::Zlib(d) => {
                d.reset(true);
                loop {
                    let before = (d.total_in(), d.total_out());
                    let (i, o) = (d.total_in() as usize, d.total_out() as usize);
                    let status = d
                        .decompress(&input[i..], &mut out[o..], flate2::FlushDecompress::Finish)
                        .map_err(|e| Error::decompress(format!("zlib: {e}")))?;
                    match status {
                        flate2::Status::StreamEnd => break d.total_out() as usize,
                        _ if (d.total_in(), d.total_out()) == before => {
                            if d.total_out() as usize == want {
                                return Err(Error::decompress(format!(
                                    "more than the {want} bytes the header says"
                                )));
                            }
                            return Err(Error::decompress("zlib: stream ends early"));
                        }
                        _ => {}
                    }
                }
            }
        };
        if got != want {
            return Err(Error::decompress(format!(
                "got {got} bytes, header says {want}"
            )));
        }
        Ok(())
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

    fn fmt_text(name: &str, id: u32, field: &str) -> Vec<u8> {
        format!(
            "name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\t{field}\n\nprint fmt: \"x\"\n"
        )
        .into_bytes()
    }

    #[test]
    fn formats_parse_on_first_use() {
        let good = "field:int a;\toffset:8;\tsize:4;\tsigned:1;";
        let f = Formats::new(
            vec![fmt_text("fn", 1, good)],
            vec![(
                "sched".to_string(),
                vec![
                    fmt_text("one", 300, good),
                    fmt_text("bad", 301, "field:int b;\toffset:x;"),
                ],
            )],
            4,
        )
        .unwrap();
        assert_eq!(f.len(), 3);
        assert!(f.list.iter().all(|s| s.parsed.get().is_none()));
        let one = f.by_id(300).unwrap();
        assert_eq!(
            (one.system.as_str(), one.name.as_str(), one.long_size),
            ("sched", "one", 4)
        );
        assert_eq!(one.fields.len(), 2);
        assert_eq!(one.fields[1].name, "a");
        // Only that one was parsed.
        assert_eq!(
            f.list.iter().filter(|s| s.parsed.get().is_some()).count(),
            1
        );
        assert_eq!(f.by_name("ftrace", "fn").unwrap().id, 1);
        assert!(f.by_name("sched", "fn").is_none());
        assert!(f.by_id(2).is_none());
        assert_eq!(
            f.text_by_id(301),
            Some((
                "sched",
                &fmt_text("bad", 301, "field:int b;\toffset:x;")[..]
            ))
        );
        assert_eq!(f.text_by_id(1).unwrap().0, "ftrace");
        assert!(f.text_by_id(2).is_none());
        assert_eq!(f.ids().collect::<Vec<_>>(), [1, 300, 301]);
        // A format whose fields do not parse is absent, and check says why.
        assert!(f.by_id(301).is_none());
        assert_eq!(f.iter().map(|e| e.id).collect::<Vec<_>>(), [1, 300]);
        let e = f.check().unwrap_err().to_string();
        assert!(e.contains("offset"), "{e}");
        // A bad ID leaves that format out; check says why.
        let f = Formats::new(
            vec![fmt_text("fn", 70000, good), fmt_text("ok", 5, good)],
            Vec::new(),
            8,
        )
        .unwrap();
        assert_eq!(f.ids().collect::<Vec<_>>(), [5]);
        let e = f.check().unwrap_err().to_string();
        assert!(e.contains("ID 70000 does not fit in 16 bits"), "{e}");
    }
}
