//! `tracer-cli report`: prints a trace.dat file like `trace-cmd report`.
//!
//! The file is read, its pages decoded and its CPUs (and buffers) merged by
//! `tracedata`. libtraceevent, through `ustack-traceevent-sys`, is set up the way
//! trace-cmd sets it up (header page, formats, kallsyms, printk formats,
//! saved cmdlines, plugins) and prints each event's info (print format or
//! plugin); the comm/pid/cpu and time columns are written here the way
//! libtraceevent writes them. The text is byte-identical to `trace-cmd
//! report` 3.1.6, including instance prefixes, `CPU:N [N EVENTS DROPPED]`
//! lines, `--cpu` and `-F`/`-v` filters.
//!
//! With `--stacks`, `--json` or `--folded` the stitched view of
//! [`crate::cmd::stacks`] is printed instead.

use std::ffi::c_int;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use ustack_tracedata::dat::option;
use ustack_tracedata::{Item, Record, TraceFile};
use ustack_traceevent_sys as tep;

/// Arguments of `tracer-cli report`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Input file.
    #[arg(short = 'i', long = "input", default_value = "trace.dat")]
    pub input: PathBuf,
    /// Only show events of these CPUs (repeatable; lists like `0,2-3` work).
    #[arg(long = "cpu", value_name = "CPUS")]
    pub cpu: Vec<String>,
    /// Event filter in trace-cmd (libtraceevent) syntax, e.g. `sched_switch`,
    /// `sched/sched_switch` or `sched_switch: prev_pid == 1` (repeatable).
    #[arg(short = 'F', long = "filter", value_name = "FILTER")]
    pub filter: Vec<String>,
    /// Invert the `-F` filters: hide the events they match.
    #[arg(short = 'v')]
    pub invert: bool,
    /// Print timestamps in nanoseconds.
    #[arg(short = 't')]
    pub nsec: bool,
    /// Latency format: short comm, the irqs-off/need-resched/hardirq/
    /// softirq/preempt-depth flags column.
    #[arg(short = 'l')]
    pub latency: bool,
    /// Print the kernel buffer statistics stored in the file (CPUSTAT).
    #[arg(long)]
    pub stat: bool,
    /// Print the uname and version of the traced system and tool.
    #[arg(long)]
    pub uname: bool,
    /// Print the version of the tool that wrote the file.
    #[arg(long)]
    pub version: bool,
    /// Group events by cookie and show their user stacks (stitched view).
    #[arg(long)]
    pub stacks: bool,
    /// With the stitched views: look the files that user stacks map up under
    /// this directory (the root of the machine or VM that recorded the
    /// trace), as perf's --symfs.
    #[arg(long = "symfs", value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// Stitched view as JSON.
    #[arg(long)]
    pub json: bool,
    /// Stitched view as folded stacks (for flame graphs).
    #[arg(long)]
    pub folded: bool,
}

impl Args {
    /// The CPUs selected with `--cpu`, or `None` for all.
    pub fn cpus(&self) -> Result<Option<Vec<u32>>> {
        if self.cpu.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::new();
        for spec in &self.cpu {
            for part in spec.split([',', ':']).filter(|p| !p.trim().is_empty()) {
                let (a, b) = match part.split_once('-') {
                    Some((a, b)) => (a.trim(), b.trim()),
                    None => (part.trim(), part.trim()),
                };
                let a: u32 = a
                    .parse()
                    .with_context(|| format!("bad cpu list {spec:?}"))?;
                let b: u32 = b
                    .parse()
                    .with_context(|| format!("bad cpu list {spec:?}"))?;
                if a > b {
                    bail!("bad cpu list {spec:?}: range must go from lower to greater");
                }
                for c in a..=b {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
        }
        Ok(Some(out))
    }
}

/// Runs `tracer-cli report`.
pub fn run(args: Args) -> Result<()> {
    if args.stacks || args.json || args.folded {
        return crate::cmd::stacks::run(&args);
    }
    let file = TraceFile::open(&args.input)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match report(&file, &args, &mut out) {
        Err(e) if is_broken_pipe(&e) => Ok(()),
        r => r,
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// libtraceevent set up from a trace file, the way trace-cmd sets it up.
pub struct Printer<'f> {
    tep: tep::Tep,
    file: &'f TraceFile,
    /// Per event id: its format was handed to libtraceevent (or tried).
    registered: Vec<bool>,
    seq: tep::TraceSeq,
    /// Divisor and precision of the time column; `None` when the clock does
    /// not count nanoseconds (then libtraceevent prints `%12d`).
    time: Option<(u64, u32)>,
    line: Vec<u8>,
    latency: bool,
}

impl<'f> Printer<'f> {
    /// Loads headers, formats, kallsyms, printk formats, cmdlines and the
    /// system plugins of `file` into a new libtraceevent handle.
    ///
    /// Like trace-cmd, a format libtraceevent cannot parse is not fatal (its
    /// events print without their info); rejected kallsyms, printk formats
    /// or cmdlines are.
    ///
    /// Event formats are handed to libtraceevent when their id first shows
    /// up ([`Printer::format`]), or all at once by [`Printer::register_all`]:
    /// printing an event only depends on its own format, and a file holds
    /// the formats of every event of the system, of which a trace uses a
    /// few.
    pub fn new(file: &'f TraceFile) -> Result<Printer<'f>> {
        let (t, rejected) = ustack_stitch::printfmt::load_tep_without_formats(file)?;
        if let Some(e) = rejected.into_iter().next() {
            return Err(e.into());
        }
        let mut p = Printer {
            tep: t,
            file,
            registered: vec![false; 1 << 16],
            seq: tep::TraceSeq::new(),
            time: in_usecs(file).then_some((1000, 6)),
            line: Vec::with_capacity(256),
            latency: false,
        };
        // libtraceevent finds the common fields (type, pid, flags) in the
        // first event it knows: have one before any record is printed, even
        // one of an id the file has no format for.
        if let Some(id) = file.formats().ids().next() {
            p.register(id);
        }
        Ok(p)
    }

    /// Hands the format of event `id` to libtraceevent unless done already.
    /// One it cannot parse or refuses is skipped, as by [`tep::Tep::load`]:
    /// its events print without their info.
    fn register(&mut self, id: u16) {
        let done = &mut self.registered[id as usize];
        if !*done {
            *done = true;
            if let Some((system, text)) = self.file.formats().text_by_id(id) {
                let _ = self.tep.parse_event(text, system);
            }
        }
    }

    /// Hands every format not handed yet to libtraceevent, in file order
    /// (what trace-cmd does at open): needed before -F filters, which look
    /// events up by name.
    pub fn register_all(&mut self) {
        let file = self.file;
        for id in file.formats().ids() {
            self.register(id);
        }
    }

    /// Uses trace-cmd's latency format (`trace-cmd report -l`).
    pub fn set_latency(&mut self) {
        self.latency = true;
    }

    /// Prints nanosecond timestamps (`trace-cmd report -t`).
    pub fn set_nsec(&mut self) {
        self.tep.set_flag(tep::TEP_NSEC_OUTPUT);
        if self.time.is_some() {
            self.time = Some((1, 9));
        }
    }

    /// Formats one event line exactly like `trace-cmd report` (without the
    /// instance prefix and the final newline). `name` is the event name.
    ///
    /// The comm/pid/cpu and time columns are formatted here, the way
    /// libtraceevent formats `"%16s-%-5d [%03d]"` and `" %6.1000d:"` (or
    /// `" %9.1d:"` with `-t`); the event info comes from libtraceevent.
    pub fn format(
        &mut self,
        r: &Record<'_>,
        ts: u64,
        name: &str,
        lost: Option<Option<u64>>,
    ) -> &[u8] {
        use std::io::Write as _;
        if let Some(id) = r.common_type() {
            self.register(id);
        }
        let line = &mut self.line;
        line.clear();
        match lost {
            Some(Some(n)) if n > 0 => {
                let _ = writeln!(line, "CPU:{} [{} EVENTS DROPPED]", r.cpu, n);
            }
            Some(None) => {
                let _ = writeln!(line, "CPU:{} [EVENTS DROPPED]", r.cpu);
            }
            _ => {}
        }
        let mut rec = tep::Record::new(r.data, ts, r.cpu);
        if self.latency {
            self.seq.reset();
            self.tep
                .print(&mut self.seq, &mut rec, tep::Print::LatencyHead);
            self.tep.print(&mut self.seq, &mut rec, tep::Print::Latency);
            self.line.extend_from_slice(self.seq.as_bytes());
            return self.finish_line(&mut rec, name);
        }
        let pid = r.common_pid().unwrap_or(0);
        let comm = self
            .tep
            .comm_of_pid(pid)
            .map_or(&b"<...>"[..], |c| c.to_bytes());
        for _ in comm.len()..16 {
            line.push(b' ');
        }
        line.extend_from_slice(comm);
        // "-{pid:<5} [{cpu:03}]", without core::fmt (it showed in profiles).
        line.push(b'-');
        let start = line.len();
        if pid < 0 {
            line.push(b'-');
        }
        push_digits(line, pid.unsigned_abs().into(), 0, b' ');
        for _ in line.len() - start..5 {
            line.push(b' ');
        }
        line.extend_from_slice(b" [");
        push_digits(line, r.cpu.into(), 3, b'0');
        line.push(b']');
        self.finish_line(&mut rec, name)
    }

    /// Appends the time, name and info columns to `self.line`.
    fn finish_line(&mut self, rec: &mut tep::Record<'_>, name: &str) -> &[u8] {
        let line = &mut self.line;
        match self.time {
            Some((div, prec)) => {
                line.push(b' ');
                format_time(line, rec.ts(), div, prec);
                line.push(b':');
            }
            None => {
                self.seq.reset();
                self.tep.print(&mut self.seq, rec, tep::Print::Time);
                line.extend_from_slice(self.seq.as_bytes());
                line.push(b':');
            }
        }
        line.push(b' ');
        line.extend_from_slice(name.as_bytes());
        line.extend_from_slice(b": ");
        for _ in name.len()..20 {
            line.push(b' ');
        }
        self.seq.reset();
        self.tep.print(&mut self.seq, rec, tep::Print::Info);
        line.extend_from_slice(self.seq.as_bytes());
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        line
    }
}

/// libtraceevent 1.7's time column: `ts` divided by `div` (rounded), printed
/// as `%5llu.%0<prec>llu` (as `%12llu` without a precision).
fn format_time(out: &mut Vec<u8>, ts: u64, div: u64, prec: u32) {
    let t = if div > 1 { (ts + div / 2) / div } else { ts };
    let p10 = 10u64.pow(prec);
    if p10 > 1 {
        push_digits(out, t / p10, 5, b' ');
        out.push(b'.');
        push_digits(out, t % p10, prec as usize, b'0');
    } else {
        push_digits(out, t, 12, b' ');
    }
}

/// Appends `v` in decimal, right-aligned in `width` columns filled with
/// `fill` (`b' '` or `b'0'`): `{v:width$}` or `{v:0width$}`, without
/// core::fmt, which cost about 1,800 instructions per report line.
fn push_digits(out: &mut Vec<u8>, mut v: u64, width: usize, fill: u8) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let digits = &buf[i..];
    for _ in digits.len()..width {
        out.push(fill);
    }
    out.extend_from_slice(digits);
}

/// Whether trace-cmd prints timestamps as seconds with microseconds: yes,
/// unless the TRACECLOCK option selects a clock that does not count
/// nanoseconds (e.g. `counter`, `x86-tsc`) and no TSC2NSEC option converts it.
fn in_usecs(file: &TraceFile) -> bool {
    if file.options().iter().any(|o| o.id == option::TSC2NSEC) {
        return true;
    }
    let Some(o) = file.options().iter().find(|o| o.id == option::TRACECLOCK) else {
        return true;
    };
    let text = String::from_utf8_lossy(&o.data);
    let Some(word) = text.split(' ').find(|w| w.starts_with('[')) else {
        return true;
    };
    let clock = word
        .split(['[', ']'])
        .find(|p| !p.is_empty())
        .unwrap_or("")
        .split_whitespace()
        .next()
        .unwrap_or("");
    matches!(
        clock,
        "local" | "global" | "uptime" | "perf" | "tsc2nsec" | "tai"
    ) || clock.starts_with("mono")
}

/// trace-cmd's -F filters, through libtraceevent's filter engine.
struct Filters {
    pos: Vec<*mut tep::tep_event_filter>,
    neg: Vec<*mut tep::tep_event_filter>,
}

impl Filters {
    fn new(p: &Printer, args: &Args) -> Result<Filters> {
        let mut f = Filters {
            pos: Vec::new(),
            neg: Vec::new(),
        };
        for s in &args.filter {
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
pub fn report(file: &TraceFile, args: &Args, out: &mut dyn Write) -> Result<()> {
    let mut printer = Printer::new(file)?;
    if args.nsec {
        printer.set_nsec();
    }
    if args.latency {
        printer.set_latency();
    }
    let cpus = args.cpus()?;
    if !args.filter.is_empty() {
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
            iter: file.records_of_cpus(b, cpus.as_deref()).trace_cmd_compat(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_match_core_fmt() {
        for v in [
            0u64,
            1,
            9,
            10,
            99,
            100,
            12345,
            999_999,
            u32::MAX as u64,
            u64::MAX,
        ] {
            for (w, fill) in [(0, b' '), (3, b'0'), (5, b' '), (6, b'0'), (12, b' ')] {
                let mut out = b"x".to_vec();
                push_digits(&mut out, v, w, fill);
                let want = if fill == b'0' {
                    format!("x{v:0w$}")
                } else {
                    format!("x{v:w$}")
                };
                assert_eq!(String::from_utf8(out).unwrap(), want);
            }
        }
    }

    /// The comm-pid-cpu column, the name column: as `write!` made them,
    /// negative pids included.
    #[test]
    fn pid_cpu_and_name_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.dat");
        let mut b = ustack_stitch::testdata::TraceBuilder::new(1);
        for (i, pid) in [0, 7, 12345, 1234567, -1, -42_000].into_iter().enumerate() {
            b.sys_enter(0, 1_000 + i as u64, pid, 1);
        }
        b.write(&path).unwrap();
        let file = TraceFile::open(&path).unwrap();
        let mut p = Printer::new(&file).unwrap();
        let mut n = 0;
        for it in file.records(&file.buffers()[0]) {
            let Item::Event(r) = it.unwrap() else {
                continue;
            };
            let pid = r.common_pid().unwrap();
            let line = String::from_utf8(p.format(&r, r.ts, "sys_enter", None).to_vec()).unwrap();
            let want = format!(
                "-{pid:<5} [{:03}] {:5}.{:06}: sys_enter: ",
                r.cpu,
                0,
                r.ts / 1000
            );
            assert_eq!(&line[16..16 + want.len()], want, "{line}");
            n += 1;
        }
        assert_eq!(n, 6);
    }

    /// Formats handed to libtraceevent on first use print every line as
    /// with all of them loaded up front (what trace-cmd does), and only the
    /// formats of the events in the file (plus the first one) get loaded.
    #[test]
    fn formats_registered_on_first_use_print_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.dat");
        let mut b = ustack_stitch::testdata::TraceBuilder::new(2);
        b.comm(10, "alpha")
            .sched_switch(0, 1_000, (10, "alpha"), (0, "swapper/0"))
            .sys_enter(1, 2_000, 10, 39)
            .sys_exit(1, 3_000, 10, 39, 7)
            .kernel_stack(0, 4_000, 10, &[0xffff_ffff_8100_0010])
            .sched_switch(1, 5_000, (0, "swapper/1"), (10, "alpha"));
        b.write(&path).unwrap();
        let file = TraceFile::open(&path).unwrap();
        let buf = &file.buffers()[0];
        let recs: Vec<_> = file
            .records(buf)
            .filter_map(|i| match i.unwrap() {
                Item::Event(r) => Some(r),
                Item::Lost { .. } => None,
            })
            .collect();
        assert_eq!(recs.len(), 5);
        let mut lazy = Printer::new(&file).unwrap();
        let mut eager = Printer::new(&file).unwrap();
        eager.register_all();
        assert_eq!(
            eager.registered.iter().filter(|&&r| r).count(),
            file.formats().len()
        );
        for r in &recs {
            let name = file.formats().of(r).unwrap().name.clone();
            let a = lazy.format(r, r.ts, &name, None).to_vec();
            let b = eager.format(r, r.ts, &name, None).to_vec();
            assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
            assert!(
                !a.windows(6).any(|w| w == b"FAILED"),
                "{}",
                String::from_utf8_lossy(&a)
            );
        }
        let mut want: Vec<u16> = recs.iter().filter_map(|r| r.common_type()).collect();
        want.extend(file.formats().ids().next());
        want.sort_unstable();
        want.dedup();
        let got: Vec<u16> = (0..=u16::MAX)
            .filter(|&id| lazy.registered[id as usize])
            .collect();
        assert_eq!(got, want);
        assert!(got.len() < file.formats().len(), "{got:?}");
    }

    /// The time column must match libtraceevent's own rendering.
    #[test]
    fn time_column_matches_libtraceevent() {
        let mut t = tep::Tep::new(8, 4096).unwrap();
        let fmt = "name: ev\nID: 1\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
print fmt: \"x\"\n";
        t.parse_event(fmt.as_bytes(), "test").unwrap();
        let mut seq = tep::TraceSeq::new();
        let data = [1u8, 0, 0, 0, 0, 0, 0, 0];
        for ts in [
            0u64,
            1,
            499,
            500,
            999_999,
            1_000_000_499,
            1_000_000_500,
            59_999_999_999,
            1_234_567_890_123,
            123_456_789_012_345_678,
        ] {
            for (fmt, div, prec) in [(c"%6.1000d", 1000, 6), (c"%9.1d", 1, 9)] {
                let mut rec = tep::Record::new(&data, ts, 0);
                seq.reset();
                // SAFETY: valid handle, seq and record; TIME selector for %d.
                unsafe {
                    tep::tep_print_event(
                        t.as_ptr(),
                        seq.as_mut_ptr(),
                        rec.as_mut_ptr(),
                        fmt.as_ptr(),
                        tep::TEP_PRINT_TIME,
                    )
                };
                let mut ours = Vec::new();
                format_time(&mut ours, ts, div, prec);
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(seq.as_bytes()),
                    "ts {ts} fmt {fmt:?}"
                );
            }
        }
    }
}
