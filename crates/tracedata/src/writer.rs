//! Writes trace.dat files that trace-cmd reads: version 7 (sections and
//! options, uncompressed or zstd) by default, version 6 on request.
//!
//! The caller collects the metadata from tracefs into a [`TraceMeta`], lists
//! the per-CPU page files written by the recorder in [`BufferData`]s (one per
//! buffer: the top buffer has the name `""`, instances their own name) and
//! calls [`write_trace_dat`] (or uses the [`TraceDatWriter`] builder):
//!
//! ```no_run
//! use ustack_tracedata::writer::{write_trace_dat, BufferData, CpuData, TraceMeta, WriteOptions};
//! # fn main() -> ustack_tracedata::Result<()> {
//! let meta = TraceMeta {
//!     page_size: 4096,
//!     cpu_count: 2,
//!     header_page: std::fs::read("/sys/kernel/tracing/events/header_page").unwrap(),
//!     // ... header_event, formats, kallsyms, printk, cmdlines, uname ...
//!     ..TraceMeta::default()
//! };
//! let buffers = [BufferData {
//!     name: "ustack".into(),
//!     clock: "local".into(),
//!     cpus: (0..2)
//!         .map(|cpu| CpuData::new(cpu, format!("/tmp/rec.cpu{cpu}")))
//!         .collect(),
//! }];
//! let summary = write_trace_dat("trace.dat".as_ref(), &meta, &buffers, &WriteOptions::default())?;
//! println!("{} bytes", summary.file_size);
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! Both versions start with the magic, `"tracing"`, the version string, the
//! endianness byte, the user-space long size and the page size. All numbers
//! are written in host byte order and the endianness byte says which.
//!
//! **Version 7** (trace-cmd.dat.v7(5)): the compression header, the offset of
//! the first options section, then sections, each with a 16-byte header
//! (`u16 id, u16 flags, u32 description string, u64 size`), back to back so a
//! reader can walk them by size:
//!
//! 1. HEADER_INFO, FTRACE_EVENTS, EVENT_FORMATS, KALLSYMS, PRINTK, CMDLINES
//!    (each one compressed block when zstd is used);
//! 2. one BUFFER section per buffer (a top buffer with no CPUs is added when
//!    the caller gives only instances, as trace-cmd does): header, zero
//!    padding to a page boundary, then each CPU's data at a page-aligned
//!    offset, copied as is, or as zstd chunks of ten pages;
//! 3. one OPTIONS section: the offsets of the sections of step 1, TRACECLOCK,
//!    UNAME, VERSION, TRACEID, CPUSTAT (per buffer and CPU), PROCMAPS (one per
//!    process), CPUCOUNT, one BUFFER option per buffer, and DONE (next = 0);
//! 4. the STRINGS section holding the section descriptions.
//!
//! **Version 6** (trace-cmd.dat.v6(5)): the same metadata in a fixed order,
//! the CPU count, `"options  \0"` with the same options (BUFFER holds only an
//! offset and a name and is listed for instances), a `"flyrecord\0"` table of
//! `(u64 offset, u64 size)` for every CPU of the top buffer followed by the
//! `[clock]` text, the same for each instance, and then the page data.
//!
//! Page data is never held in memory: uncompressed data moves from the
//! recorder's files with `copy_file_range` (through [`std::io::copy`]),
//! compressed data is read one chunk (10 pages) at a time.
//!
//! A view of a recording that is still running refreshes its file about
//! once a second: [`GrowingTraceDat`] is an uncompressed v7 file laid out
//! so that each refresh appends the new pages and rewrites only the
//! options and command names, instead of writing everything again.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::compress::{self, Compression};
use crate::dat::{self, option};
use crate::error::{Error, ErrorKind, Result};

mod growing;
mod v6;
mod v7;

pub use growing::{GrowingTraceDat, Growth};

use v6::write_v6;
use v7::write_v7;

/// The event formats of one event system (a directory under `events/`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventSystem {
    /// The system name, e.g. `sched`. Must not be `ftrace`: those formats go
    /// in [`TraceMeta::ftrace_formats`].
    pub name: String,
    /// The contents of `events/<system>/<event>/format`, one per event.
    pub formats: Vec<Vec<u8>>,
}

pub use crate::procmaps::{LibMap, ProcMap};

/// Everything in a trace.dat file except the page data.
///
/// Raw file contents are kept as bytes, exactly as read from tracefs/procfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceMeta {
    /// Ring-buffer page size (the system page size), e.g. 4096.
    pub page_size: u32,
    /// Size of a user-space `long`: 8 on 64-bit, 4 on 32-bit.
    pub long_size: u8,
    /// Contents of `events/header_page`.
    pub header_page: Vec<u8>,
    /// Contents of `events/header_event`.
    pub header_event: Vec<u8>,
    /// Contents of each `events/ftrace/<event>/format` (print, bprint,
    /// kernel_stack, user_stack, ...).
    pub ftrace_formats: Vec<Vec<u8>>,
    /// The formats of the other events, grouped by system.
    pub event_systems: Vec<EventSystem>,
    /// Contents of `/proc/kallsyms`.
    pub kallsyms: Vec<u8>,
    /// Contents of `printk_formats`.
    pub printk_formats: Vec<u8>,
    /// Contents of `saved_cmdlines`.
    pub cmdlines: Vec<u8>,
    /// `uname -a`-like text for the UNAME option, e.g.
    /// `"Linux host 6.18.0 #1 SMP x86_64"`. Not written when `None`.
    pub uname: Option<String>,
    /// Contents of the `trace_clock` file (`"[local] global ..."`), written
    /// as the TRACECLOCK option. When `None`, `"[<clock>]"` of the first
    /// buffer is written instead.
    pub trace_clock: Option<String>,
    /// Text of the VERSION option; defaults to `ustack-tracedata <version>`.
    pub version: Option<String>,
    /// Number of CPUs of the traced system (CPUCOUNT option; v6: the size of
    /// every buffer's per-CPU table). Every [`CpuData::cpu`] must be below it.
    pub cpu_count: u32,
    /// Memory maps of processes seen with user stacks (PROCMAPS options).
    pub procmaps: Vec<ProcMap>,
    /// Identifier of the tracing session (TRACEID option), if any.
    pub trace_id: Option<u64>,
}

impl Default for TraceMeta {
    fn default() -> Self {
        TraceMeta {
            page_size: 4096,
            long_size: std::mem::size_of::<std::ffi::c_long>() as u8,
            header_page: Vec::new(),
            header_event: Vec::new(),
            ftrace_formats: Vec::new(),
            event_systems: Vec::new(),
            kallsyms: Vec::new(),
            printk_formats: Vec::new(),
            cmdlines: Vec::new(),
            uname: None,
            trace_clock: None,
            version: None,
            cpu_count: 0,
            procmaps: Vec::new(),
            trace_id: None,
        }
    }
}

/// One CPU's recorded data: a file of whole ring-buffer pages, as read from
/// `per_cpu/cpuN/trace_pipe_raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuData {
    /// The CPU number.
    pub cpu: u32,
    /// The file with the pages. A missing or empty file means no data.
    pub path: PathBuf,
    /// Contents of `per_cpu/cpuN/stats` taken at the end of the recording
    /// (CPUSTAT option). Not written when `None`.
    pub stats: Option<String>,
}

impl CpuData {
    /// Data of `cpu` in `path`, without stats.
    pub fn new(cpu: u32, path: impl Into<PathBuf>) -> CpuData {
        CpuData {
            cpu,
            path: path.into(),
            stats: None,
        }
    }
}

/// The recorded data of one buffer: the top buffer (`name == ""`) or an
/// instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferData {
    /// `""` for the top buffer, else the instance name.
    pub name: String,
    /// The clock of the buffer, the bracketed word of its `trace_clock`
    /// file, e.g. `local`.
    pub clock: String,
    /// The per-CPU data files, at most one per CPU.
    pub cpus: Vec<CpuData>,
}

/// trace.dat file version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileVersion {
    /// Version 6: no sections, no compression.
    V6,
    /// Version 7: sections and options, optional compression (default).
    #[default]
    V7,
}

impl FileVersion {
    /// The version number, 6 or 7.
    pub fn number(self) -> u32 {
        match self {
            FileVersion::V6 => dat::VERSION_6,
            FileVersion::V7 => dat::VERSION_7,
        }
    }

    /// The version for a number given on a command line (6 or 7).
    pub fn from_number(n: u32) -> Option<FileVersion> {
        match n {
            6 => Some(FileVersion::V6),
            7 => Some(FileVersion::V7),
            _ => None,
        }
    }
}

/// How to write the file. The default is what trace-cmd writes: version 7
/// with zstd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOptions {
    /// The file version.
    pub version: FileVersion,
    /// The compression (version 7 only; version 6 requires `None`).
    pub compression: Compression,
}

/// What was written for one CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSummary {
    /// The CPU number.
    pub cpu: u32,
    /// Whole pages copied from the data file.
    pub pages: u64,
    /// Bytes at the end of the data file that did not make a whole page and
    /// were left out (0 for a well-formed file).
    pub partial_tail: u64,
    /// File offset of the CPU's data in the trace.dat file.
    pub offset: u64,
    /// Bytes of the CPU's data in the trace.dat file (compressed size when
    /// compressed, counted the way trace-cmd counts it).
    pub stored: u64,
}

/// What was written for one buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferSummary {
    /// The buffer name (`""` for the top buffer).
    pub name: String,
    /// Per CPU, in the order given.
    pub cpus: Vec<CpuSummary>,
}

/// What [`write_trace_dat`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteSummary {
    /// Size of the trace.dat file.
    pub file_size: u64,
    /// Per buffer, in the order given.
    pub buffers: Vec<BufferSummary>,
}

/// Writes `meta` and the page data of `buffers` into a new trace.dat file at
/// `out_path` (replaced if it exists). On error the partial file is removed.
pub fn write_trace_dat(
    out_path: &Path,
    meta: &TraceMeta,
    buffers: &[BufferData],
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    validate(meta, buffers, opts)?;
    let file = File::create(out_path).map_err(|e| Error::io(out_path, e))?;
    let mut out = Out::new(file, out_path);
    let res = match opts.version {
        FileVersion::V7 => write_v7(&mut out, meta, buffers, opts.compression),
        FileVersion::V6 => write_v6(&mut out, meta, buffers),
    }
    .and_then(|summary| {
        out.flush()?;
        Ok(summary)
    });
    match res {
        Ok(buffers) => Ok(WriteSummary {
            file_size: out.pos,
            buffers,
        }),
        Err(e) => {
            drop(out);
            let _ = std::fs::remove_file(out_path);
            Err(e.with_path(out_path))
        }
    }
}

/// Builder form of [`write_trace_dat`] (the name used in the team's
/// interface contract): collect the metadata, the options and the buffers,
/// then [`write`](TraceDatWriter::write).
#[derive(Debug, Clone, Default)]
pub struct TraceDatWriter {
    meta: TraceMeta,
    opts: WriteOptions,
    buffers: Vec<BufferData>,
}

impl TraceDatWriter {
    /// A writer for `meta`, with the default options (v7, zstd).
    pub fn new(meta: TraceMeta) -> TraceDatWriter {
        TraceDatWriter {
            meta,
            opts: WriteOptions::default(),
            buffers: Vec::new(),
        }
    }

    /// Sets the file version and compression.
    pub fn options(mut self, opts: WriteOptions) -> TraceDatWriter {
        self.opts = opts;
        self
    }

    /// Adds the data of one buffer (the top one or an instance).
    pub fn buffer(mut self, buffer: BufferData) -> TraceDatWriter {
        self.buffers.push(buffer);
        self
    }

    /// Writes the file, as [`write_trace_dat`] does.
    pub fn write(&self, out_path: &Path) -> Result<WriteSummary> {
        write_trace_dat(out_path, &self.meta, &self.buffers, &self.opts)
    }
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Unsupported(msg.into())).context("trace.dat writer")
}

fn validate(meta: &TraceMeta, buffers: &[BufferData], opts: &WriteOptions) -> Result<()> {
    if !meta.page_size.is_power_of_two() || meta.page_size < 64 {
        return Err(invalid(format!(
            "page size {} is not a power of two >= 64",
            meta.page_size
        )));
    }
    if meta.long_size != 4 && meta.long_size != 8 {
        return Err(invalid(format!(
            "long size {} (want 4 or 8)",
            meta.long_size
        )));
    }
    if opts.version == FileVersion::V6 && opts.compression != Compression::None {
        return Err(invalid(
            "file version 6 cannot be compressed (use version 7)",
        ));
    }
    if meta.event_systems.iter().any(|s| s.name == "ftrace") {
        return Err(invalid(
            "the ftrace system belongs in ftrace_formats, not event_systems",
        ));
    }
    for (i, b) in buffers.iter().enumerate() {
        if buffers[..i].iter().any(|o| o.name == b.name) {
            return Err(invalid(format!("buffer {:?} given twice", b.name)));
        }
        if b.name.contains('\0') || b.clock.contains('\0') || b.clock.is_empty() {
            return Err(invalid(format!(
                "buffer {:?}: bad name or clock {:?}",
                b.name, b.clock
            )));
        }
        for (j, c) in b.cpus.iter().enumerate() {
            if c.cpu >= meta.cpu_count {
                return Err(invalid(format!(
                    "buffer {:?}: cpu {} but cpu_count is {}",
                    b.name, c.cpu, meta.cpu_count
                )));
            }
            if b.cpus[..j].iter().any(|o| o.cpu == c.cpu) {
                return Err(invalid(format!(
                    "buffer {:?}: cpu {} given twice",
                    b.name, c.cpu
                )));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Output file with position tracking and back-patching.

struct Out {
    w: BufWriter<File>,
    pos: u64,
    path: PathBuf,
}

impl Out {
    fn new(file: File, path: &Path) -> Out {
        Out {
            w: BufWriter::with_capacity(1 << 16, file),
            pos: 0,
            path: path.to_path_buf(),
        }
    }

    fn err(&self, e: io::Error) -> Error {
        Error::io(&self.path, e).at(self.pos)
    }

    fn bytes(&mut self, b: &[u8]) -> Result<()> {
        self.w
            .write_all(b)
            .map_err(|e| Error::io(&self.path, e).at(self.pos))?;
        self.pos += b.len() as u64;
        Ok(())
    }

    fn u16(&mut self, v: u16) -> Result<()> {
        self.bytes(&v.to_ne_bytes())
    }

    fn u32(&mut self, v: u32) -> Result<()> {
        self.bytes(&v.to_ne_bytes())
    }

    fn u64(&mut self, v: u64) -> Result<()> {
        self.bytes(&v.to_ne_bytes())
    }

    /// Zero bytes up to the next multiple of `align`.
    fn pad_to(&mut self, align: u64) -> Result<()> {
        let rem = self.pos % align;
        if rem != 0 {
            let zeros = vec![0u8; (align - rem) as usize];
            self.bytes(&zeros)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.w.flush().map_err(|e| self.err(e))
    }

    /// Overwrites bytes already written at `at`.
    fn patch(&mut self, at: u64, b: &[u8]) -> Result<()> {
        self.flush()?;
        self.w
            .get_ref()
            .write_all_at(b, at)
            .map_err(|e| Error::io(&self.path, e).at(at))
    }

    fn patch_u32(&mut self, at: u64, v: u32) -> Result<()> {
        self.patch(at, &v.to_ne_bytes())
    }

    fn patch_u64(&mut self, at: u64, v: u64) -> Result<()> {
        self.patch(at, &v.to_ne_bytes())
    }

    /// Copies `len` bytes of `src` (from its current position) without
    /// passing them through this process when the kernel can avoid it.
    fn copy_from(&mut self, src: &mut File, len: u64, src_path: &Path) -> Result<()> {
        self.flush()?;
        let copied = io::copy(&mut Read::by_ref(src).take(len), self.w.get_mut())
            .map_err(|e| Error::io(src_path, e).context("copying cpu data"))?;
        if copied != len {
            return Err(Error::corrupt(format!(
                "file shrank while copying: {copied} of {len} bytes"
            ))
            .with_path(src_path));
        }
        self.pos += len;
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Metadata payloads (identical in v6 and in the v7 sections).

fn put_u32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_ne_bytes());
}

fn put_u64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_ne_bytes());
}

fn len_u32(len: usize, what: &str) -> Result<u32> {
    compress::to_u32(len, what).map_err(|e| invalid(e.to_string()))
}

/// `"header_page\0"`, u64 size, data, `"header_event\0"`, u64 size, data.
pub(crate) fn header_info_payload(meta: &TraceMeta) -> Vec<u8> {
    let mut v = Vec::with_capacity(64 + meta.header_page.len() + meta.header_event.len());
    v.extend_from_slice(dat::HEADER_PAGE);
    put_u64(&mut v, meta.header_page.len() as u64);
    v.extend_from_slice(&meta.header_page);
    v.extend_from_slice(dat::HEADER_EVENT);
    put_u64(&mut v, meta.header_event.len() as u64);
    v.extend_from_slice(&meta.header_event);
    v
}

/// u32 count, then per format u64 size and the text.
pub(crate) fn ftrace_events_payload(meta: &TraceMeta) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    put_u32(
        &mut v,
        len_u32(meta.ftrace_formats.len(), "ftrace format count")?,
    );
    for f in &meta.ftrace_formats {
        put_u64(&mut v, f.len() as u64);
        v.extend_from_slice(f);
    }
    Ok(v)
}

/// u32 system count, then per system its NUL-terminated name, u32 event
/// count and per event u64 size and the text.
pub(crate) fn event_formats_payload(meta: &TraceMeta) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    put_u32(
        &mut v,
        len_u32(meta.event_systems.len(), "event system count")?,
    );
    for s in &meta.event_systems {
        v.extend_from_slice(s.name.as_bytes());
        v.push(0);
        put_u32(&mut v, len_u32(s.formats.len(), "event count")?);
        for f in &s.formats {
            put_u64(&mut v, f.len() as u64);
            v.extend_from_slice(f);
        }
    }
    Ok(v)
}

/// u32 size + data (kallsyms and printk formats).
fn sized32_payload(data: &[u8], what: &str) -> Result<Vec<u8>> {
    let mut v = Vec::with_capacity(4 + data.len());
    put_u32(&mut v, len_u32(data.len(), what)?);
    v.extend_from_slice(data);
    Ok(v)
}

/// u64 size + data (saved_cmdlines).
fn sized64_payload(data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + data.len());
    put_u64(&mut v, data.len() as u64);
    v.extend_from_slice(data);
    v
}

/// The fixed start of every file up to and including the page size.
pub(crate) fn file_start(meta: &TraceMeta, version: FileVersion) -> Vec<u8> {
    let mut v = Vec::with_capacity(32);
    v.extend_from_slice(&dat::MAGIC);
    v.extend_from_slice(dat::TRACING);
    v.extend_from_slice(version.number().to_string().as_bytes());
    v.push(0);
    v.push(u8::from(cfg!(target_endian = "big")));
    v.push(meta.long_size);
    put_u32(&mut v, meta.page_size);
    v
}

fn cstring(s: &str) -> Vec<u8> {
    let mut v: Vec<u8> = s.bytes().filter(|&b| b != 0).collect();
    v.push(0);
    v
}

/// The options shared by v6 and v7 (everything but the section offsets, the
/// BUFFER options and DONE), as (id, data) in the order trace-cmd writes them.
pub(crate) fn common_options(meta: &TraceMeta, buffers: &[BufferData]) -> Vec<(u16, Vec<u8>)> {
    let mut opts = Vec::new();
    let clock = match &meta.trace_clock {
        Some(c) => c.clone(),
        None => format!(
            "[{}]\n",
            buffers.first().map(|b| b.clock.as_str()).unwrap_or("local")
        ),
    };
    opts.push((option::TRACECLOCK, cstring(&clock)));
    if let Some(u) = &meta.uname {
        opts.push((option::UNAME, cstring(u)));
    }
    let version = meta
        .version
        .clone()
        .unwrap_or_else(|| format!("ustack-tracedata {}", env!("CARGO_PKG_VERSION")));
    opts.push((option::VERSION, cstring(&version)));
    if let Some(id) = meta.trace_id {
        opts.push((option::TRACEID, id.to_ne_bytes().to_vec()));
    }
    // Top buffer stats first, then each instance behind a "Buffer:" line,
    // as trace-cmd writes them.
    let mut ordered: Vec<&BufferData> = buffers.iter().filter(|b| b.name.is_empty()).collect();
    ordered.extend(buffers.iter().filter(|b| !b.name.is_empty()));
    for b in ordered {
        let mut cpus: Vec<&CpuData> = b.cpus.iter().filter(|c| c.stats.is_some()).collect();
        if cpus.is_empty() {
            continue;
        }
        cpus.sort_by_key(|c| c.cpu);
        if !b.name.is_empty() {
            opts.push((
                option::CPUSTAT,
                cstring(&format!("\nBuffer: {}\n\n", b.name)),
            ));
        }
        for c in cpus {
            let stats = c.stats.as_deref().unwrap_or_default();
            opts.push((
                option::CPUSTAT,
                cstring(&format!("CPU: {}\n{}", c.cpu, stats)),
            ));
        }
    }
    for p in &meta.procmaps {
        opts.push((option::PROCMAPS, cstring(&p.to_text())));
    }
    opts.push((option::CPUCOUNT, meta.cpu_count.to_ne_bytes().to_vec()));
    opts
}

/// One option: u16 id, u32 size, data.
fn put_option(v: &mut Vec<u8>, id: u16, data: &[u8]) {
    v.extend_from_slice(&id.to_ne_bytes());
    v.extend_from_slice(&(data.len() as u32).to_ne_bytes());
    v.extend_from_slice(data);
}

/// Opens a CPU data file and returns it with its whole-page length and the
/// partial tail length. A missing file counts as empty.
fn open_cpu(c: &CpuData, page_size: u64) -> Result<(Option<File>, u64, u64)> {
    let f = match File::open(&c.path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((None, 0, 0)),
        Err(e) => return Err(Error::io(&c.path, e).context(format!("cpu {}", c.cpu))),
    };
    let len = f
        .metadata()
        .map_err(|e| Error::io(&c.path, e).context(format!("cpu {}", c.cpu)))?
        .len();
    let whole = len - len % page_size;
    Ok((Some(f), whole, len - whole))
}

#[cfg(test)]
mod tests {
    use super::v7::{section_header, Strings};
    use super::*;

    fn tiny_meta() -> TraceMeta {
        TraceMeta {
            page_size: 4096,
            long_size: 8,
            header_page: b"HP".to_vec(),
            header_event: b"HE!".to_vec(),
            ftrace_formats: vec![b"f1".to_vec()],
            event_systems: vec![EventSystem {
                name: "sched".into(),
                formats: vec![b"ab".to_vec(), b"c".to_vec()],
            }],
            kallsyms: b"K".to_vec(),
            printk_formats: Vec::new(),
            cmdlines: b"1 init\n".to_vec(),
            uname: Some("Linux t".into()),
            trace_clock: None,
            version: Some("v".into()),
            cpu_count: 2,
            procmaps: Vec::new(),
            trace_id: None,
        }
    }

    #[test]
    fn file_start_bytes() {
        let m = tiny_meta();
        let v = file_start(&m, FileVersion::V7);
        let mut want = vec![0x17, 0x08, 0x44];
        want.extend_from_slice(b"tracing7\0");
        want.extend_from_slice(&[0, 8, 0x00, 0x10, 0, 0]);
        assert_eq!(v, want);
        assert_eq!(file_start(&m, FileVersion::V6)[10], b'6');
    }

    #[test]
    fn header_info_bytes() {
        let v = header_info_payload(&tiny_meta());
        let mut want = b"header_page\0".to_vec();
        want.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(b"HP");
        want.extend_from_slice(b"header_event\0");
        want.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(b"HE!");
        assert_eq!(v, want);
    }

    #[test]
    fn event_format_bytes() {
        let m = tiny_meta();
        assert_eq!(
            ftrace_events_payload(&m).unwrap(),
            [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, b'f', b'1']
        );
        let mut want = vec![1, 0, 0, 0];
        want.extend_from_slice(b"sched\0");
        want.extend_from_slice(&[2, 0, 0, 0]);
        want.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0, b'a', b'b']);
        want.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, b'c']);
        assert_eq!(event_formats_payload(&m).unwrap(), want);
        assert_eq!(sized32_payload(b"K", "k").unwrap(), [1, 0, 0, 0, b'K']);
        assert_eq!(sized64_payload(b"").len(), 8);
    }

    #[test]
    fn section_header_bytes() {
        assert_eq!(
            section_header(16, 1, 0x66, 0x1c3),
            [16, 0, 1, 0, 0x66, 0, 0, 0, 0xc3, 1, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn strings_ids_are_offsets() {
        let mut s = Strings::default();
        assert_eq!(s.add("headers"), 0);
        assert_eq!(s.add("ftrace events"), 8);
        assert_eq!(s.add("options"), 22);
        assert_eq!(s.add("options"), 30);
        assert_eq!(s.bytes(), b"headers\0ftrace events\0options\0options\0");
    }

    #[test]
    fn options_in_trace_cmd_order() {
        let mut m = tiny_meta();
        m.procmaps.push(ProcMap {
            pid: 0x1234,
            comm: "my prog".into(),
            maps: vec![LibMap {
                start: 0x5000,
                end: 0x6000,
                path: "/bin/x".into(),
            }],
            threads: vec![],
            replaced: Vec::new(),
            at: None,
        });
        m.trace_id = Some(7);
        let mut stats0 = CpuData::new(0, "/nonexistent");
        stats0.stats = Some("entries: 1\n".into());
        let bufs = [BufferData {
            name: "inst".into(),
            clock: "mono".into(),
            cpus: vec![stats0],
        }];
        let opts = common_options(&m, &bufs);
        let ids: Vec<u16> = opts.iter().map(|o| o.0).collect();
        assert_eq!(
            ids,
            [
                option::TRACECLOCK,
                option::UNAME,
                option::VERSION,
                option::TRACEID,
                option::CPUSTAT,
                option::CPUSTAT,
                option::PROCMAPS,
                option::CPUCOUNT
            ]
        );
        assert_eq!(opts[0].1, b"[mono]\n\0");
        assert_eq!(opts[1].1, b"Linux t\0");
        assert_eq!(opts[3].1, 7u64.to_ne_bytes());
        assert_eq!(opts[4].1, b"\nBuffer: inst\n\n\0");
        assert_eq!(opts[5].1, b"CPU: 0\nentries: 1\n\0");
        assert_eq!(opts[6].1, b"1234 1 my_prog\n5000 6000 /bin/x\n\0");
        assert_eq!(opts[7].1, [2, 0, 0, 0]);
    }

    #[test]
    fn rejects_bad_requests() {
        let dir =
            std::env::temp_dir().join(format!("tracedata-writer-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("x.dat");
        let m = tiny_meta();
        let v6z = WriteOptions {
            version: FileVersion::V6,
            compression: Compression::Zstd,
        };
        let e = write_trace_dat(&out, &m, &[], &v6z)
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 6 cannot be compressed"), "{e}");
        let bad_cpu = [BufferData {
            name: String::new(),
            clock: "local".into(),
            cpus: vec![CpuData::new(5, dir.join("nope"))],
        }];
        let e = write_trace_dat(&out, &m, &bad_cpu, &WriteOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cpu 5 but cpu_count is 2"), "{e}");
        assert!(!out.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn builder_writes_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("tracedata-writer-b-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("cpu0");
        std::fs::write(&data, vec![7u8; 8192]).unwrap();
        let buf = BufferData {
            name: String::new(),
            clock: "local".into(),
            cpus: vec![CpuData::new(0, &data)],
        };
        for opts in [
            WriteOptions::default(),
            WriteOptions {
                version: FileVersion::V6,
                compression: Compression::None,
            },
        ] {
            let a = dir.join("a.dat");
            let b = dir.join("b.dat");
            write_trace_dat(&a, &tiny_meta(), std::slice::from_ref(&buf), &opts).unwrap();
            let s = TraceDatWriter::new(tiny_meta())
                .options(opts)
                .buffer(buf.clone())
                .write(&b)
                .unwrap();
            assert_eq!(s.buffers[0].cpus[0].pages, 2);
            assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A complete v6 file with one instance of one page, byte for byte.
    #[test]
    fn v6_file_bytes() {
        let dir = std::env::temp_dir().join(format!("tracedata-writer-v6-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let page: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
        let data = dir.join("cpu1");
        std::fs::write(&data, &page).unwrap();
        let out = dir.join("v6.dat");
        let mut m = tiny_meta();
        m.uname = None;
        let bufs = [BufferData {
            name: "in".into(),
            clock: "global".into(),
            cpus: vec![CpuData::new(1, &data)],
        }];
        let opts = WriteOptions {
            version: FileVersion::V6,
            compression: Compression::None,
        };
        let s = write_trace_dat(&out, &m, &bufs, &opts).unwrap();
        let got = std::fs::read(&out).unwrap();

        let mut want = file_start(&m, FileVersion::V6);
        want.extend_from_slice(&header_info_payload(&m));
        want.extend_from_slice(&ftrace_events_payload(&m).unwrap());
        want.extend_from_slice(&event_formats_payload(&m).unwrap());
        want.extend_from_slice(&[1, 0, 0, 0, b'K']);
        want.extend_from_slice(&[0, 0, 0, 0]);
        want.extend_from_slice(&sized64_payload(b"1 init\n"));
        want.extend_from_slice(&[2, 0, 0, 0]);
        want.extend_from_slice(b"options  \0");
        put_option(&mut want, 4, b"[global]\n\0");
        put_option(&mut want, 9, b"v\0");
        put_option(&mut want, 8, &[2, 0, 0, 0]);
        let buffer_opt = want.len() + 6;
        put_option(&mut want, 3, b"\0\0\0\0\0\0\0\0in\0");
        want.extend_from_slice(&[0, 0]);
        // Top buffer: empty table, clock of the first buffer.
        want.extend_from_slice(b"flyrecord\0");
        want.extend_from_slice(&[0; 32]);
        want.extend_from_slice(&8u64.to_ne_bytes());
        want.extend_from_slice(b"[global]");
        // Instance table: cpu 0 empty, cpu 1 one page at the next page boundary.
        let table = want.len() as u64;
        want[buffer_opt..buffer_opt + 8].copy_from_slice(&table.to_ne_bytes());
        want.extend_from_slice(b"flyrecord\0");
        let entries = want.len();
        want.extend_from_slice(&[0; 32]);
        want.extend_from_slice(&8u64.to_ne_bytes());
        want.extend_from_slice(b"[global]");
        let data_at = want.len().next_multiple_of(4096);
        want.resize(data_at, 0);
        want.extend_from_slice(&page);
        want[entries + 16..entries + 24].copy_from_slice(&(data_at as u64).to_ne_bytes());
        want[entries + 24..entries + 32].copy_from_slice(&4096u64.to_ne_bytes());
        assert_eq!(got.len(), want.len());
        assert!(got == want, "bytes differ");
        assert_eq!(s.buffers[0].cpus[0].offset, data_at as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A complete v7 file with no trace data, compared byte for byte with a
    /// hand-built expectation.
    #[test]
    fn empty_v7_none_file_bytes() {
        let dir = std::env::temp_dir().join(format!("tracedata-writer-v7-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("e.dat");
        let mut m = tiny_meta();
        m.uname = None;
        m.cpu_count = 1;
        let opts = WriteOptions {
            version: FileVersion::V7,
            compression: Compression::None,
        };
        let s = write_trace_dat(&out, &m, &[], &opts).unwrap();
        let got = std::fs::read(&out).unwrap();
        assert_eq!(s.file_size, got.len() as u64);

        let mut want = file_start(&m, FileVersion::V7);
        want.extend_from_slice(b"none\0\0");
        let opt_ptr = want.len();
        want.extend_from_slice(&[0; 8]);
        let mut offs = Vec::new();
        let mut strings = Strings::default();
        let mut sec = |want: &mut Vec<u8>, id: u16, d: &str, p: &[u8]| {
            let at = want.len() as u64;
            let sid = strings.add(d);
            want.extend_from_slice(&section_header(id, 0, sid, p.len() as u64));
            want.extend_from_slice(p);
            at
        };
        offs.push(sec(&mut want, 16, "headers", &header_info_payload(&m)));
        offs.push(sec(
            &mut want,
            17,
            "ftrace events",
            &ftrace_events_payload(&m).unwrap(),
        ));
        offs.push(sec(
            &mut want,
            18,
            "events format",
            &event_formats_payload(&m).unwrap(),
        ));
        offs.push(sec(&mut want, 19, "kallsyms", &[1, 0, 0, 0, b'K']));
        offs.push(sec(&mut want, 20, "printk", &[0, 0, 0, 0]));
        offs.push(sec(
            &mut want,
            21,
            "command lines",
            &sized64_payload(b"1 init\n"),
        ));
        // Empty top buffer: a header and nothing else, as trace-cmd writes it.
        let buf_at = sec(&mut want, 3, "buffer flyrecord ", &[]);
        // Options.
        let mut o = Vec::new();
        for (i, id) in (16u16..=21).enumerate() {
            put_option(&mut o, id, &offs[i].to_ne_bytes());
        }
        put_option(&mut o, 4, b"[local]\n\0");
        put_option(&mut o, 9, b"v\0");
        put_option(&mut o, 8, &[1, 0, 0, 0]);
        let mut b = buf_at.to_ne_bytes().to_vec();
        b.extend_from_slice(b"\0local\0");
        b.extend_from_slice(&[0, 0x10, 0, 0, 0, 0, 0, 0]);
        put_option(&mut o, 3, &b);
        put_option(&mut o, 0, &[0; 8]);
        let opts_at = sec(&mut want, 0, "options", &o);
        want[opt_ptr..opt_ptr + 8].copy_from_slice(&opts_at.to_ne_bytes());
        let sid = strings.add("strings");
        let st = strings.bytes().to_vec();
        want.extend_from_slice(&section_header(15, 0, sid, st.len() as u64));
        want.extend_from_slice(&st);
        assert_eq!(got.len(), want.len());
        assert!(got == want, "bytes differ");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
