//! `report` as trace-cmd prints it: every buffer's records merged by
//! time, trace-cmd's `-F`/`-v` filters (through libtraceevent's filter
//! engine) and `--cpu`, instance prefixes, `CPU:N [N EVENTS DROPPED]`
//! lines, and the `--stat`, `--uname` and `--version` forms.

use std::ffi::c_int;
use std::io::Write;

use anyhow::{bail, Context, Result};
use ustack_tracedata::dat::option;
use ustack_tracedata::{Item, Record, TraceFile};
use ustack_traceevent_sys as tep;

use crate::tracecmd::Printer;

/// What `report` prints, and how.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Only events of these CPUs; all when `None`.
    pub cpus: Option<Vec<u32>>,
    /// trace-cmd event filters (`-F`).
    pub filters: Vec<String>,
    /// Hide what the filters match instead (`-v`).
    pub invert: bool,
    /// Nanosecond timestamps (`-t`).
    pub nsec: bool,
    /// The latency format (`-l`).
    pub latency: bool,
    /// The kernel buffer statistics instead of the events (`--stat`).
    pub stat: bool,
    /// The uname and version instead of the events (`--uname`).
    pub uname: bool,
    /// The version of the tool that wrote the file (`--version`).
    pub version: bool,
}

/// trace-cmd's -F filters, through libtraceevent's filter engine.
struct Filters {
    pos: Vec<*mut tep::tep_event_filter>,
    neg: Vec<*mut tep::tep_event_filter>,
}

impl Filters {
    fn new(p: &Printer, args: &ReportOptions) -> Result<Filters> {
        let mut f = Filters {
            pos: Vec::new(),
            neg: Vec::new(),
        };
        for s in &args.filters {
            // SAFETY: the handle is valid; the filter is freed in Drop.
            let flt = unsafe { tep::tep_filter_alloc(p.tep.as_ptr()) };
            if flt.is_null() {
                bail!("cannot allocate a filter");
            }
            if args.invert {
                f.neg.push(flt);
            } else {
                f.pos.push(flt);
            }
            let c = std::ffi::CString::new(s.as_str()).context("filter contains NUL")?;
            // SAFETY: flt and c are valid for the call.
            let r = unsafe { tep::tep_filter_add_filter_str(flt, c.as_ptr()) };
            if r < 0 {
                let mut buf = [0u8; 200];
                // SAFETY: buf is writable for its length.
                unsafe { tep::tep_filter_strerror(flt, r, buf.as_mut_ptr().cast(), buf.len()) };
                let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                bail!("bad filter {s:?}: {}", String::from_utf8_lossy(&buf[..end]));
            }
        }
        Ok(f)
    }

    /// trace-cmd's test_filters(): the result code of the last filter tried.
    fn test(list: &[*mut tep::tep_event_filter], rec: &mut tep::Record<'_>, neg: bool) -> c_int {
        let mut ret = tep::TEP_ERRNO__NO_FILTER;
        for &f in list {
            // SAFETY: f is a live filter and rec a valid record.
            ret = unsafe { tep::tep_filter_match(f, rec.as_mut_ptr()) };
            let found = ret == tep::TEP_ERRNO__NO_FILTER || ret == tep::TEP_ERRNO__FILTER_MATCH;
            if !neg && found {
                break;
            }
        }
        ret
    }
}

impl Drop for Filters {
    fn drop(&mut self) {
        for &f in self.pos.iter().chain(&self.neg) {
            // SAFETY: each filter was allocated by tep_filter_alloc and is
            // freed once.
            unsafe { tep::tep_filter_free(f) };
        }
    }
}

/// One buffer's stream with trace-cmd's filtering applied.
struct Stream<'a> {
    prefix: String,
    iter: ustack_tracedata::reader::Records<'a>,
    next: Option<(Record<'a>, Option<Option<u64>>)>,
    done: bool,
    last_printed: Vec<bool>,
    error: Option<ustack_tracedata::Error>,
}

struct Ctx<'f> {
    filters: Filters,
    stack_id: Option<u16>,
    ts_offset: i64,
    file: &'f TraceFile,
}

impl<'a> Stream<'a> {
    fn peek(&mut self, cx: &Ctx<'_>) -> Result<Option<u64>> {
        while self.next.is_none() && !self.done {
            let mut lost = None;
            let rec = loop {
                match self.iter.next() {
                    None => {
                        self.done = true;
                        return Ok(None);
                    }
                    Some(Err(e)) => {
                        // Keep going with the other CPUs; report the first
                        // error at the end.
                        if self.error.is_none() {
                            self.error = Some(e);
                        }
                        continue;
                    }
                    Some(Ok(Item::Lost { count, .. })) => lost = Some(count),
                    Some(Ok(Item::Event(r))) => break r,
                }
            };
            if self.show(cx, &rec) {
                self.next = Some((rec, lost));
            }
        }
        Ok(self.next.as_ref().map(|(r, _)| adjust(r.ts, cx.ts_offset)))
    }

    /// get_next_record()'s filter logic, including "show a kernel_stack
    /// after a shown event" (test_stacktrace).
    fn show(&mut self, cx: &Ctx<'_>, r: &Record<'_>) -> bool {
        let f = &cx.filters;
        if f.pos.is_empty() && f.neg.is_empty() {
            return true;
        }
        let mut rec = tep::Record::new(r.data, adjust(r.ts, cx.ts_offset), r.cpu);
        let cpu = r.cpu as usize;
        if self.last_printed.len() <= cpu {
            self.last_printed.resize(cpu + 1, false);
        }
        let is_stack = cx.stack_id.is_some() && r.common_type() == cx.stack_id;
        let ret = Filters::test(&f.pos, &mut rec, false);
        let shown = if ret == tep::TEP_ERRNO__FILTER_NOT_FOUND {
            if cx.stack_id.is_some() {
                if is_stack {
                    Filters::test(&f.neg, &mut rec, true) != tep::TEP_ERRNO__FILTER_MATCH
                        && self.last_printed[cpu]
                } else {
                    self.last_printed[cpu] = false;
                    false
                }
            } else {
                false
            }
        } else if ret == tep::TEP_ERRNO__NO_FILTER || ret == tep::TEP_ERRNO__FILTER_MATCH {
            Filters::test(&f.neg, &mut rec, true) != tep::TEP_ERRNO__FILTER_MATCH
        } else {
            false
        };
        if shown && cx.stack_id.is_some() && !is_stack {
            self.last_printed[cpu] = true;
        }
        shown
    }
}

fn adjust(ts: u64, off: i64) -> u64 {
    ts.wrapping_add(off as u64)
}

/// DATE and OFFSET options shift every timestamp, as in trace-cmd.
fn ts_offset(file: &TraceFile) -> i64 {
    let mut off = 0i64;
    for o in file.options() {
        let text = String::from_utf8_lossy(&o.data);
        let text = text.trim_end_matches('\0').trim();
        let parse = |t: &str| -> i64 {
            let (neg, t) = match t.strip_prefix('-') {
                Some(r) => (true, r),
                None => (false, t.strip_prefix('+').unwrap_or(t)),
            };
            let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                i64::from_str_radix(h, 16).unwrap_or(0)
            } else {
                t.parse().unwrap_or(0)
            };
            if neg {
                -v
            } else {
                v
            }
        };
        if o.id == option::DATE {
            off = off.wrapping_add(parse(text).wrapping_mul(1000));
        } else if o.id == option::OFFSET {
            off = off.wrapping_add(parse(text));
        }
    }
    off
}

fn print_version(file: &TraceFile, out: &mut dyn Write) -> Result<()> {
    match file.tool_version() {
        Some(v) => writeln!(out, "{v}")?,
        None => writeln!(out, " version was not recorded in this file")?,
    }
    out.flush()?;
    Ok(())
}

/// `trace-cmd report --stat`: the CPUSTAT texts, then where the top
/// buffer's CPU data is.
fn print_stats(file: &TraceFile, out: &mut dyn Write) -> Result<()> {
    out.write_all(
        b"\nKernel buffer statistics:\n  Note: \"entries\" are the entries left in the kernel \
ring buffer and are not\n        recorded in the trace data. They should all be zero.\n\n",
    )?;
    let stats: Vec<&[u8]> = file
        .options()
        .iter()
        .filter(|o| o.id == option::CPUSTAT && !o.data.is_empty())
        .map(|o| o.data.as_slice())
        .collect();
    if stats.is_empty() {
        writeln!(out, " No stats in this file")?;
    } else {
        for s in stats {
            // trace-cmd turns each option's final NUL into a newline and
            // prints the lot as a C string.
            let body = &s[..s.len() - 1];
            let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
            out.write_all(&body[..end])?;
            out.write_all(b"\n")?;
            if end < body.len() {
                break;
            }
        }
        writeln!(out)?;
    }
    if let Some(top) = file.buffer("") {
        let n = top.cpus.iter().map(|c| c.cpu + 1).max().unwrap_or(0);
        // trace-cmd shows compressed CPU data where it decompressed it: one
        // after the other, page aligned, from the first CPU's offset.
        let compressed = file.compression().is_some_and(|(c, _)| c != "none");
        let page = top.page_size.max(1) as u64;
        let mut next = top
            .cpus
            .iter()
            .find(|c| c.file_size > 0)
            .map_or(0, |c| c.file_offset);
        for cpu in 0..n {
            let (off, size) = match top.cpus.iter().find(|c| c.cpu == cpu) {
                None => (0, 0),
                Some(c) if compressed && c.file_size > 0 => {
                    let size = c.data_size() as u64;
                    let off = next;
                    next = (next + size).div_ceil(page) * page;
                    (off, size)
                }
                Some(c) => (c.file_offset, c.file_size),
            };
            writeln!(
                out,
                "CPU{cpu} data recorded at offset={off:#x}\n    {size} bytes in size"
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Writes the whole report of `file` to `out`.
pub fn report(file: &TraceFile, args: &ReportOptions, out: &mut dyn Write) -> Result<()> {
    let mut printer = Printer::new(file)?;
    if args.nsec {
        printer.set_nsec();
    }
    if args.latency {
        printer.set_latency();
    }
    let cpus = args.cpus.as_deref();
    if !args.filters.is_empty() {
        printer.register_all();
    }
    let filters = Filters::new(&printer, args)?;
    writeln!(out, "cpus={}", file.cpu_count())?;
    // Like trace-cmd: --version wins over --uname, which wins over --stat.
    if args.version || args.uname {
        if args.version {
            return print_version(file, out);
        }
        match file.uname() {
            Some(u) => writeln!(out, "{u}")?,
            None => writeln!(out, " uname was not recorded in this file")?,
        }
        return print_version(file, out);
    }
    if args.stat {
        return print_stats(file, out);
    }
    let cx = Ctx {
        filters,
        stack_id: file
            .formats()
            .by_name("ftrace", "kernel_stack")
            .map(|f| f.id),
        ts_offset: ts_offset(file),
        file,
    };
    let has_instances = file.buffers().iter().any(|b| !b.is_top());
    let width = file
        .buffers()
        .iter()
        .map(|b| b.name.len())
        .max()
        .unwrap_or(0);
    let mut streams: Vec<Stream<'_>> = file
        .buffers()
        .iter()
        .map(|b| Stream {
            prefix: if !has_instances {
                String::new()
            } else if b.is_top() {
                format!("{:>width$}  ", "")
            } else {
                format!("{:>width$}: ", b.name)
            },
            iter: file.records_of_cpus(b, cpus).trace_cmd_compat(),
            next: None,
            done: false,
            last_printed: Vec::new(),
            error: None,
        })
        .collect();
    loop {
        let mut best: Option<(usize, u64)> = None;
        for (i, s) in streams.iter_mut().enumerate() {
            if let Some(ts) = s.peek(&cx)? {
                if best.is_none_or(|(_, b)| ts < b) {
                    best = Some((i, ts));
                }
            }
        }
        let Some((i, ts)) = best else { break };
        let s = &mut streams[i];
        let (rec, lost) = s.next.take().expect("peeked");
        let name = cx
            .file
            .formats()
            .of(&rec)
            .map(|f| f.name.as_str())
            .unwrap_or("[UNKNOWN EVENT]");
        out.write_all(s.prefix.as_bytes())?;
        out.write_all(printer.format(&rec, ts, name, lost))?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    if let Some(e) = streams.iter_mut().find_map(|s| s.error.take()) {
        return Err(e.into());
    }
    Ok(())
}
