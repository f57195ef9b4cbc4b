//! `tracer-cli report`.

/// Arguments of `tracer-cli report`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli report`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("report: not implemented yet")
}
