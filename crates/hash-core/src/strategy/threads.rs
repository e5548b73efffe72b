//! A pool of OS threads pulling files from one shared queue.
//!
//! The queue, and the batches of results the calling thread (the single
//! writer) collects, are in [`super::queue`], shared with `uring`.
//!
//! `workers` threads hash (each with its own huge-page read buffer). The pool
//! grows beyond them only while files wait for the disk: a read is first tried
//! with `RWF_NOWAIT`, and when a file's data turns out not to be cached
//! (the blocking read that follows waited for the disk) the thread starts
//! another reader, up to [`MAX_READERS`]. Cold small
//! files are bound by latency, and only many reads in flight reach the disk's
//! rate (cold 8 MiB files gain too); warm files never block, so on a warm tree the pool stays at
//! `workers` and does not fight over the cores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::{self, Scope};

use std::sync::Arc;

use super::order::DiskOrder;
use super::queue::{
    collect, guard, hash_here, own_credentials, own_descriptor_table, test_hook, Batch, Queue, Run,
};
use super::{
    clamp_workers, fewer_threads, no_helper, spawn_scoped, Def, Job, JobsArgs, Ran, Runner, Sink,
    Strategy,
};
use crate::hasher::{hash, new_buffer, Buffer, OnBlock, Reading};
use crate::inflight::{Climb, Policy, Shared};

/// `hash-threads`: `-j` threads.
pub(super) const DEF: Def = Def {
    name: "threads",
    binary: "hash-threads",
    how: "on a pool of threads",
    args: |cmd| {
        JobsArgs::augment(
            cmd,
            "hashing threads (more start while files wait for the disk)",
        )
    },
    runner: |m| {
        Ok(Box::new(Threads {
            workers: JobsArgs::workers(m)?,
            max_in_flight: JobsArgs::max_in_flight(m)?,
        }))
    },
    helper: no_helper,
};

/// The threads strategy and its setting.
#[derive(Debug, Clone, Copy)]
pub struct Threads {
    /// Hashing threads (`-j`).
    pub workers: usize,
    /// Threads reading at once, if the user fixed it (`--max-in-flight`).
    pub max_in_flight: Option<usize>,
}

impl Runner for Threads {
    fn strategy(&self) -> Strategy {
        Strategy::Threads
    }

    fn workers(&self, files: usize) -> usize {
        clamp_workers(self.workers, files)
    }

    /// Even at `-j 1`, the in-flight policy adds readers while files wait for the disk.
    fn reads_one_at_a_time(&self) -> bool {
        false
    }

    fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran {
        let workers = self.workers(files.len());
        let first = files.first().map(|j| j.path.as_path());
        let depth = Shared::for_run(
            self.max_in_flight,
            first,
            (workers, max_readers(workers)),
            Climb::FromHint,
        );
        let disk = DiskOrder::for_run(reading.policy().order, depth.as_ref());
        run(files, workers, reading, sink, depth.as_ref(), disk.as_ref());
        Ran {
            in_flight: Some(depth.as_ref().map_or_else(
                || format!("{workers} reading, more while reads wait for the disk"),
                Shared::describe,
            )),
            order: disk.and_then(|d| d.used().then(|| d.describe())),
            ..Ran::default()
        }
    }
}

/// Most threads reading at once, hashing workers included: on the 2-vCPU
/// virtio-disk VMs this project is measured on, the cold-read rate of 4 KiB
/// files kept growing up to 32–128 reads in flight (about 10 k files/s at 1,
/// 24–38 k at 32, 43–56 k at 128).
pub(crate) const MAX_READERS: usize = 128;

/// Readers a pool may have at once: [`MAX_READERS`], or fewer when the
/// open-file limit leaves fewer descriptors (each reader holds a file open;
/// some are kept for everything else), and never fewer than `workers`.
pub(super) fn max_readers(workers: usize) -> usize {
    let free = crate::limits::free_descriptors().unwrap_or(usize::MAX);
    MAX_READERS.min(free.saturating_sub(16)).max(workers)
}

/// Results a thread collects before waking the writer; a file at least
/// [`LARGE_FILE`] large is sent at once (progress should move).
const BATCH: usize = 256;

/// See [`BATCH`].
const LARGE_FILE: u64 = 1024 * 1024;

/// Run the pool: `workers` threads, or the depth's target when a depth
/// policy governs the readers (a network file system, or `--max-in-flight`);
/// see [`Pool`]. Files are taken in the disk's order while `disk` says so.
fn run(
    files: &[Job],
    workers: usize,
    reading: &Reading,
    sink: &mut Sink<'_>,
    depth: Option<&Shared>,
    disk: Option<&DiskOrder<'_>>,
) {
    let (tx, rx) = mpsc::channel();
    let queue = Queue::new(files, reading).in_disk_order(disk);
    let (start, max) = match depth {
        Some(d) if d.is_fixed() => (d.target(), d.target()),
        // A cap is no number of readers to start: the hashing workers start,
        // more only as reads wait.
        Some(d) if d.is_cap() => (workers.min(d.target()), max_readers(workers)),
        Some(d) => (d.target(), max_readers(workers)),
        None => (workers, max_readers(workers)),
    };
    let start = clamp_workers(start, files.len());
    let readers = AtomicUsize::new(start);
    let pool = Pool {
        queue: &queue,
        readers: &readers,
        max,
        workers,
        depth,
    };
    thread::scope(|scope| {
        for started in 0..start {
            let (pool, tx) = (&pool, tx.clone());
            let spawned = spawn_scoped(scope, move || {
                // The hashing workers, not the readers added for a waiting
                // disk: those share the table of the worker that added them
                // (a copy each would take a reference to every directory the
                // walk kept, for threads that wait on the disk, not the lock).
                own_descriptor_table();
                own_credentials();
                guard(tx, |tx, batch| {
                    work(pool, tx, batch, scope, new_buffer());
                });
            });
            if let Err(e) = spawned {
                fewer_threads(started, start, "hashing threads", &e);
                readers.fetch_sub(start - started, Ordering::Relaxed);
                if started == 0 {
                    return hash_here(&queue, sink);
                }
                break;
            }
        }
        // The workers hold the only senders now (see `queue`).
        drop(tx);
        collect(&queue, &rx, sink);
    });
}

/// What every thread of a pool shares: the queue, the count of threads
/// reading, their ceiling, the hashing workers (`-j`), and the depth policy
/// if one governs them.
struct Pool<'s, 'e> {
    queue: &'s Queue<'e>,
    readers: &'s AtomicUsize,
    max: usize,
    workers: usize,
    depth: Option<&'s Shared>,
}

impl Pool<'_, '_> {
    /// Whether this thread should leave the pool: the depth policy wants
    /// fewer readers than there are (one always stays). Claims the exit, so
    /// racing threads cannot undershoot.
    fn leave(&self) -> bool {
        self.depth.is_some_and(|d| d.leave(self.readers))
    }

    /// Whether the depth policy wants more readers than there are. Where
    /// it is a cap, only up to the hashing workers (beyond them, only
    /// waiting reads add readers).
    fn short(&self) -> bool {
        self.depth.is_some_and(|d| {
            let wanted = if d.is_cap() {
                d.target().min(self.workers)
            } else {
                d.target().min(self.max)
            };
            self.readers.load(Ordering::Relaxed) < wanted
        })
    }

    /// The most readers there may be now: the depth's target where it is a
    /// cap, else the pool's ceiling.
    fn ceiling(&self) -> usize {
        match self.depth {
            Some(d) if d.is_cap() => d.target().clamp(1, self.max),
            _ => self.max,
        }
    }
}

/// A worker's reads that wait: each tells the depth policy and may add a
/// reader; while the policy's seek test wants waits, a file that waits
/// first reads one page alone (see [`OnBlock::probe`]).
struct Waits<'p, F> {
    waited: F,
    depth: Option<&'p Shared>,
}

impl<F: Fn(std::time::Duration)> OnBlock for Waits<'_, F> {
    fn waited(&self, wait: std::time::Duration) {
        (self.waited)(wait)
    }

    fn probe(&self) -> bool {
        self.depth.is_some_and(Shared::seek_pending)
    }
}

/// Hash files from the pool's queue until it is empty (or the depth policy
/// wants fewer readers); what is left in `batch` at the end is sent by
/// [`guard`].
fn work<'s, 'e>(
    pool: &'s Pool<'s, 'e>,
    tx: &mpsc::Sender<Batch>,
    batch: &mut Batch,
    scope: &'s Scope<'s, 'e>,
    mut buf: Buffer,
) {
    let queue = pool.queue;
    let _hashing = queue.reading.hashing();
    let grow = || {
        // Claim a reader slot first, so racing threads cannot overshoot.
        let n = pool.readers.fetch_add(1, Ordering::Relaxed);
        if n < pool.ceiling() && queue.has_more() {
            let tx = tx.clone();
            let spawned = spawn_scoped(scope, move || {
                guard(tx, |tx, batch| {
                    work(pool, tx, batch, scope, Buffer::small());
                });
            });
            if spawned.is_ok() {
                return;
            }
        }
        pool.readers.fetch_sub(1, Ordering::Relaxed);
    };
    // A fixed depth is the user's: no reader is added when a read blocks,
    // but the wait is still counted (the disk's order looks at it).
    let fixed = pool.depth.is_some_and(Shared::is_fixed);
    let waited = |wait| {
        if let Some(depth) = pool.depth {
            depth.waited_among(wait, pool.readers.load(Ordering::Relaxed));
        }
        if !fixed {
            grow();
        }
    };
    let waits = Waits {
        waited,
        depth: pool.depth,
    };
    // Reads first try `RWF_NOWAIT` only where a wait changes something.
    let hook = (!fixed || queue.sorts()).then_some(&waits as &dyn OnBlock);
    batch.reserve(BATCH);
    let mut run = Run::default();
    while let Some(i) = queue.next_in(&mut run) {
        let job = &queue.files[i];
        test_hook(job);
        let request = job.request(queue.reading, hook);
        let outcome = hash(&request, &mut buf);
        // The size fstat saw (the walk's is 0 unless it was asked for sizes).
        let size = outcome.as_ref().map_or(0, |d| d.size);
        run.hashed(size);
        let large = size >= LARGE_FILE;
        if let Some(depth) = pool.depth {
            // Told at once: with dozens of readers, completions held back
            // a few at a time by each came in bursts, and the controller on
            // a 0.2 ms link settled at 2 or 4 where 16 ran 1.5x faster.
            depth.completed(1, outcome.as_ref().map_or(0, |d| d.size));
            if pool.short() {
                grow();
            }
        }
        batch.push((i, outcome));
        if (batch.len() >= BATCH || large)
            && tx
                .send(std::mem::replace(batch, Vec::with_capacity(BATCH)))
                .is_err()
        {
            return;
        }
        // Files claimed in a run are this thread's to hash.
        if !run.holds() && pool.leave() {
            return;
        }
    }
}
