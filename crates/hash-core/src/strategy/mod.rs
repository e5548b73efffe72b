//! The four ways of hashing a planned list of files, behind one signature.
//!
//! Every strategy takes the same input — a slice of [`Job`]s and a worker count —
//! and reports each file's [`Outcome`] to one `sink`, tagged with the job's index.
//! Results arrive in whatever order the strategy finishes them; the caller (the
//! single writer in [`crate::output`]) restores the planned order. So output,
//! errors, statistics and check mode are written once, and a strategy is only
//! the part that differs: who hashes which file, and where.
//!
//! All parallel strategies hand out work largest file first, so a big file does
//! not start last and finish alone while the other workers idle.

use std::ops::ControlFlow;
use std::path::PathBuf;

use crate::error::ErrorKind;
use crate::hasher::FileDigest;

mod asynch;
pub mod procs;
mod serial;
mod threads;

/// One regular file to hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Root joined with the path below it, as `find` prints it.
    pub path: PathBuf,
    /// Size seen when planning (a scheduling hint; the hash counts real bytes).
    pub size: u64,
    /// Whether opening may follow a final symbolic link (roots, `-L`, check mode).
    pub follow: bool,
}

/// What hashing one file gave.
pub type Outcome = Result<FileDigest, ErrorKind>;

/// Where results go: called on the calling thread, once per job, in any order.
/// Returning `Break` (the reader of our output went away) stops the run early.
pub type Sink<'a> = dyn FnMut(usize, Outcome) -> ControlFlow<()> + 'a;

/// A concurrency strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One thread, one file after another: the baseline.
    Serial,
    /// A pool of OS threads pulling from a shared queue.
    Threads,
    /// A pool of worker processes fed paths over pipes.
    Procs,
    /// A tokio runtime with a bounded number of files in flight.
    Async,
}

impl Strategy {
    /// All four, in the order they are usually listed.
    pub const ALL: [Strategy; 4] = [
        Strategy::Serial,
        Strategy::Threads,
        Strategy::Procs,
        Strategy::Async,
    ];

    /// The strategy's short name (`serial`, `threads`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Serial => "serial",
            Strategy::Threads => "threads",
            Strategy::Procs => "procs",
            Strategy::Async => "async",
        }
    }

    /// Whether `-j/--jobs` means anything for this strategy.
    pub fn is_parallel(self) -> bool {
        self != Strategy::Serial
    }

    /// Hash every job, reporting each outcome to `sink` (see the module doc).
    /// `tool` names the program in the rare notices a strategy prints itself
    /// (a worker process that died); `workers` is ignored by `Serial`.
    pub fn run(self, tool: &str, jobs: &[Job], workers: usize, sink: &mut Sink<'_>) {
        let workers = workers.clamp(1, jobs.len().max(1));
        match self {
            Strategy::Serial => serial::run(jobs, sink),
            Strategy::Threads => threads::run(jobs, workers, sink),
            Strategy::Procs => procs::run(tool, jobs, workers, sink),
            Strategy::Async => asynch::run(jobs, workers, sink),
        }
    }
}

/// Job indices, largest file first (ties in planned order, for determinism).
pub(crate) fn largest_first(jobs: &[Job]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| jobs[b].size.cmp(&jobs[a].size).then(a.cmp(&b)));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(size: u64) -> Job {
        Job {
            path: PathBuf::from("x"),
            size,
            follow: false,
        }
    }

    #[test]
    fn largest_first_is_stable_for_ties() {
        let jobs = [job(1), job(5), job(1), job(9)];
        assert_eq!(largest_first(&jobs), [3, 1, 0, 2]);
    }
}
