//! `tracer-cli stat`.

/// Arguments of `tracer-cli stat`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli stat`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("stat: not implemented yet")
}
