//! The four ways of hashing a planned list of files, behind one signature.
//!
//! Every strategy is a `Runner`: a value that carries its own settings
//! (built once from the command line by its module's [`Def`]), takes a slice
//! of [`Job`]s and reports each file's `Outcome` to one `sink`, tagged with
//! the job's index. The program holds it inside an `Engine`, with the read
//! policy, and every mode runs that one value.
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
use std::sync::Arc;

use crate::error::ErrorKind;
use crate::hasher::{self, FileDigest, ReadPolicy, Reading};

pub use asynch::IoMode;

mod asynch;
pub mod order;
pub mod procs;
mod queue;
mod serial;
mod threads;
#[cfg(feature = "async")]
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
    pub(crate) dir: Option<DirFd>,
}

/// An open directory, shared by the files walked in it.
#[derive(Debug, Clone)]
pub(crate) struct DirFd(pub Arc<OwnedFd>);

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

    /// How to hash this job in the run that shares `reading`: see
    /// [`hasher::Request`].
    pub(crate) fn request<'a>(
        &'a self,
        reading: &'a Reading,
        on_block: Option<&'a dyn hasher::OnBlock>,
    ) -> hasher::Request<'a> {
        hasher::Request {
            path: &self.path,
            dir: self.dir.as_ref().map(|d| d.0.as_fd()),
            follow: self.follow,
            reading,
            on_block,
        }
    }

    /// The path below its root, as raw bytes.
    pub(crate) fn rel_path(&self) -> &[u8] {
        &crate::escape::path_bytes(&self.path)[self.rel..]
    }
}

/// What hashing one file gave.
pub(crate) type Outcome = Result<FileDigest, ErrorKind>;

/// Where results go: called on the calling thread, once per job, in any order.
/// Returning `Break` (the reader of our output went away) stops the run early.
pub(crate) type Sink<'a> = dyn FnMut(usize, Outcome) -> ControlFlow<()> + 'a;

/// One strategy with its own settings (its worker count, `hash-async`'s I/O
/// mode): one implementation per strategy module, built from the command
/// line by that module's [`Def`]. The rest of the program holds it inside an
/// [`Engine`] and never looks at which strategy it is.
pub(crate) trait Runner: std::fmt::Debug + Send + Sync {
    /// Which strategy this is.
    fn strategy(&self) -> Strategy;

    /// The workers a run over `files` files uses (at least one, never more
    /// than the files).
    fn workers(&self, files: usize) -> usize;

    /// Whether its files are read strictly one at a time, by one reader in
    /// this process, whatever the disk does: then a read that had to wait
    /// for the disk means the whole run waits for it (the progress line's
    /// time left counts on it). No default, so that a new strategy says.
    fn reads_one_at_a_time(&self) -> bool;

    /// Hash every job, reporting each outcome to `sink` (see the module doc).
    /// `reading` is the run's shared state: the read policy, the stop flag and
    /// the byte count.
    fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran;

    /// Start, before the walk, what the next [`Runner::run`] will most
    /// likely need (worker processes), since the walk keeps one core busy and
    /// leaves the others idle; the run ends what it does not need. Nothing,
    /// by default.
    fn start_early(&self, _read: ReadPolicy) {}
}

/// What a run says about itself beyond its results.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Ran {
    /// How the I/O was done, for `--stats`, by strategies that have a choice
    /// (`io_uring`, or `pool` and why).
    pub io: Option<String>,
    /// How many files were read at once and why, for `--stats`.
    pub in_flight: Option<String>,
    /// How many files were read in the disk's order, if any were.
    pub order: Option<String>,
    /// The workers that ran, where fewer than the strategy's own count did
    /// (a depth the user fixed below `-j`, workers that could not start):
    /// `--stats` and the JSON summary say this, not what was asked.
    pub workers: Option<usize>,
}

/// The value every mode runs on: a strategy with its settings, and the read
/// policy it is given. Built once from the command line (`crate::cli`);
/// hashing, check mode, `--files-from` and `--shard` all run this same value,
/// so no mode can fall back to defaults the user did not ask for.
#[derive(Debug)]
pub(crate) struct Engine {
    runner: Box<dyn Runner>,
    read: ReadPolicy,
}

impl Engine {
    /// An engine of `runner`, reading files by `read`.
    pub fn new(runner: Box<dyn Runner>, read: ReadPolicy) -> Engine {
        Engine { runner, read }
    }

    /// Which strategy it runs.
    pub fn strategy(&self) -> Strategy {
        self.runner.strategy()
    }

    /// The workers a run over `files` files uses.
    pub fn workers(&self, files: usize) -> usize {
        self.runner.workers(files)
    }

    /// See [`Runner::reads_one_at_a_time`].
    pub(crate) fn reads_one_at_a_time(&self) -> bool {
        self.runner.reads_one_at_a_time()
    }

    /// How it reads files.
    #[cfg(test)]
    pub(crate) fn read_policy(&self) -> ReadPolicy {
        self.read
    }

    /// Fresh shared state for one run (see [`Engine::run`]); the caller may
    /// keep a handle to watch the byte count (progress).
    pub fn reading(&self) -> Arc<Reading> {
        Arc::new(Reading::new(self.read))
    }

    /// Hash `files` into `sink` with the state made by [`Engine::reading`].
    pub fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran {
        self.runner.run(files, reading, sink)
    }

    /// The strategy with its settings, as a [`Runner`] that a decorator (the
    /// cache) can wrap.
    pub(crate) fn runner(&self) -> &dyn Runner {
        &*self.runner
    }

    /// Let the strategy start what its next run needs while the caller walks
    /// (see [`Runner::start_early`]).
    pub(crate) fn start_early(&self) {
        self.runner.start_early(self.read);
    }
}

/// A concurrency strategy: the name of one way of running, and the key to its
/// [`Def`].
///
/// A fifth strategy is a module with its `DEF` and its `Runner`, a variant
/// here with its entry in `ALL` and its arm in `Strategy::def` (the compiler
/// asks for it), and a four-line binary crate: see docs/architecture.md.
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

/// Everything the program knows about one strategy, kept in its module.
#[derive(Debug)]
pub struct Def {
    /// Short name (`threads`): `--stats`, JSON, results files.
    pub name: &'static str,
    /// The binary that runs it (`hash-threads`).
    pub binary: &'static str,
    /// How it hashes, for `--help`: "SHA-256 of every regular file under
    /// PATHs, HOW."
    pub how: &'static str,
    /// Adds the strategy's own options (`-j`, `--io`) to the command line.
    pub args: fn(clap::Command) -> clap::Command,
    /// Builds its [`Runner`] from the parsed command line.
    pub(crate) runner: fn(&clap::ArgMatches) -> Result<Box<dyn Runner>, clap::Error>,
    /// Runs this process as a helper the strategy started (`hash-procs`'
    /// worker processes) and returns its exit code; `None`: an ordinary run.
    pub helper: fn() -> Option<std::process::ExitCode>,
}

/// [`Def::args`] of a strategy without options of its own.
pub(crate) fn no_args(cmd: clap::Command) -> clap::Command {
    cmd
}

/// [`Def::helper`] of a strategy that starts no helper processes.
pub(crate) fn no_helper() -> Option<std::process::ExitCode> {
    None
}

impl Strategy {
    /// All four, in the order they are usually listed.
    pub const ALL: [Strategy; 4] = [
        Strategy::Serial,
        Strategy::Threads,
        Strategy::Procs,
        Strategy::Async,
    ];

    /// The module that implements it describes it.
    pub(crate) fn def(self) -> &'static Def {
        match self {
            Strategy::Serial => &serial::DEF,
            Strategy::Threads => &threads::DEF,
            Strategy::Procs => &procs::DEF,
            Strategy::Async => &asynch::DEF,
        }
    }

    /// The strategy's short name (`serial`, `threads`, ...).
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// The name of the binary that runs it (`hash-serial`, ...).
    pub fn binary(self) -> &'static str {
        self.def().binary
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
        self.def().how
    }

    /// Whether its command line has the option with clap id `id`: the
    /// options themselves answer, so no table can disagree with them.
    fn takes(self, id: &str) -> bool {
        (self.def().args)(clap::Command::new("probe"))
            .get_arguments()
            .any(|a| a.get_id() == id)
    }

    /// Whether it takes `-j/--jobs` (a number of workers).
    pub fn is_parallel(self) -> bool {
        self.takes(JobsArgs::ID)
    }

    /// Whether it has a choice of I/O (`--io`, see [`IoMode`]).
    pub fn has_io_option(self) -> bool {
        self.takes(asynch::IoArgs::ID)
    }
}

/// `-j/--jobs`, as in make and xargs, for the strategies with workers (in the
/// code the count is always called `workers`).
#[derive(Debug, clap::Args)]
pub(crate) struct JobsArgs {
    /// Number of workers [default: CPUs available].
    #[arg(help_heading = "Performance", short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub workers: Option<u32>,
    /// Files read at once, 1 to 1024 [default: measured].
    ///
    /// Files read at once, 1 to 1024, instead of what the storage measures (on a network
    /// file system the depth adapts to the measured throughput; on a local disk reads are
    /// added while files wait for it). hash-procs shares N among at most -j workers, each
    /// reading its share at once; io_uring shares N over its rings, at most N rings
    /// [default: measured]
    #[arg(help_heading = "Performance", hide_short_help = true, long = "max-in-flight", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_in_flight: Option<u32>,
}

impl JobsArgs {
    /// The clap id of `-j`.
    pub(crate) const ID: &'static str = "workers";

    /// Add `-j` to `cmd`, saying in its help what one worker is.
    pub(crate) fn augment(cmd: clap::Command, worker: &str) -> clap::Command {
        use clap::Args;
        let short = worker.split(" (").next().unwrap_or(worker);
        let help = format!("Number of {short} [default: CPUs available]");
        let long = format!("Number of {worker} [default: CPUs available]");
        JobsArgs::augment_args(cmd)
            .mut_arg(Self::ID, |a| a.help(help).long_help(long).display_order(0))
    }

    /// The workers asked for in `m`, or one per CPU.
    pub fn workers(m: &clap::ArgMatches) -> Result<usize, clap::Error> {
        use clap::FromArgMatches;
        let jobs = JobsArgs::from_arg_matches(m)?;
        Ok(jobs.workers.map_or_else(default_workers, |j| j as usize))
    }

    /// `--max-in-flight`, if given.
    pub(crate) fn max_in_flight(m: &clap::ArgMatches) -> Result<Option<usize>, clap::Error> {
        use clap::FromArgMatches;
        Ok(JobsArgs::from_arg_matches(m)?
            .max_in_flight
            .map(|n| n as usize))
    }
}

/// The number of CPUs this process may use.
pub(crate) fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub(crate) use crate::limits::spawn_scoped;

/// Say that only `started` of the `wanted` threads of `what` could start
/// (the system refused the next with `e`): the run goes on with those.
pub(crate) fn fewer_threads(started: usize, wanted: usize, what: &str, e: &std::io::Error) {
    let how = if started == 0 {
        "hashing on the main thread".to_owned()
    } else {
        format!("running with {started}")
    };
    let why = crate::error::io_reason(e);
    crate::show!("could start only {started} of {wanted} {what} ({why}); {how}");
}

/// `requested` workers for `files` files: never more than the files, at
/// least one.
pub(crate) fn clamp_workers(requested: usize, files: usize) -> usize {
    requested.clamp(1, files.max(1))
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

    /// The engine of a strategy, built as a command line would build it
    /// (`Procs` re-executes the binary, so it is tested through `hash-procs`).
    fn engine(s: Strategy, io: IoMode, workers: usize) -> Engine {
        use clap::ValueEnum;
        let (workers, io) = (workers.to_string(), io.to_possible_value().unwrap());
        let mut args = vec!["x"];
        if s.is_parallel() {
            args.extend(["-j", &workers]);
        }
        if s.has_io_option() {
            args.extend(["--io", io.get_name()]);
        }
        let m = (s.def().args)(clap::Command::new("x"))
            .try_get_matches_from(args)
            .unwrap();
        Engine::new((s.def().runner)(&m).unwrap(), ReadPolicy::default())
    }

    /// Run an in-process strategy and collect outcomes by job index.
    fn collect(s: Strategy, files: &[Job], workers: usize) -> Vec<Outcome> {
        collect_io(s, IoMode::default(), files, workers)
    }

    fn collect_io(s: Strategy, io: IoMode, files: &[Job], workers: usize) -> Vec<Outcome> {
        let mut got: Vec<Option<Outcome>> = (0..files.len()).map(|_| None).collect();
        let engine = engine(s, io, workers);
        engine.run(files, &engine.reading(), &mut |i, o| {
            assert!(got[i].is_none(), "job {i} reported twice");
            got[i] = Some(o);
            ControlFlow::Continue(())
        });
        got.into_iter()
            .map(|o| o.expect("every job is reported"))
            .collect()
    }

    /// Every in-process way of running: `hash-async` in both I/O modes where this
    /// build has it.
    fn ways() -> Vec<(Strategy, IoMode)> {
        #[allow(unused_mut)]
        let mut ways = vec![
            (Strategy::Serial, IoMode::Pool),
            (Strategy::Threads, IoMode::Pool),
        ];
        #[cfg(feature = "async")]
        ways.push((Strategy::Async, IoMode::Pool));
        #[cfg(feature = "async")]
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
        let plan = crate::walk::everything(&[dir.path().to_path_buf()], false, true);
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
        let plan = crate::walk::everything(&[dir.path().to_path_buf()], false, false);
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
        let plan = crate::walk::everything(&[dir.path().to_path_buf()], false, true);
        for (s, io) in ways() {
            let mut calls = 0;
            let engine = engine(s, io, 2);
            engine.run(&plan.files, &engine.reading(), &mut |_, _| {
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
    fn each_strategy_builds_a_runner_of_itself_with_its_own_options() {
        // Written out, not read from the definitions under test.
        let options = [
            (Strategy::Serial, false, false),
            (Strategy::Threads, true, false),
            (Strategy::Procs, true, false),
            (Strategy::Async, true, true),
        ];
        for (s, jobs, io) in options {
            assert_eq!(s.is_parallel(), jobs, "{s:?} -j");
            assert_eq!(s.has_io_option(), io, "{s:?} --io");
            let cmd = (s.def().args)(clap::Command::new("x"));
            let args: &[&str] = if jobs { &["x", "-j", "5"] } else { &["x"] };
            let m = cmd.try_get_matches_from(args).unwrap();
            if cfg!(not(feature = "async")) && s == Strategy::Async {
                let err = (s.def().runner)(&m).unwrap_err();
                assert!(err.to_string().contains("feature `async`"), "{err}");
                continue;
            }
            let runner = (s.def().runner)(&m).unwrap();
            assert_eq!(runner.strategy(), s);
            let workers = if jobs { 5 } else { 1 };
            assert_eq!(runner.workers(100), workers, "{s:?}");
            assert_eq!(
                runner.workers(2),
                workers.min(2),
                "{s:?}: capped by the files"
            );
        }
    }

    #[test]
    fn largest_first_is_stable_for_ties() {
        let files = [job(1), job(5), job(1), job(9)];
        assert_eq!(largest_first(&files), [3, 1, 0, 2]);
    }
}
