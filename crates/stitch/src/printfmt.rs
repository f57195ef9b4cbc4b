//! Event info text through libtraceevent, as `trace-cmd report` prints it
//! (the event's print format or its plugin), so that the stitched views
//! show `NR 35 (...)` rather than raw fields.

use std::collections::HashMap;

use ustack_tracedata::{Record, TraceFile};
use ustack_traceevent as tep;
use ustack_traceevent::FilterResult;

/// A libtraceevent handle loaded with a trace file's formats, kallsyms,
/// printk formats and cmdlines, with the `-F` filters of a stitched view.
pub struct InfoPrinter {
    tep: tep::FileTep,
    /// The event formats of the file (id, system, text), in file order,
    /// handed to libtraceevent when an event of that id is first printed.
    texts: Vec<(u16, String, Box<[u8]>)>,
    /// Index into `texts` by event id.
    by_id: HashMap<u16, usize>,
    seq: tep::TraceSeq,
    pos: Vec<tep::Filter>,
    neg: Vec<tep::Filter>,
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
    ///
    /// A format is handed to libtraceevent when [`InfoPrinter::info`] first
    /// meets its event (a file holds about 2,300, a trace uses a few), all
    /// of them when filters are set (they look events up by name). The
    /// printer does not borrow the file, so it keeps the format texts.
    pub fn new(file: &TraceFile) -> Option<InfoPrinter> {
        let (tep, _rejected) = tep::FileTep::new(file).ok()?;
        let formats = file.formats();
        let texts: Vec<(u16, String, Box<[u8]>)> = formats
            .ids()
            .filter_map(|id| {
                let (system, text) = formats.text_by_id(id)?;
                Some((id, system.to_string(), text.into()))
            })
            .collect();
        // The first id wins, as in the file's own table.
        let mut by_id = HashMap::with_capacity(texts.len());
        for (i, (id, _, _)) in texts.iter().enumerate() {
            by_id.entry(*id).or_insert(i);
        }
        // libtraceevent keeps the comms registered before its first comm
        // lookup in a list, one node and one copy per call, and sorts them
        // into a table (which then ignores repeats) at that lookup. The
        // sched_switch plugin registers both comms of every event it
        // prints, and the info text never looks a comm up: 150,000 groups
        // grew that list by about 9 MB. Look one up now.
        let _ = tep.tep().comm_of_pid(1);
        Some(InfoPrinter {
            tep,
            texts,
            by_id,
            seq: tep::TraceSeq::new(),
            pos: Vec::new(),
            neg: Vec::new(),
        })
    }

    /// The info text of `rec` on one line (newlines of multi-line plugins
    /// become `" | "`), or `None` when libtraceevent has nothing to say:
    /// `[FAILED TO PARSE]` (a print fmt it could not parse or that the
    /// screen refused) or `[UNKNOWN EVENT]` (a format it could not parse at
    /// all); callers then show the fields themselves.
    pub fn info(&mut self, rec: &Record<'_>) -> Option<String> {
        if let Some(id) = rec.common_type() {
            self.register(id);
        }
        let mut raw = tep::Record::of(rec, rec.ts);
        self.seq.reset();
        self.tep
            .tep()
            .print(&mut self.seq, &mut raw, tep::Print::Info);
        let s = String::from_utf8_lossy(self.seq.as_bytes());
        let s = s.trim_end_matches('\n');
        if s.is_empty() || s.contains("[FAILED TO PARSE]") || s == "[UNKNOWN EVENT]" {
            return None;
        }
        Some(s.replace('\n', " | "))
    }

    /// Hands the format of event `id` to libtraceevent unless done already.
    fn register(&mut self, id: u16) {
        if let Some((id, system, text)) = self.by_id.get(&id).map(|&i| &self.texts[i]) {
            self.tep.register_text(*id, system, text);
        }
    }

    /// Selects events with trace-cmd's `-F` filters (`filters`; with
    /// `invert`, as `-v`: hides what they match) for [`InfoPrinter::selects`].
    /// A filter libtraceevent does not accept is a one-line error.
    pub fn set_filters(&mut self, filters: &[String], invert: bool) -> Result<(), String> {
        if !filters.is_empty() {
            for i in 0..self.texts.len() {
                self.register(self.texts[i].0);
            }
        }
        for text in filters {
            let f = tep::Filter::new(self.tep.tep(), text).map_err(|e| e.0)?;
            if invert {
                self.neg.push(f);
            } else {
                self.pos.push(f);
            }
        }
        Ok(())
    }

    /// Whether the `-F` filters keep `rec`, as `trace-cmd report` decides
    /// for an event: one positive filter matches (or there is none) and no
    /// inverted one does. An event no positive filter names is not kept.
    pub fn selects(&mut self, rec: &Record<'_>) -> bool {
        let mut raw = tep::Record::of(rec, rec.ts);
        let found = |r| matches!(r, FilterResult::NoFilter | FilterResult::Match);
        let mut pos = FilterResult::NoFilter;
        for f in &self.pos {
            pos = f.test(&mut raw);
            if found(pos) {
                break;
            }
        }
        found(pos)
            && !self
                .neg
                .iter()
                .any(|f| f.test(&mut raw) == FilterResult::Match)
    }
}
