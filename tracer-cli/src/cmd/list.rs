//! `tracer-cli list`.

/// Arguments of `tracer-cli list`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli list`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("list: not implemented yet")
}
