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

use super::queue::{collect, guard, hash_here, test_hook, Batch, Queue};
use super::{
    clamp_workers, fewer_threads, no_helper, thread_builder, Def, Job, JobsArgs, Ran, Runner, Sink,
    Strategy,
};
use crate::hasher::{hash, new_buffer, Buffer, Reading};

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
        }))
    },
    helper: no_helper,
};

/// The threads strategy and its setting.
#[derive(Debug, Clone, Copy)]
pub struct Threads {
    /// Hashing threads (`-j`).
    pub workers: usize,
}

impl Runner for Threads {
    fn strategy(&self) -> Strategy {
        Strategy::Threads
    }

    fn workers(&self, files: usize) -> usize {
        clamp_workers(self.workers, files)
    }

    fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran {
        run(files, self.workers(files.len()), reading, sink);
        Ran::default()
    }
}

/// Most threads reading at once, hashing workers included: on the 2-vCPU
/// virtio-disk VMs this project is measured on, the cold-read rate of 4 KiB
/// files kept growing up to 32–128 reads in flight (about 10 k files/s at 1,
/// 24–38 k at 32, 43–56 k at 128).
pub const MAX_READERS: usize = 128;

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

fn run(files: &[Job], workers: usize, reading: &Reading, sink: &mut Sink<'_>) {
    let (tx, rx) = mpsc::channel();
    let queue = Queue::new(files, reading);
    let readers = AtomicUsize::new(workers);
    let max = max_readers(workers);
    thread::scope(|scope| {
        for started in 0..workers {
            let (queue, readers, tx) = (&queue, (&readers, max), tx.clone());
            let spawned = thread_builder().spawn_scoped(scope, move || {
                guard(tx, |tx, batch| {
                    work(queue, readers, tx, batch, scope, new_buffer());
                });
            });
            if let Err(e) = spawned {
                fewer_threads(started, workers, "hashing threads", &e);
                readers.0.fetch_sub(workers - started, Ordering::Relaxed);
                if started == 0 {
                    return hash_here(queue, sink);
                }
                break;
            }
        }
        // The workers hold the only senders now (see `queue`).
        drop(tx);
        collect(&queue, &rx, sink);
    });
}

/// Hash files from `queue` until it is empty; what is left in `batch` at the
/// end is sent by [`guard`].
fn work<'s, 'e>(
    queue: &'s Queue<'e>,
    (readers, max): (&'s AtomicUsize, usize),
    tx: &mpsc::Sender<Batch>,
    batch: &mut Batch,
    scope: &'s Scope<'s, 'e>,
    mut buf: Buffer,
) {
    let _hashing = queue.reading.hashing();
    let grow = || {
        // Claim a reader slot first, so racing threads cannot overshoot.
        let n = readers.fetch_add(1, Ordering::Relaxed);
        if n < max && queue.has_more() {
            let tx = tx.clone();
            let spawned = thread_builder().spawn_scoped(scope, move || {
                guard(tx, |tx, batch| {
                    work(queue, (readers, max), tx, batch, scope, Buffer::small());
                });
            });
            if spawned.is_ok() {
                return;
            }
        }
        readers.fetch_sub(1, Ordering::Relaxed);
    };
    batch.reserve(BATCH);
    while let Some(i) = queue.next() {
        let job = &queue.files[i];
        test_hook(job);
        let outcome = hash(&job.request(queue.reading, Some(&grow)), &mut buf);
        // The size fstat saw (the walk's is 0 unless it was asked for sizes).
        let large = outcome.as_ref().is_ok_and(|d| d.size >= LARGE_FILE);
        batch.push((i, outcome));
        if (batch.len() >= BATCH || large)
            && tx
                .send(std::mem::replace(batch, Vec::with_capacity(BATCH)))
                .is_err()
        {
            return;
        }
    }
}
