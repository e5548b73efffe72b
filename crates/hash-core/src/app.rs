//! The `main` of every `hash-*` binary: parse, plan, run, exit status.
//!
//! The binaries are one line each over [`main`], so the four cannot differ in
//! anything but the strategy they pass in.

use std::io;
use std::process::ExitCode;
use std::time::Instant;

use crate::cli::{self, Config};
use crate::error::io_reason;
use crate::output::Writer;
use crate::strategy::{procs, Strategy};
use crate::walk;

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

/// Hash everything `config` names with `strategy`, printing to stdout/stderr.
pub fn run(tool: &str, strategy: Strategy, config: &Config) -> Exit {
    let start = Instant::now();
    let plan = walk::plan(&config.paths, config.follow);
    let mut writer = Writer::new(tool, &plan.files, io::stdout().lock());
    for e in &plan.errors {
        writer.error(e);
    }
    writer.summary.skipped = plan.skipped;
    strategy.run(tool, &plan.files, config.jobs, &mut |i, outcome| {
        writer.accept(i, outcome)
    });
    let closed = writer.finish().is_break();
    if let Some(e) = &writer.write_error {
        eprintln!("{tool}: write error: {}", io_reason(e));
        return Exit::Failure;
    }
    if closed {
        return Exit::Success; // `| head`: the reader has what it wanted
    }
    let summary = writer.summary;
    if config.stats {
        let workers = if strategy.is_parallel() {
            config.jobs.clamp(1, plan.files.len().max(1))
        } else {
            1
        };
        eprintln!(
            "{tool}: {}",
            summary.render(start.elapsed(), strategy.name(), workers)
        );
    }
    if summary.errors > 0 {
        Exit::Failure
    } else {
        Exit::Success
    }
}
