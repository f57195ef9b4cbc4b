//! A reader that goes away (`tracer-cli list -e | head -1`) is not a
//! failure: Rust ignores SIGPIPE, so a write to a closed pipe is an `EPIPE`
//! error, or a panic in `println!`. `main` turns both into a quiet exit 0,
//! for every subcommand, after the stack unwound (so the tracefs guards of
//! `record`/`start` have restored what they changed).

use std::any::Any;
use std::io;

/// Whether a panic payload is `println!`'s "failed printing to stdout:
/// Broken pipe".
pub fn is_broken_pipe_panic(payload: &(dyn Any + Send)) -> bool {
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    msg.starts_with("failed printing to std") && msg.contains("Broken pipe")
}

/// Whether an error comes from writing to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Keeps the default panic message for every panic but the broken pipe.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_broken_pipe_panic(info.payload()) {
            previous(info);
        }
    }));
}
