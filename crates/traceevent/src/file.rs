//! The one loader of a trace file's event formats into libtraceevent.

use ustack_tracedata::reader::Formats;
use ustack_tracedata::TraceFile;

use crate::seq::TraceSeq;
use crate::tep::{Print, Record, Tep, TepError, TraceSections};

/// A [`Tep`] set up from a trace file the way trace-cmd sets it up (CPU
/// count, plugins, header page, kallsyms, printk formats, saved cmdlines),
/// whose event formats are handed to libtraceevent on first use.
///
/// A file holds the format of every event of the system (about 2,300) and
/// parsing them all is most of libtraceevent's setup, while printing an
/// event only needs its own format. [`FileTep::print`] registers the format
/// of the record's event first; [`FileTep::register_all`] registers every
/// format in file order (what trace-cmd does at open), which filters need
/// because they look events up by name.
///
/// The loader does not borrow the file (so it can live beside it, as in
/// the TUI): the methods that register formats take the file's
/// [`Formats`], which must be those of the file it was made for.
pub struct FileTep {
    tep: Tep,
    /// One bit per event id: its format was handed to libtraceevent (or
    /// tried).
    registered: Vec<u64>,
}

impl FileTep {
    /// Sets up libtraceevent for `file`. Only a bad header page is an
    /// error; the second value lists the kallsyms, printk formats and
    /// cmdlines sections libtraceevent rejected (fatal for `trace-cmd
    /// report`, ignorable for callers that only want event info).
    pub fn new(file: &TraceFile) -> Result<(FileTep, Vec<TepError>), TepError> {
        FileTep::with_flags(file, 0)
    }

    /// [`FileTep::new`] with `tep_flag`s set before the plugins load (see
    /// [`Tep::load_with_flags`]).
    pub fn with_flags(
        file: &TraceFile,
        flags: std::ffi::c_int,
    ) -> Result<(FileTep, Vec<TepError>), TepError> {
        FileTep::with_flags_and_order(file, flags, None)
    }

    /// [`FileTep::with_flags`], then every format of `order` handed to
    /// libtraceevent in that order right after the plugins loaded (as
    /// trace-cmd parses them when it opens a file: what libtraceevent
    /// says about them comes in that order). With an empty `order`, no
    /// format is handed over yet: the caller registers one before printing.
    pub fn with_flags_and_order(
        file: &TraceFile,
        flags: std::ffi::c_int,
        order: Option<&[u16]>,
    ) -> Result<(FileTep, Vec<TepError>), TepError> {
        let kallsyms = file
            .kallsyms()
            .map_err(|e| TepError(format!("cannot read kallsyms: {e}")))?;
        let (tep, rejected) = Tep::load_with_flags(
            &TraceSections {
                long_size: file.long_size(),
                page_size: file.page_size(),
                cpus: file.cpu_count() as usize,
                header_page: file.header_page_text(),
                ftrace_formats: &[],
                event_formats: &[],
                kallsyms: &kallsyms,
                printk_formats: file.printk_formats(),
                cmdlines: file.cmdlines(),
            },
            flags,
        )?;
        drop(kallsyms);
        let mut t = FileTep {
            tep,
            registered: vec![0; (1 << 16) / 64],
        };
        // libtraceevent finds the common fields (type, pid, flags) in the
        // first event it knows: have one before any record is printed, even
        // one of an id the file has no format for.
        let first = match order {
            Some(o) => o.first().copied(),
            None => file.formats().ids().next(),
        };
        if let Some(id) = first {
            t.register(file.formats(), id);
        }
        for &id in order.unwrap_or(&[]) {
            t.register(file.formats(), id);
        }
        Ok((t, rejected))
    }

    /// Hands the format of event `id` to libtraceevent unless done already.
    /// One it cannot parse or the screen refuses is skipped, as by
    /// [`Tep::load`]: its events print without their info.
    pub fn register(&mut self, formats: &Formats, id: u16) {
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        if self.registered[word] & bit == 0 {
            match formats.text_by_id(id) {
                Some((system, text)) => self.register_text(id, system, text),
                None => self.registered[word] |= bit,
            }
        }
    }

    /// Hands `text`, the format of event `id` in `system`, to libtraceevent
    /// unless a format of `id` was handed already: for callers that keep
    /// the texts they need instead of the file's [`Formats`].
    pub fn register_text(&mut self, id: u16, system: &str, text: &[u8]) {
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        if self.registered[word] & bit == 0 {
            self.registered[word] |= bit;
            if let Err(e) = self.tep.parse_event(text, system) {
                self.tep.skipped.push(e);
            }
        }
    }

    /// Whether the format of `id` was handed to libtraceevent.
    pub fn is_registered(&self, id: u16) -> bool {
        self.registered[id as usize / 64] & (1 << (id % 64)) != 0
    }

    /// Hands every format not handed yet to libtraceevent, in file order.
    pub fn register_all(&mut self, formats: &Formats) {
        for id in formats.ids() {
            self.register(formats, id);
        }
    }

    /// Appends libtraceevent's text `what` of `rec` to `seq`, registering
    /// the format of its event first.
    pub fn print(
        &mut self,
        formats: &Formats,
        seq: &mut TraceSeq,
        rec: &mut Record<'_>,
        what: Print,
    ) {
        if let Some(id) = rec.common_type() {
            self.register(formats, id);
        }
        self.tep.print(seq, rec, what);
    }

    /// The handle.
    pub fn tep(&self) -> &Tep {
        &self.tep
    }

    /// The handle, to change its flags or comms.
    pub fn tep_mut(&mut self) -> &mut Tep {
        &mut self.tep
    }
}
