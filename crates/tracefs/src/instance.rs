//! Tracing instances: the top level directory or `instances/NAME`.

use crate::error::{Error, Op, Result};
use crate::fsio;
use crate::marker::{Marker, PageReader};
use crate::reader::CpuReader;
use crate::{EventId, Tracefs};
use std::path::PathBuf;

/// One tracing directory (the top instance or `instances/NAME`).
///
/// All paths given to its methods are relative to the instance directory;
/// errors show them relative to the tracefs root
/// (`instances/NAME/options/stacktrace`).
#[derive(Debug, Clone)]
pub struct Instance {
    fs: Tracefs,
    name: Option<String>,
    prefix: String,
}

pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Error::Invalid(format!("bad instance name '{name}'")));
    }
    Ok(())
}

pub(crate) fn create(fs: &Tracefs, name: &str) -> Result<OwnedInstance> {
    check_name(name)?;
    let rel = format!("instances/{name}");
    std::fs::create_dir(fs.abs(&rel)).map_err(|e| Error::io(Op::Create, rel, e))?;
    Ok(OwnedInstance {
        inst: Some(Instance::new(fs.clone(), Some(name.to_string()))),
    })
}

impl Instance {
    pub(crate) fn new(fs: Tracefs, name: Option<String>) -> Instance {
        let prefix = match &name {
            Some(n) => format!("instances/{n}/"),
            None => String::new(),
        };
        Instance { fs, name, prefix }
    }

    /// The instance name (`None` for the top instance).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The tracefs this instance belongs to.
    pub fn tracefs(&self) -> &Tracefs {
        &self.fs
    }

    /// Absolute path of the instance directory.
    pub fn dir(&self) -> PathBuf {
        self.fs.abs(&self.prefix)
    }

    /// A path relative to the instance, as shown in errors.
    pub fn shown(&self, rel: &str) -> String {
        format!("{}{rel}", self.prefix)
    }

    /// Absolute path of a file of this instance.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.fs.abs(&self.shown(rel))
    }

    /// Whether a file of this instance exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// Reads a file of this instance.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>> {
        fsio::read_bytes(&self.path(rel), &self.shown(rel))
    }

    /// Reads a text file of this instance.
    pub fn read_string(&self, rel: &str) -> Result<String> {
        fsio::read_string(&self.path(rel), &self.shown(rel))
    }

    /// Writes a control file (O_TRUNC, a single write).
    pub fn write(&self, rel: &str, value: &str) -> Result<()> {
        fsio::write(&self.path(rel), &self.shown(rel), value.as_bytes(), true)
    }

    /// Opens a file of this instance for reading as a stream (`trace`,
    /// `trace_pipe`: text the kernel produces as it is read, or waits for).
    pub fn open_read(&self, rel: &str) -> Result<std::fs::File> {
        std::fs::File::open(self.path(rel)).map_err(|e| Error::io(Op::Open, self.shown(rel), e))
    }

    /// Whether `rel` is a directory of this instance.
    pub fn is_dir(&self, rel: &str) -> bool {
        self.path(rel).is_dir()
    }

    /// The names in directory `rel` (`options`, `instances`), in the
    /// kernel's readdir order, which is what trace-cmd prints.
    pub fn entries(&self, rel: &str) -> Result<Vec<String>> {
        fsio::list_dir_unsorted(&self.path(rel), &self.shown(rel), false)
    }

    /// The subdirectories of `rel` (`events`, `events/SYSTEM`) in the
    /// kernel's readdir order; a symlink to a directory counts as one.
    pub fn subdirs(&self, rel: &str) -> Result<Vec<String>> {
        fsio::list_dir_unsorted(&self.path(rel), &self.shown(rel), true)
    }

    /// Opens `trace_marker`, to write events into this instance's buffer.
    pub fn marker(&self) -> Result<Marker> {
        Marker::open(&self.path("trace_marker"), self.shown("trace_marker"))
    }

    /// Appends to a control file (O_APPEND, a single write), e.g. to add a
    /// pid to `set_event_pid` without clearing it.
    pub fn append(&self, rel: &str, value: &str) -> Result<()> {
        fsio::write(&self.path(rel), &self.shown(rel), value.as_bytes(), false)
    }

    // ---- events ----

    fn event_dir(e: &EventId) -> String {
        format!("events/{}/{}", e.system, e.name)
    }

    /// Whether an event is enabled in this instance.
    pub fn event_enabled(&self, e: &EventId) -> Result<bool> {
        let v = self.read_string(&format!("{}/enable", Self::event_dir(e)))?;
        Ok(v.trim_start().starts_with('1'))
    }

    /// Enables or disables one event.
    pub fn set_event_enabled(&self, e: &EventId, on: bool) -> Result<()> {
        self.write(
            &format!("{}/enable", Self::event_dir(e)),
            if on { "1" } else { "0" },
        )
    }

    /// The filter of an event (`None` when it has none).
    pub fn event_filter(&self, e: &EventId) -> Result<Option<String>> {
        let v = self.read_string(&format!("{}/filter", Self::event_dir(e)))?;
        let v = v.trim();
        // A system filter that does not fit this event leaves its text
        // here followed by a caret and a `parse_error:` line; the event
        // then has no filter.
        if v.contains("\nparse_error:") {
            return Ok(None);
        }
        Ok((v != "none" && !v.is_empty()).then(|| v.to_string()))
    }

    /// Sets the filter of an event; `None` clears it. A filter the kernel
    /// refuses is an [`Error::Filter`] with the kernel's reason.
    pub fn set_event_filter(&self, e: &EventId, filter: Option<&str>) -> Result<()> {
        let rel = format!("{}/filter", Self::event_dir(e));
        self.write_filter(&rel, &e.to_string(), filter)
    }

    /// The system-wide filter file (`events/SYSTEM/filter`): the kernel
    /// sets the filter on each event of the system that has the fields it
    /// names, and leaves the others alone. `None` clears every event's
    /// filter in the system.
    pub fn set_system_filter(&self, system: &str, filter: Option<&str>) -> Result<()> {
        self.write_filter(&format!("events/{system}/filter"), system, filter)
    }

    fn write_filter(&self, rel: &str, target: &str, filter: Option<&str>) -> Result<()> {
        let value = filter.unwrap_or("0");
        match self.write(rel, value) {
            Err(e) if filter.is_some() && e.raw_os_error() == Some(libc::EINVAL) => {
                let log = self.read_string("error_log").unwrap_or_default();
                Err(Error::Filter {
                    target: target.to_string(),
                    filter: value.to_string(),
                    reason: filter_error(&log, value)
                        .unwrap_or_else(|| "the kernel refused it".to_string()),
                })
            }
            r => r,
        }
    }

    /// The events enabled in this instance, from `set_event`.
    pub fn enabled_events(&self) -> Result<Vec<EventId>> {
        let text = self.read_string("set_event")?;
        Ok(text
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(s, n)| EventId {
                system: s.to_string(),
                name: n.to_string(),
            })
            .collect())
    }

    /// Disables every event (`events/enable`).
    pub fn disable_all_events(&self) -> Result<()> {
        self.write("events/enable", "0")
    }

    // ---- options ----

    /// Names of the options this instance has.
    pub fn option_names(&self) -> Result<Vec<String>> {
        fsio::list_dir(&self.path("options"), &self.shown("options"), false)
    }

    /// Whether an option exists in this instance.
    pub fn has_option(&self, name: &str) -> bool {
        !name.contains('/') && self.exists(&format!("options/{name}"))
    }

    /// Reads an option.
    pub fn option(&self, name: &str) -> Result<bool> {
        self.check_option(name)?;
        let v = self.read_string(&format!("options/{name}"))?;
        Ok(v.trim() == "1")
    }

    /// Sets an option.
    pub fn set_option(&self, name: &str, on: bool) -> Result<()> {
        self.check_option(name)?;
        self.write(&format!("options/{name}"), if on { "1" } else { "0" })
    }

    fn check_option(&self, name: &str) -> Result<()> {
        if !self.has_option(name) {
            return Err(Error::NotFound {
                what: "option",
                name: name.to_string(),
            });
        }
        Ok(())
    }

    // ---- buffers, clock, switches ----

    /// `buffer_size_kb` per CPU; `None` when the CPUs differ (`X`). An
    /// unexpanded buffer (`7 (expanded: 1408)`) reports the expanded size.
    pub fn buffer_size_kb(&self) -> Result<Option<u64>> {
        let v = self.read_string("buffer_size_kb")?;
        parse_buffer_size(&v).map_err(|detail| Error::Parse {
            path: self.shown("buffer_size_kb"),
            detail,
        })
    }

    /// `per_cpu/cpuN/buffer_size_kb`.
    pub fn cpu_buffer_size_kb(&self, cpu: u32) -> Result<u64> {
        let rel = format!("per_cpu/cpu{cpu}/buffer_size_kb");
        let v = self.read_string(&rel)?;
        parse_buffer_size(&v)
            .and_then(|o| o.ok_or_else(|| "X".to_string()))
            .map_err(|detail| Error::Parse {
                path: self.shown(&rel),
                detail,
            })
    }

    /// Sets `buffer_size_kb` for all CPUs.
    pub fn set_buffer_size_kb(&self, kb: u64) -> Result<()> {
        self.write("buffer_size_kb", &kb.to_string())
    }

    /// The size of one ring-buffer page (sub-buffer) in bytes.
    pub fn page_size(&self) -> usize {
        if let Ok(v) = self.read_string("buffer_subbuf_size_kb") {
            if let Ok(kb) = v.trim().parse::<usize>() {
                if kb > 0 {
                    return kb * 1024;
                }
            }
        }
        nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .map(|p| p as usize)
            .unwrap_or(4096)
    }

    /// The current trace clock and all available ones.
    pub fn trace_clock(&self) -> Result<(String, Vec<String>)> {
        let v = self.read_string("trace_clock")?;
        parse_clock(&v).ok_or_else(|| Error::Parse {
            path: self.shown("trace_clock"),
            detail: format!("no [current] clock in '{}'", v.trim()),
        })
    }

    /// Sets the trace clock.
    pub fn set_trace_clock(&self, clock: &str) -> Result<()> {
        let (_, avail) = self.trace_clock()?;
        if !avail.iter().any(|c| c == clock) {
            return Err(Error::NotFound {
                what: "trace clock",
                name: clock.to_string(),
            });
        }
        self.write("trace_clock", clock)
    }

    /// `tracing_on`.
    pub fn tracing_on(&self) -> Result<bool> {
        Ok(self.read_string("tracing_on")?.trim() == "1")
    }

    /// Sets `tracing_on`.
    pub fn set_tracing_on(&self, on: bool) -> Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// `current_tracer`.
    pub fn current_tracer(&self) -> Result<String> {
        Ok(self.read_string("current_tracer")?.trim().to_string())
    }

    /// Sets `current_tracer`.
    pub fn set_current_tracer(&self, tracer: &str) -> Result<()> {
        self.write("current_tracer", tracer)
    }

    /// The pids in `set_event_pid`.
    pub fn event_pids(&self) -> Result<Vec<u32>> {
        Ok(parse_pids(&self.read_string("set_event_pid")?))
    }

    /// Replaces `set_event_pid` with `pids` (empty clears it).
    pub fn set_event_pids(&self, pids: &[u32]) -> Result<()> {
        let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        self.write("set_event_pid", &list.join(" "))
    }

    /// Clears the ring buffer (opens `trace` with O_TRUNC).
    pub fn clear_buffer(&self) -> Result<()> {
        self.write("trace", "")
    }

    // ---- per-CPU ----

    /// The CPU numbers that have a `per_cpu/cpuN` directory.
    pub fn cpus(&self) -> Result<Vec<u32>> {
        let names = fsio::list_dir(&self.path("per_cpu"), &self.shown("per_cpu"), true)?;
        let mut cpus: Vec<u32> = names
            .iter()
            .filter_map(|n| n.strip_prefix("cpu")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        Ok(cpus)
    }

    /// The number of CPUs for a trace.dat file: highest CPU number + 1.
    pub fn cpu_count(&self) -> Result<u32> {
        Ok(self.cpus()?.last().map(|c| c + 1).unwrap_or(0))
    }

    /// Opens a splice reader on `per_cpu/cpuN/trace_pipe_raw`.
    pub fn cpu_reader(&self, cpu: u32) -> Result<CpuReader> {
        let rel = format!("per_cpu/cpu{cpu}/trace_pipe_raw");
        CpuReader::open(cpu, &self.path(&rel), &self.shown(&rel), self.page_size())
    }

    /// Opens a non-blocking page reader on `per_cpu/cpuN/trace_pipe_raw`.
    pub fn page_reader(&self, cpu: u32) -> Result<PageReader> {
        let rel = format!("per_cpu/cpu{cpu}/trace_pipe_raw");
        PageReader::open(cpu, &self.path(&rel), self.shown(&rel))
    }
}

/// An instance this program created; removed (rmdir) when dropped.
#[derive(Debug)]
pub struct OwnedInstance {
    inst: Option<Instance>,
}

impl OwnedInstance {
    /// The instance.
    pub fn instance(&self) -> &Instance {
        self.inst.as_ref().expect("instance present until drop")
    }

    /// Keeps the instance: it will not be removed.
    pub fn keep(mut self) -> Instance {
        self.inst.take().expect("instance present until drop")
    }

    /// Removes the instance now, reporting failure (drop ignores it).
    pub fn remove(mut self) -> Result<()> {
        match self.inst.take() {
            Some(i) => i.fs.remove_instance(i.name.as_deref().unwrap_or_default()),
            None => Ok(()),
        }
    }
}

impl std::ops::Deref for OwnedInstance {
    type Target = Instance;
    fn deref(&self) -> &Instance {
        self.instance()
    }
}

impl Drop for OwnedInstance {
    fn drop(&mut self) {
        if let Some(i) = self.inst.take() {
            if let Some(name) = i.name.as_deref() {
                let _ = i.fs.remove_instance(name);
            }
        }
    }
}

pub(crate) fn parse_buffer_size(v: &str) -> std::result::Result<Option<u64>, String> {
    let v = v.trim();
    if v.starts_with('X') {
        return Ok(None);
    }
    if let Some(pos) = v.find("(expanded:") {
        let rest = v[pos + "(expanded:".len()..]
            .trim()
            .trim_end_matches(')')
            .trim();
        return rest
            .parse()
            .map(Some)
            .map_err(|_| format!("bad size '{v}'"));
    }
    v.split_whitespace()
        .next()
        .and_then(|t| t.parse().ok())
        .map(Some)
        .ok_or_else(|| format!("bad size '{v}'"))
}

pub(crate) fn parse_clock(v: &str) -> Option<(String, Vec<String>)> {
    let mut current = None;
    let mut all = Vec::new();
    for tok in v.split_whitespace() {
        if let Some(c) = tok.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            current = Some(c.to_string());
            all.push(c.to_string());
        } else {
            all.push(tok.to_string());
        }
    }
    current.map(|c| (c, all))
}

pub(crate) fn parse_pids(v: &str) -> Vec<u32> {
    v.split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_sizes() {
        assert_eq!(parse_buffer_size("1408\n"), Ok(Some(1408)));
        assert_eq!(parse_buffer_size("7 (expanded: 1408)\n"), Ok(Some(1408)));
        assert_eq!(parse_buffer_size("X\n"), Ok(None));
        assert!(parse_buffer_size("what").is_err());
    }

    #[test]
    fn clocks() {
        let (c, all) = parse_clock("[local] global counter uptime perf mono\n").unwrap();
        assert_eq!(c, "local");
        assert_eq!(
            all,
            ["local", "global", "counter", "uptime", "perf", "mono"]
        );
        let (c, _) = parse_clock("local [global] x86-tsc").unwrap();
        assert_eq!(c, "global");
        assert!(parse_clock("local global").is_none());
    }

    #[test]
    fn pids() {
        assert_eq!(parse_pids("12\n345\n"), vec![12, 345]);
        assert!(parse_pids("").is_empty());
    }
}

/// The kernel's reason for refusing `filter`, from the last entry about it
/// in an `error_log` text:
///
/// ```text
/// [ 1732.235071] event filter parse error: error: Field not found
///   Command: nosuch == 1
///                   ^
/// ```
///
/// gives `Field not found at 'nosuch == 1'` (the text from the caret on).
pub(crate) fn filter_error(log: &str, filter: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    let mut found = None;
    for (i, l) in lines.iter().enumerate() {
        let Some(cmd) = l.strip_prefix("  Command: ") else {
            continue;
        };
        // The kernel logs the filter with the white space around it
        // stripped.
        if cmd != filter.trim() || i == 0 {
            continue;
        }
        let Some((_, reason)) = lines[i - 1].rsplit_once("error: ") else {
            continue;
        };
        let col = lines
            .get(i + 1)
            .and_then(|c| c.find('^'))
            .and_then(|c| c.checked_sub("  Command: ".len()))
            .filter(|&c| c < cmd.len() && cmd.is_char_boundary(c));
        found = Some(match col {
            Some(c) => format!("{reason} at '{}'", &cmd[c..]),
            None => reason.to_string(),
        });
    }
    found
}

#[cfg(test)]
mod filter_error_tests {
    use super::filter_error;

    #[test]
    fn the_last_entry_about_the_filter_gives_the_reason_and_place() {
        let log = [
            "[ 1.0] event filter parse error: error: Invalid operator",
            "  Command: a === 1",
            "              ^",
            "[ 2.0] event filter parse error: error: Field not found",
            "  Command: x == 1 && nosuch == 2",
            "                     ^",
        ]
        .join("\n");
        let log = log.as_str();
        assert_eq!(
            filter_error(log, "x == 1 && nosuch == 2").as_deref(),
            Some("Field not found at 'nosuch == 2'")
        );
        assert_eq!(
            filter_error(log, "a === 1").as_deref(),
            Some("Invalid operator at '== 1'")
        );
        assert_eq!(filter_error(log, "other"), None);
    }

    #[test]
    fn a_filter_with_white_space_around_it_is_found_stripped() {
        // What the kernel logs for `prev_pid == ` (the caret past the end).
        let log = [
            "[ 2474.500885] event filter parse error: error: Invalid value (did you forget quotes)?",
            "  Command: prev_pid ==",
            "                       ^",
        ]
        .join("\n");
        assert_eq!(
            filter_error(&log, " prev_pid == ").as_deref(),
            Some("Invalid value (did you forget quotes)?")
        );
    }
}
