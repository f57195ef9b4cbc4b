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
    // Declared before `tep`: the filters are freed before the handle.
    filters: Filters,
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
        // libtraceevent keeps the comms registered before its first comm
        // lookup in a list, one node and one copy per call, and sorts them
        // into a table (which then ignores repeats) at that lookup. The
        // sched_switch plugin registers both comms of every event it
        // prints, and the info text never looks a comm up: 150,000 groups
        // grew that list by about 9 MB. Look one up now.
        let _ = tep.comm_of_pid(1);
        Some(InfoPrinter {
            filters: Filters::default(),
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

    /// Selects events with trace-cmd's `-F` filters (`filters`; with
    /// `invert`, as `-v`: hides what they match) for [`InfoPrinter::selects`].
    /// A filter libtraceevent does not accept is a one-line error.
    pub fn set_filters(&mut self, filters: &[String], invert: bool) -> Result<(), String> {
        for text in filters {
            // SAFETY: the handle is live; the filter is freed in Filters'
            // Drop, which runs before the handle's (field order).
            let flt = unsafe { tep::tep_filter_alloc(self.tep.as_ptr()) };
            if flt.is_null() {
                return Err("cannot allocate a filter".to_string());
            }
            if invert {
                self.filters.neg.push(flt);
            } else {
                self.filters.pos.push(flt);
            }
            let c = std::ffi::CString::new(text.as_str())
                .map_err(|_| format!("bad filter {text:?}: it contains NUL"))?;
            // SAFETY: flt is a live filter and c is NUL-terminated.
            let r = unsafe { tep::tep_filter_add_filter_str(flt, c.as_ptr()) };
            if r < 0 {
                let mut buf = [0u8; 200];
                // SAFETY: buf is writable for its length; the library writes
                // a NUL-terminated string into at most that many bytes.
                unsafe { tep::tep_filter_strerror(flt, r, buf.as_mut_ptr().cast(), buf.len()) };
                let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                return Err(format!(
                    "bad filter {text:?}: {}",
                    String::from_utf8_lossy(&buf[..end])
                ));
            }
        }
        Ok(())
    }

    /// Whether the `-F` filters keep `rec`, as `trace-cmd report` decides
    /// for an event: one positive filter matches (or there is none) and no
    /// inverted one does. An event no positive filter names is not kept.
    pub fn selects(&mut self, rec: &Record<'_>) -> bool {
        let mut raw = tep::Record::new(rec.data, rec.ts, rec.cpu);
        let found = |r| r == tep::TEP_ERRNO__NO_FILTER || r == tep::TEP_ERRNO__FILTER_MATCH;
        let mut pos = tep::TEP_ERRNO__NO_FILTER;
        for &f in &self.filters.pos {
            // SAFETY: f is a live filter of this handle, raw a valid record.
            pos = unsafe { tep::tep_filter_match(f, raw.as_mut_ptr()) };
            if found(pos) {
                break;
            }
        }
        found(pos)
            && !self.filters.neg.iter().any(|&f| {
                // SAFETY: as above.
                let r = unsafe { tep::tep_filter_match(f, raw.as_mut_ptr()) };
                r == tep::TEP_ERRNO__FILTER_MATCH
            })
    }
}

/// The `-F` filters of an [`InfoPrinter`].
///
/// # Invariants
///
/// Every pointer comes from `tep_filter_alloc` on the printer's handle,
/// which outlives it, and is freed once, in Drop.
#[derive(Default)]
struct Filters {
    pos: Vec<*mut tep::tep_event_filter>,
    neg: Vec<*mut tep::tep_event_filter>,
}

impl Drop for Filters {
    fn drop(&mut self) {
        for &f in self.pos.iter().chain(&self.neg) {
            // SAFETY: allocated by tep_filter_alloc, freed once (invariant).
            unsafe { tep::tep_filter_free(f) };
        }
    }
}
