//! A pool of worker processes, fed file paths over pipes.
//!
//! The parent re-executes its own binary as workers, marked by the
//! environment variable `WORKER_ENV` (see `is_worker`; no argument can
//! turn a run into a worker). Each worker reads requests on stdin — a job id,
//! a follow flag and the raw bytes of a path, length-prefixed so any name
//! survives — and answers on stdout with the id and either the digest and
//! size or the error.
//!
//! Scheduling is dynamic: each worker holds `DEPTH` files per reader it
//! runs (one being read, one queued so it never waits for the parent) — or, once its last
//! answer showed a small file (the walk does not `stat`, so sizes are learnt
//! from answers), a batch of up to `MAX_BATCH` — and gets more, in planned
//! order, as it answers. A large file found in a batch goes back to the
//! parent unread (`RETURN_MIN`) and out again on its own. Workers answer
//! small files in groups of half a batch (by count, or by the bytes the
//! parent batched them by when it knew their sizes), so the parent refills a worker's
//! queue before it runs dry, at one pipe round trip per group rather than per
//! file. While its reads wait for a local disk, a worker adds reader threads
//! that share the files it holds, up to its share of the threads
//! strategy's ceiling (`readers_each`). On a network file system, and under `--max-in-flight`, the depth
//! policy of `crate::inflight` sets the files in flight instead, as it
//! does for the other strategies: they are shared out among the workers,
//! and each worker reads its files at once, on threads of its own (there a
//! file waits for round trips, not for a core). The calling thread alone owns the queue and the workers and
//! waits on all their pipes at once (`poll`), so there is no shared mutable
//! state and no thread besides it in the parent's hand-over.
//!
//! Failure handling, the point of using processes at all:
//! - A worker that crashes or is killed closes its stdout. Its unfinished files
//!   go back to the front of the queue, a replacement worker is started, and a
//!   notice goes to stderr. Those files become suspects, each retried alone
//!   on a worker; a suspect that kills a worker again while alone is reported
//!   as an error instead (it is what kills workers), so a poisonous file
//!   cannot loop forever, innocent files in its batch are not blamed, and the
//!   exit status says so.
//! - Workers never outlive the parent: each asks the kernel for `SIGKILL` when
//!   its parent dies (`PR_SET_PDEATHSIG`), and exits at end of input anyway.
//!   Ctrl-C reaches the whole process group.
//!
//! The first workers start before the walk, on the core it leaves idle
//! (`Procs::start_early`); the run takes those started as it would start
//! them and kills the others.
//!
//! The code is in three parts: `wire`, the byte format of requests and
//! answers on the pipes; `worker`, the loop a worker process runs; and
//! `pool`, the parent's side that starts, feeds and replaces workers. This
//! file holds what they share: the tunables and how a worker knows it is one.

mod pool;
mod wire;
mod worker;

use std::sync::{Arc, Mutex};

pub(crate) use worker::worker_main;

use super::order::sorted_plan;
use super::{clamp_workers, largest_first, Def, Job, JobsArgs, Ran, Runner, Sink, Strategy};
use crate::hasher::{ReadPolicy, Reading};
use crate::inflight::{Climb, Hint, Policy, Shared};
use crate::strategy::threads::{max_readers, MAX_READERS};

/// `hash-procs`: `-j` worker processes, which are this same binary started
/// again (see [`is_worker`]).
pub(super) const DEF: Def = Def {
    name: "procs",
    binary: "hash-procs",
    how: "on a pool of worker processes",
    args: |cmd| JobsArgs::augment(cmd, "worker processes"),
    runner: |m| {
        Ok(Box::new(Procs {
            workers: JobsArgs::workers(m)?,
            max_in_flight: JobsArgs::max_in_flight(m)?,
            early: Mutex::default(),
        }))
    },
    helper: || is_worker().then(worker_main),
};

/// The procs strategy and its setting.
#[derive(Debug)]
pub struct Procs {
    /// Worker processes (`-j`).
    pub workers: usize,
    /// Files read at once, if the user fixed it (`--max-in-flight`): shared
    /// out among the workers (at most `-j` of them), each reading its files
    /// on threads of its own.
    pub max_in_flight: Option<usize>,
    /// The workers [`Runner::start_early`] started, until a run takes them
    /// (or, if no run comes, until this is dropped).
    early: Mutex<Option<pool::Early>>,
}

impl Runner for Procs {
    fn strategy(&self) -> Strategy {
        Strategy::Procs
    }

    fn workers(&self, files: usize) -> usize {
        clamp_workers(self.workers, files)
    }

    /// The reading happens in the workers, each with readers of its own.
    fn reads_one_at_a_time(&self) -> bool {
        false
    }

    /// Start up to one worker per CPU (at most `-j`) while the walk runs: a
    /// worker takes ~1.5 ms to start (the 2-vCPU Intel Xeon guest: `exec`,
    /// the dynamic loader, and `cpuid`s that each trap to the hypervisor,
    /// ~7 µs apiece there), which after the walk is time no file is hashed,
    /// while during it the second core is idle. They are started as a local
    /// disk's workers sharing the CPUs among `-j`; the run takes those it
    /// would have started itself, and kills the rest (with fewer files than
    /// workers each worker's share of the CPUs differs; a network
    /// filesystem wants small buffers). None is started with
    /// `--max-in-flight`, or when the descriptors left are few: each holds
    /// two in this process while the walk opens directories. A run that
    /// never comes (every file answered by `--cache`) leaves them idle until
    /// this value is dropped.
    fn start_early(&self, read: ReadPolicy) {
        const FREE_FOR_EARLY: usize = 256;
        let cpus = super::default_workers();
        let n = self.workers.min(cpus);
        let free = crate::limits::free_descriptors().unwrap_or(usize::MAX);
        if self.max_in_flight.is_some() || free < FREE_FOR_EARLY + 2 * n {
            return;
        }
        let Ok(exe) = pool::own_exe() else { return };
        let how = pool::Started::local(read, self.workers);
        // A worker that cannot start now is retried, and reported, by the run.
        let children = (0..n).map_while(|_| pool::start(&exe, how).ok()).collect();
        *self.early.lock().unwrap_or_else(|e| e.into_inner()) = Some(pool::Early { how, children });
    }

    fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran {
        let early = self.early.lock().unwrap_or_else(|e| e.into_inner()).take();
        let first = files.first().map(|j| j.path.as_path());
        let workers = self.workers(files.len());
        let planned = largest_first(files);
        let (order, described) = sorted_plan(reading.policy().order, files, planned, reading);
        // A fixed depth asks nothing of the storage (on a network file
        // system `statfs` is a round trip). A disk that says it spins gets
        // no policy here: its workers add readers as their reads wait, as on
        // any local disk.
        let hint = self.max_in_flight.is_none().then(|| first.map(Hint::of));
        let limits = (workers, max_readers(workers));
        let policy = Shared::for_hint(
            self.max_in_flight,
            hint.flatten().as_ref(),
            limits,
            Climb::FromHint,
        )
        .filter(|p| !p.is_cap());
        let Some(policy) = policy else {
            // On a local disk each worker reads one file at a time, and
            // adds readers of its own while files wait for the disk.
            let how = pool::Started::local(reading.policy(), workers);
            let peak = pool::run(files, &order, (workers, how), early, None, reading, sink);
            return Ran {
                in_flight: Some(format!(
                    "{}, each adding readers while files wait for the \
                     disk, up to {}: {} at most",
                    crate::units::count(workers as u64, "worker"),
                    how.readers_each,
                    peak.readers
                )),
                order: described,
                ..Ran::default()
            };
        };
        // A network file system, or `--max-in-flight`: the policy's depth,
        // shared out among the workers, each reading its files on threads
        // of its own into small buffers (network reads are far slower than
        // a copy). Processes, not files, cost the memory: 16 workers
        // reading one file each held 61 MiB summed over the tree on sshfs.
        let workers = workers.min(policy.target()).max(1);
        let most = if policy.is_fixed() {
            policy.target()
        } else {
            limits.1.max(policy.target())
        };
        let how = pool::Started {
            small_buffers: true,
            files_each: most.div_ceil(workers).max(1),
            readers_each: 1,
            ..pool::Started::local(reading.policy(), workers)
        };
        let ran = pool::run(
            files,
            &order,
            (workers, how),
            early,
            Some(&policy),
            reading,
            sink,
        );
        let ran = ran.workers;
        let mut in_flight = policy.describe();
        if ran < workers {
            in_flight = format!("{in_flight}; {ran} worker processes ran, not {workers}");
        }
        Ran {
            in_flight: Some(in_flight),
            order: described,
            // Not one started: this process hashed them, one at a time.
            workers: Some(ran.max(1)),
            ..Ran::default()
        }
    }
}

/// The CPUs each of `workers` workers may count as its own (see
/// [`pool::Started::cores_each`]).
fn cores_each(workers: usize) -> usize {
    (super::default_workers() / workers.max(1)).max(1)
}

/// The most readers each of `workers` workers on a local disk may run (the
/// threads strategy's ceiling, shared out): readers are threads, each with a
/// small buffer, so they cost little memory. (Before, the pool started more
/// worker processes instead, one file each: each cost its own copy of the
/// binary's pages and a buffer, ~3.6 MiB, so a run within 64 MiB stopped at
/// 14, and each took ~1.5 ms of CPU to start.)
fn readers_each(workers: usize) -> usize {
    (MAX_READERS / workers.max(1)).max(1)
}

/// Set, to the parent's pid, in the environment of the workers a `hash-procs`
/// starts.
pub(crate) const WORKER_ENV: &str = "HASHRACE_PROCS_WORKER";

/// Files a worker holds per reader it runs when there is work: one being
/// read, one queued, so no reader waits for the parent between two files.
const DEPTH: usize = 2;

/// Small files are handed out in batches, so that 20 k files of 4 KiB do not
/// cost 20 k round trips: a worker may hold up to this many files...
///
/// (512, not 256, and so answers per 256 files, not 128: on 12,000 warm
/// files of 3 KiB on the 2-vCPU Intel Xeon guest, 35.6 → 34.3 ms and
/// 37.4 → 34.0 ms in two hyperfine calls of 50 runs, medians; 20,000 of
/// 4 KiB warm 63.4 → 63.1 ms, cold 0.28–0.32 s either way.)
const MAX_BATCH: usize = 512;

/// ...as long as what it holds stays under this many bytes. Large files (which
/// come first) therefore go two at a time, keeping the tail balanced.
const BATCH_BYTES: u64 = 4 * 1024 * 1024;

/// A file lost with [`MAX_ATTEMPTS`] dying workers, the last time hashed alone,
/// is reported instead of retried.
const MAX_ATTEMPTS: u8 = 2;

/// A worker hands back unread a file at least this large whose size the
/// parent did not know, when more files wait behind it in the worker: the
/// walk does not `stat` (a `stat` per file cost the parent 6–8 % of a warm
/// run of 12,000 small files), so a batch sent on the evidence of small
/// answers may hold a tree's largest files, which one worker would then hash
/// alone while the others idle (`mixed`: three models right after the config
/// files beside them). Sent again with its size known, such a file is batched
/// by bytes and never handed back.
const RETURN_MIN: u64 = BATCH_BYTES / 4;

/// Workers answer files at least this large at once, smaller ones per batch.
const ANSWER_AT_ONCE: u64 = 64 * 1024;

/// Whether [`WORKER_ENV`] names this process's parent (0 when the parent is
/// outside our pid namespace: no match then).
fn parent_is_named() -> bool {
    let ppid = rustix::process::Pid::as_raw(rustix::process::getppid());
    std::env::var_os(WORKER_ENV).is_some_and(|p| p.to_str() == Some(&ppid.to_string()))
}

/// Whether this process is a worker: [`WORKER_ENV`] names our parent, and the
/// parent runs the very same executable as we do (same inode behind
/// `/proc/PID/exe`). An environment variable left over in a shell, or a
/// `hash-procs` started by anything but `hash-procs`, is therefore an
/// ordinary run.
pub(crate) fn is_worker() -> bool {
    use std::os::unix::fs::MetadataExt;
    if !parent_is_named() {
        return false;
    }
    let ppid = rustix::process::Pid::as_raw(rustix::process::getppid());
    let inode = |p: &str| std::fs::metadata(p).map(|m| (m.dev(), m.ino()));
    match (inode("/proc/self/exe"), inode(&format!("/proc/{ppid}/exe"))) {
        (Ok(me), Ok(parent)) => me == parent,
        _ => false,
    }
}
