//! A trace.dat whose event format divides by a field that is 0 in a record
//! (or by the `C->id` of a corrupt `R%C->id`): libtraceevent 1.7 dies of
//! SIGFPE printing it, and so does `trace-cmd report`. `tracer-cli report`
//! and `report --stacks` must exit normally and print every event, the
//! refused ones as libtraceevent prints an event whose print fmt it cannot
//! parse. Built from `ustack_testdata::fixture()` with the format text
//! edited in place (same length, the file stays valid). No root needed;
//! the comparison with trace-cmd is skipped without it (fails under
//! `CI=true`).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The fixture written to `dir/name` with every `from` of its bytes (the
/// format texts) replaced by `to`, which has the same length.
fn edited(dir: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    assert_eq!(from.len(), to.len());
    let p = dir.join(name);
    ustack_testdata::fixture().write(&p).unwrap();
    let mut b = std::fs::read(&p).unwrap();
    let mut n = 0;
    for i in 0..=b.len() - from.len() {
        if &b[i..i + from.len()] == from.as_bytes() {
            b[i..i + from.len()].copy_from_slice(to.as_bytes());
            n += 1;
        }
    }
    assert!(n > 0, "{from:?} not in the fixture");
    std::fs::write(&p, b).unwrap();
    p
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("report_divide_{tag}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// stdout of `tracer-cli report <args> -i file`, which must exit with 0
/// (not be killed by a signal) and print nothing on stderr.
const ARGS: &str = "args=ARRAY[00, 00, 00, 00, 00, 00, 00, 00, 01, 00, 00, 00, 00, 00, 00, 00, \
02, 00, 00, 00, 00, 00, 00, 00, 03, 00, 00, 00, 00, 00, 00, 00, 04, 00, 00, 00, 00, 00, 00, 00, \
05, 00, 00, 00, 00, 00, 00, 00]";

/// The `report` text of the fixture with `sys_enter` and `sys_exit` infos.
fn expected_report(enter: [&str; 3], exit: &str) -> String {
    format!(
        "\
cpus=2
             app-100   [000]     0.000001: sys_enter:            {}
             app-100   [000]     0.000001: kernel_stack:         <stack trace >
=> __x64_sys_write (ffffffff81200010)
=> do_syscall_64 (ffffffff81100020)
             app-100   [000]     0.000001: user_unwind_cookie:   cookie=300000001
           other-200   [001]     0.000002: sys_enter:            {}
           other-200   [001]     0.000002: user_unwind_cookie:   cookie=500000002
             app-100   [000]     0.000002: sys_exit:             {exit}
             app-100   [000]     0.000002: user_unwind_cookie:   cookie=300000001
CPU:1 [9 EVENTS DROPPED]
             app-100   [001]     0.000003: user_unwind_stack:    cookie=300000001
             app-100   [000]     0.000004: sys_enter:            {}
             app-100   [000]     0.000004: user_stack:           \t=> {}
",
        enter[0],
        enter[1],
        enter[2],
        user_stack_addr()
    )
}

fn user_stack_addr() -> String {
    let a = ustack_testdata::libc_functions()
        .iter()
        .find(|f| f.0 == "write")
        .map(|f| ustack_testdata::DEMO_LIBC_BASE + f.1 + 4)
        .unwrap_or(0x5555_0000_0042);
    format!("{a:#x}")
}

/// The sys_enter / sys_exit lines of `report --stacks`, in order.
fn stacks_syscall_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.contains("sys_enter:") || l.contains("sys_exit:"))
        .collect()
}

fn failed(id: u32) -> String {
    format!("[FAILED TO PARSE] id={id} {ARGS}")
}

#[test]
fn a_format_dividing_by_a_zero_field_does_not_kill_report() {
    let dir = tmpdir("zero");
    // sys_enter's second argument becomes 9 / REC->id: the record of pid
    // 200 has id 0.
    let f = edited(&dir, "zero.dat", "REC->args[1]", "9/REC->id   ");
    let out = common::report_ok(&[], &f);
    assert_eq!(
        out,
        expected_report([&failed(1), &failed(0), &failed(3)], "NR 1 = 5")
    );
    let out = common::report_ok(&["--stacks"], &f);
    assert!(
        out.starts_with("# 10 events, 3 groups: 2 complete"),
        "{out}"
    );
    assert_eq!(
        stacks_syscall_lines(&out),
        [
            "  0.000001 [000] sys_enter: id=1 args={0x0,0x1,0x2,0x3,0x4,0x5}",
            "  0.000002 [000] sys_exit: NR 1 = 5",
            "  0.000001 [001] sys_enter: id=0 args={0x0,0x1,0x2,0x3,0x4,0x5}",
            "  0.000004 [000] sys_enter: id=3 args={0x0,0x1,0x2,0x3,0x4,0x5}",
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupt_rec_in_a_format_does_not_kill_report() {
    let dir = tmpdir("mangled");
    // REC->id mangled into R%C->id, in sys_enter and sys_exit.
    let f = edited(&dir, "mangled.dat", "REC->id", "R%C->id");
    let out = common::report_ok(&[], &f);
    assert_eq!(
        out,
        expected_report(
            [&failed(1), &failed(0), &failed(3)],
            "[FAILED TO PARSE] id=1 ret=5"
        )
    );
    let out = common::report_ok(&["--stacks"], &f);
    assert!(
        out.starts_with("# 10 events, 3 groups: 2 complete"),
        "{out}"
    );
    assert_eq!(
        stacks_syscall_lines(&out),
        [
            "  0.000001 [000] sys_enter: id=1 args={0x0,0x1,0x2,0x3,0x4,0x5}",
            "  0.000002 [000] sys_exit: id=1 ret=5",
            "  0.000001 [001] sys_enter: id=0 args={0x0,0x1,0x2,0x3,0x4,0x5}",
            "  0.000004 [000] sys_enter: id=3 args={0x0,0x1,0x2,0x3,0x4,0x5}",
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A refused format prints as trace-cmd prints a format whose print fmt
/// libtraceevent cannot parse (trace-cmd itself dies on the refused one).
#[test]
fn a_refused_format_prints_like_trace_cmd_prints_an_unparsable_one() {
    if Command::new("trace-cmd").arg("-h").output().is_err() {
        return ustack_testdata::skip_unless_ci("needs trace-cmd");
    }
    let dir = tmpdir("tc");
    let zero = edited(&dir, "zero.dat", "REC->args[1]", "9/REC->id   ");
    let bad = edited(&dir, "bad.dat", "REC->args[1]", "REC->((((((("); // no division
    let tc = |f: &Path| {
        Command::new("trace-cmd")
            .arg("report")
            .arg(f)
            .output()
            .unwrap()
    };
    // trace-cmd dies of SIGFPE (8) on the file with the division ...
    assert_eq!(tc(&zero).status.signal(), Some(8));
    // ... and prints the unparsable one the way we print the refused one.
    let o = tc(&bad);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        common::report_ok(&[], &zero)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
