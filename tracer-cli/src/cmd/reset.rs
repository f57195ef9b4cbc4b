//! `tracer-cli reset`.

/// Arguments of `tracer-cli reset`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli reset`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("reset: not implemented yet")
}
