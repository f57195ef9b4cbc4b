//! A command forked and held before its exec until tracing is on
//! ([`HeldChild`]); `start` runs it as is, `record` and `tui --live` under
//! ptrace ([`crate::TracedCommand`]).

use anyhow::{bail, Context, Result};
use std::ffi::CString;

/// A command forked and held before exec until [`HeldChild::release`], so
/// its pid can go into the pid filter and tracing is on before it runs.
pub struct HeldChild {
    /// The child's pid.
    pub pid: nix::unistd::Pid,
    pub(crate) go: Option<std::os::fd::OwnedFd>,
    /// Read end of a close-on-exec pipe: EOF once exec succeeded, the errno
    /// (4 bytes) if it failed.
    exec_err: Option<std::os::fd::OwnedFd>,
    pub(crate) program: String,
}

impl HeldChild {
    /// Forks; the child waits for the go byte, then execs `argv` (PATH
    /// lookup) with a clean signal mask.
    pub fn spawn(argv: &[String]) -> Result<HeldChild> {
        use std::os::fd::AsRawFd;
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_str()))
            .collect::<Result<_, _>>()
            .context("command argument contains a NUL byte")?;
        let Some(first) = cargs.first() else {
            bail!("no command given");
        };
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating a pipe")?;
        let (er, ew) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating a pipe")?;
        // SAFETY: after fork the child only calls async-signal-safe functions
        // (close, read, sigprocmask, sigaction, execvp, write, _exit) on data
        // prepared before the fork; the parent continues normally.
        match unsafe { nix::unistd::fork() }.context("fork")? {
            // SAFETY: in the forked child of a multi-threaded process: only
            // async-signal-safe libc calls, on fds and C strings that were
            // made before the fork and stay valid until exec or _exit.
            nix::unistd::ForkResult::Child => unsafe {
                libc::close(w.as_raw_fd());
                libc::close(er.as_raw_fd());
                let mut b = 0u8;
                loop {
                    let n = libc::read(r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
                    if n == 1 {
                        break;
                    }
                    if n == 0 || *libc::__errno_location() != libc::EINTR {
                        libc::_exit(126);
                    }
                }
                // `r` is left to O_CLOEXEC: tracing is on from here, and a
                // close() now would be an event of the command whose user
                // stack is in our image, which no saved maps describe.
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
                // The Rust runtime ignores SIGPIPE; the command gets the
                // default back, as std::process::Command would do.
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGPIPE, &dfl, std::ptr::null_mut());
                libc::execvp(first.as_ptr(), ptrs.as_ptr());
                let errno = (*libc::__errno_location()).to_ne_bytes();
                libc::write(ew.as_raw_fd(), errno.as_ptr().cast(), errno.len());
                libc::_exit(127);
            },
            nix::unistd::ForkResult::Parent { child } => {
                drop(r);
                drop(ew);
                Ok(HeldChild {
                    pid: child,
                    go: Some(w),
                    exec_err: Some(er),
                    program: argv[0].clone(),
                })
            }
        }
    }

    /// Lets the child exec, and waits until the exec happened: a command
    /// that cannot be run is an error here.
    pub fn release(&mut self) -> Result<()> {
        if let Some(w) = self.go.take() {
            nix::unistd::write(&w, b"g").context("starting the command")?;
        }
        let failed = self
            .take_exec_errno()
            .context("waiting for the command to start")?;
        if let Some(errno) = failed {
            let _ = nix::sys::wait::waitpid(self.pid, None);
            bail!("cannot run {}: {}", self.program, errno.desc());
        }
        Ok(())
    }

    /// Reads the exec-error pipe (once; later calls give `Ok(None)`): the
    /// errno the child wrote when its exec failed, `None` at EOF (the exec
    /// succeeded, or the child ended without trying).
    pub(crate) fn take_exec_errno(&mut self) -> nix::Result<Option<nix::errno::Errno>> {
        let Some(er) = self.exec_err.take() else {
            return Ok(None);
        };
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match nix::unistd::read(&er, &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok((got == 4).then(|| nix::errno::Errno::from_raw(i32::from_ne_bytes(buf))))
    }

    /// Non-blocking: `Some(status)` once the child exited.
    pub fn try_wait(&self) -> Option<i32> {
        use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
        match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => Some(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => Some(128 + sig as i32),
            Ok(_) => None,
            Err(_) => Some(-1),
        }
    }
}

impl Drop for HeldChild {
    fn drop(&mut self) {
        // Closing the go pipe unreleased makes the child exit without
        // running; reap it.
        if self.go.take().is_some() {
            let _ = nix::sys::wait::waitpid(self.pid, None);
        }
    }
}
