//! A tokio runtime with a bounded number of files in flight.
//!
//! This is the Rust counterpart of Python's `asyncio.to_thread` approach: an
//! async task hands each file to tokio's blocking pool, where it is opened, read
//! and hashed by ordinary blocking calls, and a semaphore bounds how many files
//! are in flight at once (`-j`). Results come back over a channel to the async
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

use tokio::sync::{mpsc, Semaphore};

use super::{largest_first, Job, Sink};
use crate::hasher::{hash_file, new_buffer, ReadBuf};

thread_local! {
    /// One read buffer per blocking-pool thread, reused across files.
    static BUF: RefCell<ReadBuf> = RefCell::new(new_buffer());
}

pub(super) fn run(jobs: &[Job], in_flight: usize, sink: &mut Sink<'_>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        // The async side only schedules; the blocking pool does the hashing.
        .worker_threads(1)
        .max_blocking_threads(in_flight)
        .build()
        .expect("cannot start the tokio runtime");
    let jobs: Arc<[Job]> = jobs.into();
    let stopped = runtime.block_on(async {
        let permits = Arc::new(Semaphore::new(in_flight));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let feeder = {
            let jobs = Arc::clone(&jobs);
            tokio::spawn(async move {
                for i in largest_first(&jobs) {
                    let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                        return;
                    };
                    let (tx, jobs) = (tx.clone(), Arc::clone(&jobs));
                    tokio::task::spawn_blocking(move || {
                        let job = &jobs[i];
                        let outcome =
                            BUF.with(|buf| hash_file(&job.path, job.follow, &mut buf.borrow_mut()));
                        drop(permit);
                        // A closed channel means the writer stopped: nothing to do.
                        let _ = tx.send((i, outcome));
                    });
                }
            })
        };
        while let Some((i, outcome)) = rx.recv().await {
            if let ControlFlow::Break(()) = sink(i, outcome) {
                feeder.abort();
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
