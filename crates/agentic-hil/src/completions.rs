//! Shell completions and the man page, both generated from the clap definitions so they cannot
//! drift from the commands.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

pub fn completions(shell: Shell, out: &mut dyn Write) {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "agentic-hil", out);
}

/// The man page of the program and its subcommands, as roff.
pub fn man(out: &mut dyn Write) -> std::io::Result<()> {
    let command = Cli::command();
    clap_mangen::Man::new(command.clone()).render(out)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        // clap names are `'static` without its `string` feature; this runs once per process.
        let name: &'static str =
            Box::leak(format!("agentic-hil-{}", sub.get_name()).into_boxed_str());
        let page = sub.clone().name(name);
        clap_mangen::Man::new(page).render(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_completion_offers_the_subcommands() {
        let mut out = Vec::new();
        completions(Shell::Bash, &mut out);
        let text = String::from_utf8(out).expect("UTF-8");
        for word in ["agent-install", "watch", "mcp-stdio", "--json"] {
            assert!(text.contains(word), "{word} is completed");
        }
    }

    #[test]
    fn every_shell_renders() {
        for shell in [
            Shell::Bash,
            Shell::Zsh,
            Shell::Fish,
            Shell::Elvish,
            Shell::PowerShell,
        ] {
            let mut out = Vec::new();
            completions(shell, &mut out);
            assert!(out.len() > 1000, "{shell}");
        }
    }

    #[test]
    fn the_man_page_names_the_program_and_documents_each_visible_subcommand() {
        let mut out = Vec::new();
        man(&mut out).expect("renders");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(
            text.starts_with(".ie \\n(.g .ds Aq"),
            "roff: {}",
            &text[..60]
        );
        assert!(text.contains(".TH agentic-hil 1"), "{}", &text[..200]);
        assert!(text.contains(".TH agentic-hil-watch 1"));
        assert!(
            !text.contains("probe-rs-worker"),
            "hidden commands stay hidden"
        );
    }
}
