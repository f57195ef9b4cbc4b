//! Ground truth for user-stack symbolization on the host: real
//! programs recorded with stock sync user stacks, every frame of their
//! stacks checked against `nm` of the mapped file at the address the
//! program's own `/proc/self/maps` gives (written by the program, see
//! tests/gt/gt.h), not against ustack's own output.
//!
//! Each case prints `case NAME: resolved R / delivered D frames` and must
//! resolve every frame that lies in a file with symbols.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// `nm` of one file: (address, size, names at that address), sorted.
type Syms = Vec<(u64, u64, Vec<String>)>;

fn nm(file: &Path) -> Syms {
    let syms = nm_with(file, &[]);
    if !syms.is_empty() {
        return syms;
    }
    // No .symtab (a distribution library): its debug file by build id
    // (as readelf reads it), else its dynamic symbols.
    let notes = Command::new("readelf")
        .arg("-n")
        .arg(file)
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&notes.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string));
    if let Some(id) = id.filter(|id| id.len() > 2) {
        let dbg = format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
        let syms = nm_with(Path::new(&dbg), &[]);
        if !syms.is_empty() {
            return syms;
        }
    }
    nm_with(file, &["-D"])
}

fn nm_with(file: &Path, extra: &[&str]) -> Syms {
    let out = Command::new("nm")
        .args(["-n", "-S", "--defined-only"])
        .args(extra)
        .arg(file)
        .output()
        .expect("run nm");
    let mut by_addr: BTreeMap<u64, (u64, Vec<String>)> = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        // addr size type name, or addr type name (no size).
        let (addr, size, ty, name) = match w.len() {
            4 => (w[0], Some(w[1]), w[2], w[3]),
            3 => (w[0], None, w[1], w[2]),
            _ => continue,
        };
        if !matches!(ty, "T" | "t" | "W" | "w" | "i") {
            continue;
        }
        let a = u64::from_str_radix(addr, 16).unwrap();
        let s = size.map_or(0, |s| u64::from_str_radix(s, 16).unwrap());
        let e = by_addr.entry(a).or_default();
        e.0 = e.0.max(s);
        e.1.push(name.split('@').next().unwrap().to_string());
    }
    by_addr.into_iter().map(|(a, (s, n))| (a, s, n)).collect()
}

/// The names `nm` gives for virtual address `va`: the symbol at or below
/// it that covers it (size 0: up to the next symbol).
fn nm_names(syms: &Syms, va: u64) -> Option<&[String]> {
    let i = syms.partition_point(|s| s.0 <= va);
    let (a, size, names) = syms.get(i.checked_sub(1)?)?;
    (*size == 0 || va < a + size).then_some(names.as_slice())
}

/// One line of `/proc/PID/maps`.
struct MapLine {
    start: u64,
    end: u64,
    offset: u64,
    path: String,
}

fn read_maps(text: &str) -> Vec<MapLine> {
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let (s, e) = w.first()?.split_once('-')?;
            Some(MapLine {
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                offset: u64::from_str_radix(w.get(2)?, 16).ok()?,
                path: w.get(5).map(|p| p.to_string()).unwrap_or_default(),
            })
        })
        .collect()
}

/// What the programs of a case wrote about themselves.
struct Truth {
    /// tid -> tgid.
    tgid: HashMap<u32, u32>,
    /// tgid -> maps.
    maps: HashMap<u32, Vec<MapLine>>,
    /// tgid -> maps before an exec, and how many stacks (the first ones)
    /// the process took before it.
    pre: HashMap<u32, Vec<MapLine>>,
    pre_stacks: usize,
    /// File -> its symbols (or its debug file's, see `debug`).
    syms: HashMap<String, Syms>,
    /// File -> where its symbols are (a stripped file's debug file).
    debug: HashMap<String, PathBuf>,
}

impl Truth {
    fn read(dir: &Path, debug: HashMap<String, PathBuf>) -> Truth {
        let mut tgid = HashMap::new();
        let tids = std::fs::read_to_string(dir.join("tids")).unwrap_or_default();
        for l in tids.lines() {
            let mut w = l.split_whitespace().map(|x| x.parse::<u32>().unwrap());
            tgid.insert(w.next().unwrap(), w.next().unwrap());
        }
        let mut maps = HashMap::new();
        let mut pre = HashMap::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = || read_maps(&std::fs::read_to_string(e.path()).unwrap());
            if let Some(pid) = name.strip_prefix("maps.") {
                maps.insert(pid.parse().unwrap(), text());
            } else if let Some(pid) = name.strip_prefix("maps-preexec.") {
                pre.insert(pid.parse().unwrap(), text());
            }
        }
        Truth {
            tgid,
            maps,
            pre,
            pre_stacks: 0,
            syms: HashMap::new(),
            debug,
        }
    }

    /// The names `nm` gives for a user address of task `tid` (looked up at
    /// `addr - 1` for return addresses), `None` when the address is in no
    /// file with symbols; `Err` when the task is not one of the case's.
    /// `stack` is the number of stacks of `tid` before this one.
    fn expect(
        &mut self,
        tid: u32,
        stack: usize,
        addr: u64,
        ret: bool,
    ) -> Result<Option<Vec<String>>, ()> {
        let tgid = *self.tgid.get(&tid).ok_or(())?;
        let maps = match self.pre.get(&tgid) {
            Some(pre) if stack < self.pre_stacks => pre,
            _ => self.maps.get(&tgid).ok_or(())?,
        };
        let look = if ret { addr - 1 } else { addr };
        let Some(m) = maps.iter().find(|m| m.start <= look && look < m.end) else {
            return Ok(None);
        };
        if !m.path.starts_with('/') {
            return Ok(None);
        }
        let path = m.path.clone();
        // The file's load bias: 0 for ET_EXEC, else where offset 0 is
        // mapped (the first PT_LOAD has vaddr 0 in PIE and libraries).
        let head = std::fs::read(&path).unwrap();
        let bias = if u16::from_le_bytes([head[16], head[17]]) == 2 {
            0
        } else {
            maps.iter()
                .filter(|l| l.path == path && l.offset == 0)
                .map(|l| l.start)
                .min()
                .unwrap()
        };
        let src = self
            .debug
            .get(&path)
            .cloned()
            .unwrap_or_else(|| PathBuf::from(&path));
        let syms = self.syms.entry(path).or_insert_with(|| nm(&src));
        Ok(nm_names(syms, look - bias).map(|n| n.to_vec()))
    }
}

/// Resolved and delivered frames of one run.
#[derive(Default, Debug, Clone, Copy)]
struct Score {
    resolved: usize,
    delivered: usize,
    /// Frames of the case's tasks where nm has no symbol to compare with
    /// (a library's internal functions without .symtab, the vdso).
    unchecked: usize,
    /// Frames given another symbol than nm's.
    wrong: usize,
}

impl Score {
    /// Adds one run's frames to a case's total.
    fn add(&mut self, run: &Score) {
        self.resolved += run.resolved;
        self.delivered += run.delivered;
        self.unchecked += run.unchecked;
    }

    /// The case's line in the test output: the number the issue asks for.
    fn print(&self, case: &str, runs: usize) {
        eprintln!(
            "case {case}: resolved {} / delivered {} frames in {runs} runs ({} unchecked)",
            self.resolved, self.delivered, self.unchecked
        );
    }
}

/// Checks every frame of every stack of the case's tasks in `report
/// --json` output against the truth. Frames outside files with symbols
/// (a libc without symbols, the vdso) are not counted.
fn score(json: &str, truth: &mut Truth) -> (Score, Vec<String>) {
    let v: serde_json::Value = serde_json::from_str(json).expect("report --json parses");
    let mut s = Score::default();
    let mut wrong = Vec::new();
    let mut stacks: HashMap<u32, usize> = HashMap::new();
    let mut groups: Vec<&serde_json::Value> = v["groups"].as_array().unwrap().iter().collect();
    groups.sort_by_key(|g| g["first_ts"].as_u64());
    for g in groups {
        let tid = g["pid"].as_u64().unwrap() as u32;
        let Some(frames) = g["user_stack"]["frames"].as_array() else {
            continue;
        };
        let n = stacks.entry(tid).or_default();
        let stack = *n;
        *n += 1;
        for (i, f) in frames.iter().enumerate() {
            let addr =
                u64::from_str_radix(f["addr"].as_str().unwrap().trim_start_matches("0x"), 16)
                    .unwrap();
            let Ok(want) = truth.expect(tid, stack, addr, i > 0) else {
                break; // not a task of this case
            };
            let Some(want) = want else {
                s.unchecked += 1;
                continue;
            };
            s.delivered += 1;
            let got = f["symbol"].as_str().unwrap_or("");
            if want.iter().any(|w| w == got) {
                s.resolved += 1;
                continue;
            }
            if !got.is_empty() {
                s.wrong += 1;
            }
            if wrong.len() < 3 {
                wrong.push(format!(
                    "tid {tid} {addr:#x}: got {got:?}, nm says {want:?}"
                ));
            }
        }
    }
    (s, wrong)
}

/// Compiles `tests/gt/<src>` into `dir/<out>` with frame pointers and
/// `flags`.
fn cc(dir: &Path, src: &str, out: &str, flags: &[&str]) -> PathBuf {
    let gt = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gt");
    let exe = dir.join(out);
    let st = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-I"])
        .arg(&gt)
        .arg(gt.join(src))
        .arg("-o")
        .arg(&exe)
        .args(flags)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success(), "cc {src}");
    exe
}

/// Runs `prog args` in `dir`.
fn run(dir: &Path, prog: &str, args: &[&str]) {
    let st = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success(), "{prog} {args:?}");
}

/// Records `script` (run by sh in `dir`, GT_DIR set) with sync user stacks
/// of getppid(2) and returns `report --json` of it.
fn record(dir: &Path, tag: &str, script: &str) -> String {
    let out = dir.join(format!("{tag}.dat"));
    let inst = format!("ustack-sym-{tag}-{}", std::process::id());
    let rec = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(["record", "-q", "-B", &inst, "--user-stacks", "sync"])
        .args(["-e", "syscalls:sys_enter_getppid", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", script])
        .current_dir(dir)
        .env("GT_DIR", dir)
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "record: {}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let rep = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(["report", "--json", "-i"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    String::from_utf8(rep.stdout).unwrap()
}

/// Runs a case `runs` times, each in a fresh directory; prints the score
/// and fails on any frame that is not resolved to what nm says.
fn run_case(name: &str, runs: usize, setup: impl Fn(&Path) -> (String, HashMap<String, PathBuf>)) {
    let mut total = Score::default();
    let mut failures = Vec::new();
    for run in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let (script, debug) = setup(dir.path());
        let json = record(dir.path(), name, &script);
        let mut truth = Truth::read(dir.path(), debug);
        let (s, wrong) = score(&json, &mut truth);
        assert!(
            s.delivered > 0,
            "{name} run {run}: no frames of the case's tasks"
        );
        total.add(&s);
        if s.resolved != s.delivered {
            // Keep the recording and the programs for a post-mortem.
            let kept = dir.keep();
            failures.push(format!(
                "run {run}: {}/{}: {} (files kept in {})",
                s.resolved,
                s.delivered,
                wrong.join("; "),
                kept.display()
            ));
        }
    }
    total.print(name, runs);
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

#[test]
#[ignore = "needs root and tracefs"]
fn threads_of_a_static_non_pie_program_beside_busybox() {
    common::host(false);
    assert!(Path::new("/bin/busybox").exists(), "needs busybox");
    // busybox is a non-PIE program too: it maps the same addresses as the
    // threaded program, so a thread's process cannot be guessed from them.
    run_case("threads-static", 20, |dir| {
        cc(
            dir,
            "threads.c",
            "threads",
            &["-static", "-no-pie", "-pthread"],
        );
        (
            "busybox echo hi >/dev/null; ./threads 50".into(),
            HashMap::new(),
        )
    });
}

#[test]
#[ignore = "needs root and tracefs"]
fn pie_fork_and_exec() {
    common::host(false);
    run_case("pie", 1, |dir| {
        cc(dir, "pie.c", "pie", &["-pie", "-fPIE"]);
        ("./pie plain 50".into(), HashMap::new())
    });
    run_case("fork-without-exec", 20, |dir| {
        cc(dir, "pie.c", "pie", &[]);
        ("./pie fork 50".into(), HashMap::new())
    });
    run_case("fork-exec", 20, |dir| {
        cc(dir, "pie.c", "pie", &[]);
        ("./pie forkexec 50".into(), HashMap::new())
    });
}

#[test]
#[ignore = "needs root and tracefs"]
fn processes_exiting_while_recording() {
    common::host(false);
    // Ten short processes one after the other, each gone long before the
    // recording ends.
    run_case("short-lived", 20, |dir| {
        cc(dir, "pie.c", "pie", &[]);
        (
            "for i in 1 2 3 4 5 6 7 8 9 10; do ./pie plain 5; done; sleep 0.2".into(),
            HashMap::new(),
        )
    });
}

#[test]
#[ignore = "needs root and tracefs"]
fn shared_library_and_dlopen() {
    common::host(false);
    run_case("shared-library", 1, |dir| {
        cc(dir, "lib.c", "libgt.so", &["-shared", "-fPIC"]);
        cc(
            dir,
            "shlib.c",
            "shlib",
            &["-DLINKED", "-L.", "-lgt", "-Wl,-rpath,$ORIGIN"],
        );
        ("./shlib linked 50".into(), HashMap::new())
    });
    run_case("dlopen", 1, |dir| {
        cc(dir, "lib.c", "libgtdl.so", &["-shared", "-fPIC"]);
        cc(dir, "shlib.c", "shlib", &["-ldl"]);
        ("./shlib dlopen 50".into(), HashMap::new())
    });
}

#[test]
#[ignore = "needs root and tracefs"]
fn stripped_binary_with_a_debuglink() {
    common::host(false);
    run_case("stripped-debuglink", 1, |dir| {
        cc(dir, "pie.c", "pie", &[]);
        run(dir, "objcopy", &["--only-keep-debug", "pie", "pie.debug"]);
        run(dir, "strip", &["--strip-all", "-o", "pie-stripped", "pie"]);
        run(
            dir,
            "objcopy",
            &["--add-gnu-debuglink=pie.debug", "pie-stripped"],
        );
        let path = dir.join("pie-stripped").to_string_lossy().into_owned();
        (
            "./pie-stripped plain 50".into(),
            HashMap::from([(path, dir.join("pie.debug"))]),
        )
    });
}

#[test]
#[ignore = "needs root and tracefs"]
fn threads_of_a_process_started_before_the_recording() {
    common::host(false);
    // Not the recorder's command: found in the data, its maps read from
    // /proc while it runs, its threads from /proc and saved_tgids.
    let mut total = Score::default();
    for run in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let exe = cc(dir.path(), "threads.c", "threads", &["-no-pie", "-pthread"]);
        let mut prog = Command::new(&exe)
            .args(["150", "10000"])
            .current_dir(dir.path())
            .env("GT_DIR", dir.path())
            .spawn()
            .unwrap();
        // Held once its threads are there, until the recording runs; the
        // recorded script lets it go on and lasts until it has exited.
        let pid = prog.id();
        let state = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.rsplit(") ").next().and_then(|r| r.chars().next())
        };
        let tasks = || std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
        common::wait_until("the program's threads", Duration::from_secs(20), || {
            tasks() == 5
        });
        // SAFETY: kill(2) on the pid of our own child, which is not reaped yet.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        common::wait_until("the program to stop", Duration::from_secs(20), || {
            state() == Some('T')
        });
        let script = format!(
            "kill -CONT {pid}; i=0; \
             while [ \"$(cut -d' ' -f3 /proc/{pid}/stat)\" != Z ] && [ $i -lt 600 ]; \
             do i=$((i+1)); sleep 0.05; done"
        );
        let json = record(dir.path(), "elsewhere", &script);
        assert!(prog.wait().unwrap().success());
        let (s, wrong) = score(&json, &mut Truth::read(dir.path(), HashMap::new()));
        assert!(s.delivered > 0, "run {run}: no frames of the program");
        assert_eq!(s.resolved, s.delivered, "run {run}: {wrong:?}");
        total.add(&s);
    }
    total.print("started-elsewhere", 3);
}

#[test]
#[ignore = "needs root and tracefs"]
fn exec_of_another_non_pie_program_over_a_forked_child() {
    common::host(false);
    // The child's stacks before the exec are in execa's code, those after
    // in pie's, at the same addresses: only the time of each stack against
    // the time of the exec tells them apart.
    let mut total = Score::default();
    for run in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        cc(dir.path(), "execa.c", "execa", &["-static", "-no-pie"]);
        cc(dir.path(), "pie.c", "pie", &["-static", "-no-pie"]);
        let json = record(dir.path(), "exec", "./execa ./pie");
        let mut truth = Truth::read(dir.path(), HashMap::new());
        truth.pre_stacks = 30;
        let (s, wrong) = score(&json, &mut truth);
        assert!(s.delivered > 0, "run {run}: no frames");
        assert_eq!(s.resolved, s.delivered, "run {run}: {wrong:?}");
        total.add(&s);
    }
    total.print("exec-non-pie", 20);
}

/// Records the whole system (no command, no -P) while `script` runs in
/// `dir` (started by the test, not by the recorder; its programs linger
/// `linger_ms` after their stacks), then stops the recorder with SIGINT;
/// returns `report --json` and the unresolved line of `report --stacks`.
fn record_system(dir: &Path, tag: &str, script: &str, linger_ms: u32) -> (String, String) {
    let out = dir.join(format!("{tag}.dat"));
    let inst = format!("ustack-sym-{tag}-{}", std::process::id());
    let mut rec = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(["record", "-B", &inst, "--user-stacks", "sync"])
        .args(["-e", "syscalls:sys_enter_getppid", "-o"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Said once tracing is on, after the exec and fork watch started and
    // right before the first poll.
    let mut stderr = common::Lines::read(rec.stderr.take().unwrap());
    stderr.wait_for(
        "tracer-cli: recording; press Ctrl-C to stop",
        Duration::from_secs(20),
    );
    let st = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("GT_DIR", dir)
        .env("GT_LINGER_MS", linger_ms.to_string())
        .status();
    // The script waited for its processes: nothing of theirs is left to
    // read, and the recorder drains what they wrote when it stops.
    // SAFETY: kill(2) on the pid of our own child, which is not reaped yet.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    let done = rec.wait().unwrap();
    assert!(st.unwrap().success(), "{script}");
    assert!(done.success(), "record: {}", stderr.all());
    let report = |what: &str| {
        let r = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
            .args(["report", what, "-i"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        String::from_utf8(r.stdout).unwrap()
    };
    let text = report("--stacks");
    let line = text
        .lines()
        .find(|l| l.contains("unresolved:"))
        .unwrap_or("")
        .to_string();
    (report("--json"), line)
}

#[test]
#[ignore = "needs root and tracefs"]
fn processes_the_recorder_did_not_start() {
    common::host(false);
    // A system-wide recording on a stock kernel: the processes are found
    // by their exec and fork events and their maps read from /proc; each
    // lives 300 ms after its stacks, more than the recorder's poll. A
    // fork without exec, a fork+exec, threads, exits: all before the
    // recording ends.
    let mut total = Score::default();
    for run in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        cc(dir.path(), "pie.c", "pie", &[]);
        cc(dir.path(), "execa.c", "execa", &["-static", "-no-pie"]);
        cc(dir.path(), "pie.c", "spie", &["-static", "-no-pie"]);
        cc(dir.path(), "threads.c", "threads", &["-no-pie", "-pthread"]);
        let script = "./pie fork 20 & ./pie forkexec 20 & ./threads 20 & ./execa ./spie & wait";
        let (json, line) = record_system(dir.path(), "system", script, 300);
        let mut truth = Truth::read(dir.path(), HashMap::new());
        truth.pre_stacks = 30;
        let (s, wrong) = score(&json, &mut truth);
        assert!(s.delivered > 0, "run {run}: no frames of the case's tasks");
        if s.resolved != s.delivered {
            let kept = dir.keep();
            panic!(
                "run {run}: {}/{}: {wrong:?} ({line}); files kept in {}",
                s.resolved,
                s.delivered,
                kept.display()
            );
        }
        total.add(&s);
    }
    total.print("system-wide", 20);
}

#[test]
#[ignore = "needs root and tracefs"]
fn processes_gone_before_their_maps_were_read_are_counted() {
    common::host(false);
    // Processes that exec and exit within a millisecond, in a system-wide
    // recording: their maps cannot be read in time on a stock kernel. The
    // report must say so, by reason, and resolve what it does resolve
    // correctly.
    let dir = tempfile::tempdir().unwrap();
    cc(dir.path(), "pie.c", "pie", &[]);
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do ./pie plain 5; done";
    let (json, line) = record_system(dir.path(), "gone", script, 0);
    let (s, _) = score(&json, &mut Truth::read(dir.path(), HashMap::new()));
    assert_eq!(s.wrong, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let gone = v["unresolved"]["reasons"]["process gone before its maps were read"]
        .as_u64()
        .unwrap_or(0);
    eprintln!(
        "case gone-before-read: resolved {} / delivered {} frames, {gone} counted gone; {line}",
        s.resolved, s.delivered
    );
    assert!(s.delivered > 0);
    assert!(
        gone as usize >= s.delivered - s.resolved,
        "every unresolved frame of the case is counted as gone: {line}"
    );
    if gone > 0 {
        assert!(
            line.contains(&format!("{gone} process gone before its maps were read")),
            "{line}"
        );
    }
}
