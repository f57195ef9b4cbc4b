//! `tracer-cli extract`: write what is in the ring buffers now into a
//! trace.dat file (typically after `start` and `stop`). Tracing settings are
//! not touched; the buffers are consumed.

use super::record::{collect_meta, write_dat, write_options, TempFiles};
use anyhow::Result;
use std::path::PathBuf;
use tracefs::Tracefs;

/// Arguments of `tracer-cli extract`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Extract this instance instead of the top one.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instance: Option<String>,
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
    let inst = fs.instance_or_top(args.instance.as_deref())?;
    let cpus = inst.cpus()?;
    let (temps, files) = TempFiles::create(&args.output, &cpus)?;
    let mut cpu_files = Vec::new();
    for ((cpu, path), mut file) in temps.0.iter().zip(files) {
        let mut reader = inst.cpu_reader(*cpu)?;
        reader.flush_into(&mut file)?;
        drop(reader);
        cpu_files.push((*cpu, path.clone(), inst.cpu_stats(*cpu)?));
    }
    // The formats of every event: what was enabled when the data was
    // written is not known any more.
    let meta = collect_meta(&fs, &inst, None, Vec::new())?;
    let summary = write_dat(&args.output, &meta, &inst, &cpu_files, &wopts)?;
    drop(temps);
    if !args.quiet {
        eprintln!(
            "tracer-cli: wrote {} ({} bytes)",
            args.output.display(),
            summary.file_size
        );
    }
    Ok(())
}
