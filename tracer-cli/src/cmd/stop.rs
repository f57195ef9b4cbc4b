//! `tracer-cli stop`.

/// Arguments of `tracer-cli stop`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `tracer-cli stop`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("stop: not implemented yet")
}
