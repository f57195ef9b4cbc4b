//! `tracer-cli report --stacks|--json|--folded`: events grouped by cookie.

/// Prints the stitched view of a trace.dat file.
pub fn run(_args: &super::report::Args) -> anyhow::Result<()> {
    anyhow::bail!("report --stacks: not implemented yet")
}
