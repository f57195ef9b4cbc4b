//! `report -V` as trace-cmd 3.1.6 prints it: `version = N`, then
//! libtraceevent's own messages at its info level: one `registering
//! plugin: PATH` per plugin it loads, and one `overriding event (ID)
//! SYSTEM:NAME with new print handler` per event format parsed after a
//! plugin registered a handler for it. trace-cmd parses the formats of a
//! version 6 file in file order (ftrace's first), and those of a version 7
//! file section by section from the last one read: the event systems, then
//! ftrace's.

use std::io::Write;

use anyhow::Result;
use ustack_tracedata::TraceFile;
use ustack_traceevent as tep;

use crate::tracecmd::Printer;

/// The printer of `file`, set up with libtraceevent's messages on (they go
/// to the C `stdout`, written out before this returns).
pub fn printer<'f>(
    file: &'f TraceFile,
    plugin_flags: std::ffi::c_int,
    out: &mut dyn Write,
) -> Result<Printer<'f>> {
    writeln!(out, "version = {}", file.version())?;
    out.flush()?;
    tep::set_log_level(tep::LOG_INFO);
    let mut printer = Printer::with_plugin_flags_and_order(file, plugin_flags, Some(&[]))?;
    // trace-cmd sets its own handlers up only when it loads every plugin.
    let plugins = plugin_flags == 0;
    for id in parse_order(file) {
        let format = file.formats().text_by_id(id);
        let name = format.map(|(_, text)| tep::screen::event_name(text));
        // trace-cmd's own handlers of the function graph events.
        if let (true, Some("funcgraph_entry" | "funcgraph_exit")) = (plugins, name.as_deref()) {
            tep::flush_c_stdout();
            writeln!(
                out,
                "overriding event ({id}) ftrace:{} with new print handler",
                name.as_deref().unwrap_or("")
            )?;
            out.flush()?;
        }
        printer.tep.register(file.formats(), id);
    }
    tep::flush_c_stdout();
    Ok(printer)
}

/// The order in which trace-cmd parses the event formats of `file`.
fn parse_order(file: &TraceFile) -> Vec<u16> {
    let f = file.formats();
    let is_ftrace = |id: &u16| f.text_by_id(*id).is_some_and(|(s, _)| s == "ftrace");
    let ftrace = f.ids().filter(is_ftrace);
    let events = f.ids().filter(|id| !is_ftrace(id));
    if file.version() >= 7 {
        events.chain(ftrace).collect()
    } else {
        ftrace.chain(events).collect()
    }
}
