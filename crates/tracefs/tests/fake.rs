//! Tests against a fake tracefs directory (plain files): parsing, event
//! resolution, the guard's save/restore bookkeeping and error messages.

use std::fs;
use std::path::Path;
use ustack_tracefs::{EventId, EventSpec, Guard, Tracefs};

fn put(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

fn fake() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    put(r, "trace", "");
    put(
        r,
        "events/header_page",
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n",
    );
    put(r, "events/header_event", "# compressed entry header\n");
    for (sys, ev) in [
        ("sched", "sched_switch"),
        ("sched", "sched_wakeup"),
        ("syscalls", "sys_enter_read"),
        ("syscalls", "sys_exit_read"),
        ("ftrace", "kernel_stack"),
    ] {
        put(r, &format!("events/{sys}/{ev}/enable"), "0\n");
        put(r, &format!("events/{sys}/{ev}/filter"), "none\n");
        put(
            r,
            &format!("events/{sys}/{ev}/format"),
            &format!("name: {ev}\nID: 1\n"),
        );
    }
    put(r, "options/stacktrace", "0\n");
    put(r, "options/userstacktrace", "1\n");
    put(r, "buffer_size_kb", "7 (expanded: 1408)\n");
    put(r, "trace_clock", "[local] global counter\n");
    put(r, "tracing_on", "1\n");
    put(r, "current_tracer", "nop\n");
    put(r, "set_event_pid", "");
    put(r, "per_cpu/cpu0/stats", "entries: 5\noverrun: 2\ncommit overrun: 0\nbytes: 100\ndropped events: 0\nread events: 9\n");
    put(r, "per_cpu/cpu1/stats", "entries: 0\n");
    fs::create_dir_all(r.join("instances")).unwrap();
    dir
}

fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel)).unwrap()
}

#[test]
fn resolves_event_specs() {
    let dir = fake();
    let fs = Tracefs::at(dir.path()).unwrap();
    let names = |s: &str| -> Vec<String> {
        fs.resolve(&EventSpec::parse(s).unwrap())
            .unwrap()
            .iter()
            .map(|e| e.to_string())
            .collect()
    };
    assert_eq!(names("sched"), ["sched:sched_switch", "sched:sched_wakeup"]);
    assert_eq!(names("sched_switch"), ["sched:sched_switch"]);
    assert_eq!(
        names("syscalls:sys_e*_read"),
        ["syscalls:sys_enter_read", "syscalls:sys_exit_read"]
    );
    assert_eq!(names("all").len(), 5);
    // Exact names (found without listing every system) and the same
    // answers as the full listing where they are not what they seem.
    assert_eq!(names("sched:sched_wakeup"), ["sched:sched_wakeup"]);
    assert_eq!(names("sched/sched_switch"), ["sched:sched_switch"]);
    assert_eq!(
        names("sched:*"),
        ["sched:sched_switch", "sched:sched_wakeup"]
    );
    for file_not_event in ["sched_switch:enable", "sched:..", "sched:."] {
        assert!(
            fs.resolve(&EventSpec::parse(file_not_event).unwrap())
                .is_err(),
            "{file_not_event}"
        );
    }
    let err = fs
        .resolve(&EventSpec::parse("sched:nope").unwrap())
        .unwrap_err();
    assert_eq!(err.to_string(), "tracefs: no such event: sched:nope");
}

#[test]
fn reads_settings() {
    let dir = fake();
    let fs = Tracefs::at(dir.path()).unwrap();
    let top = fs.top();
    assert_eq!(top.buffer_size_kb().unwrap(), Some(1408));
    assert_eq!(top.trace_clock().unwrap().0, "local");
    assert!(top.tracing_on().unwrap());
    assert!(top.option("userstacktrace").unwrap());
    assert!(!top.option("stacktrace").unwrap());
    assert_eq!(top.cpus().unwrap(), vec![0, 1]);
    assert_eq!(top.cpu_count().unwrap(), 2);
    let st = top.cpu_stats(0).unwrap();
    assert_eq!(
        (st.entries, st.overrun, st.read_events),
        (Some(5), Some(2), Some(9))
    );
    let err = top.option("userstacktrace_delay").unwrap_err();
    assert_eq!(
        err.to_string(),
        "tracefs: no such option: userstacktrace_delay"
    );
    let err = top.cpu_stats(7).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tracefs: cannot read per_cpu/cpu7/stats: No such file or directory"
    );
}

#[test]
fn guard_restores_every_setting_once() {
    let dir = fake();
    let r = dir.path();
    let fs = Tracefs::at(r).unwrap();
    let top = fs.top();
    let sw = EventId {
        system: "sched".into(),
        name: "sched_switch".into(),
    };
    {
        let g = Guard::new();
        g.set_option(&top, "stacktrace", true).unwrap();
        g.set_option(&top, "userstacktrace", true).unwrap(); // unchanged: nothing saved
        g.set_event_enabled(&top, &sw, true).unwrap();
        g.set_event_filter(&top, &sw, Some("prev_pid == 1"))
            .unwrap();
        g.set_event_filter(&top, &sw, Some("prev_pid == 2"))
            .unwrap(); // second change keeps the first old value
        g.set_buffer_size_kb(&top, 64).unwrap();
        g.set_trace_clock(&top, "global").unwrap();
        g.set_tracing_on(&top, false).unwrap();
        g.set_event_pids(&top, &[10, 20]).unwrap();
        assert_eq!(read(r, "options/stacktrace"), "1");
        assert_eq!(read(r, "events/sched/sched_switch/filter"), "prev_pid == 2");
        assert_eq!(read(r, "buffer_size_kb"), "64");
        assert_eq!(read(r, "set_event_pid"), "10 20");
        assert_eq!(g.restorer().pending(), 7);
    }
    assert_eq!(read(r, "options/stacktrace"), "0");
    assert_eq!(read(r, "options/userstacktrace"), "1\n");
    assert_eq!(read(r, "events/sched/sched_switch/enable"), "0");
    assert_eq!(read(r, "events/sched/sched_switch/filter"), "0");
    assert_eq!(read(r, "buffer_size_kb"), "1408");
    assert_eq!(read(r, "trace_clock"), "local");
    assert_eq!(read(r, "tracing_on"), "1");
    assert_eq!(read(r, "set_event_pid"), "");
}

#[test]
fn guard_forget_keeps_changes_and_instances() {
    let dir = fake();
    let r = dir.path();
    let fs = Tracefs::at(r).unwrap();
    let g = Guard::new();
    let inst = g.adopt_instance(fs.create_instance("keepme").unwrap());
    fs::create_dir_all(inst.dir().join("options")).unwrap();
    fs::write(inst.dir().join("options/stacktrace"), "0").unwrap();
    g.set_option(&inst, "stacktrace", true).unwrap();
    g.forget();
    assert_eq!(read(r, "instances/keepme/options/stacktrace"), "1");
}

#[test]
fn owned_instance_is_removed() {
    let dir = fake();
    let fs = Tracefs::at(dir.path()).unwrap();
    {
        let i = fs.create_instance("tmp1").unwrap();
        assert_eq!(i.name(), Some("tmp1"));
        assert_eq!(fs.instances().unwrap(), ["tmp1"]);
        let err = fs.create_instance("tmp1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "tracefs: cannot create instances/tmp1: File exists"
        );
    }
    assert!(fs.instances().unwrap().is_empty());
    assert!(fs.create_instance("../x").is_err());
    assert_eq!(
        fs.instance("nope").unwrap_err().to_string(),
        "tracefs: no such instance: nope"
    );
}

#[test]
fn not_tracefs_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = Tracefs::at(dir.path()).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "tracefs: {} is not a tracefs (no events/ directory)",
            dir.path().display()
        )
    );
}

#[test]
fn listings_keep_readdir_order_and_follow_directory_symlinks() {
    let dir = fake();
    let r = dir.path();
    std::os::unix::fs::symlink(r.join("events/sched"), r.join("events/linked")).unwrap();
    let fs = Tracefs::at(r).unwrap();
    let top = fs.top();
    let readdir = |rel: &str, dirs: bool| -> Vec<String> {
        fs::read_dir(r.join(rel))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| !dirs || e.path().is_dir())
            .map(|e| e.file_name().into_string().unwrap())
            .collect()
    };
    assert_eq!(top.entries("options").unwrap(), readdir("options", false));
    let systems = top.subdirs("events").unwrap();
    assert_eq!(systems, readdir("events", true));
    assert!(systems.iter().any(|s| s == "linked"), "{systems:?}");
    assert!(!systems.iter().any(|s| s == "header_page"), "{systems:?}");
    assert!(top.is_dir("events/sched") && !top.is_dir("events/header_page"));
    let e = top.subdirs("events/nosuch").unwrap_err().to_string();
    assert!(e.starts_with("tracefs: cannot list events/nosuch: "), "{e}");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut top.open_read("tracing_on").unwrap(), &mut text).unwrap();
    assert_eq!(text, "1\n");
    let e = top.open_read("nosuch").unwrap_err().to_string();
    assert!(e.starts_with("tracefs: cannot open nosuch: "), "{e}");
}
