//! Safe wrapper of the system libtraceevent (declared in
//! `ustack-traceevent-sys`).
//!
//! - [`Tep`] owns a `tep_handle` and prints [`Record`]s into a [`TraceSeq`];
//! - [`Filter`] is one `-F` filter of libtraceevent's filter engine;
//! - [`screen`] refuses event formats that would crash or hang
//!   libtraceevent, on the fields tracedata parsed, before libtraceevent
//!   sees them (their events then print as `[FAILED TO PARSE] field=...`);
//! - [`FileTep`] is the one loader of a trace file's formats: each format
//!   is handed to libtraceevent when its events first show up.
//!
//! All `unsafe` code of the workspace that calls libtraceevent is here.

mod file;
mod filter;
mod reach;
pub mod screen;
mod seq;
mod tep;

pub use file::FileTep;
pub use filter::{Filter, FilterResult};
pub use seq::TraceSeq;
pub use tep::{
    flush_c_stdout, plugin_add_option, set_log_level, Print, Record, Tep, TepError, TraceSections,
    LOG_INFO,
};
pub use ustack_traceevent_sys::{
    TEP_DISABLE_PLUGINS, TEP_DISABLE_SYS_PLUGINS, TEP_EVENT_FL_NOHANDLE, TEP_EVENT_FL_PRINTRAW,
};
