//! `tracer-cli extract`: write what is in the ring buffers now into a
//! trace.dat file (typically after `start` and `stop`). Tracing settings are
//! not touched; the buffers are consumed.
//!
//! As in trace-cmd, the top instance is extracted by default; `-B NAME`
//! (repeatable) and `-a` (all instances) select instances instead, and `-t`
//! adds the top instance back.

use super::record::{buffer_data, collect_meta, write_options, TempFiles};
use super::stop::selected;
use anyhow::Result;
use std::path::PathBuf;
use tracedata::writer::write_trace_dat;
use tracefs::Tracefs;

/// Arguments of `tracer-cli extract`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Extract this instance (repeatable); the top instance then only with -t.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instances: Vec<String>,
    /// Extract all instances; the top instance then only with -t.
    #[arg(short = 'a')]
    pub all: bool,
    /// Extract the top instance too.
    #[arg(short = 't')]
    pub top: bool,
    /// Output file.
    #[arg(short = 'o', value_name = "FILE", default_value = "trace.dat")]
    pub output: PathBuf,
    /// trace.dat version to write (6 or 7).
    #[arg(long = "file-version", default_value_t = 7, value_parser = clap::value_parser!(u32).range(6..=7))]
    pub file_version: u32,
    /// Compression of a version 7 file: none or zstd (default zstd).
    #[arg(long = "compression", value_name = "none|zstd")]
    pub compression: Option<String>,
    /// Print nothing on success.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Runs `tracer-cli extract`.
pub fn run(args: Args) -> Result<()> {
    let wopts = write_options(args.file_version, args.compression.as_deref())?;
    let fs = Tracefs::open()?;
    let insts = selected(&fs, &args.instances, args.all, args.top)?;
    let mut temps = Vec::new();
    let mut buffers = Vec::new();
    for inst in &insts {
        let cpus = inst.cpus()?;
        let (t, files) = TempFiles::create_tagged(&args.output, inst.name(), &cpus)?;
        let mut cpu_files = Vec::new();
        for ((cpu, path), mut file) in t.0.iter().zip(files) {
            let mut reader = inst.cpu_reader(*cpu)?;
            reader.flush_into(&mut file)?;
            drop(reader);
            cpu_files.push((*cpu, path.clone(), inst.cpu_stats(*cpu)?));
        }
        buffers.push(buffer_data(inst, &cpu_files)?);
        temps.push(t);
    }
    let Some(first) = insts.first() else {
        anyhow::bail!("no instance to extract");
    };
    // The formats of every event: what was enabled when the data was
    // written is not known any more.
    let meta = collect_meta(&fs, first, None, Vec::new())?;
    let summary = write_trace_dat(&args.output, &meta, &buffers, &wopts)?;
    drop(temps);
    if !args.quiet {
        eprintln!(
            "tracer-cli: wrote {} ({} bytes, {} buffer(s))",
            args.output.display(),
            summary.file_size,
            buffers.len()
        );
    }
    Ok(())
}
