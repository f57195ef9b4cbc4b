//! Errors of the tracefs layer.
//!
//! Every error that comes from a system call names the file it was about
//! (relative to the tracefs mount point when it lies inside it) and the errno,
//! e.g. `tracefs: cannot write events/sched/enable: Permission denied`.

use std::fmt;
use std::io;

/// What we were doing when an I/O error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Opening a file.
    Open,
    /// Reading a file.
    Read,
    /// Writing a file.
    Write,
    /// Listing a directory.
    List,
    /// Creating a directory (an instance).
    Create,
    /// Removing a directory (an instance).
    Remove,
    /// Moving pages with splice(2).
    Splice,
    /// Moving pages from the pipe into the output file with splice(2).
    SpliceTo,
    /// Waiting with poll(2).
    Poll,
    /// Creating a pipe.
    Pipe,
    /// Mounting tracefs.
    Mount,
}

impl Op {
    fn verb(self) -> &'static str {
        match self {
            Op::Open => "open",
            Op::Read => "read",
            Op::Write => "write",
            Op::List => "list",
            Op::Create => "create",
            Op::Remove => "remove",
            Op::Splice => "splice from",
            Op::SpliceTo => "splice into",
            Op::Poll => "poll",
            Op::Pipe => "create a pipe for",
            Op::Mount => "mount tracefs on",
        }
    }
}

/// Error of the tracefs layer.
#[derive(Debug)]
pub enum Error {
    /// A system call on a file failed.
    Io {
        /// What we were doing.
        op: Op,
        /// The file, relative to the tracefs root when inside it.
        path: String,
        /// The underlying error (carries the errno).
        source: io::Error,
    },
    /// tracefs is not mounted (and could not be mounted); the text says why.
    NotMounted(String),
    /// Something asked for does not exist (event, option, instance, clock...).
    NotFound {
        /// What kind of thing (`event`, `option`, `instance`, ...).
        what: &'static str,
        /// Its name.
        name: String,
    },
    /// A file did not have the expected contents.
    Parse {
        /// The file.
        path: String,
        /// What was wrong.
        detail: String,
    },
    /// An argument was not valid.
    Invalid(String),
    /// The kernel refused a filter; `reason` is its explanation from
    /// `error_log`.
    Filter {
        /// The event (`system:event`) or system it was for.
        target: String,
        /// The filter.
        filter: String,
        /// Why, in the kernel's words.
        reason: String,
    },
}

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Builds an [`Error::Io`].
    pub fn io(op: Op, path: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Builds an [`Error::Io`] from a nix errno.
    pub fn errno(op: Op, path: impl Into<String>, errno: nix::errno::Errno) -> Error {
        Error::io(op, path, io::Error::from_raw_os_error(errno as i32))
    }

    /// The raw errno of an I/O error, if any.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// Describes an io::Error the way strerror(3) does, without the
/// "(os error N)" suffix of the std Display.
pub(crate) fn describe(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => nix::errno::Errno::from_raw(code).desc().to_string(),
        None => err.to_string(),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, source } => {
                write!(
                    f,
                    "tracefs: cannot {} {}: {}",
                    op.verb(),
                    path,
                    describe(source)
                )
            }
            Error::NotMounted(why) => write!(f, "tracefs: {why}"),
            Error::NotFound { what, name } => write!(f, "tracefs: no such {what}: {name}"),
            Error::Parse { path, detail } => {
                write!(f, "tracefs: unexpected contents in {path}: {detail}")
            }
            Error::Invalid(msg) => write!(f, "tracefs: {msg}"),
            Error::Filter {
                target,
                filter,
                reason,
            } => write!(f, "tracefs: bad filter for {target}: {reason}: {filter}"),
        }
    }
}

/// The errno text is already part of the message, so no `source()` is
/// given: printing the chain (`{:#}` in anyhow) stays one clean line.
impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_and_errno() {
        let e = Error::io(
            Op::Write,
            "events/sched/enable",
            io::Error::from_raw_os_error(libc::EACCES),
        );
        assert_eq!(
            e.to_string(),
            "tracefs: cannot write events/sched/enable: Permission denied"
        );
        let e = Error::io(
            Op::Read,
            "per_cpu/cpu3/stats",
            io::Error::from_raw_os_error(libc::ENOENT),
        );
        assert_eq!(
            e.to_string(),
            "tracefs: cannot read per_cpu/cpu3/stats: No such file or directory"
        );
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    }
}
