//! Shell completions and man pages, generated from the one clap definition.
//!
//! Every binary has a `--generate KIND` option (see [`Generate`]) that
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
        Generate::Man => return man(cmd, out),
    };
    clap_complete::generate(shell, &mut cmd, name, out);
    Ok(())
}

/// The man page: clap_mangen's sections, then the ones a user of `sha256sum(1)`
/// looks for, which the command line cannot say (exit status, examples, the
/// environment, related tools).
fn man(cmd: clap::Command, out: &mut impl Write) -> io::Result<()> {
    let name = cmd.get_name().to_owned();
    let jobs = if cmd
        .get_arguments()
        .any(|a| a.get_id() == crate::strategy::JobsArgs::ID)
    {
        " \\-j 4"
    } else {
        ""
    };
    let page = clap_mangen::Man::new(cmd);
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    write!(
        out,
        r#".SH "EXIT STATUS"
.TP
0
Every file was hashed (with \fB\-c\fR: every listed file matched).
.TP
1
Some file or directory could not be read, or (with \fB\-c\fR) did not match; the others were still hashed and printed, and each failure named on standard error as \fI{name}: PATH: reason\fR.
.TP
2
A usage error: an unknown option, a bad value, options that conflict.
.SH EXAMPLES
.TP
{name}{jobs} ~/models/llama > SHA256SUMS
The digests of every file under a directory, in \fBLC_ALL=C sort\fR order of the paths.
.TP
{name} \-\-check SHA256SUMS
Check them later, as \fBsha256sum \-c\fR does.
.TP
{name} \-\-cache ~/.cache/backup.db \-\-tree ~/backup
Hash again only what changed since the last run, and print one digest of the whole tree.
.TP
{name} \-\-list ~/data > LIST; {name} \-\-shard 0/4 \-\-files\-from LIST
Split one tree over four machines; \fB\-\-merge\fR joins their outputs into the single-run one.
.SH ENVIRONMENT
With \fB\-\-shard auto\fR or \fBauto/N\fR, the shard comes from the job scheduler:
.TP
SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP, SLURM_ARRAY_TASK_COUNT
A Slurm job array.
.TP
JOB_COMPLETION_INDEX
A Kubernetes indexed job.
.TP
PARALLEL_SEQ
GNU parallel.
.SH "SEE ALSO"
\fBsha256sum\fR(1), \fBfind\fR(1), \fBsort\fR(1), \fBb3sum\fR(1), \fBrhash\fR(1), \fBhashdeep\fR(1)
"#
    )?;
    page.render_version_section(out)
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
        assert!(generated(Generate::Man, Strategy::Threads).contains("generate"));
        // The serial binary has no -j.
        let serial = generated(Generate::Man, Strategy::Serial);
        assert!(!serial.contains("jobs"));
    }

    #[test]
    fn the_man_page_is_roff_with_a_name_section() {
        let man = generated(Generate::Man, Strategy::Threads);
        assert!(man.starts_with(".ie"), "{}", &man[..40]);
        assert!(man.contains(".TH hash-threads 1"), "{man}");
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH OPTIONS",
            ".SH \"EXIT STATUS\"",
            ".SH EXAMPLES",
            ".SH ENVIRONMENT",
            ".SH \"SEE ALSO\"",
            ".SH VERSION",
        ] {
            assert!(man.contains(section), "{section} missing: {man}");
        }
        assert!(man.contains("hash-threads \\-j 4 ~/models/llama"), "{man}");
        assert!(man.contains("SLURM_ARRAY_TASK_ID"));
        let serial = generated(Generate::Man, Strategy::Serial);
        // (named hash-threads by `generated`, but with the serial strategy's options)
        assert!(serial.contains("hash-threads ~/models/llama"), "{serial}");
    }
}
