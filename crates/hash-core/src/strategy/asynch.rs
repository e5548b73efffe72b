//! A tokio runtime with a bounded number of tasks in flight.
//!
//! This is the Rust counterpart of Python's `asyncio.to_thread` approach: an
//! async loop hands work to tokio's blocking pool, where files are opened,
//! read and hashed by ordinary blocking calls, and collects the results for
//! the single writer.
//!
//! The unit handed over is a *chunk* of files in largest-first order (up to
//! [`CHUNK_FILES`] files and [`CHUNK_BYTES`] bytes; a large file alone), not a
//! file: two thread hand-offs per 4 KiB file cost more than hashing it, and
//! made this strategy the slowest on trees of small files. `workers` chunks
//! run at once; like the threads strategy, a chunk whose next read would wait
//! for the disk (`RWF_NOWAIT` said so) has the loop admit one more, up to
//! [`MAX_READERS`] chunks, so cold small files get many reads in flight while
//! warm ones keep to `workers` threads.
//!
//! Why not `tokio::fs`? On Linux tokio has no asynchronous file I/O: every
//! `tokio::fs::File::read` is itself a `spawn_blocking` round trip, with the data
//! copied through an intermediate buffer. Hashing a 2 GiB file in 256 KiB reads
//! would cost 8,192 thread hand-offs and an extra copy of every byte, for no
//! gain: SHA-256 is CPU-bound, so the blocking pool has to do the work anyway.
//! Real asynchronous file I/O is io_uring: see [`super::uring`].

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::threads::{MAX_READERS, SMALL_FILE};
use super::{largest_first, Job, Outcome, Sink};
use crate::hasher::{hash, new_buffer, Buffer};

/// Most files in one chunk...
pub(super) const CHUNK_FILES: usize = 32;
/// ...and most bytes (a file at least this large is a chunk of its own).
pub(super) const CHUNK_BYTES: u64 = 1024 * 1024;

enum Msg {
    Done(Vec<(usize, Outcome)>),
    Blocked,
}

/// Job indices in largest-first order, cut into chunks.
pub(super) fn chunks(jobs: &[Job]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut bytes = 0u64;
    for i in largest_first(jobs) {
        let size = jobs[i].size;
        match out.last_mut() {
            Some(c) if c.len() < CHUNK_FILES && bytes + size < CHUNK_BYTES => {
                c.push(i);
                bytes += size;
            }
            _ => {
                out.push(vec![i]);
                bytes = size;
            }
        }
    }
    out
}

pub(super) fn run(jobs: &[Job], workers: usize, sink: &mut Sink<'_>) {
    // The async side only admits chunks and collects results, which the
    // calling thread can do alone: a current-thread runtime saves a scheduler
    // thread competing for the cores; the blocking pool does the hashing.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(MAX_READERS)
        .build()
        .expect("cannot start the tokio runtime");
    let jobs: Arc<[Job]> = jobs.into();
    let stop = Arc::new(AtomicBool::new(false));
    // Hashing workers' buffers; extra readers get small ones (see threads).
    let bufs: Arc<Mutex<Vec<Buffer>>> = Arc::new(Mutex::new(
        (0..workers).map(|_| Buffer::Huge(new_buffer())).collect(),
    ));
    let stopped = runtime.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let spawn = |chunk: Vec<usize>| {
            let (tx, jobs, stop, bufs) = (tx.clone(), jobs.clone(), stop.clone(), bufs.clone());
            tokio::task::spawn_blocking(move || {
                let mut buf = bufs.lock().unwrap().pop().unwrap_or_else(Buffer::small);
                let blocked = || {
                    let _ = tx.send(Msg::Blocked);
                };
                let mut done = Vec::with_capacity(chunk.len());
                for i in chunk {
                    let job = &jobs[i];
                    let on_block: Option<&dyn Fn()> = (job.size < SMALL_FILE).then_some(&blocked);
                    done.push((i, hash(&job.request(&stop, on_block), &mut buf)));
                }
                bufs.lock().unwrap().push(buf);
                // A closed channel means the writer stopped: nothing to do.
                let _ = tx.send(Msg::Done(done));
            });
        };
        let mut admit = chunks(&jobs).into_iter();
        let mut in_flight = 0usize;
        for chunk in admit.by_ref().take(workers) {
            spawn(chunk);
            in_flight += 1;
        }
        let mut pending = jobs.len();
        while pending > 0 {
            let Some(msg) = rx.recv().await else { break };
            let done = match msg {
                Msg::Blocked => {
                    if in_flight < MAX_READERS {
                        if let Some(next) = admit.next() {
                            spawn(next);
                            in_flight += 1;
                        }
                    }
                    continue;
                }
                Msg::Done(done) => done,
            };
            pending -= done.len();
            match admit.next() {
                Some(next) => spawn(next),
                None => in_flight -= 1,
            }
            for (i, outcome) in done {
                if let ControlFlow::Break(()) = sink(i, outcome) {
                    stop.store(true, Ordering::Relaxed);
                    return true;
                }
            }
        }
        false
    });
    if stopped {
        // Do not wait for files still being hashed: nobody will read them.
        runtime.shutdown_background();
    }
}
