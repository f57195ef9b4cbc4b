//! Process lifecycle for the maps, on any kernel: a private instance of
//! the recorder's own (never the user's view) with `sched_process_exec`,
//! `task_newtask`, `task_rename`, `sched_process_exit` and the entries of
//! `execve`/`execveat` (where syscall events exist) enabled, in the
//! clock of the traced instance, and its `trace_marker` to stamp each
//! `/proc` read of a process's maps with trace time. From these,
//! [`crate::MapsStore`] writes PROCMAPS entries with times (`at:`), so
//! that every stack is resolved with the maps its process had when the
//! stack was taken: forks inherit their parent's image until they exec,
//! an exec starts a new one.
//!
//! The events are read back (non-blocking `trace_pipe_raw`, whole or
//! partial pages) while recording, so that a process is read on its exec,
//! and once more at the end; they are never written to the trace file.
//! They also give the command name of every task created, exec'd or
//! renamed while recording ([`ProcEvent::Comm`]), which the kernel's
//! `saved_cmdlines` keeps only as a best-effort cache.

use anyhow::Result;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use ustack_tracedata::format::EventFormat;
use ustack_tracedata::header::HeaderPage;
use ustack_tracedata::page::Page;
use ustack_tracedata::{FieldRef, Record};
use ustack_tracefs::{EventId, Guard, Instance, Marker, PageReader, Tracefs};

/// `CLONE_THREAD` of `task_newtask`'s `clone_flags`.
const CLONE_THREAD: u64 = 0x10000;

/// Ring-buffer size of the private instance per CPU (KiB): a few thousand
/// lifecycle events between two polls.
const BUFFER_KB: u64 = 512;

/// The text of our `trace_marker` lines: `ustack-maps SEQ b|a`.
const MARK: &str = "ustack-maps ";

/// One lifecycle event of the private instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcEvent {
    /// Task `tid` (now the leader `pid`) exec'd.
    Exec {
        /// Trace time.
        ts: u64,
        /// The process (the exec'ing thread becomes its leader).
        pid: u32,
    },
    /// Task `tid` entered `execve` or `execveat`. From here until its
    /// [`ProcEvent::Exec`], `/proc/PID/maps` may show the old image, the
    /// new one (the kernel switches the mm before it has mapped the new
    /// program, and logs the exec after) or a part of it: a read in that
    /// window says nothing of either image. A failed exec has no
    /// [`ProcEvent::Exec`].
    ExecStart {
        /// Trace time.
        ts: u64,
        /// The task (a thread id).
        tid: u32,
    },
    /// Task `parent` created task `child`: a thread of its process
    /// (`thread`), or a new process.
    NewTask {
        /// Trace time.
        ts: u64,
        /// The creating task (a thread id).
        parent: u32,
        /// The new task.
        child: u32,
        /// `CLONE_THREAD`: the child is a thread of the parent's process.
        thread: bool,
    },
    /// The last thread of process `pid` exited.
    Exit {
        /// Trace time.
        ts: u64,
        /// The process.
        pid: u32,
    },
    /// Task `pid` has the command name `comm` (NUL-padded): it was created
    /// with it (`task_newtask`), or took it by exec or a rename
    /// (`task_rename`).
    Comm {
        /// Trace time.
        ts: u64,
        /// The task (a thread id).
        pid: u32,
        /// The name, as the kernel's `TASK_COMM_LEN` array.
        comm: [u8; 16],
    },
    /// A marker written around a `/proc` read: `before` or after it.
    Mark {
        /// Trace time.
        ts: u64,
        /// The read's sequence number.
        seq: u64,
        /// Written before the read (else after it).
        before: bool,
    },
}

/// Stamps `/proc` reads with trace time: writes `ustack-maps SEQ b|a` to
/// the private instance's `trace_marker`. Shared with the ptrace thread.
#[derive(Debug)]
pub struct Stamper {
    /// Closed by [`ProcWatch::finish`], so the instance can be removed.
    marker: Mutex<Option<Marker>>,
    seq: AtomicU64,
}

impl Stamper {
    /// A new sequence number for one read.
    pub fn next(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Writes the marker of read `seq`, before or after it.
    pub fn mark(&self, seq: u64, before: bool) {
        let text = format!("{MARK}{seq} {}", if before { 'b' } else { 'a' });
        let f = self.marker.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = f.as_ref() {
            let _ = f.write(&text);
        }
    }
}

/// The fields of the events read, resolved from their formats.
#[derive(Debug, Default)]
struct Layout {
    /// `sched_process_exec`: id, `pid`.
    exec: Option<(u16, FieldRef)>,
    /// `syscalls:sys_enter_execve` and `sys_enter_execveat`.
    exec_start: Vec<u16>,
    /// `task_newtask`: id, `pid`, `clone_flags`.
    newtask: Option<(u16, FieldRef, FieldRef)>,
    /// The `comm` of `task_newtask`.
    newtask_comm: Option<FieldRef>,
    /// `task_rename`: id, `pid` (absent on kernels that log the current
    /// task only) and `newcomm`.
    rename: Option<(u16, Option<FieldRef>, FieldRef)>,
    /// `sched_process_exit`: id, `pid`, `group_dead` (absent on old kernels).
    exit: Option<(u16, FieldRef, Option<FieldRef>)>,
    /// `ftrace:print`: id, `buf`.
    print: Option<(u16, FieldRef)>,
}

/// The private instance and its readers.
pub struct ProcWatch {
    inst: Instance,
    readers: Vec<PageReader>,
    header: HeaderPage,
    page_size: usize,
    layout: Layout,
    stamper: Arc<Stamper>,
    events: Vec<ProcEvent>,
}

impl ProcWatch {
    /// Creates the private instance `ustack-procs-<pid>` (removed when
    /// `guard` restores), with the lifecycle events on, in `clock`.
    pub fn start(fs: &Tracefs, guard: &Guard, clock: &str) -> Result<ProcWatch> {
        let name = format!("ustack-procs-{}", std::process::id());
        let inst = guard.adopt_instance(fs.create_instance(&name)?);
        guard.set_buffer_size_kb(&inst, BUFFER_KB)?;
        guard.set_trace_clock(&inst, clock)?;
        let mut layout = Layout::default();
        let format = |sys: &str, ev: &str| -> Option<EventFormat> {
            EventFormat::parse(sys, &fs.event_format(sys, ev).ok()?).ok()
        };
        let off = FieldRef::of;
        let enable = |sys: &str, ev: &str| -> Result<Option<EventFormat>> {
            let Some(f) = format(sys, ev) else {
                return Ok(None);
            };
            let id = EventId {
                system: sys.into(),
                name: ev.into(),
            };
            guard.set_event_enabled(&inst, &id, true)?;
            Ok(Some(f))
        };
        if let Some(f) = enable("sched", "sched_process_exec")? {
            layout.exec = off(&f, "pid").map(|p| (f.id, p));
        }
        for ev in ["sys_enter_execve", "sys_enter_execveat"] {
            layout
                .exec_start
                .extend(enable("syscalls", ev)?.map(|f| f.id));
        }
        if let Some(f) = enable("task", "task_newtask")? {
            layout.newtask = off(&f, "pid")
                .zip(off(&f, "clone_flags"))
                .map(|(p, c)| (f.id, p, c));
            layout.newtask_comm = off(&f, "comm");
        }
        if let Some(f) = enable("task", "task_rename")? {
            layout.rename = off(&f, "newcomm").map(|c| (f.id, off(&f, "pid"), c));
        }
        if let Some(f) = enable("sched", "sched_process_exit")? {
            layout.exit = off(&f, "pid").map(|p| (f.id, p, off(&f, "group_dead")));
        }
        if let Some(f) = format("ftrace", "print") {
            layout.print = off(&f, "buf").map(|b| (f.id, b));
        }
        let header = HeaderPage::parse(&fs.header_page()?)?;
        let page_size = inst.page_size();
        let readers = inst
            .cpus()?
            .into_iter()
            .map(|cpu| inst.page_reader(cpu))
            .collect::<Result<Vec<_>, _>>()?;
        let marker = inst.marker()?;
        guard.set_tracing_on(&inst, true)?;
        Ok(ProcWatch {
            inst,
            readers,
            header,
            page_size,
            layout,
            stamper: Arc::new(Stamper {
                marker: Mutex::new(Some(marker)),
                seq: AtomicU64::new(0),
            }),
            events: Vec::new(),
        })
    }

    /// The stamper of `/proc` reads (for [`crate::MapsStore::set_stamper`]).
    pub fn stamper(&self) -> Arc<Stamper> {
        self.stamper.clone()
    }

    /// Reads what the instance holds now; returns the new events (they are
    /// kept too, for [`ProcWatch::finish`]).
    pub fn poll(&mut self) -> Vec<ProcEvent> {
        let mut new = Vec::new();
        let mut buf = vec![0u8; self.page_size];
        for r in &mut self.readers {
            // Until the CPU has nothing ready (or a read fails).
            while let Ok(Some(n)) = r.read_page(&mut buf) {
                if let Ok(p) = Page::new(&buf[..n], &self.header) {
                    for (ts, data) in p.events().flatten() {
                        decode(&self.layout, ts, data, &mut new);
                    }
                }
            }
        }
        new.sort_by_key(|e| e.ts());
        self.events.extend_from_slice(&new);
        new
    }

    /// The events read so far, in time order (a live view's maps are
    /// timed with them before the watch is finished).
    pub fn events(&self) -> Vec<ProcEvent> {
        let mut ev = self.events.clone();
        ev.sort_by_key(|e| e.ts());
        ev
    }

    /// Stops the instance, reads what is left and closes its files (reads
    /// are no longer stamped); all events in time order.
    pub fn finish(mut self) -> Vec<ProcEvent> {
        let _ = self.inst.set_tracing_on(false);
        self.poll();
        let mut ev = std::mem::take(&mut self.events);
        ev.sort_by_key(|e| e.ts());
        ev
    }
}

impl Drop for ProcWatch {
    /// Closes the instance's `trace_marker`, which the stamper shares with
    /// the maps store: an open file keeps the kernel from removing the
    /// instance (EBUSY), and the store may outlive the watch (an early
    /// error return drops the session's guard before the store).
    fn drop(&mut self) {
        *self
            .stamper
            .marker
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl ProcEvent {
    /// The trace time of the event.
    pub fn ts(&self) -> u64 {
        match *self {
            ProcEvent::Exec { ts, .. }
            | ProcEvent::ExecStart { ts, .. }
            | ProcEvent::NewTask { ts, .. }
            | ProcEvent::Exit { ts, .. }
            | ProcEvent::Comm { ts, .. }
            | ProcEvent::Mark { ts, .. } => ts,
        }
    }
}

fn u32_of(d: &[u8], f: FieldRef) -> Option<u32> {
    f.u64(d).map(|v| v as u32)
}

/// A kernel `comm` array (`TASK_COMM_LEN`, 16 bytes).
fn comm_of(d: &[u8], f: FieldRef) -> Option<[u8; 16]> {
    f.inline(d)?.get(..16)?.try_into().ok()
}

/// Decodes one event of the private instance into `out`, when it is one
/// of ours (a new task gives its creation and its first name).
fn decode(l: &Layout, ts: u64, d: &[u8], out: &mut Vec<ProcEvent>) {
    let Some(e) = decode_one(l, ts, d) else {
        return;
    };
    out.push(e);
    if let (ProcEvent::NewTask { child: pid, .. }, Some(f)) = (e, l.newtask_comm) {
        out.extend(comm_of(d, f).map(|comm| ProcEvent::Comm { ts, pid, comm }));
    }
}

fn decode_one(l: &Layout, ts: u64, d: &[u8]) -> Option<ProcEvent> {
    let rec = Record::new(0, ts, d);
    let id = rec.common_type()?;
    let common_pid = rec.common_pid()? as u32;
    if let Some((_, pid)) = l.exec.filter(|e| e.0 == id) {
        return Some(ProcEvent::Exec {
            ts,
            pid: u32_of(d, pid)?,
        });
    }
    if l.exec_start.contains(&id) {
        return Some(ProcEvent::ExecStart {
            ts,
            tid: common_pid,
        });
    }
    if let Some((_, pid, flags)) = l.newtask.filter(|e| e.0 == id) {
        return Some(ProcEvent::NewTask {
            ts,
            parent: common_pid,
            child: u32_of(d, pid)?,
            thread: flags.u64(d)? & CLONE_THREAD != 0,
        });
    }
    if let Some((_, pid, comm)) = l.rename.filter(|e| e.0 == id) {
        return Some(ProcEvent::Comm {
            ts,
            pid: match pid {
                Some(f) => u32_of(d, f)?,
                None => common_pid,
            },
            comm: comm_of(d, comm)?,
        });
    }
    if let Some((_, pid, dead)) = l.exit.filter(|e| e.0 == id) {
        // Without group_dead (old kernels) every exit counts.
        let group_dead =
            dead.is_none_or(|f| f.inline(d).and_then(|b| b.first()).is_some_and(|&b| b != 0));
        return group_dead.then_some(ProcEvent::Exit {
            ts,
            pid: u32_of(d, pid)?,
        });
    }
    let (_, buf) = l.print.filter(|e| e.0 == id)?;
    let text = buf.cstr(d)?;
    let rest = std::str::from_utf8(text)
        .ok()?
        .trim_end()
        .strip_prefix(MARK)?;
    let (seq, side) = rest.split_once(' ')?;
    Some(ProcEvent::Mark {
        ts,
        seq: seq.parse().ok()?,
        before: side == "b",
    })
}

/// The last command name of each task named in `events` (in time order).
pub fn last_comms(events: &[ProcEvent]) -> HashMap<u32, [u8; 16]> {
    events
        .iter()
        .filter_map(|e| match *e {
            ProcEvent::Comm { pid, comm, .. } => Some((pid, comm)),
            _ => None,
        })
        .collect()
}

/// The trace times of each stamped read: `seq -> (before, after)`.
pub fn read_times(events: &[ProcEvent]) -> HashMap<u64, (u64, u64)> {
    let mut out: HashMap<u64, (Option<u64>, Option<u64>)> = HashMap::new();
    for e in events {
        if let ProcEvent::Mark { ts, seq, before } = *e {
            let t = out.entry(seq).or_default();
            if before {
                t.0 = Some(ts);
            } else {
                t.1 = Some(ts);
            }
        }
    }
    out.into_iter()
        .filter_map(|(s, (b, a))| Some((s, (b?, a?))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ustack_tracedata::{Field, FieldKind};

    fn field(offset: usize, size: usize, kind: FieldKind) -> FieldRef {
        let f = Field {
            name: String::new(),
            type_name: "int".into(),
            offset,
            size,
            signed: false,
            kind,
        };
        FieldRef::new(&f, 8)
    }

    /// A scalar of `size` bytes at `offset`.
    fn num(offset: usize, size: usize) -> FieldRef {
        field(offset, size, FieldKind::Scalar)
    }

    /// `char name[n]` at `offset` (`n` = 0: up to the end of the record).
    fn chars(offset: usize, n: usize) -> FieldRef {
        field(offset, n, FieldKind::Array { count: n })
    }

    #[test]
    fn events_decode_by_layout() {
        let l = Layout {
            exec: Some((1, num(12, 4))),
            exec_start: vec![6, 7],
            newtask: Some((2, num(8, 4), num(32, 8))),
            exit: Some((3, num(24, 4), Some(num(32, 1)))),
            print: Some((4, chars(16, 0))),
            ..Layout::default()
        };
        let mut d = vec![0u8; 48];
        d[4..8].copy_from_slice(&77u32.to_le_bytes());
        let with = |id: u16, f: &dyn Fn(&mut Vec<u8>)| {
            let mut x = d.clone();
            x[..2].copy_from_slice(&id.to_le_bytes());
            f(&mut x);
            decode_one(&l, 9, &x)
        };
        assert_eq!(
            with(1, &|x| x[12..16].copy_from_slice(&5u32.to_le_bytes())),
            Some(ProcEvent::Exec { ts: 9, pid: 5 })
        );
        assert_eq!(
            with(2, &|x| {
                x[8..12].copy_from_slice(&6u32.to_le_bytes());
                x[32..40].copy_from_slice(&(CLONE_THREAD | 0x100).to_le_bytes());
            }),
            Some(ProcEvent::NewTask {
                ts: 9,
                parent: 77,
                child: 6,
                thread: true
            })
        );
        assert_eq!(
            with(3, &|x| x[24..28].copy_from_slice(&7u32.to_le_bytes())),
            None
        );
        assert_eq!(
            with(3, &|x| {
                x[24..28].copy_from_slice(&7u32.to_le_bytes());
                x[32] = 1;
            }),
            Some(ProcEvent::Exit { ts: 9, pid: 7 })
        );
        let mark = |t: &'static [u8]| move |x: &mut Vec<u8>| x[16..16 + t.len()].copy_from_slice(t);
        assert_eq!(
            with(4, &mark(b"ustack-maps 12 a\n")),
            Some(ProcEvent::Mark {
                ts: 9,
                seq: 12,
                before: false
            })
        );
        assert_eq!(with(4, &mark(b"someone else")), None);
        assert_eq!(
            with(7, &|_| ()),
            Some(ProcEvent::ExecStart { ts: 9, tid: 77 })
        );
        assert_eq!(with(5, &|_| ()), None);
        assert_eq!(decode_one(&l, 1, &[1]), None);
        let ev = [
            ProcEvent::Mark {
                ts: 3,
                seq: 1,
                before: true,
            },
            ProcEvent::Mark {
                ts: 4,
                seq: 1,
                before: false,
            },
            ProcEvent::Mark {
                ts: 5,
                seq: 2,
                before: true,
            },
        ];
        assert_eq!(read_times(&ev), HashMap::from([(1, (3, 4))]));
    }

    fn comm(s: &str) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[..s.len()].copy_from_slice(s.as_bytes());
        c
    }

    #[test]
    fn new_tasks_and_renames_give_command_names() {
        let l = Layout {
            newtask: Some((2, num(8, 4), num(32, 8))),
            newtask_comm: Some(chars(12, 16)),
            rename: Some((6, Some(num(8, 4)), chars(28, 16))),
            ..Layout::default()
        };
        let mut newtask = vec![0u8; 48];
        newtask[..2].copy_from_slice(&2u16.to_le_bytes());
        newtask[4..8].copy_from_slice(&77u32.to_le_bytes());
        newtask[8..12].copy_from_slice(&78u32.to_le_bytes());
        newtask[12..28].copy_from_slice(&comm("probe"));
        let mut rename = vec![0u8; 48];
        rename[..2].copy_from_slice(&6u16.to_le_bytes());
        rename[4..8].copy_from_slice(&77u32.to_le_bytes());
        rename[8..12].copy_from_slice(&78u32.to_le_bytes());
        rename[28..44].copy_from_slice(&comm("worker"));
        let mut ev = Vec::new();
        decode(&l, 5, &newtask, &mut ev);
        decode(&l, 6, &[9, 9], &mut ev);
        decode(&l, 7, &rename, &mut ev);
        assert_eq!(
            ev,
            [
                ProcEvent::NewTask {
                    ts: 5,
                    parent: 77,
                    child: 78,
                    thread: false
                },
                ProcEvent::Comm {
                    ts: 5,
                    pid: 78,
                    comm: comm("probe")
                },
                ProcEvent::Comm {
                    ts: 7,
                    pid: 78,
                    comm: comm("worker")
                },
            ]
        );
        assert_eq!(last_comms(&ev), HashMap::from([(78, comm("worker"))]));
        // Kernels whose task_rename has no pid name the current task.
        let l = Layout {
            rename: Some((6, None, chars(28, 16))),
            ..l
        };
        let mut ev = Vec::new();
        decode(&l, 7, &rename, &mut ev);
        assert_eq!(last_comms(&ev), HashMap::from([(77, comm("worker"))]));
    }
}
