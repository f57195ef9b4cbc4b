//! The host's top tracefs instance in the host tests (root, real tracefs).
//!
//! Debian's trace-cmd 3.1.6 `extract -B NAME` resets the *top* instance as
//! well as NAME: it writes 0 to the top's `tracing_on` (and never puts it
//! back), 0 to `events/enable` and to every `events/SYSTEM/filter`, `nop` to
//! `current_tracer`, clears `set_ftrace_pid` and the top buffer (seen with
//! `strace -e openat,write`). A test that compares the top's settings before
//! and after its own work therefore fails whenever an extract runs in between
//! (a run once left "top not restored after SIGTERM: tracing_on 1 -> 0"),
//! and each extract left the host's top with `tracing_on` at 0.
//!
//! So: every `trace-cmd extract` of the tests goes through [`trace_cmd_extract`],
//! which holds the [`top_lock`] and puts the top's settings back; a test that
//! checks the top holds the same lock for as long as its check is open; and
//! [`TopWrites`] names the processes that wrote the top's files (fanotify),
//! so a test can tell its own writes from anybody else's.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

const TRACEFS: &str = "/sys/kernel/tracing";
/// One lock for every process of the workspace's tests on this machine.
const LOCK_FILE: &str = "/tmp/ustack-tracefs-top.lock";

/// Files of the top instance that a recording tool may change (never `trace`:
/// fanotify opens each changed file, and an open `trace` pauses tracing).
pub const TOP_FILES: &[&str] = &[
    "tracing_on",
    "current_tracer",
    "events/enable",
    "set_event",
    "set_event_pid",
    "set_ftrace_pid",
    "buffer_size_kb",
    "trace_clock",
    "trace_options",
];

/// The pids of the `trace-cmd extract` processes [`trace_cmd_extract`] ran.
pub static EXTRACT_PIDS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Held while a test's check of the top instance is open, and around every
/// `trace-cmd extract`; shared by all processes through a lock file.
pub struct TopLock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

/// Waits for the top lock.
pub fn top_lock() -> TopLock {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK_FILE)
        .unwrap_or_else(|e| panic!("open {LOCK_FILE}: {e}"));
    match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive) {
        Ok(l) => TopLock(l),
        Err((_, e)) => panic!("flock {LOCK_FILE}: {e}"),
    }
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(TRACEFS).join(rel)).unwrap_or_default()
}

fn write(rel: &str, value: &str, append: bool) {
    use std::io::Write as _;
    let p = Path::new(TRACEFS).join(rel);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .append(append)
        .truncate(!append)
        .open(&p)
        .unwrap_or_else(|e| panic!("open {}: {e}", p.display()));
    f.write_all(value.as_bytes())
        .unwrap_or_else(|e| panic!("write {value:?} to {}: {e}", p.display()));
}

/// What trace-cmd extract resets in the top instance.
struct TopState {
    tracing_on: String,
    current_tracer: String,
    set_event: String,
    set_ftrace_pid: String,
    /// (`events/SYSTEM/EVENT/filter`, filter) of every event with a filter.
    filters: Vec<(String, String)>,
}

impl TopState {
    fn save() -> TopState {
        let mut filters = Vec::new();
        for sys in std::fs::read_dir(Path::new(TRACEFS).join("events"))
            .into_iter()
            .flatten()
        {
            let Ok(sys) = sys else { continue };
            for ev in std::fs::read_dir(sys.path()).into_iter().flatten() {
                let Ok(ev) = ev else { continue };
                let rel = format!(
                    "events/{}/{}/filter",
                    sys.file_name().to_string_lossy(),
                    ev.file_name().to_string_lossy()
                );
                let f = read(&rel);
                if !f.trim().is_empty() && f.trim() != "none" {
                    filters.push((rel, f.trim().to_string()));
                }
            }
        }
        TopState {
            tracing_on: read("tracing_on"),
            current_tracer: read("current_tracer"),
            set_event: read("set_event"),
            set_ftrace_pid: read("set_ftrace_pid"),
            filters,
        }
    }

    /// Writes back what differs now.
    fn restore(&self) {
        let now = TopState::save();
        if now.current_tracer != self.current_tracer {
            write("current_tracer", self.current_tracer.trim(), false);
        }
        if now.set_ftrace_pid != self.set_ftrace_pid {
            let pids: Vec<&str> = self
                .set_ftrace_pid
                .split_whitespace()
                .filter(|p| p.chars().all(|c| c.is_ascii_digit()))
                .collect();
            write("set_ftrace_pid", &pids.join(" "), false);
        }
        for (rel, f) in &self.filters {
            if !now.filters.iter().any(|(r, g)| r == rel && g == f) {
                write(rel, f, false);
            }
        }
        if now.set_event != self.set_event {
            write("set_event", "", false);
            for e in self.set_event.lines().filter(|l| !l.trim().is_empty()) {
                write("set_event", e.trim(), true);
            }
        }
        if now.tracing_on != self.tracing_on {
            write("tracing_on", self.tracing_on.trim(), false);
        }
    }
}

/// Makes `cmd` see a copy of `saved_cmdlines` taken now: a private mount
/// namespace with `snapshot` (filled here) bind-mounted over the file.
///
/// trace-cmd 3.1.6 reads `saved_cmdlines` twice, once for the size it
/// announces and once for the contents it copies; any process traced in
/// between (by another test or anybody else on the machine) changes the
/// kernel's list, and the file then announces a size its CMDLINES section
/// does not hold: `trace-cmd report` prints nothing for such a file, and
/// a comparison with it fails (2 of ~5 runs of
/// `cpu_and_event_filters_match_trace_cmd`). A regular file reads the
/// same twice.
fn freeze_saved_cmdlines(cmd: &mut Command, snapshot: &Path) {
    use nix::mount::{mount, MsFlags};
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::process::CommandExt as _;
    let live = format!("{TRACEFS}/saved_cmdlines");
    let now = std::fs::read(&live).unwrap_or_else(|e| panic!("read {live}: {e}"));
    std::fs::write(snapshot, now).unwrap_or_else(|e| panic!("write {}: {e}", snapshot.display()));
    let src = std::ffi::CString::new(snapshot.as_os_str().as_bytes()).expect("path without NUL");
    let dst = std::ffi::CString::new(live).expect("path without NUL");
    let none: Option<&std::ffi::CStr> = None;
    // SAFETY: between fork and exec the closure only makes system calls
    // (unshare, mount) on strings prepared before the fork: no allocation,
    // no lock.
    unsafe {
        cmd.pre_exec(move || {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)?;
            mount(
                none,
                c"/",
                none,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                none,
            )?;
            mount(
                Some(src.as_c_str()),
                dst.as_c_str(),
                none,
                MsFlags::MS_BIND,
                none,
            )?;
            Ok(())
        });
    }
}

/// `trace-cmd extract -B instance -o out`, holding the top lock, with the
/// top instance's settings put back afterwards (its buffer stays drained).
/// trace-cmd sees a frozen `saved_cmdlines` ([`freeze_saved_cmdlines`]).
pub fn trace_cmd_extract(instance: &str, out: &Path) -> Output {
    let _lock = top_lock();
    let top = TopState::save();
    let mut cmd = Command::new("trace-cmd");
    let snapshot = tempfile::NamedTempFile::new().expect("temporary file");
    freeze_saved_cmdlines(&mut cmd, snapshot.path());
    let child = cmd
        .args(["extract", "-B", instance, "-o"])
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run trace-cmd extract");
    EXTRACT_PIDS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(child.id() as i32);
    let o = child
        .wait_with_output()
        .expect("wait for trace-cmd extract");
    top.restore();
    o
}

/// Writes to the top instance's [`TOP_FILES`], with the pid of the writer
/// (fanotify, FAN_MODIFY on each file).
pub struct TopWrites {
    fd: OwnedFd,
}

impl TopWrites {
    /// Starts watching; writes before this call are not reported.
    pub fn watch() -> TopWrites {
        // SAFETY: plain syscall; the returned descriptor is checked and owned below.
        let raw = unsafe {
            libc::fanotify_init(
                libc::FAN_CLASS_NOTIF | libc::FAN_NONBLOCK | libc::FAN_CLOEXEC,
                (libc::O_RDONLY | libc::O_CLOEXEC) as u32,
            )
        };
        assert!(
            raw >= 0,
            "fanotify_init: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        for f in TOP_FILES {
            let p = std::ffi::CString::new(format!("{TRACEFS}/{f}")).unwrap();
            // SAFETY: `p` is a valid C string for the duration of the call.
            let r = unsafe {
                libc::fanotify_mark(
                    fd.as_raw_fd(),
                    libc::FAN_MARK_ADD,
                    libc::FAN_MODIFY,
                    libc::AT_FDCWD,
                    p.as_ptr(),
                )
            };
            assert!(
                r == 0 || !Path::new(TRACEFS).join(f).exists(),
                "fanotify_mark {f}: {}",
                std::io::Error::last_os_error()
            );
        }
        TopWrites { fd }
    }

    /// The writes since the last call (or since [`TopWrites::watch`]): (pid, file).
    pub fn take(&self) -> Vec<(i32, String)> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 4096];
        loop {
            // SAFETY: `buf` is valid for `buf.len()` bytes.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            let meta = std::mem::size_of::<libc::fanotify_event_metadata>();
            while off + meta <= n as usize {
                // SAFETY: the kernel wrote whole metadata records into `buf`; read_unaligned
                // copes with any alignment of `buf`.
                let m: libc::fanotify_event_metadata =
                    unsafe { std::ptr::read_unaligned(buf[off..].as_ptr().cast()) };
                let file = if m.fd >= 0 {
                    let p = std::fs::read_link(format!("/proc/self/fd/{}", m.fd))
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    // SAFETY: the event's descriptor is ours to close.
                    unsafe { libc::close(m.fd) };
                    p
                } else {
                    String::new()
                };
                out.push((m.pid, file));
                if m.event_len == 0 {
                    break;
                }
                off += m.event_len as usize;
            }
        }
        out
    }
}
