//! `report --stacks --json` on deferred stacks with stack snapshots, end
//! to end in user space: a program built -O2 without frame pointers runs
//! under ptrace (standing in for the kernel, see `ustack_testdata::truth`);
//! each marked system call becomes the records the kernel patch writes
//! (event, cookie, `user_unwind_stack_snapshot`) in a
//! trace.dat with the process's maps. Every frame tracer-cli prints is
//! checked against the call chain the program recorded with glibc's
//! backtrace().

mod common;

use serde_json::Value;
use ustack_testdata::truth::{build_truth_c, function_of, run_traced, Capture};
use ustack_testdata::TraceBuilder;

/// Writes the captures as a trace: per capture a sys_enter, its cookie,
/// the snapshot and the kernel's frame-pointer walk.
fn trace_of(caps: &[Capture], path: &std::path::Path, snapshots: bool) {
    trace_of_kernel(caps, path, snapshots, None);
}

/// [`trace_of`], recorded on the kernel whose uname is `uname`.
fn trace_of_kernel(caps: &[Capture], path: &std::path::Path, snapshots: bool, uname: Option<&str>) {
    let mut t = TraceBuilder::new(1);
    t.page_size(65536);
    if let Some(u) = uname {
        t.uname(u);
    }
    let maps = &caps[0].maps;
    let threads: Vec<u32> = caps.iter().map(|c| c.tid as u32).collect();
    t.procmap(
        maps.pid,
        &maps.comm,
        &maps
            .maps
            .iter()
            .map(|m| (m.start, m.end, m.path.as_str()))
            .collect::<Vec<_>>(),
    );
    t.threads(maps.pid, &threads);
    for (i, c) in caps.iter().enumerate() {
        let ts = 1_000_000 + 1000 * i as u64;
        let cookie = 0x1_0000_0000 + i as u64;
        t.comm(c.tid, "truth");
        t.sys_enter(0, ts, c.tid, 1);
        t.cookie(0, ts + 1, c.tid, cookie);
        assert_eq!(
            c.kernel.first(),
            Some(&c.ip),
            "the kernel's walk starts at ip"
        );
        if snapshots {
            t.stack_snapshot(0, ts + 3, c.tid, cookie, (c.sp, c.bp), &c.kernel, &c.stack);
        } else {
            t.unwind_stack(0, ts + 3, c.tid, cookie, &c.kernel);
        }
    }
    t.write(path).unwrap();
}

fn groups(path: &std::path::Path) -> Vec<Value> {
    let out = common::report_ok(&["--stacks", "--json"], path);
    let v: Value = serde_json::from_str(&out).expect("report --json is JSON");
    v["groups"].as_array().expect("groups").clone()
}

/// truth.c built -O2 without frame pointers, run as `truth CASE` under
/// the tracer with snapshots of `snap` bytes; the binary is in the
/// returned directory.
fn traced_o2(case: &str, snap: usize) -> (tempfile::TempDir, Vec<Capture>) {
    let dir = tempfile::tempdir().unwrap();
    let bin = build_truth_c(dir.path(), &["-fomit-frame-pointer"]);
    let caps = run_traced(&[&bin, case], snap);
    (dir, caps)
}

fn addr(f: &Value) -> u64 {
    u64::from_str_radix(f["addr"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn unwound_stacks_of_an_o2_program_are_exact_in_the_report() {
    let (dir, caps) = traced_o2("recurse", 60000);
    assert_eq!(caps.len(), 15);
    let file = dir.path().join("snap.dat");
    trace_of(&caps, &file, true);
    let gs = groups(&file);
    assert_eq!(gs.len(), caps.len());
    let (mut exact, mut delivered) = (0, 0);
    for (g, c) in gs.iter().zip(&caps) {
        let frames = g["user_stack"]["frames"].as_array().unwrap();
        assert!(g["user_stack"].get("cut").is_none(), "complete: {g}");
        assert_eq!(frames.len(), c.truth.len() + 1, "{g}");
        assert_eq!(frames[0]["via"], "ip");
        assert!(frames[1..].iter().all(|f| f["via"] == "cfi"));
        // frame 1 is in the function that called backtrace(), named as
        // the ELF symbol table names it; the rest is its chain.
        let (_, _, name) = function_of(&c.maps, c.truth[0], true).unwrap();
        assert_eq!(
            frames[1]["symbol"].as_str().unwrap().split('+').next(),
            Some("work")
        );
        assert_eq!(name, "work");
        for (i, f) in frames.iter().enumerate().skip(2) {
            assert_eq!(addr(f), c.truth[i - 1], "frame {i} of {g}");
            exact += 1;
        }
        exact += 2;
        delivered += frames.len();
    }
    eprintln!("report --json: {exact} exact / {delivered} delivered frames");

    // Without the snapshots, the same trace gives the kernel's walk: the
    // frame-pointer chain stops at once in code without frame pointers.
    let plain = dir.path().join("plain.dat");
    trace_of(&caps, &plain, false);
    for g in groups(&plain) {
        let frames = g["user_stack"]["frames"].as_array().unwrap();
        assert!(frames.len() < 3, "{g}");
        assert!(frames.iter().all(|f| f.get("via").is_none()));
    }
}

#[test]
fn a_cut_stack_is_marked_in_stacks_and_json() {
    let (dir, caps) = traced_o2("deep", 2048);
    let file = dir.path().join("cut.dat");
    trace_of(&caps, &file, true);
    for (g, c) in groups(&file).iter().zip(&caps) {
        let us = &g["user_stack"];
        let n = us["frames"].as_array().unwrap().len();
        assert_eq!(us["cut"]["at"], n, "{g}");
        assert_eq!(us["cut"]["reason"], "stack snapshot exhausted");
        assert!(n > 10 && n < c.truth.len(), "{n}");
    }
    let text = common::report_ok(&["--stacks"], &file);
    assert_eq!(
        text.matches("      -- stack cut: stack snapshot exhausted --")
            .count(),
        caps.len(),
        "{text}"
    );
}

/// A system call made by the vDSO (clock_gettime of a clock it has no
/// fast path for), in a trace of another kernel, as a guest's trace read
/// on the host is: without that kernel's vDSO the stack is cut right
/// after the vDSO frame; with it installed under `--symfs` (where `make
/// vdso_install` puts it) the vDSO frame is named and the rest of the
/// stack is exact.
#[test]
fn vdso_frames_of_another_kernel_come_from_its_vdso_under_symfs() {
    let (dir, caps) = traced_o2("vdso", 60000);
    assert_eq!(caps.len(), 2);
    let file = dir.path().join("vdso.dat");
    let release = "0.0.0-ustack-vdso-test";
    let uname = format!("Linux guest {release} #1 SMP PREEMPT_DYNAMIC x86_64");
    trace_of_kernel(&caps, &file, true, Some(&uname));
    for g in groups(&file) {
        let us = &g["user_stack"];
        assert_eq!(us["cut"]["at"], 1, "{g}");
        assert_eq!(us["frames"][0]["object"], "[vdso]", "{g}");
    }

    let root = dir.path().join("symfs");
    let installed = root.join(format!("lib/modules/{release}/vdso"));
    std::fs::create_dir_all(&installed).unwrap();
    let image = ustack_symbolize::procfs::own_vdso().expect("this process's vDSO");
    std::fs::write(installed.join("vdso64.so"), image).unwrap();
    let out = common::report_ok(
        &["--stacks", "--json", "--symfs", root.to_str().unwrap()],
        &file,
    );
    let v: Value = serde_json::from_str(&out).expect("report --json is JSON");
    let gs = v["groups"].as_array().expect("groups");
    assert_eq!(gs.len(), caps.len());
    for (g, c) in gs.iter().zip(&caps) {
        let us = &g["user_stack"];
        assert!(us.get("cut").is_none(), "complete: {g}");
        let frames = us["frames"].as_array().unwrap();
        assert_eq!(frames[0]["object"], "[vdso]", "{g}");
        let name = frames[0]["symbol"]
            .as_str()
            .expect("the vDSO frame is named");
        assert!(name.contains("clock_gettime"), "{name}");
        eprintln!("vDSO frame {name}, then {} frames", frames.len() - 1);
        assert!(frames[1..].iter().all(|f| f["via"] == "cfi"), "{g}");
        let k = frames
            .iter()
            .position(|f| {
                f["symbol"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("work_vdso"))
            })
            .expect("work_vdso in the stack");
        let rest: Vec<u64> = frames[k + 1..].iter().map(addr).collect();
        assert_eq!(rest, c.truth[1..], "{g}");
    }
}
