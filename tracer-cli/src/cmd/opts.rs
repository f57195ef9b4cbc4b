//! Groups of command-line options shared by several subcommands.

use anyhow::Result;
use std::path::PathBuf;
use ustack_tracedata::writer::WriteOptions;
use ustack_tracefs::{Instance, Tracefs};

/// `-B`/`-a`/`-t` instance selection of `stop`, `extract` and `reset`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct InstanceSelection {
    /// Use this instance (repeatable); the top instance then only with -t.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instances: Vec<String>,
    /// Use all instances; the top instance then only with -t.
    #[arg(short = 'a')]
    pub all: bool,
    /// Use the top instance too.
    #[arg(short = 't')]
    pub top: bool,
}

impl InstanceSelection {
    /// The selected instances, trace-cmd style: the top instance when none
    /// of -B/-a is given, otherwise only with -t.
    pub fn select(&self, fs: &Tracefs) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        if (self.instances.is_empty() && !self.all) || self.top {
            out.push(fs.top());
        }
        if self.all {
            for n in fs.instances()? {
                out.push(fs.instance(&n)?);
            }
        } else {
            for n in &self.instances {
                out.push(fs.instance(n)?);
            }
        }
        Ok(out)
    }
}

/// The trace.dat output options of `record` and `extract`.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputOpts {
    /// Output file.
    #[arg(short = 'o', value_name = "FILE", default_value = "trace.dat")]
    pub output: PathBuf,
    /// trace.dat version to write (6 or 7).
    #[arg(long = "file-version", default_value_t = 7, value_parser = clap::value_parser!(u32).range(6..=7))]
    pub file_version: u32,
    /// Compression of a version 7 file: none or zstd (default zstd; version 6 is never compressed).
    #[arg(long = "compression", value_name = "none|zstd")]
    pub compression: Option<String>,
}

impl OutputOpts {
    /// The writer options these flags select ([`super::record::write_options`]).
    pub fn write_options(&self) -> Result<WriteOptions> {
        super::record::write_options(self.file_version, self.compression.as_deref())
    }
}
