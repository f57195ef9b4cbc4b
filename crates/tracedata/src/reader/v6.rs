//! trace.dat version 6: metadata blocks in a fixed order, options, then
//! the flyrecord CPU tables.

use super::sections::{
    mapped_range, parse_event_formats, parse_ftrace_events, parse_header_info, parse_u32_blob,
    parse_u64_blob, skip_u32_blob, text, Cur, KallsymsAt, Meta,
};
use super::{Buffer, CpuSection, DataRef, RawOption, TraceFile};
use crate::clock::selected_clock;
use crate::dat::{self, option};
use crate::error::{Error, Result};
use crate::limits;

impl TraceFile {
    pub(super) fn parse_v6(
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
        m.kallsyms = KallsymsAt::Range(skip_u32_blob(c)?);
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
}
