//! The four ways of hashing a planned list of files, behind one signature.
//!
//! Every strategy takes the same input — a slice of [`Job`]s and a worker count —
//! and reports each file's [`Outcome`] to one `sink`, tagged with the job's index.
//! Results arrive in whatever order the strategy finishes them; the caller (the
//! single writer in [`crate::output`]) restores the planned order. So output,
//! errors, statistics and check mode are written once, and a strategy is only
//! the part that differs: who hashes which file, and where.
//!
//! All parallel strategies hand out work largest file first when sizes are
//! known (check mode, `--progress`), so a big file does not start last and
//! finish alone while the other workers idle. A plain hashing run does not
//! `stat` files in the walk (see `app::hash`), so there they go in path order.

use std::ops::ControlFlow;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::error::ErrorKind;
use crate::hasher::{self, FileDigest};

mod asynch;
pub mod procs;
mod queue;
mod serial;
mod threads;
pub mod uring;

/// One regular file to hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Root joined with the path below it, as `find` prints it.
    pub path: PathBuf,
    /// Size seen when planning (a scheduling hint; the hash counts real bytes).
    pub size: u64,
    /// Whether opening may follow a final symbolic link (roots, `-L`, check mode).
    pub follow: bool,
    /// Byte offset in `path` where the path relative to its root starts (for
    /// the tree digest, which must not depend on the root's name).
    pub rel: usize,
    /// The walked parent directory, kept open so the file is opened relative
    /// to it (`None`: opened by its full path).
    pub dir: Option<DirFd>,
}

/// An open directory, shared by the files walked in it.
#[derive(Debug, Clone)]
pub struct DirFd(pub Arc<OwnedFd>);

impl PartialEq for DirFd {
    fn eq(&self, other: &DirFd) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for DirFd {}

impl Job {
    /// A job for `path` (relative part: the whole path).
    pub fn new(path: PathBuf, size: u64, follow: bool) -> Job {
        Job {
            path,
            size,
            follow,
            rel: 0,
            dir: None,
        }
    }

    /// How to hash this job: see [`hasher::Request`].
    pub fn request<'a>(
        &'a self,
        cancel: &'a AtomicBool,
        on_block: Option<&'a dyn Fn()>,
    ) -> hasher::Request<'a> {
        hasher::Request {
            path: &self.path,
            dir: self.dir.as_ref().map(|d| d.0.as_fd()),
            follow: self.follow,
            cancel,
            on_block,
        }
    }

    /// The path below its root, as raw bytes.
    pub fn rel_path(&self) -> &[u8] {
        &crate::escape::path_bytes(&self.path)[self.rel..]
    }
}

/// What hashing one file gave.
pub type Outcome = Result<FileDigest, ErrorKind>;

/// Where results go: called on the calling thread, once per job, in any order.
/// Returning `Break` (the reader of our output went away) stops the run early.
pub type Sink<'a> = dyn FnMut(usize, Outcome) -> ControlFlow<()> + 'a;

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

/// A concurrency strategy.
///
/// Everything else knows a strategy through [`Strategy::ALL`] and the facts in
/// `Strategy::info`, so a fifth one is a variant, an entry in `ALL` and a row
/// in `info` (the compiler asks for both matches), its module with an arm in
/// [`Strategy::run_with`], and a one-line binary crate.
// `ValueEnum` lists the variants for the test that `ALL` has them all (and
// lets a command line name a strategy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Strategy {
    /// One thread, one file after another: the baseline.
    Serial,
    /// A pool of OS threads pulling from a shared queue.
    Threads,
    /// A pool of worker processes fed paths over pipes.
    Procs,
    /// A few hashing threads, each with an io_uring ring (or tasks on tokio's
    /// blocking pool) keeping many opens and reads in flight.
    Async,
}

/// What the rest of the program knows about one strategy.
struct Info {
    name: &'static str,
    binary: &'static str,
    /// How it hashes, ending "SHA-256 of every regular file under PATHs, ...".
    how: &'static str,
    /// What one `-j` worker is; `None`: no `-j` option.
    worker: Option<&'static str>,
    /// Whether it has `--io` (a choice of I/O).
    io: bool,
}

impl Strategy {
    /// All four, in the order they are usually listed.
    pub const ALL: [Strategy; 4] = [
        Strategy::Serial,
        Strategy::Threads,
        Strategy::Procs,
        Strategy::Async,
    ];

    /// The one place that describes each strategy.
    const fn info(self) -> &'static Info {
        match self {
            Strategy::Serial => &Info {
                name: "serial",
                binary: "hash-serial",
                how: "one file after another",
                worker: None,
                io: false,
            },
            Strategy::Threads => &Info {
                name: "threads",
                binary: "hash-threads",
                how: "on a pool of threads",
                worker: Some("hashing threads (more start while files wait for the disk)"),
                io: false,
            },
            Strategy::Procs => &Info {
                name: "procs",
                binary: "hash-procs",
                how: "on a pool of worker processes",
                worker: Some("worker processes"),
                io: false,
            },
            Strategy::Async => &Info {
                name: "async",
                binary: "hash-async",
                how: "on a tokio runtime",
                worker: Some(
                    "hashing threads (io_uring: one ring each, with many files in flight; \
                     --io pool: more start while files wait for the disk)",
                ),
                io: true,
            },
        }
    }

    /// The strategy's short name (`serial`, `threads`, ...).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The name of the binary that runs it (`hash-serial`, ...).
    pub fn binary(self) -> &'static str {
        self.info().binary
    }

    /// The strategy called `name` (see [`Strategy::name`]).
    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The strategy the binary `binary` runs (see [`Strategy::binary`]).
    pub fn from_binary(binary: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.binary() == binary)
    }

    /// How it hashes, for `--help` ("one file after another", ...).
    pub fn how(self) -> &'static str {
        self.info().how
    }

    /// What one of its `-j` workers is, for `--help`; `None` for `Serial`.
    pub fn worker(self) -> Option<&'static str> {
        self.info().worker
    }

    /// Whether `-j/--jobs` means anything for this strategy.
    pub fn is_parallel(self) -> bool {
        self.info().worker.is_some()
    }

    /// Whether it has a choice of I/O (`--io`, see [`IoMode`]).
    pub fn has_io_option(self) -> bool {
        self.info().io
    }

    /// The workers a run over `files` files really uses when `requested` are asked
    /// for: never more than the files, at least one, one for `Serial`.
    pub fn workers(self, requested: usize, files: usize) -> usize {
        if self.is_parallel() {
            requested.clamp(1, files.max(1))
        } else {
            1
        }
    }

    /// Hash every job, reporting each outcome to `sink` (see the module doc).
    /// `tool` names the program in the rare notices a strategy prints itself
    /// (a worker process that died); `workers` is ignored by `Serial`.
    pub fn run(self, tool: &str, files: &[Job], workers: usize, sink: &mut Sink<'_>) {
        self.run_with(tool, files, workers, IoMode::default(), sink);
    }

    /// [`Strategy::run`] with `hash-async`'s I/O mode (ignored by the
    /// others). Returns how the I/O was done, for `--stats`: `None` for the
    /// strategies that have one way only.
    pub fn run_with(
        self,
        tool: &str,
        files: &[Job],
        workers: usize,
        io: IoMode,
        sink: &mut Sink<'_>,
    ) -> Option<String> {
        let workers = self.workers(workers, files.len());
        match self {
            Strategy::Serial => serial::run(files, sink),
            Strategy::Threads => threads::run(files, workers, sink),
            Strategy::Procs => procs::run(tool, files, workers, sink),
            Strategy::Async => {
                if io == IoMode::Pool {
                    asynch::run(files, workers, sink);
                    return Some("pool".into());
                }
                return Some(match uring::available() {
                    Ok(()) => {
                        uring::run(files, workers, sink);
                        "io_uring".into()
                    }
                    Err(why) => {
                        asynch::run(files, workers, sink);
                        format!("pool (io_uring unavailable: {why})")
                    }
                });
            }
        }
        None
    }
}

/// Job indices, largest file first (ties in planned order, for determinism).
pub(crate) fn largest_first(files: &[Job]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| files[b].size.cmp(&files[a].size).then(a.cmp(&b)));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(size: u64) -> Job {
        Job::new(PathBuf::from("x"), size, false)
    }

    /// Run an in-process strategy and collect outcomes by job index.
    fn collect(s: Strategy, files: &[Job], workers: usize) -> Vec<Outcome> {
        collect_io(s, IoMode::default(), files, workers)
    }

    fn collect_io(s: Strategy, io: IoMode, files: &[Job], workers: usize) -> Vec<Outcome> {
        let mut got: Vec<Option<Outcome>> = (0..files.len()).map(|_| None).collect();
        s.run_with("test", files, workers, io, &mut |i, o| {
            assert!(got[i].is_none(), "job {i} reported twice");
            got[i] = Some(o);
            ControlFlow::Continue(())
        });
        got.into_iter()
            .map(|o| o.expect("every job is reported"))
            .collect()
    }

    // `Procs` re-executes the binary, so it is tested through `hash-procs`.
    const IN_PROCESS: [Strategy; 3] = [Strategy::Serial, Strategy::Threads, Strategy::Async];

    /// Every in-process way of running: `hash-async` in both I/O modes.
    fn ways() -> Vec<(Strategy, IoMode)> {
        let mut ways: Vec<_> = IN_PROCESS.iter().map(|&s| (s, IoMode::Pool)).collect();
        if uring::available().is_ok() {
            ways.push((Strategy::Async, IoMode::Uring));
        } else {
            eprintln!("io_uring unavailable here: testing the pool only");
        }
        ways
    }

    #[test]
    fn files_that_vanish_or_turn_into_fifos_after_planning_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "gone", "fifo", "z"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        let plan = crate::walk::plan(&[dir.path().to_path_buf()], false, true);
        std::fs::remove_file(dir.path().join("gone")).unwrap();
        let fifo = dir.path().join("fifo");
        std::fs::remove_file(&fifo).unwrap();
        use rustix::fs::{mknodat, FileType, Mode, CWD};
        mknodat(CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();
        for (s, io) in ways() {
            for workers in [1, 2, 4] {
                let got = collect_io(s, io, &plan.files, workers);
                assert_eq!(got[0].as_ref().unwrap().size, 1, "{s:?}");
                assert!(matches!(got[1], Err(ErrorKind::NotRegular)), "{s:?}: fifo");
                assert_eq!(
                    got[2].as_ref().unwrap_err().to_string(),
                    "No such file or directory"
                );
                assert_eq!(got[3].as_ref().unwrap().size, 1, "{s:?}");
            }
        }
    }

    #[test]
    fn every_job_is_reported_exactly_once_with_the_serial_digest() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..300usize {
            std::fs::write(dir.path().join(format!("f{i}")), vec![i as u8; i * 100]).unwrap();
        }
        // Around io_uring's 64 KiB blocks, and one large enough for the
        // read-ahead pipeline.
        for (k, size) in [65535, 65536, 65537, 300_000, 5 << 20]
            .into_iter()
            .enumerate()
        {
            let data: Vec<u8> = (0..size).map(|b| (b * 7 + k) as u8).collect();
            std::fs::write(dir.path().join(format!("g{k}")), data).unwrap();
        }
        let plan = crate::walk::plan(&[dir.path().to_path_buf()], false, false);
        let serial = collect(Strategy::Serial, &plan.files, 1);
        for (s, io) in ways() {
            for workers in [1, 2, 7] {
                let got = collect_io(s, io, &plan.files, workers);
                for (a, b) in got.iter().zip(&serial) {
                    assert_eq!(a.as_ref().unwrap(), b.as_ref().unwrap(), "{s:?} x{workers}");
                }
            }
        }
    }

    #[test]
    fn a_break_from_the_sink_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("f{i}")), b"x").unwrap();
        }
        let plan = crate::walk::plan(&[dir.path().to_path_buf()], false, true);
        for (s, io) in ways() {
            let mut calls = 0;
            s.run_with("test", &plan.files, 2, io, &mut |_, _| {
                calls += 1;
                ControlFlow::Break(())
            });
            assert_eq!(calls, 1, "{s:?} kept calling a sink that said stop");
        }
    }

    #[test]
    fn all_lists_every_variant_once_with_distinct_names() {
        use clap::ValueEnum;
        // `value_variants` is derived from the enum itself, so a variant
        // missing from `ALL` fails here.
        assert_eq!(Strategy::value_variants(), Strategy::ALL);
        for s in Strategy::ALL {
            assert_eq!(Strategy::from_name(s.name()), Some(s));
            assert_eq!(Strategy::from_binary(s.binary()), Some(s));
            assert_eq!(s.binary(), format!("hash-{}", s.name()));
            let value = s.to_possible_value().unwrap();
            assert_eq!(value.get_name(), s.name(), "ValueEnum name");
        }
        assert_eq!(Strategy::from_name("hash-serial"), None);
    }

    #[test]
    fn largest_first_is_stable_for_ties() {
        let files = [job(1), job(5), job(1), job(9)];
        assert_eq!(largest_first(&files), [3, 1, 0, 2]);
    }
}
