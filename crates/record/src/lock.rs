//! One recording per instance, and the state a killed one leaves.
//!
//! Two `record`s on one instance silently break each other (the second
//! turns off the first's events). Each session holds an exclusive
//! `flock(2)` on `/run/ustack/<instance>.lock` for its whole life: the
//! kernel drops it when the process dies, however it dies, so a crashed
//! run cannot leave it stale. Next to it, `<instance>.state` is the
//! session guard's journal (`ustack_tracefs::Guard::journal_to`): present
//! only while settings are changed and not yet restored, so whoever takes
//! the lock and finds it knows its writer was killed, and restores
//! ([`restore_leftover`]).

use anyhow::{bail, Context, Result};
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where the lock and state files live: `/run` is emptied at boot, as the
/// tracefs settings are (the temp directory when `/run` is not writable).
const DIR: &str = "/run/ustack";

/// The exclusive right to change one instance, until dropped.
pub struct InstanceLock {
    _lock: Flock<File>,
    path: PathBuf,
    state: PathBuf,
}

impl Drop for InstanceLock {
    fn drop(&mut self) {
        // Still locked here: whoever opened the file meanwhile sees, once
        // it has the lock, that it is no longer the file at the path.
        let _ = std::fs::remove_file(&self.path);
    }
}

fn base(instance: Option<&str>) -> String {
    match instance {
        None => "top".to_string(),
        // Instance names cannot hold '/'; keep the file name plain anyway.
        Some(n) => format!("instance-{}", n.replace('/', "_")),
    }
}

impl InstanceLock {
    /// Takes the lock of `instance` (`None`: the top instance), or says
    /// which process holds it.
    pub fn acquire(instance: Option<&str>) -> Result<InstanceLock> {
        // A system without a writable /run (a minimal guest) uses the
        // temp directory.
        let dir = match std::fs::create_dir_all(DIR) {
            Ok(()) => PathBuf::from(DIR),
            Err(_) => std::env::temp_dir().join("ustack"),
        };
        Self::acquire_in(&dir, instance)
    }

    fn acquire_in(dir: &Path, instance: Option<&str>) -> Result<InstanceLock> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let name = base(instance);
        let path = dir.join(format!("{name}.lock"));
        // The holder removes the file when it is done (so one file per
        // instance name ever used does not pile up): a lock taken on a file
        // that was removed meanwhile is worth nothing, so check that the
        // locked file is still the one at `path`, and try again if not.
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let mut lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(l) => l,
                Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                    let mut pid = String::new();
                    let _ = file.read_to_string(&mut pid);
                    let shown = instance
                        .map_or("the top instance".to_string(), |n| format!("instance {n}"));
                    bail!(
                        "{shown} is in use by another tracer-cli (pid {}); use -B NAME to trace in an instance of your own",
                        pid.trim()
                    );
                }
                Err((_, e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", path.display()))
                }
            };
            let same = match (std::fs::metadata(&path), lock.metadata()) {
                (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                _ => false,
            };
            if !same {
                continue;
            }
            // Who holds it, for the message of the next one.
            let _ = lock.set_len(0);
            let _ = lock.rewind();
            let _ = write!(lock, "{}", std::process::id());
            return Ok(InstanceLock {
                _lock: lock,
                path,
                state: dir.join(format!("{name}.state")),
            });
        }
    }

    /// The state file of the instance (the session guard's journal).
    pub fn state_file(&self) -> &Path {
        &self.state
    }
}

/// Restores what a killed session left in `instance` (from its state
/// file) and returns how many settings that was; 0 when none was left.
/// Takes the lock while doing it: fails if a session is running there.
pub fn restore_leftover(instance: Option<&str>) -> Result<usize> {
    let lock = InstanceLock::acquire(instance)?;
    Ok(ustack_tracefs::replay_journal(lock.state_file())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let first = InstanceLock::acquire_in(dir.path(), Some("rec")).unwrap();
        let err = InstanceLock::acquire_in(dir.path(), Some("rec"))
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "instance rec is in use by another tracer-cli (pid {}); use -B NAME to trace in an instance of your own",
                std::process::id()
            )
        );
        // Another instance is independent.
        let _other = InstanceLock::acquire_in(dir.path(), None).unwrap();
        assert_eq!(
            first.state_file(),
            dir.path().join("instance-rec.state").as_path()
        );
        drop(first);
        let again = InstanceLock::acquire_in(dir.path(), Some("rec")).unwrap();
        // A holder leaves no file behind.
        drop((again, _other));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
