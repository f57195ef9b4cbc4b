//! `tracer-cli stop`: turn `tracing_on` off, keeping the buffers and every
//! setting (events stay enabled; use `reset` to turn everything off).

use anyhow::Result;
use tracefs::Tracefs;

/// Arguments of `tracer-cli stop`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Stop this instance (repeatable); the top instance then only with -t.
    #[arg(short = 'B', value_name = "INSTANCE")]
    pub instances: Vec<String>,
    /// Stop all instances; the top instance then only with -t.
    #[arg(short = 'a')]
    pub all: bool,
    /// Stop the top instance too.
    #[arg(short = 't')]
    pub top: bool,
}

/// The instances selected by -B/-a/-t, trace-cmd style: the top instance
/// when none of -B/-a is given, otherwise only with -t.
pub(crate) fn selected(
    fs: &Tracefs,
    names: &[String],
    all: bool,
    top: bool,
) -> Result<Vec<tracefs::Instance>> {
    let mut out = Vec::new();
    if (names.is_empty() && !all) || top {
        out.push(fs.top());
    }
    if all {
        for n in fs.instances()? {
            out.push(fs.instance(&n)?);
        }
    } else {
        for n in names {
            out.push(fs.instance(n)?);
        }
    }
    Ok(out)
}

/// Runs `tracer-cli stop`.
pub fn run(args: Args) -> Result<()> {
    let fs = Tracefs::open()?;
    for inst in selected(&fs, &args.instances, args.all, args.top)? {
        inst.set_tracing_on(false)?;
    }
    Ok(())
}
