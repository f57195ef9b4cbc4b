//! `report --stacks/--folded` on a trace recorded from the machine's own
//! kernel: stock `user_stack` and `kernel_stack` events of a shell loop,
//! stitched and symbolized through the saved kallsyms and process maps.
//!
//! Needs root and a writable tracefs: `#[ignore]`d, run with
//! `cargo test -- --include-ignored`.

use std::process::{Child, Command, Stdio};

fn prerequisites() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("needs root".into());
    }
    if !std::path::Path::new("/sys/kernel/tracing/events/ftrace/user_stack").exists() {
        return Err("needs tracefs at /sys/kernel/tracing with ftrace:user_stack".into());
    }
    Ok(())
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "needs root and tracefs"]
fn real_kernel_sync_stacks_are_stitched_and_symbolized() {
    if let Err(why) = prerequisites() {
        panic!("this host test cannot run: {why}");
    }
    let dir = std::env::temp_dir().join(format!("tracer-cli-stacks-real-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("real.dat");
    // A process that stays alive until the end of the recording, so that
    // its memory maps are saved.
    let child = Kill(
        Command::new("/bin/sh")
            .args(["-c", "while :; do echo x > /dev/null; done"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    let rec = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(["record", "-B"])
        .arg(format!("stacks-real-{}", std::process::id()))
        .args([
            "-e",
            "raw_syscalls:sys_enter",
            "-T",
            "--user-stacks",
            "sync",
            "-P",
        ])
        .arg(pid.to_string())
        .arg("-o")
        .arg(&out)
        .args(["--", "sleep", "0.5"])
        .output()
        .unwrap();
    drop(child);
    assert!(
        rec.status.success(),
        "record failed: {}",
        String::from_utf8_lossy(&rec.stderr)
    );

    let run = |mode: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
            .args(["report", mode, "-i"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };

    // Text: one sync group per sys_enter of the loop, each with the kernel
    // stack and a user stack resolved into libc.
    let text = run("--stacks");
    let head = format!("sh-{pid} sync complete ");
    let blocks: Vec<&str> = text
        .split("\n\n")
        .filter(|b| b.starts_with(&head))
        .collect();
    assert!(
        blocks.len() >= 100,
        "only {} groups:\n{text:.2000}",
        blocks.len()
    );
    for b in &blocks {
        let lines: Vec<&str> = b.lines().collect();
        assert!(lines[0].contains(" events=1 "), "{b}");
        assert!(lines[1].contains("] sys_enter: NR "), "{b}");
        assert!(b.contains("=> do_syscall_64+0x"), "{b}");
        let user = b.split("<user stack>").nth(1).expect("user stack");
        assert!(user.contains("libc.so.6"), "{b}");
    }
    // The loop's echo writes to /dev/null through libc's write().
    let writes = blocks
        .iter()
        .filter(|b| b.contains("      => write+0x"))
        .count();
    assert!(writes >= 20, "{writes} write() groups");
    assert!(blocks
        .iter()
        .filter(|b| b.contains("      => write+0x"))
        .all(|b| b.contains("sys_enter: NR 1 ")));

    // Folded: the same stacks, outermost first, counted.
    let folded = run("--folded");
    let w: u64 = folded
        .lines()
        .filter(|l| l.starts_with("sh;") && l.contains(";write;") && l.contains(";do_syscall_64;"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(w as usize, writes);
    std::fs::remove_dir_all(&dir).ok();
}
