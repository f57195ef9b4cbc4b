//! A version 7 trace.dat that grows with a recording: [`GrowingTraceDat`].

use super::v7::{fixed_sections, section_header, Strings};
use super::*;
use std::io::{Seek, SeekFrom};

/// What [`GrowingTraceDat::create`] or [`GrowingTraceDat::update`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Growth {
    /// Bytes of CPU data appended: the new whole pages.
    pub appended: u64,
    /// Bytes of metadata written: the tail (at creation, also everything
    /// before the first slot and the BUFFER section headers).
    pub rewritten: u64,
    /// Size of the file, its holes included.
    pub file_size: u64,
    /// Per buffer, in the order given, its CPUs in CPU order (as
    /// [`write_trace_dat`] gives them): what the file now holds.
    pub buffers: Vec<BufferSummary>,
}

/// An uncompressed version 7 trace.dat that grows with a recording, for a
/// view that shows a recording while it runs (`tui --live`).
///
/// [`write_trace_dat`] writes a whole file: refreshed about once a second,
/// that costs as much as everything recorded so far, every time. This file
/// is laid out once so that it can then be brought up to date by appending
/// what is new and rewriting only what describes it:
///
/// 1. the file start, the compression header (`none`) and the offset of
///    the options section, which never moves;
/// 2. the HEADER_INFO, FTRACE_EVENTS, EVENT_FORMATS, KALLSYMS and PRINTK
///    sections, written once;
/// 3. one BUFFER section per buffer (the top buffer first, an empty one if
///    the caller has none, as [`write_trace_dat`] does), written once: its
///    header, then one *slot* per CPU, page aligned and `slot` bytes apart,
///    at the end of which that CPU's new pages are appended. A slot is a
///    hole of the (sparse) file until written, so the file takes on disk
///    what it holds. The section spans its slots whole, so sections follow
///    each other by their sizes, as `trace-cmd dump` walks them;
/// 4. the tail, written again at each update: the OPTIONS section (where
///    each CPU's data is and how long, the CPU stats, the process maps...),
///    the CMDLINES section and the STRINGS section.
///
/// An update costs the new pages plus the tail, metadata that does not
/// grow with the trace data. Every section is reached through the options,
/// as in any v7 file, so the reader of this crate and `trace-cmd report`
/// read it as they read [`write_trace_dat`]'s, and find the same events.
///
/// A reader that opened the file before an update keeps what it was given:
/// pages are only ever added after the data it knows of, and the file
/// never shrinks (a shorter tail is followed by zeros), so its mapping
/// stays valid. It sees the new data when it opens the file again.
#[derive(Debug)]
pub struct GrowingTraceDat {
    file: File,
    path: PathBuf,
    page_size: u32,
    slot: u64,
    /// (option id, offset) of the sections written once.
    fixed: Vec<(u16, u64)>,
    /// The descriptions of the sections written at creation: the start of
    /// the strings section.
    strings: Strings,
    /// The BUFFER sections, in file order.
    buffers: Vec<Slots>,
    /// Where the tail starts (what the file header points to).
    tail_at: u64,
    /// The end of the longest tail written: the file's size.
    end: u64,
}

/// One BUFFER section and its CPUs' slots.
#[derive(Debug)]
struct Slots {
    name: String,
    /// False for the empty top buffer added when the caller has none.
    given: bool,
    section_at: u64,
    /// In CPU order.
    cpus: Vec<Slot>,
}

#[derive(Debug)]
struct Slot {
    cpu: u32,
    /// Offset of the slot in the file.
    at: u64,
    /// Bytes of data in it.
    len: u64,
}

const NONE: WriteOptions = WriteOptions {
    version: FileVersion::V7,
    compression: Compression::None,
};

impl GrowingTraceDat {
    /// Creates `path` (replaced if it exists) with `meta` and the whole
    /// pages of `buffers` so far, each CPU in a slot of `slot` bytes
    /// (rounded up to whole pages): no CPU's data may ever grow beyond it
    /// (see [`GrowingTraceDat::update`]). The header, format, kallsyms and
    /// printk sections are those of `meta` for the life of the file. On
    /// error the partial file is removed.
    pub fn create(
        path: &Path,
        meta: &TraceMeta,
        buffers: &[BufferData],
        slot: u64,
    ) -> Result<(GrowingTraceDat, Growth)> {
        validate(meta, buffers, &NONE)?;
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let res = Self::lay_out(file, path, meta, buffers, slot).and_then(|(mut g, front)| match g
            .update(
            meta, buffers,
        )? {
            Some(mut growth) => {
                growth.rewritten += front;
                Ok((g, growth))
            }
            None => Err(invalid(format!(
                "the CPU data is already larger than a slot of {} bytes",
                g.slot
            ))),
        });
        if res.is_err() {
            let _ = std::fs::remove_file(path);
        }
        res.map_err(|e| e.with_path(path))
    }

    /// Writes everything before the first slot and the BUFFER section
    /// headers, and places the slots and the tail. Also says how many
    /// bytes it wrote.
    fn lay_out(
        file: File,
        path: &Path,
        meta: &TraceMeta,
        buffers: &[BufferData],
        slot: u64,
    ) -> Result<(GrowingTraceDat, u64)> {
        let page = u64::from(meta.page_size);
        let slot = slot
            .checked_next_multiple_of(page)
            .filter(|&s| s > 0)
            .ok_or_else(|| invalid(format!("slot of {slot} bytes")))?;
        let mut front = file_start(meta, FileVersion::V7);
        front.extend_from_slice(&cstring(Compression::None.name()));
        front.extend_from_slice(&cstring(&Compression::None.version()));
        let options_ptr = front.len();
        put_u64(&mut front, 0);
        let mut strings = Strings::default();
        let mut fixed = Vec::new();
        let sections = fixed_sections(meta)?;
        for (id, desc, payload) in &sections {
            fixed.push((*id, front.len() as u64));
            let d = strings.add(desc);
            front.extend_from_slice(&section_header(*id, 0, d, payload.len() as u64));
            front.extend_from_slice(payload);
        }
        drop(sections);

        // The top buffer first (an empty one if there is none), then the
        // instances, as write_v7 orders them.
        let mut ordered: Vec<Option<&BufferData>> =
            vec![buffers.iter().find(|b| b.name.is_empty())];
        ordered.extend(buffers.iter().filter(|b| !b.name.is_empty()).map(Some));
        let too_big = || invalid(format!("{} CPUs of slots of {slot} bytes", meta.cpu_count));
        let mut pos = front.len() as u64;
        let mut headers = Vec::new();
        let mut slots = Vec::new();
        for b in ordered {
            let name = b.map_or("", |b| b.name.as_str());
            let section_at = pos;
            let d = strings.add(&format!("buffer flyrecord {name}"));
            pos += dat::SECTION_HEADER_SIZE as u64;
            let header_end = pos;
            let mut cpus: Vec<u32> = b
                .map(|b| b.cpus.iter().map(|c| c.cpu).collect())
                .unwrap_or_default();
            cpus.sort_unstable();
            let first = pos.next_multiple_of(page);
            let mut at = first;
            let cpus = cpus
                .into_iter()
                .map(|cpu| {
                    let s = Slot { cpu, at, len: 0 };
                    at = at.checked_add(slot).ok_or_else(too_big)?;
                    Ok(s)
                })
                .collect::<Result<Vec<_>>>()?;
            if !cpus.is_empty() {
                pos = at;
            }
            // The section spans its slots whole, so that sections still
            // follow each other by their sizes, up to the tail.
            let size = pos - header_end;
            headers.push((section_at, section_header(dat::section::BUFFER, 0, d, size)));
            slots.push(Slots {
                name: name.to_string(),
                given: b.is_some(),
                section_at,
                cpus,
            });
        }
        let tail_at = pos;
        front[options_ptr..options_ptr + 8].copy_from_slice(&tail_at.to_ne_bytes());
        let put = |b: &[u8], at: u64| {
            file.write_all_at(b, at)
                .map_err(|e| Error::io(path, e).at(at))
        };
        put(&front, 0)?;
        for (at, h) in &headers {
            put(h, *at)?;
        }
        let written = (front.len() + headers.len() * dat::SECTION_HEADER_SIZE) as u64;
        let g = GrowingTraceDat {
            file,
            path: path.to_path_buf(),
            page_size: meta.page_size,
            slot,
            fixed,
            strings,
            buffers: slots,
            tail_at,
            end: 0,
        };
        Ok((g, written))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of each CPU's slot: the most data a CPU can have in this file.
    pub fn slot(&self) -> u64 {
        self.slot
    }

    /// Size of the file, its holes included.
    pub fn file_size(&self) -> u64 {
        self.end
    }

    /// Appends to each CPU's slot the whole pages its file gained since the
    /// last update and rewrites the tail with `meta`'s command names,
    /// options and process maps and the CPU stats of `buffers`. The
    /// buffers must be those of [`GrowingTraceDat::create`], with the same
    /// CPUs, their files only grown; the sections written at creation are
    /// kept as they are.
    ///
    /// `None` when a CPU's data has outgrown its slot: nothing was written
    /// and the file still holds the previous update. A file with larger
    /// slots is then needed.
    pub fn update(&mut self, meta: &TraceMeta, buffers: &[BufferData]) -> Result<Option<Growth>> {
        validate(meta, buffers, &NONE)?;
        if meta.page_size != self.page_size {
            return Err(invalid(format!(
                "page size {} after {}",
                meta.page_size, self.page_size
            )));
        }
        let page = u64::from(self.page_size);
        // What to copy, checked whole before anything is written.
        let mut plan = Vec::new();
        let given = self.buffers.iter().filter(|s| s.given).count();
        if buffers.len() != given {
            return Err(invalid(format!("{} buffers after {given}", buffers.len())));
        }
        for (bi, s) in self.buffers.iter().enumerate().filter(|(_, s)| s.given) {
            let b = buffers
                .iter()
                .find(|b| b.name == s.name)
                .ok_or_else(|| invalid(format!("buffer {:?} is gone", s.name)))?;
            if b.cpus.len() != s.cpus.len() {
                return Err(invalid(format!("buffer {:?}: other CPUs", s.name)));
            }
            for c in &b.cpus {
                let si =
                    s.cpus.iter().position(|x| x.cpu == c.cpu).ok_or_else(|| {
                        invalid(format!("buffer {:?}: new cpu {}", s.name, c.cpu))
                    })?;
                let (f, whole, tail) = open_cpu(c, page)?;
                let have = s.cpus[si].len;
                if whole < have {
                    return Err(Error::corrupt(format!(
                        "cpu {}: {whole} bytes of pages, fewer than the {have} already copied",
                        c.cpu
                    ))
                    .with_path(&c.path));
                }
                if whole > self.slot {
                    return Ok(None);
                }
                plan.push((bi, si, c, f, whole, tail));
            }
        }
        let mut appended = 0;
        for (bi, si, c, f, whole, _) in &plan {
            let slot = &mut self.buffers[*bi].cpus[*si];
            let n = whole - slot.len;
            if let (Some(src), true) = (f, n > 0) {
                copy_at(
                    src,
                    &c.path,
                    slot.len,
                    &self.file,
                    &self.path,
                    slot.at + slot.len,
                    n,
                )
                .map_err(|e| e.context(format!("cpu {}", c.cpu)))?;
                slot.len = *whole;
                appended += n;
            }
        }
        let tail = self.tail(meta, buffers);
        self.file
            .write_all_at(&tail, self.tail_at)
            .map_err(|e| Error::io(&self.path, e).at(self.tail_at))?;
        let rewritten = tail.len() as u64;
        self.end = self.tail_at + tail.len() as u64;

        let mut summaries: Vec<BufferSummary> = buffers
            .iter()
            .map(|b| BufferSummary {
                name: b.name.clone(),
                cpus: Vec::new(),
            })
            .collect();
        for (bi, si, c, _, whole, tail) in plan {
            let slot = &self.buffers[bi].cpus[si];
            if let Some(s) = summaries
                .iter_mut()
                .find(|s| s.name == self.buffers[bi].name)
            {
                s.cpus.push(CpuSummary {
                    cpu: c.cpu,
                    pages: whole / page,
                    partial_tail: tail,
                    offset: slot.at,
                    stored: whole,
                });
            }
        }
        for s in &mut summaries {
            s.cpus.sort_by_key(|c| c.cpu);
        }
        Ok(Some(Growth {
            appended,
            rewritten,
            file_size: self.end,
            buffers: summaries,
        }))
    }

    /// The tail for `meta` and `buffers`: the options section, the
    /// cmdlines section and the strings section, followed by zeros up to
    /// the end of the previous tail.
    fn tail(&self, meta: &TraceMeta, buffers: &[BufferData]) -> Vec<u8> {
        let mut opts: Vec<(u16, Vec<u8>)> = self
            .fixed
            .iter()
            .map(|(id, at)| (*id, at.to_ne_bytes().to_vec()))
            .collect();
        let cmdlines_opt = opts.len();
        opts.push((option::CMDLINES, 0u64.to_ne_bytes().to_vec()));
        opts.extend(common_options(meta, buffers));
        let first_clock = buffers.first().map_or("local", |b| b.clock.as_str());
        for s in &self.buffers {
            let clock = buffers
                .iter()
                .find(|b| b.name == s.name)
                .map_or(first_clock, |b| b.clock.as_str());
            let with_data: Vec<&Slot> = s.cpus.iter().filter(|c| c.len > 0).collect();
            let mut o = Vec::new();
            put_u64(&mut o, s.section_at);
            o.extend_from_slice(&cstring(&s.name));
            o.extend_from_slice(&cstring(clock));
            put_u32(&mut o, self.page_size);
            put_u32(&mut o, with_data.len() as u32);
            for c in with_data {
                put_u32(&mut o, c.cpu);
                put_u64(&mut o, c.at);
                put_u64(&mut o, c.len);
            }
            opts.push((option::BUFFER, o));
        }
        // The option's data has the same size whatever the offset: the
        // cmdlines section follows the options section.
        let payload_len: usize = opts.iter().map(|(_, d)| 6 + d.len()).sum::<usize>() + 6 + 8;
        let cmdlines_at = self.tail_at + (dat::SECTION_HEADER_SIZE + payload_len) as u64;
        opts[cmdlines_opt].1 = cmdlines_at.to_ne_bytes().to_vec();
        let mut payload = Vec::with_capacity(payload_len);
        for (id, data) in &opts {
            put_option(&mut payload, *id, data);
        }
        put_option(&mut payload, option::DONE, &0u64.to_ne_bytes());
        debug_assert_eq!(payload.len(), payload_len);

        let mut strings = self.strings.clone();
        let mut tail = Vec::new();
        let section = |tail: &mut Vec<u8>, id: u16, desc: u32, body: &[u8]| {
            tail.extend_from_slice(&section_header(id, 0, desc, body.len() as u64));
            tail.extend_from_slice(body);
        };
        let d = strings.add("options");
        section(&mut tail, dat::section::OPTIONS, d, &payload);
        let d = strings.add("command lines");
        section(
            &mut tail,
            dat::section::CMDLINES,
            d,
            &sized64_payload(&meta.cmdlines),
        );
        let d = strings.add("strings");
        section(&mut tail, dat::section::STRINGS, d, strings.bytes());
        let end = self.end.saturating_sub(self.tail_at) as usize;
        if tail.len() < end {
            tail.resize(end, 0);
        }
        tail
    }
}

/// Copies `len` bytes of `src` from `from` into `dst` at `to`, by
/// `copy_file_range` when the kernel can (through [`std::io::copy`]).
fn copy_at(
    mut src: &File,
    src_path: &Path,
    from: u64,
    mut dst: &File,
    dst_path: &Path,
    to: u64,
    len: u64,
) -> Result<()> {
    src.seek(SeekFrom::Start(from))
        .map_err(|e| Error::io(src_path, e))?;
    dst.seek(SeekFrom::Start(to))
        .map_err(|e| Error::io(dst_path, e).at(to))?;
    let copied = io::copy(&mut src.take(len), &mut dst)
        .map_err(|e| Error::io(src_path, e).context("copying cpu data"))?;
    if copied != len {
        return Err(Error::corrupt(format!(
            "file shrank while copying: {copied} of {len} bytes"
        ))
        .with_path(src_path));
    }
    Ok(())
}
