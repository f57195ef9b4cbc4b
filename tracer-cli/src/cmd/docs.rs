//! `tracer-cli completions SHELL` and `tracer-cli man DIR`: shell
//! completions and man pages, generated from the same clap definitions as
//! the command line itself, so they cannot drift from it.

use anyhow::{Context, Result};
use clap::CommandFactory;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `tracer-cli completions`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  tracer-cli completions bash > /etc/bash_completion.d/tracer-cli
  tracer-cli completions zsh > /usr/local/share/zsh/site-functions/_tracer-cli
  tracer-cli completions fish > ~/.config/fish/completions/tracer-cli.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `tracer-cli man`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:
  tracer-cli man /usr/local/share/man/man1 && man tracer-cli-record")]
pub struct ManArgs {
    /// Directory to write tracer-cli.1 and tracer-cli-SUBCOMMAND.1 into
    /// (created when missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Prints the completion script for a shell.
pub fn completions(args: CompletionsArgs) -> Result<()> {
    let mut cmd = crate::Cli::command();
    // Into memory first: clap_complete panics when a write fails, and a
    // closed stdout must end the command quietly instead.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "tracer-cli", &mut script);
    std::io::stdout().lock().write_all(&script)?;
    Ok(())
}

/// Writes one man page for tracer-cli and one per subcommand.
pub fn man(args: ManArgs) -> Result<()> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}", args.dir.display()))?;
    let cmd = crate::Cli::command();
    let mut pages = vec![("tracer-cli".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("tracer-cli-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().name(name)));
    }
    for (name, page) in pages {
        let path = args.dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf)?;
        std::fs::write(&path, buf).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
