//! The handle ([`Tep`]) and the records it prints ([`Record`]).

use std::ffi::{c_int, c_ulong, c_void, CStr, CString};
use std::marker::PhantomData;

use ustack_traceevent_sys::*;

use crate::reach::Reaches;
use crate::screen;
use crate::seq::TraceSeq;

/// Error of the safe wrapper: what failed, with libtraceevent's return code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TepError(pub String);

impl std::fmt::Display for TepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "libtraceevent: {}", self.0)
    }
}

impl std::error::Error for TepError {}

fn cstring(b: &[u8]) -> CString {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    CString::new(&b[..end]).expect("no interior NUL after truncation")
}

/// Bytes of kallsyms text handed to libtraceevent at once (then up to the
/// end of the line): see [`Tep::parse_kallsyms`].
const KALLSYMS_PIECE: usize = 256 * 1024;

/// The sections of a trace file that libtraceevent needs, as stored in the
/// file (see [`Tep::load`]).
#[derive(Debug, Clone, Copy)]
pub struct TraceSections<'a> {
    /// Kernel `sizeof(long)` of the traced system.
    pub long_size: usize,
    /// Ring-buffer page size.
    pub page_size: usize,
    /// Number of CPUs.
    pub cpus: usize,
    /// Text of `events/header_page`.
    pub header_page: &'a [u8],
    /// Format files of the `ftrace` system.
    pub ftrace_formats: &'a [Vec<u8>],
    /// Format files of the other systems, by system name.
    pub event_formats: &'a [(String, Vec<Vec<u8>>)],
    /// `/proc/kallsyms` text (may be empty).
    pub kallsyms: &'a [u8],
    /// `printk_formats` text (may be empty).
    pub printk_formats: &'a [u8],
    /// `saved_cmdlines` text (may be empty).
    pub cmdlines: &'a [u8],
}

/// An event payload with its timestamp and CPU, as the `tep_record` that
/// libtraceevent's printing and filtering functions take.
///
/// libtraceevent reads fields where the event's format puts them, which
/// can be past the end of a short record (see `reach.rs`): [`Tep::print`]
/// and [`crate::Filter::test`] first make sure the bytes it will read
/// exist, borrowing the bytes that follow the payload when the caller
/// gave them ([`Record::of`]; trace-cmd shows those too, from its
/// page) and copying the record with zeros after it when not.
///
/// # Invariants
/// `raw.data` points to `readable >= raw.size` bytes that live for `'a`
/// (borrowed) or as long as `self` (the heap buffer of `copy`, which is
/// never changed while `raw.data` points into it); libtraceevent only
/// reads them.
pub struct Record<'a> {
    raw: tep_record,
    readable: usize,
    copy: Vec<u8>,
    _data: PhantomData<&'a [u8]>,
}

impl<'a> Record<'a> {
    /// The record of the payload `data` (common fields first) of an event
    /// at `ts` on `cpu`.
    pub fn new(data: &'a [u8], ts: u64, cpu: u32) -> Record<'a> {
        Record::within(data, data.len(), ts, cpu)
    }

    /// The record of a record read from a trace file, at `ts` (its own
    /// `r.ts`, or a time the caller shifted): its payload, and the bytes
    /// that follow it where it was stored, which libtraceevent may read too.
    pub fn of(r: &ustack_tracedata::Record<'a>, ts: u64) -> Record<'a> {
        Record::within(r.extent, r.data.len(), ts, r.cpu)
    }

    /// The record of the first `size` bytes of `extent`, the payload and
    /// the bytes that follow it where it was stored (its page), which
    /// libtraceevent may read too (`size` is capped to `extent`).
    fn within(extent: &'a [u8], size: usize, ts: u64, cpu: u32) -> Record<'a> {
        let size = size.min(extent.len());
        Record {
            raw: tep_record {
                ts,
                offset: 0,
                missed_events: 0,
                record_size: size as c_int + 4,
                size: size as c_int,
                // Only read by libtraceevent (type invariant).
                data: extent.as_ptr() as *mut c_void,
                cpu: cpu as c_int,
                ref_count: 1,
                locked: 0,
                priv_: std::ptr::null_mut(),
            },
            readable: extent.len(),
            copy: Vec::new(),
            _data: PhantomData,
        }
    }

    /// Makes sure libtraceevent can read `n` bytes from the start of the
    /// record: past what is readable, a copy with zeros after it.
    fn ensure_readable(&mut self, n: usize) {
        if n <= self.readable {
            return;
        }
        let mut copy = vec![0u8; n];
        copy[..self.readable].copy_from_slice(self.readable_bytes());
        self.copy = copy;
        self.raw.data = self.copy.as_mut_ptr().cast();
        self.readable = n;
    }

    /// The bytes libtraceevent may read.
    fn readable_bytes(&self) -> &[u8] {
        // SAFETY: raw.data points to `readable` bytes that live at least as
        // long as `self` (type invariant).
        unsafe { std::slice::from_raw_parts(self.raw.data as *const u8, self.readable) }
    }

    /// Makes the bytes that `reaches` says libtraceevent reads of this
    /// record readable.
    pub(crate) fn prepare(&mut self, reaches: &Reaches) {
        self.ensure_readable(reaches.fixed(self.readable_bytes()));
        // The locators lie within the fixed fields, now readable.
        self.ensure_readable(reaches.dynamic(self.readable_bytes()));
    }

    /// The timestamp.
    pub fn ts(&self) -> u64 {
        self.raw.ts
    }

    /// The event id (`common_type`, the first two bytes), if the payload
    /// has them.
    pub fn common_type(&self) -> Option<u16> {
        let data = self.data();
        Some(u16::from_le_bytes([*data.first()?, *data.get(1)?]))
    }

    fn data(&self) -> &[u8] {
        &self.readable_bytes()[..self.raw.size as usize]
    }

    /// The raw record, for the filter; valid while `self` is.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut tep_record {
        &mut self.raw
    }
}

/// What [`Tep::print`] appends: one `tep_print_event` conversion each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    /// The event's info (print format or plugin): `"%s"` of `INFO`.
    Info,
    /// The event's fields, raw: `"%s"` of `INFO_RAW`.
    InfoRaw,
    /// The latency flags column: `"%s"` of `LATENCY`.
    Latency,
    /// The timestamp as libtraceevent prints it without a precision:
    /// `"%12d"` of `TIME`.
    Time,
    /// trace-cmd's latency-format head, short comm, pid and CPU:
    /// `"%8.8s-%-5d %3d"` of `COMM`, `PID`, `CPU`.
    LatencyHead,
    /// The timestamp in seconds with microseconds: `"%6.1000d"` of `TIME`.
    TimeUsecs,
    /// The timestamp in seconds with nanoseconds: `"%9.1d"` of `TIME`.
    TimeNsecs,
}

/// An owned `tep_handle` with its plugins, shared by a [`Tep`] and the
/// filters made from it (a filter keeps a pointer to its handle).
///
/// # Invariants
/// `tep` is a valid handle from `tep_alloc` owned by this value; `plugins`
/// is null or the list returned by `tep_load_plugins` for it.
pub(crate) struct Handle {
    pub(crate) tep: *mut tep_handle,
    plugins: std::cell::Cell<*mut tep_plugin_list>,
    /// What libtraceevent reads of the records of each event it was given.
    pub(crate) reaches: std::cell::RefCell<Reaches>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: both pointers are owned by self (type invariant) and are
        // not used after this: every Tep and Filter holding the handle is
        // gone.
        unsafe {
            let plugins = self.plugins.get();
            if !plugins.is_null() {
                tep_unload_plugins(plugins, self.tep);
            }
            tep_free(self.tep);
        }
    }
}

/// A libtraceevent handle: event formats, kallsyms, comms and plugins.
pub struct Tep {
    h: std::rc::Rc<Handle>,
    pub(crate) skipped: Vec<TepError>,
}

impl Tep {
    /// Allocates a handle for a little-endian file with the given kernel
    /// `long_size` and page size.
    pub fn new(long_size: usize, page_size: usize) -> Result<Tep, TepError> {
        // SAFETY: tep_alloc has no preconditions; the result is checked.
        let tep = unsafe { tep_alloc() };
        if tep.is_null() {
            return Err(TepError("tep_alloc failed".into()));
        }
        // SAFETY: tep is valid (checked above).
        unsafe {
            tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
            tep_set_local_bigendian(
                tep,
                if cfg!(target_endian = "big") {
                    TEP_BIG_ENDIAN
                } else {
                    TEP_LITTLE_ENDIAN
                },
            );
            tep_set_long_size(tep, long_size as c_int);
            tep_set_page_size(tep, page_size as c_int);
        }
        Ok(Tep {
            h: std::rc::Rc::new(Handle {
                tep,
                plugins: std::cell::Cell::new(std::ptr::null_mut()),
                reaches: Default::default(),
            }),
            skipped: Vec::new(),
        })
    }

    /// A handle set up from a trace file's sections the way trace-cmd sets
    /// it up: CPU count, system plugins, header page, event formats, then
    /// kallsyms, printk formats and saved cmdlines.
    ///
    /// Only a bad header page is an error. A format libtraceevent cannot
    /// parse, or one [`Tep::parse_event`] refuses (e.g. one that could divide
    /// by zero), is skipped as trace-cmd skips the formats libtraceevent
    /// cannot parse: not fatal, its events print without their info
    /// (`[FAILED TO PARSE] field=value ...` when libtraceevent got its
    /// fields); why is in [`Tep::skipped_formats`]. The kallsyms, printk formats and cmdlines sections are each
    /// tried; the second value lists those libtraceevent rejected, in that
    /// order (libtraceevent keeps what it parsed before the line it stopped
    /// at; `trace-cmd report` 3.1.6 ignores these failures).
    pub fn load(s: &TraceSections<'_>) -> Result<(Tep, Vec<TepError>), TepError> {
        Tep::load_with_flags(s, 0)
    }

    /// [`Tep::load`] with `tep_flag`s set before the plugins load (e.g.
    /// [`TEP_DISABLE_PLUGINS`]); options set with [`plugin_add_option`]
    /// before apply to the plugins loaded here.
    pub fn load_with_flags(
        s: &TraceSections<'_>,
        flags: c_int,
    ) -> Result<(Tep, Vec<TepError>), TepError> {
        let mut t = Tep::new(s.long_size, s.page_size)?;
        t.set_cpus(s.cpus);
        if flags != 0 {
            t.set_flag(flags);
        }
        t.load_plugins();
        t.parse_header_page(s.header_page, s.long_size)?;
        for f in s.ftrace_formats {
            if let Err(e) = t.parse_event(f, "ftrace") {
                t.skipped.push(e);
            }
        }
        for (sys, list) in s.event_formats {
            for f in list {
                if let Err(e) = t.parse_event(f, sys) {
                    t.skipped.push(e);
                }
            }
        }
        let mut rejected = Vec::new();
        if !s.kallsyms.is_empty() {
            rejected.extend(t.parse_kallsyms(s.kallsyms).err());
        }
        if !s.printk_formats.is_empty() {
            rejected.extend(t.parse_printk_formats(s.printk_formats).err());
        }
        if !s.cmdlines.is_empty() {
            rejected.extend(t.parse_saved_cmdlines(s.cmdlines).err());
        }
        Ok((t, rejected))
    }

    /// The event formats [`Tep::load`] skipped, each with why
    /// (libtraceevent's error or the reason [`Tep::parse_event`] refused it),
    /// in the order of the file.
    pub fn skipped_formats(&self) -> &[TepError] {
        &self.skipped
    }

    /// Appends libtraceevent's text `what` of `rec` to `seq`.
    pub fn print(&self, seq: &mut TraceSeq, rec: &mut Record<'_>, what: Print) {
        rec.prepare(&self.h.reaches.borrow());
        let (tep, s, r) = (self.h.tep, seq.as_mut_ptr(), rec.as_mut_ptr());
        // SAFETY: the handle is valid (type invariant), the seq is
        // initialized and the record's data is borrowed for the call and
        // only read (Record invariant), as far as the event's format makes
        // libtraceevent read (`prepare`). Each format's conversions get the
        // selectors libtraceevent documents for them: `%s` the "INFO",
        // "LATENCY" or "COMM" strings, `%d` the unsigned TIME, PID and CPU
        // selectors.
        unsafe {
            match what {
                Print::Info => tep_print_event(tep, s, r, c"%s".as_ptr(), TEP_PRINT_INFO.as_ptr()),
                Print::InfoRaw => {
                    tep_print_event(tep, s, r, c"%s".as_ptr(), TEP_PRINT_INFO_RAW.as_ptr())
                }
                Print::Latency => {
                    tep_print_event(tep, s, r, c"%s".as_ptr(), TEP_PRINT_LATENCY.as_ptr())
                }
                Print::Time => tep_print_event(tep, s, r, c"%12d".as_ptr(), TEP_PRINT_TIME),
                Print::TimeUsecs => {
                    tep_print_event(tep, s, r, c"%6.1000d".as_ptr(), TEP_PRINT_TIME)
                }
                Print::TimeNsecs => tep_print_event(tep, s, r, c"%9.1d".as_ptr(), TEP_PRINT_TIME),
                Print::LatencyHead => tep_print_event(
                    tep,
                    s,
                    r,
                    c"%8.8s-%-5d %3d".as_ptr(),
                    TEP_PRINT_COMM.as_ptr(),
                    TEP_PRINT_PID,
                    TEP_PRINT_CPU,
                ),
            }
        }
    }

    /// The comm libtraceevent knows for `pid` (from saved cmdlines or
    /// [`Tep::register_comm`]), if any.
    pub fn comm_of_pid(&self, pid: i32) -> Option<&CStr> {
        // SAFETY: self.h.tep is valid (type invariant); the returned string is
        // owned by the handle and lives until the handle is freed or its
        // comms change, which needs `&mut self`, so the borrow of `self`
        // covers it.
        unsafe {
            let p = tep_data_comm_from_pid(self.h.tep, pid);
            (!p.is_null()).then(|| CStr::from_ptr(p))
        }
    }

    /// The shared handle, for a filter to keep.
    pub(crate) fn handle(&self) -> std::rc::Rc<Handle> {
        self.h.clone()
    }

    /// Prints timestamps in nanoseconds (`trace-cmd report -t`).
    pub fn set_nsec_output(&mut self) {
        self.set_flag(TEP_NSEC_OUTPUT);
    }

    fn set_flag(&mut self, flag: c_int) {
        // SAFETY: self.h.tep is valid (type invariant).
        unsafe { tep_set_flag(self.h.tep, flag) }
    }

    /// Sets the CPU count.
    pub fn set_cpus(&mut self, cpus: usize) {
        // SAFETY: self.h.tep is valid (type invariant).
        unsafe { tep_set_cpus(self.h.tep, cpus as c_int) }
    }

    /// Parses the text of `events/header_page`.
    pub fn parse_header_page(&mut self, text: &[u8], long_size: usize) -> Result<(), TepError> {
        let mut buf = text.to_vec();
        buf.push(0);
        // SAFETY: buf is a valid, NUL-terminated buffer of at least
        // text.len() bytes that outlives the call; the library only reads it.
        let r = unsafe {
            tep_parse_header_page(
                self.h.tep,
                buf.as_mut_ptr().cast(),
                text.len() as c_ulong,
                long_size as c_int,
            )
        };
        if r != 0 {
            return Err(TepError(format!("cannot parse header_page ({r})")));
        }
        Ok(())
    }

    /// Parses one event format file of `system`.
    ///
    /// A format [`screen::check`] refuses is not given to libtraceevent as
    /// it is: one that is not printable ASCII or whose fields do not parse
    /// or lie beyond a page is not given at all, and for
    /// one whose print fmt would crash or hang libtraceevent (division by a
    /// non-constant, 100,000 nested parentheses, a huge `__print_array`
    /// count, a `%1073741824d` width) libtraceevent gets the format without
    /// its print fmt. It then knows the event and its fields, and prints
    /// its records as `[FAILED TO PARSE] field=value ...`, as for any print
    /// fmt it cannot parse, rather than `[UNKNOWN EVENT]`.
    pub fn parse_event(&mut self, text: &[u8], system: &str) -> Result<(), TepError> {
        let refusal = |why| {
            TepError(format!(
                "an event format of {system} ({}) is refused: {why}",
                screen::event_name(text)
            ))
        };
        let format = screen::layout(text).map_err(|r| match r {
            screen::Refusal::NotText => TepError(format!(
                "an event format of {system} is not printable ASCII"
            )),
            screen::Refusal::Layout(why) | screen::Refusal::PrintFmt(why) => refusal(why),
        })?;
        let refused = screen::check_format(&format).map(refusal);
        // Note what libtraceevent will read of this event's records.
        self.h.reaches.borrow_mut().add(&format);
        let neutral;
        let text = match refused {
            // Everything from the print fmt on is replaced by one that
            // libtraceevent cannot parse, so nothing of it is evaluated.
            Some(_) => {
                neutral = screen::without_print_fmt(text);
                &neutral[..]
            }
            None => screen::through_print_fmt(text),
        };
        let sys = CString::new(system).map_err(|_| TepError("bad system name".into()))?;
        // SAFETY: text is valid for text.len() bytes, sys is NUL-terminated;
        // both outlive the call and the library copies what it keeps.
        let r = unsafe {
            tep_parse_event(
                self.h.tep,
                text.as_ptr().cast(),
                text.len() as c_ulong,
                sys.as_ptr(),
            )
        };
        if let Some(e) = refused {
            return Err(e);
        }
        if r != 0 {
            return Err(TepError(format!("cannot parse an event of {system} ({r})")));
        }
        Ok(())
    }

    /// Loads `/proc/kallsyms` text (up to a NUL byte, if it has one).
    ///
    /// libtraceevent copies the text it is given whole before it splits it
    /// into lines, and kallsyms is the largest section of a trace file (5
    /// MiB and more): it is handed over in pieces of whole lines, so that
    /// neither that copy nor a NUL-terminated one of ours holds the whole
    /// text. Each line is registered on its own, so the functions are the
    /// same, in the same order, as from one call.
    pub fn parse_kallsyms(&mut self, text: &[u8]) -> Result<(), TepError> {
        let end = text.iter().position(|&c| c == 0).unwrap_or(text.len());
        let mut rest = &text[..end];
        while !rest.is_empty() {
            let cut = match rest.get(KALLSYMS_PIECE..) {
                None => rest.len(),
                Some(after) => after
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(rest.len(), |i| KALLSYMS_PIECE + i + 1),
            };
            let piece = cstring(&rest[..cut]);
            // SAFETY: piece is NUL-terminated and outlives the call.
            let r = unsafe { tep_parse_kallsyms(self.h.tep, piece.as_ptr()) };
            if r != 0 {
                return Err(TepError(format!("cannot parse kallsyms ({r})")));
            }
            rest = &rest[cut..];
        }
        Ok(())
    }

    /// Loads `printk_formats` text.
    pub fn parse_printk_formats(&mut self, text: &[u8]) -> Result<(), TepError> {
        let c = cstring(text);
        // SAFETY: c is NUL-terminated and outlives the call.
        let r = unsafe { tep_parse_printk_formats(self.h.tep, c.as_ptr()) };
        if r != 0 {
            return Err(TepError(format!("cannot parse printk formats ({r})")));
        }
        Ok(())
    }

    /// Loads `saved_cmdlines` text.
    pub fn parse_saved_cmdlines(&mut self, text: &[u8]) -> Result<(), TepError> {
        let c = cstring(text);
        // SAFETY: c is NUL-terminated and outlives the call.
        let r = unsafe { tep_parse_saved_cmdlines(self.h.tep, c.as_ptr()) };
        if r != 0 {
            return Err(TepError(format!("cannot parse saved cmdlines ({r})")));
        }
        Ok(())
    }

    /// Registers `comm` for `pid`.
    pub fn register_comm(&mut self, comm: &str, pid: i32) -> Result<(), TepError> {
        let c = CString::new(comm).map_err(|_| TepError("bad comm".into()))?;
        // SAFETY: c is NUL-terminated and outlives the call; the library copies it.
        let r = unsafe { tep_register_comm(self.h.tep, c.as_ptr(), pid) };
        if r != 0 {
            return Err(TepError(format!("cannot register comm {comm} ({r})")));
        }
        Ok(())
    }

    /// The paths of the plugins loaded (see [`Tep::load_plugins`]), each
    /// line as `trace-cmd list -P` prints it: `  PATH\n`, the last loaded
    /// first.
    pub fn plugin_list_text(&self) -> Vec<u8> {
        let mut seq = TraceSeq::new();
        let (prefix, suffix) = (c"  ", c"\n");
        // SAFETY: seq is initialized (TraceSeq invariant); the strings are
        // NUL-terminated statics; the list is null or the handle's, loaded
        // by tep_load_plugins and alive while the handle is.
        unsafe {
            tep_print_plugins(
                seq.as_mut_ptr(),
                prefix.as_ptr(),
                suffix.as_ptr(),
                self.h.plugins.get(),
            )
        };
        seq.as_bytes().to_vec()
    }

    /// Loads the system's libtraceevent plugins (once).
    pub fn load_plugins(&mut self) {
        if self.h.plugins.get().is_null() {
            // SAFETY: the handle is valid (Handle invariant).
            self.h.plugins.set(unsafe { tep_load_plugins(self.h.tep) });
        }
    }

    /// Sets `tep_event.flags` bits (`TEP_EVENT_FL_*`) of the event with
    /// format id `id`; false when the handle has no such event.
    pub fn set_event_flags(&mut self, id: u16, flags: c_int) -> bool {
        // SAFETY: the handle is valid (Handle invariant); the event, when
        // found, is owned by it, and `flags` is the int at the offset the C
        // header gives (layout.c).
        unsafe {
            let ev = tep_find_event(self.h.tep, c_int::from(id));
            if ev.is_null() {
                return false;
            }
            let p = ev
                .cast::<u8>()
                .add(ustack_tep_event_flags_offset)
                .cast::<c_int>();
            p.write_unaligned(p.read_unaligned() | flags);
        }
        true
    }

    /// Whether libtraceevent prints the info of event `id` from its print
    /// fmt alone: the event is known, parsed without failure, no plugin
    /// prints it and no `TEP_EVENT_FL_*` flag changes how (raw, ftrace,
    /// bprint, no-handle).
    pub fn event_is_plain(&self, id: u16) -> bool {
        // SAFETY: the handle is valid (Handle invariant); the event, when
        // found, is owned by it; `flags` is the int and `handler` the
        // function pointer at the offsets the C header gives (layout.c),
        // only read.
        unsafe {
            let ev = tep_find_event(self.h.tep, c_int::from(id));
            if ev.is_null() {
                return false;
            }
            let base = ev.cast::<u8>();
            let flags = base
                .add(ustack_tep_event_flags_offset)
                .cast::<c_int>()
                .read_unaligned();
            let handler = base
                .add(ustack_tep_event_handler_offset)
                .cast::<*const std::ffi::c_void>()
                .read_unaligned();
            flags == 0 && handler.is_null()
        }
    }

    /// With `on`, adding a filter prints it (`'event: expression'`) to the
    /// C `stdout`, as `trace-cmd report -T` shows.
    pub fn set_test_filters(&mut self, on: bool) {
        // SAFETY: the handle is valid (Handle invariant).
        unsafe { tep_set_test_filters(self.h.tep, c_int::from(on)) }
    }

    /// Prints every kernel function of the handle to the C `stdout`.
    pub fn print_funcs(&self) {
        // SAFETY: the handle is valid (Handle invariant).
        unsafe { tep_print_funcs(self.h.tep) }
    }

    /// Prints every printk format of the handle to the C `stdout`.
    pub fn print_printk(&self) {
        // SAFETY: the handle is valid (Handle invariant).
        unsafe { tep_print_printk(self.h.tep) }
    }

    /// The kernel symbol containing `addr`, if known.
    pub fn find_function(&self, addr: u64) -> Option<String> {
        // SAFETY: self.h.tep is valid; the returned string is owned by the
        // handle and copied before the handle can change.
        unsafe {
            let p = tep_find_function(self.h.tep, addr);
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        }
    }
}

/// libtraceevent's level of informational messages, `TEP_LOG_INFO`.
pub const LOG_INFO: c_int = 4;

/// Sets the level of the messages libtraceevent prints (process-wide);
/// at [`LOG_INFO`] it names each plugin it loads and each event a plugin
/// handler takes over, on the C `stdout` (see [`flush_c_stdout`]).
pub fn set_log_level(level: c_int) {
    // SAFETY: sets a global int of the library; no pointers involved.
    unsafe { tep_set_loglevel(level) }
}

/// Writes out what libtraceevent printed to the C `stdout` so far, before
/// Rust writes more to the same file descriptor.
pub fn flush_c_stdout() {
    // SAFETY: fflush(NULL) flushes every open C stream; it takes no
    // pointer of ours.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
}

/// Sets plugin option `name` (`[plugin:]option`) to `val` (`None`: "1")
/// for the plugins of handles loaded afterwards (process-wide, as in
/// libtraceevent).
pub fn plugin_add_option(name: &str, val: Option<&str>) -> Result<(), TepError> {
    let bad = || TepError(format!("bad plugin option {name:?}"));
    let n = CString::new(name).map_err(|_| bad())?;
    let v = val.map(CString::new).transpose().map_err(|_| bad())?;
    // SAFETY: both strings are NUL-terminated and outlive the call; the
    // library copies them.
    let r = unsafe {
        tep_plugin_add_option(
            n.as_ptr(),
            v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr()),
        )
    };
    if r != 0 {
        return Err(TepError(format!("cannot set plugin option {name:?} ({r})")));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn kallsyms_in_pieces_gives_the_functions_of_one_call() {
        // Over two pieces, lines of every shape (modules, a line cut by
        // nothing but its own newline at a piece boundary), and a NUL byte
        // after which nothing counts.
        let mut text = Vec::new();
        let mut n = 0u64;
        while text.len() < 2 * KALLSYMS_PIECE + 1000 {
            let line = match n % 3 {
                0 => format!(
                    "{:016x} T function_number_{n}\n",
                    0xffff_ffff_8100_0000 + n * 16
                ),
                1 => format!(
                    "{:016x} t local_{n}\t[mod_{n}]\n",
                    0xffff_ffff_8100_0000 + n * 16
                ),
                _ => format!("{:016x} W weak_{n}\n", 0xffff_ffff_8100_0000 + n * 16),
            };
            text.extend_from_slice(line.as_bytes());
            n += 1;
        }
        text.extend_from_slice(b"\0ffffffff81ffffff T after_nul\n");
        let mut pieces = Tep::new(8, 4096).unwrap();
        pieces.parse_kallsyms(&text).unwrap();
        let whole = Tep::new(8, 4096).unwrap();
        let c = cstring(&text);
        // SAFETY: c is NUL-terminated and outlives the call.
        assert_eq!(unsafe { tep_parse_kallsyms(whole.h.tep, c.as_ptr()) }, 0);
        // libtraceevent bounds a function by the next one: the last line
        // has no end, so it is not looked for.
        for k in (0..n - 1).step_by(97).chain([0, 1, 2, n - 2]) {
            let addr = 0xffff_ffff_8100_0000 + k * 16 + 4;
            let got = pieces.find_function(addr);
            assert_eq!(got, whole.find_function(addr), "at {addr:x} k {k}");
            assert!(
                got.as_ref().is_some_and(|f| f.ends_with(&format!("_{k}"))),
                "at {addr:x}: {got:?}"
            );
        }
        assert_eq!(
            pieces.find_function(0xffff_ffff_81ff_ffff),
            whole.find_function(0xffff_ffff_81ff_ffff)
        );
    }

    /// Common fields, then `int value` at offset 8; id 42 is `ev`
    /// (`value=%d`), 43 is `other`.
    pub(crate) fn format(name: &str, id: u16, print: &str) -> String {
        format!(
            "name: {name}\nID: {id}\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:int value;\toffset:8;\tsize:4;\tsigned:1;\n\n\
print fmt: {print}\n"
        )
    }

    /// A handle knowing `ev` (42) and `other` (43), plus `extra` formats.
    pub(crate) fn tep_with(extra: &[String]) -> Tep {
        let mut tep = Tep::new(8, 4096).unwrap();
        tep.parse_event(
            format("ev", 42, r#""value=%d", REC->value"#).as_bytes(),
            "test",
        )
        .unwrap();
        tep.parse_event(
            format("other", 43, r#""v=%d", REC->value"#).as_bytes(),
            "test",
        )
        .unwrap();
        for f in extra {
            let _ = tep.parse_event(f.as_bytes(), "test");
        }
        tep
    }

    /// The payload of event `id` by `pid` with `value`.
    pub(crate) fn event(id: u16, pid: i32, value: i32) -> [u8; 12] {
        let mut data = [0u8; 12];
        data[0..2].copy_from_slice(&id.to_le_bytes());
        data[4..8].copy_from_slice(&pid.to_le_bytes());
        data[8..12].copy_from_slice(&value.to_le_bytes());
        data
    }

    pub(crate) fn info(tep: &Tep, data: &[u8]) -> String {
        let mut seq = TraceSeq::new();
        tep.print(&mut seq, &mut Record::new(data, 1, 0), Print::Info);
        String::from_utf8_lossy(seq.as_bytes()).into_owned()
    }

    #[test]
    fn records_print_through_the_library() {
        let mut tep = tep_with(&[]);
        tep.register_comm("worker", 77).unwrap();
        let data = event(42, 77, -5);
        let mut rec = Record::new(&data, 1_234_567_890, 7);
        let mut s = TraceSeq::new();
        for what in [Print::LatencyHead, Print::TimeUsecs, Print::Info] {
            tep.print(&mut s, &mut rec, what);
        }
        assert_eq!(
            String::from_utf8_lossy(s.as_bytes()),
            "  worker-77      7    1.234568value=-5"
        );
        assert_eq!(tep.comm_of_pid(77).unwrap().to_bytes(), b"worker");
    }

    /// libtraceevent reads a fixed array whole and follows a locator
    /// anywhere, even past a short record: it gets the bytes that follow
    /// the record when the caller has them (as trace-cmd shows them), zeros
    /// when not, never memory that is not the record's.
    #[test]
    fn reads_past_a_short_record_see_its_page_or_zeros() {
        let head = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";
        let stack = format!(
            "name: stack\nID: 44\nformat:\n{head}\
\tfield:unsigned char caller[6];\toffset:8;\tsize:6;\tsigned:0;\n\n\
print fmt: \"%d\", REC->caller[0]\n"
        );
        let name = format!(
            "name: named\nID: 45\nformat:\n{head}\
\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n\n\
print fmt: \"<%s>\", __get_str(name)\n"
        );
        let tep = tep_with(&[stack, name]);
        // The raw fields (`report -R`) print the array whole: two bytes of
        // it stored, then the bytes of the next record.
        let mut page = vec![0u8; 12];
        page[0] = 44;
        page[8] = 0x5;
        page.extend([0x22, 0x33, 0x44, 0x55]);
        let raw = |extent: &[u8]| {
            let mut seq = TraceSeq::new();
            let mut rec = Record::within(extent, 12, 1, 0);
            tep.print(&mut seq, &mut rec, Print::InfoRaw);
            String::from_utf8_lossy(seq.as_bytes()).into_owned()
        };
        assert!(
            raw(&page).contains("ARRAY[05, 00, 00, 00, 22, 33]"),
            "{}",
            raw(&page)
        );
        // Half of what follows: then zeros.
        assert!(raw(&page[..13]).contains("ARRAY[05, 00, 00, 00, 22, 00]"));
        assert!(raw(&page[..12]).contains("ARRAY[05, 00, 00, 00, 00, 00]"));
        // A locator 1,000 bytes past a 12-byte record.
        let mut named = vec![0u8; 12];
        named[0] = 45;
        named[8..12].copy_from_slice(&(1000u32 | 4 << 16).to_le_bytes());
        assert_eq!(info(&tep, &named), "<>");
    }

    #[test]
    fn a_format_with_non_printable_bytes_is_refused_not_parsed() {
        // libtraceevent 1.7 segfaults on this one.
        let fmt = b"name: ev\nID: 42\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:char comm[\xe96];\toffset:8;\tsize:16;\tsigned:0;\n\n\
print fmt: \"x\"\n";
        let mut tep = Tep::new(8, 4096).unwrap();
        let refused = Err(TepError(
            "an event format of test is not printable ASCII".into(),
        ));
        assert_eq!(tep.parse_event(fmt, "test"), refused);
        let ctl = String::from_utf8_lossy(fmt).replace('\u{fffd}', "\u{4}");
        assert_eq!(tep.parse_event(ctl.as_bytes(), "test"), refused);
    }

    #[test]
    fn a_refused_format_is_skipped_by_load_with_the_reason() {
        let good = format("good", 43, r#""a=%u", REC->value"#);
        let bad = format("ev", 42, r#""q=%u", REC->value / REC->common_pid"#);
        let formats = vec![(
            "test".to_string(),
            vec![bad.into_bytes(), good.into_bytes()],
        )];
        let (tep, rejected) = Tep::load(&TraceSections {
            long_size: 8,
            page_size: 4096,
            cpus: 1,
            header_page: b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n",
            ftrace_formats: &[],
            event_formats: &formats,
            kallsyms: b"",
            printk_formats: b"",
            cmdlines: b"",
        })
        .unwrap();
        assert_eq!(rejected, vec![]);
        assert_eq!(
            tep.skipped_formats(),
            [TepError(
                "an event format of test (ev) is refused: '/' by 'REC - >', not a constant".into()
            )]
        );
        // A record of the refused event whose divisor is 0 does not crash:
        // libtraceevent knows its fields but not its print fmt.
        assert_eq!(info(&tep, &event(42, 0, 7)), "[FAILED TO PARSE] value=7");
        assert_eq!(info(&tep, &event(43, 0, 7)), "a=7");
    }
}
