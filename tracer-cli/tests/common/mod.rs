//! Helpers of the host (root, real tracefs) tests of tracer-cli.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
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
