//! The `report` forms that list what libtraceevent loaded from a file:
//! `-f` (kernel functions), `-P` (printk formats) and `--check-events`.
//!
//! libtraceevent prints the two lists itself, with `printf`: they go to the
//! process's C `stdout`, not to an `io::Write` (the one exception to this
//! crate printing nothing). Flush Rust's buffered stdout first; C's is
//! flushed when the process exits.

use anyhow::{anyhow, Result};
use ustack_tracedata::TraceFile;
use ustack_traceevent::{FileTep, TepError};

/// libtraceevent loaded with every format of `file`, as trace-cmd loads it.
fn loaded(file: &TraceFile) -> Result<FileTep, TepError> {
    let (mut t, _) = FileTep::new(file)?;
    t.register_all(file.formats());
    Ok(t)
}

/// Whether libtraceevent parses every event format of `file`.
pub fn formats_parse(file: &TraceFile) -> bool {
    loaded(file).is_ok_and(|t| t.tep().skipped_formats().is_empty())
}

/// Prints the kernel functions of `file` (`%016llx name [module]`, by
/// address) to the C `stdout`, as `trace-cmd report -f`; `extra` is the
/// text of a kallsyms file given with `--kallsyms`, added to the file's.
pub fn print_functions(file: &TraceFile, extra: Option<&[u8]>) -> Result<()> {
    let mut t = loaded(file).map_err(|e| anyhow!("{e}"))?;
    if let Some(text) = extra {
        t.tep_mut()
            .parse_kallsyms(text)
            .map_err(|e| anyhow!("{e}"))?;
    }
    t.tep().print_funcs();
    Ok(())
}

/// Prints the printk formats of `file` to the C `stdout`, as
/// `trace-cmd report -P`.
pub fn print_printk(file: &TraceFile) -> Result<()> {
    loaded(file)
        .map_err(|e| anyhow!("{e}"))?
        .tep()
        .print_printk();
    Ok(())
}

/// The libtraceevent plugins a handle loads, as `trace-cmd list -P`
/// prints them: `  PATH` per line, the last loaded first.
pub fn plugin_list() -> Result<Vec<u8>> {
    let mut tep = ustack_traceevent::Tep::new(8, 4096).map_err(|e| anyhow!("{e}"))?;
    tep.load_plugins();
    Ok(tep.plugin_list_text())
}
