//! `tracer-cli tui`.

/// Arguments of `tracer-cli tui`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli tui`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("tui: not implemented yet")
}
