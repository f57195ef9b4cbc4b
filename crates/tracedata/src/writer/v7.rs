//! Version 7: the compression header, the offset of the first options
//! section, then sections (header info, formats, kallsyms, printk formats,
//! cmdlines, options, flyrecord data per buffer, strings).

use super::*;
use crate::compress::Compressor;

/// The strings section under construction: descriptions of sections,
/// referenced by their offset.
#[derive(Debug, Clone, Default)]
pub(crate) struct Strings {
    data: Vec<u8>,
}

impl Strings {
    /// Adds a string and returns its id (offset), as trace-cmd does: every
    /// call appends, even for a string already present.
    pub(crate) fn add(&mut self, s: &str) -> u32 {
        let id = self.data.len() as u32;
        self.data.extend_from_slice(&cstring(s));
        id
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.data
    }
}

/// A 16-byte v7 section header.
pub(crate) fn section_header(id: u16, flags: u16, desc: u32, size: u64) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0..2].copy_from_slice(&id.to_ne_bytes());
    h[2..4].copy_from_slice(&flags.to_ne_bytes());
    h[4..8].copy_from_slice(&desc.to_ne_bytes());
    h[8..16].copy_from_slice(&size.to_ne_bytes());
    h
}

struct V7<'a> {
    out: &'a mut Out,
    strings: Strings,
    comp: Compression,
    compressor: Compressor,
}

impl V7<'_> {
    fn flags(&self) -> u16 {
        match self.comp {
            Compression::None => 0,
            Compression::Zstd => dat::SECTION_FLAG_COMPRESSED,
        }
    }

    /// Writes a whole section from an in-memory payload; returns its offset.
    fn section(&mut self, id: u16, desc: &str, payload: &[u8], compress: bool) -> Result<u64> {
        let at = self.out.pos;
        let desc = self.strings.add(desc);
        if compress && self.comp != Compression::None {
            let block = self
                .compressor
                .block(payload)
                .map_err(|e| self.out.err(e).context(format!("section {id}")))?;
            self.out.bytes(&section_header(
                id,
                dat::SECTION_FLAG_COMPRESSED,
                desc,
                block.len() as u64,
            ))?;
            self.out.bytes(&block)?;
        } else {
            self.out
                .bytes(&section_header(id, 0, desc, payload.len() as u64))?;
            self.out.bytes(payload)?;
        }
        Ok(at)
    }

    /// Writes one BUFFER section; returns the BUFFER option data.
    fn buffer(
        &mut self,
        b: &BufferData,
        page_size: u32,
        summary: &mut BufferSummary,
    ) -> Result<Vec<u8>> {
        let page = u64::from(page_size);
        let section_at = self.out.pos;
        let desc = self.strings.add(&format!("buffer flyrecord {}", b.name));
        let flags = self.flags();
        self.out
            .bytes(&section_header(dat::section::BUFFER, flags, desc, 0))?;
        let mut cpus: Vec<&CpuData> = b.cpus.iter().collect();
        cpus.sort_by_key(|c| c.cpu);
        // (cpu, offset, size) of the CPUs with data.
        let mut entries: Vec<(u32, u64, u64)> = Vec::new();
        let mut chunk_in = Vec::new();
        let mut chunk_out = Vec::new();
        for c in cpus {
            let (file, whole, tail) = open_cpu(c, page)?;
            self.out.pad_to(page)?;
            let offset = self.out.pos;
            let mut stored = 0;
            if let (Some(mut f), true) = (file, whole > 0) {
                match self.comp {
                    Compression::None => {
                        self.out.copy_from(&mut f, whole, &c.path)?;
                        stored = whole;
                    }
                    Compression::Zstd => {
                        stored =
                            self.chunks(&mut f, whole, page, c, &mut chunk_in, &mut chunk_out)?;
                    }
                }
                entries.push((c.cpu, offset, stored));
            }
            summary.cpus.push(CpuSummary {
                cpu: c.cpu,
                pages: whole / page,
                partial_tail: tail,
                offset,
                stored,
            });
        }
        let size = self.out.pos - section_at - dat::SECTION_HEADER_SIZE as u64;
        self.out.patch_u64(section_at + 8, size)?;

        let mut opt = Vec::new();
        put_u64(&mut opt, section_at);
        opt.extend_from_slice(&cstring(&b.name));
        opt.extend_from_slice(&cstring(&b.clock));
        put_u32(&mut opt, page_size);
        put_u32(&mut opt, entries.len() as u32);
        for (cpu, offset, size) in entries {
            put_u32(&mut opt, cpu);
            put_u64(&mut opt, offset);
            put_u64(&mut opt, size);
        }
        Ok(opt)
    }

    /// Writes `len` bytes of `f` as compressed chunks of
    /// [`dat::PAGES_IN_CHUNK`] pages: u32 count, then (u32 csize, u32 usize,
    /// frame) per chunk. Returns the stored size the way trace-cmd counts it
    /// (everything after the u32 chunk count).
    fn chunks(
        &mut self,
        f: &mut File,
        len: u64,
        page: u64,
        c: &CpuData,
        input: &mut Vec<u8>,
        frame: &mut Vec<u8>,
    ) -> Result<u64> {
        let chunk = page as usize * dat::PAGES_IN_CHUNK;
        input.resize(chunk, 0);
        let count_at = self.out.pos;
        self.out.u32(0)?;
        let mut left = len;
        let mut count: u32 = 0;
        while left > 0 {
            let n = left.min(chunk as u64) as usize;
            f.read_exact(&mut input[..n])
                .map_err(|e| Error::io(&c.path, e).context(format!("cpu {} data", c.cpu)))?;
            self.compressor
                .compress_into(&input[..n], frame)
                .map_err(|e| {
                    self.out
                        .err(e)
                        .context(format!("compressing cpu {}", c.cpu))
                })?;
            self.out.u32(frame.len() as u32)?;
            self.out.u32(n as u32)?;
            self.out.bytes(frame)?;
            left -= n as u64;
            count += 1;
        }
        self.out.patch_u32(count_at, count)?;
        Ok(self.out.pos - count_at - 4)
    }
}

/// The metadata sections that do not change while a recording goes on:
/// (option id, description, payload), in file order.
pub(super) fn fixed_sections(meta: &TraceMeta) -> Result<Vec<(u16, &'static str, Vec<u8>)>> {
    Ok(vec![
        (option::HEADER_INFO, "headers", header_info_payload(meta)),
        (
            option::FTRACE_EVENTS,
            "ftrace events",
            ftrace_events_payload(meta)?,
        ),
        (
            option::EVENT_FORMATS,
            "events format",
            event_formats_payload(meta)?,
        ),
        (
            option::KALLSYMS,
            "kallsyms",
            sized32_payload(&meta.kallsyms, "kallsyms")?,
        ),
        (
            option::PRINTK,
            "printk",
            sized32_payload(&meta.printk_formats, "printk formats")?,
        ),
    ])
}

pub(super) fn write_v7(
    out: &mut Out,
    meta: &TraceMeta,
    buffers: &[BufferData],
    comp: Compression,
) -> Result<Vec<BufferSummary>> {
    out.bytes(&file_start(meta, FileVersion::V7))?;
    out.bytes(&cstring(comp.name()))?;
    out.bytes(&cstring(&comp.version()))?;
    let options_ptr = out.pos;
    out.u64(0)?;

    let compressor = Compressor::new(comp).map_err(|e| out.err(e).context("zstd"))?;
    let mut w = V7 {
        out,
        strings: Strings::default(),
        comp,
        compressor,
    };

    let mut opts = Vec::new();
    let mut metadata = fixed_sections(meta)?;
    metadata.push((
        option::CMDLINES,
        "command lines",
        sized64_payload(&meta.cmdlines),
    ));
    for (id, desc, payload) in &metadata {
        let at = w.section(*id, desc, payload, true)?;
        opts.push((*id, at.to_ne_bytes().to_vec()));
    }
    drop(metadata);
    opts.extend(common_options(meta, buffers));

    // The top buffer first; an empty one if the caller has none, as
    // trace-cmd always describes the top buffer.
    let empty_top = BufferData {
        name: String::new(),
        clock: buffers
            .first()
            .map(|b| b.clock.clone())
            .unwrap_or_else(|| "local".to_string()),
        cpus: Vec::new(),
    };
    let mut ordered: Vec<&BufferData> = Vec::new();
    match buffers.iter().find(|b| b.name.is_empty()) {
        Some(top) => ordered.push(top),
        None => ordered.push(&empty_top),
    }
    ordered.extend(buffers.iter().filter(|b| !b.name.is_empty()));
    let mut summaries = Vec::new();
    for b in ordered {
        let mut s = BufferSummary {
            name: b.name.clone(),
            cpus: Vec::new(),
        };
        let opt = w.buffer(b, meta.page_size, &mut s)?;
        opts.push((option::BUFFER, opt));
        if !std::ptr::eq(b, &empty_top) {
            summaries.push(s);
        }
    }

    // The one options section, pointed to by the file header.
    let mut payload = Vec::new();
    for (id, data) in &opts {
        put_option(&mut payload, *id, data);
    }
    put_option(&mut payload, option::DONE, &0u64.to_ne_bytes());
    let options_at = w.section(dat::section::OPTIONS, "options", &payload, false)?;
    w.out.patch_u64(options_ptr, options_at)?;

    // The strings section goes last and describes itself too.
    let strings_desc = w.strings.add("strings");
    let strings = w.strings.bytes().to_vec();
    let (flags, body) = if comp == Compression::None {
        (0, strings)
    } else {
        let block = w
            .compressor
            .block(&strings)
            .map_err(|e| w.out.err(e).context("strings"))?;
        (dat::SECTION_FLAG_COMPRESSED, block)
    };
    w.out.bytes(&section_header(
        dat::section::STRINGS,
        flags,
        strings_desc,
        body.len() as u64,
    ))?;
    w.out.bytes(&body)?;

    // Summaries in the caller's order.
    let mut ordered_summaries = Vec::new();
    for b in buffers {
        if let Some(i) = summaries.iter().position(|s| s.name == b.name) {
            ordered_summaries.push(summaries.swap_remove(i));
        }
    }
    Ok(ordered_summaries)
}
