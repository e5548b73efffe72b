//! The command line, defined once for all four binaries.
//!
//! Each binary gets the same options from [`CommonArgs`]; the three parallel
//! ones add [`JobsArgs`]. Parsing ends in a resolved [`Config`] (defaults
//! applied, job count known), so nothing past this module looks at raw
//! arguments. The binary's own name is filled in at run time, since the derive
//! lives in this library crate.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser};

use crate::strategy::Strategy;

/// Options every `hash-*` binary has.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Files or directories to hash (directories recursively).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Follow symbolic links below the given paths (loops are reported, not followed).
    #[arg(short = 'L', long)]
    pub follow: bool,

    /// Print a summary on stderr at the end: files, bytes, errors, skipped, time, speed.
    #[arg(long)]
    pub stats: bool,
}

/// The worker-count option of the parallel binaries.
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// Number of workers (threads, processes, or files in flight) [default: CPUs available].
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
}

/// The command line of `hash-serial`.
#[derive(Debug, Parser)]
#[command(version)]
pub struct SerialCli {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// The command line of the parallel binaries.
#[derive(Debug, Parser)]
#[command(version)]
pub struct ParallelCli {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub jobs: JobsArgs,
}

/// Everything a run needs, resolved from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Roots to walk.
    pub paths: Vec<PathBuf>,
    /// `-L`: follow symbolic links below the roots.
    pub follow: bool,
    /// `--stats`: print a summary on stderr.
    pub stats: bool,
    /// Workers to use (1 for `hash-serial`).
    pub jobs: usize,
}

fn about(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::Serial => "SHA-256 of every regular file under PATHs, one file after another.",
        Strategy::Threads => "SHA-256 of every regular file under PATHs, on a pool of threads.",
        Strategy::Procs => {
            "SHA-256 of every regular file under PATHs, on a pool of worker processes."
        }
        Strategy::Async => "SHA-256 of every regular file under PATHs, on a tokio runtime.",
    }
}

fn examples(tool: &str, strategy: Strategy) -> String {
    let jobs = if strategy.is_parallel() { " -j 4" } else { "" };
    format!(
        "Output is byte-identical to\n  \
         find -H PATH -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum\n\n\
         Examples:\n  \
         {tool}{jobs} ~/models/llama > SHA256SUMS\n  \
         {tool} --stats datasets/data/shards | sha256sum -c\n\n\
         Exit status: 0 if every file was hashed, 1 if some file or directory could \
         not be read (the rest is still printed), 2 for a usage error."
    )
}

/// The clap command for `tool` (exposed so tests can `debug_assert` it).
pub fn command(tool: &'static str, strategy: Strategy) -> clap::Command {
    let cmd = if strategy.is_parallel() {
        ParallelCli::command()
    } else {
        SerialCli::command()
    };
    cmd.name(tool)
        .bin_name(tool)
        .about(about(strategy))
        .after_help(examples(tool, strategy))
}

/// Parse the process's arguments (exiting with status 2 and clap's message on a
/// usage error, 0 for `--help`/`--version`).
pub fn parse(tool: &'static str, strategy: Strategy) -> Config {
    let matches = command(tool, strategy).get_matches();
    let from = |m: &clap::ArgMatches| -> Result<Config, clap::Error> {
        if strategy.is_parallel() {
            let cli = ParallelCli::from_arg_matches(m)?;
            let jobs = cli
                .jobs
                .jobs
                .map(|j| j as usize)
                .unwrap_or_else(default_jobs);
            Ok(resolve(cli.common, jobs))
        } else {
            Ok(resolve(SerialCli::from_arg_matches(m)?.common, 1))
        }
    };
    from(&matches).unwrap_or_else(|e| e.exit())
}

fn resolve(common: CommonArgs, jobs: usize) -> Config {
    Config {
        paths: common.paths,
        follow: common.follow,
        stats: common.stats,
        jobs,
    }
}

/// The number of CPUs this process may use.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_well_formed() {
        for s in Strategy::ALL {
            command("hash-test", s).debug_assert();
        }
    }

    #[test]
    fn serial_has_no_jobs_option() {
        let r =
            command("hash-serial", Strategy::Serial).try_get_matches_from(["x", "-j", "2", "d"]);
        assert_eq!(
            r.unwrap_err().kind(),
            clap::error::ErrorKind::UnknownArgument
        );
    }

    #[test]
    fn jobs_must_be_positive() {
        let cmd = || command("hash-threads", Strategy::Threads);
        assert!(cmd().try_get_matches_from(["x", "-j", "0", "d"]).is_err());
        let m = cmd()
            .try_get_matches_from(["x", "-j", "3", "-L", "d", "e"])
            .unwrap();
        let cli = ParallelCli::from_arg_matches(&m).unwrap();
        assert_eq!(cli.jobs.jobs, Some(3));
        assert!(cli.common.follow);
        assert_eq!(cli.common.paths, [PathBuf::from("d"), PathBuf::from("e")]);
    }

    #[test]
    fn a_path_is_required() {
        let r = command("hash-async", Strategy::Async).try_get_matches_from(["x"]);
        assert_eq!(
            r.unwrap_err().kind(),
            clap::error::ErrorKind::MissingRequiredArgument
        );
    }
}
