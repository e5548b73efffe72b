//! A pool of OS threads pulling files from one shared queue.
//!
//! The queue is just an atomic cursor over the largest-first order: taking the
//! next file is one `fetch_add`, with no lock to contend on even for 20 k tiny
//! files. Results go over a channel to the calling thread, the single writer,
//! in batches: one wake-up of the writer per file cost more than hashing a
//! 4 KiB file on a two-core machine, where the writer competes for a core.
//!
//! `workers` threads hash (each with its own huge-page read buffer). The pool
//! grows beyond them only while files wait for the disk: a read is first tried
//! with `RWF_NOWAIT`, and when a small file's data turns out not to be cached
//! (the blocking read that follows waited for the disk) the thread starts
//! another reader, up to [`MAX_READERS`]. Cold small
//! files are bound by latency, and only many reads in flight reach the disk's
//! rate; warm files never block, so on a warm tree the pool stays at
//! `workers` and does not fight over the cores.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::{self, Scope};

use super::{largest_first, Job, Outcome, Sink};
use crate::hasher::{hash, new_buffer, Buffer, Hashing};

/// Most threads reading at once, hashing workers included: the cold-read
/// rate of small files on the reference VMs grows up to 32–128 reads in
/// flight (docs: shared/BENCHMARKING.md).
pub const MAX_READERS: usize = 128;

/// Files up to this size count as small: a reader blocked on a larger one is
/// streaming it with the kernel's readahead, and more readers would only
/// make the disk seek between files.
pub const SMALL_FILE: u64 = 1024 * 1024;

/// Results a thread collects before waking the writer; a file at least
/// [`SMALL_FILE`] large is sent at once (progress should move).
const BATCH: usize = 256;

/// Results a worker sends the writer at once.
pub(super) type Batch = Vec<(usize, Outcome)>;

/// Feed `expected` results arriving in batches on `rx` to `sink`, setting
/// `stop` when the sink says stop (the flag stops workers between two files
/// and in the middle of one, so a huge file is not finished for nobody).
///
/// The workers hold their senders in shared state that outlives them, so the
/// end is found by counting results, not by the channel closing.
pub(super) fn collect(
    rx: &mpsc::Receiver<Batch>,
    expected: usize,
    stop: &AtomicBool,
    sink: &mut Sink<'_>,
) {
    let mut left = expected;
    while left > 0 {
        let Ok(batch) = rx.recv() else { return };
        left -= batch.len();
        for (i, outcome) in batch {
            if let ControlFlow::Break(()) = sink(i, outcome) {
                stop.store(true, Ordering::Relaxed);
                return;
            }
        }
    }
}

struct Shared<'a> {
    files: &'a [Job],
    order: Vec<usize>,
    cursor: AtomicUsize,
    stop: AtomicBool,
    readers: AtomicUsize,
    tx: mpsc::Sender<Batch>,
}

pub(super) fn run(files: &[Job], workers: usize, sink: &mut Sink<'_>) {
    let (tx, rx) = mpsc::channel();
    let shared = Shared {
        files,
        order: largest_first(files),
        cursor: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        readers: AtomicUsize::new(workers),
        tx,
    };
    thread::scope(|scope| {
        for _ in 0..workers {
            let shared = &shared;
            scope.spawn(move || work(shared, scope, Buffer::Huge(new_buffer())));
        }
        collect(&rx, files.len(), &shared.stop, sink);
    });
}

fn work<'s, 'e>(shared: &'s Shared<'e>, scope: &'s Scope<'s, 'e>, mut buf: Buffer) {
    let _hashing = Hashing::start(1);
    let grow = || {
        // Claim a reader slot first, so racing threads cannot overshoot.
        let n = shared.readers.fetch_add(1, Ordering::Relaxed);
        let more_work = shared.cursor.load(Ordering::Relaxed) < shared.order.len();
        if n < MAX_READERS && more_work {
            let spawned = thread::Builder::new()
                .spawn_scoped(scope, move || work(shared, scope, Buffer::small()));
            if spawned.is_ok() {
                return;
            }
        }
        shared.readers.fetch_sub(1, Ordering::Relaxed);
    };
    let mut batch = Batch::with_capacity(BATCH);
    while !shared.stop.load(Ordering::Relaxed) {
        let Some(&i) = shared
            .order
            .get(shared.cursor.fetch_add(1, Ordering::Relaxed))
        else {
            break;
        };
        let job = &shared.files[i];
        let small = job.size < SMALL_FILE;
        let on_block: Option<&dyn Fn()> = if small { Some(&grow) } else { None };
        batch.push((i, hash(&job.request(&shared.stop, on_block), &mut buf)));
        if (batch.len() >= BATCH || !small) && shared.tx.send(std::mem::take(&mut batch)).is_err() {
            return;
        }
    }
    if !batch.is_empty() {
        let _ = shared.tx.send(batch);
    }
}
