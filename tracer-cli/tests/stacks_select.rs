//! `report --stacks|--folded|--json` with the event and group selections
//! (`-F`, `-v`, `--cpu`, `--pid`, `--comm`, `--time`), tracing-internal
//! frames hidden or shown, and traces with kernel stacks only, on the
//! synthetic fixtures of `ustack_testdata` (no root needed).

mod common;

use std::path::PathBuf;

use ustack_testdata::{self as testdata, TraceBuilder};

fn write(name: &str, t: TraceBuilder) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tracer-cli-select-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    t.write(&p).unwrap();
    p
}

const KERNEL_ONLY: &str = "\
# 5 events, 2 groups: 2 complete, 0 pending, 0 stack-lost, 0 orphan-stack; drops: none
# kernel stacks only (no user stack was recorded): one group per event with a kernel stack

app-100 kernel complete 0.000001..0.000001 events=1 frames=0
  0.000001 [000] sys_enter: NR 1 (0, 1, 2, 3, 4, 5)
INTERNAL      => __x64_sys_write+0x10 (ffffffff81200010)
      => do_syscall_64+0x20 (ffffffff81100020)

other-200 kernel complete 0.000002..0.000002 events=1 frames=0
  0.000002 [001] sched_switch: other:200 [120] S ==> swapper/1:0 [120]
      => schedule+0x30 (ffffffff81400030)
      => do_syscall_64+0x40 (ffffffff81100040)
";

#[test]
fn kernel_only_trace_shows_one_group_per_kernel_stack_without_tracing_frames() {
    let f = write("kernel-only.dat", testdata::fixture_kernel_only());
    assert_eq!(
        common::report_ok(&["--stacks"], &f),
        KERNEL_ONLY.replace("INTERNAL", "")
    );
    let internal = "      => stack_trace_save+0x8 (ffffffff81700008)
      => trace_event_raw_event_sys_enter+0x10 (ffffffff81600010)
";
    assert_eq!(
        common::report_ok(&["--stacks", "--internal-frames"], &f),
        KERNEL_ONLY.replace("INTERNAL", internal)
    );
    assert_eq!(
        common::report_ok(&["--folded"], &f),
        "app;do_syscall_64;__x64_sys_write;sys_enter 1\nother;do_syscall_64;schedule;sched_switch 1\n"
    );
    assert_eq!(
        common::report_ok(&["--folded", "--internal-frames"], &f),
        "app;do_syscall_64;__x64_sys_write;trace_event_raw_event_sys_enter;stack_trace_save;sys_enter 1\nother;do_syscall_64;schedule;sched_switch 1\n"
    );
    let json = common::report_ok(&["--json"], &f);
    let lines: Vec<&str> = json.lines().collect();
    assert_eq!(lines.len(), 4, "{json}");
    assert!(lines[1].starts_with(
        "{\"pid\":100,\"comm\":\"app\",\"kind\":\"kernel\",\"cookie\":null,\"status\":\"complete\""
    ));
    assert!(lines[1].contains(
        "\"kernel_stack\":[{\"addr\":\"0xffffffff81200010\",\"symbol\":\"__x64_sys_write\""
    ));
}

#[test]
fn a_trace_without_stacks_says_what_to_record() {
    let mut t = TraceBuilder::new(1);
    t.comm(100, "app").sys_enter(0, 1_000, 100, 1);
    let f = write("no-stacks.dat", t);
    assert_eq!(
        common::report_ok(&["--stacks"], &f),
        "# 1 events, 0 groups: 0 complete, 0 pending, 0 stack-lost, 0 orphan-stack; drops: none\n\
         # no stacks in this trace: record with --user-stacks (and -T for kernel stacks)\n"
    );
}

const HEAD: &str = "\
# 10 events, 3 groups: 2 complete, 0 pending, 1 stack-lost, 0 orphan-stack; drops: cpu1=9
";

const APP_STACK: &str = "  0.000003 [001] <user stack>
      => 555500001234 /nonexistent/app
      => 555500005678 /nonexistent/app
# 2 user frames of 2 unresolved: 2 mapped file not readable as ELF
";

const OTHER: &str = "
other-200 cookie=500000002 stack-lost 0.000001..0.000001 events=1 frames=0
  0.000001 [001] sys_enter: NR 0 (0, 1, 2, 3, 4, 5)
  <no user stack: stack lost: events were dropped before the stack arrived>
";

#[test]
fn event_filters_keep_the_matching_events_of_each_group() {
    let f = write("filters.dat", testdata::fixture());
    let exit_only = format!(
        "{HEAD}# shown: 1 groups, 1 events

app-100 cookie=300000001 complete 0.000001..0.000003 events=1 frames=2 (drops while open)
  0.000002 [000] sys_exit: NR 1 = 5
{APP_STACK}"
    );
    assert_eq!(
        common::report_ok(&["--stacks", "-F", "sys_exit"], &f),
        exit_only
    );
    assert_eq!(
        common::report_ok(&["--stacks", "--pid", "100", "-v", "-F", "sys_enter"], &f),
        exit_only
    );
    assert_eq!(
        common::report_ok(&["--stacks", "-F", "sys_enter: id == 0"], &f),
        format!("{HEAD}# shown: 1 groups, 1 events\n{OTHER}")
    );
    assert_eq!(
        common::report_ok(&["--stacks", "--cpu", "1"], &f),
        format!("{HEAD}# shown: 1 groups, 1 events\n{OTHER}")
    );
    assert_eq!(
        common::report_ok(&["--stacks", "--comm", "other"], &f),
        format!("{HEAD}# shown: 1 groups, 1 events\n{OTHER}")
    );
    assert_eq!(
        common::report_ok(&["--stacks", "--time", ",0.000001"], &f),
        format!(
            "{HEAD}# shown: 1 groups, 1 events

app-100 cookie=300000001 complete 0.000001..0.000003 events=1 frames=2 (drops while open)
  0.000001 [000] sys_enter: NR 1 (0, 1, 2, 3, 4, 5)
      => __x64_sys_write+0x10 (ffffffff81200010)
      => do_syscall_64+0x20 (ffffffff81100020)
{APP_STACK}"
        )
    );
    assert_eq!(
        common::report_ok(&["--folded", "--cpu", "0", "--time", "0.000002,"], &f),
        format!(
            "app;[app];[app];sys_exit 1\napp;{};sys_enter 1\n",
            sync_folded()
        )
    );
    let json = common::report_ok(&["--json", "--pid", "200,300"], &f);
    assert_eq!(json.lines().count(), 3, "{json}");
    assert!(json.lines().nth(1).unwrap().starts_with("{\"pid\":200,"));
    assert_eq!(
        common::report_ok(&["--stacks", "--comm", "nobody"], &f),
        format!("{HEAD}# shown: 0 groups, 0 events\n")
    );
}

/// The folded frame of the fixture's sync stack: libc `write` when libc is
/// readable.
fn sync_folded() -> &'static str {
    match testdata::libc_functions().iter().any(|f| f.0 == "write") {
        true => "write",
        false => "[app]",
    }
}

#[test]
fn bad_selections_are_one_line_errors() {
    let f = write("bad.dat", testdata::fixture());
    for (args, want) in [
        (
            &["--stacks", "-F", "nosuch_event"][..],
            "tracer-cli: bad filter \"nosuch_event\": no event found\n",
        ),
        (
            &["--stacks", "--time", "2"],
            "tracer-cli: bad time window \"2\": give START,END in seconds (either may be empty)\n",
        ),
        (
            &["--stacks", "--time", "2,1"],
            "tracer-cli: bad time window \"2,1\": START is after END\n",
        ),
        // --pid and --comm are trace-cmd's in the plain report; --time
        // and --internal-frames only mean something in the stitched views.
        (
            &["--time", "1,2"],
            "tracer-cli: --time and --internal-frames apply to --stacks, --json, --folded and --pprof\n",
        ),
        (
            &["--internal-frames"],
            "tracer-cli: --time and --internal-frames apply to --stacks, --json, --folded and --pprof\n",
        ),
    ] {
        let (out, err, ok) = common::report(args, &f);
        assert!(!ok, "{args:?}");
        assert_eq!(out, "", "{args:?}");
        assert_eq!(err, want, "{args:?}");
    }
}
