//! `tracer-cli reset`: turn all tracing off in the selected instances:
//! events disabled, filters and pid filters cleared, the options `start`
//! turns on off (stack options, `record-tgid`, `event-fork`), the
//! nop tracer, the local clock, buffers cleared; `tracing_on` is left on as
//! trace-cmd does. `-d` deletes the selected instances, `-b` resizes them.

use super::opts::InstanceSelection;
use anyhow::{bail, Result};
use ustack_record::SETUP_OPTIONS;
use ustack_tracefs::{Instance, Tracefs};

/// Arguments of `tracer-cli reset`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The instances to reset.
    #[command(flatten)]
    pub select: InstanceSelection,
    /// Delete the selected instances (never the top one).
    #[arg(short = 'd')]
    pub delete: bool,
    /// Set the per-CPU buffer size (KiB) of the selected instances.
    #[arg(short = 'b', value_name = "KB")]
    pub buffer_kb: Option<u64>,
}

fn reset(fs: &Tracefs, inst: &Instance, buffer_kb: Option<u64>) -> Result<()> {
    inst.set_tracing_on(false)?;
    inst.disable_all_events()?;
    for e in fs.all_events()? {
        if inst.exists(&format!("events/{}/{}/filter", e.system, e.name))
            && inst.event_filter(&e)?.is_some()
        {
            inst.set_event_filter(&e, None)?;
        }
    }
    if inst.exists("set_event_pid") {
        inst.set_event_pids(&[])?;
    }
    if inst.exists("set_event_notrace_pid") {
        inst.write("set_event_notrace_pid", "")?;
    }
    if inst.exists("current_tracer") && inst.current_tracer()? != "nop" {
        inst.set_current_tracer("nop")?;
    }
    for &(opt, default) in SETUP_OPTIONS {
        if inst.has_option(opt) && inst.option(opt)? != default {
            inst.set_option(opt, default)?;
        }
    }
    // Stack snapshots (patched kernels) are off by default.
    if inst.exists("user_stack_snapshot_size")
        && inst.read_string("user_stack_snapshot_size")?.trim() != "0"
    {
        inst.write("user_stack_snapshot_size", "0")?;
    }
    if inst.trace_clock()?.0 != "local" {
        inst.set_trace_clock("local")?;
    }
    if let Some(kb) = buffer_kb {
        inst.set_buffer_size_kb(kb)?;
    }
    inst.clear_buffer()?;
    inst.set_tracing_on(true)?;
    Ok(())
}

/// Runs `tracer-cli reset`.
pub fn run(args: Args) -> Result<()> {
    if args.delete && args.select.instances.is_empty() && !args.select.all {
        bail!("reset -d deletes instances: give -B INSTANCE or -a");
    }
    let fs = Tracefs::open()?;
    // First what a killed record left (its state file restores exactly,
    // buffer size included, and removes an instance it had created).
    let mut names: Vec<Option<String>> = Vec::new();
    if (args.select.instances.is_empty() && !args.select.all) || args.select.top {
        names.push(None);
    }
    if args.select.all {
        names.extend(fs.instances()?.into_iter().map(Some));
    } else {
        names.extend(args.select.instances.iter().cloned().map(Some));
    }
    let mut select = args.select.clone();
    for name in &names {
        let n = ustack_record::restore_leftover(name.as_deref())?;
        super::opts::note_leftover(n);
        // An instance the killed run had created is gone now.
        if let Some(name) = name.as_ref().filter(|n| fs.instance(n).is_err()) {
            if n > 0 {
                select.instances.retain(|i| i != name);
                if select.instances.is_empty() && !select.all && !select.top {
                    return Ok(());
                }
            }
        }
    }
    for inst in select.select(&fs)? {
        reset(&fs, &inst, args.buffer_kb)?;
        if args.delete {
            if let Some(name) = inst.name() {
                fs.remove_instance(name)?;
            }
        }
    }
    Ok(())
}
