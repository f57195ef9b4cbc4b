//! `tracer-cli record`.

/// Arguments of `tracer-cli record`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli record`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("record: not implemented yet")
}
