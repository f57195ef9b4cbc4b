//! `report` as trace-cmd prints it: every buffer's records merged by
//! time, trace-cmd's `-F`/`-v` filters (through libtraceevent's filter
//! engine) and `--cpu`, instance prefixes, `CPU:N [N EVENTS DROPPED]`
//! lines, and the `--stat`, `--uname` and `--version` forms.

use std::io::Write;

use anyhow::{bail, Result};
use ustack_tracedata::dat::option;
use ustack_tracedata::{Item, Record, TraceFile};
use ustack_traceevent as tep;

use crate::event_filter::EventFilters;
use crate::tracecmd::Printer;
use crate::wakeup::Wakeups;

/// What `report` prints, and how.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Only events of these CPUs; all when `None`.
    pub cpus: Option<Vec<u32>>,
    /// trace-cmd event filters (`-F`).
    pub filters: Vec<String>,
    /// Hide what these filters match (`-F` given after `-v`).
    pub neg_filters: Vec<String>,
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
    /// Every event's fields raw instead of its print format (`-R`).
    pub raw: bool,
    /// Which libtraceevent plugins to load (`-N`, `-L`).
    pub plugins: Plugins,
    /// Plugin options `[plugin:]name` with an optional value (`-O`).
    pub plugin_options: Vec<(String, Option<String>)>,
    /// Hide events that happened in hard interrupt context (`-I`).
    pub no_irqs: bool,
    /// Hide events that happened in soft interrupt context (`-S`).
    pub no_softirqs: bool,
    /// The time since the previous event after each timestamp (`--ts-diff`).
    pub ts_diff: bool,
    /// Timestamps as recorded: no offsets, no conversion (`--raw-ts`).
    pub raw_ts: bool,
    /// Ignore the DATE option of the file (`--nodate`).
    pub nodate: bool,
    /// Timestamps relative to the first event of the file (`--align-ts`).
    pub align_ts: bool,
    /// Timestamps count this many ticks per second (`--ts2secs`), for
    /// the files without their own [`Input::ts2secs`].
    pub ts2secs: Option<u64>,
    /// Print the filters as libtraceevent understood them and stop, when
    /// there are any (`-T`); the caller exits after [`report_files`].
    pub test_filters: bool,
    /// Note each CPU whose timestamps go backwards (`--ts-check`), in
    /// [`Written::warnings`].
    pub ts_check: bool,
    /// Wakeup latencies after sched_switch lines and a summary (`-w`).
    pub wakeup: bool,
    /// Only list the CPUs of the top buffer that hold data, each with the
    /// time of its first and/or last event (`--cpus`, `--first-event`,
    /// `--last-event`).
    pub cpu_list: Option<CpuList>,
    /// Account the events instead of printing them and print the profile
    /// (`--profile`, with `-G`, `-H`, `--by-comm`).
    pub profile: Option<crate::profile::ProfileOptions>,
    /// trace-cmd's `-V`: the file version, the plugins loaded and the
    /// events their handlers take over, before the report.
    pub verbose: bool,
    /// Kernel symbols (kallsyms text) added to the file's (`--kallsyms`).
    pub kallsyms: Option<Vec<u8>>,
}

/// Which plugins `report` loads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Plugins {
    /// The system's and the user's (trace-cmd's default).
    #[default]
    All,
    /// Only the user's, from `~/.local/lib/traceevent/plugins` (`-L`).
    NoSystem,
    /// None (`-N`).
    None,
}

/// What `--cpus`, `--first-event` and `--last-event` show per CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuList {
    /// The time of the CPU's first event.
    pub first: bool,
    /// The time of the CPU's last event.
    pub last: bool,
}

/// One buffer's stream with trace-cmd's filtering applied.
struct Stream<'a> {
    prefix: String,
    /// Reads the top buffer (not an instance).
    top: bool,
    /// The CPU's events; its current one is the next to show when `ready`.
    iter: ustack_tracedata::CpuCursor<'a>,
    ready: bool,
    done: bool,
    last_printed: Vec<bool>,
    /// The timestamp of the last record shown, for `--ts-check`.
    last_ts: u64,
    error: Option<ustack_tracedata::Error>,
}

struct Ctx<'f> {
    filters: EventFilters,
    stack_id: Option<u16>,
    user_stack_id: Option<u16>,
    no_irqs: bool,
    no_softirqs: bool,
    time: TimeCalc,
    file: &'f TraceFile,
}

impl<'a> Stream<'a> {
    /// Moves to the next event to show (if not there yet) and returns its
    /// timestamp as shown.
    fn peek(&mut self, cx: &Ctx<'_>) -> Result<Option<u64>> {
        while !self.ready && !self.done {
            match self.iter.advance() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return Ok(None);
                }
                Err(e) => {
                    // Keep going with the other CPUs; report the first
                    // error at the end.
                    if self.error.is_none() {
                        self.error = Some(e);
                    }
                    continue;
                }
            }
            if let Some(rec) = self.iter.record() {
                self.ready = show(&mut self.last_printed, cx, &rec);
            }
        }
        Ok(self
            .ready
            .then(|| self.iter.record())
            .flatten()
            .map(|r| cx.time.apply(r.ts)))
    }
}

/// libtracecmd's tracecmd_filter_match() (trace-cmd 3.1): an event that
/// no `-F` filter matches is hidden, unless it is a `kernel_stack` or
/// `user_stack` and the previous shown event of its CPU was shown;
/// `-v` filters hide what they match. Only shown events update the
/// per-CPU "previous event was shown" (a hidden one does not reset it).
/// `-I`/`-S` hide interrupt context events after that, in trace-cmd's
/// own loop: an event they hide still counts as shown for the stacks
/// that follow it.
fn show(last_printed: &mut Vec<bool>, cx: &Ctx<'_>, r: &Record<'_>) -> bool {
    let flags = r.common_flags().unwrap_or(0);
    let irq_hidden = (cx.no_irqs && flags & TRACE_FLAG_HARDIRQ != 0)
        || (cx.no_softirqs && flags & TRACE_FLAG_SOFTIRQ != 0);
    filter_match(last_printed, cx, r) && !irq_hidden
}

/// The `-F`/`-v` part of [`show`].
fn filter_match(last_printed: &mut Vec<bool>, cx: &Ctx<'_>, r: &Record<'_>) -> bool {
    let f = &cx.filters;
    if f.is_empty() {
        return true;
    }
    let mut rec = tep::Record::of(r, r.ts);
    let cpu = r.cpu as usize;
    if last_printed.len() <= cpu {
        last_printed.resize(cpu + 1, false);
    }
    if !f.kept(&mut rec) {
        let id = r.common_type();
        let is_stack = id.is_some() && (id == cx.stack_id || id == cx.user_stack_id);
        if !(is_stack && last_printed[cpu]) {
            return false;
        }
    }
    let hidden = f.hidden(&mut rec);
    last_printed[cpu] = !hidden;
    !hidden
}

/// `common_flags`: the event happened in hard interrupt context.
const TRACE_FLAG_HARDIRQ: u8 = 0x08;
/// `common_flags`: the event happened in soft interrupt context.
const TRACE_FLAG_SOFTIRQ: u8 = 0x10;

/// libtracecmd's timestamp_calc(): a recorded timestamp as shown.
#[derive(Debug, Clone, Copy, Default)]
struct TimeCalc {
    /// `--raw-ts`: shown as recorded.
    raw: bool,
    /// `--ts2secs`: nanoseconds per tick.
    ns_per_tick: Option<f64>,
    /// DATE and OFFSET options, minus the first timestamp for `--align-ts`.
    offset: i64,
}

impl TimeCalc {
    fn apply(&self, ts: u64) -> u64 {
        if self.raw {
            return ts;
        }
        // C: `ts *= handle->ts2secs` with a double, truncated back.
        let ts = match self.ns_per_tick {
            Some(m) => (ts as f64 * m) as u64,
            None => ts,
        };
        ts.wrapping_add(self.offset as u64)
    }
}

fn print_version(file: &TraceFile, out: &mut dyn Write) -> Result<()> {
    match file.tool_version() {
        Some(v) => writeln!(out, "{v}")?,
        None => writeln!(out, " version was not recorded in this file")?,
    }
    out.flush()?;
    Ok(())
}

/// `-O` plugin options, set before the plugins load, and the flags for
/// `-N` and `-L`.
fn plugin_flags(args: &ReportOptions) -> Result<std::ffi::c_int> {
    for (name, value) in &args.plugin_options {
        tep::plugin_add_option(name, value.as_deref())?;
    }
    Ok(match args.plugins {
        Plugins::All => 0,
        Plugins::NoSystem => tep::TEP_DISABLE_SYS_PLUGINS,
        Plugins::None => tep::TEP_DISABLE_PLUGINS,
    })
}

/// The first and last event of each CPU of the top buffer, as shown.
fn cpu_bounds(
    file: &TraceFile,
    time: TimeCalc,
) -> Vec<(u32, Option<Record<'_>>, Option<Record<'_>>)> {
    let Some(top) = file.buffer("") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in &top.cpus {
        let mut first = None;
        let mut last = None;
        for it in file.records_of_cpus(top, Some(&[c.cpu])) {
            if let Ok(Item::Event(mut r)) = it {
                r.ts = time.apply(r.ts);
                if first.is_none() {
                    first = Some(r);
                }
                last = Some(r);
            }
        }
        if first.is_some() {
            out.push((c.cpu, first, last));
        }
    }
    out
}

/// `--align-ts`: the earliest first event of the top buffer's CPUs (0
/// without one), whatever `--cpu` selects.
fn first_ts(file: &TraceFile, time: TimeCalc) -> u64 {
    cpu_bounds(file, time)
        .iter()
        .filter_map(|(_, f, _)| f.as_ref().map(|r| r.ts))
        .min()
        .unwrap_or(0)
}

/// `--cpus`, `--first-event`, `--last-event`: the CPUs of the top buffer
/// that hold events, with the time of their first and/or last event.
fn print_cpu_list(
    file: &TraceFile,
    printer: &mut Printer<'_>,
    time: TimeCalc,
    list: CpuList,
    out: &mut dyn Write,
) -> Result<()> {
    writeln!(out, "List of CPUs in {} with data:", file.path().display())?;
    for (cpu, first, last) in cpu_bounds(file, time) {
        write!(out, "  {cpu}")?;
        for (show, label, r) in [(list.first, "First", first), (list.last, "Last", last)] {
            if let (true, Some(r)) = (show, r) {
                // The time column without its separating space: as wide as
                // in event lines ("%5llu.%06llu").
                let t = printer.time_text(&r, r.ts);
                write!(out, "\t{label} event:")?;
                out.write_all(t.strip_prefix(b" ").unwrap_or(&t))?;
            }
        }
        writeln!(out)?;
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
        // after the other, page aligned, from the second page of a
        // temporary file.
        let compressed = file.compression().is_some_and(|(c, _)| c != "none");
        let page = top.page_size.max(1) as u64;
        let first = top
            .cpus
            .iter()
            .find(|c| c.file_size > 0)
            .map_or(0, |c| c.file_offset);
        // Uncompressed into a temporary file whose data starts one page in.
        let mut next = if file.version() >= 7 { page } else { first };
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
    report_files(&[Input::new(file)], args, out).map(|_| ())
}

/// What [`report_files`] has to say besides the report.
#[derive(Debug, Default)]
pub struct Written {
    /// `--ts-check`: the records that went back in time on their CPU.
    pub warnings: Vec<String>,
}

/// One trace file of [`report_files`].
#[derive(Debug, Clone)]
pub struct Input<'f> {
    /// The file.
    pub file: &'f TraceFile,
    /// Its name in line prefixes when several files are read (trace-cmd:
    /// the base name).
    pub name: String,
    /// Events (format ids of this file) printed raw (`-r`).
    pub raw_events: Vec<u16>,
    /// Events (format ids of this file) printed without their plugin
    /// handler (`-n`).
    pub no_handler_events: Vec<u16>,
    /// This file's timestamps count this many ticks per second
    /// (`--ts2secs` after its `-i`).
    pub ts2secs: Option<u64>,
    /// Nanoseconds added to this file's timestamps (`--ts-offset` after
    /// its `-i`, from the second file on), before the file's own DATE and
    /// OFFSET options, as libtracecmd adds them.
    pub ts_offset: i64,
}

impl<'f> Input<'f> {
    /// `file`, named by its base name, no per-event settings.
    pub fn new(file: &'f TraceFile) -> Input<'f> {
        let name = file
            .path()
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        Input {
            file,
            name,
            raw_events: Vec::new(),
            no_handler_events: Vec::new(),
            ts2secs: None,
            ts_offset: 0,
        }
    }
}

/// libtraceevent and the filters for one file.
struct Source<'f> {
    printer: Printer<'f>,
    cx: Ctx<'f>,
}

/// Sets up the printer of one input as the options say.
fn printer_for<'f>(
    input: &Input<'f>,
    args: &ReportOptions,
    out: &mut dyn Write,
) -> Result<Printer<'f>> {
    let flags = plugin_flags(args)?;
    let mut printer = if args.verbose {
        crate::verbose::printer(input.file, flags, out)?
    } else {
        Printer::with_plugin_flags(input.file, flags)?
    };
    if let Some(text) = &args.kallsyms {
        printer.tep_mut().parse_kallsyms(text)?;
    }
    if args.nsec {
        printer.set_nsec();
    }
    if args.latency {
        printer.set_latency();
    }
    if args.raw {
        printer.set_raw();
    }
    if args.raw_ts {
        printer.set_raw_ts();
    }
    if args.ts_diff {
        printer.set_ts_diff(input.ts2secs.or(args.ts2secs).is_none());
    }
    if !args.filters.is_empty()
        || !args.neg_filters.is_empty()
        || !input.raw_events.is_empty()
        || !input.no_handler_events.is_empty()
    {
        printer.register_all();
    }
    for &id in &input.raw_events {
        printer
            .tep_mut()
            .set_event_flags(id, tep::TEP_EVENT_FL_PRINTRAW);
    }
    for &id in &input.no_handler_events {
        printer
            .tep_mut()
            .set_event_flags(id, tep::TEP_EVENT_FL_NOHANDLE);
    }
    Ok(printer)
}

/// Writes the report of one file, or of several merged by time as
/// trace-cmd merges several `-i` files: a `NAME: cpus=N` line per file,
/// then every event prefixed with its file's (or instance's) name.
pub fn report_files(
    inputs: &[Input<'_>],
    args: &ReportOptions,
    out: &mut dyn Write,
) -> Result<Written> {
    let multi = inputs.len() > 1;
    if multi && args.wakeup {
        bail!("Wakeup tracing can only be done on a single input file");
    }
    let mut width = if multi {
        inputs.iter().map(|i| i.name.len()).max().unwrap_or(0)
    } else {
        0
    };
    let Some(mut sources) = open_sources(inputs, args, &mut width, out)? else {
        return Ok(Written::default());
    };
    let mut streams = open_streams(&sources, args.cpus.as_deref(), multi, width);
    print_merged(inputs, &mut sources, &mut streams, args, out)
}

/// The printer and context of each input, its `cpus=N` line written, with
/// `width` grown to fit its instance names; `None` when an option ends the
/// report there (`--test-filters`, `--cpu-list`, `--version`, `--uname`,
/// `--stat`).
fn open_sources<'a, 'f>(
    inputs: &'a [Input<'f>],
    args: &ReportOptions,
    width: &mut usize,
    out: &mut dyn Write,
) -> Result<Option<Vec<(&'a Input<'f>, Source<'f>)>>> {
    let multi = inputs.len() > 1;
    let mut sources = Vec::new();
    let mut first: Option<u64> = None;
    for input in inputs {
        let file = input.file;
        let mut printer = printer_for(input, args, out)?;
        let testing =
            args.test_filters && !(args.filters.is_empty() && args.neg_filters.is_empty());
        if testing {
            out.flush()?;
            // The flag only makes filter parsing print what it parsed.
            printer.tep_mut().set_test_filters(true);
        }
        let filters = EventFilters::new(printer.tep.tep(), &args.filters, &args.neg_filters)
            .map_err(anyhow::Error::msg)?;
        if testing {
            // libtraceevent printed the filters (to the C stdout); trace-cmd
            // stops there.
            return Ok(None);
        }
        let time = TimeCalc {
            raw: args.raw_ts,
            ns_per_tick: input
                .ts2secs
                .or(args.ts2secs)
                .map(|hz| 1e9 / hz.max(1) as f64),
            offset: input.ts_offset.wrapping_add(file.ts_offset(!args.nodate)),
        };
        if let Some(list) = args.cpu_list {
            print_cpu_list(file, &mut printer, time, list, out)?;
            return Ok(None);
        }
        if args.align_ts {
            let t = first_ts(file, time);
            first = Some(first.map_or(t, |f| f.min(t)));
        }
        if multi {
            write!(out, "{:>width$}: ", input.name)?;
        }
        writeln!(out, "cpus={}", file.cpu_count())?;
        // Like trace-cmd: --version wins over --uname, which wins over --stat.
        if args.version || args.uname {
            if args.uname && !args.version {
                match file.uname() {
                    Some(u) => writeln!(out, "{u}")?,
                    None => writeln!(out, " uname was not recorded in this file")?,
                }
            }
            print_version(file, out)?;
            continue;
        }
        if args.stat {
            print_stats(file, out)?;
            continue;
        }
        for b in file.buffers().iter().filter(|b| !b.is_top()) {
            *width = (*width).max(b.name.len());
        }
        let id_of = |name| file.formats().by_name("ftrace", name).map(|f| f.id);
        let cx = Ctx {
            filters,
            stack_id: id_of("kernel_stack"),
            user_stack_id: id_of("user_stack"),
            no_irqs: args.no_irqs,
            no_softirqs: args.no_softirqs,
            time,
            file,
        };
        sources.push((input, Source { printer, cx }));
    }
    if args.version || args.uname || args.stat {
        out.flush()?;
        return Ok(None);
    }
    if let Some(first) = first {
        for (_, s) in &mut sources {
            s.cx.time.offset = s.cx.time.offset.wrapping_sub(first as i64);
        }
    }
    Ok(Some(sources))
}

/// One stream per CPU of every buffer of every source, with the prefix its
/// lines get; `cpus`: only those (`--cpu`, in the order given).
fn open_streams<'f>(
    sources: &[(&Input<'f>, Source<'f>)],
    cpus: Option<&[u32]>,
    multi: bool,
    width: usize,
) -> Vec<(usize, Stream<'f>)> {
    let mut streams: Vec<(usize, Stream<'_>)> = Vec::new();
    for (n, (input, src)) in sources.iter().enumerate() {
        let file = src.cx.file;
        let has_instances = file.buffers().iter().any(|b| !b.is_top());
        for b in file.buffers() {
            let prefix = if b.is_top() && multi {
                format!("{:>width$}: ", input.name)
            } else if b.is_top() && has_instances {
                format!("{:>width$}  ", "")
            } else if b.is_top() {
                String::new()
            } else {
                format!("{:>width$}: ", b.name)
            };
            // One stream per CPU, merged here by the timestamps as shown:
            // trace-cmd compares converted timestamps (--ts2secs can make
            // two equal), the lower CPU (or the earlier --cpu) first.
            let all: Vec<u32> = b.cpus.iter().map(|c| c.cpu).collect();
            for &cpu in cpus.unwrap_or(&all) {
                let Some(iter) = file.cpu_cursor(b, cpu) else {
                    continue;
                };
                streams.push((
                    n,
                    Stream {
                        prefix: prefix.clone(),
                        top: b.is_top(),
                        iter: iter.trace_cmd_compat(),
                        ready: false,
                        done: false,
                        last_printed: Vec::new(),
                        last_ts: 0,
                        error: None,
                    },
                ));
            }
        }
    }
    streams
}

/// Prints the events of `streams` merged by their timestamps as shown, as
/// trace-cmd does (or feeds them to `--profile`), and what `--wakeup`
/// sums up after them.
fn print_merged<'f>(
    inputs: &[Input<'f>],
    sources: &mut [(&Input<'f>, Source<'f>)],
    streams: &mut [(usize, Stream<'f>)],
    args: &ReportOptions,
    out: &mut dyn Write,
) -> Result<Written> {
    let mut written = Written::default();
    let multi = inputs.len() > 1;
    let mut wakeups = args.wakeup.then(|| Wakeups::new(inputs[0].file));
    let mut profile = match &args.profile {
        Some(_) if multi => bail!("--profile reads one file"),
        Some(p) => Some(crate::profile::Profile::new(inputs[0].file, p)?),
        None => None,
    };
    let mut ts_diff_last = None;
    loop {
        let mut best: Option<(usize, u64)> = None;
        for (i, (n, s)) in streams.iter_mut().enumerate() {
            if let Some(ts) = s.peek(&sources[*n].1.cx)? {
                if best.is_none_or(|(_, b)| ts < b) {
                    best = Some((i, ts));
                }
            }
        }
        let Some((i, ts)) = best else { break };
        let (n, s) = &mut streams[i];
        let src = &mut sources[*n].1;
        s.ready = false;
        let (Some(rec), lost) = (s.iter.record(), s.iter.lost()) else {
            continue;
        };
        if args.ts_check && s.last_ts > ts {
            written.warnings.push(format!(
                "record on cpu {} went backwards: {} to {ts} delta: -{}",
                rec.cpu,
                s.last_ts,
                s.last_ts - ts
            ));
        }
        s.last_ts = ts;
        if let Some(p) = profile.as_mut() {
            if !s.top {
                // trace-cmd prints the record's instance prefix, then dies;
                // its name is right-aligned in twice its width plus two
                // (seen with one instance of 2, 4 and 14 characters).
                let width = s.prefix.len().saturating_sub(2);
                let name = s.prefix.trim_end_matches(": ").trim_start();
                write!(out, "{name:>0$}: ", 2 * width + 2)?;
                out.flush()?;
                return Err(crate::profile::InstanceRecord.into());
            }
            p.record(src.cx.file, &rec, ts, lost.is_some());
            continue;
        }
        let name = src
            .cx
            .file
            .formats()
            .of(&rec)
            .map(|f| f.name.as_str())
            .unwrap_or("[UNKNOWN EVENT]");
        out.write_all(s.prefix.as_bytes())?;
        // trace-cmd keeps one --ts-diff "previous timestamp" for all files.
        src.printer.set_ts_diff_last(ts_diff_last);
        out.write_all(src.printer.format(&rec, ts, name, lost))?;
        ts_diff_last = src.printer.ts_diff_last();
        if let Some(w) = wakeups.as_mut() {
            w.record(&rec, ts, out)?;
        }
        out.write_all(b"\n")?;
    }
    if let Some(w) = &wakeups {
        w.summary(out)?;
    }
    if let (Some(p), Some((_, src))) = (profile.as_mut(), sources.first()) {
        p.write(out, &src.printer)?;
    }
    out.flush()?;
    if let Some(e) = streams.iter_mut().find_map(|(_, s)| s.error.take()) {
        return Err(e.into());
    }
    Ok(written)
}
