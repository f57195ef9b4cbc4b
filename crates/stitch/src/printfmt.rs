//! Event info text through libtraceevent, as `trace-cmd report` prints it
//! (the event's print format or its plugin), so that the stitched views
//! show `NR 35 (...)` rather than raw fields.

use ustack_tracedata::{Record, TraceFile};
use ustack_traceevent_sys as tep;

/// A libtraceevent handle set up from `file`'s sections the way trace-cmd
/// sets it up ([`tep::Tep::load`]), with the sections libtraceevent
/// rejected. Shared by [`InfoPrinter`] and `tracer-cli report`.
pub fn load_tep(file: &TraceFile) -> Result<(tep::Tep, Vec<tep::TepError>), tep::TepError> {
    tep::Tep::load(&tep::TraceSections {
        long_size: file.long_size(),
        page_size: file.page_size(),
        cpus: file.cpu_count() as usize,
        header_page: file.header_page_text(),
        ftrace_formats: file.ftrace_format_texts(),
        event_formats: file.event_format_texts(),
        kallsyms: file.kallsyms(),
        printk_formats: file.printk_formats(),
        cmdlines: file.cmdlines(),
    })
}

/// Like [`load_tep`], but registers no event format: the caller hands each
/// one to [`tep::Tep::parse_event`] when its events first show up (a file
/// holds the format of every event of the system, about 2,300, and parsing
/// them all is most of libtraceevent's setup). Printing an event only needs
/// its own format, plus the kallsyms, printk formats and cmdlines loaded
/// here. `plugin_flags` are `tep_flag`s set before the plugins load
/// (`TEP_DISABLE_PLUGINS`, `TEP_DISABLE_SYS_PLUGINS` or 0).
pub fn load_tep_without_formats(
    file: &TraceFile,
    plugin_flags: std::ffi::c_int,
) -> Result<(tep::Tep, Vec<tep::TepError>), tep::TepError> {
    tep::Tep::load_with_flags(
        &tep::TraceSections {
            long_size: file.long_size(),
            page_size: file.page_size(),
            cpus: file.cpu_count() as usize,
            header_page: file.header_page_text(),
            ftrace_formats: &[],
            event_formats: &[],
            kallsyms: file.kallsyms(),
            printk_formats: file.printk_formats(),
            cmdlines: file.cmdlines(),
        },
        plugin_flags,
    )
}

/// A libtraceevent handle loaded with a trace file's formats, kallsyms,
/// printk formats and cmdlines.
pub struct InfoPrinter {
    tep: tep::Tep,
    seq: tep::TraceSeq,
}

impl std::fmt::Debug for InfoPrinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InfoPrinter")
    }
}

impl InfoPrinter {
    /// Sets up libtraceevent for `file`; `None` if it cannot (then callers
    /// fall back to the generic field text). Formats, kallsyms, printk
    /// formats or cmdlines libtraceevent cannot parse are skipped.
    pub fn new(file: &TraceFile) -> Option<InfoPrinter> {
        let (tep, _rejected) = load_tep(file).ok()?;
        Some(InfoPrinter {
            tep,
            seq: tep::TraceSeq::new(),
        })
    }

    /// The info text of `rec` on one line (newlines of multi-line plugins
    /// become `" | "`), or `None` when libtraceevent has nothing to say:
    /// `[FAILED TO PARSE]` (a print fmt it could not parse or that
    /// [`tep::Tep::parse_event`] refused) or `[UNKNOWN EVENT]` (a format it
    /// could not parse at all); callers then show the fields themselves.
    pub fn info(&mut self, rec: &Record<'_>) -> Option<String> {
        let mut raw = tep::Record::new(rec.data, rec.ts, rec.cpu);
        self.seq.reset();
        self.tep.print(&mut self.seq, &mut raw, tep::Print::Info);
        let s = String::from_utf8_lossy(self.seq.as_bytes());
        let s = s.trim_end_matches('\n');
        if s.is_empty() || s.contains("[FAILED TO PARSE]") || s == "[UNKNOWN EVENT]" {
            return None;
        }
        Some(s.replace('\n', " | "))
    }
}
