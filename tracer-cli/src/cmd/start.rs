//! `tracer-cli start`.

/// Arguments of `tracer-cli start`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli start`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("start: not implemented yet")
}
