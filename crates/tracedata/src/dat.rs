//! trace.dat file-format constants shared by the reader and the writer.
//!
//! See trace-cmd's `trace-cmd.dat.v6(5)` and `trace-cmd.dat.v7(5)`.

/// The first three bytes of every trace.dat file.
pub const MAGIC: [u8; 3] = [0x17, 0x08, 0x44];
/// The seven characters that follow [`MAGIC`].
pub const TRACING: &[u8; 7] = b"tracing";
/// File version 6 (sequential layout).
pub const VERSION_6: u32 = 6;
/// File version 7 (sections and options, optional compression).
pub const VERSION_7: u32 = 7;

/// Magic string before the v6 header_page contents (with its NUL).
pub const HEADER_PAGE: &[u8] = b"header_page\0";
/// Magic string before the v6 header_event contents (with its NUL).
pub const HEADER_EVENT: &[u8] = b"header_event\0";
/// v6: marker of the options block (two spaces and a NUL).
pub const V6_OPTIONS: &[u8] = b"options  \0";
/// v6: marker of flyrecord data (per-CPU offset/size table follows).
pub const V6_FLYRECORD: &[u8] = b"flyrecord\0";
/// v6: marker of latency (text) data.
pub const V6_LATENCY: &[u8] = b"latency  \0";

/// Compression name "none".
pub const COMPRESSION_NONE: &str = "none";
/// Compression name "zlib" (zlib format, `compress2`/`uncompress`).
pub const COMPRESSION_ZLIB: &str = "zlib";
/// Compression name "zstd".
pub const COMPRESSION_ZSTD: &str = "zstd";
/// Pages per compressed chunk of trace data written by trace-cmd.
pub const PAGES_IN_CHUNK: usize = 10;

/// v7 section flag: the section is compressed.
pub const SECTION_FLAG_COMPRESSED: u16 = 1;
/// Size of a v7 section header: u16 id, u16 flags, u32 string id, u64 size.
pub const SECTION_HEADER_SIZE: usize = 16;

/// Option ids (and, for 16..=21, the v7 section ids they point to; see
/// [`section`]).
pub mod option {
    /// End of an options block; in v7 its u64 data is the next options section.
    pub const DONE: u16 = 0;
    /// Time offset to wall-clock, text.
    pub const DATE: u16 = 1;
    /// Contents of `per_cpu/cpuN/stats`, one option per CPU, in CPU order.
    pub const CPUSTAT: u16 = 2;
    /// A buffer (instance) and its per-CPU data.
    pub const BUFFER: u16 = 3;
    /// Contents of `trace_clock`.
    pub const TRACECLOCK: u16 = 4;
    /// uname of the traced system, text.
    pub const UNAME: u16 = 5;
    /// Event hooks, text.
    pub const HOOK: u16 = 6;
    /// Timestamp offset, text.
    pub const OFFSET: u16 = 7;
    /// u32 CPU count of the traced system.
    pub const CPUCOUNT: u16 = 8;
    /// Version of the tool that wrote the file, text.
    pub const VERSION: u16 = 9;
    /// Memory maps of traced processes, text.
    pub const PROCMAPS: u16 = 10;
    /// u64 trace id.
    pub const TRACEID: u16 = 11;
    /// Host/guest time shift data.
    pub const TIME_SHIFT: u16 = 12;
    /// Guest description.
    pub const GUEST: u16 = 13;
    /// TSC to nanoseconds conversion (u32 mult, u32 shift, u64 offset).
    pub const TSC2NSEC: u16 = 14;
    /// v7 strings section (section descriptions).
    pub const STRINGS: u16 = 15;
    /// v7: u64 offset of the HEADER_INFO section.
    pub const HEADER_INFO: u16 = 16;
    /// v7: u64 offset of the FTRACE_EVENTS section.
    pub const FTRACE_EVENTS: u16 = 17;
    /// v7: u64 offset of the EVENT_FORMATS section.
    pub const EVENT_FORMATS: u16 = 18;
    /// v7: u64 offset of the KALLSYMS section.
    pub const KALLSYMS: u16 = 19;
    /// v7: u64 offset of the PRINTK section.
    pub const PRINTK: u16 = 20;
    /// v7: u64 offset of the CMDLINES section.
    pub const CMDLINES: u16 = 21;
    /// v7: latency (text) buffer.
    pub const BUFFER_TEXT: u16 = 22;
    /// BTF file.
    pub const BTF_FILE: u16 = 23;
    /// Last boot info.
    pub const LAST_BOOT_INFO: u16 = 24;
    /// Modules file.
    pub const MODULES_FILE: u16 = 25;
}

/// v7 section ids: the options section (id 0), and the flyrecord, latency
/// and metadata sections, which carry the id of the option that points at
/// them (BUFFER, BUFFER_TEXT, STRINGS, HEADER_INFO (header_page +
/// header_event), FTRACE_EVENTS, EVENT_FORMATS (by system), KALLSYMS,
/// PRINTK and CMDLINES).
pub mod section {
    pub use super::option::{
        BUFFER, BUFFER_TEXT, CMDLINES, EVENT_FORMATS, FTRACE_EVENTS, HEADER_INFO, KALLSYMS, PRINTK,
        STRINGS,
    };
    /// An options section.
    pub const OPTIONS: u16 = 0;
}

/// Ring-buffer page constants.
pub mod ring {
    /// Commit-word flag: events were lost before this page.
    pub const MISSING_EVENTS: u64 = 1 << 31;
    /// Commit-word flag: the lost count is stored after the page data.
    pub const MISSING_STORED: u64 = 1 << 30;
    /// Mask of the commit word's size bits.
    pub const COMMIT_MASK: u64 = (1 << 27) - 1;
    /// Event type_len: padding.
    pub const TYPE_PADDING: u8 = 29;
    /// Event type_len: time extend.
    pub const TYPE_TIME_EXTEND: u8 = 30;
    /// Event type_len: absolute time stamp.
    pub const TYPE_TIME_STAMP: u8 = 31;
    /// Largest type_len that encodes a data length (length = type_len * 4).
    pub const TYPE_DATA_MAX: u8 = 28;
}
