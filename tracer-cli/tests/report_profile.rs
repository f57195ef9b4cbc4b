//! `tracer-cli report --profile` (with `-G`, `-H`, `--by-comm`, filters)
//! and `-V` print what trace-cmd 3.1.6 prints on the same files, recorded
//! on this host in their own tracefs instances:
//!
//! * `top.dat`: `tracer-cli record -B` of scheduler, interrupt, syscall and
//!   page fault events with kernel stacks (`-T`), rewritten as the top
//!   buffer; `both.dat`: the same pages as top buffer and instance;
//! * `lost.dat`: `trace-cmd extract` of a 16 KiB instance buffer that
//!   overflowed (events lost on every CPU), rewritten as the top buffer.
//!
//! `--kallsyms FILE` is compared on `top.dat` with a symbol file naming
//! the first kernel frame of the trace.
//!
//! trace-cmd has no order for two things of the profile: events of a task
//! that tie under its sort (same event, same total time: e.g. two page
//! faults counted once each) and the groups of `--by-comm`. It prints them
//! in the order of a hash keyed by heap addresses, which differs from one
//! run of trace-cmd to the next. The comparison therefore puts each run of
//! tied events, and the groups, in one order on both sides ([`canonical`])
//! and compares the rest byte for byte.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Makes scheduler, interrupt, syscall and page fault activity.
const LOAD: &str =
    "for i in 1 2 3 4; do ls /usr >/dev/null; cat /proc/self/stat >/dev/null; sleep 0.02; done";

const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "sched/sched_process_exec",
    "irq",
    "raw_syscalls",
    "exceptions/page_fault_user",
];

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// `top.dat` and `both.dat`.
fn record_files(dir: &Path) -> [PathBuf; 2] {
    let inst = format!("rprof_{}", std::process::id());
    let raw = dir.join("inst.dat");
    let mut cmd = common::tracer_cli();
    cmd.args(["record", "-q", "-B", &inst, "-T", "-o"])
        .arg(&raw);
    for e in EVENTS {
        cmd.args(["-e", &e.replace('/', ":")]);
    }
    common::run_ok(cmd.args(["--", "sh", "-c", LOAD]));
    let (top, both) = (dir.join("top.dat"), dir.join("both.dat"));
    common::rewrite(&raw, &top, false);
    common::rewrite(&raw, &both, true);
    [top, both]
}

/// The address of the first kernel frame of the report of `file`.
fn first_kernel_frame(file: &Path) -> u64 {
    let o = common::run_ok(common::tracer_cli().arg("report").arg(file));
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("=> "))
        .unwrap_or_else(|| panic!("no kernel stack in {}", &text[..text.len().min(2000)]));
    let hex = line.rsplit('(').next().unwrap().trim_end_matches(')');
    u64::from_str_radix(hex, 16).unwrap()
}

/// An `  Event: ` block's place in trace-cmd's sort: `sched_switch` lines
/// never tie (sorted by state); `sched_wakeup` lines all tie (trace-cmd's
/// compare_events leaves them in hash order: two wakeups of one task with
/// the same total came out either way); others tie on event name and
/// total.
fn tie_key(line: &str) -> String {
    let rest = line.trim_start_matches("  Event: ");
    let name = rest.split(':').next().unwrap_or("");
    if name == "sched_switch" {
        return line.to_string();
    }
    if name == "sched_wakeup" {
        return name.to_string();
    }
    let total = rest
        .split(" Total: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .unwrap_or("0");
    format!("{name} {total}")
}

/// How the lines libtraceevent prints as `-V`'s plugins are unloaded start.
const LIBTRACEEVENT_AT_EXIT: &str = "removing override handler for event ";

/// The profile with each run of tied events sorted by text, and the
/// groups of `--by-comm` by name; also how many runs had to be sorted.
fn canonical(text: &str) -> (String, usize) {
    // Sections: a header (`\ntask: ..`, `\ngroup: ..`, `Global ..`, or
    // what comes first) and its event blocks.
    let mut sections: Vec<(String, Vec<(String, String)>)> = vec![(String::new(), Vec::new())];
    let mut lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect();
    // libtraceevent's messages at the end (`-V`: its plugins going away)
    // follow the whole profile, not the last event block, which a sort of
    // tied events may move.
    let tail = lines
        .iter()
        .rev()
        .take_while(|l| l.starts_with(LIBTRACEEVENT_AT_EXIT))
        .count();
    let trailer: Vec<&str> = lines.split_off(lines.len() - tail);
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let next = lines.get(i + 1).copied().unwrap_or("");
        if l.is_empty() && (next.starts_with("task: ") || next.starts_with("group: ")) {
            sections.push((format!("\n{next}\n"), Vec::new()));
            i += 2;
            continue;
        }
        let (head, blocks) = sections.last_mut().expect("one");
        if l.starts_with("Global ") {
            sections.push((format!("{l}\n"), Vec::new()));
        } else if l.starts_with("  Event: ") {
            blocks.push((tie_key(l), format!("{l}\n")));
        } else if let Some(b) = blocks.last_mut() {
            b.1.push_str(l);
            b.1.push('\n');
        } else {
            head.push_str(l);
            head.push('\n');
        }
        i += 1;
    }
    let mut sorted_runs = 0;
    let mut parts: Vec<(String, String)> = Vec::new();
    for (head, blocks) in sections {
        let mut body = String::new();
        for run in blocks.chunk_by(|a, b| a.0 == b.0) {
            let mut texts: Vec<&str> = run.iter().map(|b| b.1.as_str()).collect();
            if run.len() > 1 {
                sorted_runs += 1;
            }
            texts.sort_unstable();
            body.extend(texts);
        }
        parts.push((head, body));
    }
    for run in
        parts.chunk_by_mut(|a, b| a.0.starts_with("\ngroup: ") == b.0.starts_with("\ngroup: "))
    {
        if run[0].0.starts_with("\ngroup: ") {
            run.sort();
        }
    }
    let mut text: String = parts.into_iter().map(|(h, b)| h + &b).collect();
    for l in trailer {
        text.push_str(l);
        text.push('\n');
    }
    (text, sorted_runs)
}

/// Runs both on `file` with `opts`; the difference, if any.
fn compare_profile(file: &Path, opts: &[&str]) -> Option<String> {
    let theirs = run(Command::new("trace-cmd").arg("report").args(opts).arg(file));
    let ours = run(common::tracer_cli().arg("report").args(opts).arg(file));
    if theirs.status.code() != ours.status.code() {
        return Some(format!(
            "exit {:?} vs {:?}: {}",
            theirs.status,
            ours.status,
            String::from_utf8_lossy(&ours.stderr)
        ));
    }
    let (t, runs) = canonical(&String::from_utf8_lossy(&theirs.stdout));
    let (o, _) = canonical(&String::from_utf8_lossy(&ours.stdout));
    if runs > 0 {
        eprintln!("{} {opts:?}: {runs} runs of tied events", file.display());
    }
    if t == o {
        return None;
    }
    Some(common::first_difference(&t, &o))
}

const PROFILE_FORMS: &[&[&str]] = &[
    &["--profile"],
    &["--profile", "-G"],
    &["--profile", "--by-comm"],
    &["--profile", "-G", "--by-comm"],
    &["--profile", "-F", "sched_switch"],
    &["--profile", "-F", "sched_switch", "-F", "kernel_stack"],
    &["--profile", "--cpu", "0"],
    &["--profile", "-I"],
    &["--profile", "-S"],
    &[
        "--profile",
        "-H",
        "sched:sched_wakeup,pid/sched:sched_switch,next_pid",
    ],
    &[
        "--profile",
        "-H",
        "irq_handler_entry,irq/irq_handler_exit,irq,P",
    ],
    &[
        "--profile",
        "--by-comm",
        "-H",
        "raw_syscalls:sys_enter,id/raw_syscalls:sys_exit,id,G",
    ],
];

/// `-V` at each level that changes the output, and with the plugin options.
const VERBOSE_FORMS: &[&[&str]] = &[
    &["-V"],
    &["-V3"],
    &["-V4"],
    &["-V6"],
    &["--verbose=info"],
    &["--verbose=err"],
    &["--verbose=9"],
    &["--verbose=info2"],
    &["-V", "-N"],
    &["-V", "-L"],
    &["-V", "-t"],
    &["-V", "--profile"],
];

#[test]
#[ignore = "needs root and tracefs"]
fn profile_and_verbose_match_trace_cmd() {
    common::host(true);
    let dir = tempfile::tempdir().unwrap();
    let [top, both] = record_files(dir.path());
    let lost_raw = common::overflowed_extract(dir.path(), "rprof_lost", EVENTS, false, LOAD);
    let lost = dir.path().join("lost_top.dat");
    common::rewrite(&lost_raw, &lost, false);
    let mut failures = Vec::new();
    let mut same = 0;
    for file in [&top, &lost] {
        for opts in PROFILE_FORMS.iter().chain(VERBOSE_FORMS) {
            match compare_profile(file, opts) {
                None => same += 1,
                Some(why) => failures.push(format!("{} {opts:?}: {why}", file.display())),
            }
        }
    }
    // --kallsyms: a symbol file added to the trace's (it renames the
    // frames and functions at and above its addresses).
    let ks = dir.path().join("extra.kallsyms");
    let first_frame = first_kernel_frame(&top);
    std::fs::write(
        &ks,
        format!("{first_frame:016x} T ustack_test_symbol\nffffffff81000100 t other_test [m]\n"),
    )
    .unwrap();
    let ks = ks.to_str().unwrap();
    for opts in [
        &["--kallsyms", ks][..],
        &["--kallsyms", ks, "-f"],
        &["--kallsyms", ks, "--profile"],
    ] {
        match compare_profile(&top, opts) {
            None => same += 1,
            Some(why) => failures.push(format!("{} {opts:?}: {why}", top.display())),
        }
    }
    // trace-cmd profiles the top buffer only: a record of the instance
    // ends it (exit 255) after `cpus=2`.
    match common::compare(&[both.to_str().unwrap()], &["--profile"]) {
        None => same += 1,
        Some(why) => failures.push(format!("{} --profile: {why}", both.display())),
    }
    common::assert_forms_identical(same, &failures);
}

/// The ties trace-cmd orders by heap address are the only reordering:
/// on a profile with two tied events the canonical text sorts that run
/// and nothing else.
#[test]
fn canonical_sorts_only_tied_events_and_groups() {
    let lines = |l: &[&str]| l.iter().map(|l| format!("{l}\n")).collect::<String>();
    let text = lines(&[
        "cpus=2",
        "",
        "group: b",
        "  Event: x:0x2 (1)",
        "  Event: x:0x1 (1)",
        "  Event: y:0x9 (2) Total: 5 Avg: 2",
        "",
        "group: a",
        "  Event: sched_switch:S (1)",
        "",
        "task: t-1",
        "  Event: x:0x3 (1) Total: 4 Avg: 4",
        "  Event: x:0x1 (1) Total: 3 Avg: 3",
    ]);
    let (c, runs) = canonical(&text);
    let want = lines(&[
        "cpus=2",
        "",
        "group: a",
        "  Event: sched_switch:S (1)",
        "",
        "group: b",
        "  Event: x:0x1 (1)",
        "  Event: x:0x2 (1)",
        "  Event: y:0x9 (2) Total: 5 Avg: 2",
        "",
        "task: t-1",
        "  Event: x:0x3 (1) Total: 4 Avg: 4",
        "  Event: x:0x1 (1) Total: 3 Avg: 3",
    ]);
    assert_eq!(c, want);
    assert_eq!(runs, 1);
    // `-V`'s last lines stay last, whichever tied event came last (a CI
    // run had them follow the other one of a tied pair).
    let exit = [
        "removing override handler for event (1) ftrace:function. Going back to default handler.",
    ];
    let tied = |a: &str, b: &str| {
        let mut l = vec!["task: t-1", a, b];
        l.extend(exit);
        canonical(&lines(&l)).0
    };
    let (one, two) = (
        "  Event: x:0x3 (1) Total: 4 Avg: 4",
        "  Event: x:0x1 (1) Total: 4 Avg: 4",
    );
    assert_eq!(tied(one, two), tied(two, one));
    assert!(tied(one, two).ends_with(&format!("{}\n", exit[0])));
}

/// `-H` is printed as trace-cmd reads it, and a malformed one is refused
/// (trace-cmd 3.1.6 crashes on it).
#[test]
fn hooks_are_echoed_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("none.dat");
    let o = run(common::tracer_cli()
        .args(["report", "--profile", "-H", "a,b/sys:c,d,p", "-i"])
        .arg(&f));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "start (null):a:b ((null)) end sys:c:d (p)\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = run(common::tracer_cli()
        .args(["report", "--profile", "-H", "a,b", "-i"])
        .arg(&f));
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("invalid hook format"), "{err}");
}

/// A made-up trace where every number is known: syscalls of two tasks on
/// two CPUs with kernel stacks, one pair cut by lost events. The profile
/// is the one trace-cmd prints (no ties here, so no reordering), and its
/// numbers are the ones worked out by hand.
#[test]
fn synthetic_profile_matches_trace_cmd_and_the_arithmetic() {
    if Command::new("trace-cmd").arg("-h").output().is_err() {
        return ustack_testdata::skip_unless_ci("needs trace-cmd");
    }
    let (a, b, c) = (
        0xffff_ffff_8100_0010,
        0xffff_ffff_8100_0020,
        0xffff_ffff_8100_0030,
    );
    let mut t = ustack_testdata::TraceBuilder::new(2);
    t.comm(100, "app").comm(200, "other");
    // app: write (nr 1) from 1 us to 4 us, its stack [a, b]; again from
    // 10 us to 12 us with stack [a, c].
    t.sys_enter(0, 1_000, 100, 1)
        .kernel_stack(0, 1_100, 100, &[a, b])
        .sys_exit(0, 4_000, 100, 1, 5)
        .sys_enter(0, 10_000, 100, 1)
        .kernel_stack(0, 10_100, 100, &[a, c])
        .sys_exit(0, 12_000, 100, 1, 5);
    // other on CPU 1: read (nr 0) from 2 us, then events are lost: the
    // start is dropped and its exit at 7 us ends nothing; then 8..9 us.
    t.sys_enter(1, 2_000, 200, 0)
        .lost(1, Some(3))
        .sys_exit(1, 7_000, 200, 0, 1)
        .sys_enter(1, 8_000, 200, 0)
        .sys_exit(1, 9_000, 200, 0, 1);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("syn.dat");
    t.write(&f).unwrap();
    for opts in [
        &["--profile"][..],
        &["--profile", "--by-comm"],
        &["--profile", "-G"],
    ] {
        assert_eq!(compare_profile(&f, opts), None, "{opts:?}");
    }
    let out = common::report_ok(&["--profile"], &f);
    let app = out
        .split("\ntask: ")
        .find(|s| s.starts_with("app-100"))
        .unwrap_or_else(|| panic!("no app in {out}"));
    let first = app.lines().nth(1).unwrap();
    assert_eq!(
        first,
        "  Event: sys_enter:1 (2) Total: 5000 Avg: 2500 Max: 3000(ts:0.000004) Min:2000(ts:0.000012)"
    );
    let other = out
        .split("\ntask: ")
        .find(|s| s.starts_with("other-200"))
        .unwrap_or_else(|| panic!("no other in {out}"));
    assert!(
        other.contains("  Event: sys_enter:0 (1) Total: 1000 Avg: 1000"),
        "{other}"
    );
}
