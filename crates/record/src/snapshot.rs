//! The trace.dat that `tui --live` shows of a recording while it runs
//! ([`LiveSnapshot`]).
//!
//! The view refreshes about once a second. Writing the whole recording
//! each time would cost as much as everything recorded so far, and keep
//! growing; instead the snapshot is one [`GrowingTraceDat`], to which each
//! refresh appends the pages recorded since the last one and whose
//! options it rewrites (process maps, command names, CPU stats). Each CPU
//! has a slot of its own in that sparse file, as large as the file system
//! that holds the recorder's files, so that no CPU outgrows it; should one
//! still (the file system grew), the next refresh starts a new file with
//! larger slots, once.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use ustack_tracedata::writer::{BufferData, GrowingTraceDat, Growth, TraceMeta};

/// The most bytes all the slots of a snapshot may span together (the
/// holes count in its size, which some file systems bound: 16 TiB on
/// ext4), unless the data already recorded needs more.
pub const MAX_SPAN: u64 = 4 << 40;

/// The slot when the size of the file system cannot be read.
const DEFAULT_SLOT: u64 = 64 << 30;

/// The snapshot file of a live view, in a directory of its own: one
/// [`GrowingTraceDat`] that each [`LiveSnapshot::update`] appends the new
/// pages to, each CPU in a slot as large as the file system of the
/// recorder's files. The file is removed when it is dropped.
#[derive(Debug)]
pub struct LiveSnapshot {
    dir: PathBuf,
    /// Files started so far (for their names).
    files: u64,
    /// The slot of the first file, if the caller chose it.
    slot: Option<u64>,
    dat: Option<GrowingTraceDat>,
}

/// What one [`LiveSnapshot::update`] did.
#[derive(Debug, Clone)]
pub struct Refresh {
    /// The snapshot file to show.
    pub path: PathBuf,
    /// A new file was started (the first, or one with larger slots): the
    /// whole recording was written, and the previous file removed.
    pub new_file: bool,
    /// What was written.
    pub growth: Growth,
}

impl LiveSnapshot {
    /// Snapshots in `dir`, `live-N.dat`, with slots as large as the file
    /// system of the recorder's files.
    pub fn new(dir: &Path) -> LiveSnapshot {
        LiveSnapshot {
            dir: dir.to_path_buf(),
            files: 0,
            slot: None,
            dat: None,
        }
    }

    /// [`LiveSnapshot::new`] with slots of `slot` bytes (and larger ones if
    /// the data outgrows them).
    pub fn with_slot(dir: &Path, slot: u64) -> LiveSnapshot {
        let mut s = LiveSnapshot::new(dir);
        s.slot = Some(slot);
        s
    }

    /// The current snapshot file, once there is one.
    pub fn path(&self) -> Option<&Path> {
        self.dat.as_ref().map(|d| d.path())
    }

    /// Brings the snapshot up to the page files of `buffers` and the
    /// metadata of `meta`: the new pages are appended and the options
    /// rewritten (see [`GrowingTraceDat::update`]). The first call, or one
    /// after a CPU outgrew its slot, writes a new file whole.
    pub fn update(&mut self, meta: &TraceMeta, buffers: &[BufferData]) -> Result<Refresh> {
        if let Some(d) = self.dat.as_mut() {
            if let Some(growth) = d.update(meta, buffers)? {
                return Ok(Refresh {
                    path: d.path().to_path_buf(),
                    new_file: false,
                    growth,
                });
            }
        }
        let slot = self.slot_for(buffers);
        let path = self.dir.join(format!("live-{}.dat", self.files));
        self.files += 1;
        let (dat, growth) = GrowingTraceDat::create(&path, meta, buffers, slot)
            .with_context(|| format!("cannot write the snapshot {}", path.display()))?;
        // A view may still map the previous file: unlinking keeps it valid.
        if let Some(old) = self.dat.replace(dat) {
            let _ = std::fs::remove_file(old.path());
        }
        Ok(Refresh {
            path,
            new_file: true,
            growth,
        })
    }

    /// The slot of a new file: the file system of the CPU files (no file
    /// there can be larger), within [`MAX_SPAN`] for all the CPUs, and at
    /// least twice the largest CPU's data.
    fn slot_for(&self, buffers: &[BufferData]) -> u64 {
        let cpus = buffers.iter().map(|b| b.cpus.len() as u64).sum::<u64>();
        let largest = buffers
            .iter()
            .flat_map(|b| &b.cpus)
            .filter_map(|c| std::fs::metadata(&c.path).ok())
            .map(|m| m.len())
            .max()
            .unwrap_or(0);
        let base = self.slot.unwrap_or_else(|| {
            let room = buffers
                .iter()
                .flat_map(|b| &b.cpus)
                .find_map(|c| fs_size(c.path.parent()?))
                .unwrap_or(DEFAULT_SLOT);
            room.min(MAX_SPAN / cpus.max(1))
        });
        base.max(largest.saturating_mul(2)).max(1)
    }
}

impl Drop for LiveSnapshot {
    fn drop(&mut self) {
        if let Some(p) = self.path() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Bytes of the file system that holds `dir`.
fn fs_size(dir: &Path) -> Option<u64> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let st = nix::sys::statvfs::statvfs(dir).ok()?;
    Some(
        (st.blocks() as u64)
            .saturating_mul(st.fragment_size() as u64)
            .max(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use ustack_tracedata::writer::CpuData;
    use ustack_tracedata::TraceFile;

    fn meta() -> TraceMeta {
        TraceMeta {
            header_page: ustack_tracedata::page::build::HEADER_PAGE
                .as_bytes()
                .to_vec(),
            header_event: ustack_tracedata::page::build::HEADER_EVENT
                .as_bytes()
                .to_vec(),
            cpu_count: 2,
            ..TraceMeta::default()
        }
    }

    /// An empty page (a timestamp, no events): what matters here is where
    /// the bytes go.
    fn page() -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        p[0] = 1;
        p
    }

    fn grow(path: &Path, pages: usize) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for _ in 0..pages {
            f.write_all(&page()).unwrap();
        }
    }

    #[test]
    fn a_snapshot_grows_in_place_until_a_cpu_outgrows_its_slot() {
        let dir = tempfile::tempdir().unwrap();
        let cpu = |c: u32| CpuData::new(c, dir.path().join(format!("rec.cpu{c}")));
        let buffers = [BufferData {
            name: "inst".into(),
            clock: "local".into(),
            cpus: vec![cpu(0), cpu(1)],
        }];
        grow(&buffers[0].cpus[0].path, 2);
        let mut snap = LiveSnapshot::with_slot(dir.path(), 4 * 4096);
        let first = snap.update(&meta(), &buffers).unwrap();
        assert!(first.new_file);
        assert_eq!(first.growth.appended, 2 * 4096);
        grow(&buffers[0].cpus[1].path, 1);
        let next = snap.update(&meta(), &buffers).unwrap();
        assert!(!next.new_file);
        assert_eq!(next.path, first.path);
        assert_eq!(next.growth.appended, 4096);
        // Past its 4 pages, CPU 0 needs a new file, with slots of twice
        // its data; the old file goes.
        grow(&buffers[0].cpus[0].path, 3);
        let moved = snap.update(&meta(), &buffers).unwrap();
        assert!(moved.new_file);
        assert_ne!(moved.path, first.path);
        assert!(!first.path.exists());
        assert_eq!(moved.growth.appended, 6 * 4096);
        let f = TraceFile::open(&moved.path).unwrap();
        let sizes: Vec<usize> = f.buffers()[1]
            .cpus
            .iter()
            .map(|c| f.cpu_data(c).len())
            .collect();
        assert_eq!(sizes, [5 * 4096, 4096]);
        let path = moved.path;
        drop(snap);
        assert!(!path.exists(), "the snapshot is removed with it");
    }

    #[test]
    fn slots_hold_the_file_system_within_the_span() {
        let dir = tempfile::tempdir().unwrap();
        let fs = fs_size(dir.path()).unwrap();
        let buffers = |n: u32| {
            [BufferData {
                name: String::new(),
                clock: "local".into(),
                cpus: (0..n)
                    .map(|c| CpuData::new(c, dir.path().join(format!("cpu{c}"))))
                    .collect(),
            }]
        };
        let snap = LiveSnapshot::new(dir.path());
        assert_eq!(snap.slot_for(&buffers(2)), fs.min(MAX_SPAN / 2));
        assert_eq!(snap.slot_for(&buffers(4096)), fs.min(MAX_SPAN / 4096));
    }
}
