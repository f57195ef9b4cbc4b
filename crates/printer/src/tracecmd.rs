//! The trace-cmd compatible event printer: libtraceevent set up from a
//! trace file the way trace-cmd sets it up (header page, formats,
//! kallsyms, printk formats, saved cmdlines, plugins) prints each event's
//! info (print format or plugin); the comm/pid/cpu and time columns are
//! written here the way libtraceevent writes them. The text is
//! byte-identical to `trace-cmd report` 3.1.6.

use anyhow::Result;
use ustack_tracedata::{Record, TraceFile};
use ustack_traceevent as tep;

use crate::plain::Plain;

/// [`Printer::plain`]: the id's print fmt was not looked at yet.
const PLAIN_UNKNOWN: u32 = u32::MAX;
/// [`Printer::plain`]: libtraceevent prints the id's info.
const PLAIN_NO: u32 = u32::MAX - 1;

/// libtraceevent set up from a trace file, the way trace-cmd sets it up.
pub struct Printer<'f> {
    pub(crate) tep: tep::FileTep,
    file: &'f TraceFile,
    seq: tep::TraceSeq,
    /// Divisor and precision of the time column; `None` when the clock does
    /// not count nanoseconds (then libtraceevent prints `%12d`).
    time: Option<(u64, u32)>,
    line: Vec<u8>,
    latency: bool,
    /// `Info`, or `InfoRaw` for `-R`.
    info: tep::Print,
    /// `--ts-diff`: the previous event's timestamp (in the unit shown),
    /// `None` before the first event or without the option.
    ts_diff: Option<Option<u64>>,
    /// `--ts-diff` in microseconds: the trace clock counts nanoseconds
    /// and the column shows microseconds.
    ts_diff_usecs: bool,
    /// Per event id: index into `plains` of its compiled print fmt, or
    /// [`PLAIN_UNKNOWN`] / [`PLAIN_NO`]; empty until the first event.
    plain: Vec<u32>,
    plains: Vec<Plain>,
}

impl<'f> Printer<'f> {
    /// Loads headers, formats, kallsyms, printk formats, cmdlines and the
    /// system plugins of `file` into a new libtraceevent handle.
    ///
    /// Like trace-cmd, a format libtraceevent cannot parse is not fatal (its
    /// events print without their info), and neither are kallsyms, printk
    /// formats or cmdlines it rejects: trace-cmd 3.1.6 ignores the result,
    /// keeping what libtraceevent took before the line it stopped at (e.g.
    /// a last cmdline cut to its pid, written when `saved_cmdlines` changed
    /// while trace-cmd extract copied it).
    ///
    /// Event formats are handed to libtraceevent when their id first shows
    /// up ([`Printer::format`]), or all at once by [`Printer::register_all`]
    /// (see [`tep::FileTep`]).
    pub fn new(file: &'f TraceFile) -> Result<Printer<'f>> {
        Printer::with_plugin_flags(file, 0)
    }

    /// [`Printer::new`] with `tep_flag`s set before the plugins load
    /// (`TEP_DISABLE_PLUGINS` for `-N`, `TEP_DISABLE_SYS_PLUGINS` for `-L`).
    pub fn with_plugin_flags(
        file: &'f TraceFile,
        plugin_flags: std::ffi::c_int,
    ) -> Result<Printer<'f>> {
        Printer::with_plugin_flags_and_order(file, plugin_flags, None)
    }

    /// [`Printer::with_plugin_flags`], handing the formats of `order` to
    /// libtraceevent right after the plugins (see
    /// [`tep::FileTep::with_flags_and_order`]).
    pub fn with_plugin_flags_and_order(
        file: &'f TraceFile,
        plugin_flags: std::ffi::c_int,
        order: Option<&[u16]>,
    ) -> Result<Printer<'f>> {
        let (t, _rejected) = tep::FileTep::with_flags_and_order(file, plugin_flags, order)?;
        Ok(Printer {
            tep: t,
            file,
            seq: tep::TraceSeq::new(),
            time: file.clock_counts_ns().then_some((1000, 6)),
            line: Vec::with_capacity(256),
            latency: false,
            info: tep::Print::Info,
            ts_diff: None,
            ts_diff_usecs: false,
            plain: Vec::new(),
            plains: Vec::new(),
        })
    }

    /// Hands every format not handed yet to libtraceevent, in file order
    /// (what trace-cmd does at open): needed before -F filters, which look
    /// events up by name.
    pub fn register_all(&mut self) {
        self.tep.register_all(self.file.formats());
    }

    /// Uses trace-cmd's latency format (`trace-cmd report -l`).
    pub fn set_latency(&mut self) {
        self.latency = true;
    }

    /// Prints every event's fields raw instead of its print format
    /// (`trace-cmd report -R`).
    pub fn set_raw(&mut self) {
        self.info = tep::Print::InfoRaw;
    }

    /// Prints timestamps as counted, without a decimal point
    /// (`trace-cmd report --raw-ts`).
    pub fn set_raw_ts(&mut self) {
        self.time = None;
    }

    /// Prints the time since the previous event after the timestamp
    /// (`trace-cmd report --ts-diff`); `trace_clock` is false when the
    /// timestamps were converted with `--ts2secs`. Call after the other
    /// time settings.
    pub fn set_ts_diff(&mut self, trace_clock: bool) {
        self.ts_diff = Some(None);
        self.ts_diff_usecs = trace_clock && self.time == Some((1000, 6));
    }

    /// `--ts-diff`'s previous timestamp, which trace-cmd shares between
    /// the files it merges: read it after printing with one printer and
    /// hand it to the next one with [`Printer::set_ts_diff_last`].
    pub fn ts_diff_last(&self) -> Option<u64> {
        self.ts_diff.flatten()
    }

    /// Sets `--ts-diff`'s previous timestamp (see [`Printer::ts_diff_last`]).
    pub fn set_ts_diff_last(&mut self, last: Option<u64>) {
        if self.ts_diff.is_some() {
            self.ts_diff = Some(last);
        }
    }

    /// The time column of `ts` as in event lines (with its leading space
    /// when in seconds), for `--first-event` and `--last-event`.
    pub fn time_text(&mut self, r: &Record<'_>, ts: u64) -> Vec<u8> {
        let mut rec = tep::Record::of(r, ts);
        let mut out = Vec::new();
        self.push_time(&mut out, &mut rec);
        out
    }

    /// The libtraceevent handle, to change plugins or event flags.
    pub fn tep_mut(&mut self) -> &mut tep::Tep {
        self.tep.tep_mut()
    }

    /// Prints nanosecond timestamps (`trace-cmd report -t`).
    pub fn set_nsec(&mut self) {
        self.tep.tep_mut().set_nsec_output();
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
            self.tep.register(self.file.formats(), id);
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
        let mut rec = tep::Record::of(r, ts);
        if self.latency {
            self.seq.reset();
            self.tep
                .tep()
                .print(&mut self.seq, &mut rec, tep::Print::LatencyHead);
            self.tep
                .tep()
                .print(&mut self.seq, &mut rec, tep::Print::Latency);
            self.line.extend_from_slice(self.seq.as_bytes());
            return self.finish_line(&mut rec, r.data, name);
        }
        let pid = r.common_pid().unwrap_or(0);
        let comm = self
            .tep
            .tep()
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
        self.finish_line(&mut rec, r.data, name)
    }

    /// Appends the time column (`" %6.1000d"`, `" %9.1d"` or `"%12d"`).
    fn push_time(&mut self, line: &mut Vec<u8>, rec: &mut tep::Record<'_>) {
        match self.time {
            Some((div, prec)) => {
                line.push(b' ');
                format_time(line, rec.ts(), div, prec);
            }
            None => {
                self.seq.reset();
                self.tep.tep().print(&mut self.seq, rec, tep::Print::Time);
                line.extend_from_slice(self.seq.as_bytes());
            }
        }
    }

    /// `--ts-diff`: `" %-8s"` of `(+N)`, N in microseconds (rounded) when
    /// the column is, else in the unit of the timestamps; empty first.
    fn push_ts_diff(&mut self, line: &mut Vec<u8>, ts: u64) {
        use std::io::Write as _;
        let Some(last) = self.ts_diff else { return };
        let t = if self.ts_diff_usecs {
            (ts + 500) / 1000
        } else {
            ts
        };
        let text = match last {
            Some(l) => format!("(+{})", t.wrapping_sub(l) as i64),
            None => String::new(),
        };
        self.ts_diff = Some(Some(t));
        let _ = write!(line, " {text:<8}");
    }

    /// The compiled print fmt of event `id` when libtraceevent would print
    /// its info from that print fmt alone (see [`crate::plain`]).
    fn plain(&mut self, id: u16) -> Option<&Plain> {
        if self.plain.is_empty() {
            self.plain = vec![PLAIN_UNKNOWN; 1 << 16];
        }
        let slot = self.plain[id as usize];
        if slot == PLAIN_UNKNOWN {
            let compiled = self
                .file
                .formats()
                .text_by_id(id)
                .filter(|(_, text)| tep::screen::check(text).is_ok())
                .and_then(|_| self.file.formats().by_id(id))
                .filter(|_| self.tep.tep().event_is_plain(id))
                .and_then(|f| Plain::compile(f, self.file.long_size()));
            self.plain[id as usize] = match compiled {
                Some(p) => {
                    self.plains.push(p);
                    (self.plains.len() - 1) as u32
                }
                None => PLAIN_NO,
            };
        }
        self.plains.get(self.plain[id as usize] as usize)
    }

    /// Appends the time, name and info columns to `self.line`.
    fn finish_line(&mut self, rec: &mut tep::Record<'_>, data: &[u8], name: &str) -> &[u8] {
        let mut line = std::mem::take(&mut self.line);
        self.push_time(&mut line, rec);
        line.push(b':');
        self.push_ts_diff(&mut line, rec.ts());
        line.push(b' ');
        line.extend_from_slice(name.as_bytes());
        line.extend_from_slice(b": ");
        line.resize(line.len() + 20usize.saturating_sub(name.len()), b' ');
        let plain = self.info == tep::Print::Info
            && rec
                .common_type()
                .and_then(|id| self.plain(id))
                .is_some_and(|p| p.write(data, &mut line));
        if !plain {
            self.seq.reset();
            self.tep.tep().print(&mut self.seq, rec, self.info);
            line.extend_from_slice(self.seq.as_bytes());
            if line.last() == Some(&b'\n') {
                line.pop();
            }
        }
        self.line = line;
        &self.line
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

#[cfg(test)]
mod tests {
    use super::*;
    use ustack_tracedata::Item;

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
        let mut b = ustack_testdata::TraceBuilder::new(1);
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
        let mut b = ustack_testdata::TraceBuilder::new(2);
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
            file.formats()
                .ids()
                .filter(|&id| eager.tep.is_registered(id))
                .count(),
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
            .filter(|&id| lazy.tep.is_registered(id))
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
            for (fmt, div, prec) in [
                (tep::Print::TimeUsecs, 1000, 6),
                (tep::Print::TimeNsecs, 1, 9),
            ] {
                let mut rec = tep::Record::new(&data, ts, 0);
                seq.reset();
                t.print(&mut seq, &mut rec, fmt);
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
