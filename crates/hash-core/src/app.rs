//! The `main` of every `hash-*` binary: parse, plan, run, exit status.
//!
//! The binaries are one line each over [`main`], so the four cannot differ in
//! anything but the strategy they pass in.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::check::{self, CheckRun};
use crate::cli::{self, Config, Mode};
use crate::error::{io_reason, Error};
use crate::output::{report_error, OutputOptions, RunInfo, Writer};
use crate::progress::{self, Progress};
use crate::strategy::{procs, Strategy};
use crate::walk;
use crate::Job;

/// Exit statuses shared by all binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Every file was hashed (or the reader closed our output early).
    Success = 0,
    /// Some file or directory could not be read, or output could not be written.
    Failure = 1,
    /// The command line was wrong (clap exits with this itself).
    Usage = 2,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

/// Run the binary called `tool` with `strategy`.
pub fn main(tool: &'static str, strategy: Strategy) -> ExitCode {
    if strategy == Strategy::Procs && procs::is_worker() {
        return procs::worker_main();
    }
    let config = cli::parse(tool, strategy);
    run(tool, strategy, &config).into()
}

/// Do what `config` says with `strategy`, printing to stdout/stderr.
pub fn run(tool: &str, strategy: Strategy, config: &Config) -> Exit {
    let mut paths = config.paths.clone();
    if let Some((list, nul)) = &config.files_from {
        match read_list(list, *nul) {
            Ok(listed) => paths.extend(listed),
            Err(e) => {
                report_error(tool, &Error::new(list, e), None);
                return Exit::Failure;
            }
        }
    }
    let show_progress = progress::wanted(config.progress);
    match &config.mode {
        Mode::Check(opts) => {
            let manifests: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
            let run = CheckRun {
                tool,
                strategy,
                jobs: config.jobs,
                opts: *opts,
                progress: show_progress,
            };
            check::run(&run, &manifests)
        }
        Mode::Hash(out) => hash(tool, strategy, config, &paths, out, show_progress),
    }
}

/// Hash `files` with `strategy` into `writer`; standard input (`-`) is read
/// here, first, and the strategy gets the rest (see [`crate::stdin`]).
fn run_plan<W: io::Write>(
    tool: &str,
    strategy: Strategy,
    config: &Config,
    files: &[Job],
    writer: &mut Writer<'_, W>,
) -> Option<String> {
    let (jobs, io) = (config.jobs, config.io);
    if !files.iter().any(walk::is_stdin) {
        return strategy.run_with(tool, files, jobs, io, &mut |i, outcome| {
            writer.accept(i, outcome)
        });
    }
    let (stdin, rest): (Vec<usize>, Vec<usize>) =
        (0..files.len()).partition(|&i| walk::is_stdin(&files[i]));
    for i in stdin {
        if writer.accept(i, crate::stdin::hash_stdin()).is_break() {
            return None;
        }
    }
    let others: Vec<Job> = rest.iter().map(|&i| files[i].clone()).collect();
    strategy.run_with(tool, &others, jobs, io, &mut |i, outcome| {
        writer.accept(rest[i], outcome)
    })
}

/// Paths listed in `list` ('-' = stdin), one per line or NUL-separated;
/// empty entries are ignored.
fn read_list(list: &Path, nul: bool) -> io::Result<Vec<PathBuf>> {
    let mut data = Vec::new();
    if list == Path::new("-") {
        io::stdin().lock().read_to_end(&mut data)?;
    } else {
        data = std::fs::read(list)?;
    }
    let sep = if nul { b'\0' } else { b'\n' };
    Ok(data
        .split(|&b| b == sep)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect())
}

fn hash(
    tool: &str,
    strategy: Strategy,
    config: &Config,
    paths: &[PathBuf],
    out: &OutputOptions,
    show_progress: bool,
) -> Exit {
    let start = Instant::now();
    // Sizes serve the progress total only. Scheduling does without them: a
    // `stat` per file in the walk cost as much as 15 % of hashing a tree of
    // 4 KiB files, all of it before the first file was hashed, while the
    // largest-first order it bought only helps a tree whose largest files
    // come late in path order (then the largest of them finishes alone).
    let plan = walk::plan(paths, config.follow, show_progress);
    let progress =
        show_progress.then(|| Progress::start(plan.files.len() as u64, plan.total_bytes()));
    let mut writer = Writer::new(
        tool,
        &plan.files,
        io::stdout().lock(),
        *out,
        progress.as_ref(),
    );
    for e in &plan.errors {
        writer.error(e);
    }
    let io = run_plan(tool, strategy, config, &plan.files, &mut writer);
    let workers = strategy.workers(config.jobs, plan.files.len());
    let info = RunInfo {
        strategy: strategy.name(),
        workers,
        elapsed: start.elapsed(),
    };
    let closed = writer.finish(&plan.skipped, info).is_break();
    let (summary, write_error) = (writer.summary, writer.write_error.take());
    drop(writer);
    if let Some(p) = progress {
        p.finish(); // before anything else goes to stderr
    }
    if let Some(e) = &write_error {
        eprintln!("{tool}: write error: {}", io_reason(e));
        return Exit::Failure;
    }
    if closed {
        return Exit::Success; // `| head`: the reader has what it wanted
    }
    if config.stats {
        let name = match io {
            Some(io) => format!("{} ({io})", strategy.name()),
            None => strategy.name().to_string(),
        };
        eprintln!(
            "{tool}: {}",
            summary.render(start.elapsed(), &name, workers)
        );
    }
    if summary.errors > 0 {
        Exit::Failure
    } else {
        Exit::Success
    }
}
