//! `tracer-cli extract`: write what is in the ring buffers now into a
//! trace.dat file (typically after `start` and `stop`). Tracing settings are
//! not touched; the buffers are consumed.
//!
//! As in trace-cmd, the top instance is extracted by default; `-B NAME`
//! (repeatable) and `-a` (all instances) select instances instead, and `-t`
//! adds the top instance back.
//!
//! The processes with user stacks in the extracted data that are still
//! alive have their maps read from `/proc` (PROCMAPS, valid for the whole
//! trace), with the threads of the kernel's `saved_tgids`; nothing more can
//! be known after the fact on a stock kernel.

use super::opts::{InstanceSelection, OutputOpts};
use anyhow::Result;
use ustack_record::{buffer_data, collect_meta, MapsTracker, StackPidScanner, TempFiles};
use ustack_tracedata::writer::write_trace_dat;
use ustack_tracefs::Tracefs;

/// Arguments of `tracer-cli extract`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  tracer-cli extract -o trace.dat
  tracer-cli extract -B mine -t -o both.dat   # instance mine and the top one")]
pub struct Args {
    /// The instances to extract.
    #[command(flatten)]
    pub select: InstanceSelection,
    /// Where and how to write.
    #[command(flatten)]
    pub out: OutputOpts,
    /// Print nothing on success.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Runs `tracer-cli extract`.
pub fn run(args: Args) -> Result<()> {
    let wopts = args.out.write_options()?;
    ustack_record::check_output(&args.out.output)?;
    let fs = Tracefs::open()?;
    let insts = args.select.select(&fs)?;
    let mut temps = Vec::new();
    let mut buffers = Vec::new();
    let mut maps = MapsTracker::new(Vec::new());
    for inst in &insts {
        let cpus = inst.cpus()?;
        let (t, files) = TempFiles::create_tagged(&args.out.output, inst.name(), &cpus)?;
        let mut cpu_files = Vec::new();
        for ((cpu, path), mut file) in t.0.iter().zip(files) {
            let mut reader = inst.cpu_reader(*cpu)?;
            reader.flush_into(&mut file)?;
            drop(reader);
            cpu_files.push((*cpu, path.clone(), inst.cpu_stats(*cpu)?));
        }
        let paths: Vec<_> = cpu_files.iter().map(|(c, p, _)| (*c, p.clone())).collect();
        if let Some(mut sc) = StackPidScanner::new(&fs, inst.page_size(), &paths)? {
            for pid in sc.scan_all() {
                maps.add_seen(pid);
            }
        }
        buffers.push(buffer_data(inst, &cpu_files)?);
        temps.push(t);
    }
    let Some(first) = insts.first() else {
        anyhow::bail!("no instance to extract");
    };
    // The formats of every event: what was enabled when the data was
    // written is not known any more.
    if let Ok(t) = fs.read("saved_tgids") {
        maps.add_saved_tgids(&String::from_utf8_lossy(&t));
    }
    let meta = collect_meta(&fs, first, None, maps.maps())?;
    let summary = write_trace_dat(&args.out.output, &meta, &buffers, &wopts)?;
    drop(temps);
    if !args.quiet {
        eprintln!(
            "tracer-cli: wrote {} ({} bytes, {} buffer(s))",
            args.out.output.display(),
            summary.file_size,
            buffers.len()
        );
    }
    Ok(())
}
