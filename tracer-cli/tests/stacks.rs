//! `tracer-cli report --stacks|--folded|--json` on the synthetic fixture of
//! `ustack_testdata` (no root needed).

mod common;

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tracer-cli-stacks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    ustack_testdata::fixture().write(&p).unwrap();
    p
}

/// `report`'s stdout, with the `file:line` of libc frames dropped: libc has
/// one only where its separate debug file is installed.
fn report(args: &[&str], file: &Path) -> (String, String, bool) {
    let (out, err, ok) = common::report(args, file);
    let libc_at = "/libc.so.6 at ";
    let out: String = out
        .split_inclusive('\n')
        .map(|l| match l.find(libc_at) {
            Some(i) if !args.contains(&"--json") => format!("{}\n", &l[..i + 10]),
            _ => l.to_string(),
        })
        .collect();
    (out, err, ok)
}

/// The sync group's single frame: libc `write+0x4` when libc is readable;
/// then the unresolved-frames line of the whole fixture.
fn sync_frame() -> (String, String, String) {
    match ustack_testdata::libc_functions()
        .iter()
        .find(|f| f.0 == "write")
    {
        Some(w) => {
            let a = ustack_testdata::DEMO_LIBC_BASE + w.1 + 4;
            (
                format!("write+0x4 ({a:x}) {}", ustack_testdata::DEMO_LIBC),
                "write".to_string(),
                "2 user frames of 3 unresolved: 2 mapped file not readable as ELF".into(),
            )
        }
        None => (
            "555500000042 /nonexistent/app".into(),
            "[app]".into(),
            "3 user frames of 3 unresolved: 3 mapped file not readable as ELF".into(),
        ),
    }
}

#[test]
fn stacks_text() {
    let f = fixture("text.dat");
    let (out, err, ok) = report(&["--stacks"], &f);
    assert!(ok, "{err}");
    let expected = format!(
        "\
# 10 events, 3 groups: 2 complete, 0 pending, 1 stack-lost, 0 orphan-stack; drops: cpu1=9

app-100 cookie=300000001 complete 0.000001..0.000003 events=2 frames=2 (drops while open)
  0.000001 [000] sys_enter: NR 1 (0, 1, 2, 3, 4, 5)
      => __x64_sys_write+0x10 (ffffffff81200010)
      => do_syscall_64+0x20 (ffffffff81100020)
  0.000002 [000] sys_exit: NR 1 = 5
  0.000003 [001] <user stack>
      => 555500001234 /nonexistent/app
      => 555500005678 /nonexistent/app

other-200 cookie=500000002 stack-lost 0.000001..0.000001 events=1 frames=0
  0.000001 [001] sys_enter: NR 0 (0, 1, 2, 3, 4, 5)
  <no user stack: stack lost: events were dropped before the stack arrived>

app-100 sync complete 0.000004..0.000004 events=1 frames=1
  0.000004 [000] sys_enter: NR 3 (0, 1, 2, 3, 4, 5)
  0.000004 [000] <user stack>
      => {}
# {}
",
        sync_frame().0,
        sync_frame().2
    );
    assert_eq!(out, expected);
}

#[test]
fn stacks_folded() {
    let f = fixture("folded.dat");
    let (out, err, ok) = report(&["--folded"], &f);
    assert!(ok, "{err}");
    let mut want = vec![
        "app;[app];[app];do_syscall_64;__x64_sys_write;sys_enter 1".to_string(),
        "app;[app];[app];sys_exit 1".to_string(),
        format!("app;{};sys_enter 1", sync_frame().1),
        "other;[stack-lost];sys_enter 1".to_string(),
    ];
    want.sort();
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
}

#[test]
fn stacks_json() {
    let f = fixture("json.dat");
    let (out, err, ok) = report(&["--json"], &f);
    assert!(ok, "{err}");
    assert!(out.starts_with(
        "{\"events\":10,\"drops\":[{\"cpu\":1,\"count\":9,\"unknown_count\":false}],\"groups\":[\n"
    ));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert!(lines[1].starts_with(
        "{\"pid\":100,\"comm\":\"app\",\"kind\":\"deferred\",\"cookie\":\"0x300000001\",\"status\":\"complete\",\"first_ts\":1000,\"last_ts\":3000,\"loss_while_open\":true,\"cookie_events\":2,\"events\":[{\"seq\":0,\"cpu\":0,\"ts\":1000,\"name\":\"sys_enter\""
    ));
    assert!(lines[1].ends_with(
        "\"user_stack\":{\"cpu\":1,\"ts\":3000,\"frames\":[{\"addr\":\"0x555500001234\",\"symbol\":null,\"offset\":0,\"object\":\"/nonexistent/app\",\"location\":null,\"unresolved\":\"mapped file not readable as ELF\"},{\"addr\":\"0x555500005678\",\"symbol\":null,\"offset\":0,\"object\":\"/nonexistent/app\",\"location\":null,\"unresolved\":\"mapped file not readable as ELF\"}]}},"
    ));
    assert!(lines[2].contains("\"status\":\"stack-lost\""));
    assert!(lines[2].ends_with("\"user_stack\":null},"));
    assert!(lines[3].contains("\"kind\":\"sync\",\"cookie\":null"));
    // The end: what stayed unresolved, by reason (the sync frame is in
    // libc when it is readable here).
    let libc = sync_frame().1 == "write";
    let end = if libc {
        "],\"unresolved\":{\"count\":2,\"reasons\":{\"mapped file not readable as ELF\":2},\"user_frames\":3}}"
    } else {
        "],\"unresolved\":{\"count\":3,\"reasons\":{\"mapped file not readable as ELF\":3},\"user_frames\":3}}"
    };
    assert_eq!(lines[4], end);
}

#[test]
fn missing_file_is_one_line_error() {
    let (out, err, ok) = report(&["--stacks"], &PathBuf::from("/nonexistent/trace.dat"));
    assert!(!ok);
    assert_eq!(out, "");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("tracer-cli: /nonexistent/trace.dat: No such file"),
        "{err}"
    );
}

#[test]
fn corrupt_file_is_one_line_error_no_panic() {
    let f = fixture("corrupt.dat");
    let mut data = std::fs::read(&f).unwrap();
    data.truncate(data.len() / 2);
    let bad = f.with_file_name("truncated.dat");
    std::fs::write(&bad, &data).unwrap();
    let (_, err, ok) = report(&["--stacks"], &bad);
    assert!(!err.contains("panicked"), "{err}");
    if !ok {
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("tracer-cli: "), "{err}");
    }
}

#[test]
fn nanosecond_timestamps_with_t() {
    let f = fixture("nsec.dat");
    let (out, err, ok) = report(&["--stacks", "-t"], &f);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[2],
        "app-100 cookie=300000001 complete 0.000001000..0.000003000 events=2 frames=2 (drops while open)"
    );
    assert_eq!(
        lines[3],
        "  0.000001000 [000] sys_enter: NR 1 (0, 1, 2, 3, 4, 5)"
    );
}

#[test]
fn symfs_finds_the_files_of_another_machine() {
    // A trace recorded on another machine (a VM): its processes map a libc
    // at a path this machine does not have; --symfs names the directory
    // holding that machine's files.
    let write = ustack_testdata::libc_functions()
        .into_iter()
        .find(|f| f.0 == "write");
    let Some((_, off)) = write else {
        return ustack_testdata::skip_unless_ci(&format!(
            "needs the symbols of {}, which cannot be read",
            ustack_testdata::DEMO_LIBC
        ));
    };
    let dir = std::env::temp_dir().join(format!("tracer-cli-symfs-{}", std::process::id()));
    let guest_lib = "/guest-root-only/lib/libc.so.6";
    let copy = dir.join("root").join(guest_lib.trim_start_matches('/'));
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(ustack_testdata::DEMO_LIBC, &copy).unwrap();
    let base = ustack_testdata::DEMO_LIBC_BASE;
    let addr = base + off + 4;
    let file = dir.join("symfs.dat");
    let mut b = ustack_testdata::TraceBuilder::new(1);
    b.comm(7, "guestapp")
        .procmap(7, "guestapp", &[(base, base + 0x20_0000, guest_lib)])
        .sys_enter(0, 1000, 7, 1)
        .user_stack(0, 1001, 7, &[addr]);
    b.write(&file).unwrap();

    let (plain, err, ok) = report(&["--stacks"], &file);
    assert!(ok, "{err}");
    assert!(
        plain.contains(&format!("      => {addr:x} {guest_lib}\n")),
        "{plain}"
    );
    let root = dir.join("root");
    let (with, err, ok) = report(&["--stacks", "--symfs", root.to_str().unwrap()], &file);
    assert!(ok, "{err}");
    assert!(
        with.contains(&format!("      => write+0x4 ({addr:x}) {guest_lib}\n")),
        "{with}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A page whose commit is larger than the page: every view prints what it
/// read, then fails with one line, as `report` does.
#[test]
fn page_corruption_fails_every_view() {
    let f = fixture("pagebad.dat");
    let mut data = std::fs::read(&f).unwrap();
    let tf = ustack_tracedata::TraceFile::open(&f).unwrap();
    let c = tf
        .buffers()
        .iter()
        .flat_map(|b| &b.cpus)
        .find(|c| c.data_size() > 0)
        .unwrap();
    let off = c.file_offset as usize;
    let too_big = (tf.page_size() as u64 * 2).to_le_bytes();
    data[off + 8..off + 16].copy_from_slice(&too_big);
    let bad = f.with_file_name("pagebad-corrupt.dat");
    std::fs::write(&bad, &data).unwrap();
    for args in [&[][..], &["--stacks"], &["--json"], &["--folded"]] {
        let (_, err, ok) = report(args, &bad);
        assert!(!ok, "{args:?} exited 0: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("tracer-cli: ") && err.contains("larger than its data area"),
            "{args:?}: {err}"
        );
        let path = bad.display().to_string();
        assert!(err.matches(&path).count() <= 1, "{args:?}: {err}");
    }
}

/// Error messages name the file once.
#[test]
fn messages_do_not_repeat_the_path() {
    for (what, file) in [
        ("missing", PathBuf::from("/nonexistent/trace.dat")),
        ("directory", std::env::temp_dir()),
    ] {
        for args in [&[][..], &["--stacks"]] {
            let (_, err, ok) = report(args, &file);
            assert!(!ok, "{what}");
            let path = file.display().to_string();
            assert_eq!(err.matches(&path).count(), 1, "{what} {args:?}: {err}");
        }
    }
}
