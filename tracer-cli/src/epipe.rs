//! A reader that goes away (`tracer-cli list -e | head -1`) is not a
//! failure. Rust ignores SIGPIPE, so a write to a closed pipe fails with
//! `EPIPE` ([`io::ErrorKind::BrokenPipe`]). Every write to stdout is a
//! `write!`/`write_all` whose error goes back up with `?` (never
//! `print!`/`println!`, which panic on it; clippy's `print_stdout` keeps
//! them out), and `main` turns an error whose chain holds a broken pipe
//! into a quiet exit 0, after the stack unwound (so the tracefs guards of
//! `record`/`start` have restored what they changed).

use std::io;

/// Whether an error comes from writing to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
