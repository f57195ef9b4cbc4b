//! `tracer-cli list` and `tracer-cli stat` print what `trace-cmd list` and
//! `trace-cmd stat` print on this host, byte for byte.
//!
//! The stat tests set up their own instance (events, a filter, a trigger,
//! a buffer size, a clock, a CPU mask, an event pid, an option) and remove
//! it afterwards; the top instance is only read.

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Output};
use ustack_testdata::TestInstance;

fn output(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Runs `trace-cmd ARGS` and `tracer-cli ARGS` and returns both outputs
/// (stdout, with the exit status checked).
fn both(args: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let theirs = output(Command::new("trace-cmd").args(args));
    let ours = output(common::tracer_cli().args(args));
    assert!(theirs.status.success(), "trace-cmd {args:?}: {theirs:?}");
    assert!(ours.status.success(), "tracer-cli {args:?}: {ours:?}");
    (theirs.stdout, ours.stdout)
}

fn assert_same(args: &[&str], theirs: &[u8], ours: &[u8]) {
    if theirs == ours {
        return;
    }
    let (t, o) = (
        String::from_utf8_lossy(theirs),
        String::from_utf8_lossy(ours),
    );
    let at = t.lines().zip(o.lines()).position(|(a, b)| a != b);
    panic!(
        "{args:?}: outputs differ at line {}:\ntrace-cmd: {:?}\nours:      {:?}\n({} vs {} lines)",
        at.map_or(0, |i| i + 1),
        at.and_then(|i| t.lines().nth(i)).unwrap_or(""),
        at.and_then(|i| o.lines().nth(i)).unwrap_or(""),
        t.lines().count(),
        o.lines().count()
    );
}

/// The instances that exist now (other users of the machine create and
/// remove theirs at any time).
fn instances() -> BTreeSet<String> {
    ustack_tracefs::Tracefs::find()
        .and_then(|fs| fs.instances())
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Compares a form whose output lists the instances: a run during which
/// another user of the machine created or removed one proves nothing and
/// is done again (at most 10 times); every other difference fails.
fn assert_same_listing_instances(args: &[&str]) {
    for _ in 0..10 {
        let before = instances();
        let (t, o) = both(args);
        if instances() != before {
            continue;
        }
        return assert_same(args, &t, &o);
    }
    panic!("{args:?}: the instances kept changing");
}

/// Replaces the linked zstd version of the compression list (ours links
/// its own libzstd, trace-cmd the system's) by `V`.
fn mask_zstd_version(out: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(out);
    let mut s = String::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with("\tzstd, ") {
            s.push_str("\tzstd, V\n");
        } else {
            s.push_str(line);
        }
    }
    s.into_bytes()
}

/// Every `list` form, against the host's tracefs (read only).
#[test]
#[ignore = "needs root and tracefs"]
fn list_forms_match_trace_cmd() {
    common::host(true);
    let forms: &[&[&str]] = &[
        &["list", "-e"],
        &["list", "-e", "^irq:"],
        &["list", "-e", "irq"],
        &["list", "-e", "sched:sched_s"],
        &["list", "-e", "s.*:.*wake"],
        &["list", "-e", "sched\\|timer:"],
        &["list", "-e", "sched|irq"],
        &["list", "-e", "."],
        &["list", "-e", "sched_switch", "-F"],
        &["list", "-e", "sched_switch", "-F", "--full"],
        &["list", "-e", "sched:", "-l"],
        &["list", "-e", "sched_wakeup", "-R"],
        &["list", "-o"],
        &["list", "-t"],
        &["list", "-s"],
        &["list", "-C"],
        &["list", "-P"],
        &["list", "-P", "-o", "-t", "-e", "sched:sched_s"],
    ];
    for args in forms {
        let (t, o) = both(args);
        assert_same(args, &t, &o);
    }
    assert_same_listing_instances(&["list", "-B"]);
    // The whole listing and -c name the zstd each tool links.
    for args in [&["list"][..], &["list", "-l"], &["list", "-c"]] {
        let (t, o) = both(args);
        assert_same(args, &mask_zstd_version(&t), &mask_zstd_version(&o));
    }
}

#[test]
#[ignore = "needs root and tracefs"]
fn stat_forms_match_trace_cmd() {
    common::host(true);
    let Some(busy) = TestInstance::create("pstat_busy") else {
        return;
    };
    busy.write("events/sched/sched_switch/enable", "1");
    busy.write("events/irq/enable", "1");
    busy.write("events/sched/sched_switch/filter", "prev_pid > 0");
    busy.write("events/sched/sched_wakeup/trigger", "traceoff");
    busy.write("buffer_size_kb", "2048");
    busy.write("trace_clock", "global");
    busy.write("tracing_cpumask", "1");
    busy.write("set_event_pid", &std::process::id().to_string());
    busy.write("options/stacktrace", "1");
    busy.write("tracing_on", "0");
    let Some(per_cpu) = TestInstance::create("pstat_percpu") else {
        return;
    };
    per_cpu.write("per_cpu/cpu0/buffer_size_kb", "256");
    per_cpu.write("events/enable", "1");
    let Some(quiet) = TestInstance::create("pstat_quiet") else {
        return;
    };
    for args in [
        vec!["stat", "-B", busy.name()],
        vec!["stat", "-B", busy.name(), "-o"],
        vec!["stat", "-B", per_cpu.name()],
        vec!["stat", "-B", quiet.name()],
        vec!["stat", "-B", busy.name(), "-B", quiet.name()],
    ] {
        let (t, o) = both(&args);
        assert_same(&args, &t, &o);
    }
    assert_same_listing_instances(&["stat"]);
    assert_same_listing_instances(&["stat", "-o"]);
    assert_same_listing_instances(&["stat", "-B", busy.name(), "-t"]);
}
