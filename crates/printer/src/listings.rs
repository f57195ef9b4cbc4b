//! The `report` forms that list what libtraceevent loaded from a file:
//! `-f` (kernel functions), `-P` (printk formats) and `--check-events`.
//!
//! libtraceevent prints the two lists itself, with `printf`: they go to the
//! process's C `stdout`, not to an `io::Write` (the one exception to this
//! crate printing nothing). Flush Rust's buffered stdout first; C's is
//! flushed when the process exits.

use anyhow::{anyhow, Result};
use ustack_tracedata::TraceFile;
use ustack_traceevent_sys as tep;

/// Whether libtraceevent parses every event format of `file`.
pub fn formats_parse(file: &TraceFile) -> bool {
    ustack_stitch::printfmt::load_tep(file).is_ok_and(|(t, _)| t.skipped_formats().is_empty())
}

fn c_listing(file: &TraceFile, f: unsafe extern "C" fn(*mut tep::tep_handle)) -> Result<()> {
    let (t, _) = ustack_stitch::printfmt::load_tep(file).map_err(|e| anyhow!("{e}"))?;
    // SAFETY: the handle is valid for the call, which only reads it.
    unsafe { f(t.as_ptr()) };
    Ok(())
}

/// Prints the kernel functions of `file` (`%016llx name [module]`, by
/// address) to the C `stdout`, as `trace-cmd report -f`.
pub fn print_functions(file: &TraceFile) -> Result<()> {
    c_listing(file, tep::tep_print_funcs)
}

/// Prints the printk formats of `file` to the C `stdout`, as
/// `trace-cmd report -P`.
pub fn print_printk(file: &TraceFile) -> Result<()> {
    c_listing(file, tep::tep_print_printk)
}
