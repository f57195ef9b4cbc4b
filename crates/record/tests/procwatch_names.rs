//! [`ProcWatch`] sees the names tasks take while it runs: a process's
//! name from its exec and a thread's from `prctl(PR_SET_NAME)`, which is
//! what keeps the names of exited tasks in a recording when the kernel's
//! `saved_cmdlines` no longer has them.

use std::process::Command;
use ustack_record::{last_comms, ProcWatch};
use ustack_tracefs::{Guard, Tracefs};

/// The name in a kernel `comm` array.
fn name(comm: &[u8; 16]) -> &str {
    let n = comm.iter().position(|&b| b == 0).unwrap_or(16);
    std::str::from_utf8(&comm[..n]).unwrap()
}

#[test]
#[ignore = "needs root and tracefs (a private instance)"]
fn exec_and_rename_give_the_names() {
    let fs = Tracefs::open().expect("tracefs is mounted and writable");
    let guard = Guard::new();
    let mut watch = ProcWatch::start(&fs, &guard, "local").unwrap();
    // `sh` execs `sleep` (named after its file, not `sh`), and a shell
    // renames itself through /proc.
    let sleeper = Command::new("sh")
        .args(["-c", "exec sleep 0.01"])
        .spawn()
        .unwrap();
    let renamer = Command::new("sh")
        .args(["-c", "printf ustk-renamed > /proc/self/comm; exit 0"])
        .spawn()
        .unwrap();
    let (sleeper_pid, renamer_pid) = (sleeper.id(), renamer.id());
    for mut c in [sleeper, renamer] {
        assert!(c.wait().unwrap().success());
    }
    watch.poll();
    let comms = last_comms(&watch.finish());
    guard.restore().unwrap();
    assert_eq!(comms.get(&sleeper_pid).map(name), Some("sleep"));
    assert_eq!(comms.get(&renamer_pid).map(name), Some("ustk-renamed"));
}
