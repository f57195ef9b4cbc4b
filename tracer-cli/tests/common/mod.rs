//! Helpers of the host (root, real tracefs) tests of tracer-cli.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, EventSystem, TraceMeta, WriteOptions,
};
use ustack_tracedata::TraceFile;
use ustack_tracefs::{Instance, Tracefs};

/// The tracefs of the host; a missing prerequisite fails the test (these
/// tests are `#[ignore]`d, and run with `--include-ignored` as root).
pub fn host(needs_trace_cmd: bool) -> Tracefs {
    let why = if !nix::unistd::geteuid().is_root() {
        "needs root".to_string()
    } else if needs_trace_cmd && Command::new("trace-cmd").arg("-h").output().is_err() {
        "needs trace-cmd".to_string()
    } else if Command::new("cc").arg("--version").output().is_err() {
        "needs a C compiler (cc) for the test programs".to_string()
    } else {
        match Tracefs::find() {
            Ok(fs) => return fs,
            Err(e) => format!("no tracefs: {e}"),
        }
    };
    panic!("this host test cannot run: {why}");
}

/// Waits until `f` holds, checking every 20 ms; fails the test naming
/// `what` when it does not within `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Events the kernel wrote into `inst`'s buffer so far, on all CPUs (read
/// by a recorder or still there).
pub fn events_written(inst: &Instance) -> u64 {
    inst.cpus()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| inst.cpu_stats(c).ok())
        .map(|s| s.written())
        .sum()
}

/// The lines a child writes to a pipe (its stderr), read on a thread, so
/// that a test can wait for a line rather than for time.
pub struct Lines {
    rx: mpsc::Receiver<String>,
    seen: String,
}

impl Lines {
    /// Starts reading `pipe`.
    pub fn read(pipe: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: String::new(),
        }
    }

    /// Waits for a line that contains `needle`; fails the test with what
    /// was printed when none comes within `timeout` or the pipe closes.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    let hit = line.contains(needle);
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                    if hit {
                        return;
                    }
                }
                Err(e) => panic!(
                    "no line with {needle:?} ({e}); printed so far:\n{}",
                    self.seen
                ),
            }
        }
    }

    /// Everything printed, once the writer has closed the pipe.
    pub fn all(mut self) -> String {
        while let Ok(line) = self.rx.recv() {
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
        self.seen
    }
}

/// The tracer-cli binary under test.
pub fn tracer_cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
}

/// Runs a command, panicking with its stderr when it fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Compiles a C test program into `dir/name`.
pub fn build_c(dir: &Path, name: &str, source: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let bin = dir.join(name);
    run_ok(
        Command::new("cc")
            .args(["-O1", "-pthread", "-o"])
            .arg(&bin)
            .arg(&src),
    );
    bin
}

/// Everything a record may change in an instance, as text, for comparing
/// before and after. `events` lists the event filters to include.
pub fn snapshot(inst: &Instance, events: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for f in [
        "tracing_on",
        "buffer_size_kb",
        "trace_clock",
        "current_tracer",
        "set_event",
        "set_event_pid",
    ] {
        m.insert(
            f.to_string(),
            inst.read_string(f).unwrap_or_else(|e| e.to_string()),
        );
    }
    for o in inst.option_names().unwrap() {
        m.insert(
            format!("options/{o}"),
            inst.read_string(&format!("options/{o}")).unwrap(),
        );
    }
    for (s, e) in events {
        let f = format!("events/{s}/{e}/filter");
        m.insert(f.clone(), inst.read_string(&f).unwrap());
    }
    m
}

/// Differences between two snapshots, for assertion messages.
pub fn diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (k, v) in a {
        if b.get(k) != Some(v) {
            out.push_str(&format!("{k}: before {v:?} after {:?}\n", b.get(k)));
        }
    }
    out
}

/// `tracer-cli report ARGS -i FILE`: stdout, stderr and whether it exited
/// with 0.
pub fn report(args: &[&str], file: &Path) -> (String, String, bool) {
    let out = tracer_cli()
        .arg("report")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run tracer-cli: {e}"));
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

/// [`report`] that must exit 0 with nothing on stderr; its stdout.
pub fn report_ok(args: &[&str], file: &Path) -> String {
    let (out, err, ok) = report(args, file);
    assert!(ok, "report {args:?}: {err}");
    assert_eq!(err, "", "report {args:?}");
    out
}

/// Writes `src`'s buffer with data again as the top buffer, plus (with
/// `instance`) an instance `copy` holding the same pages.
pub fn rewrite(src: &Path, out: &Path, instance: bool) {
    let f = TraceFile::open(src).unwrap();
    // `record -B` writes an empty top buffer before the instance's.
    let b = f
        .buffers()
        .iter()
        .find(|b| b.cpus.iter().any(|c| c.data_size() > 0))
        .expect("a buffer with data");
    let dir = out.parent().unwrap();
    let mut cpus = Vec::new();
    for c in &b.cpus {
        let p = dir.join(format!("pages.{instance}.cpu{}", c.cpu));
        std::fs::write(&p, f.cpu_data(c)).unwrap();
        cpus.push(CpuData::new(c.cpu, p));
    }
    let meta = TraceMeta {
        page_size: f.page_size() as u32,
        long_size: f.long_size() as u8,
        header_page: f.header_page_text().to_vec(),
        header_event: f.header_event().to_vec(),
        ftrace_formats: f.ftrace_format_texts().to_vec(),
        event_systems: f
            .event_format_texts()
            .iter()
            .map(|(name, formats)| EventSystem {
                name: name.clone(),
                formats: formats.clone(),
            })
            .collect(),
        kallsyms: f.kallsyms().unwrap(),
        printk_formats: f.printk_formats().to_vec(),
        cmdlines: f.cmdlines().to_vec(),
        cpu_count: f.cpu_count(),
        ..TraceMeta::default()
    };
    let mut buffers = vec![BufferData {
        name: String::new(),
        clock: "local".into(),
        cpus: cpus.clone(),
    }];
    if instance {
        buffers.push(BufferData {
            name: "copy".into(),
            clock: "local".into(),
            cpus,
        });
    }
    write_trace_dat(out, &meta, &buffers, &WriteOptions::default()).unwrap();
}

/// Compares one form (`opts` then `files` as arguments); returns a
/// description of the difference, if any.
pub fn compare(files: &[&str], opts: &[&str]) -> Option<String> {
    let run = |cmd: &mut Command| {
        cmd.output()
            .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
    };
    let theirs = run(Command::new("trace-cmd")
        .arg("report")
        .args(opts)
        .args(files));
    let ours = run(tracer_cli().arg("report").args(opts).args(files));
    if theirs.status.signal_or_code() != ours.status.signal_or_code() {
        return Some(format!(
            "exit {:?} vs {:?}: {}",
            theirs.status,
            ours.status,
            String::from_utf8_lossy(&ours.stderr)
        ));
    }
    if theirs.stdout == ours.stdout {
        return None;
    }
    let (mut t, mut o) = (
        String::from_utf8_lossy(&theirs.stdout).into_owned(),
        String::from_utf8_lossy(&ours.stdout).into_owned(),
    );
    if opts.contains(&"-R") {
        (t, o) = (mask_unstored_callers(&t), mask_unstored_callers(&o));
        if t == o {
            return None;
        }
    }
    Some(first_difference(&t, &o))
}

/// `text` with the bytes of each raw `kernel_stack` caller array past its
/// stored callers (`size=N`: N 8-byte callers) replaced by `..`.
///
/// The kernel stores a `kernel_stack` with the callers it has, and
/// libtraceevent reads the format's whole array: into the next record on
/// the page (we print those bytes as trace-cmd does; report_synthetic
/// checks it on a page made by hand), or, for the last record of a page,
/// past trace-cmd's page buffer into its heap, which no reader can match.
pub fn mask_unstored_callers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let masked = line.find(" kernel_stack: ").and_then(|k| {
            let rest = &line[k..];
            let n: usize = rest
                .split("size=")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()?;
            let open = k + rest.find("caller=ARRAY[")? + "caller=ARRAY[".len();
            let close = open + line[open..].find(']')?;
            let bytes: Vec<&str> = line[open..close].split(", ").collect();
            let kept = bytes.len().min(n * 8);
            let mut m = format!("{}{}", &line[..open], bytes[..kept].join(", "));
            if kept < bytes.len() {
                m.push_str(", ..");
            }
            m.push_str(&line[close..]);
            Some(m)
        });
        out.push_str(masked.as_deref().unwrap_or(line));
    }
    out
}

/// Where trace-cmd's text `t` and ours `o` first differ, for a failure
/// message.
pub fn first_difference(t: &str, o: &str) -> String {
    match t.lines().zip(o.lines()).position(|(a, b)| a != b) {
        Some(i) => format!(
            "line {}:\ntrace-cmd: {:?}\nours:      {:?}",
            i + 1,
            t.lines().nth(i).unwrap_or(""),
            o.lines().nth(i).unwrap_or("")
        ),
        None => format!("{} vs {} lines", t.lines().count(), o.lines().count()),
    }
}

/// Prints how many forms were identical and fails with every form that
/// was not.
pub fn assert_forms_identical(same: usize, failures: &[String]) {
    eprintln!("{same} forms identical");
    assert!(
        failures.is_empty(),
        "{} of {} forms differ:\n{}",
        failures.len(),
        same + failures.len(),
        failures.join("\n")
    );
}

pub trait StatusExt {
    fn signal_or_code(&self) -> (Option<i32>, Option<i32>);
}

impl StatusExt for std::process::ExitStatus {
    fn signal_or_code(&self) -> (Option<i32>, Option<i32>) {
        use std::os::unix::process::ExitStatusExt;
        (self.code(), self.signal())
    }
}

/// `DIR/PREFIX.dat`: `trace-cmd extract` (fenced, see
/// `ustack_testdata::top`) of an instance with a 16 KiB buffer that
/// overflowed while `load` ran with `events` (`SYSTEM` or `SYSTEM/EVENT`)
/// and kernel stacks (and stock user stacks with `user_stacks`) enabled:
/// events lost on every CPU. The instance is removed afterwards.
pub fn overflowed_extract(
    dir: &Path,
    prefix: &str,
    events: &[&str],
    user_stacks: bool,
    load: &str,
) -> PathBuf {
    // The callers checked root and tracefs with `host`.
    let inst = ustack_testdata::TestInstance::create(prefix).expect("root and tracefs");
    inst.write("buffer_size_kb", "16");
    for e in events {
        inst.write(&format!("events/{e}/enable"), "1");
    }
    inst.write("options/stacktrace", "1");
    if user_stacks {
        inst.write("options/userstacktrace", "1");
    }
    run_ok(Command::new("sh").args(["-c", load]));
    inst.write("tracing_on", "0");
    let out = dir.join(format!("{prefix}.dat"));
    inst.extract(&out);
    out
}
