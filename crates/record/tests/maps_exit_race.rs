//! The race behind boot case 07b's "one exiting child came out
//! unsymbolized": `/proc/PID/maps` read while the process tears its
//! mappings down in `exit_mm()` returns a list cut short (seq_file reads it
//! in chunks, and the VMAs of the later chunks are gone by then). PROCMAPS
//! folds a file's mappings into one range, so such a read names the file
//! with a shorter range, and being the newest snapshot it used to replace
//! the whole one: the frames above the cut then resolved to nothing.
//!
//! The race is real on an ordinary machine, but left to chance a read
//! spans the exit in about one exit in fifty (fewer on an idle machine:
//! the exit is short). So the test times the exit itself: it tells the
//! child to exit while a read is under way, its own slow read in pieces
//! (which then comes out cut short nearly every time: that proves the race
//! is there) or the store's, and loops until it has seen the cut-short
//! read itself several times, checking after every read that
//! [`MapsStore::read`] kept the whole range. It needs no root: a process
//! may read its own children's maps.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use ustack_record::MapsStore;
use ustack_symbolize::procfs::read_proc_map;
use ustack_tracedata::LibMap;

/// How many cut-short reads the test wants to have seen before it passes.
const HITS_WANTED: u32 = 10;
/// After this many exits without one, it says so and fails: it proved nothing.
const MAX_RUNS: u32 = 400;

/// A child that maps one file executable (as a library's text: PROCMAPS
/// keeps only files mapped so) as 4,000 VMAs (every other page made
/// inaccessible, so they cannot merge), says `ready`, and exits when its
/// standard input closes. Many VMAs make the teardown, and so the window,
/// long enough to hit.
const CHILD: &str = r#"
import ctypes, mmap, os, sys, tempfile
n = 4000
f = tempfile.NamedTemporaryFile(prefix="ustack-exit-race-")
f.truncate(n * 4096)
m = mmap.mmap(f.fileno(), n * 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)
start = next(int(l.split("-")[0], 16) for l in open("/proc/self/maps") if f.name in l)
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
for i in range(0, n, 2):
    if libc.mprotect(start + i * 4096, 4096, 0) != 0:
        sys.exit("mprotect: errno %d" % ctypes.get_errno())
print(f.name, flush=True)
sys.stdin.read()
os._exit(0)
"#;

/// Starts the child and returns it with the path of its mapped file.
fn start_child() -> (Child, String) {
    let mut child = Command::new("python3")
        .args(["-c", CHILD])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("child says ready");
    let path = line.trim().to_string();
    assert!(!path.is_empty(), "the child failed before mapping its file");
    (child, path)
}

/// The range PROCMAPS would hold for `path` in `pid`'s maps read now.
fn range_now(pid: u32, path: &str) -> Option<LibMap> {
    let maps = read_proc_map(pid).ok()?;
    maps.maps.into_iter().find(|m| m.path == path)
}

/// Bytes per `read()` of the test's own look at the maps: each `read()`
/// of a seq_file takes the process's mm anew, so a look made of many small
/// reads is long, and the child is told to exit during one (see the test).
const LOOK_CHUNK: usize = 512;

/// The end of `path`'s last mapping in `pid`'s maps read now (in
/// [`LOOK_CHUNK`] pieces), found without parsing the rest; `started` is
/// called after the first piece.
fn last_end_now(pid: u32, path: &str, started: impl FnOnce()) -> Option<u64> {
    let mut f = std::fs::File::open(format!("/proc/{pid}/maps")).ok()?;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; LOOK_CHUNK];
    let mut started = Some(started);
    loop {
        match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                if let Some(f) = started.take() {
                    f();
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let text = String::from_utf8(bytes).ok()?;
    let line = text.lines().rev().find(|l| l.ends_with(path))?;
    let range = line.split_whitespace().next()?;
    u64::from_str_radix(range.split_once('-')?.1, 16).ok()
}

/// The range of `path` that `store` holds for `pid` now.
fn stored(store: &MapsStore, pid: u32, path: &str) -> Option<LibMap> {
    let m = store.maps().into_iter().find(|m| m.pid == pid)?;
    m.maps.into_iter().find(|m| m.path == path)
}

#[test]
fn a_maps_read_cut_short_by_exit_never_replaces_the_whole_range() {
    let mut hits = 0;
    let mut runs = 0;
    let started = Instant::now();
    while hits < HITS_WANTED {
        assert!(
            runs < MAX_RUNS,
            "the race window was never hit in {runs} exits ({:?}): this test proved nothing here",
            started.elapsed()
        );
        runs += 1;
        let (mut child, path) = start_child();
        let pid = child.id();
        let whole = range_now(pid, &path).expect("the child's file is mapped");
        let store = MapsStore::default();
        assert!(store.read(pid), "a live process's maps are read");

        // Read as the recorder's poller does, and look for ourselves
        // whether a read came out cut short, from before the exit starts
        // until the maps are gone.
        let reading = AtomicBool::new(false);
        let tell_in_store_read = runs % 2 == 0;
        let seen_short = std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let deadline = Instant::now() + Duration::from_secs(20);
                let mut short = 0;
                loop {
                    if tell_in_store_read {
                        reading.store(true, Ordering::Release);
                    }
                    store.read(pid);
                    assert_eq!(
                        stored(&store, pid, &path).as_ref(),
                        Some(&whole),
                        "run {runs}: the store took a cut-short read of {path}"
                    );
                    // Every other run, the child is told to exit during
                    // the first look, after the store read it whole once:
                    // the look then spans the exit in most runs. In the
                    // other runs it is told as the store starts a read,
                    // which then meets the exit at some stage.
                    let tell = || reading.store(true, Ordering::Release);
                    match last_end_now(pid, &path, tell) {
                        Some(end) if end != whole.end => short += 1,
                        Some(_) => {}
                        None => return short,
                    }
                    assert!(Instant::now() < deadline, "pid {pid} did not exit");
                }
            });
            while !reading.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            drop(child.stdin.take());
            reader.join().expect("reader thread")
        });
        hits += seen_short;
        let status = child.wait().expect("child reaped");
        assert!(status.success(), "child failed: {status}");

        assert_eq!(
            stored(&store, pid, &path).as_ref(),
            Some(&whole),
            "run {runs}: the store kept a cut-short range for {path}"
        );
    }
    let _ = std::io::stderr().write_fmt(format_args!(
        "cut-short reads seen {hits} times in {runs} exits; the whole range was kept every time\n"
    ));
}
