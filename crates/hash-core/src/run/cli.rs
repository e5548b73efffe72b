//! The command line, defined once for all four binaries.
//!
//! Each binary gets the same options from [`CommonArgs`]; its strategy adds
//! its own (`-j`, `--io`: [`crate::strategy::Def::args`]). Parsing ends in a
//! resolved [`Config`] holding the one [`Engine`] the run uses (defaults
//! applied, worker count known), so nothing past this module looks at raw
//! arguments. The binary's own name is filled in at run time, since the derive
//! lives in this library crate.

use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, FromArgMatches, Parser};

use crate::check::CheckOptions;
use crate::datapath::DataPath;
use crate::hasher::ReadPolicy;
use crate::output::{Json, OutputOptions};
use crate::strategy::order::ReadOrder;
use crate::strategy::{Engine, Strategy};

/// Options every `hash-*` binary has.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("strict_with").args(["check", "cache"]).multiple(true)))]
pub struct CommonArgs {
    /// Files or directories to hash ('-' or none: stdin); with -c, manifests.
    // (An empty name is kept, to be reported missing as GNU does; clap's
    // PathBuf parser would refuse it.)
    #[arg(help_heading = "Input", value_name = "PATH", value_parser = clap::builder::TypedValueParser::map(clap::builder::OsStringValueParser::new(), PathBuf::from))]
    pub paths: Vec<PathBuf>,

    /// Follow symbolic links below the given paths (loops are reported).
    #[arg(help_heading = "Input", short = 'L', long)]
    pub follow: bool,

    /// Hash the paths listed in FILE ('-': stdin), one a line (-0: one a NUL).
    #[arg(
        help_heading = "Input",
        long,
        value_name = "FILE",
        conflicts_with = "check"
    )]
    pub files_from: Option<PathBuf>,

    /// Leave out paths that match PATTERN ('*.tmp'; 'cache/': dirs only).
    ///
    /// Leave out entries whose path below their root matches PATTERN, a glob with
    /// .gitignore's rules: with no '/' it matches a name at any depth ('*.tmp'); with one
    /// inside it is anchored at the root ('build/out', '/core'); a trailing '/' matches
    /// directories only ('cache/'); '*' never matches '/', '**' matches any depth. An
    /// excluded directory is never read. Repeatable; a named PATH is never excluded.
    #[arg(
        help_heading = "Input",
        long,
        value_name = "PATTERN",
        conflicts_with = "check"
    )]
    pub exclude: Vec<String>,

    /// Read --exclude patterns from FILE, one a line ('#' starts a comment).
    #[arg(
        help_heading = "Input",
        long,
        value_name = "FILE",
        conflicts_with = "check"
    )]
    pub exclude_from: Vec<PathBuf>,

    /// Do not descend into directories on other file systems (find -xdev).
    #[arg(help_heading = "Input", short = 'x', long, conflicts_with = "check")]
    pub one_file_system: bool,

    /// With --files-from: paths are separated by NUL, not newline.
    #[arg(
        help_heading = "Input",
        hide_short_help = true,
        short = '0',
        long = "null",
        requires = "files_from"
    )]
    pub null: bool,

    /// BSD-style output: SHA256 (NAME) = HEX.
    #[arg(help_heading = "Output", long, conflicts_with_all = ["check", "json"])]
    pub tag: bool,

    /// Mark lines as binary ('HEX *NAME'), as GNU sha256sum -b does; the digest is the same.
    #[arg(
        help_heading = "Output",
        hide_short_help = true,
        short = 'b',
        long,
        overrides_with = "text",
        conflicts_with = "check"
    )]
    pub binary: bool,

    /// Plain lines ('HEX  NAME', the default), as GNU sha256sum -t; refused after --tag.
    #[arg(
        help_heading = "Output",
        hide_short_help = true,
        short = 't',
        long,
        overrides_with = "binary",
        conflicts_with = "check"
    )]
    pub text: bool,

    /// End each output line with NUL, not newline, and do not escape names.
    #[arg(help_heading = "Output", short = 'z', long, conflicts_with_all = ["check", "json"])]
    pub zero: bool,

    /// Print one JSON document (files, errors, skipped, summary) instead of lines.
    #[arg(help_heading = "Output", long, conflicts_with = "check")]
    pub json: bool,

    /// Print one JSON object per line as each file's turn comes, then a summary.
    #[arg(
        help_heading = "Output",
        long,
        conflicts_with_all = ["check", "json", "tag", "zero"]
    )]
    pub json_lines: bool,

    /// Also print one digest of the whole tree ('# tree-sha256 HEX').
    #[arg(help_heading = "Output", long, conflicts_with = "check")]
    pub tree: bool,

    /// Print a summary on stderr at the end: files, bytes, errors, time, speed.
    #[arg(help_heading = "Output", long)]
    pub stats: bool,

    /// Show a progress line on stderr even when it is not a terminal.
    ///
    /// Show a progress line on stderr even when it is not a terminal. It gives the
    /// percent of bytes and the percent of files done, apart; the time left comes from
    /// the run's cost per file and per byte, fitted as it goes.
    #[arg(help_heading = "Output", long, overrides_with = "no_progress")]
    pub progress: bool,

    /// Never show a progress line.
    #[arg(
        help_heading = "Output",
        hide_short_help = true,
        long,
        overrides_with = "progress"
    )]
    pub no_progress: bool,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub check: CheckArgs,

    /// Read every file with read(); never memory-map large files (--data-path read).
    #[arg(
        help_heading = "Performance",
        hide_short_help = true,
        long,
        conflicts_with = "data_path"
    )]
    pub no_mmap: bool,

    /// How large files already in memory reach SHA-256.
    ///
    /// How large files already in memory reach SHA-256: hashed in place through
    /// memory-mapped windows whose page tables are filled at once (map) or by page faults
    /// (map-fault), or copied with read() into a buffer that stays in the CPU's cache
    /// (read). The fastest depends on the machine and on how the files entered the page
    /// cache; auto times all three on the run's first large files and keeps the fastest
    /// (--stats names it).
    #[arg(help_heading = "Performance", hide_short_help = true, long, value_enum, value_name = "WAY", default_value_t = DataPath::Auto)]
    pub data_path: DataPath,

    /// The order files are read in; the output order never changes.
    ///
    /// The order files are read in (the output order never changes): as planned, or
    /// sorted by where their data lies on the disk (an extra open and FIEMAP ioctl per
    /// file, which pays only on a disk that seeks). auto sorts only in hash-threads and
    /// hash-async's io_uring, on a disk that says it spins and whose first reads wait as
    /// long as a seek, once one or two reads in flight do best; elsewhere it keeps the plan.
    #[arg(help_heading = "Performance", hide_short_help = true, long, value_enum, value_name = "ORDER", default_value_t = ReadOrder::Auto)]
    pub read_order: ReadOrder,

    /// Keep digests in the SQLite database PATH; rehash only files that changed.
    ///
    /// Keep each file's digest in the SQLite database PATH (made if missing; it must be a
    /// regular file) and read only the files whose size, times, inode or device changed
    /// since the digest was stored. Not with --check, which always reads the data.
    #[arg(help_heading = "Cache", long, value_name = "PATH", conflicts_with_all = ["check", "list", "merge"],
          value_parser = clap::builder::TypedValueParser::map(clap::builder::OsStringValueParser::new(), PathBuf::from))]
    pub cache: Option<PathBuf>,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub scale: crate::shard::ScaleArgs,

    /// Print shell completions or the man page (KIND: see --help) and exit.
    #[arg(
        long,
        value_name = "KIND",
        exclusive = true,
        hide_possible_values = true
    )]
    pub generate: Option<crate::generate::Generate>,
}

/// `sha256sum -c` and its switches, with GNU's meanings.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Read SHA-256 sums from the PATHs (GNU or BSD format) and check them.
    #[arg(help_heading = "Check", short = 'c', long)]
    pub check: bool,

    /// With --check: don't print OK for each successfully verified file.
    #[arg(help_heading = "Check", long, requires = "check", overrides_with_all = ["status", "warn"])]
    pub quiet: bool,

    /// With --check: print nothing; the exit status shows success.
    #[arg(help_heading = "Check", long, requires = "check", overrides_with_all = ["quiet", "warn"])]
    pub status: bool,

    /// With --check: warn about each improperly formatted line.
    #[arg(help_heading = "Check", short = 'w', long, requires = "check", overrides_with_all = ["quiet", "status"])]
    pub warn: bool,

    /// With --check: fail on improperly formatted lines (--cache: on changed files).
    ///
    /// With --check: exit non-zero for improperly formatted lines. With --cache: exit
    /// non-zero if a file changed while it was being read.
    #[arg(help_heading = "Check", long, requires = "strict_with")]
    pub strict: bool,

    /// With --check: don't fail or report status for missing files.
    #[arg(
        help_heading = "Check",
        hide_short_help = true,
        long,
        requires = "check"
    )]
    pub ignore_missing: bool,
}

/// The command line every binary shares; [`command`] adds the strategy's own
/// options.
#[derive(Debug, Parser)]
#[command(version)]
pub struct Cli {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// What a run does, decided here once: the app matches on it and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Hash the paths.
    Hash(HashRun),
    /// `--check`: check the manifests named by the paths.
    Check(CheckOptions),
    /// `--list`: print the file list of the paths (NUL-terminated with `-z`).
    List {
        /// `-z`.
        zero: bool,
    },
    /// `--merge`: combine shard outputs (the paths) into the single-run output.
    Merge(OutputOptions),
}

/// A hashing run's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashRun {
    /// How results are printed.
    pub output: OutputOptions,
    /// `--cache PATH`: the metadata cache.
    pub cache: Option<PathBuf>,
    /// `--shard K/N`, resolved against the environment (Slurm, Kubernetes, GNU
    /// parallel) for `auto`.
    pub shard: Option<crate::shard::Shard>,
    /// `--strict` with `--cache`: a file that changed while it was read fails the run.
    pub strict: bool,
}

/// Everything a run needs, resolved from the command line.
#[derive(Debug)]
pub struct Config {
    /// Roots to walk, or manifests to check; after [`parse`], with the names
    /// `--files-from` gave.
    pub paths: Vec<PathBuf>,
    /// `--files-from FILE` and whether it is NUL-separated; [`parse`] reads it.
    pub files_from: Option<(PathBuf, bool)>,
    /// The planned jobs of a `--list` list that `--files-from` gave.
    pub listed: Option<Vec<crate::strategy::Job>>,
    /// `--files-from` refused a name or its list was cut short: both reported
    /// already; the rest is hashed and the run fails at the end.
    pub refused: bool,
    /// `-L`: follow symbolic links below the roots.
    pub follow: bool,
    /// `--exclude`, `--exclude-from`, `-x`: what the walk leaves out.
    pub filter: crate::filter::Filter,
    /// `--stats`: print a summary on stderr.
    pub stats: bool,
    /// `--progress` (Some(true)), `--no-progress` (Some(false)), or decide by terminal.
    pub progress: Option<bool>,
    /// The strategy with its settings and the read policy: what every mode
    /// hashes with.
    pub engine: Engine,
    /// What the run does.
    pub mode: Mode,
}

fn examples(tool: &str, strategy: Strategy) -> String {
    let jobs = if strategy.is_parallel() { " -j 4" } else { "" };
    format!(
        "Output is byte-identical to\n  \
         find -H PATH -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum\n\n\
         Examples:\n  \
         {tool}{jobs} ~/models/llama > SHA256SUMS\n  \
         {tool} --stats ~/photos | sha256sum -c\n  \
         {tool}{jobs} --check SHA256SUMS\n  \
         {tool} --tree --json ~/backup > backup.json\n\n\
         Exit status: 0 if every file was hashed, 1 if some file or directory could \
         not be read (the rest is still printed), 2 for a usage error."
    )
}

/// The clap command for `tool` (exposed so tests can `debug_assert` it).
pub fn command(tool: &'static str, strategy: Strategy) -> clap::Command {
    let about = format!(
        "SHA-256 of every regular file under PATHs, {}.",
        strategy.how()
    );
    (strategy.def().args)(Cli::command())
        .name(tool)
        .bin_name(tool)
        .about(about)
        .after_help("Tuning options, examples and exit status: --help. Man page: --generate man.")
        .after_long_help(examples(tool, strategy))
}

/// GNU refuses `--tag` followed by `-t` (`-t --tag` is fine: `--tag` then
/// implies `-b`), because a text-mode marker has no place in a tag line.
fn refuse_tag_then_text(cmd: &mut clap::Command, m: &clap::ArgMatches) -> Result<(), clap::Error> {
    let last = |id: &str| m.indices_of(id).and_then(|i| i.max());
    match (last("tag"), last("text")) {
        (Some(tag), Some(text)) if m.get_flag("tag") && m.get_flag("text") && text > tag => {
            Err(cmd.error(
                clap::error::ErrorKind::ArgumentConflict,
                "--tag does not support --text mode",
            ))
        }
        _ => Ok(()),
    }
}

/// Parse the process's arguments (exiting with status 2 and clap's message on a
/// usage error, 0 for `--help`/`--version`, 1 when their text cannot be
/// written).
pub fn parse(tool: &'static str, strategy: Strategy) -> Config {
    use std::io::IsTerminal;
    let mut cmd = command(tool, strategy);
    let matches = match cmd.try_get_matches_from_mut(std::env::args_os()) {
        Ok(matches) => matches,
        // Help and version on a terminal: clap's own, styled; it cannot fail
        // there the way a full disk or a closed stdout does.
        Err(e) if !e.use_stderr() && !std::io::stdout().is_terminal() => {
            print_and_exit(e.to_string().as_bytes())
        }
        Err(e) => e.exit(),
    };
    if let Some(&kind) = matches.get_one::<crate::generate::Generate>("generate") {
        let mut text = Vec::new();
        crate::generate::write(kind, cmd, &mut text).expect("writing to memory");
        print_and_exit(&text);
    }
    refuse_tag_then_text(&mut cmd, &matches).unwrap_or_else(|e| e.exit());
    let mut config = config(strategy, &matches).unwrap_or_else(|e| e.exit());
    if let Err(exit) = read_files_from(&mut config) {
        std::process::exit(exit as i32)
    }
    config
}

/// Read `--files-from`'s list into `config`: its paths to walk, or the planned
/// jobs of a `--list` list. A refused name or a list cut short is reported and
/// the rest hashed (`refused`); `Err` when the list cannot be read at all.
fn read_files_from(config: &mut Config) -> Result<(), crate::exit::Exit> {
    use crate::filelist::Listed;
    let Some((list, nul)) = &config.files_from else {
        return Ok(());
    };
    let (listed, cut) = crate::filelist::read(list, *nul).map_err(|e| {
        crate::diag::path_error(&e, None);
        crate::exit::Exit::Failure
    })?;
    if let Some(e) = cut {
        crate::diag::path_error(&e, None);
        config.refused = true;
    }
    match listed {
        Listed::Jobs(jobs) => config.listed = Some(jobs),
        Listed::Paths(mut paths) => {
            // Like GNU `wc --files0-from -`: a list read from stdin cannot
            // also name stdin (it has been read to the end); refuse each
            // such name, hash the rest.
            if list == Path::new("-") {
                paths.retain(|p| {
                    let stdin = p == Path::new("-");
                    if stdin {
                        crate::show!(
                            "-: file name '-' not allowed when reading names from standard input"
                        );
                        config.refused = true;
                    }
                    !stdin
                });
            }
            config.paths.extend(paths);
        }
    }
    Ok(())
}

/// Why arguments that parsed still give no run.
#[derive(Debug)]
enum Refused {
    /// clap's own: a value the strategy refuses.
    Clap(clap::Error),
    /// An input the options name is unusable (`program: WHAT: WHY`, as any
    /// other path is reported).
    Input(String),
}

impl From<clap::Error> for Refused {
    fn from(e: clap::Error) -> Self {
        Refused::Clap(e)
    }
}

impl Refused {
    /// Say why and exit with the usage status, 2.
    fn exit(self) -> ! {
        match self {
            Refused::Clap(e) => e.exit(),
            Refused::Input(msg) => {
                crate::diag::show(format_args!("{msg}"));
                std::process::exit(crate::exit::Exit::Usage as i32)
            }
        }
    }
}

/// Write `text` (help, a version, a generated file) to stdout and exit: 0,
/// also when the reader has gone (`| head`), 1 with a `write error` message
/// when stdout fails otherwise (`> /dev/full`), as GNU's tools do.
fn print_and_exit(text: &[u8]) -> ! {
    use std::io::Write;
    let mut out = crate::stdio::stdout();
    let code = match out.write_all(text).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            crate::diag::write_failed(&e);
            1
        }
        _ => 0,
    };
    std::process::exit(code)
}

/// The resolved configuration of parsed arguments: the strategy builds its
/// engine from them, once.
fn config(strategy: Strategy, m: &clap::ArgMatches) -> Result<Config, Refused> {
    let common = CommonArgs::from_arg_matches(m)?;
    let read = ReadPolicy {
        path: if common.no_mmap {
            DataPath::Read
        } else {
            common.data_path
        },
        // The cache records what `fstat` said of each file it hashed.
        stamps: common.cache.is_some(),
        order: common.read_order,
    };
    let engine = Engine::new((strategy.def().runner)(m)?, read);
    let filter = filter(&common)?;
    let env = |name: &str| std::env::var(name).ok();
    let shard = common.scale.shard.map(|s| s.resolve(env)).transpose();
    let shard = shard.map_err(|why| Refused::Input(format!("--shard: {why}")))?;
    Ok(resolve(common, engine, filter, shard))
}

/// The filter of `--exclude`, `--exclude-from` and `-x`: a file that cannot
/// be read or a pattern that is not a glob is a usage error.
fn filter(common: &CommonArgs) -> Result<crate::filter::Filter, Refused> {
    let mut patterns = common.exclude.clone();
    let stdin = std::ffi::OsStr::new("-");
    let reads_stdin = common.files_from.as_deref() == Some(stdin.as_ref())
        || common.paths.is_empty() && common.files_from.is_none()
        || common.paths.iter().any(|p| p.as_os_str() == stdin);
    if reads_stdin && common.exclude_from.iter().any(|f| f.as_os_str() == stdin) {
        let why = "standard input cannot give both the patterns and what to hash";
        return Err(Refused::Input(format!("--exclude-from -: {why}")));
    }
    for file in &common.exclude_from {
        let shown = file.display();
        let text = if file.as_os_str() == "-" {
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut text).map(|_| text)
        } else {
            std::fs::read(file)
        };
        let text =
            text.map_err(|e| Refused::Input(format!("{shown}: {}", crate::error::io_reason(&e))))?;
        let more = crate::filter::patterns_in(&text).map_err(|line| {
            Refused::Input(format!("{shown}: line {line}: a pattern must be UTF-8"))
        })?;
        patterns.extend(more);
    }
    crate::filter::Filter::new(&patterns, common.one_file_system)
        .map_err(|e| Refused::Input(format!("--exclude: {e}")))
}

fn resolve(
    common: CommonArgs,
    engine: Engine,
    filter: crate::filter::Filter,
    shard: Option<crate::shard::Shard>,
) -> Config {
    let c = &common.check;
    let output = OutputOptions {
        tag: common.tag,
        binary: common.binary,
        zero: common.zero,
        json: match (common.json, common.json_lines) {
            (true, _) => Json::Document,
            (_, true) => Json::Lines,
            _ => Json::No,
        },
        tree: common.tree,
    };
    // clap has refused every combination of these that conflicts.
    let mode = if c.check {
        Mode::Check(CheckOptions {
            quiet: c.quiet,
            status: c.status,
            warn: c.warn,
            strict: c.strict,
            ignore_missing: c.ignore_missing,
        })
    } else if common.scale.merge {
        Mode::Merge(output)
    } else if common.scale.list {
        Mode::List { zero: common.zero }
    } else {
        Mode::Hash(HashRun {
            output,
            cache: common.cache,
            shard,
            strict: c.strict,
        })
    };
    let progress = match (common.progress, common.no_progress) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    // No operand means standard input, as in GNU (`cat f | sha256sum`,
    // `sha256sum -c < SUMS`), unless --files-from supplies the paths.
    let mut paths = common.paths;
    if paths.is_empty() && common.files_from.is_none() {
        paths.push(PathBuf::from("-"));
    }
    Config {
        paths,
        files_from: common.files_from.map(|f| (f, common.null)),
        follow: common.follow,
        filter,
        stats: common.stats,
        progress,
        engine,
        mode,
        listed: None,
        refused: false,
    }
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
    fn jobs_help_says_what_a_worker_is() {
        // Written out, not taken from the strategy table the help is built from.
        for (s, want) in [
            (Strategy::Threads, "-j, --jobs <N> Number of hashing threads (more start while files wait for the disk) [default: CPUs available]"),
            (Strategy::Procs, "-j, --jobs <N> Number of worker processes [default: CPUs available]"),
            (Strategy::Async, "-j, --jobs <N> Number of hashing threads (io_uring: one ring each, with many files in flight; --io pool: more start while files wait for a local disk) [default: CPUs available]"),
        ] {
            let help = command("hash-test", s).render_long_help().to_string();
            let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(want), "{s:?}: {help}");
        }
        let serial = command("hash-test", Strategy::Serial)
            .render_help()
            .to_string();
        assert!(!serial.contains("--jobs"), "{serial}");
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
        let c = config(Strategy::Threads, &m).unwrap();
        assert_eq!(c.engine.workers(100), 3);
        assert!(c.follow);
        assert_eq!(c.paths, [PathBuf::from("d"), PathBuf::from("e")]);
    }

    #[test]
    #[cfg(feature = "async")]
    fn the_engine_carries_every_engine_option_into_every_mode() {
        let parse = |args: &[&str]| {
            let m = command("hash-async", Strategy::Async)
                .try_get_matches_from(args)
                .unwrap();
            config(Strategy::Async, &m).unwrap()
        };
        for mode in [&["m"][..], &["-c", "m"], &["--files-from", "l"]] {
            let mut args = vec![
                "x",
                "--io",
                "pool",
                "-j",
                "3",
                "--no-mmap",
                "--max-in-flight",
                "9",
            ];
            args.extend(mode);
            let c = parse(&args);
            let engine = format!("{:?}", c.engine);
            assert!(
                engine.contains("Async { workers: 3, io: Pool, max_in_flight: Some(9) }"),
                "{engine}"
            );
            assert_eq!(c.engine.read_policy().path, DataPath::Read, "{mode:?}");
            let c = parse(&[&["x"][..], mode].concat());
            let engine = format!("{:?}", c.engine);
            assert!(engine.contains("io: Auto"), "{engine}");
            assert_eq!(c.engine.read_policy().path, DataPath::Auto, "{mode:?}");
        }
    }

    fn threads_config(args: &[&str]) -> Config {
        let m = command("hash-threads", Strategy::Threads)
            .try_get_matches_from(args)
            .unwrap();
        config(Strategy::Threads, &m).unwrap()
    }

    #[test]
    fn the_last_of_quiet_status_warn_wins_like_gnu() {
        let Mode::Check(o) = threads_config(&["x", "-c", "--status", "--warn", "m"]).mode else {
            panic!("not check mode")
        };
        assert!(o.warn && !o.status && !o.quiet);
        let Mode::Check(o) = threads_config(&["x", "-c", "--warn", "--quiet", "m"]).mode else {
            panic!("not check mode")
        };
        assert!(o.quiet && !o.warn);
    }

    #[test]
    fn check_switches_need_check_and_outputs_conflict_with_it() {
        let cmd = || command("hash-threads", Strategy::Threads);
        assert!(cmd().try_get_matches_from(["x", "--strict", "m"]).is_err());
        assert!(cmd()
            .try_get_matches_from(["x", "-c", "--json", "m"])
            .is_err());
        assert!(cmd()
            .try_get_matches_from(["x", "--json", "--tag", "m"])
            .is_err());
        assert!(cmd().try_get_matches_from(["x", "-0", "m"]).is_err());
    }

    #[test]
    fn files_from_replaces_paths_and_progress_flags_resolve() {
        let c = threads_config(&["x", "--files-from", "-", "-0", "--no-progress"]);
        assert_eq!(c.files_from, Some((PathBuf::from("-"), true)));
        assert!(c.paths.is_empty());
        assert_eq!(c.progress, Some(false));
        assert_eq!(
            threads_config(&["x", "--no-progress", "--progress", "d"]).progress,
            Some(true)
        );
        assert_eq!(threads_config(&["x", "d"]).progress, None);
        assert_eq!(
            threads_config(&["x", "--tag", "-z", "--tree", "d"]).mode,
            Mode::Hash(HashRun {
                output: OutputOptions {
                    tag: true,
                    binary: false,
                    zero: true,
                    json: Json::No,
                    tree: true
                },
                cache: None,
                shard: None,
                strict: false,
            })
        );
    }

    #[test]
    fn cache_is_for_hashing_and_strict_needs_check_or_cache() {
        let cmd = || command("hash-threads", Strategy::Threads);
        for refused in [
            &["x", "--cache", "c", "-c", "m"][..],
            &["x", "--cache", "c", "--list", "d"],
            &["x", "--cache", "c", "--merge", "s"],
            &["x", "--strict", "d"],
        ] {
            assert!(cmd().try_get_matches_from(refused).is_err(), "{refused:?}");
        }
        let hash_run = |args: &[&str]| match threads_config(args).mode {
            Mode::Hash(h) => h,
            other => panic!("{args:?}: {other:?}"),
        };
        let h = hash_run(&["x", "--cache", "c", "--strict", "--tree", "--json", "d"]);
        assert_eq!(h.cache, Some(PathBuf::from("c")));
        assert!(h.strict);
        let c = threads_config(&["x", "-c", "--strict", "m"]);
        assert!(
            matches!(c.mode, Mode::Check(o) if o.strict),
            "check mode's --strict is its own"
        );
        let h = hash_run(&["x", "--cache", "c", "--shard", "1/2", "--files-from", "l"]);
        assert!(h.cache.is_some() && !h.strict);
        assert_eq!(h.shard, Some(crate::shard::Shard { k: 1, n: 2 }));
    }

    #[test]
    fn one_mode_is_decided_from_the_options() {
        assert_eq!(
            threads_config(&["x", "--list", "-z", "d"]).mode,
            Mode::List { zero: true }
        );
        assert!(matches!(
            threads_config(&["x", "--merge", "--tag", "s0", "s1"]).mode,
            Mode::Merge(o) if o.tag
        ));
        assert!(matches!(
            threads_config(&["x", "-c", "m"]).mode,
            Mode::Check(_)
        ));
        assert!(matches!(threads_config(&["x", "d"]).mode, Mode::Hash(h) if h.shard.is_none()));
        // A --shard that cannot be resolved is refused while parsing, before a walk.
        let m = command("hash-threads", Strategy::Threads)
            .try_get_matches_from(["x", "--shard", "auto", "d"])
            .unwrap();
        if std::env::var_os("SLURM_ARRAY_TASK_ID").is_none() {
            let Err(Refused::Input(why)) = config(Strategy::Threads, &m) else {
                panic!("--shard auto outside an array was accepted")
            };
            assert!(why.starts_with("--shard: "), "{why}");
        }
    }

    #[test]
    fn no_path_means_standard_input() {
        assert_eq!(threads_config(&["x"]).paths, [PathBuf::from("-")]);
        assert_eq!(threads_config(&["x", "-c"]).paths, [PathBuf::from("-")]);
        assert!(threads_config(&["x", "--files-from", "l"]).paths.is_empty());
    }

    fn tag_text(args: &[&str]) -> Result<Config, Refused> {
        let mut cmd = command("hash-threads", Strategy::Threads);
        let m = cmd.try_get_matches_from_mut(args)?;
        refuse_tag_then_text(&mut cmd, &m)?;
        config(Strategy::Threads, &m)
    }

    #[test]
    fn binary_and_text_follow_gnu_order_rules() {
        // Expected behaviour from GNU 9.1: `sha256sum --tag -t x` fails,
        // `-t --tag`, `--tag -b` and `-b --tag` work; the last of -b/-t wins.
        assert!(tag_text(&["x", "--tag", "-t", "f"]).is_err());
        assert!(tag_text(&["x", "--tag", "--text", "-b", "f"]).is_ok());
        for ok in [&["x", "-t", "--tag", "f"][..], &["x", "--tag", "-b", "f"]] {
            assert!(tag_text(ok).is_ok(), "{ok:?}");
        }
        let binary = |args: &[&str]| match tag_text(args).unwrap().mode {
            Mode::Hash(h) => h.output.binary,
            other => panic!("not hash mode: {other:?}"),
        };
        assert!(binary(&["x", "-t", "-b", "f"]));
        assert!(!binary(&["x", "-b", "-t", "f"]));
        assert!(tag_text(&["x", "-c", "-b", "f"]).is_err());
        assert!(tag_text(&["x", "-c", "--text", "f"]).is_err());
    }
}
