//! trace.dat version 7: sections reached from chains of options sections,
//! each possibly compressed, and per-buffer CPU data in compressed chunks.

use std::ops::Range;

use super::codec::{decompress, Codec};
use super::lazy::LazyData;
use super::sections::{
    mapped_range, parse_cmdlines_section, parse_event_formats, parse_ftrace_events,
    parse_header_info, parse_u32_blob, skip_u32_blob, Cur, KallsymsAt, Meta,
};
use super::{Buffer, CpuSection, DataRef, RawOption, TraceFile};
use crate::dat::{self, option};
use crate::error::{Error, Result};
use crate::limits::{self, Budget};

impl TraceFile {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn parse_v7(
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
        // Sections are copied out of the mapping (or decompressed): their
        // pages are given back at once.
        let section = |off: u64, what: &'static str| {
            let (id, payload, pages) = read_section(b, codec, &budget, off, what)?;
            release(pages);
            Ok::<_, Error>((id, payload))
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
                        option::KALLSYMS => {
                            // Checked whole now, read again when asked.
                            skip_u32_blob(&mut sc)?;
                            m.kallsyms = KallsymsAt::Section(off);
                        }
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
}

/// Reads the section at `off` of file `b`: its id, its payload,
/// decompressed (taken from `budget`) when the section is compressed, and
/// the bytes of `b` it was read from.
pub(super) fn read_section(
    b: &[u8],
    codec: Codec,
    budget: &Budget,
    off: u64,
    what: &'static str,
) -> Result<(u16, Vec<u8>, Range<usize>)> {
    let mut c = Cur::new(b, 0, what);
    c.seek(off)?;
    let id = c.u16()?;
    let flags = c.u16()?;
    let _desc = c.u32()?;
    let size = c.len_u64()?;
    let payload = c.take(size)?;
    let pages = off as usize..c.pos;
    if flags & dat::SECTION_FLAG_COMPRESSED != 0 {
        let mut pc = Cur::new(payload, off + 16, what);
        let csize = pc.u32()? as usize;
        let usize_ = pc.u32()? as usize;
        let data = pc.take(csize)?;
        let out = decompress(codec, data, usize_, budget).map_err(|e| e.context(what).at(off))?;
        Ok((id, out, pages))
    } else {
        Ok((id, payload.to_vec(), pages))
    }
}
