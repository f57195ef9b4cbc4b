//! Host tests of `tracer-cli record` (and start/stop/extract) as root
//! against the machine's real tracefs, each in a private instance, events
//! only (this host refuses the function tracers).
//!
//! * a C test program's syscalls are all in the trace, counted by pid and
//!   comm against what the program says it did, each with its kernel and
//!   user stack, and its memory map is in PROCMAPS;
//! * `trace-cmd report` on our file equals `tracer-cli report` byte for byte
//!   (and trace-cmd prints no warning);
//! * a `trace-cmd extract` file read by `tracer-cli report` equals
//!   `trace-cmd report`;
//! * forced drops: the lost-event counts in the file equal the kernel's
//!   per-CPU overrun;
//! * tracefs is restored afterwards, also after SIGINT/SIGTERM.
//!
//! They need root, tracefs, trace-cmd and cc and are `#[ignore]`d: run them
//! with `cargo test -- --include-ignored` (scripts/test.sh does as root); a
//! missing prerequisite then fails them.

mod common;

use common::{build_c, diff, events_written, host, run_ok, snapshot, tracer_cli, Lines};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use ustack_testdata::top::{top_lock, trace_cmd_extract, TopWrites, EXTRACT_PIDS};
use ustack_tracedata::format::EventFormat;
use ustack_tracedata::{Item, Record, TraceFile};

/// Test program: N1 getppid and N2 writes to /dev/null in the main thread,
/// N3 getppid in a thread named `ustk_worker`; then it writes
/// "<pid> <worker tid> <devnull fd>" to the file given as argv[1].
const PROBE: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static long worker_tid;
static int n_thread;

static void *worker(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "ustk_worker");
    worker_tid = syscall(SYS_gettid);
    for (int i = 0; i < n_thread; i++)
        syscall(SYS_getppid);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5)
        return 2;
    int n_main = atoi(argv[2]), n_write = atoi(argv[3]);
    n_thread = atoi(argv[4]);
    int fd = open("/dev/null", O_WRONLY);
    for (int i = 0; i < n_main; i++)
        syscall(SYS_getppid);
    for (int i = 0; i < n_write; i++)
        if (write(fd, "x", 1) != 1)
            return 3;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%d %ld %d\n", getpid(), worker_tid, fd);
    fclose(f);
    return 0;
}
"#;

/// Load program: one thread per CPU (pinned), each calling getppid in a
/// loop for argv[1] milliseconds.
const LOAD: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long ms;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *spin(void *arg) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(long)arg, &set);
    sched_setaffinity(0, sizeof(set), &set);
    double end = now() + ms;
    while (now() < end)
        for (int i = 0; i < 1000; i++)
            syscall(SYS_getppid);
    return NULL;
}

int main(int argc, char **argv) {
    ms = argc > 1 ? atol(argv[1]) : 500;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t t[256];
    for (long i = 0; i < n && i < 256; i++)
        pthread_create(&t[i], NULL, spin, (void *)i);
    for (long i = 0; i < n && i < 256; i++)
        pthread_join(t[i], NULL);
    return 0;
}
"#;

/// A process whose main thread calls getppid for argv[1] milliseconds.
const PIDLOOP: &str = r#"
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 1000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 100; i++)
            syscall(SYS_getppid);
        usleep(1000);
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
    return 0;
}
"#;

fn inst_name(tag: &str) -> String {
    format!("hostrec_{tag}_{}", std::process::id())
}

/// `tracer-cli record -q -B instance`, for more arguments to be added.
fn record_quiet(instance: &str) -> Command {
    let mut cmd = tracer_cli();
    cmd.args(["record", "-q", "-B", instance]);
    cmd
}

/// `record -B instance` without `-q`: a record without a command then says
/// [`RECORDING`] once tracing is on.
fn record_loud(instance: &str) -> Command {
    let mut cmd = tracer_cli();
    cmd.args(["record", "-B", instance]);
    cmd
}

/// What a record without a command prints once it records.
const RECORDING: &str = "tracer-cli: recording; press Ctrl-C to stop";

/// Stops `record` as Ctrl-C does and waits for it.
fn interrupt(record: std::process::Child) -> std::process::Output {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(record.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    record.wait_with_output().unwrap()
}

/// Calls `f` with each event of `buffer` in `tf` and its format; an
/// unreadable record or an event without a format fails the test.
fn each_event(tf: &TraceFile, buffer: &str, mut f: impl FnMut(&EventFormat, &Record<'_>)) {
    let buf = tf.buffer(buffer).unwrap();
    for item in tf.records(buf) {
        let Item::Event(r) = item.unwrap() else {
            continue;
        };
        f(tf.formats().of(&r).unwrap(), &r);
    }
}

fn stdout_of(cmd: &mut Command) -> (String, String) {
    let out = run_ok(cmd);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `trace-cmd report` and `tracer-cli report` of `file` must be identical,
/// and trace-cmd must not warn about anything.
fn assert_reports_equal(file: &Path) -> String {
    let (theirs, their_err) =
        stdout_of(Command::new("trace-cmd").arg("report").arg("-i").arg(file));
    assert_eq!(
        their_err,
        "",
        "trace-cmd report warned on {}",
        file.display()
    );
    let (ours, _) = stdout_of(tracer_cli().arg("report").arg("-i").arg(file));
    if theirs != ours {
        let line = theirs
            .lines()
            .zip(ours.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(theirs.lines().count().min(ours.lines().count()));
        panic!(
            "reports differ at line {} ({} vs {} lines):\ntrace-cmd: {:?}\ntracer-cli: {:?}",
            line + 1,
            theirs.lines().count(),
            ours.lines().count(),
            theirs.lines().nth(line),
            ours.lines().nth(line)
        );
    }
    theirs
}

#[derive(Default, Debug)]
struct PerTask {
    by_event: HashMap<String, u64>,
    writes_to_fd: HashMap<u64, u64>,
    kernel_stacks: u64,
    user_stacks: u64,
    other: u64,
    first_user_frames: Vec<u64>,
}

/// `record` of a program whose system calls are known, checked call by
/// call, stack by stack. One long function (about 160 lines) on purpose:
/// every check reads the same recording, which each split-off test would
/// have to make again.
#[test]
#[ignore = "needs root and tracefs"]
fn record_counts_every_syscall_of_a_program_with_stacks() {
    let fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let probe = build_c(dir.path(), "ustk_probe", PROBE);
    let info = dir.path().join("info");
    let out = dir.path().join("probe.dat");
    let name = inst_name("probe");
    let _top = top_lock();
    let top_before = snapshot(&fs.top(), &[("sched", "sched_switch")]);
    let (n_main, n_write, n_thread) = (1000u64, 300u64, 700u64);

    run_ok(
        record_quiet(&name)
            .args(["-e", "sched:sched_switch", "-e", "syscalls", "-F", "-T"])
            .args(["--user-stacks", "sync", "-b", "8192", "-o"])
            .arg(&out)
            .arg(&probe)
            .arg(&info)
            .args([
                n_main.to_string(),
                n_write.to_string(),
                n_thread.to_string(),
            ]),
    );
    assert!(
        fs.instance(&name).is_err(),
        "the instance created by record was not removed"
    );
    assert_eq!(
        diff(
            &top_before,
            &snapshot(&fs.top(), &[("sched", "sched_switch")])
        ),
        ""
    );

    let text = std::fs::read_to_string(&info).unwrap();
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    let (pid, worker, devnull) = (v[0], v[1], v[2]);

    let tf = TraceFile::open(&out).unwrap();
    let buf = tf
        .buffer(&name)
        .expect("the instance buffer is in the file");
    let f = tf.formats();
    let mut tasks: HashMap<u64, PerTask> = HashMap::new();
    let mut lost = 0;
    for item in tf.records(buf) {
        let r = match item.unwrap() {
            Item::Event(r) => r,
            Item::Lost { .. } => {
                lost += 1;
                continue;
            }
        };
        let tid = r.common_pid().unwrap() as u64;
        if tid != pid && tid != worker {
            continue;
        }
        let fmt = f.of(&r).expect("every event has a format");
        let t = tasks.entry(tid).or_default();
        match (fmt.system.as_str(), fmt.name.as_str()) {
            ("ftrace", "kernel_stack") => t.kernel_stacks += 1,
            ("ftrace", "user_stack") => {
                t.user_stacks += 1;
                assert_eq!(r.u64_field(fmt, "tgid").unwrap(), pid, "user_stack tgid");
                let frames = r.u64_array_field(fmt, "caller").unwrap();
                t.first_user_frames.push(frames[0]);
            }
            (_, name) => {
                t.other += 1;
                *t.by_event.entry(name.to_string()).or_default() += 1;
                if name == "sys_enter_write" {
                    *t.writes_to_fd
                        .entry(r.u64_field(fmt, "fd").unwrap())
                        .or_default() += 1;
                }
            }
        }
    }
    assert_eq!(lost, 0, "events were lost with an 8 MiB buffer");
    let main = &tasks[&pid];
    let thr = &tasks[&worker];
    assert_eq!(main.by_event.get("sys_enter_getppid"), Some(&n_main));
    assert_eq!(main.by_event.get("sys_exit_getppid"), Some(&n_main));
    assert_eq!(main.writes_to_fd.get(&devnull), Some(&n_write));
    assert_eq!(
        main.by_event.get("sys_exit_write").copied().unwrap_or(0),
        main.writes_to_fd.values().sum::<u64>()
    );
    assert_eq!(thr.by_event.get("sys_enter_getppid"), Some(&n_thread));
    assert_eq!(thr.by_event.get("sys_exit_getppid"), Some(&n_thread));
    assert!(
        thr.by_event.contains_key("sched_switch") || main.by_event.contains_key("sched_switch")
    );
    // -T and --user-stacks sync: every event of the program is followed by
    // one kernel stack and one user stack.
    for (who, t) in [("main", main), ("worker", thr)] {
        assert_eq!(t.kernel_stacks, t.other, "{who}: kernel stacks vs events");
        assert_eq!(t.user_stacks, t.other, "{who}: user stacks vs events");
    }

    // PROCMAPS has the program's map, and the innermost user frame of the
    // worker's getppid calls lies in a mapped file.
    let maps = tf.procmaps().expect("PROCMAPS option present");
    let by_pid = parse_procmaps(&maps);
    let (_, ranges) = by_pid
        .get(&pid)
        .unwrap_or_else(|| panic!("no PROCMAPS entry for pid {pid}:\n{maps}"));
    assert!(
        ranges.iter().any(|(_, _, p)| p == probe.to_str().unwrap()),
        "{ranges:?}"
    );
    let in_map = thr
        .first_user_frames
        .iter()
        .filter(|&&a| ranges.iter().any(|(s, e, _)| (*s..*e).contains(&a)))
        .count();
    assert!(
        in_map * 10 >= thr.first_user_frames.len() * 9,
        "{in_map} of {} worker user frames are in the process map",
        thr.first_user_frames.len()
    );

    // Same text as trace-cmd, which counts the same by comm-pid.
    let report = assert_reports_equal(&out);
    let count = |comm: &str, tid: u64, ev: &str| {
        report
            .lines()
            .filter(|l| l.contains(&format!("{comm}-{tid} ")) && l.contains(&format!(" {ev}:")))
            .count() as u64
    };
    // The names the report gave the task's lines of `ev`, should a count
    // fail: `<...>` (no name saved), or another name than the task's.
    let names = |tid: u64, ev: &str| {
        let mut by: std::collections::BTreeMap<&str, u64> = Default::default();
        for l in report.lines().filter(|l| l.contains(&format!(" {ev}:"))) {
            let tail = format!("-{tid}");
            if let Some(w) = l.split_whitespace().find(|w| w.ends_with(&tail)) {
                *by.entry(w).or_default() += 1;
            }
        }
        by
    };
    for (comm, tid, ev, n) in [
        ("ustk_worker", worker, "sys_enter_getppid", n_thread),
        ("ustk_probe", pid, "sys_enter_getppid", n_main),
        ("ustk_probe", pid, "sys_exit_getppid", n_main),
    ] {
        assert_eq!(
            count(comm, tid, ev),
            n,
            "{comm}-{tid} {ev}: the lines of tid {tid} by name: {:?}",
            names(tid, ev)
        );
    }
}

/// A process and a renamed thread that call getppid 5 times each, then
/// exit; argv[1] gets "PID TID".
const NAMED: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
static long tid;
static void *thread(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "ustk_gone_thr");
    tid = syscall(SYS_gettid);
    for (int i = 0; i < 5; i++) syscall(SYS_getppid);
    return 0;
}
int main(int argc, char **argv) {
    pthread_t t;
    if (argc < 2 || pthread_create(&t, 0, thread, 0) || pthread_join(t, 0)) return 1;
    for (int i = 0; i < 5; i++) syscall(SYS_getppid);
    FILE *f = fopen(argv[1], "w");
    if (!f) return 1;
    fprintf(f, "%d %ld\n", getpid(), tid);
    return fclose(f) != 0;
}
"#;

/// The kernel's saved_cmdlines is a best-effort cache (128 entries before
/// 6.8, a page's worth since; a save is skipped when its lock is busy):
/// record names tasks by the names it sees them take. A process and its
/// renamed thread that exited before 400 other processes ran are named in
/// both reports.
#[test]
#[ignore = "needs root and tracefs"]
fn names_of_exited_tasks_outlive_the_kernel_name_cache() {
    let _fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let named = build_c(dir.path(), "ustk_gone", NAMED);
    let info = dir.path().join("info");
    let out = dir.path().join("gone.dat");
    let script = format!(
        "{} {}; i=0; while [ $i -lt 400 ]; do /bin/true; i=$((i+1)); done",
        named.display(),
        info.display()
    );
    run_ok(
        record_quiet(&inst_name("gone"))
            .args(["-e", "syscalls:sys_enter_getppid", "-o"])
            .arg(&out)
            .args(["sh", "-c", &script]),
    );
    let ids = std::fs::read_to_string(&info).unwrap();
    let (pid, tid) = ids.trim().split_once(' ').unwrap();
    let report = assert_reports_equal(&out);
    // `comm-pid` is a word of its own: trace-cmd pads the pid to 5
    // columns, so a 4-digit pid is followed by two spaces.
    let count = |who: &str| {
        report
            .lines()
            .filter(|l| {
                let mut words = l.split_whitespace();
                words.any(|w| w == who) && words.any(|w| w == "sys_enter_getppid:")
            })
            .count()
    };
    assert_eq!(count(&format!("ustk_gone-{pid}")), 5, "{report}");
    assert_eq!(count(&format!("ustk_gone_thr-{tid}")), 5, "{report}");
}

#[test]
#[ignore = "needs root and tracefs"]
fn record_writes_version_6_and_uncompressed_7_that_trace_cmd_reads() {
    let _fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    for (i, extra) in [["--file-version", "6"], ["--compression", "none"]]
        .iter()
        .enumerate()
    {
        let out = dir.path().join(format!("v{i}.dat"));
        run_ok(
            record_quiet(&inst_name(&format!("ver{i}")))
                .args(["-e", "sched:sched_switch"])
                .args(["-e", "syscalls:sys_enter_getppid", "-o"])
                .arg(&out)
                .args(extra)
                .args(["--", "sh", "-c", "sleep 0.1"]),
        );
        let tf = TraceFile::open(&out).unwrap();
        assert_eq!(tf.version(), if i == 0 { 6 } else { 7 });
        assert_reports_equal(&out);
    }
}

#[test]
#[ignore = "needs root and tracefs"]
fn trace_cmd_extract_file_reports_the_same_in_tracer_cli() {
    let fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let name = inst_name("extract");
    run_ok(tracer_cli().args([
        "start",
        "-B",
        &name,
        "-e",
        "sched:sched_switch",
        "-e",
        "syscalls:sys_enter_getppid",
        "-T",
        "--user-stacks",
        "sync",
    ]));
    let inst = fs.instance(&name).expect("start created the instance");
    assert!(inst.tracing_on().unwrap());
    run_ok(Command::new("sh").args(["-c", "for i in 1 2 3; do sleep 0.05; done"]));
    run_ok(tracer_cli().args(["stop", "-B", &name]));
    assert!(!inst.tracing_on().unwrap());
    let theirs = dir.path().join("theirs.dat");
    let o = trace_cmd_extract(&name, &theirs);
    assert!(
        o.status.success(),
        "trace-cmd extract: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = assert_reports_equal(&theirs);
    assert!(text.contains("sched_switch:"), "nothing recorded:\n{text}");
    // trace-cmd extract -B removes the instance itself; reset it otherwise.
    if fs.instance(&name).is_ok() {
        run_ok(tracer_cli().args(["reset", "-B", &name, "-d"]));
    }
    assert!(fs.instance(&name).is_err());
}

/// Every option of `inst`, as `name=0|1` lines.
fn options_of(inst: &ustack_tracefs::Instance) -> String {
    let mut names: Vec<String> = std::fs::read_dir(inst.path("options"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| format!("{n}={}", inst.read_string(&format!("options/{n}")).unwrap()))
        .collect()
}

/// `reset` turns off every option `start` turned on (record-tgid and the
/// stack options here): an instance reset and kept must not hand them to
/// the next session, and the top instance not to instances created after.
#[test]
#[ignore = "needs root and tracefs"]
fn reset_undoes_the_options_start_turned_on() {
    let fs = host(true);
    let name = inst_name("resetopts");
    let fresh = options_of(&fs.create_instance(&name).unwrap());
    run_ok(
        tracer_cli()
            .args(["start", "-B", &name, "-e", "sched:sched_switch"])
            .args(["-T", "--user-stacks", "sync"]),
    );
    let inst = fs.instance(&name).unwrap();
    let started = options_of(&inst);
    for on in ["stacktrace=1", "userstacktrace=1", "record-tgid=1"] {
        assert!(started.contains(on), "start did not turn on {on}");
    }
    run_ok(tracer_cli().args(["reset", "-B", &name]));
    let after = options_of(&inst);
    run_ok(tracer_cli().args(["reset", "-B", &name, "-d"]));
    assert_eq!(after, fresh, "options left on by start after reset");
}

#[test]
#[ignore = "needs root and tracefs"]
fn our_extract_after_start_stop_matches_trace_cmd_report() {
    let fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (inst_name("ourextract_a"), inst_name("ourextract_b"));
    run_ok(tracer_cli().args(["start", "-B", &a, "-e", "sched:sched_switch", "-T"]));
    run_ok(tracer_cli().args(["start", "-B", &b, "-e", "syscalls:sys_enter_getppid"]));
    let prog = build_c(dir.path(), "ustk_pidloop", PIDLOOP);
    run_ok(Command::new(&prog).arg("100"));
    std::fs::remove_file(&prog).unwrap();
    std::fs::remove_file(dir.path().join("ustk_pidloop.c")).unwrap();
    run_ok(tracer_cli().args(["stop", "-B", &a, "-B", &b]));
    for n in [&a, &b] {
        assert!(
            !fs.instance(n).unwrap().tracing_on().unwrap(),
            "{n} still on"
        );
    }
    let ours = dir.path().join("ours.dat");
    run_ok(
        tracer_cli()
            .args(["extract", "-q", "-B", &a, "-B", &b, "-o"])
            .arg(&ours),
    );
    let tf = TraceFile::open(&ours).unwrap();
    let names: Vec<&str> = tf.buffers().iter().map(|b| b.name.as_str()).collect();
    assert!(
        names.contains(&a.as_str()) && names.contains(&b.as_str()),
        "{names:?}"
    );
    let text = assert_reports_equal(&ours);
    assert!(text.contains("kernel_stack:"), "no kernel stacks:\n{text}");
    let getppid = text
        .lines()
        .filter(|l| {
            l.starts_with(&format!("{b}:"))
                && l.contains("ustk_pidloop-")
                && l.contains(" sys_enter_getppid:")
        })
        .count();
    assert!(
        getppid >= 100,
        "only {getppid} getppid lines of instance {b}"
    );
    // extract consumed the buffers, and the temp files are gone.
    for n in [&a, &b] {
        let inst = fs.instance(n).unwrap();
        for cpu in inst.cpus().unwrap() {
            assert_eq!(inst.cpu_stats(cpu).unwrap().entries, Some(0));
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("ours.dat")]);
    run_ok(tracer_cli().args(["reset", "-B", &a, "-B", &b, "-d"]));
    assert!(fs.instance(&a).is_err() && fs.instance(&b).is_err());
}

#[test]
#[ignore = "needs root and tracefs"]
fn forced_drops_agree_with_kernel_stats() {
    let fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let load = build_c(dir.path(), "ustk_load", LOAD);
    let out = dir.path().join("drops.dat");
    let name = inst_name("drops");
    // The instance exists before record, so it stays and its live kernel
    // stats can be read afterwards.
    let owned = fs.create_instance(&name).unwrap();
    // sys_exit_getppid records are 28 bytes: a full page leaves room for the
    // stored lost count, so every loss has a number.
    run_ok(
        record_quiet(&name)
            .args(["-e", "syscalls:sys_exit_getppid", "-F", "-b", "4", "-o"])
            .arg(&out)
            .arg(&load)
            .arg("400"),
    );
    let tf = TraceFile::open(&out).unwrap();
    let buf = tf.buffer(&name).unwrap();
    let mut lost: HashMap<u32, u64> = HashMap::new();
    let mut unknown = 0;
    let mut events: HashMap<u32, u64> = HashMap::new();
    for item in tf.records(buf) {
        match item.unwrap() {
            Item::Lost {
                cpu,
                count: Some(n),
                ..
            } => *lost.entry(cpu).or_default() += n,
            Item::Lost { count: None, .. } => unknown += 1,
            Item::Event(r) => *events.entry(r.cpu).or_default() += 1,
        }
    }
    // CPUSTAT texts start with "CPU: N"; instance buffers are announced by
    // a "Buffer: NAME" text first, as trace-cmd writes them.
    let stats: Vec<(u32, String)> = tf
        .cpustat_texts()
        .into_iter()
        .filter_map(|t| {
            let cpu = t
                .lines()
                .find_map(|l| l.strip_prefix("CPU: "))?
                .trim()
                .parse()
                .ok()?;
            Some((cpu, t))
        })
        .collect();
    assert_eq!(stats.len() as u32, tf.cpu_count());
    let mut total_overrun = 0;
    for (cpu, text) in &stats {
        let cpu = *cpu;
        let s = ustack_tracefs::CpuStats::parse(cpu, text);
        let overrun = s.overrun.unwrap();
        let live = owned.cpu_stats(cpu).unwrap();
        assert_eq!(
            live.overrun,
            Some(overrun),
            "CPU{cpu}: CPUSTAT vs the kernel's stats now"
        );
        assert_eq!(live.read_events, s.read_events, "CPU{cpu}: read events");
        total_overrun += overrun;
        assert_eq!(
            lost.get(&cpu).copied().unwrap_or(0),
            overrun,
            "CPU{cpu}: lost counts in the pages vs CPUSTAT overrun ({unknown} unknown)\n{text}"
        );
        // Everything the kernel did not lose was read, and is in the file.
        assert_eq!(s.entries, Some(0), "CPU{cpu} not drained");
        assert_eq!(
            s.read_events.unwrap(),
            events.get(&cpu).copied().unwrap_or(0),
            "CPU{cpu} events"
        );
    }
    assert_eq!(unknown, 0);
    assert!(
        total_overrun > 0,
        "the load did not overflow a 4 KiB buffer"
    );
    // The report prints the same drops.
    let report = assert_reports_equal(&out);
    let reported: u64 = report
        .lines()
        .filter_map(|l| {
            l.split_once(" [")?
                .1
                .strip_suffix(" EVENTS DROPPED]")?
                .parse::<u64>()
                .ok()
        })
        .sum();
    assert_eq!(reported, total_overrun);
    owned.remove().unwrap();
}

/// A record without a command, stopped by a signal: it must exit 0, write a
/// readable file, and leave the (pre-existing) instance as it was.
fn stopped_by(sig: nix::sys::signal::Signal, tag: &str) {
    let fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let name = inst_name(tag);
    let owned = fs.create_instance(&name).unwrap();
    let inst: &ustack_tracefs::Instance = &owned;
    // Settings different from what record will use.
    inst.set_buffer_size_kb(256).unwrap();
    inst.set_trace_clock("global").unwrap();
    inst.set_option("stacktrace", true).unwrap();
    inst.set_tracing_on(false).unwrap();
    // (No event enabled beforehand: record refuses an instance whose events
    // someone else enabled, see tests/cli.rs.)
    let events = [("sched", "sched_switch"), ("sched", "sched_wakeup")];
    let before = snapshot(inst, &events);
    // No trace-cmd extract of these tests may reset the top while its check is open.
    let _top = top_lock();
    let top_before = snapshot(&fs.top(), &events);
    let top_writes = TopWrites::watch();

    let out = dir.path().join("sig.dat");
    let mut child = record_loud(&name)
        .args(["-e", "sched:sched_switch", "-f", "prev_pid != 0"])
        .args(["--user-stacks", "sync", "-b", "64", "-C", "mono", "-o"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = Lines::read(child.stderr.take().unwrap());
    stderr.wait_for(RECORDING, Duration::from_secs(20));
    // The report must hold a sched_switch.
    common::wait_until(
        "a sched_switch in the buffer",
        Duration::from_secs(20),
        || events_written(inst) > 0,
    );
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, sig).unwrap();
    // A duplicate right away (terminal + timeout both signal) must not turn
    // the clean stop into the emergency exit.
    nix::sys::signal::kill(pid, sig).unwrap();
    let st = child.wait().unwrap();
    assert!(st.success(), "record after {sig:?}: {}", stderr.all());
    // Precise whoever else runs on the machine: neither record nor one of our
    // trace-cmd extracts wrote a file of the top instance meanwhile.
    let extract = EXTRACT_PIDS.lock().unwrap().clone();
    let writes = top_writes.take();
    let ours: Vec<_> = writes
        .iter()
        .filter(|(p, _)| *p == pid.as_raw() || extract.contains(p))
        .collect();
    assert!(
        ours.is_empty(),
        "top instance written during record (pid {pid}) by {ours:?}"
    );
    assert_eq!(
        diff(&before, &snapshot(inst, &events)),
        "",
        "instance not restored after {sig:?}"
    );
    // Another program on the machine may still reset the top (a trace-cmd
    // extract outside these tests): name the writers if it did.
    assert_eq!(
        diff(&top_before, &snapshot(&fs.top(), &events)),
        "",
        "top not restored after {sig:?}; its files were written by (pid, file): {writes:?}"
    );
    let text = assert_reports_equal(&out);
    assert!(text.contains("sched_switch:"));
    assert!(!text.contains("sched_wakeup:"), "an event not asked for");
    owned.remove().unwrap();
}

#[test]
#[ignore = "needs root and tracefs"]
fn sigint_stops_record_cleanly_and_restores() {
    stopped_by(nix::sys::signal::Signal::SIGINT, "sigint");
}

#[test]
#[ignore = "needs root and tracefs"]
fn sigterm_stops_record_cleanly_and_restores() {
    stopped_by(nix::sys::signal::Signal::SIGTERM, "sigterm");
}

/// `sigterm_stops_record_cleanly_and_restores` failed once
/// with "top not restored after SIGTERM: tracing_on 1 -> 0": trace-cmd 3.1.6's
/// `extract -B`, run by another test of this binary at the same time, resets
/// the top instance. This repeats the signal case while a thread keeps
/// extracting a scratch instance with trace-cmd, so the two overlap in every
/// round unless the top lock keeps them apart.
#[test]
#[ignore = "needs root and tracefs"]
fn signal_stops_race_trace_cmd_extract_of_another_instance() {
    let fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let extracts = {
        let (stop, fs, out) = (stop.clone(), fs.clone(), dir.path().join("x.dat"));
        std::thread::spawn(move || {
            let name = inst_name("xloop");
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let owned = fs.create_instance(&name).unwrap();
                let sw = ustack_tracefs::EventId {
                    system: "sched".into(),
                    name: "sched_switch".into(),
                };
                owned.set_event_enabled(&sw, true).unwrap();
                let o = trace_cmd_extract(&name, &out);
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                // trace-cmd extract -B removes the instance itself
                if fs.instance(&name).is_ok() {
                    owned.remove().unwrap();
                } else {
                    let _ = owned.keep();
                }
                n += 1;
            }
            n
        })
    };
    for round in 0..6 {
        stopped_by(nix::sys::signal::Signal::SIGTERM, &format!("xrace{round}"));
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let n = extracts.join().unwrap();
    assert!(n >= 2, "only {n} extracts ran alongside the records");
}

#[test]
#[ignore = "needs root and tracefs"]
fn deferred_user_stacks_need_the_patched_kernel() {
    let fs = host(false);
    let has = fs.top().has_option("userstacktrace_delay");
    let name = inst_name("deferred");
    let out = record_quiet(&name)
        .args(["-e", "sched:sched_switch", "--user-stacks", "deferred"])
        .args(["-o", "/dev/null", "--", "true"])
        .output()
        .unwrap();
    if has {
        eprintln!("this kernel has userstacktrace_delay; only checking that record works");
        assert!(out.status.success());
    } else {
        assert!(!out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "tracer-cli: this kernel has no userstacktrace_delay option (deferred user stacks need the ustack kernel patches)\n"
        );
    }
    assert!(fs.instance(&name).is_err(), "instance left behind");

    // The tracer of the patches, by name.
    let tracers = fs.available_tracers().unwrap();
    let out = record_quiet(&name)
        .args(["-p", "user_unwind", "-o", "/dev/null", "--", "true"])
        .output()
        .unwrap();
    if !tracers.iter().any(|t| t == "user_unwind") {
        assert!(!out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "tracer-cli: this kernel has no tracer user_unwind (available: {})\n",
                tracers.join(" ")
            )
        );
    }
    assert!(fs.instance(&name).is_err(), "instance left behind");
}

#[test]
#[ignore = "needs root and tracefs"]
fn record_with_pid_filter_traces_only_that_process() {
    let fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let prog = build_c(dir.path(), "ustk_pidloop", PIDLOOP);
    let mut target = Command::new(&prog).arg("3000").spawn().unwrap();
    let tpid = target.id();
    let name = inst_name("pid");
    let out = dir.path().join("pid.dat");
    let mut rec = record_loud(&name)
        .args([
            "-e",
            "syscalls:sys_enter_getppid",
            "-e",
            "sched:sched_switch",
        ])
        .args(["-P", &tpid.to_string(), "--user-stacks", "sync", "-o"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = Lines::read(rec.stderr.take().unwrap());
    stderr.wait_for(RECORDING, Duration::from_secs(20));
    // The target makes 100 getppid calls per switch or two, so 1500
    // events hold well over the 1000 getppid checked below.
    let inst = fs.instance(&name).unwrap();
    common::wait_until("1500 events of the target", Duration::from_secs(20), || {
        events_written(&inst) >= 1500
    });
    let st = interrupt(rec);
    assert!(st.status.success(), "{}", stderr.all());
    let _ = target.kill();
    let _ = target.wait();
    assert!(fs.instance(&name).is_err(), "instance left behind");

    let tf = TraceFile::open(&out).unwrap();
    let mut getppid = 0;
    each_event(&tf, &name, |fmt, r| {
        match fmt.name.as_str() {
            "sys_enter_getppid" => {
                assert_eq!(r.common_pid(), Some(tpid as i32), "getppid of another task");
                getppid += 1;
            }
            // set_event_pid lets a switch in when either side is the pid.
            "sched_switch" => {
                let prev = r.i64_field(fmt, "prev_pid").unwrap();
                let next = r.i64_field(fmt, "next_pid").unwrap();
                assert!(
                    prev == tpid as i64 || next == tpid as i64,
                    "switch {prev} -> {next}"
                );
            }
            _ => {}
        }
    });
    assert!(getppid > 1000, "only {getppid} getppid events");
    let maps = tf.procmaps().unwrap_or_default();
    assert!(
        maps.lines()
            .any(|l| l.starts_with(&format!("{:x} ", tpid)) && l.ends_with("ustk_pidloop")),
        "no PROCMAPS for the -P pid:\n{maps}"
    );
}

#[test]
#[ignore = "needs root and tracefs"]
fn a_command_that_cannot_run_is_one_clear_error_and_restores() {
    let fs = host(false);
    let dir = tempfile::tempdir().unwrap();
    let name = inst_name("noexec");
    let out = record_quiet(&name)
        .args(["-e", "sched:sched_switch", "-o"])
        .arg(dir.path().join("x.dat"))
        .args(["--", "/nonexistent/ustk-program", "arg"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "tracer-cli: cannot run /nonexistent/ustk-program: No such file or directory\n"
    );
    assert!(fs.instance(&name).is_err(), "instance left behind");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "files left: {left:?}");
}

#[test]
#[ignore = "needs root and tracefs"]
fn the_command_runs_with_default_signal_state() {
    let _fs = host(false);
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(
        record_quiet(&inst_name("sigstate"))
            .args(["-e", "sched:sched_process_exit"])
            .arg("-o")
            .arg(dir.path().join("s.dat"))
            .args([
                "--",
                "sh",
                "-c",
                "grep -E '^Sig(Blk|Ign)' /proc/self/status",
            ]),
    );
    // The recorder blocks SIGINT/SIGTERM/SIGHUP and ignores SIGPIPE; the
    // command must not inherit either (other ignored signals may come from
    // whoever started the test, so only SIGPIPE is checked there).
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |name: &str| {
        let v = text
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {text:?}"));
        u64::from_str_radix(v.trim(), 16).unwrap()
    };
    assert_eq!(
        field("SigBlk:"),
        0,
        "blocked signals leaked into the command"
    );
    let sigpipe_bit = 1u64 << (nix::sys::signal::Signal::SIGPIPE as i32 - 1);
    assert_eq!(
        field("SigIgn:") & sigpipe_bit,
        0,
        "SIGPIPE ignored in the command"
    );
}

/// PROCMAPS parsed: pid -> (comm, [(start, end, path)]).
type Maps = HashMap<u64, (String, Vec<(u64, u64, String)>)>;

/// PROCMAPS with the timed entries of one pid (a snapshot at each exec
/// and exit stop, an exec, a fork) folded into one: the last non-empty
/// command name and every mapping seen, once. Identical timed entries of
/// one pid are a recorder bug.
fn parse_procmaps(text: &str) -> Maps {
    let mut out: Maps = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    for p in ustack_tracedata::ProcMap::parse_all(text) {
        assert!(
            seen.insert(format!("{p:?}")),
            "the same PROCMAPS entry twice: {p:?}"
        );
        let e = out.entry(p.pid as u64).or_default();
        if !p.comm.is_empty() {
            e.0 = p.comm;
        }
        for m in p.maps {
            let m = (m.start, m.end, m.path);
            if !e.1.contains(&m) {
                e.1.push(m);
            }
        }
    }
    for (_, maps) in out.values_mut() {
        maps.sort();
    }
    out
}

/// A shell running short-lived children (each lives far less than the
/// 50 ms poll period): under ptrace every exec'd process's maps are saved,
/// with the right comm and binary, every user stack address of those
/// processes lies in a saved mapping, and `report --stacks` symbolizes
/// their frames.
#[test]
#[ignore = "needs root and tracefs"]
fn ptrace_saves_the_maps_of_short_lived_children() {
    let _fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("short.dat");
    let name = inst_name("short");
    let (_, err) = stdout_of(
        tracer_cli()
            .args(["record", "-B", &name, "-F", "--user-stacks", "sync"])
            .args(["-e", "sched:sched_process_exec"])
            .args(["-e", "syscalls:sys_enter_write"])
            .args(["-e", "syscalls:sys_enter_close"])
            .arg("-o")
            .arg(&out)
            .args([
                "--",
                "sh",
                "-c",
                "ls / >/dev/null; cat /dev/null; echo hi | cat >/dev/null; true; date >/dev/null",
            ]),
    );
    let tf = TraceFile::open(&out).unwrap();
    // pid -> exec'd file, and the user stack addresses by pid.
    let mut execs: Vec<(u64, String)> = Vec::new();
    let mut stacks: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    each_event(&tf, &name, |fmt, r| match fmt.name.as_str() {
        "sched_process_exec" => execs.push((
            r.i64_field(fmt, "pid").unwrap() as u64,
            r.str_field(fmt, "filename").unwrap().into_owned(),
        )),
        "user_stack" => stacks
            .entry(r.common_pid().unwrap() as u64)
            .or_default()
            .extend(
                r.u64_array_field(fmt, "caller")
                    .unwrap()
                    .into_iter()
                    .filter(|&a| a != 0)
                    .map(|a| (r.ts, a)),
            ),
        _ => {}
    });
    // sh itself, then ls, cat, cat, date (echo and true are builtins).
    let comms: Vec<String> = execs
        .iter()
        .map(|(_, f)| f.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(comms, ["sh", "ls", "cat", "cat", "date"], "{execs:?}");
    let maps = parse_procmaps(&tf.procmaps().expect("PROCMAPS present"));
    let spaces = ustack_symbolize::spaces::AddressSpaces::new(tf.proc_maps());
    for (pid, file) in &execs {
        let (comm, ranges) = maps
            .get(pid)
            .unwrap_or_else(|| panic!("no PROCMAPS entry for {file} (pid {pid}): {maps:?}"));
        // comm is the name exec'd (sh), the mapping the file behind it
        // (/usr/bin/dash).
        let bin = std::fs::canonicalize(file).unwrap();
        assert_eq!(comm, file.rsplit('/').next().unwrap(), "comm of pid {pid}");
        assert!(
            ranges.iter().any(|(_, _, p)| Path::new(p) == bin),
            "{} not mapped in pid {pid}: {ranges:?}",
            bin.display()
        );
        let addrs = stacks
            .get(pid)
            .unwrap_or_else(|| panic!("no user stacks of pid {pid} ({file})"));
        // Each address in the maps of the image the pid ran at the time of
        // its stack: before the exec, a forked child runs its parent's.
        for &(ts, a) in addrs {
            let found = spaces.find_at(*pid as u32, Some(ts), a);
            assert!(
                found.is_ok(),
                "user stack address {a:#x} of pid {pid} ({file}) at {ts} is in no saved mapping \
                 ({found:?}): {ranges:?}"
            );
        }
    }
    let nproc = maps.len();
    assert!(
        err.contains(&format!("{nproc} user-space memory maps")),
        "{err}"
    );

    // Symbolized: some frame of ls gets a symbol name in a mapped file.
    let ls = execs.iter().find(|(_, f)| f.ends_with("/ls")).unwrap().0;
    let (text, _) = stdout_of(tracer_cli().args(["report", "--stacks", "-i"]).arg(&out));
    let mut in_ls = false;
    let mut symbolized = Vec::new();
    for l in text.lines() {
        if !l.starts_with(' ') {
            in_ls = l.starts_with(&format!("ls-{ls} "));
        } else if in_ls && l.contains("=> ") && l.contains('/') {
            // "=> name+0xOFF (addr) /path": a name, not a bare address.
            let sym = l.split("=> ").nth(1).unwrap();
            if sym.contains("+0x") && !sym.starts_with('(') && !sym.starts_with("??") {
                symbolized.push(l.to_string());
            }
        }
    }
    assert!(
        !symbolized.is_empty(),
        "no user frame of ls (pid {ls}) symbolized:\n{text}"
    );
}

/// Records `script` under `sh -c` (ptrace'd); returns its stdout and the
/// exit status record reports (0 when it reports none).
fn record_sh(tag: &str, script: &str) -> (String, i32) {
    let dir = tempfile::tempdir().unwrap();
    let out = tracer_cli()
        .args(["record", "-B", &inst_name(tag), "-F"])
        .args(["-e", "sched:sched_process_exit", "-o"])
        .arg(dir.path().join("x.dat"))
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("command under ptrace:"), "not ptrace'd: {err}");
    // A command that fails fails the record, with its status; the trace
    // is written all the same.
    let status = err
        .lines()
        .find_map(|l| l.strip_prefix("tracer-cli: the command exited with status "))
        .map(|s| s.split(' ').next().unwrap().parse().unwrap())
        .unwrap_or(0);
    assert_eq!(
        out.status.code(),
        Some(if status == 0 { 0 } else { 1 }),
        "{err}"
    );
    assert!(dir.path().join("x.dat").exists(), "no trace written: {err}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), status)
}

/// The same script without tracer-cli: stdout and the status as record
/// reports it (128 + N when killed by signal N).
fn plain_sh(script: &str) -> (String, i32) {
    use std::os::unix::process::ExitStatusExt;
    let out = Command::new("sh").args(["-c", script]).output().unwrap();
    let st = out.status;
    let status = st.code().unwrap_or_else(|| 128 + st.signal().unwrap());
    (String::from_utf8_lossy(&out.stdout).into_owned(), status)
}

/// Under ptrace the command behaves as without it: exit codes, a signal
/// it sends itself (fatal, or caught by a trap), job-control stop and
/// continue of a child.
#[test]
#[ignore = "needs root and tracefs"]
fn a_ptraced_command_keeps_its_exit_status_and_signals() {
    let _fs = host(false);
    let cases = [
        ("exit", "echo a; exit 7"),
        ("kill", "echo b; kill -TERM $$; echo not reached"),
        (
            "trap",
            "trap 'echo got USR1' USR1; kill -USR1 $$; echo after; exit 3",
        ),
        (
            "rt",
            "trap 'echo got RT' 40; kill -s 40 $$ 2>/dev/null || kill -40 $$; echo after",
        ),
        (
            "stop",
            // The child stays stopped until SIGCONT, then ends normally.
            // (polls the child's state for up to 5 s)
            "sleep 1 & p=$!; kill -STOP $p; i=0; \
             while s=$(cut -d' ' -f3 /proc/$p/stat); case $s in [Tt]) false;; *) [ $i -lt 500 ];; esac; \
             do i=$((i+1)); sleep 0.01; done; kill -CONT $p; wait $p; r=$?; \
             case $s in [Tt]) echo stopped;; *) echo \"not stopped: $s\";; esac; echo rc=$r",
        ),
        ("segv", "sh -c 'kill -SEGV $$'; echo child=$?"),
    ];
    for (tag, script) in cases {
        let plain = plain_sh(script);
        let traced = record_sh(&format!("sig{tag}"), script);
        assert_eq!(traced, plain, "{tag}: {script}");
    }
    // The expectations themselves, so a broken shell cannot make both agree
    // on nonsense.
    assert_eq!(plain_sh("echo a; exit 7"), ("a\n".into(), 7));
    assert_eq!(
        plain_sh(cases[1].1),
        ("b\n".into(), 128 + nix::sys::signal::Signal::SIGTERM as i32)
    );
    assert_eq!(plain_sh(cases[4].1), ("stopped\nrc=0\n".into(), 0));
}

/// SIGINT to record (as Ctrl-C) while its ptrace'd command runs: record
/// stops cleanly and saves the command's maps, and the command is left
/// running untraced (as it would be without ptrace).
#[test]
#[ignore = "needs root and tracefs"]
fn sigint_stops_record_with_a_ptraced_command() {
    let fs = host(true);
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let out = dir.path().join("int.dat");
    let name = inst_name("intptrace");
    let rec = record_quiet(&name)
        .args(["-F"])
        .args(["-e", "syscalls:sys_enter_nanosleep", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c"])
        // (sleep must not hold record's stderr pipe open)
        .arg(format!(
            "echo $$ > {}; exec sleep 30 2>/dev/null",
            pidfile.display()
        ))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = |pid: i32, key: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
            .unwrap_or_default()
    };
    let mut pid = 0;
    common::wait_until("the command to exec sleep", Duration::from_secs(20), || {
        pid = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid != 0 && status(pid, "Name:") == "sleep"
    });
    // Traced by a thread of record.
    let tracer = status(pid, "TracerPid:");
    assert!(
        Path::new(&format!("/proc/{}/task/{tracer}", rec.id())).exists(),
        "traced by {tracer}, not by record ({})",
        rec.id()
    );
    // Sleeping in nanosleep: record let it go on after its exec stop,
    // where it read the command's maps.
    common::wait_until(
        "the command to run on after its exec",
        Duration::from_secs(20),
        || status(pid, "State:").starts_with('S'),
    );
    let st = interrupt(rec);
    let sleeper = nix::unistd::Pid::from_raw(pid);
    let (tracer, state) = (status(pid, "TracerPid:"), status(pid, "State:"));
    let _ = nix::sys::signal::kill(sleeper, nix::sys::signal::Signal::SIGKILL);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(tracer, "0", "the command is still traced");
    assert!(
        !state.starts_with('t') && !state.starts_with('T'),
        "the command is left {state}"
    );
    assert!(fs.instance(&name).is_err(), "instance left behind");
    let tf = TraceFile::open(&out).unwrap();
    let maps = parse_procmaps(&tf.procmaps().unwrap_or_default());
    let (comm, ranges) = maps
        .get(&(pid as u64))
        .unwrap_or_else(|| panic!("no maps of the command: {maps:?}"));
    assert_eq!(comm, "sleep");
    let sleep_bin = std::fs::canonicalize("/bin/sleep").unwrap();
    assert!(
        ranges.iter().any(|(_, _, p)| Path::new(p) == sleep_bin),
        "{ranges:?}"
    );
}
