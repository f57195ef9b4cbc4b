//! FFI bindings to the system libtraceevent (Debian `libtraceevent-dev` 1.7),
//! written by hand for the functions this project uses, plus a small safe
//! wrapper: [`Tep`] around a `tep_handle`, loaded from a trace file's
//! sections with [`Tep::load`], [`Record`] for an event payload and
//! [`Tep::print`] for libtraceevent's text of it.
//!
//! Only the layouts of the structs that Rust code creates or reads
//! ([`tep_record`], [`trace_seq`]) are spelled out; everything else is
//! opaque. The `layout` tests check them against the library.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_ulonglong, c_void, CStr, CString};
use std::marker::PhantomData;

/// Opaque `struct tep_handle`.
#[repr(C)]
pub struct tep_handle {
    _private: [u8; 0],
}

/// Opaque `struct tep_event`.
#[repr(C)]
pub struct tep_event {
    _private: [u8; 0],
}

/// Opaque `struct tep_plugin_list`.
#[repr(C)]
pub struct tep_plugin_list {
    _private: [u8; 0],
}

/// Opaque `struct tep_event_filter`.
#[repr(C)]
pub struct tep_event_filter {
    _private: [u8; 0],
}

/// `struct tep_record` (without the `DEBUG_RECORD` fields, which Debian's
/// build does not have).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tep_record {
    /// Timestamp.
    pub ts: c_ulonglong,
    /// Offset in the file (informational).
    pub offset: c_ulonglong,
    /// Events dropped before this record (-1 = unknown count).
    pub missed_events: i64,
    /// Size of the record including its ring-buffer header.
    pub record_size: c_int,
    /// Size of `data`.
    pub size: c_int,
    /// The event payload.
    pub data: *mut c_void,
    /// CPU.
    pub cpu: c_int,
    /// Reference count (unused by the printing functions).
    pub ref_count: c_int,
    /// Do not free.
    pub locked: c_int,
    /// Private pointer.
    pub priv_: *mut c_void,
}

/// `struct trace_seq`.
#[repr(C)]
#[derive(Debug)]
pub struct trace_seq {
    /// Buffer (owned by libtraceevent).
    pub buffer: *mut c_char,
    /// Allocated size.
    pub buffer_size: c_uint,
    /// Used length.
    pub len: c_uint,
    /// Read position.
    pub readpos: c_uint,
    /// `enum trace_seq_fail`.
    pub state: c_int,
}

/// `enum tep_endian`: little endian.
pub const TEP_LITTLE_ENDIAN: c_int = 0;
/// `enum tep_endian`: big endian.
pub const TEP_BIG_ENDIAN: c_int = 1;
/// `enum tep_flag`: print timestamps in nanoseconds.
pub const TEP_NSEC_OUTPUT: c_int = 1;
/// `TEP_PRINT_PID` argument of `tep_print_event`.
pub const TEP_PRINT_PID: c_uint = 1;
/// `TEP_PRINT_TIME` argument of `tep_print_event`.
pub const TEP_PRINT_TIME: c_uint = 2;
/// `TEP_PRINT_CPU` argument of `tep_print_event`.
pub const TEP_PRINT_CPU: c_uint = 3;
/// `TEP_PRINT_INFO` argument of `tep_print_event`.
pub const TEP_PRINT_INFO: &CStr = c"INFO";
/// `TEP_PRINT_INFO_RAW` argument of `tep_print_event`.
pub const TEP_PRINT_INFO_RAW: &CStr = c"INFO_RAW";
/// `TEP_PRINT_COMM` argument of `tep_print_event`.
pub const TEP_PRINT_COMM: &CStr = c"COMM";
/// `TEP_PRINT_LATENCY` argument of `tep_print_event`.
pub const TEP_PRINT_LATENCY: &CStr = c"LATENCY";
/// `TEP_PRINT_NAME` argument of `tep_print_event`.
pub const TEP_PRINT_NAME: &CStr = c"NAME";
/// `enum tep_flag`: do not load the system plugins.
pub const TEP_DISABLE_SYS_PLUGINS: c_int = 1 << 1;
/// `enum tep_flag`: do not load any plugin.
pub const TEP_DISABLE_PLUGINS: c_int = 1 << 2;
/// `tep_event.flags`: print the event without its plugin handler.
pub const TEP_EVENT_FL_NOHANDLE: c_int = 0x40;
/// `tep_event.flags`: print the event's fields raw.
pub const TEP_EVENT_FL_PRINTRAW: c_int = 0x80;
/// `tep_filter_match`: the record matches.
pub const TEP_ERRNO__FILTER_MATCH: c_int = 0;
/// `tep_filter_match`: no filter for this event.
pub const TEP_ERRNO__FILTER_NOT_FOUND: c_int = -99974;
/// `tep_filter_match`: the filter is empty.
pub const TEP_ERRNO__NO_FILTER: c_int = -99972;
/// `tep_filter_match`: the record does not match.
pub const TEP_ERRNO__FILTER_MISS: c_int = -99971;

#[link(name = "traceevent")]
extern "C" {
    /// Allocates an empty handle (null on failure); free it with `tep_free`.
    pub fn tep_alloc() -> *mut tep_handle;
    /// Frees a handle from `tep_alloc`.
    pub fn tep_free(tep: *mut tep_handle);
    /// Sets a `tep_flag` (e.g. [`TEP_NSEC_OUTPUT`]).
    pub fn tep_set_flag(tep: *mut tep_handle, flag: c_int);
    /// Sets the CPU count of the traced system.
    pub fn tep_set_cpus(tep: *mut tep_handle, cpus: c_int);
    /// Sets the traced kernel's `sizeof(long)`.
    pub fn tep_set_long_size(tep: *mut tep_handle, long_size: c_int);
    /// Sets the ring-buffer page size.
    pub fn tep_set_page_size(tep: *mut tep_handle, page_size: c_int);
    /// Sets the byte order of the trace data ([`TEP_LITTLE_ENDIAN`] or [`TEP_BIG_ENDIAN`]).
    pub fn tep_set_file_bigendian(tep: *mut tep_handle, endian: c_int);
    /// Sets the byte order of this machine.
    pub fn tep_set_local_bigendian(tep: *mut tep_handle, endian: c_int);
    /// The `sizeof(long)` set with `tep_set_long_size`.
    pub fn tep_get_long_size(tep: *mut tep_handle) -> c_int;
    /// Parses the text of `events/header_page` (`size` bytes); 0 on success.
    pub fn tep_parse_header_page(
        tep: *mut tep_handle,
        buf: *mut c_char,
        size: c_ulong,
        long_size: c_int,
    ) -> c_int;
    /// Parses one event format file (`size` bytes) of system `sys`; 0 on success.
    pub fn tep_parse_event(
        tep: *mut tep_handle,
        buf: *const c_char,
        size: c_ulong,
        sys: *const c_char,
    ) -> c_int;
    /// Loads NUL-terminated `/proc/kallsyms` text; 0 on success.
    pub fn tep_parse_kallsyms(tep: *mut tep_handle, kallsyms: *const c_char) -> c_int;
    /// Registers one kernel function at `addr` (module may be null); 0 on success.
    pub fn tep_register_function(
        tep: *mut tep_handle,
        name: *mut c_char,
        addr: c_ulonglong,
        module: *mut c_char,
    ) -> c_int;
    /// Loads NUL-terminated `printk_formats` text; 0 on success.
    pub fn tep_parse_printk_formats(tep: *mut tep_handle, buf: *const c_char) -> c_int;
    /// Registers the printk format string at `addr`; 0 on success.
    pub fn tep_register_print_string(
        tep: *mut tep_handle,
        fmt: *const c_char,
        addr: c_ulonglong,
    ) -> c_int;
    /// Loads NUL-terminated `saved_cmdlines` text; 0 on success.
    pub fn tep_parse_saved_cmdlines(tep: *mut tep_handle, buf: *const c_char) -> c_int;
    /// Registers `comm` for `pid`; 0 on success.
    pub fn tep_register_comm(tep: *mut tep_handle, comm: *const c_char, pid: c_int) -> c_int;
    /// Loads the system's plugins into the handle; unload with `tep_unload_plugins`.
    pub fn tep_load_plugins(tep: *mut tep_handle) -> *mut tep_plugin_list;
    /// Unloads plugins loaded with `tep_load_plugins`.
    pub fn tep_unload_plugins(list: *mut tep_plugin_list, tep: *mut tep_handle);
    /// Sets plugin option `name` (`[plugin:]option`) to `val` (null: "1")
    /// for plugins loaded afterwards; 0 on success.
    pub fn tep_plugin_add_option(name: *const c_char, val: *const c_char) -> c_int;
    /// With `test_filters` non-zero, adding a filter prints it (`'event:
    /// expression'`) to the C `stdout`, as `trace-cmd report -T` shows.
    pub fn tep_set_test_filters(tep: *mut tep_handle, test_filters: c_int);
    /// Prints every kernel function of the handle to the C `stdout`.
    pub fn tep_print_funcs(tep: *mut tep_handle);
    /// Prints every printk format of the handle to the C `stdout`.
    pub fn tep_print_printk(tep: *mut tep_handle);
    /// The event with format id `id`, or null.
    pub fn tep_find_event(tep: *mut tep_handle, id: c_int) -> *mut tep_event;
    /// The event `sys`/`name`, or null.
    pub fn tep_find_event_by_name(
        tep: *mut tep_handle,
        sys: *const c_char,
        name: *const c_char,
    ) -> *mut tep_event;
    /// The name of the kernel function containing `addr`, or null (owned by the handle).
    pub fn tep_find_function(tep: *mut tep_handle, addr: c_ulonglong) -> *const c_char;
    /// The `common_pid` of a record.
    pub fn tep_data_pid(tep: *mut tep_handle, rec: *mut tep_record) -> c_int;
    /// The `common_flags` of a record.
    pub fn tep_data_flags(tep: *mut tep_handle, rec: *mut tep_record) -> c_int;
    /// The comm registered for `pid` (owned by the handle).
    pub fn tep_data_comm_from_pid(tep: *mut tep_handle, pid: c_int) -> *const c_char;
    /// Appends the text of a record to `s` as `fmt` says; each conversion takes a `TEP_PRINT_*` selector.
    pub fn tep_print_event(
        tep: *mut tep_handle,
        s: *mut trace_seq,
        record: *mut tep_record,
        fmt: *const c_char,
        ...
    );
    /// Allocates an empty event filter for the handle (null on failure).
    pub fn tep_filter_alloc(tep: *mut tep_handle) -> *mut tep_event_filter;
    /// Adds a filter in trace-cmd `-F` syntax; negative on error (see `tep_filter_strerror`).
    pub fn tep_filter_add_filter_str(
        filter: *mut tep_event_filter,
        filter_str: *const c_char,
    ) -> c_int;
    /// Tests a record: `TEP_ERRNO__FILTER_MATCH`, `..._MISS`, `..._NOT_FOUND` or `..._NO_FILTER`.
    pub fn tep_filter_match(filter: *mut tep_event_filter, record: *mut tep_record) -> c_int;
    /// Writes the message of filter error `err` into `buf` (NUL-terminated).
    pub fn tep_filter_strerror(
        filter: *mut tep_event_filter,
        err: c_int,
        buf: *mut c_char,
        buflen: usize,
    ) -> c_int;
    /// Frees a filter from `tep_filter_alloc`.
    pub fn tep_filter_free(filter: *mut tep_event_filter);

    /// Initializes a sequence (allocates its buffer).
    pub fn trace_seq_init(s: *mut trace_seq);
    /// Empties a sequence, keeping its buffer.
    pub fn trace_seq_reset(s: *mut trace_seq);
    /// Frees the buffer of a sequence.
    pub fn trace_seq_destroy(s: *mut trace_seq);
    /// Appends a NUL-terminated string.
    pub fn trace_seq_puts(s: *mut trace_seq, str_: *const c_char) -> c_int;
    /// Appends one byte.
    pub fn trace_seq_putc(s: *mut trace_seq, c: u8) -> c_int;
    /// NUL-terminates the buffer.
    pub fn trace_seq_terminate(s: *mut trace_seq);
}

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
/// # Invariants
/// `raw.data` points to `raw.size` bytes borrowed for `'a`; libtraceevent
/// only reads them.
pub struct Record<'a> {
    raw: tep_record,
    _data: PhantomData<&'a [u8]>,
}

impl<'a> Record<'a> {
    /// The record of the payload `data` (common fields first) of an event
    /// at `ts` on `cpu`.
    pub fn new(data: &'a [u8], ts: u64, cpu: u32) -> Record<'a> {
        Record {
            raw: tep_record {
                ts,
                offset: 0,
                missed_events: 0,
                record_size: data.len() as c_int + 4,
                size: data.len() as c_int,
                // Only read by libtraceevent (type invariant).
                data: data.as_ptr() as *mut c_void,
                cpu: cpu as c_int,
                ref_count: 1,
                locked: 0,
                priv_: std::ptr::null_mut(),
            },
            _data: PhantomData,
        }
    }

    /// The timestamp.
    pub fn ts(&self) -> u64 {
        self.raw.ts
    }

    /// The raw record, for calls the safe wrapper does not cover (e.g.
    /// `tep_filter_match`); valid while `self` is.
    pub fn as_mut_ptr(&mut self) -> *mut tep_record {
        &mut self.raw
    }
}

/// Offset of `flags` in `struct tep_event`: `tep`, `name` (pointers),
/// then `int id`.
const FLAGS_OFFSET: usize = 2 * std::mem::size_of::<*const u8>() + std::mem::size_of::<c_int>();

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
}

/// An owned `tep_handle` with its plugins.
///
/// # Invariants
/// `tep` is a valid handle from `tep_alloc` owned by this value; `plugins`
/// is null or the list returned by `tep_load_plugins` for it.
pub struct Tep {
    tep: *mut tep_handle,
    plugins: *mut tep_plugin_list,
    skipped: Vec<TepError>,
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
            tep,
            plugins: std::ptr::null_mut(),
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
    /// order: `trace-cmd report` treats them as fatal, callers that only
    /// want event info may ignore them.
    pub fn load(s: &TraceSections<'_>) -> Result<(Tep, Vec<TepError>), TepError> {
        Tep::load_with_flags(s, 0)
    }

    /// [`Tep::load`] with `tep_flag`s set before the plugins load (e.g.
    /// [`TEP_DISABLE_PLUGINS`]); plugin options set with
    /// [`tep_plugin_add_option`] before apply to the plugins loaded here.
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
        let (tep, s, r) = (self.tep, seq.as_mut_ptr(), rec.as_mut_ptr());
        // SAFETY: the handle is valid (type invariant), the seq is
        // initialized and the record's data is borrowed for the call and
        // only read (Record invariant). Each format's conversions get the
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
        // SAFETY: self.tep is valid (type invariant); the returned string is
        // owned by the handle and lives until the handle is freed or its
        // comms change, which needs `&mut self`, so the borrow of `self`
        // covers it.
        unsafe {
            let p = tep_data_comm_from_pid(self.tep, pid);
            (!p.is_null()).then(|| CStr::from_ptr(p))
        }
    }

    /// The raw handle, for calls this wrapper does not cover.
    pub fn as_ptr(&self) -> *mut tep_handle {
        self.tep
    }

    /// Sets a `tep_flag` (e.g. [`TEP_NSEC_OUTPUT`]).
    pub fn set_flag(&mut self, flag: c_int) {
        // SAFETY: self.tep is valid (type invariant).
        unsafe { tep_set_flag(self.tep, flag) }
    }

    /// Sets the CPU count.
    pub fn set_cpus(&mut self, cpus: usize) {
        // SAFETY: self.tep is valid (type invariant).
        unsafe { tep_set_cpus(self.tep, cpus as c_int) }
    }

    /// Parses the text of `events/header_page`.
    pub fn parse_header_page(&mut self, text: &[u8], long_size: usize) -> Result<(), TepError> {
        let mut buf = text.to_vec();
        buf.push(0);
        // SAFETY: buf is a valid, NUL-terminated buffer of at least
        // text.len() bytes that outlives the call; the library only reads it.
        let r = unsafe {
            tep_parse_header_page(
                self.tep,
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
    /// A format with a byte other than printable ASCII, tab and newline is
    /// refused without calling libtraceevent: 1.7 crashes on some (e.g. in
    /// an array size, as in `char comm[\xe96]` or `long caller[\x04c`), and
    /// the kernel's format files have no other bytes.
    ///
    /// A format whose print fmt arguments divide (`/` or `%`) by anything
    /// but a non-zero integer constant or a `sizeof(...)` is refused too:
    /// libtraceevent 1.7 evaluates the division for each record and the
    /// whole process dies of SIGFPE when the divisor is 0 (e.g. a corrupt
    /// `R%C->id`, or a field that is 0 in a record). See [`unsafe_division`].
    /// libtraceevent then gets the format without its print fmt: it knows
    /// the event and its fields, and prints its records as
    /// `[FAILED TO PARSE] field=value ...`, as for any print fmt it cannot
    /// parse, rather than `[UNKNOWN EVENT]`.
    pub fn parse_event(&mut self, text: &[u8], system: &str) -> Result<(), TepError> {
        if !text
            .iter()
            .all(|&b| b == b'\t' || b == b'\n' || (b' '..=b'~').contains(&b))
        {
            return Err(TepError(format!(
                "an event format of {system} is not printable ASCII"
            )));
        }
        let refused = unsafe_division(text).map(|why| {
            TepError(format!(
                "an event format of {system} ({}) is refused: {why}",
                event_name(text)
            ))
        });
        let neutral;
        let text = match refused {
            // Everything from the print fmt on is replaced by one that
            // libtraceevent cannot parse, so nothing of it is evaluated.
            // libtraceevent keeps the event and its fields and prints it
            // as `[FAILED TO PARSE] field=value ...`, the way it (and
            // trace-cmd) print an event whose print fmt it cannot parse.
            Some(_) => {
                let cut = text
                    .windows(PRINT_FMT.len())
                    .position(|w| w == PRINT_FMT)
                    .unwrap_or(text.len());
                neutral = [&text[..cut], b"print fmt: refused\n"].concat();
                &neutral[..]
            }
            None => text,
        };
        let sys = CString::new(system).map_err(|_| TepError("bad system name".into()))?;
        // SAFETY: text is valid for text.len() bytes, sys is NUL-terminated;
        // both outlive the call and the library copies what it keeps.
        let r = unsafe {
            tep_parse_event(
                self.tep,
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

    /// Loads `/proc/kallsyms` text.
    pub fn parse_kallsyms(&mut self, text: &[u8]) -> Result<(), TepError> {
        let c = cstring(text);
        // SAFETY: c is NUL-terminated and outlives the call.
        let r = unsafe { tep_parse_kallsyms(self.tep, c.as_ptr()) };
        if r != 0 {
            return Err(TepError(format!("cannot parse kallsyms ({r})")));
        }
        Ok(())
    }

    /// Loads `printk_formats` text.
    pub fn parse_printk_formats(&mut self, text: &[u8]) -> Result<(), TepError> {
        let c = cstring(text);
        // SAFETY: c is NUL-terminated and outlives the call.
        let r = unsafe { tep_parse_printk_formats(self.tep, c.as_ptr()) };
        if r != 0 {
            return Err(TepError(format!("cannot parse printk formats ({r})")));
        }
        Ok(())
    }

    /// Loads `saved_cmdlines` text.
    pub fn parse_saved_cmdlines(&mut self, text: &[u8]) -> Result<(), TepError> {
        let c = cstring(text);
        // SAFETY: c is NUL-terminated and outlives the call.
        let r = unsafe { tep_parse_saved_cmdlines(self.tep, c.as_ptr()) };
        if r != 0 {
            return Err(TepError(format!("cannot parse saved cmdlines ({r})")));
        }
        Ok(())
    }

    /// Registers `comm` for `pid`.
    pub fn register_comm(&mut self, comm: &str, pid: i32) -> Result<(), TepError> {
        let c = CString::new(comm).map_err(|_| TepError("bad comm".into()))?;
        // SAFETY: c is NUL-terminated and outlives the call; the library copies it.
        let r = unsafe { tep_register_comm(self.tep, c.as_ptr(), pid) };
        if r != 0 {
            return Err(TepError(format!("cannot register comm {comm} ({r})")));
        }
        Ok(())
    }

    /// Loads the system's libtraceevent plugins (once).
    pub fn load_plugins(&mut self) {
        if self.plugins.is_null() {
            // SAFETY: self.tep is valid (type invariant).
            self.plugins = unsafe { tep_load_plugins(self.tep) };
        }
    }

    /// Sets or clears `tep_event.flags` bits (`TEP_EVENT_FL_*`) of the event
    /// with format id `id`; false when the handle has no such event.
    pub fn set_event_flags(&mut self, id: u16, flags: c_int) -> bool {
        // SAFETY: self.tep is valid; the event, when found, is owned by the
        // handle and `flags` is an int field of the public struct tep_event
        // (event-parse.h), after two pointers and the int id.
        unsafe {
            let ev = tep_find_event(self.tep, c_int::from(id));
            if ev.is_null() {
                return false;
            }
            let p = ev.cast::<u8>().add(FLAGS_OFFSET).cast::<c_int>();
            p.write_unaligned(p.read_unaligned() | flags);
        }
        true
    }

    /// The kernel symbol containing `addr`, if known.
    pub fn find_function(&self, addr: u64) -> Option<String> {
        // SAFETY: self.tep is valid; the returned string is owned by the
        // handle and copied before the handle can change.
        unsafe {
            let p = tep_find_function(self.tep, addr);
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        }
    }
}

impl Drop for Tep {
    fn drop(&mut self) {
        // SAFETY: both pointers are owned by self (type invariant) and are
        // not used after this.
        unsafe {
            if !self.plugins.is_null() {
                tep_unload_plugins(self.plugins, self.tep);
            }
            tep_free(self.tep);
        }
    }
}

/// Where the print fmt of an event format starts.
const PRINT_FMT: &[u8] = b"print fmt:";

/// The `name:` of an event format, or `?`.
fn event_name(format: &[u8]) -> String {
    String::from_utf8_lossy(format)
        .lines()
        .find_map(|l| l.strip_prefix("name:"))
        .map_or_else(|| "?".into(), |n| n.trim().to_string())
}

/// A token of a print fmt argument list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    /// A string or char literal (its text does not matter).
    Literal,
    /// A number as written, suffixes included (`1000`, `0x10`, `1000L`).
    Number(&'a str),
    /// An identifier or keyword.
    Ident(&'a str),
    /// Any other byte (operators and punctuation, one byte each).
    Punct(u8),
}

/// The end of the string or char literal that starts at `s[start]` (the
/// index after its closing quote, or `s.len()` if it is not closed).
fn literal_end(s: &[u8], start: usize) -> usize {
    let quote = s[start];
    let mut i = start + 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// Splits C expression text into tokens, keeping the contents of string
/// and char literals (`"%d%%"`, `'/'`) out of the operators.
fn tokenize(text: &str) -> Vec<Tok<'_>> {
    let s = text.as_bytes();
    let word = |i: usize| {
        s[i..]
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
            .map_or(s.len(), |n| i + n)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' || c == b'\'' {
            i = literal_end(s, i);
            out.push(Tok::Literal);
        } else if c.is_ascii_digit() {
            let e = word(i);
            out.push(Tok::Number(&text[i..e]));
            i = e;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let e = word(i);
            out.push(Tok::Ident(&text[i..e]));
            i = e;
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

/// The value of a C integer constant (`1000`, `0x3e8`, `01750`, with `u`/`l`
/// suffixes), or `None` if `n` is not one.
fn int_constant(n: &str) -> Option<u64> {
    let digits = n.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(h, 16).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse().ok()
    }
}

/// The declared sizes of the fields of an event format, by field name.
fn field_sizes(format: &str) -> Vec<(&str, Option<u64>)> {
    let mut out = Vec::new();
    for line in format.lines() {
        let Some(rest) = line.trim_start().strip_prefix("field:") else {
            continue;
        };
        let decl = rest.split(';').next().unwrap_or("");
        // The name is the last identifier outside brackets
        // (`char comm[16]`, `__data_loc char[] msg`).
        let mut depth = 0usize;
        let mut name = None;
        for t in tokenize(decl) {
            match t {
                Tok::Punct(b'[') => depth += 1,
                Tok::Punct(b']') => depth = depth.saturating_sub(1),
                Tok::Ident(id) if depth == 0 => name = Some(id),
                _ => {}
            }
        }
        let size = rest
            .split(';')
            .find_map(|p| p.trim().strip_prefix("size:"))
            .and_then(|v| v.trim().parse().ok());
        if let Some(n) = name {
            out.push((n, size));
        }
    }
    out
}

/// Why the print fmt arguments of the event format `format` could make
/// libtraceevent divide by zero, or `None` if they cannot.
///
/// libtraceevent 1.7 evaluates `/` and `%` of the arguments for every
/// record and does not check the divisor, so a divisor of 0 kills the
/// process with SIGFPE. Only the argument list after the format string is
/// looked at (a `%` in a string or char literal is no operator), and a
/// divisor must be a non-zero integer constant (`% 1000`, `/ 1000L`) or a
/// `sizeof(...)` (of a type, or of a `REC->field` whose declared size is
/// not 0). Everything else, e.g. `/ REC->count` or the `% C->id` of a
/// corrupt `R%C->id`, is reported.
pub fn unsafe_division(format: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(format).ok()?;
    let (_, print) = text.split_once(std::str::from_utf8(PRINT_FMT).ok()?)?;
    let fmt_start = print.find('"')?;
    let args = &print[literal_end(print.as_bytes(), fmt_start)..];
    let toks = tokenize(args);
    for (i, t) in toks.iter().enumerate() {
        let op = match *t {
            Tok::Punct(c @ (b'/' | b'%')) => c as char,
            _ => continue,
        };
        let shown = |n: usize| {
            toks[i + 1..]
                .iter()
                .take(n)
                .map(|t| match t {
                    Tok::Literal => "\"...\"".to_string(),
                    Tok::Number(s) | Tok::Ident(s) => s.to_string(),
                    Tok::Punct(c) => (*c as char).to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        match toks.get(i + 1) {
            Some(Tok::Number(n)) => match int_constant(n) {
                None => return Some(format!("'{op}' by {n}, not an integer constant")),
                Some(0) => return Some(format!("'{op}' by 0")),
                Some(_) => {
                    // A postfix operator would make the constant only a part
                    // of the divisor (`4[p]`, `4(x)`).
                    if let Some(Tok::Punct(b'[' | b'(' | b'.')) = toks.get(i + 2) {
                        return Some(format!("'{op}' by '{}'", shown(2)));
                    }
                }
            },
            Some(Tok::Ident("sizeof")) => {
                if toks.get(i + 2) != Some(&Tok::Punct(b'(')) {
                    return Some(format!("'{op}' by '{}'", shown(2)));
                }
                let close = toks[i + 3..]
                    .iter()
                    .position(|t| *t == Tok::Punct(b')'))
                    .map(|n| i + 3 + n);
                let Some(close) = close else {
                    return Some(format!("'{op}' by an unclosed sizeof"));
                };
                // sizeof(REC->field) is the field's declared size.
                if let [Tok::Ident("REC"), Tok::Punct(b'-'), Tok::Punct(b'>'), Tok::Ident(f)] =
                    toks[i + 3..close]
                {
                    let size = field_sizes(text)
                        .into_iter()
                        .find(|(n, _)| *n == f)
                        .and_then(|(_, s)| s);
                    if !matches!(size, Some(s) if s > 0) {
                        return Some(format!(
                            "'{op}' by sizeof(REC->{f}), of no field of non-zero size"
                        ));
                    }
                }
            }
            _ => return Some(format!("'{op}' by '{}', not a constant", shown(3))),
        }
    }
    None
}

/// An owned `trace_seq`.
pub struct TraceSeq {
    s: Box<trace_seq>,
}

impl Default for TraceSeq {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceSeq {
    /// A new, empty sequence.
    pub fn new() -> TraceSeq {
        let mut s = Box::new(trace_seq {
            buffer: std::ptr::null_mut(),
            buffer_size: 0,
            len: 0,
            readpos: 0,
            state: 0,
        });
        // SAFETY: s points to writable memory of the right layout.
        unsafe { trace_seq_init(&mut *s) };
        TraceSeq { s }
    }

    /// The raw pointer, for `tep_print_event` and friends.
    pub fn as_mut_ptr(&mut self) -> *mut trace_seq {
        &mut *self.s
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        if self.s.buffer.is_null() || self.s.len == 0 {
            return &[];
        }
        // SAFETY: buffer holds at least len initialized bytes (trace_seq
        // invariant maintained by libtraceevent).
        unsafe { std::slice::from_raw_parts(self.s.buffer as *const u8, self.s.len as usize) }
    }

    /// Empties the sequence, keeping its buffer.
    pub fn reset(&mut self) {
        // SAFETY: the seq was initialized by trace_seq_init.
        unsafe { trace_seq_reset(&mut *self.s) }
    }

    /// Appends a string.
    pub fn puts(&mut self, s: &str) {
        if let Ok(c) = CString::new(s) {
            // SAFETY: seq initialized; c is NUL-terminated.
            unsafe { trace_seq_puts(&mut *self.s, c.as_ptr()) };
        }
    }
}

impl Drop for TraceSeq {
    fn drop(&mut self) {
        // SAFETY: the seq was initialized by trace_seq_init and is not used after.
        unsafe { trace_seq_destroy(&mut *self.s) }
    }
}

#[cfg(test)]
mod layout {
    use super::*;

    #[test]
    fn struct_sizes_match_the_c_headers() {
        // Values from offsetof()/sizeof() on Debian 12 x86_64 with
        // libtraceevent 1.7.1.
        #[cfg(target_pointer_width = "64")]
        {
            assert_eq!(std::mem::size_of::<tep_record>(), 64);
            assert_eq!(std::mem::offset_of!(tep_record, missed_events), 16);
            assert_eq!(std::mem::offset_of!(tep_record, record_size), 24);
            assert_eq!(std::mem::offset_of!(tep_record, size), 28);
            assert_eq!(std::mem::offset_of!(tep_record, data), 32);
            assert_eq!(std::mem::offset_of!(tep_record, cpu), 40);
            assert_eq!(std::mem::offset_of!(tep_record, priv_), 56);
            assert_eq!(std::mem::size_of::<trace_seq>(), 24);
            assert_eq!(std::mem::offset_of!(trace_seq, len), 12);
        }
    }

    #[test]
    fn trace_seq_fields_are_where_the_library_writes() {
        let mut s = TraceSeq::new();
        s.puts("abc");
        assert_eq!(s.as_bytes(), b"abc");
        s.reset();
        assert_eq!(s.as_bytes(), b"");
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
        // And on this control character.
        let ctl = String::from_utf8_lossy(fmt).replace('\u{fffd}', "\u{4}");
        assert_eq!(tep.parse_event(ctl.as_bytes(), "test"), refused);
    }

    #[test]
    fn tep_record_fields_are_where_the_library_reads() {
        let mut tep = Tep::new(8, 4096).unwrap();
        let fmt = b"name: ev\nID: 42\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:int value;\toffset:8;\tsize:4;\tsigned:1;\n\n\
print fmt: \"value=%d\", REC->value\n";
        tep.parse_event(fmt, "test").unwrap();
        tep.register_comm("worker", 77).unwrap();
        let mut data = [0u8; 12];
        data[0..2].copy_from_slice(&42u16.to_le_bytes());
        data[4..8].copy_from_slice(&77i32.to_le_bytes());
        data[8..12].copy_from_slice(&(-5i32).to_le_bytes());
        let mut rec = tep_record {
            ts: 1_234_567_890,
            offset: 0,
            missed_events: 0,
            record_size: 16,
            size: 12,
            data: data.as_mut_ptr().cast(),
            cpu: 7,
            ref_count: 1,
            locked: 0,
            priv_: std::ptr::null_mut(),
        };
        let mut s = TraceSeq::new();
        // SAFETY: all pointers are valid for the duration of the call and
        // the variadic arguments match the format's conversions.
        unsafe {
            tep_print_event(
                tep.as_ptr(),
                s.as_mut_ptr(),
                &mut rec,
                c"%s-%d [%03d] %6.1000d: %s".as_ptr(),
                TEP_PRINT_COMM.as_ptr(),
                TEP_PRINT_PID,
                TEP_PRINT_CPU,
                TEP_PRINT_TIME,
                TEP_PRINT_INFO.as_ptr(),
            );
        }
        assert_eq!(
            std::str::from_utf8(s.as_bytes()).unwrap(),
            "worker-77 [007]     1.234568: value=-5"
        );
        // SAFETY: tep and rec are valid.
        assert_eq!(unsafe { tep_data_pid(tep.as_ptr(), &mut rec) }, 77);
    }
}

#[cfg(test)]
mod division {
    use super::*;

    /// An event format with fields `a` (u32) and `b` (u32, or of `b_size`
    /// bytes) and the print fmt `print`.
    fn format(print: &str) -> String {
        format!(
            "name: ev\nID: 42\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:unsigned int a;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:unsigned int b;\toffset:12;\tsize:4;\tsigned:0;\n\
\tfield:char empty[0];\toffset:16;\tsize:0;\tsigned:0;\n\n\
print fmt: {print}\n"
        )
    }

    fn verdict(print: &str) -> Result<(), TepError> {
        let mut tep = Tep::new(8, 4096).unwrap();
        tep.parse_event(format(print).as_bytes(), "test")
    }

    fn refused(print: &str, why: &str) {
        assert_eq!(
            verdict(print),
            Err(TepError(format!(
                "an event format of test (ev) is refused: {why}"
            ))),
            "{print}"
        );
    }

    #[test]
    fn division_by_a_field_is_refused() {
        refused(
            r#""q=%u", REC->a / REC->b"#,
            "'/' by 'REC - >', not a constant",
        );
        refused(
            r#""r=%u", REC->a % REC->b"#,
            "'%' by 'REC - >', not a constant",
        );
        // The corruption that was found: REC->id mangled into R%C->id.
        refused(r#""id=%u", R%C->a"#, "'%' by 'C - >', not a constant");
        // Inside a helper's arguments too.
        refused(
            r#""s=%s", __print_symbolic(REC->a / (REC->b), { 0, "zero" })"#,
            "'/' by '( REC -', not a constant",
        );
    }

    #[test]
    fn division_by_constants_and_sizeof_is_accepted() {
        assert_eq!(verdict(r#""ms=%u", REC->a % 1000"#), Ok(()));
        assert_eq!(verdict(r#""ms=%u", REC->a / 1000L"#), Ok(()));
        assert_eq!(verdict(r#""n=%u", REC->a / sizeof(u64)"#), Ok(()));
        assert_eq!(verdict(r#""n=%u", REC->a / sizeof(unsigned int)"#), Ok(()));
        assert_eq!(verdict(r#""n=%u", REC->a / sizeof(REC->b)"#), Ok(()));
        assert_eq!(verdict(r#""h=%u", REC->a % 0x10"#), Ok(()));
    }

    #[test]
    fn percent_signs_in_string_and_char_literals_are_not_operators() {
        assert_eq!(verdict(r#""%d%%", REC->a"#), Ok(()));
        assert_eq!(verdict(r#""%d%% \"/%s\" %%", REC->a, "/ %""#), Ok(()));
        assert_eq!(verdict(r#""%c %c", '%', '/'"#), Ok(()));
        assert_eq!(verdict(r#""%d" " %%/", REC->a"#), Ok(()));
    }

    #[test]
    fn division_by_zero_constants_and_empty_fields_is_refused() {
        refused(r#""q=%u", REC->a / 0"#, "'/' by 0");
        refused(r#""q=%u", REC->a % 0x0UL"#, "'%' by 0");
        refused(
            r#""q=%u", REC->a / sizeof(REC->empty)"#,
            "'/' by sizeof(REC->empty), of no field of non-zero size",
        );
        refused(r#""q=%u", REC->a / 4[REC->b]"#, "'/' by '4 ['");
        refused(
            r#""q=%u", REC->a / 10e"#,
            "'/' by 10e, not an integer constant",
        );
    }

    #[test]
    fn a_refused_format_is_skipped_by_load_with_the_reason() {
        let good = format(r#""a=%u", REC->a"#).replace("name: ev\nID: 42", "name: good\nID: 43");
        let bad = format(r#""q=%u", REC->a / REC->b"#);
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
        // Printing a record of the refused event whose divisor is 0 does
        // not crash: libtraceevent knows its fields but not its print fmt.
        let mut data = [0u8; 16];
        data[0..2].copy_from_slice(&42u16.to_le_bytes());
        data[8..12].copy_from_slice(&7u32.to_le_bytes());
        let mut rec = Record::new(&data, 1, 0);
        let mut seq = TraceSeq::new();
        tep.print(&mut seq, &mut rec, Print::Info);
        assert_eq!(
            String::from_utf8_lossy(seq.as_bytes()),
            "[FAILED TO PARSE] a=7 b=0 empty="
        );
    }
}
