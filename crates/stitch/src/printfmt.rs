//! Event info text through libtraceevent, as `trace-cmd report` prints it
//! (the event's print format or its plugin), so that the stitched views
//! show `NR 35 (...)` rather than raw fields.

use std::ffi::c_int;

use libtraceevent_sys as tep;
use tracedata::{Record, TraceFile};

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
    /// fall back to the generic field text). Formats libtraceevent cannot
    /// parse are skipped, as trace-cmd does.
    pub fn new(file: &TraceFile) -> Option<InfoPrinter> {
        let mut t = tep::Tep::new(file.long_size(), file.page_size()).ok()?;
        t.set_cpus(file.cpu_count() as usize);
        t.load_plugins();
        t.parse_header_page(file.header_page_text(), file.long_size())
            .ok()?;
        for f in file.ftrace_format_texts() {
            let _ = t.parse_event(f, "ftrace");
        }
        for (sys, list) in file.event_format_texts() {
            for f in list {
                let _ = t.parse_event(f, sys);
            }
        }
        if !file.kallsyms().is_empty() {
            let _ = t.parse_kallsyms(file.kallsyms());
        }
        if !file.printk_formats().is_empty() {
            let _ = t.parse_printk_formats(file.printk_formats());
        }
        if !file.cmdlines().is_empty() {
            let _ = t.parse_saved_cmdlines(file.cmdlines());
        }
        Some(InfoPrinter {
            tep: t,
            seq: tep::TraceSeq::new(),
        })
    }

    /// The info text of `rec` on one line (newlines of multi-line plugins
    /// become `" | "`), or `None` when libtraceevent has nothing to say.
    pub fn info(&mut self, rec: &Record<'_>) -> Option<String> {
        let mut raw = tep::tep_record {
            ts: rec.ts,
            offset: 0,
            missed_events: 0,
            record_size: rec.data.len() as c_int + 4,
            size: rec.data.len() as c_int,
            // libtraceevent only reads the data.
            data: rec.data.as_ptr() as *mut _,
            cpu: rec.cpu as c_int,
            ref_count: 1,
            locked: 0,
            priv_: std::ptr::null_mut(),
        };
        self.seq.reset();
        // SAFETY: the handle and the seq are valid and owned by self; the
        // record's data borrows `rec` for the duration of the call and is
        // only read; the `%s` conversion gets the TEP_PRINT_INFO selector,
        // as libtraceevent documents.
        unsafe {
            tep::tep_print_event(
                self.tep.as_ptr(),
                self.seq.as_mut_ptr(),
                &mut raw,
                c"%s".as_ptr(),
                tep::TEP_PRINT_INFO.as_ptr(),
            );
        }
        let s = String::from_utf8_lossy(self.seq.as_bytes());
        let s = s.trim_end_matches('\n');
        if s.is_empty() || s.contains("[FAILED TO PARSE]") {
            return None;
        }
        Some(s.replace('\n', " | "))
    }
}
