//! Drives the real `tracer-cli tui` in tmux (send-keys, capture-pane) on a
//! generated trace file and checks what is on the screen.
//!
//! Needs tmux; without it the test prints `SKIP` and returns, except under
//! CI=true where a missing tmux is a failure. The `--live` tests also need
//! root and tracefs: `tui_live_in_tmux` is `#[ignore]`d (run with
//! `--include-ignored`), `tui_live_symbolizes_what_record_does` skips
//! without them, except under CI=true.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    /// Runs `cmd` in a new `width`x24 session `t` on the tmux server
    /// `socket`, its exit status written to `status` (see
    /// [`recording_status`]); the pane stays after the exit so that a crash
    /// shows up in the capture.
    fn start(socket: String, width: &str, cmd: &str, status: &Path) -> Tmux {
        Tmux::start_sized(socket, width, "24", cmd, status)
    }

    /// [`Tmux::start`] in a `width`x`height` window.
    fn start_sized(socket: String, width: &str, height: &str, cmd: &str, status: &Path) -> Tmux {
        let t = Tmux { socket };
        let cmd = recording_status(cmd, status);
        let o = t.cmd(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            width,
            "-y",
            height,
            &cmd,
        ]);
        assert!(o.status.success(), "{o:?}");
        let _ = t.cmd(&["set-option", "-t", "t", "remain-on-exit", "on"]);
        t
    }

    fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "t"];
        a.extend_from_slice(keys);
        let o = self.cmd(&a);
        assert!(o.status.success(), "{o:?}");
    }

    fn screen(&self) -> String {
        let o = self.cmd(&["capture-pane", "-p", "-t", "t"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The screen with its colours and attributes as escape sequences.
    fn screen_styled(&self) -> String {
        let o = self.cmd(&["capture-pane", "-p", "-e", "-t", "t"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Waits until the screen contains `text`; returns the screen.
    fn wait_for(&self, text: &str) -> String {
        self.wait_all(&[text])
    }

    /// Waits until the screen no longer shows `text`; returns the screen.
    fn wait_gone(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if !s.contains(text) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("timed out waiting for {text:?} to go; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the screen contains every one of `texts` (a redraw may
    /// be caught half-way, so a screen is only trusted once it has all of
    /// them); returns the screen.
    fn wait_all(&self, texts: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if texts.iter().all(|t| s.contains(t)) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("timed out waiting for {texts:?}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// Wraps `cmd` so that its exit status lands in `status` (tmux's own
/// pane_dead_status is not always filled in).
fn recording_status(cmd: &str, status: &Path) -> String {
    format!("{cmd}; echo $? > {}", status.display())
}

/// Waits for the exit status written by [`recording_status`].
fn wait_exit(t: &Tmux, status: &Path, secs: u64) -> String {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(status) {
            if s.ends_with('\n') {
                return s.trim().to_string();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "the program did not exit\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn trace(dir: &Path) -> PathBuf {
    let p = dir.join("tmux.dat");
    ustack_testdata::fixture().write(&p).unwrap();
    p
}

/// The TUI in a real terminal, driven key by key through its tabs,
/// filters, search and help. One long function (about 150 lines) on
/// purpose: each step starts from the screen the step before left.
#[test]
fn tui_in_tmux() {
    if !have_tmux() {
        return ustack_testdata::skip_unless_ci("needs tmux");
    }
    let dir = std::env::temp_dir().join(format!("tracer-cli-tmux-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = trace(&dir);
    let status = dir.join("exit");
    let t = Tmux::start(
        format!("tracer-cli-test-{}", std::process::id()),
        "100",
        &format!(
            "{} tui -i {}",
            env!("CARGO_BIN_EXE_tracer-cli"),
            file.display()
        ),
        &status,
    );

    let s = t.wait_all(&[
        "Groups 3/3",
        "│app-100 cookie=300000001 complete",
        "Tab events  j/k move",
    ]);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0].trim_end(),
        " tmux.dat | 10 events | 3 groups: 2 ok 0 pending 1 lost 0 orphan | drops 0:0 1:9"
    );
    assert_eq!(
        lines[3],
        "│0.000001        100     app              300000001    2      2     complete                       │"
    );
    assert_eq!(
        lines[4],
        "│0.000001        200     other            500000002    1      0     stack-lost                     │"
    );
    assert!(
        lines[13].starts_with("│app-100 cookie=300000001 complete"),
        "{s}"
    );

    // The selected row is in reversed colours (SGR 7), the others not.
    let styled = t.screen_styled();
    let row = |text: &str| {
        styled
            .lines()
            .find(|l| l.contains(text))
            .unwrap_or_else(|| panic!("no {text} in {styled}"))
            .to_string()
    };
    let reversed = |l: &str| l.contains("\x1b[7m") || l.contains(";7m") || l.contains("[7;");
    assert!(reversed(&row("300000001    2")), "{styled}");
    assert!(!reversed(&row("500000002    1")), "{styled}");

    // `/` finds a group through the frames of its stacks: a user frame's
    // object (libc, the third group), a kernel frame's function (the first
    // one, after wrapping around).
    t.keys(&["/", "l", "i", "b", "c", ".", "s", "o", "Enter"]);
    t.wait_for("/libc.so: row 3");
    t.keys(&["/", "x", "6", "4", "_", "s", "y", "s", "Enter"]);
    t.wait_for("/x64_sys: row 1 (wrapped)");
    let now = t.screen_styled();
    let selected: Vec<&str> = now.lines().filter(|l| reversed(l)).collect();
    assert!(
        selected.iter().any(|l| l.contains("300000001    2")),
        "{now}"
    );

    // Move to the lost group: the detail pane follows.
    t.keys(&["j"]);
    t.wait_all(&[
        "│other-200 cookie=500000002 stack-lost",
        "<no user stack: stack lost: events were dropped before the stack arrived>",
    ]);

    // Events tab, search the field text.
    t.keys(&["Tab"]);
    t.wait_for("Events 10/10");
    t.keys(&["/", "=", "Space", "5", "Enter"]);
    t.wait_all(&["/= 5: row 6", "sys_exit             NR 1 = 5"]);

    // Enter jumps to the event's group.
    t.keys(&["Enter"]);
    t.wait_all(&["Groups 3/3", "│app-100 cookie=300000001 complete"]);

    // Enter on a kernel_stack row shows its frames; Esc goes back.
    t.keys(&["2", "g", "j"]);
    t.wait_for("┌ Event (Enter: frames) ─");
    t.keys(&["Enter"]);
    t.wait_all(&[
        "┌ Frames (Esc: back) ─",
        "│    => do_syscall_64+0x20 (ffffffff81100020)",
    ]);
    t.keys(&["Escape"]);
    t.wait_for("┌ Event (Enter: frames) ─");

    // The call tree: a search opens the nodes above the match; b turns it
    // bottom-up.
    t.keys(&["3"]);
    t.wait_for("Call tree, top-down | 2 stacks of 3 groups");
    t.keys(&["/", "d", "o", "_", "s", "y", "s", "Enter"]);
    t.wait_all(&["/do_sys: row ", "+ do_syscall_64"]);
    t.keys(&["E"]);
    t.wait_for("│ 50.00%  1        1                __x64_sys_write");
    t.keys(&["b"]);
    t.wait_all(&[
        "Call tree, bottom-up | 2 stacks of 3 groups",
        "+ __x64_sys_write",
    ]);
    t.keys(&["1"]);
    t.wait_for("Groups 3/3");

    // Help, closed by any key.
    t.keys(&["?"]);
    t.wait_for("Help (any key closes)");
    t.keys(&["x"]);
    t.wait_gone("Help (any key closes)");

    // Filter by comm: exactly, or ~ for a part of it.
    t.keys(&["c", "o", "t", "h", "Enter"]);
    t.wait_all(&["Groups 0/3", "filter comm=oth: 0 groups, 0 events"]);
    t.keys(&[
        "c", "BSpace", "BSpace", "BSpace", "~", "o", "t", "h", "Enter",
    ]);
    t.wait_all(&["Groups 1/3", "filter comm~oth: 1 groups, 2 events"]);

    // Resize: the layout follows.
    let o = t.cmd(&["resize-window", "-t", "t", "-x", "70", "-y", "14"]);
    assert!(o.status.success(), "{o:?}");
    let s = t.wait_all(&[
        "│TIME     PID     COMM         COOKIE       EVENTS DEPTH STATUS      │",
        "│0.000001 200     other        500000002    1      0     stack-lost  │",
        "┌ Detail ─",
    ]);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 14, "{s}");
    assert_eq!(
        lines[3],
        "│0.000001 200     other        500000002    1      0     stack-lost  │"
    );
    assert_eq!(lines[7].chars().count(), 70, "{s}");
    assert!(lines[7].starts_with("┌ Detail ─"), "{s}");

    // Quit: the program exits cleanly.
    t.keys(&["q"]);
    assert_eq!(wait_exit(&t, &status, 20), "0");
    drop(t);
    std::fs::remove_dir_all(&dir).ok();
}

/// `tui --live` on the host kernel: records a short command, refreshes
/// while it runs, shows it stopped when it exits, saves the trace on quit
/// and leaves no instance behind. Needs root and tmux.
#[test]
#[ignore = "needs root and tracefs"]
fn tui_live_in_tmux() {
    let root = nix::unistd::geteuid().is_root();
    if !have_tmux() || !root || !Path::new("/sys/kernel/tracing/instances").exists() {
        panic!("this host test cannot run: needs root, tmux and tracefs");
    }
    let dir = std::env::temp_dir().join(format!("tracer-cli-tmux-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("saved.dat");
    let inst = format!("tui-live-{}", std::process::id());
    let status = dir.join("exit");
    // The command runs until the test has seen the live view record (the
    // file `go` appears; 20 s at most), then makes its system calls.
    let go = dir.join("go");
    let t = Tmux::start(
        format!("tracer-cli-live-{}", std::process::id()),
        "110",
        &format!(
            "{} tui --live -B {inst} -e raw_syscalls:sys_enter --user-stacks sync -F -o {} -- /bin/sh -c 'i=0; until [ -e {} ] || [ $i -ge 400 ]; do i=$((i+1)); sleep 0.05; done; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo x; /bin/true; done'",
            env!("CARGO_BIN_EXE_tracer-cli"),
            out.display(),
            go.display()
        ),
        &status,
    );
    t.wait_for("live: recording");
    std::fs::write(&go, "").unwrap();
    t.wait_for("live: stopped: the command exited with status 0");
    // The last snapshot, taken at the stop, is indexed in the background.
    let s = t.wait_gone("indexing ");
    assert!(
        s.contains("live: stopped: the command exited with status 0"),
        "{s}"
    );
    let head = s.lines().next().unwrap_or("");
    assert!(head.starts_with(" live | "), "{s}");
    // The command's groups are there, with the comm of the shell.
    assert!(s.contains(" sh "), "{s}");
    assert!(!s.contains("Groups 0/0"), "{s}");
    t.keys(&["q"]);
    assert_eq!(wait_exit(&t, &status, 30), "0");
    assert!(
        !Path::new("/sys/kernel/tracing/instances")
            .join(&inst)
            .exists(),
        "instance left behind"
    );
    // The saved trace has the command's sys_enter events with user stacks.
    let rep = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(["report", "--stacks", "-i"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let text = String::from_utf8(rep.stdout).unwrap();
    let groups = text
        .lines()
        .filter(|l| l.starts_with("sh-") && l.contains(" sync complete "))
        .count();
    assert!(groups >= 10, "{groups} groups:\n{text:.3000}");
    // The command ran under ptrace: the maps of each `true`, which lives
    // far less than a poll period, were taken at its exec and exit.
    let f = ustack_tracedata::TraceFile::open(&out).unwrap();
    let maps = f.procmaps().unwrap_or_default();
    // (Each process once or more: its entries are timed reads, execs and
    // forks, as record writes them.)
    let trues: std::collections::BTreeSet<&str> = maps
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("true"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(trues.len(), 20, "{maps:.3000}");
    drop(t);
    std::fs::remove_dir_all(&dir).ok();
}

/// The command line's selection (`--cpu`, `--comm`, `--filter`), as
/// `report --stacks` chooses: the groups and the event list show only what
/// it keeps.
#[test]
fn tui_selection_in_tmux() {
    if !have_tmux() {
        return ustack_testdata::skip_unless_ci("needs tmux");
    }
    let dir = std::env::temp_dir().join(format!("tracer-cli-tmux-sel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = trace(&dir);
    let bin = env!("CARGO_BIN_EXE_tracer-cli");
    let status = dir.join("exit");
    let t = Tmux::start(
        format!("tracer-cli-sel-{}", std::process::id()),
        "100",
        &format!("{bin} tui -i {} --cpu 1", file.display()),
        &status,
    );
    let s = t.wait_all(&["Groups 1/3", "│other-200 cookie=500000002 stack-lost"]);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[3],
        "│0.000001        200     other            500000002    1      0     stack-lost                     │"
    );
    assert_eq!(lines[4].trim_matches(['│', ' ']), "", "{s}");
    // The event list: the three events of CPU 1, of all ten.
    t.keys(&["2"]);
    let s = t.wait_for("Events 3/10");
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[3],
        "│0.000001        1   200     other                  sys_enter            NR 0 (0, 1, 2, 3, 4, 5)   │"
    );
    assert!(
        lines[4].contains("user_unwind_cookie   cookie=0x500000002"),
        "{s}"
    );
    assert!(
        lines[5].contains("user_unwind_stack    cookie=0x300000001"),
        "{s}"
    );
    assert_eq!(lines[6].trim_matches(['│', ' ']), "", "{s}");
    t.keys(&["q"]);
    assert_eq!(wait_exit(&t, &status, 10), "0");
    drop(t);

    // --comm and --filter: app's groups with a sys_exit.
    let _ = std::fs::remove_file(&status);
    let t = Tmux::start(
        format!("tracer-cli-sel2-{}", std::process::id()),
        "100",
        &format!(
            "{bin} tui -i {} --comm app --filter sys_exit",
            file.display()
        ),
        &status,
    );
    let s = t.wait_all(&["Groups 1/3", "│app-100 cookie=300000001 complete"]);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[3],
        "│0.000001        100     app              300000001    2      2     complete                       │"
    );
    assert_eq!(lines[4].trim_matches(['│', ' ']), "", "{s}");
    // The detail shows the group's sys_exit, not its sys_enter.
    let detail: Vec<&str> = lines[13..]
        .iter()
        .map(|l| l.trim_matches(['│', ' ']))
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(detail[1], "0.000002 [000] sys_exit: NR 1 = 5", "{s}");
    assert!(!s.contains("sys_enter"), "{s}");
    t.keys(&["2"]);
    let s = t.wait_for("Events 1/10");
    assert!(s.lines().nth(3).unwrap_or("").contains("sys_exit"), "{s}");
    t.keys(&["q"]);
    assert_eq!(wait_exit(&t, &status, 10), "0");
    drop(t);

    // --pid, --time and --invert: each keeps one group of three.
    for (n, (args, group)) in [
        (
            "--pid 200",
            "200     other            500000002    1      0     stack-lost",
        ),
        (
            "--time 0.000004,",
            "100     app              sync         1      1     complete",
        ),
        (
            "--invert --filter sys_enter",
            "100     app              300000001    2      2     complete",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let _ = std::fs::remove_file(&status);
        let t = Tmux::start(
            format!("tracer-cli-sel3-{n}-{}", std::process::id()),
            "100",
            &format!("{bin} tui -i {} {args}", file.display()),
            &status,
        );
        let s = t.wait_for("Groups 1/3");
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[3].contains(group), "{args}: {s}");
        assert_eq!(lines[4].trim_matches(['│', ' ']), "", "{args}: {s}");
        t.keys(&["q"]);
        assert_eq!(wait_exit(&t, &status, 10), "0");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compiles `tests/gt/pie.c` (a known call chain down to getppid(2)) into
/// `dir/pie`, with frame pointers so that sync user stacks walk it.
fn gt_pie(dir: &Path) -> Option<PathBuf> {
    let gt = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gt");
    let exe = dir.join("pie");
    let st = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-I"])
        .arg(&gt)
        .arg(gt.join("pie.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .ok()?;
    st.success().then_some(exe)
}

/// Runs the workload in `dir`: three `pie` processes one after the
/// other, each making five getppid(2) calls and then living 300 ms (more
/// than the recorder's poll, so that it can be read after its exec), all
/// gone when this returns. They are not the recorder's command: only a
/// whole-system recording's exec watch and stack scanner find them.
fn pie_workload(dir: &Path) {
    let st = Command::new("sh")
        .args(["-c", "for i in 1 2 3; do ./pie plain 5; done"])
        .current_dir(dir)
        .env("GT_LINGER_MS", "300")
        .status()
        .unwrap();
    assert!(st.success());
}

/// The rows of the call tree on `screen` (all nodes expanded): counts and
/// function names, indented by depth, without the borders.
fn tree_rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .skip_while(|l| !l.starts_with("TOTAL"))
        .skip(1)
        .take_while(|l| l.contains('%'))
        .map(str::to_string)
        .collect()
}

/// The call tree of the pie processes' stacks, all expanded, as the TUI
/// shows it in `t`.
fn pie_tree(t: &Tmux) -> Vec<String> {
    t.keys(&["3"]);
    t.wait_for("Call tree, top-down");
    t.keys(&["E"]);
    // Expanded down to the libc function that makes the system call (its
    // caller gt_leaf has no frame of its own on the frame-pointer walk).
    let s = t.wait_for(" syscall ");
    tree_rows(&s)
}

/// `tui --live` symbolizes what `record` followed by `tui` symbolizes: the
/// same workload (processes the recorder did not start, gone before the
/// view is looked at) recorded both ways on the host kernel, and the call
/// trees of their user stacks compared row by row. Both run one recording
/// session, so the live view has the same maps (read at each exec, found
/// through the stacks in the data) as the file `record` writes.
#[test]
fn tui_live_symbolizes_what_record_does() {
    if !have_tmux() {
        return ustack_testdata::skip_unless_ci("needs tmux");
    }
    let Some(inst) = ustack_testdata::TestInstance::create("tlive") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    if gt_pie(dir).is_none() {
        return ustack_testdata::skip_unless_ci("needs a C compiler (cc)");
    }
    let bin = env!("CARGO_BIN_EXE_tracer-cli");
    let trace = [
        "-B",
        inst.name(),
        "--user-stacks",
        "sync",
        "-e",
        "syscalls:sys_enter_getppid",
    ];

    // record, the whole system, stopped with SIGINT once the workload is done.
    let out = dir.join("record.dat");
    let mut rec = Command::new(bin)
        .arg("record")
        .args(trace)
        .arg("-o")
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(rec.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("tracer-cli: recording; press Ctrl-C to stop") {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "record ended before recording: {said}");
        said.push_str(&line);
    }
    pie_workload(dir);
    // SAFETY: kill(2) on the pid of our own child, which is not reaped yet.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(rec.wait().unwrap().success(), "record: {said}{rest}");

    let status = dir.join("exit");
    let t = Tmux::start_sized(
        format!("tracer-cli-parity-{}", std::process::id()),
        "120",
        "60",
        &format!("{bin} tui -i {} --comm pie", out.display()),
        &status,
    );
    let recorded = pie_tree(&t);
    t.keys(&["q"]);
    assert_eq!(wait_exit(&t, &status, 20), "0");
    drop(t);

    // tui --live with the same options, stopped with SIGINT likewise.
    let _ = std::fs::remove_file(&status);
    let pidfile = dir.join("pid");
    let t = Tmux::start_sized(
        format!("tracer-cli-parity-live-{}", std::process::id()),
        "120",
        "60",
        &format!(
            "sh -c 'echo $$ > {}; exec {bin} tui --live {} --comm pie'",
            pidfile.display(),
            trace.join(" ")
        ),
        &status,
    );
    t.wait_for("live: recording");
    pie_workload(dir);
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill(2) on the tracer-cli the tmux pane runs, still running.
    unsafe { libc::kill(pid, libc::SIGINT) };
    t.wait_for("live: stopped");
    // The last snapshot, taken at the stop, is indexed in the background.
    t.wait_gone("indexing ");
    let live = pie_tree(&t);
    t.keys(&["q"]);
    assert_eq!(wait_exit(&t, &status, 30), "0");
    drop(t);

    // Resolved (not only the same): pie's own chain is in the tree.
    for f in ["gt_depth3", "gt_depth2", "gt_depth1"] {
        assert!(
            recorded.iter().any(|r| r.ends_with(f)),
            "{f} not in the tree of record:\n{}",
            recorded.join("\n")
        );
    }
    assert_eq!(
        live,
        recorded,
        "tui --live:\n{}\nrecord + tui:\n{}",
        live.join("\n"),
        recorded.join("\n")
    );
    drop(inst);
}

/// The pid of the program a tmux pane runs under `sh -c` (the shell's
/// child).
fn pane_program(t: &Tmux) -> u32 {
    let o = t.cmd(&["list-panes", "-t", "t", "-F", "#{pane_pid}"]);
    let sh = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let children = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children")).unwrap();
    children.split_whitespace().next().unwrap().parse().unwrap()
}

/// Closing the terminal of a `tui --live` (a hangup to every process of
/// the session) restores everything, as Ctrl-C does: its instance, the
/// process watcher's `ustack-procs-PID` and the journal of its settings are
/// gone. The watcher's instance used to stay: the helper that removes it
/// after the exit had inherited copies of its readers' files.
#[test]
#[ignore = "needs root and tracefs"]
fn tui_live_hangup_leaves_nothing_behind() {
    let root = nix::unistd::geteuid().is_root();
    let instances = Path::new("/sys/kernel/tracing/instances");
    if !have_tmux() || !root || !instances.exists() {
        panic!("this host test cannot run: needs root, tmux and tracefs");
    }
    let dir = std::env::temp_dir().join(format!("tracer-cli-tmux-hup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let inst = format!("tui-hup-{}", std::process::id());
    let t = Tmux::start(
        format!("tracer-cli-hup-{}", std::process::id()),
        "110",
        &format!(
            "{} tui --live -B {inst} -e raw_syscalls:sys_enter -- sleep 60",
            env!("CARGO_BIN_EXE_tracer-cli"),
        ),
        &dir.join("exit"),
    );
    t.wait_for("live: recording");
    let pid = pane_program(&t);
    let watcher = instances.join(format!("ustack-procs-{pid}"));
    let journal = Path::new("/run/ustack").join(format!("instance-{inst}.state"));
    assert!(watcher.exists() && instances.join(&inst).exists());
    drop(t);
    let start = Instant::now();
    let left = || {
        [instances.join(&inst), watcher.clone(), journal.clone()]
            .into_iter()
            .filter(|p| p.exists())
            .collect::<Vec<_>>()
    };
    while !left().is_empty() && start.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(left().is_empty(), "left behind: {:?}", left());
    // Gone, or a zombie its dead tmux server has not reaped.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(stat.is_empty() || stat.contains(") Z "), "{stat}");
    // The lock file of a killed run stays (the next run takes it over).
    std::fs::remove_file(journal.with_extension("lock")).ok();
    std::fs::remove_dir_all(&dir).ok();
}
