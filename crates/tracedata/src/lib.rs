//! Trace data: ring-buffer pages, event formats and trace.dat files.
//!
//! The crate has one module per layer of the data:
//!
//! - [`format`](mod@format) parses a tracefs event `format` file into an [`format::EventFormat`];
//! - [`header`] parses `events/header_page` and `events/header_event`;
//! - [`page`] decodes one ring-buffer page as read from `trace_pipe_raw`;
//! - [`procmaps`] parses and writes process memory maps (`/proc/PID/maps`
//!   text, PROCMAPS options);
//! - [`record`] gives typed access to the fields of one event, by name;
//! - [`field`] resolves a field once from its format ([`FieldRef`]) for code
//!   that reads it in many records;
//! - [`stats`] parses the per-CPU ring-buffer counters (`per_cpu/cpuN/stats`, CPUSTAT);
//! - [`clock`] reads the time base of a file (TRACECLOCK, DATE, OFFSET);
//! - [`dat`] holds the trace.dat constants shared by the reader and the writer;
//! - [`reader`] opens trace.dat files (v6 and v7, uncompressed, zlib or zstd)
//!   and merges the per-CPU streams by timestamp;
//! - [`writer`] and [`compress`] write trace.dat files;
//! - [`limits`] bounds what a file may make the reader allocate;
//! - [`error`] is the one error type of the crate.
//!
//! Reading a file:
//!
//! ```no_run
//! use ustack_tracedata::{Item, TraceFile};
//!
//! let file = TraceFile::open("trace.dat")?;
//! let switch = file.formats().by_name("sched", "sched_switch");
//! for buffer in file.buffers() {
//!     for item in file.records(buffer) {
//!         match item? {
//!             Item::Event(rec) => {
//!                 let Some(fmt) = file.formats().of(&rec) else { continue };
//!                 if Some(fmt) == switch {
//!                     let next = rec.str_field(fmt, "next_comm")?;
//!                     println!("{} [{:03}] switch to {next}", rec.ts, rec.cpu);
//!                 }
//!             }
//!             Item::Lost { cpu, count, .. } => println!("cpu {cpu} lost {count:?}"),
//!         }
//!     }
//! }
//! # Ok::<(), ustack_tracedata::Error>(())
//! ```

pub mod clock;
pub mod compress;
pub mod dat;
pub mod error;
pub mod field;
pub mod format;
pub mod header;
pub mod limits;
pub mod page;
pub mod procmaps;
pub mod reader;
pub mod record;
pub mod spill;
pub mod stats;
pub mod writer;

pub use error::{Error, Result};
pub use field::FieldRef;
pub use format::{EventFormat, Field, FieldKind};
pub use procmaps::{LibMap, MapsAt, MapsKind, ProcMap};
pub use reader::{Buffer, CpuCursor, Item, TraceFile};
pub use record::Record;
pub use stats::{BufferStats, CpuStats};
