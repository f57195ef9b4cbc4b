//! Version 6: the metadata in a fixed order, the options, then the
//! flyrecord table and the page data of each buffer.

use super::*;

/// Writes `"flyrecord\0"`, a zeroed (offset, size) table for `cpus` CPUs
/// and the `[clock]` text; returns the offset of the table.
fn v6_table(out: &mut Out, cpus: u32, clock: &str) -> Result<u64> {
    out.bytes(dat::V6_FLYRECORD)?;
    let at = out.pos;
    out.bytes(&vec![0u8; cpus as usize * 16])?;
    let clock = format!("[{clock}]");
    out.u64(clock.len() as u64)?;
    out.bytes(clock.as_bytes())?;
    Ok(at)
}

pub(super) fn write_v6(
    out: &mut Out,
    meta: &TraceMeta,
    buffers: &[BufferData],
) -> Result<Vec<BufferSummary>> {
    let page = u64::from(meta.page_size);
    out.bytes(&file_start(meta, FileVersion::V6))?;
    out.bytes(&header_info_payload(meta))?;
    out.bytes(&ftrace_events_payload(meta)?)?;
    out.bytes(&event_formats_payload(meta)?)?;
    out.bytes(&sized32_payload(&meta.kallsyms, "kallsyms")?)?;
    out.bytes(&sized32_payload(&meta.printk_formats, "printk formats")?)?;
    out.bytes(&sized64_payload(&meta.cmdlines))?;
    out.u32(meta.cpu_count)?;

    // Options; each instance's BUFFER option holds the offset of its
    // flyrecord table, patched once the table is written.
    let top = buffers.iter().find(|b| b.name.is_empty());
    let instances: Vec<&BufferData> = buffers.iter().filter(|b| !b.name.is_empty()).collect();
    out.bytes(dat::V6_OPTIONS)?;
    let mut payload = Vec::new();
    for (id, data) in common_options(meta, buffers) {
        put_option(&mut payload, id, &data);
    }
    let mut buffer_opt_at = Vec::new();
    for b in &instances {
        // id (2) + size (4) precede the u64 offset.
        buffer_opt_at.push(out.pos + payload.len() as u64 + 6);
        let mut data = vec![0u8; 8];
        data.extend_from_slice(&cstring(&b.name));
        put_option(&mut payload, option::BUFFER, &data);
    }
    out.bytes(&payload)?;
    out.u16(option::DONE)?;

    // Flyrecord tables: top buffer first (all zero without one), then each
    // instance. Each is followed by the buffer's "[clock]".
    let default_clock = buffers.first().map(|b| b.clock.as_str()).unwrap_or("local");
    let mut tables: Vec<(Option<&BufferData>, u64)> = Vec::new();
    let table_at = v6_table(out, meta.cpu_count, top.map_or(default_clock, |b| &b.clock))?;
    tables.push((top, table_at));
    for (b, opt_at) in instances.iter().zip(&buffer_opt_at) {
        let start = out.pos;
        let table_at = v6_table(out, meta.cpu_count, &b.clock)?;
        out.patch_u64(*opt_at, start)?;
        tables.push((Some(b), table_at));
    }

    // The page data, each CPU page-aligned; tables patched as we go.
    let mut summaries = Vec::new();
    for (b, table_at) in tables {
        let Some(b) = b else { continue };
        let mut s = BufferSummary {
            name: b.name.clone(),
            cpus: Vec::new(),
        };
        let mut cpus: Vec<&CpuData> = b.cpus.iter().collect();
        cpus.sort_by_key(|c| c.cpu);
        for c in cpus {
            let (file, whole, tail) = open_cpu(c, page)?;
            out.pad_to(page)?;
            let offset = out.pos;
            if let (Some(mut f), true) = (file, whole > 0) {
                out.copy_from(&mut f, whole, &c.path)?;
            }
            let entry = table_at + u64::from(c.cpu) * 16;
            out.patch_u64(entry, offset)?;
            out.patch_u64(entry + 8, whole)?;
            s.cpus.push(CpuSummary {
                cpu: c.cpu,
                pages: whole / page,
                partial_tail: tail,
                offset,
                stored: whole,
            });
        }
        summaries.push(s);
    }
    let mut ordered = Vec::new();
    for b in buffers {
        if let Some(i) = summaries.iter().position(|s| s.name == b.name) {
            ordered.push(summaries.swap_remove(i));
        }
    }
    Ok(ordered)
}
