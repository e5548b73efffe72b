//! A tokio runtime with a bounded number of files in flight.
//!
//! This is the Rust counterpart of Python's `asyncio.to_thread` approach: an
//! async task hands each file to tokio's blocking pool, where it is opened, read
//! and hashed by ordinary blocking calls. `-j` sets the blocking threads, and the
//! files in flight are bounded to a small multiple of that: the collecting loop
//! admits one new file per completed one, the equivalent of a semaphore. Results come back over a channel to the async
//! task that feeds the single writer.
//!
//! Why not `tokio::fs`? On Linux tokio has no asynchronous file I/O: every
//! `tokio::fs::File::read` is itself a `spawn_blocking` round trip, with the data
//! copied through an intermediate buffer. Hashing a 2 GiB file in 256 KiB reads
//! would cost 8,192 thread hand-offs and an extra copy of every byte, for no
//! gain: SHA-256 is CPU-bound, so the blocking pool has to do the work anyway.
//! One hand-off per *file* keeps the async model (bounded concurrency, tasks,
//! channels) where it pays and does the bulk work where it is cheapest.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::{largest_first, Job, Sink};
use crate::hasher::{hash_file, new_buffer, ReadBuf};

thread_local! {
    /// One read buffer per blocking-pool thread, reused across files.
    static BUF: RefCell<ReadBuf> = RefCell::new(new_buffer());
}

/// Files admitted per blocking thread: a few more than the threads can work on
/// at once, so a thread that finishes a file finds the next one already queued
/// in the blocking pool instead of sleeping until the scheduler admits one.
const QUEUED_PER_THREAD: usize = 4;

pub(super) fn run(jobs: &[Job], workers: usize, sink: &mut Sink<'_>) {
    let in_flight = workers * QUEUED_PER_THREAD;
    // The async side only admits files and collects results, which the calling
    // thread can do alone: a current-thread runtime saves a scheduler thread
    // competing for the cores; the blocking pool does the hashing.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(workers)
        .build()
        .expect("cannot start the tokio runtime");
    let jobs: Arc<[Job]> = jobs.into();
    let stopped = runtime.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let spawn = |i: usize| {
            let (tx, jobs) = (tx.clone(), Arc::clone(&jobs));
            tokio::task::spawn_blocking(move || {
                let job = &jobs[i];
                let outcome =
                    BUF.with(|buf| hash_file(&job.path, job.follow, &mut buf.borrow_mut()));
                // A closed channel means the writer stopped: nothing to do.
                let _ = tx.send((i, outcome));
            });
        };
        // The bound on files in flight: admit `in_flight` files, then one more
        // for each that completes (a semaphore held by the loop itself).
        let order = largest_first(&jobs);
        let mut admit = order.into_iter();
        admit.by_ref().take(in_flight).for_each(spawn);
        let mut pending = jobs.len();
        while pending > 0 {
            let Some((i, outcome)) = rx.recv().await else {
                break;
            };
            pending -= 1;
            if let Some(next) = admit.next() {
                spawn(next);
            }
            if let ControlFlow::Break(()) = sink(i, outcome) {
                return true;
            }
        }
        false
    });
    if stopped {
        // Do not wait for files still being hashed: nobody will read them.
        runtime.shutdown_background();
    }
}
