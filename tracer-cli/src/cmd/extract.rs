//! `tracer-cli extract`.

/// Arguments of `tracer-cli extract`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli extract`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("extract: not implemented yet")
}
