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
        let o = tracer_cli(&[sub, "-e", "sched", "-Z"]);
        assert_eq!(o.status.code(), Some(2), "{sub}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("error: unexpected argument '-Z' found"),
            "{sub}: {}",
            stderr(&o)
        );
        // trace-cmd's own options that tracer-cli lacks are named as such.
        for opt in [
            &["-a"][..],
            &["-v"],
            &["-M", "1"],
            &["-s", "10"],
            &["-m", "100"],
            &["-k"],
            &["-i"],
            &["-R", "stacktrace"],
            &["-d"],
            &["-D"],
            &["-r", "5"],
            &["--date"],
            &["--max-graph-depth", "3"],
        ] {
            let mut args = vec![sub, "-e", "sched"];
            args.extend_from_slice(opt);
            args.extend_from_slice(&["--", "true"]);
            let o = tracer_cli(&args);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
            assert_eq!(
                stderr(&o),
                format!(
                    "tracer-cli: {sub} {}: trace-cmd has this option, tracer-cli does not (see tracer-cli {sub} --help)\n",
                    opt[0]
                ),
                "{args:?}"
            );
        }
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

/// Runs tracer-cli with its stdout a pipe of the smallest size, reads the
/// first `keep` bytes of it and closes the pipe: whatever tracer-cli writes
/// beyond `keep` and the pipe's capacity then fails with `EPIPE`. Returns
/// what was read, the pipe's capacity and how tracer-cli ended.
fn reader_goes_away_after(args: &[&str], keep: usize) -> (Vec<u8>, usize, Output) {
    use std::io::Read;
    // Close-on-exec: no child may hold the read end open (tracer-cli
    // itself, or one that another test starts meanwhile).
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let capacity = nix::fcntl::fcntl(&w, nix::fcntl::FcntlArg::F_SETPIPE_SZ(4096)).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(args)
        .stdout(Stdio::from(w))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut read = vec![0; keep];
    // The reader goes away at the end of this statement.
    std::fs::File::from(r).read_exact(&mut read).unwrap();
    let out = child.wait_with_output().unwrap();
    (read, usize::try_from(capacity).unwrap(), out)
}

#[test]
fn report_survives_a_reader_that_went_away() {
    // A thousand tasks, each with one kernel entry and its user stack,
    // spread over 128 CPUs: every form prints far more than a pipe holds
    // (--folded a line per task, --stat a few per CPU).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.dat");
    let mut b = TraceBuilder::new(128);
    for i in 0..1000u32 {
        let (pid, cpu, ts) = (1000 + i as i32, i % 128, 1_000 + 10 * u64::from(i));
        let cookie = (u64::from(i) + 1) << 32 | u64::from(cpu + 1);
        b.comm(pid, &format!("task-{i}"));
        b.sys_enter(cpu, ts, pid, 1);
        b.cookie(cpu, ts, pid, cookie);
        let stack = [0x40_1000 + u64::from(i), 0x40_2000];
        b.unwind_stack(cpu, ts + 5, pid, cookie, &stack);
    }
    b.write(&path).unwrap();
    let p = path.to_str().unwrap();
    const KEEP: usize = 1000;
    for form in [
        &[][..],
        &["--stacks"],
        &["--json"],
        &["--folded"],
        &["--stat"],
        // The hook is printed first, on its own.
        &[
            "--profile",
            "-H",
            "sched:sched_wakeup,pid/sched:sched_switch,next_pid",
        ],
    ] {
        let mut args = vec!["report", "-i", p];
        args.extend_from_slice(form);
        let full = tracer_cli(&args);
        assert_eq!(full.status.code(), Some(0), "{args:?}: {}", stderr(&full));
        // The reader reads the start of the output, then goes away while
        // tracer-cli still has more to write than the pipe holds.
        let (read, capacity, o) = reader_goes_away_after(&args, KEEP);
        assert!(
            full.stdout.len() > KEEP + capacity,
            "{args:?}: {} bytes do not overflow a pipe of {capacity} after {KEEP} read",
            full.stdout.len()
        );
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&read),
            String::from_utf8_lossy(&full.stdout[..KEEP]),
            "{args:?}: what the reader got before it went away"
        );
        // A reader gone before the first write.
        let o = into_closed_pipe(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
    let o = into_closed_pipe(&["--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// clap_complete panics when its writer fails, so the script is written
/// whole by tracer-cli itself.
#[test]
fn completions_survive_a_reader_that_went_away() {
    for shell in ["bash", "zsh", "fish"] {
        let o = into_closed_pipe(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{shell}");
    }
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

/// `record -q -B name ARGS -o /dev/null -- true`.
fn record_true(name: &str, args: &[&str]) -> Output {
    let mut all = vec!["record", "-q", "-B", name];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "/dev/null", "--", "true"]);
    tracer_cli(&all)
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
    let o = record_true(&name, &["-e", "sched:sched_swich"]);
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
    let o = record_true(&name, &["-e", "sched:sched_switch", "-f", "nosuch == 1"]);
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
    let o = record_true(&name, &["-e", "sched", "-f", "nosuch == 1"]);
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

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !f() {
        assert!(t0.elapsed().as_secs() < 20, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A `record` on `name` of sched_switch (and `extra`), running `sleep
/// SECS`, once its settings are made.
fn running_record(name: &str, extra: &[&str], secs: &str) -> std::process::Child {
    let out = std::env::temp_dir().join(format!("{name}.dat"));
    let mut args = vec!["record", "-q", "-B", name, "-e", "sched:sched_switch"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out.to_str().unwrap(), "--", "sleep", secs]);
    let child = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(&args)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let on = std::path::Path::new("/sys/kernel/tracing/instances")
        .join(name)
        .join("events/sched/sched_switch/enable");
    wait_for("the record to start", || {
        std::fs::read_to_string(&on).is_ok_and(|v| v == "1\n")
    });
    child
}

#[test]
#[ignore = "needs root and tracefs"]
fn a_second_record_on_the_same_instance_is_refused() {
    let (name, dir) = instance("two");
    let mut first = running_record(&name, &[], "2");
    let o = record_true(&name, &["-e", "sched:sched_wakeup"]);
    let first_ok = first.wait().unwrap().success();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "tracer-cli: instance {name} is in use by another tracer-cli (pid {}); use -B NAME to trace in an instance of your own\n",
            first.id()
        )
    );
    assert!(first_ok, "the first record was disturbed");
    assert!(!dir.exists(), "instance left behind");

    // Someone else's events (here: enabled by hand) are not turned off.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("events/sched/sched_switch/enable"), "1").unwrap();
    let o = record_true(&name, &["-e", "sched:sched_wakeup"]);
    let still = std::fs::read_to_string(dir.join("events/sched/sched_switch/enable")).unwrap();
    std::fs::remove_dir(&dir).unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "tracer-cli: instance {name} is in use: 1 events are enabled (sched:sched_switch); use -B NAME to trace in an instance of your own, or `tracer-cli reset -B {name}` if they are left over\n"
        )
    );
    assert_eq!(still, "1\n");
}

#[test]
#[ignore = "needs root and tracefs"]
fn after_sigkill_the_next_record_or_reset_restores_exactly() {
    let (name, dir) = instance("kill");
    std::fs::create_dir(&dir).unwrap();
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    std::fs::write(dir.join("buffer_size_kb"), "200").unwrap();
    let before = (
        read("buffer_size_kb"),
        read("events/sched/sched_switch/enable"),
    );
    for then in ["record", "reset"] {
        let mut rec = running_record(&name, &["-b", "600"], "1");
        rec.kill().unwrap();
        rec.wait().unwrap();
        let leaked = (
            read("buffer_size_kb"),
            read("events/sched/sched_switch/enable"),
        );
        assert_ne!(leaked, before, "nothing leaked: the test proves nothing");
        let o = match then {
            "record" => record_true(&name, &["-e", "sched:sched_wakeup"]),
            _ => tracer_cli(&["reset", "-B", &name]),
        };
        assert!(o.status.success(), "{then}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("tracer-cli: restored ")
                && stderr(&o).contains(" settings left by a tracer-cli that was killed"),
            "{then}: {}",
            stderr(&o)
        );
        let after = (
            read("buffer_size_kb"),
            read("events/sched/sched_switch/enable"),
        );
        assert_eq!(after, before, "after {then}");
    }
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
#[ignore = "needs root and tracefs"]
fn a_command_that_cannot_run_under_ptrace_fails_the_record_and_says_why() {
    if Command::new("strace").arg("-V").output().is_err() {
        panic!("this test needs strace");
    }
    let (name, _) = instance("strace");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.dat");
    let record_strace = |ptrace: bool| {
        let mut args = vec![
            "record",
            "-q",
            "-B",
            &name,
            "-e",
            "sched:sched_process_exec",
        ];
        if !ptrace {
            args.push("--no-ptrace");
        }
        args.extend_from_slice(&[
            "-o",
            out.to_str().unwrap(),
            "--",
            "strace",
            "-o",
            "/dev/null",
            "true",
        ]);
        tracer_cli(&args)
    };
    let o = record_strace(true);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).ends_with(
            "tracer-cli: the command exited with status 1 (a command that uses ptrace itself, such as strace or gdb, needs --no-ptrace)\n"
        ),
        "{}",
        stderr(&o)
    );
    assert!(out.exists(), "the trace is kept");
    // As the message says: without ptrace it runs.
    let o = record_strace(false);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn man_pages_and_completions_come_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("man1");
    let o = tracer_cli(&["man", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut pages: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    let subs = [
        "completions",
        "extract",
        "list",
        "man",
        "record",
        "report",
        "reset",
        "show",
        "start",
        "stat",
        "stop",
        "tui",
    ];
    let mut want: Vec<String> = subs.iter().map(|s| format!("tracer-cli-{s}.1")).collect();
    want.push("tracer-cli.1".into());
    want.sort();
    assert_eq!(pages, want);
    let record = std::fs::read_to_string(d.join("tracer-cli-record.1")).unwrap();
    assert!(
        record.contains(".SH NAME\ntracer\\-cli\\-record \\- Record a trace"),
        "{record:.400}"
    );
    assert!(record.contains("\\-\\-user\\-stacks"), "{record:.400}");
    assert!(record.contains("Examples:"), "{record:.400}");

    let o = tracer_cli(&["completions", "bash"]);
    assert!(o.status.success());
    let bash = String::from_utf8(o.stdout).unwrap();
    for s in subs {
        assert!(bash.contains(&format!("tracer__cli,{s})")), "{s} missing");
    }
    assert!(bash.contains("--user-stacks"));
    let o = tracer_cli(&["completions", "nosuchshell"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn every_recording_subcommand_has_examples_in_its_help() {
    for sub in [
        "record",
        "start",
        "report",
        "extract",
        "tui",
        "list",
        "completions",
    ] {
        let o = tracer_cli(&[sub, "--help"]);
        let help = String::from_utf8(o.stdout).unwrap();
        assert!(
            help.contains(&format!("Examples:\n  tracer-cli {sub}")),
            "{sub}:\n{help}"
        );
    }
}

/// `start -B` leaves a new instance for `extract`: its help must not say
/// the instance is removed at the end, as record's does.
#[test]
fn start_help_says_start_leaves_its_instance() {
    let o = tracer_cli(&["start", "--help"]);
    let help = String::from_utf8(o.stdout).unwrap();
    let b = help
        .split("\n  -B <INSTANCE>\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no -B in start --help:\n{help}"));
    let b = &b[..b.find("\n\n").unwrap_or(b.len())];
    assert!(
        b.contains("except by start, which leaves it for extract"),
        "{b}"
    );
}

#[test]
#[ignore = "needs root and tracefs"]
fn a_full_disk_keeps_a_readable_trace_stops_the_command_and_restores() {
    let (name, inst_dir) = instance("full");
    let dir = tempfile::tempdir().unwrap();
    let fs_dir = dir.path().join("small");
    std::fs::create_dir(&fs_dir).unwrap();
    // 8 MiB: the 4 MiB record keeps for the trace.dat, and 4 MiB of pages.
    let m = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(&fs_dir)
        .status()
        .unwrap();
    assert!(m.success(), "cannot mount a tmpfs");
    struct Umount(std::path::PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _umount = Umount(fs_dir.clone());
    // A command that never ends by itself: record must stop it.
    let script = dir.path().join(format!("busy-{}.sh", std::process::id()));
    std::fs::write(&script, "while :; do ls / >/dev/null; done\n").unwrap();
    let out = fs_dir.join("t.dat");
    let o = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args([
            "record",
            "-q",
            "-B",
            &name,
            "-e",
            "sched",
            "-e",
            "raw_syscalls",
            "-o",
        ])
        .arg(&out)
        .args(["--", "sh"])
        .arg(&script)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!(
            "tracer-cli: recording stopped; {} holds what was recorded before: recording CPU",
            out.display()
        )) && err.ends_with("No space left on device\n")
            && err.lines().count() == 1,
        "{err}"
    );
    let left = Command::new("pgrep")
        .arg("-f")
        .arg(script.to_str().unwrap())
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "the command was left running");
    assert!(!inst_dir.exists(), "instance not removed");
    // Only the trace.dat is left on the full file system, and it reads.
    let names: Vec<_> = std::fs::read_dir(&fs_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("t.dat")]);
    let r = tracer_cli(&["report", "-i", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", stderr(&r));
    let lines = r.stdout.iter().filter(|&&b| b == b'\n').count();
    assert!(lines > 1000, "only {lines} lines");
}
