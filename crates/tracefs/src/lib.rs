//! `tracefs`: a small, safe layer over the Linux tracing filesystem.
//!
//! * [`Tracefs`] finds the mount point (`/sys/kernel/tracing`, then
//!   `/proc/self/mountinfo`, then debugfs) and mounts tracefs when it is
//!   absent and we are allowed to ([`Tracefs::open`]).
//! * [`Instance`] is one tracing directory: the top level or
//!   `instances/NAME`. It enables events (with filters), sets options by name,
//!   `buffer_size_kb`, `trace_clock`, `tracing_on`, `set_event_pid`, and reads
//!   the per-CPU `stats`. [`OwnedInstance`] removes the instance it created
//!   when dropped.
//! * [`CpuReader`] moves whole ring-buffer pages from
//!   `per_cpu/cpuN/trace_pipe_raw` into a file with `splice(2)` through a pipe,
//!   so the data never passes through user memory on the record path.
//! * [`Marker`] writes events into an instance's buffer (`trace_marker`);
//!   [`PageReader`] reads its pages back with read(2), non-blocking.
//! * Directory listings ([`Instance::entries`], [`Instance::subdirs`]) come
//!   in the kernel's readdir order, which trace-cmd's listings print.
//! * [`Guard`] remembers the old value of every setting it changes and puts
//!   it back when dropped; its [`Restorer`] restores from another thread
//!   (a program's signal handling), and [`remove_dirs_after_exit`] removes
//!   instances that a process about to exit still holds open.
//!
//! The crate prints nothing and never exits the process: that policy is the
//! program's.
//!
//! Every error names the file (relative to the tracefs root) and the errno:
//! `tracefs: cannot write events/sched/enable: Permission denied`.

mod error;
mod fsio;
mod guard;
mod instance;
mod journal;
mod marker;
mod mount;
mod reader;
mod stats;

pub use error::{Error, Op, Result};
pub use fsio::glob_match;
pub use guard::{remove_dirs_after_exit, Guard, Restorer};
pub use instance::{Instance, OwnedInstance};
pub use journal::replay as replay_journal;
pub use marker::{Marker, PageReader};
pub use reader::{CpuReader, DrainStats};
pub use stats::CpuStats;

use std::path::{Path, PathBuf};

/// A mounted tracefs.
#[derive(Debug, Clone)]
pub struct Tracefs {
    root: PathBuf,
}

/// One event, by system and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId {
    /// The system (directory under `events/`), e.g. `sched`.
    pub system: String,
    /// The event name, e.g. `sched_switch`.
    pub name: String,
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.system, self.name)
    }
}

/// An event selection as given to `-e`: `all`, `SYSTEM`, `EVENT`,
/// `SYSTEM:EVENT` or `SYSTEM/EVENT`, where both parts may be globs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    /// The system pattern (`None`: any system).
    pub system: Option<String>,
    /// The event pattern (`None`: every event of the system).
    pub event: Option<String>,
}

impl EventSpec {
    /// Parses a `-e` argument. A bare word is kept as `system: Some(word)`
    /// with `event: None`; [`Tracefs::resolve`] falls back to an event of that
    /// name in any system when no such system exists, as trace-cmd does.
    pub fn parse(s: &str) -> Result<EventSpec> {
        let s = s.trim();
        if s.is_empty() {
            return Err(Error::Invalid("empty event name".into()));
        }
        if s == "all" {
            return Ok(EventSpec {
                system: None,
                event: None,
            });
        }
        let split = s.split_once(':').or_else(|| s.split_once('/'));
        match split {
            Some((sys, ev)) => {
                if sys.is_empty() && ev.is_empty() {
                    return Err(Error::Invalid(format!("bad event name '{s}'")));
                }
                let opt = |x: &str| (!x.is_empty() && x != "*").then(|| x.to_string());
                Ok(EventSpec {
                    system: opt(sys),
                    event: opt(ev),
                })
            }
            None => Ok(EventSpec {
                system: Some(s.to_string()),
                event: None,
            }),
        }
    }
}

impl std::fmt::Display for EventSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.system, &self.event) {
            (None, None) => write!(f, "all"),
            (Some(s), None) => write!(f, "{s}"),
            (None, Some(e)) => write!(f, "*:{e}"),
            (Some(s), Some(e)) => write!(f, "{s}:{e}"),
        }
    }
}

impl Tracefs {
    /// Finds tracefs, mounting it on `/sys/kernel/tracing` when it is not
    /// mounted anywhere and we have the privilege to mount.
    pub fn open() -> Result<Tracefs> {
        match mount::find() {
            Ok(root) => Ok(Tracefs { root }),
            Err(Error::NotMounted(_)) => mount::mount_default().map(|root| Tracefs { root }),
            Err(e) => Err(e),
        }
    }

    /// Finds a mounted tracefs without trying to mount one.
    pub fn find() -> Result<Tracefs> {
        mount::find().map(|root| Tracefs { root })
    }

    /// Uses `root` as the tracefs mount point (any directory with the tracefs
    /// layout, e.g. a fake one in tests).
    pub fn at(root: impl Into<PathBuf>) -> Result<Tracefs> {
        let root = root.into();
        if !root.join("events").is_dir() {
            return Err(Error::NotMounted(format!(
                "{} is not a tracefs (no events/ directory)",
                root.display()
            )));
        }
        Ok(Tracefs { root })
    }

    /// The mount point.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn abs(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Reads a file relative to the root.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>> {
        fsio::read_bytes(&self.abs(rel), rel)
    }

    /// Reads a text file relative to the root.
    pub fn read_string(&self, rel: &str) -> Result<String> {
        fsio::read_string(&self.abs(rel), rel)
    }

    /// Writes a control file relative to the root (O_TRUNC, one write).
    pub fn write(&self, rel: &str, value: &str) -> Result<()> {
        fsio::write(&self.abs(rel), rel, value.as_bytes(), true)
    }

    /// The top-level instance.
    pub fn top(&self) -> Instance {
        Instance::new(self.clone(), None)
    }

    /// An existing instance by name.
    pub fn instance(&self, name: &str) -> Result<Instance> {
        instance::check_name(name)?;
        let inst = Instance::new(self.clone(), Some(name.to_string()));
        if !inst.dir().is_dir() {
            return Err(Error::NotFound {
                what: "instance",
                name: name.to_string(),
            });
        }
        Ok(inst)
    }

    /// The top instance for `None`, the named instance otherwise.
    pub fn instance_or_top(&self, name: Option<&str>) -> Result<Instance> {
        match name {
            None => Ok(self.top()),
            Some(n) => self.instance(n),
        }
    }

    /// Creates `instances/NAME`; it is removed again when the returned value
    /// is dropped (unless [`OwnedInstance::keep`] is called).
    pub fn create_instance(&self, name: &str) -> Result<OwnedInstance> {
        instance::create(self, name)
    }

    /// Returns the named instance, creating it when it does not exist. The
    /// flag tells whether it was created (and should be removed by the caller).
    pub fn instance_or_create(&self, name: &str) -> Result<(Instance, bool)> {
        match self.instance(name) {
            Ok(i) => Ok((i, false)),
            Err(Error::NotFound { .. }) => {
                let owned = self.create_instance(name)?;
                Ok((owned.keep(), true))
            }
            Err(e) => Err(e),
        }
    }

    /// Removes `instances/NAME`.
    pub fn remove_instance(&self, name: &str) -> Result<()> {
        instance::check_name(name)?;
        let rel = format!("instances/{name}");
        std::fs::remove_dir(self.abs(&rel)).map_err(|e| Error::io(Op::Remove, rel, e))
    }

    /// Names of all instances.
    pub fn instances(&self) -> Result<Vec<String>> {
        if !self.abs("instances").is_dir() {
            return Ok(Vec::new());
        }
        fsio::list_dir(&self.abs("instances"), "instances", true)
    }

    /// All event systems (directories under `events/`).
    pub fn systems(&self) -> Result<Vec<String>> {
        fsio::list_dir(&self.abs("events"), "events", true)
    }

    /// All events of a system.
    pub fn events(&self, system: &str) -> Result<Vec<String>> {
        let rel = format!("events/{system}");
        let abs = self.abs(&rel);
        if !abs.is_dir() {
            return Err(Error::NotFound {
                what: "event system",
                name: system.to_string(),
            });
        }
        fsio::list_dir(&abs, &rel, true)
    }

    /// Every event of every system.
    pub fn all_events(&self) -> Result<Vec<EventId>> {
        let mut out = Vec::new();
        for sys in self.systems()? {
            for name in self.events(&sys)? {
                out.push(EventId {
                    system: sys.clone(),
                    name,
                });
            }
        }
        Ok(out)
    }

    /// Turns an [`EventSpec`] into the list of existing events it names.
    /// An unknown name is an error (never silently ignored).
    pub fn resolve(&self, spec: &EventSpec) -> Result<Vec<EventId>> {
        if let Some(found) = self.resolve_exact(spec) {
            return Ok(found);
        }
        let all = self.all_events()?;
        let matches = |sys_pat: Option<&str>, ev_pat: Option<&str>| -> Vec<EventId> {
            all.iter()
                .filter(|e| sys_pat.is_none_or(|p| glob_match(p, &e.system)))
                .filter(|e| ev_pat.is_none_or(|p| glob_match(p, &e.name)))
                .cloned()
                .collect()
        };
        let mut found = matches(spec.system.as_deref(), spec.event.as_deref());
        if found.is_empty() && spec.event.is_none() {
            // A bare word that is not a system: an event of any system.
            found = matches(None, spec.system.as_deref());
        }
        if found.is_empty() {
            return Err(Error::NotFound {
                what: "event",
                name: spec.to_string(),
            });
        }
        Ok(found)
    }

    /// [`Tracefs::resolve`] without listing every system, for a system
    /// (and event) named without wildcards that exists: `None` otherwise,
    /// and the full listing decides. Listing every system's directory is
    /// most of `record`'s setup in a small guest (eventfs builds them on
    /// demand); the answer is the same.
    fn resolve_exact(&self, spec: &EventSpec) -> Option<Vec<EventId>> {
        let plain = |p: &str| !p.contains(['*', '?']) && p != "." && p != "..";
        let system = spec.system.as_deref().filter(|s| plain(s))?;
        let id = |name: String| EventId {
            system: system.to_string(),
            name,
        };
        match spec.event.as_deref() {
            None => {
                let names = self.events(system).ok()?;
                (!names.is_empty()).then(|| names.into_iter().map(id).collect())
            }
            Some(ev) if plain(ev) => self
                .abs(&format!("events/{system}/{ev}"))
                .is_dir()
                .then(|| vec![id(ev.to_string())]),
            Some(_) => None,
        }
    }

    /// The `format` file of an event.
    pub fn event_format(&self, system: &str, name: &str) -> Result<String> {
        self.read_string(&format!("events/{system}/{name}/format"))
    }

    /// `events/header_page`.
    pub fn header_page(&self) -> Result<String> {
        self.read_string("events/header_page")
    }

    /// `events/header_event`.
    pub fn header_event(&self) -> Result<String> {
        self.read_string("events/header_event")
    }

    /// `printk_formats`.
    pub fn printk_formats(&self) -> Result<Vec<u8>> {
        self.read("printk_formats")
    }

    /// `saved_cmdlines`.
    pub fn saved_cmdlines(&self) -> Result<Vec<u8>> {
        self.read("saved_cmdlines")
    }

    /// `available_tracers`, split.
    pub fn available_tracers(&self) -> Result<Vec<String>> {
        Ok(self
            .read_string("available_tracers")?
            .split_whitespace()
            .map(str::to_string)
            .collect())
    }

    /// The content of `/proc/kallsyms` (kernel symbols; zero addresses when
    /// not permitted by kptr_restrict).
    pub fn kallsyms() -> Result<Vec<u8>> {
        fsio::read_bytes(Path::new("/proc/kallsyms"), "/proc/kallsyms")
    }

    /// Whether the stack tracer is on (`/proc/sys/kernel/stack_tracer_enabled`
    /// above 0); `None` when the kernel has no stack tracer.
    pub fn stack_tracer_enabled() -> Option<bool> {
        let p = "/proc/sys/kernel/stack_tracer_enabled";
        let v = fsio::read_string(Path::new(p), p).ok()?;
        Some(v.trim().parse::<i64>().unwrap_or(0) > 0)
    }

    /// `sysname nodename release version machine`, the way trace-cmd stores
    /// the UNAME option.
    pub fn uname() -> String {
        match nix::sys::utsname::uname() {
            Ok(u) => format!(
                "{} {} {} {} {}",
                u.sysname().to_string_lossy(),
                u.nodename().to_string_lossy(),
                u.release().to_string_lossy(),
                u.version().to_string_lossy(),
                u.machine().to_string_lossy()
            ),
            Err(_) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_spec_parsing() {
        let s = EventSpec::parse("sched:sched_switch").unwrap();
        assert_eq!(s.system.as_deref(), Some("sched"));
        assert_eq!(s.event.as_deref(), Some("sched_switch"));
        let s = EventSpec::parse("syscalls/sys_enter_*").unwrap();
        assert_eq!(s.event.as_deref(), Some("sys_enter_*"));
        let s = EventSpec::parse("sched").unwrap();
        assert_eq!(
            (s.system.as_deref(), s.event.as_deref()),
            (Some("sched"), None)
        );
        let s = EventSpec::parse("all").unwrap();
        assert_eq!((s.system, s.event), (None, None));
        let s = EventSpec::parse(":sched_switch").unwrap();
        assert_eq!(
            (s.system.as_deref(), s.event.as_deref()),
            (None, Some("sched_switch"))
        );
        assert!(EventSpec::parse("").is_err());
        assert!(EventSpec::parse(":").is_err());
    }
}
