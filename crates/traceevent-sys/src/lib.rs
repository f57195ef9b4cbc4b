//! FFI declarations of the system libtraceevent (1.7 or newer), written by
//! hand for the functions this project uses. Declarations and linking only:
//! the safe wrapper is the `ustack-traceevent` crate.
//!
//! Only the layouts of the structs that Rust code creates or reads
//! ([`tep_record`], [`trace_seq`]) are spelled out; everything else is
//! opaque. build.rs compiles `src/layout.c`, which takes their sizes and
//! offsets from the C headers, and the `layout` test compares them with
//! the Rust declarations.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_ulonglong, c_void, CStr};

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
    /// Sets the level of the messages libtraceevent prints, process-wide
    /// (`TEP_LOG_INFO` = 4: which plugins load, which handlers take over).
    pub fn tep_set_loglevel(level: c_int);
    /// Loads the system's plugins into the handle; unload with `tep_unload_plugins`.
    pub fn tep_load_plugins(tep: *mut tep_handle) -> *mut tep_plugin_list;
    /// Unloads plugins loaded with `tep_load_plugins`.
    pub fn tep_unload_plugins(list: *mut tep_plugin_list, tep: *mut tep_handle);
    /// Writes the path of every plugin of `list` to `s`, each between
    /// `prefix` and `suffix` (`trace-cmd list -P`).
    pub fn tep_print_plugins(
        s: *mut trace_seq,
        prefix: *const c_char,
        suffix: *const c_char,
        list: *const tep_plugin_list,
    );
    /// Offset of `flags` in `struct tep_event`, from the C header
    /// (compiled in by build.rs from layout.c).
    pub static ustack_tep_event_flags_offset: usize;
    /// Offset of `handler` (the plugin's print function, a pointer) in
    /// `struct tep_event`, from the C header (layout.c).
    pub static ustack_tep_event_handler_offset: usize;
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

#[cfg(test)]
mod layout {
    use super::*;

    extern "C" {
        /// Sizes and offsets from the C headers, in the order of layout.c.
        static ustack_tep_layout: [usize; 12];
    }

    #[test]
    fn struct_layouts_match_the_c_headers() {
        // SAFETY: layout.c defines the array with 12 elements; it is
        // constant data.
        let c = unsafe { ustack_tep_layout };
        let rust = [
            std::mem::size_of::<tep_record>(),
            std::mem::offset_of!(tep_record, offset),
            std::mem::offset_of!(tep_record, missed_events),
            std::mem::offset_of!(tep_record, record_size),
            std::mem::offset_of!(tep_record, size),
            std::mem::offset_of!(tep_record, data),
            std::mem::offset_of!(tep_record, cpu),
            std::mem::offset_of!(tep_record, ref_count),
            std::mem::offset_of!(tep_record, priv_),
            std::mem::size_of::<trace_seq>(),
            std::mem::offset_of!(trace_seq, len),
            std::mem::offset_of!(trace_seq, state),
        ];
        assert_eq!(rust, c);
    }
}
