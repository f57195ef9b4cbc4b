//! Stitching of kernel events with the user stacks unwound for them.
//!
//! A kernel with deferred user unwinding writes, after each traced event
//! that wants a user stack, a `ftrace:user_unwind_cookie` event carrying an
//! opaque cookie. The user stack itself comes later, as one
//! `ftrace:user_unwind_stack` event per kernel entry, written when the task
//! goes back to user space (possibly on another CPU, after a migration). The
//! cookie is unique per thread per kernel entry, and many events of one entry
//! share it. This crate puts the pieces back together:
//!
//! * [`stitcher`]: the algorithm, over a small input type ([`Input`]) so that it
//!   can be tested with hand-built sequences. It groups kernel events by
//!   `(pid, cookie)`, attaches the matching stack and classifies each group
//!   ([`Status`]): complete, pending (the trace ended before the task went
//!   back to user space), stack lost (events were dropped while the group was
//!   waiting, or the stack never came), or orphan stack (the stack came but
//!   the request side was lost). Losses are handled explicitly: a stack is
//!   only attached when its cookie matches, and per-CPU correlation (which
//!   event a cookie or a `kernel_stack` belongs to) is reset by a loss. Stock
//!   kernels' synchronous `user_stack` and `kernel_stack` events are stitched
//!   too, so that the same views work on any kernel.
//! * [`groups`]: where the groups are kept, in a temporary file once many.
//! * [`trace`]: the adapter from `tracedata` records to [`Input`], and the
//!   compact per-event index (24 bytes per event) the views share.
//! * [`file`](mod@file): the same straight from a `TraceFile` (one pass), finding a
//!   record again from its index entry, and a symbolizer for the file.
//! * [`mappings`]: the kernel's `user_unwind_mapping` records, per process
//!   and in time order, that symbolize a process which exited before the
//!   trace was read.
//! * [`internal`]: the one list of tracing-internal kernel frames
//!   (`trace_event_raw_event_*`, ftrace callbacks, stack savers) that the
//!   views hide unless asked.
//! * [`view`]: display-ready groups (events, symbolized frames), shared by
//!   `tracer-cli report --stacks` and the TUI, symbolized by
//!   `ustack-symbolize`; the text of their events is the printer's
//!   (`ustack-printer`), through [`view::EventText`]. This crate writes no
//!   output.
//!
//! Tests build their traces with the `ustack-testdata` crate (a
//! dev-dependency only).
//!
//! Quick use:
//!
//! ```no_run
//! let f = ustack_tracedata::TraceFile::open("trace.dat").unwrap();
//! let buf = ustack_stitch::file::buffer(&f, None).unwrap();
//! let idx = ustack_stitch::file::load(&f, buf);
//! for g in idx.stitched.groups.iter() {
//!     println!("{} {:?} {}", g.pid, g.cookie, g.status.name());
//! }
//! ```
//!
//! The algorithm follows perf's deferred callchain merge (per thread, merge
//! on matching cookie, flush unmatched samples kernel-only at the end) but
//! works across CPUs and treats lost events explicitly.

pub mod file;
pub mod groups;
pub mod internal;
pub mod mappings;
pub mod stitcher;
pub mod trace;
pub mod view;

pub use crate::groups::{EventRef, EventSpan, Groups};
pub use crate::stitcher::{
    cookie_label, ClosedGroup, Group, GroupKind, Input, Loss, SeqStack, StackId, Stacks, Status,
    Stitched, Stitcher, UserStackRef,
};
