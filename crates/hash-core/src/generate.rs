//! Shell completions and man pages, generated from the one clap definition.
//!
//! Every binary has a hidden `--generate KIND` option (see [`Generate`]) that
//! writes one of these to stdout and exits, so what is installed can never
//! disagree with the options the binary really has. They are generated at
//! run time rather than in a build script: a build script would have to
//! duplicate the CLI definition, or move it into a crate of its own, only to
//! write files nobody asked for on every build.

use std::io::{self, Write};

use clap::ValueEnum;
use clap_complete::Shell;

/// What `--generate` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// A bash completion script.
    CompletionsBash,
    /// A zsh completion function (`_hash-threads`).
    CompletionsZsh,
    /// A fish completion script.
    CompletionsFish,
    /// A man page in roff (section 1).
    Man,
}

/// Write `kind` for the command `cmd` (named as the binary) to `out`.
pub fn write(kind: Generate, mut cmd: clap::Command, out: &mut impl Write) -> io::Result<()> {
    let name = cmd.get_name().to_owned();
    let shell = match kind {
        Generate::CompletionsBash => Shell::Bash,
        Generate::CompletionsZsh => Shell::Zsh,
        Generate::CompletionsFish => Shell::Fish,
        Generate::Man => return clap_mangen::Man::new(cmd).render(out),
    };
    clap_complete::generate(shell, &mut cmd, name, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::Strategy;

    fn generated(kind: Generate, strategy: Strategy) -> String {
        let mut out = Vec::new();
        write(
            kind,
            crate::cli::command("hash-threads", strategy),
            &mut out,
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_output_names_the_real_options() {
        for kind in Generate::value_variants() {
            let text = generated(*kind, Strategy::Threads);
            for option in [
                "--check",
                "ignore-missing",
                "--binary",
                "--jobs",
                "--files-from",
            ] {
                // fish lists long options without dashes, roff escapes them.
                let option = match kind {
                    Generate::CompletionsFish => option.trim_start_matches('-').to_owned(),
                    Generate::Man => option.replace('-', "\\-"),
                    _ => option.to_owned(),
                };
                assert!(text.contains(&option), "{kind:?} lacks {option}");
            }
            assert!(text.contains("hash-threads"), "{kind:?}");
        }
        // The man page is for people: the hidden option stays hidden there
        // (bash and fish completions do offer it, which is harmless).
        assert!(!generated(Generate::Man, Strategy::Threads).contains("generate"));
        // The serial binary has no -j.
        let serial = generated(Generate::Man, Strategy::Serial);
        assert!(!serial.contains("jobs"));
    }

    #[test]
    fn the_man_page_is_roff_with_a_name_section() {
        let man = generated(Generate::Man, Strategy::Threads);
        assert!(man.starts_with(".ie"), "{}", &man[..40]);
        assert!(man.contains(".TH hash-threads 1"), "{man}");
        assert!(man.contains(".SH NAME"));
        assert!(man.contains("Exit status"));
    }
}
