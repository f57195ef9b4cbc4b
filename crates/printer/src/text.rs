//! Event names and info text for the stitched views, as `trace-cmd
//! report` prints them: libtraceevent's text (the event's print format or
//! its plugin) when it can read the file, else a generic rendering of the
//! fields; and trace-cmd's `-F` filters, which libtraceevent evaluates.

use std::collections::HashMap;

use ustack_stitch::trace::Index;
use ustack_stitch::view::EventText;
use ustack_tracedata::format::{EventFormat, FieldKind};
use ustack_tracedata::{FieldRef, Record, TraceFile};
use ustack_traceevent as tep;

use crate::event_filter::EventFilters;

/// Produces the name and info text of events: libtraceevent's text (as
/// `trace-cmd report` prints it) when set up for a file, the generic field
/// text otherwise and for the stack and cookie events.
#[derive(Debug, Default)]
pub struct Texts {
    printer: Option<InfoPrinter>,
}

impl Texts {
    /// Generic field text only.
    pub fn generic() -> Texts {
        Texts::default()
    }

    /// libtraceevent's text for the events of `file`.
    pub fn for_file(file: &TraceFile) -> Texts {
        Texts {
            printer: InfoPrinter::new(file),
        }
    }

    /// Selects events with trace-cmd's `-F` filters: `pos` keep what they
    /// match, `neg` (given after `-v`) hide it (see
    /// [`InfoPrinter::set_filters`]); an error without libtraceevent.
    pub fn set_filters(&mut self, pos: &[String], neg: &[String]) -> Result<(), String> {
        match self.printer.as_mut() {
            Some(p) => p.set_filters(pos, neg),
            None if pos.is_empty() && neg.is_empty() => Ok(()),
            None => Err("-F needs libtraceevent, which cannot read this file".to_string()),
        }
    }

    /// Whether the `-F` filters keep `rec` (all are kept without filters).
    pub fn selects(&mut self, rec: &Record<'_>) -> bool {
        self.printer.as_mut().is_none_or(|p| p.selects(rec))
    }
}

impl EventText for Texts {
    fn event_text(&mut self, idx: &Index, seq: u64, rec: Option<&Record<'_>>) -> (String, String) {
        let name = idx.event_name(seq);
        let fmt = idx
            .events
            .get(seq as usize)
            .and_then(|e| idx.formats.get(&e.id));
        let info = match (fmt, rec) {
            (Some(f), Some(r)) => {
                let special = f.system == "ftrace"
                    && matches!(
                        f.name.as_str(),
                        "user_unwind_cookie"
                            | "user_unwind_stack"
                            | "user_unwind_stack_snapshot"
                            | "user_stack"
                            | "kernel_stack"
                    );
                let printed = if special {
                    None
                } else {
                    self.printer.as_mut().and_then(|p| p.info(r))
                };
                printed.unwrap_or_else(|| fields_text(f, r))
            }
            _ => String::new(),
        };
        (name, info)
    }
}

/// Name and generic field text of event `seq` (see [`Texts`]).
pub fn event_text(idx: &Index, seq: u64, rec: Option<&Record<'_>>) -> (String, String) {
    Texts::generic().event_text(idx, seq, rec)
}

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
    filters: EventFilters,
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
            filters: EventFilters::default(),
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

    /// Selects events with trace-cmd's `-F` filters (`pos`) and `-v` ones
    /// (`neg`) for [`InfoPrinter::selects`]. A filter libtraceevent does not
    /// accept is a one-line error.
    pub fn set_filters(&mut self, pos: &[String], neg: &[String]) -> Result<(), String> {
        // Filters look events up by name: every format must be known.
        if !pos.is_empty() || !neg.is_empty() {
            for i in 0..self.texts.len() {
                self.register(self.texts[i].0);
            }
        }
        self.filters = EventFilters::new(self.tep.tep(), pos, neg)?;
        Ok(())
    }

    /// Whether the filters keep `rec`, as `trace-cmd report` decides for an
    /// event (see [`EventFilters::selects`]).
    pub fn selects(&mut self, rec: &Record<'_>) -> bool {
        self.filters.is_empty() || self.filters.selects(&mut tep::Record::of(rec, rec.ts))
    }
}

/// A generic one-line rendering of a record's fields (`name=value`),
/// common fields left out; strings quoted when they contain spaces, arrays
/// in braces.
pub fn fields_text(fmt: &EventFormat, rec: &Record<'_>) -> String {
    let mut out = String::new();
    for f in fmt.fields.iter().filter(|f| !f.name.starts_with("common_")) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&f.name);
        out.push('=');
        if f.is_string() {
            match rec.str_field(fmt, &f.name) {
                Ok(s) => out.push_str(&s),
                Err(_) => out.push('?'),
            }
        } else if f.kind == FieldKind::Scalar {
            let v = if f.signed {
                rec.i64_field(fmt, &f.name).map(|v| v.to_string())
            } else {
                rec.u64_field(fmt, &f.name).map(|v| {
                    if f.size >= 8 || f.name.contains("addr") || f.name.contains("cookie") {
                        format!("{v:#x}")
                    } else {
                        v.to_string()
                    }
                })
            };
            out.push_str(v.as_deref().unwrap_or("?"));
        } else {
            // Stack arrays are declared with 8 slots but sized by their
            // entries: read what the record holds.
            let v = rec.u64_array_field(fmt, &f.name).or_else(|e| match f.kind {
                FieldKind::Array { count: 1.. } => Ok(FieldRef::new(f, fmt.long_size)
                    .inline_elems(rec.data)
                    .collect()),
                // A trailing array of elements of no integer size.
                FieldKind::Array { count: 0 } => Ok(Vec::new()),
                _ => Err(e),
            });
            match v {
                Ok(v) => {
                    out.push('{');
                    for (i, x) in v.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&format!("{x:#x}"));
                    }
                    out.push('}');
                }
                Err(_) => out.push('?'),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ustack_testdata as testdata;

    fn format_of(system: &str, id: u16) -> EventFormat {
        let s = testdata::event_systems()
            .into_iter()
            .find(|s| s.name == system)
            .unwrap();
        s.formats
            .iter()
            .map(|t| EventFormat::parse(system, std::str::from_utf8(t).unwrap()).unwrap())
            .find(|f| f.id == id)
            .unwrap()
    }

    #[test]
    fn fields_text_names_every_field_but_the_common_ones() {
        let fmt = format_of("raw_syscalls", testdata::ID_SYS_ENTER);
        let mut d = Vec::new();
        d.extend_from_slice(&testdata::ID_SYS_ENTER.to_le_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend_from_slice(&42i32.to_le_bytes());
        d.extend_from_slice(&35i64.to_le_bytes());
        for a in 0..6u64 {
            d.extend_from_slice(&(a << 12).to_le_bytes());
        }
        let rec = Record::new(0, 0, &d);
        assert_eq!(
            fields_text(&fmt, &rec),
            "id=35 args={0x0,0x1000,0x2000,0x3000,0x4000,0x5000}"
        );
        // A record cut short: an array shows the elements it holds whole.
        let rec = Record::new(0, 0, &d[..36]);
        assert_eq!(fields_text(&fmt, &rec), "id=35 args={0x0,0x1000}");
        // And a scalar it does not hold is a '?'.
        let rec = Record::new(0, 0, &d[..12]);
        assert_eq!(fields_text(&fmt, &rec), "id=? args={}");
    }
}
