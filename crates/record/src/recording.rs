//! One recording session, the same for `record` and `tui --live`: the
//! command held before its exec ([`Launch`]), tracefs set up with the exec
//! and fork watch ([`Prepared`]), then the per-CPU readers and everything
//! that gathers the symbolization inputs while they run ([`Recording`]):
//! the ptrace'd command's maps, the polled `-P` pids and their children,
//! the processes found with user stacks in the data, the processes read
//! at their exec, the kernel's `saved_tgids` and the command names of
//! `saved_cmdlines` merged with those the watch saw.
//!
//! A trace.dat can be written at any time ([`Recording::write`]): `record`
//! writes one once stopped, and so does `tui --live` with `-o`. Meanwhile
//! `tui --live` brings a snapshot up to date about once a second
//! ([`Recording::snapshot`], a [`LiveSnapshot`] that grows with the
//! recording). Both get the same metadata ([`Recording::update_meta`]), so
//! what the live view symbolizes is what `record` would have saved up to
//! then.
//!
//! Policy stays with the caller: when to stop (signals, the command's
//! exit), what to print, and the pace of [`Recording::tick`] (every
//! [`TICK`]).

use crate::{
    collect_meta, last_comms, setup_watched, Cmdlines, CpuResult, LiveSnapshot, MapsStore,
    MapsTracker, ProcEvent, ProcWatch, Recorder, Refresh, Session, SpaceReserve, StackPidScanner,
    TraceConfig, TracedCommand, UserStacks,
};
use anyhow::Result;
use std::path::Path;
use std::time::Duration;
use ustack_tracedata::writer::{TraceMeta, WriteOptions, WriteSummary};

/// How often a [`Recording`] expects [`Recording::tick`]: the pace at
/// which processes are read after their exec, and so the shortest life of
/// a process (not under ptrace) whose maps can still be read.
pub const TICK: Duration = Duration::from_millis(50);

/// The first step: the command to trace, forked and held before its exec.
pub struct Launch {
    store: MapsStore,
    child: Option<TracedCommand>,
}

impl Launch {
    /// Forks `command` (none when empty), held before its exec; under
    /// ptrace when `ptrace` (its maps read at each exec and exit of its
    /// processes), else polled.
    pub fn spawn(command: &[String], ptrace: bool) -> Result<Launch> {
        let store = MapsStore::default();
        let child = if command.is_empty() {
            None
        } else {
            Some(TracedCommand::spawn(command, store.clone(), ptrace)?)
        };
        Ok(Launch { store, child })
    }

    /// Applies `config` to tracefs under a restoring guard, with the exec
    /// and fork watch started in the session's clock (see
    /// [`setup_watched`]). Tracing stays off.
    pub fn setup(self, config: &TraceConfig) -> Result<Prepared> {
        let pid = self.child.as_ref().map(|c| c.pid().as_raw() as u32);
        let (session, watch) = setup_watched(config, pid)?;
        let (watch, watch_error) = match watch {
            Ok(w) => {
                self.store.set_stamper(w.stamper());
                (Some(w), None)
            }
            Err(e) => (None, Some(e)),
        };
        Ok(Prepared {
            watch,
            watch_error,
            store: self.store,
            child: self.child,
            pids: config.pids.clone(),
            user_stacks: config.user_stacks,
            session,
        })
    }
}

/// The second step: tracefs is set up, nothing is read yet.
pub struct Prepared {
    // Dropped before the session: open files of its instances would keep
    // the guard from removing them.
    watch: Option<ProcWatch>,
    watch_error: Option<anyhow::Error>,
    store: MapsStore,
    child: Option<TracedCommand>,
    pids: Vec<u32>,
    user_stacks: UserStacks,
    session: Session,
}

impl Prepared {
    /// The tracefs session (its guard, what a killed session left).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The tracefs session, to set its guard's error sink.
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// Why execs and forks cannot be followed, if they cannot: the maps
    /// then carry no times and processes are not read at their exec.
    pub fn watch_error(&self) -> Option<&anyhow::Error> {
        self.watch_error.as_ref()
    }

    /// Starts the per-CPU readers into `<base>.cpuN`, and the pollers of
    /// the maps. With `reserve`, room for that file is kept free until
    /// [`Recording::write`] (see [`SpaceReserve`]).
    pub fn start(self, base: &Path, reserve: Option<&Path>) -> Result<Recording> {
        let reserve = reserve.map(SpaceReserve::take).transpose()?;
        let rec = Recorder::start(&self.session.inst, base)?;
        let everyone = self.child.is_none() && self.pids.is_empty();
        let mut roots = self.pids;
        // A command that could not be put under ptrace is polled.
        roots.extend(
            self.child
                .as_ref()
                .filter(|c| !c.is_traced())
                .map(|c| c.pid().as_raw() as u32),
        );
        let scanner = match self.user_stacks {
            UserStacks::Off => None,
            _ => StackPidScanner::new(
                &self.session.fs,
                self.session.inst.page_size(),
                rec.temp_files(),
            )?,
        };
        Ok(Recording {
            rec,
            reserve,
            child: self.child,
            command_status: None,
            watch: self.watch,
            lifecycle: None,
            maps: MapsTracker::with_store(roots, self.store),
            scanner,
            cmdlines: Cmdlines::default(),
            everyone,
            ticks: 0,
            meta: None,
            session: self.session,
        })
    }
}

/// What one [`Recording::tick`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// Nothing that ends the recording.
    Running,
    /// The command exited with this status.
    CommandExited(i32),
    /// A reader thread failed (a full disk): [`Recording::stop`] returns
    /// its error.
    ReaderFailed,
}

/// The third step: the readers run; [`Recording::go`] turns tracing on.
pub struct Recording {
    // Everything that holds a tracefs file open comes before the session,
    // so that it is closed when the guard restores on drop.
    rec: Recorder,
    reserve: Option<SpaceReserve>,
    child: Option<TracedCommand>,
    command_status: Option<i32>,
    watch: Option<ProcWatch>,
    /// The watch's events once it is finished (after the stop).
    lifecycle: Option<Vec<ProcEvent>>,
    maps: MapsTracker,
    scanner: Option<StackPidScanner>,
    cmdlines: Cmdlines,
    /// A recording of the whole system: every process that execs is read.
    everyone: bool,
    ticks: u64,
    meta: Option<TraceMeta>,
    session: Session,
}

impl Recording {
    /// The tracefs session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The readers.
    pub fn recorder(&self) -> &Recorder {
        &self.rec
    }

    /// The command, if one was given.
    pub fn command(&self) -> Option<&TracedCommand> {
        self.child.as_ref()
    }

    /// The command's exit status, once a tick or wait saw it.
    pub fn command_status(&self) -> Option<i32> {
        self.command_status
    }

    /// Turns tracing on and lets the command exec.
    pub fn go(&mut self) -> Result<()> {
        self.session.inst.set_tracing_on(true)?;
        if let Some(c) = self.child.as_mut() {
            c.release()?;
        }
        Ok(())
    }

    /// One round of gathering maps and names, to be called every [`TICK`]:
    /// the names of the kernel's cache (once a second: each read is the
    /// whole cache, and it turns over in far more than a second), the
    /// polled processes and their children, the exec and fork watch, the
    /// processes with stacks in the new pages. Then whether the command
    /// exited or a reader failed.
    pub fn tick(&mut self) -> Tick {
        let tick = self.ticks;
        self.ticks += 1;
        if tick % 20 == 0 {
            if let Ok(saved) = self.session.fs.saved_cmdlines() {
                self.cmdlines.absorb(&saved);
            }
        }
        if tick % 4 == 0 {
            self.maps.scan_children();
        }
        self.maps.snapshot();
        if let Some(w) = self.watch.as_mut() {
            let ev = w.poll();
            self.maps.on_events(&ev, self.everyone);
        }
        if let Some(sc) = self.scanner.as_mut().filter(|_| tick % 2 == 0) {
            for pid in sc.scan() {
                self.maps.add_seen(pid);
            }
        }
        if let Some(st) = self.child.as_ref().and_then(|c| c.try_wait()) {
            self.command_status = Some(st);
            return Tick::CommandExited(st);
        }
        if self.rec.reader_failed() {
            return Tick::ReaderFailed;
        }
        Tick::Running
    }

    /// Waits up to `timeout`, or until the command exits (its status).
    pub fn wait(&mut self, timeout: Duration) -> Option<i32> {
        match self.child.as_ref() {
            Some(c) => {
                let st = c.wait_timeout(timeout);
                if st.is_some() {
                    self.command_status = st;
                }
                st
            }
            None => {
                std::thread::sleep(timeout);
                None
            }
        }
    }

    /// True once [`Recording::stop`] ran.
    pub fn is_stopped(&self) -> bool {
        self.rec.is_finished()
    }

    /// Turns tracing off and lets every reader drain its CPU (see
    /// [`Recorder::finish`]). After a failed reader, the command is ended
    /// too rather than left running untraced. A second call returns an
    /// empty list.
    pub fn stop(&mut self) -> Result<Vec<CpuResult>> {
        if self.rec.reader_failed() {
            if let Some(c) = &self.child {
                self.command_status = c.terminate(Duration::from_secs(2));
            }
        }
        self.rec.finish()
    }

    /// Ends a command that still runs (SIGTERM, up to `wait`).
    pub fn terminate_command(&mut self, wait: Duration) {
        if let Some(c) = &self.child {
            if let Some(st) = c.terminate(wait) {
                self.command_status.get_or_insert(st);
            }
        }
    }

    /// Brings the trace.dat metadata up to date: the process maps so far
    /// (timed by the exec and fork watch when it runs), the merged command
    /// names, and once (at the first call) the rest from tracefs. After
    /// [`Recording::stop`], first the last pages are scanned for stacks,
    /// the processes seen are read once more, `saved_tgids` gives the
    /// threads and the watch is finished.
    pub fn update_meta(&mut self) -> Result<&TraceMeta> {
        if self.rec.is_finished() && self.lifecycle.is_none() {
            self.finish_maps();
        }
        let sorted;
        let events = match (&self.lifecycle, &self.watch) {
            (Some(ev), _) => Some(ev.as_slice()),
            (None, Some(w)) => {
                sorted = w.events();
                Some(sorted.as_slice())
            }
            (None, None) => None,
        };
        let procmaps = match events {
            Some(ev) => self.maps.timed_maps(ev),
            None => self.maps.maps(),
        };
        let s = &self.session;
        let saved = match &mut self.meta {
            None => {
                let m = collect_meta(&s.fs, &s.inst, Some(&s.events), procmaps)?;
                let saved = m.cmdlines.clone();
                self.meta = Some(m);
                Some(saved)
            }
            Some(m) => {
                m.procmaps = procmaps;
                s.fs.saved_cmdlines().ok()
            }
        };
        if let Some(saved) = saved {
            self.cmdlines.absorb(&saved);
        }
        // The names the watch saw win: they are the latest of their tasks.
        for (pid, comm) in events.map(last_comms).unwrap_or_default() {
            self.cmdlines.set_comm(pid, &comm);
        }
        let meta = self.meta.as_mut().expect("set above");
        meta.cmdlines = self.cmdlines.to_saved_cmdlines();
        Ok(meta)
    }

    /// The metadata of the last [`Recording::update_meta`].
    pub fn meta(&self) -> Option<&TraceMeta> {
        self.meta.as_ref()
    }

    /// The last reads, once the readers are done.
    fn finish_maps(&mut self) {
        if let Some(sc) = self.scanner.as_mut() {
            for pid in sc.scan() {
                self.maps.add_seen(pid);
            }
            self.maps.refresh_seen();
        }
        self.maps.add_saved_tgids_of(&self.session.fs);
        self.lifecycle = Some(self.watch.take().map(ProcWatch::finish).unwrap_or_default());
    }

    /// Writes a trace.dat of the pages so far (all once stopped) with the
    /// metadata of the last [`Recording::update_meta`] (brought up to date
    /// first if there was none), releasing the reserved space first.
    pub fn write(&mut self, path: &Path, opts: &WriteOptions) -> Result<WriteSummary> {
        if self.meta.is_none() {
            self.update_meta()?;
        }
        if let Some(r) = self.reserve.as_mut() {
            r.release();
        }
        let meta = self.meta.as_ref().expect("set above");
        self.rec.write(path, meta, opts)
    }

    /// Brings `snap` up to the pages so far (all once stopped) with the
    /// metadata of now ([`Recording::update_meta`]): what `tui --live`
    /// shows. Only what is new since its last update is written, so the
    /// cost does not grow with the recording (see [`LiveSnapshot`]). The
    /// reserved space is kept for the file written at the end.
    pub fn snapshot(&mut self, snap: &mut LiveSnapshot) -> Result<Refresh> {
        self.update_meta()?;
        let meta = self.meta.as_ref().expect("set above");
        self.rec.refresh(snap, meta)
    }

    /// Stops (if not yet), closes every file the recording holds in
    /// tracefs and restores every setting now, so that a failure is
    /// returned rather than left to the guard's drop. The temp files go
    /// with the recording.
    pub fn restore(mut self) -> Result<()> {
        let _ = self.rec.finish();
        drop(self.watch.take());
        self.session.guard.restore()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// `tui --live` ticks the recording on a thread of its own while the
    /// view writes snapshots.
    #[test]
    fn a_recording_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<super::Recording>();
    }
}
