//! Writing the trace.dat: metadata from tracefs ([`collect_meta`]), the
//! writer options of the command line ([`write_options`]), the per-CPU temp
//! files ([`TempFiles`]) and the buffers built from them ([`buffer_data`],
//! [`write_dat`]). Shared by `record`, `extract` and `tui --live`.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use ustack_tracedata::compress::Compression;
use ustack_tracedata::writer::{
    write_trace_dat, BufferData, CpuData, EventSystem, FileVersion, ProcMap, TraceMeta,
    WriteOptions, WriteSummary,
};
use ustack_tracefs::{CpuStats, EventId, Instance, Tracefs};

/// Builds the trace.dat metadata from tracefs: headers, the ftrace formats,
/// the formats of `events` (all events when `None`), kallsyms, printk
/// formats, saved_cmdlines, uname, clock and CPU count.
pub fn collect_meta(
    fs: &Tracefs,
    inst: &Instance,
    events: Option<&[EventId]>,
    procmaps: Vec<ProcMap>,
) -> Result<TraceMeta> {
    let mut systems: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    let all;
    let list: &[EventId] = match events {
        Some(l) => l,
        None => {
            all = fs.all_events()?;
            &all
        }
    };
    for e in list {
        if e.system == "ftrace" {
            continue;
        }
        // Some events have no format file (e.g. ftrace-only markers): skip them.
        if let Ok(f) = fs.event_format(&e.system, &e.name) {
            systems
                .entry(e.system.clone())
                .or_default()
                .push(f.into_bytes());
        }
    }
    let mut ftrace_formats = Vec::new();
    for name in fs.events("ftrace").unwrap_or_default() {
        if let Ok(f) = fs.event_format("ftrace", &name) {
            ftrace_formats.push(f.into_bytes());
        }
    }
    Ok(TraceMeta {
        page_size: inst.page_size() as u32,
        header_page: fs.header_page()?.into_bytes(),
        header_event: fs.header_event()?.into_bytes(),
        ftrace_formats,
        event_systems: systems
            .into_iter()
            .map(|(name, formats)| EventSystem { name, formats })
            .collect(),
        kallsyms: Tracefs::kallsyms()?,
        printk_formats: fs.printk_formats()?,
        cmdlines: fs.saved_cmdlines()?,
        uname: Some(Tracefs::uname()),
        trace_clock: Some(inst.read_string("trace_clock")?.trim_end().to_string()),
        cpu_count: inst.cpu_count()?,
        procmaps,
        ..TraceMeta::default()
    })
}

/// Checks that `output` can be written, before anything is traced: it is
/// not a directory, its directory exists and is writable, and an existing
/// file there is writable. Nothing is created.
pub fn check_output(output: &Path) -> Result<()> {
    use nix::unistd::{access, AccessFlags};
    if output.is_dir() {
        bail!("cannot write {}: it is a directory", output.display());
    }
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "cannot write {}: no directory {}",
            output.display(),
            dir.display()
        );
    }
    access(dir, AccessFlags::W_OK | AccessFlags::X_OK)
        .with_context(|| format!("cannot write {}: {}", output.display(), dir.display()))?;
    if output.exists() {
        access(output, AccessFlags::W_OK)
            .with_context(|| format!("cannot write {}", output.display()))?;
    }
    Ok(())
}

/// Room kept free on the output's file system while recording, released
/// just before the trace.dat is written: if the per-CPU files fill the
/// disk, the file's metadata (kallsyms, formats: about 1 MB compressed)
/// and the compressed pages still fit, so what was recorded is kept.
pub struct SpaceReserve {
    path: Option<PathBuf>,
}

/// How much [`SpaceReserve`] keeps.
pub const RESERVE_BYTES: u64 = 4 << 20;

impl SpaceReserve {
    /// Allocates [`RESERVE_BYTES`] in `output` itself (created), when it is
    /// a regular file (or does not exist yet) on a file system that can
    /// preallocate; otherwise reserves nothing. Too little space for it is
    /// an error: the recording could not be kept.
    pub fn take(output: &Path) -> Result<SpaceReserve> {
        if output.exists() && !output.is_file() {
            return Ok(SpaceReserve { path: None }); // e.g. /dev/null
        }
        let f =
            File::create(output).with_context(|| format!("cannot write {}", output.display()))?;
        let reserve = SpaceReserve {
            path: Some(output.to_path_buf()),
        };
        use nix::fcntl::{fallocate, FallocateFlags};
        match fallocate(&f, FallocateFlags::empty(), 0, RESERVE_BYTES as i64) {
            Ok(()) => Ok(reserve),
            Err(nix::errno::Errno::ENOSPC) => bail!(
                "cannot write {}: less than {} MiB free for it",
                output.display(),
                RESERVE_BYTES >> 20
            ),
            Err(_) => Ok(reserve), // no preallocation here (e.g. some FUSE)
        }
    }

    /// Frees the space for the trace.dat about to be written over it.
    pub fn release(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for SpaceReserve {
    fn drop(&mut self) {
        self.release();
    }
}

/// The writer options for `--file-version` / `--compression`.
pub fn write_options(version: u32, compression: Option<&str>) -> Result<WriteOptions> {
    let version = FileVersion::from_number(version).context("--file-version must be 6 or 7")?;
    let compression = match (version, compression) {
        (FileVersion::V6, None | Some("none")) => Compression::None,
        (FileVersion::V6, Some(c)) => {
            bail!("--compression {c}: file version 6 cannot be compressed")
        }
        (FileVersion::V7, None) => Compression::Zstd,
        (FileVersion::V7, Some(c)) => Compression::from_name(c)
            .with_context(|| format!("--compression {c}: use none or zstd"))?,
    };
    Ok(WriteOptions {
        version,
        compression,
    })
}

/// The writer's description of one buffer: the instance's name and clock
/// and its per-CPU page files with the stats taken at the end.
pub fn buffer_data(inst: &Instance, cpu_files: &[(u32, PathBuf, CpuStats)]) -> Result<BufferData> {
    Ok(BufferData {
        name: inst.name().unwrap_or("").to_string(),
        clock: inst.trace_clock()?.0,
        cpus: cpu_files
            .iter()
            .map(|(cpu, path, stats)| CpuData {
                cpu: *cpu,
                path: path.clone(),
                stats: Some(stats.raw.clone()),
            })
            .collect(),
    })
}

/// Writes trace.dat from the per-CPU page files of one instance.
pub fn write_dat(
    output: &Path,
    meta: &TraceMeta,
    inst: &Instance,
    cpu_files: &[(u32, PathBuf, CpuStats)],
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    let buffer = buffer_data(inst, cpu_files)?;
    Ok(write_trace_dat(output, meta, &[buffer], opts)?)
}

/// Per-CPU temp files `<output>.cpuN`, removed when dropped.
pub struct TempFiles(pub Vec<(u32, PathBuf)>);

impl TempFiles {
    /// Creates `<output>.cpuN` for every CPU.
    pub fn create(output: &Path, cpus: &[u32]) -> Result<(TempFiles, Vec<File>)> {
        Self::create_tagged(output, None, cpus)
    }

    /// Creates `<output>.<instance>.cpuN` (trace-cmd's names) for every CPU;
    /// without an instance name, `<output>.cpuN`.
    pub fn create_tagged(
        output: &Path,
        instance: Option<&str>,
        cpus: &[u32],
    ) -> Result<(TempFiles, Vec<File>)> {
        let mut t = TempFiles(Vec::new());
        let mut files = Vec::new();
        for &cpu in cpus {
            let mut name = output.as_os_str().to_owned();
            if let Some(i) = instance {
                name.push(format!(".{i}"));
            }
            name.push(format!(".cpu{cpu}"));
            let path = PathBuf::from(name);
            let f =
                File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
            t.0.push((cpu, path));
            files.push(f);
        }
        Ok((t, files))
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        for (_, p) in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_options_follow_the_flags() {
        let o = write_options(7, None).unwrap();
        assert_eq!(
            (o.version, o.compression),
            (FileVersion::V7, Compression::Zstd)
        );
        let o = write_options(7, Some("none")).unwrap();
        assert_eq!(o.compression, Compression::None);
        let o = write_options(6, None).unwrap();
        assert_eq!(
            (o.version, o.compression),
            (FileVersion::V6, Compression::None)
        );
        assert!(write_options(6, Some("zstd")).is_err());
        assert!(write_options(7, Some("lz4")).is_err());
        assert!(write_options(5, None).is_err());
    }

    #[test]
    fn an_output_that_cannot_be_written_is_refused_up_front() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            check_output(dir.path()).unwrap_err().to_string(),
            format!("cannot write {}: it is a directory", dir.path().display())
        );
        let missing = dir.path().join("no/such/trace.dat");
        assert_eq!(
            check_output(&missing).unwrap_err().to_string(),
            format!(
                "cannot write {}: no directory {}",
                missing.display(),
                dir.path().join("no/such").display()
            )
        );
        let fine = dir.path().join("trace.dat");
        check_output(&fine).unwrap();
        assert!(!fine.exists(), "the check created the file");
        check_output(Path::new("trace.dat")).unwrap();
    }
}
