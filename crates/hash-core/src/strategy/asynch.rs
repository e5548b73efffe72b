//! A tokio runtime with a bounded number of tasks in flight.
//!
//! This is the Rust counterpart of Python's `asyncio.to_thread` approach: an
//! async loop hands work to tokio's blocking pool, where files are opened,
//! read and hashed by ordinary blocking calls, and collects the results for
//! the single writer.
//!
//! The unit handed over is a *task* that takes files from a shared cursor
//! until it has hashed [`TASK_FILES`] files or [`TASK_BYTES`] bytes, not a
//! file: two thread hand-offs per 4 KiB file cost more than hashing it, and
//! made this strategy the slowest on trees of small files (sizes are not
//! known before a file is opened, so the task, not the planner, decides when
//! it has done enough). `workers` tasks run at once; like the threads
//! strategy, a task whose next read would wait for the disk (`RWF_NOWAIT`
//! said so) has the loop admit one more, up to [`MAX_READERS`] tasks, so
//! cold small files get many reads in flight while warm ones keep to
//! `workers` threads. Where reads do not say when they wait (a network or
//! FUSE file system: no `RWF_NOWAIT`) or the user fixed the depth
//! (`--max-in-flight`), the depth policy of [`crate::inflight`] says how many
//! tasks run; where it measures, of [`POLICY_TASK_FILES`] files each, so that
//! a change of depth takes effect soon.
//!
//! Why not `tokio::fs`? On Linux tokio has no asynchronous file I/O: every
//! `tokio::fs::File::read` is itself a `spawn_blocking` round trip, with the data
//! copied through an intermediate buffer. Hashing a 2 GiB file in 256 KiB reads
//! would cost 8,192 thread hand-offs and an extra copy of every byte, for no
//! gain: SHA-256 is CPU-bound, so the blocking pool has to do the work anyway.
//! Real asynchronous file I/O is io_uring: see the `uring` module.

use super::{no_helper, Def, JobsArgs};

#[cfg(feature = "async")]
mod run;

/// `hash-async`: `-j` threads and `--io`.
pub(super) const DEF: Def = Def {
    name: "async",
    binary: "hash-async",
    how: "on a tokio runtime",
    args: |cmd| {
        use clap::Args;
        let worker = "hashing threads (io_uring: one ring each, with many files in flight; \
                      --io pool: more start while files wait for a local disk)";
        IoArgs::augment_args(JobsArgs::augment(cmd, worker))
    },
    runner,
    helper: no_helper,
};

/// How `hash-async` does its file I/O (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum)]
pub enum IoMode {
    /// io_uring where the kernel allows it, else the blocking pool.
    #[default]
    Auto,
    /// Blocking reads on tokio's blocking pool (`asyncio.to_thread` style).
    Pool,
    /// Asynchronous opens and reads with io_uring (falls back to the pool,
    /// saying so in `--stats`, where io_uring is unavailable).
    Uring,
}

/// `hash-async`'s choice of I/O.
#[derive(Debug, clap::Args)]
pub(crate) struct IoArgs {
    /// File I/O: io_uring, tokio's blocking pool, or auto.
    ///
    /// File I/O: io_uring (many opens and reads in flight from few threads),
    /// tokio's blocking pool, or auto (io_uring where the kernel allows it).
    #[arg(help_heading = "Performance", hide_short_help = true, long, value_enum, default_value_t = IoMode::Auto, value_name = "MODE")]
    pub io: IoMode,
}

impl IoArgs {
    /// The clap id of `--io`.
    pub(crate) const ID: &'static str = "io";
}

/// The async strategy and its settings.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "async"), allow(dead_code))]
pub struct Async {
    /// Hashing threads (`-j`): rings, or tasks on the blocking pool at once.
    pub workers: usize,
    /// `--io`.
    pub io: IoMode,
    /// Files in flight, if the user fixed it (`--max-in-flight`): over all
    /// io_uring rings, or the blocking pool's tasks.
    pub max_in_flight: Option<usize>,
}

/// [`Def::runner`]: the settings from the command line.
#[cfg(feature = "async")]
fn runner(m: &clap::ArgMatches) -> Result<Box<dyn super::Runner>, clap::Error> {
    use clap::FromArgMatches;
    let (workers, io) = (JobsArgs::workers(m)?, IoArgs::from_arg_matches(m)?.io);
    let max_in_flight = JobsArgs::max_in_flight(m)?;
    Ok(Box::new(Async {
        workers,
        io,
        max_in_flight,
    }))
}

/// [`Def::runner`] in a build without the `async` feature: only `hash-async`
/// runs this strategy, and it is built with it.
#[cfg(not(feature = "async"))]
fn runner(_: &clap::ArgMatches) -> Result<Box<dyn super::Runner>, clap::Error> {
    Err(clap::Error::raw(
        clap::error::ErrorKind::InvalidValue,
        "this build of hash-core has no async strategy (cargo feature `async`)\n",
    ))
}
