//! The command line's own faults: options tracer-cli does not have,
//! outputs and pids that cannot work, readers that go away, a start that
//! fails half way. Checked before anything is traced where that is
//! possible (these run without root); the rest need root and tracefs and
//! are `#[ignore]`d.

use std::process::{Command, Output, Stdio};

use ustack_testdata::TraceBuilder;

fn tracer_cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_unknown_option_is_refused_by_name_not_run_as_the_command() {
    for sub in ["record", "start"] {
        let o = tracer_cli(&[sub, "-e", "sched", "-a"]);
        assert_eq!(o.status.code(), Some(2), "{sub}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("error: unexpected argument '-a' found"),
            "{sub}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn an_output_directory_is_refused_before_tracing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let o = tracer_cli(&["record", "-e", "sched", "-o", d, "--", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!("tracer-cli: cannot write {d}: it is a directory\n")
    );
    let o = tracer_cli(&["extract", "-o", &format!("{d}/none/x.dat")]);
    assert_eq!(
        stderr(&o),
        format!("tracer-cli: cannot write {d}/none/x.dat: no directory {d}/none\n")
    );
}

#[test]
fn a_pid_that_does_not_exist_is_an_error() {
    // Above the kernel's largest pid_max (2^22).
    let o = tracer_cli(&["record", "-e", "sched", "-P", "4194305", "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "tracer-cli: -P 4194305: no such process\n");
}

/// Runs tracer-cli with its stdout a pipe whose reader is already gone.
fn into_closed_pipe(args: &[&str]) -> Output {
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(args)
        .stdout(Stdio::from(w))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn report_survives_a_reader_that_went_away() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.dat");
    let mut b = TraceBuilder::new(1);
    for i in 0..50 {
        b.sys_enter(0, 1_000 + i, 10, 1);
    }
    b.write(&path).unwrap();
    let p = path.to_str().unwrap();
    for form in [
        &[][..],
        &["--stacks"],
        &["--json"],
        &["--folded"],
        &["--stat"],
    ] {
        let mut args = vec!["report", "-i", p];
        args.extend_from_slice(form);
        let o = into_closed_pipe(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
    let o = into_closed_pipe(&["--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
#[ignore = "needs root and tracefs"]
fn list_stat_and_show_survive_a_reader_that_went_away() {
    for args in [
        &["list", "-e"][..],
        &["list"],
        &["stat"],
        &["show"],
        &["list", "-o"],
    ] {
        let o = into_closed_pipe(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

#[test]
#[ignore = "needs root and tracefs"]
fn a_start_whose_command_cannot_run_restores_everything() {
    let name = format!("cli-start-{}", std::process::id());
    let dir = std::path::Path::new("/sys/kernel/tracing/instances").join(&name);
    std::fs::create_dir(&dir).unwrap();
    let enable = dir.join("events/sched/sched_switch/enable");
    let o = tracer_cli(&[
        "start",
        "-B",
        &name,
        "-e",
        "sched:sched_switch",
        "-b",
        "300",
        "--",
        "/nonexistent/command",
    ]);
    let after = (
        std::fs::read_to_string(&enable).unwrap(),
        std::fs::read_to_string(dir.join("buffer_size_kb")).unwrap(),
        std::fs::read_to_string(dir.join("tracing_on")).unwrap(),
    );
    std::fs::remove_dir(&dir).unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "tracer-cli: cannot run /nonexistent/command: No such file or directory\n"
    );
    assert_eq!(after.0, "0\n", "sched_switch left enabled");
    assert_ne!(after.1, "300\n", "buffer size left changed");
    assert_eq!(after.2, "1\n", "tracing_on left off");
}

/// A private instance name for one test, and its directory.
fn instance(tag: &str) -> (String, std::path::PathBuf) {
    let name = format!("cli-{tag}-{}", std::process::id());
    let dir = std::path::Path::new("/sys/kernel/tracing/instances").join(&name);
    (name, dir)
}

#[test]
#[ignore = "needs root and tracefs"]
fn a_misspelt_event_suggests_the_right_one() {
    let (name, dir) = instance("dym");
    let o = tracer_cli(&[
        "record",
        "-B",
        &name,
        "-e",
        "sched:sched_swich",
        "-o",
        "/dev/null",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "tracer-cli: no such event: sched:sched_swich (did you mean sched:sched_switch?)\n"
    );
    assert!(!dir.exists(), "instance left behind");
}

#[test]
#[ignore = "needs root and tracefs"]
fn a_bad_filter_gives_the_kernels_reason() {
    let (name, dir) = instance("badf");
    let o = tracer_cli(&[
        "record",
        "-B",
        &name,
        "-e",
        "sched:sched_switch",
        "-f",
        "nosuch == 1",
        "-o",
        "/dev/null",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with("tracer-cli: tracefs: bad filter for sched:sched_switch: Field not found")
            && err.ends_with(": nosuch == 1\n")
            && err.lines().count() == 1,
        "{err}"
    );
    assert!(!dir.exists(), "instance left behind");
    // A system filter that fits none of the system's events would trace
    // everything: refused too.
    let o = tracer_cli(&[
        "record",
        "-B",
        &name,
        "-e",
        "sched",
        "-f",
        "nosuch == 1",
        "-o",
        "/dev/null",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("tracer-cli: bad filter for sched: "),
        "{}",
        stderr(&o)
    );
    assert!(!dir.exists(), "instance left behind");
}

#[test]
#[ignore = "needs root and tracefs"]
fn a_filter_after_a_system_goes_to_the_systems_filter_file() {
    let (name, dir) = instance("sysf");
    let o = tracer_cli(&["start", "-B", &name, "-e", "sched", "-f", "prev_pid == 1"]);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let (switch, wakeup) = (
        read("events/sched/sched_switch/filter"),
        read("events/sched/sched_wakeup/filter"),
    );
    let _ = std::fs::write(dir.join("tracing_on"), "0");
    let _ = std::fs::remove_dir(&dir);
    assert!(o.status.success(), "{}", stderr(&o));
    // sched_switch has prev_pid and gets the filter; sched_wakeup has no
    // such field and keeps none (the kernel notes why in its filter file).
    assert_eq!(switch, "prev_pid == 1\n");
    assert!(wakeup.contains("parse_error:"), "{wakeup}");
}
