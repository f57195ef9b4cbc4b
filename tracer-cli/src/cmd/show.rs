//! `tracer-cli show`.

/// Arguments of `tracer-cli show`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli show`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("show: not implemented yet")
}
