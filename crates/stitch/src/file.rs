//! Stitching straight from a trace.dat file ([`ustack_tracedata::reader::TraceFile`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ustack_tracedata::reader::{Buffer, TraceFile};
use ustack_tracedata::Record;

use crate::stitcher::{ClosedGroup, Stacks};
use crate::trace::{Comms, EventMeta, Index, IndexBuilder, Locator};
use ustack_symbolize::{elf, AddressSpaces, Symbolizer};

/// Error of the file adapter.
#[derive(Debug)]
pub enum Error {
    /// The file has no such buffer.
    NoBuffer(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NoBuffer(b) if b.is_empty() => write!(f, "the file has no top-level buffer"),
            Error::NoBuffer(b) => write!(f, "the file has no buffer (instance) named {b:?}"),
        }
    }
}

impl std::error::Error for Error {}

/// The buffer called `name` (`""` for the top one). `None`: the first
/// buffer that holds data, the top one first (a recording into an instance
/// leaves the top buffer empty).
pub fn buffer<'f>(file: &'f TraceFile, name: Option<&str>) -> Result<&'f Buffer, Error> {
    match name {
        Some(n) => file.buffer(n).ok_or_else(|| Error::NoBuffer(n.to_string())),
        None => file
            .buffers()
            .iter()
            .find(|b| b.cpus.iter().any(|c| c.data_size() > 0))
            .or_else(|| file.buffers().first())
            .ok_or_else(|| Error::NoBuffer(String::new())),
    }
}

/// A locator over `buf`'s CPU data that decompresses no more than the
/// first chunk of each CPU.
fn locator(file: &TraceFile, buf: &Buffer) -> Locator {
    Locator::with_lengths(
        buf.cpus
            .iter()
            .map(|c| (c.cpu, file.cpu_data_upto(c, 1), c.data_size())),
    )
    .with_page_size(buf.page_size)
}

/// Indexes and stitches one buffer of a trace file in one pass.
pub fn load(file: &TraceFile, buf: &Buffer) -> Index {
    load_with(file, buf, Extent::All, |_, _| true)
}

/// How much of a buffer [`load_with`] indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// Every record.
    All,
    /// The first records (and losses), in time order, up to this many:
    /// groups still open at the end are pending, as at the end of a file.
    First(usize),
}

/// Records between two calls of [`load_with`]'s `progress`.
const PROGRESS_STEP: usize = 1 << 16;

/// [`load`] of `extent`, calling `progress(done, all)` every 65,536
/// records with the bytes of CPU data read so far and in all. When
/// `progress` returns false, indexing stops there, as if the records ended.
pub fn load_with(
    file: &TraceFile,
    buf: &Buffer,
    extent: Extent,
    mut progress: impl FnMut(u64, u64) -> bool,
) -> Index {
    let formats = file.formats().iter().cloned();
    let comms = Comms::parse(&String::from_utf8_lossy(file.cmdlines()));
    let loc = locator(file, buf);
    let limit = match extent {
        Extent::All => usize::MAX,
        Extent::First(n) => n,
    };
    let mut records = file.records(buf);
    let mut n = 0usize;
    let items = std::iter::from_fn(|| {
        if n == limit {
            return None;
        }
        n += 1;
        if n % PROGRESS_STEP == 0 {
            let (done, all) = records.progress();
            if !progress(done, all) {
                n = limit;
                return None;
            }
        }
        records.next()
    });
    let mut idx = Index::build(formats, comms, &loc, items);
    idx.kernel_lost = kernel_lost(file, buf);
    idx
}

/// Events the kernel lost per CPU of `buf`, by its own count.
fn kernel_lost(file: &TraceFile, buf: &Buffer) -> Vec<(u32, u64)> {
    file.buffer_stats()
        .into_iter()
        .filter(|b| b.name == buf.name)
        .flat_map(|b| b.cpus)
        .filter_map(|c| Some((c.cpu, c.overrun? + c.dropped_events.unwrap_or(0))))
        .collect()
}

/// Records between two looks for closed groups in [`load_streaming`].
const STREAM_STEP: usize = 4096;

/// [`load`] that hands each group to `on_group`, with the index built so
/// far and the stacks stored so far, as soon as nothing can change it any more (see
/// [`crate::Stitcher::streaming`]), rather than keeping it: the first
/// groups come long before the end of a large file. The returned index
/// has no groups, except kernel-only ones when the trace has no user
/// stack at all (those come at the end, in the index). When `on_group`
/// returns false, indexing stops there.
pub fn load_streaming(
    file: &TraceFile,
    buf: &Buffer,
    mut on_group: impl FnMut(&Index, &Stacks, ClosedGroup) -> bool,
) -> Index {
    let formats = file.formats().iter().cloned();
    let comms = Comms::parse(&String::from_utf8_lossy(file.cmdlines()));
    let loc = locator(file, buf);
    let mut b = IndexBuilder::new(formats, comms, &loc, true);
    let mut go_on = true;
    for (n, item) in file.records(buf).enumerate() {
        b.push(item);
        if n % STREAM_STEP == STREAM_STEP - 1 {
            for g in b.take_closed() {
                go_on = go_on && on_group(b.index(), b.stacks(), g);
            }
            if !go_on {
                break;
            }
        }
    }
    let (mut idx, rest) = b.finish();
    idx.kernel_lost = kernel_lost(file, buf);
    for g in rest {
        if go_on {
            go_on = on_group(&idx, &idx.stitched.stacks, g);
        }
    }
    idx
}

/// The record of an indexed event, read again from the file.
///
/// Compressed data is decompressed up to the end of the record's page, not
/// further.
pub fn record<'f>(file: &'f TraceFile, buf: &'f Buffer, ev: &EventMeta) -> Option<Record<'f>> {
    let c = buf.cpus.iter().find(|c| c.cpu == u32::from(ev.cpu))?;
    let page = buf.page_size.max(1);
    let end = ev.end()?.div_ceil(page).saturating_mul(page);
    let cpu_data = file.cpu_data_upto(c, end);
    Some(Record {
        cpu: u32::from(ev.cpu),
        ts: ev.ts,
        data: ev.payload(cpu_data)?,
        extent: ev.extent(cpu_data)?,
    })
}

/// Gives the mapped pages of `buf`'s CPU data back to the kernel (see
/// [`TraceFile::release_cpu_data`]): callers of [`record`] call it now and
/// then so that the pages they read do not all stay resident.
pub fn release(file: &TraceFile, buf: &Buffer) {
    for c in &buf.cpus {
        file.release_cpu_data(c);
    }
}

/// Records of the events `seqs` of `index`.
pub fn records<'f>(
    file: &'f TraceFile,
    buf: &'f Buffer,
    index: &Index,
    seqs: &[u64],
) -> HashMap<u64, Record<'f>> {
    seqs.iter()
        .filter_map(|&s| {
            let ev = index.events.get(s as usize)?;
            Some((s, record(file, buf, ev)?))
        })
        .collect()
}

/// A symbolizer over the kallsyms and PROCMAPS saved in `file`.
pub fn symbolizer(file: &TraceFile) -> Symbolizer {
    let maps = AddressSpaces::new(file.proc_maps());
    Symbolizer::new(kallsyms_text(file), maps).with_uname(file.uname())
}

/// The kallsyms text of `file`, if it has any. It was checked when the
/// file was opened; a file changed since gives no kernel symbols.
fn kallsyms_text(file: &TraceFile) -> Option<String> {
    let bytes = file.kallsyms().unwrap_or_default();
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    (!text.is_empty()).then_some(text)
}

/// Like [`symbolizer`] with files looked up under `root` (`--symfs`), and
/// the kernel's mapping records (`index`'s [`Index::mappings`]) as timed
/// observations beside PROCMAPS: they alone name the files of processes
/// gone before the recorder read their maps.
pub fn symbolizer_for(file: &TraceFile, index: &Index, root: Option<PathBuf>) -> Symbolizer {
    let mut maps = AddressSpaces::new(file.proc_maps());
    let mut bases = HashMap::new();
    let base = |path: &str, (start, end): (u64, u64), offset: u64| {
        let d = bases
            .entry((path.to_string(), offset, end - start))
            .or_insert_with(|| {
                elf::base_distance(Path::new(path), root.as_deref(), offset, end - start)
            });
        // Not readable here: the frames will say so; keep a plausible base.
        start.saturating_sub(d.unwrap_or(offset))
    };
    for p in index.mappings.timed_proc_maps_with(base) {
        maps.add(p);
    }
    Symbolizer::new(kallsyms_text(file), maps)
        .with_root(root)
        .with_uname(file.uname())
}
