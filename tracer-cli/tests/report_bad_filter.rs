//! A malformed `-F` text is refused with one line on stderr and exit
//! status 1, both by the trace-cmd style report and by `--stacks`, instead
//! of reaching libtraceevent's parser (which crashes on it).

use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(args)
        .output()
        .unwrap()
}

/// The same line from the trace-cmd style report and the stitched views,
/// which share their filters.
fn assert_refused(extra: &[&str], filter: &str, why: &str) {
    let dir = tempfile::tempdir().unwrap();
    let dat = dir.path().join("t.dat");
    ustack_testdata::fixture().write(&dat).unwrap();
    let mut args = vec!["report", "-i", dat.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-F", filter]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1), "args {args:?}");
    assert!(out.stdout.is_empty(), "args {args:?}");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("tracer-cli: bad filter {filter:?}: {why}\n"),
        "args {args:?}"
    );
}

#[test]
fn report_refuses_a_filter_ending_in_an_operator() {
    let f = "sched_switch: prev_pid >";
    assert_refused(&[], f, "expression ends in an operator");
    assert_refused(&["--stacks"], f, "expression ends in an operator");
}

#[test]
fn report_refuses_unbalanced_parentheses() {
    let f = "sched_switch: (prev_pid > 1";
    assert_refused(&[], f, "unbalanced '('");
    assert_refused(&["--stacks"], f, "unbalanced '('");
}
