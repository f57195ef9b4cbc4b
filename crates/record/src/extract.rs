//! What the ring buffers hold now, read after the fact (`tracer-cli
//! extract`, typically after `start` and `stop`): the part of a recording
//! session that applies once nothing is recorded any more. Every CPU of
//! each instance is drained into a temp file, the data is scanned for the
//! processes with user stacks, and those still alive have their maps read
//! from `/proc` (valid for the whole trace), with the threads of the
//! kernel's `saved_tgids`, as [`crate::Recording`] does at its end.

use crate::{buffer_data, collect_meta, MapsTracker, StackPidScanner, TempFiles};
use anyhow::Result;
use std::path::Path;
use ustack_tracedata::writer::{BufferData, TraceMeta};
use ustack_tracefs::{Instance, Tracefs};

/// The buffers of the instances read, in temp files removed on drop, and
/// the maps of the processes found in them.
pub struct Extraction {
    buffers: Vec<BufferData>,
    maps: MapsTracker,
    _temps: Vec<TempFiles>,
}

impl Extraction {
    /// Drains every CPU of each of `insts` into
    /// `<output>.<instance>.cpuN` (consuming the buffers) and reads the
    /// maps of the processes with user stacks in them.
    pub fn read(fs: &Tracefs, insts: &[Instance], output: &Path) -> Result<Extraction> {
        let mut temps = Vec::new();
        let mut buffers = Vec::new();
        let mut maps = MapsTracker::new(Vec::new());
        for inst in insts {
            let cpus = inst.cpus()?;
            let (t, files) = TempFiles::create_tagged(output, inst.name(), &cpus)?;
            let mut cpu_files = Vec::new();
            for ((cpu, path), mut file) in t.0.iter().zip(files) {
                let mut reader = inst.cpu_reader(*cpu)?;
                reader.flush_into(&mut file)?;
                drop(reader);
                cpu_files.push((*cpu, path.clone(), inst.cpu_stats(*cpu)?));
            }
            let paths: Vec<_> = cpu_files.iter().map(|(c, p, _)| (*c, p.clone())).collect();
            if let Some(mut sc) = StackPidScanner::new(fs, inst.page_size(), &paths)? {
                for pid in sc.scan_all() {
                    maps.add_seen(pid);
                }
            }
            buffers.push(buffer_data(inst, &cpu_files)?);
            temps.push(t);
        }
        Ok(Extraction {
            buffers,
            maps,
            _temps: temps,
        })
    }

    /// The buffers read, for the writer.
    pub fn buffers(&self) -> &[BufferData] {
        &self.buffers
    }

    /// The trace.dat metadata, from tracefs and `first` (the instance
    /// whose page size and clock the file takes): the formats of every
    /// event, since what was enabled when the data was written is not
    /// known any more, and the maps found, with the threads of
    /// `saved_tgids`.
    pub fn meta(&mut self, fs: &Tracefs, first: &Instance) -> Result<TraceMeta> {
        self.maps.add_saved_tgids_of(fs);
        collect_meta(fs, first, None, self.maps.maps())
    }
}
