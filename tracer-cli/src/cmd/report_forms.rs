//! The `report` forms that describe the file instead of printing its
//! events, as trace-cmd 3.1.6 prints them and in its order of precedence:
//! `-p` (page sizes), `-e` (endianness), `--events`/`--event` (nothing:
//! trace-cmd asks before reading the formats), `--check-events` (exit
//! status), `-f` (kernel functions), `-P` (printk formats), `-E` (events).

use std::io::Write;

use anyhow::Result;
use ustack_printer::listings;
use ustack_tracedata::TraceFile;

use super::report::Args;

/// Runs the form `args` asks for, if any; `None` to print the events.
pub fn run(args: &Args, file: &TraceFile, out: &mut dyn Write) -> Option<Result<()>> {
    let form = if args.page_size {
        page_size
    } else if args.endian {
        endian
    } else if args.events || args.event.is_some() {
        |_: &TraceFile, out: &mut dyn Write| Ok(out.flush()?)
    } else if args.check_events {
        check_events
    } else if args.functions {
        return Some(functions(file, args, out));
    } else if args.printk {
        printk
    } else if args.list_events {
        list_events
    } else {
        return None;
    };
    Some(form(file, out))
}

fn page_size(file: &TraceFile, out: &mut dyn Write) -> Result<()> {
    let host = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .unwrap_or(0);
    writeln!(
        out,
        "file page size is {}, and host page size is {host}",
        file.page_size()
    )?;
    Ok(out.flush()?)
}

fn endian(_file: &TraceFile, out: &mut dyn Write) -> Result<()> {
    // The reader only opens little-endian files.
    let host = if cfg!(target_endian = "big") {
        "big"
    } else {
        "little"
    };
    writeln!(out, "file is little endian and host is {host} endian")?;
    Ok(out.flush()?)
}

/// Exits 0 when libtraceevent parses every format of the file, else
/// EINVAL (22), printing nothing.
fn check_events(file: &TraceFile, out: &mut dyn Write) -> Result<()> {
    out.flush()?;
    let einval = nix::errno::Errno::EINVAL as i32;
    std::process::exit(if listings::formats_parse(file) {
        0
    } else {
        einval
    })
}

fn functions(file: &TraceFile, args: &Args, out: &mut dyn Write) -> Result<()> {
    out.flush()?;
    listings::print_functions(file, args.kallsyms_text()?.as_deref())
}

fn printk(file: &TraceFile, out: &mut dyn Write) -> Result<()> {
    out.flush()?;
    listings::print_printk(file)
}

/// `system:event` of every format, sorted by system, then name, then id
/// (libtraceevent's `TEP_EVENT_SORT_SYSTEM`).
fn list_events(file: &TraceFile, out: &mut dyn Write) -> Result<()> {
    let mut events: Vec<_> = file
        .formats()
        .iter()
        .map(|f| (f.system.as_str(), f.name.as_str(), f.id))
        .collect();
    events.sort_unstable();
    for (system, name, _) in events {
        writeln!(out, "{system}:{name}")?;
    }
    Ok(out.flush()?)
}
