//! `kubectl-olm completion bash|zsh|fish`: prints a shell completion script (clap_complete).

use clap::CommandFactory;

use crate::cli::{Cli, CliError, Shell, output::Streams};

/// Writes the completion script for `shell` to stdout.
///
/// # Errors
/// [`CliError::Write`] when stdout is closed.
pub fn run(shell: Shell, streams: &mut Streams<'_>) -> Result<(), CliError> {
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(generator, &mut command, "kubectl-olm", &mut buffer);
    streams.out.write_all(&buffer)?;
    Ok(())
}
