//! Recording for ustack: everything `tracer-cli record`, `start`, `extract`
//! and `tui --live` share, so each of them is only wiring.
//!
//! * [`Launch`] → [`Prepared`] → [`Recording`] is one recording session,
//!   the same for `record` and `tui --live`: the parts below put together,
//!   with the maps and names gathered while it runs and the metadata of
//!   the trace.dat it writes;
//! * [`setup`] applies a [`TraceConfig`] (instance, events with their
//!   filters, options, buffer size, clock, tracer, pid filter) to tracefs,
//!   every change recorded in a guard that restores it;
//! * [`Recorder`] owns the per-CPU reader threads that splice the ring
//!   buffer into temp files, and writes a trace.dat from them at any time
//!   or once finished, or appends what is new to a [`LiveSnapshot`] (the
//!   file `tui --live` shows, which grows with the recording);
//! * [`TracedCommand`] runs the command to trace under ptrace so that the
//!   memory maps of every process it runs are saved ([`MapsStore`]), and
//!   [`MapsTracker`] / [`StackPidScanner`] poll the maps of the other
//!   processes that matter (`-P` pids, their children, processes seen with
//!   user stacks in the data);
//! * [`Extraction`] is the part of a session that applies after the fact
//!   (`extract`): the buffers drained, the maps of the processes with
//!   stacks in them;
//! * [`collect_meta`] / [`write_dat`] build the trace.dat from tracefs's
//!   metadata and the per-CPU page files.
//!
//! Policy stays with the caller: this crate prints nothing, installs no
//! signal handler and never exits the process.

mod cmdlines;
mod command;
mod cputime;
mod events;
mod extract;
mod lock;
mod maps;
mod output;
mod procwatch;
mod recorder;
mod recording;
mod session;
mod snapshot;
mod timed;
mod tracee;

pub use cmdlines::Cmdlines;
pub use command::HeldChild;
pub use cputime::{process_cpu, thread_cpu};
pub use extract::Extraction;
pub use lock::{restore_leftover, InstanceLock};
pub use maps::{merge_maps, MapsStore, MapsTracker, StackPidScanner};
pub use output::{
    buffer_data, check_output, collect_meta, write_dat, write_options, SpaceReserve, TempFiles,
    RESERVE_BYTES,
};
pub use procwatch::{last_comms, ProcEvent, ProcWatch, Stamper};
pub use recorder::{CpuResult, Recorder};
pub use recording::{Launch, Prepared, Recording, Tick, TICK};
pub use session::{
    setup, setup_watched, Session, TraceConfig, UserStacks, NO_DELAY_OPTION, SETUP_OPTIONS,
};
pub use snapshot::{LiveSnapshot, Refresh, MAX_SPAN};
pub use tracee::{TraceStats, TracedCommand};
