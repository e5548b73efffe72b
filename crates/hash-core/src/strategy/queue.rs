//! The work queue and the result collector of the in-process thread pools
//! (`threads`, and `uring`'s ring threads), written once for both.
//!
//! The queue is an atomic cursor over the largest-first order: taking the
//! next file is one `fetch_add`, with no lock to contend on even for 20 k tiny
//! files, and a worker whose last file was small claims up to 16 at once
//! ([`Run`]). Results go over a channel to the calling thread, the single writer,
//! in batches: one wake-up of the writer per file cost more than hashing a
//! 4 KiB file on a two-core machine, where the writer competes for a core.
//!
//! Each worker thread owns its own [`mpsc::Sender`], so the channel closes
//! when the last worker ends, whether it returned or panicked (a bug; see
//! [`guard`]). The collector knows the end by counting results; should the
//! channel close first, it reports the files no batch brought back (the one
//! a panicking worker was on, and whatever else it had taken) as errors
//! instead of waiting for them forever.

use std::io;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use super::order::DiskOrder;
use super::{largest_first, Job, Outcome, Sink};
use crate::error::ErrorKind;
use crate::hasher::Reading;

/// Give the calling worker thread a descriptor table of its own, a copy of
/// the one it shared (`unshare(CLONE_FILES)`). Every `open` and `close` of a
/// shared table takes that table's lock, and while a table is shared each
/// read takes a reference on its file, so threads hashing small files on
/// all cores contended in the kernel: on 12,000 warm files of 3 KiB
/// (2-vCPU Intel Xeon guest, hyperfine, 60 runs) `hash-threads` took
/// 37.9 ms with a shared table, 35.7 ms with a table per thread, and
/// 37.0 → 33.9 ms of system time.
///
/// Sound only because a worker thread never lets a descriptor cross
/// tables. It uses the descriptors it opens itself (every file is opened,
/// read and closed on the thread that took it, or on the helper threads that
/// thread starts, which share its table) and those opened before it was
/// started (the walk's directories, which its copy holds under the same
/// numbers). Each copy costs a reference to every directory the walk kept
/// open (up to 4,096), taken at the copy and dropped when the thread ends.
/// The calling thread of a run is never a worker here, and the process's
/// table stays its own. Where `unshare` is refused (a sandbox), the table
/// stays shared: only slower.
///
/// The limit on open files now applies to each table apart. The readers
/// [`super::threads::max_readers`] allows and io_uring's slots, sized for one
/// shared table, err on the safe side; the wait for a descriptor in
/// [`crate::hasher::open`] (up to 10 s) can now wait for closes in other
/// tables that free nothing in this one. It is reached only when a worker's
/// own table is full, which the walk's budget (half the limit) leaves room
/// against.
pub(super) fn own_descriptor_table() {
    let _ = nix::sched::unshare(nix::sched::CloneFlags::CLONE_FILES);
}

/// Give the calling thread credentials of its own, equal to the ones it
/// shared: `capset` with the capabilities `capget` reports. The threads of a
/// process share one credentials object, and every `open` takes a
/// reference on it that the file's last `close` drops: two atomic updates
/// per file on one cache line, which threads hashing small files on two
/// cores passed back and forth. `capset` acts on the calling thread alone
/// and always installs a fresh copy, so afterwards the references land on
/// a line that stays in this core's cache. Nothing anyone can observe
/// changes: the same user, groups and capabilities. Worker processes get
/// their copies at `fork`.
///
/// On 12,000 warm files of 3 KiB (2-vCPU Intel Xeon guest, perf, 30 runs)
/// the kernel's `init_file` and `__fput` fell from 3.6 % of `hash-threads`'
/// samples to 0.5 %. Where `capget` or `capset` is refused (a seccomp
/// filter), the credentials stay shared: only slower.
pub(super) fn own_credentials() {
    if let Ok(caps) = rustix::thread::capabilities(None) {
        let _ = rustix::thread::set_capabilities(None, caps);
    }
}

/// Results a worker sends the writer at once.
pub(super) type Batch = Vec<(usize, Outcome)>;

/// The most files a worker claims at once ([`Queue::next_in`]).
const RUN: usize = 16;

/// A claim takes at most this share of the files not yet claimed, so that
/// towards the end claims shrink to one file and the workers finish
/// together.
const RUN_SHARE: usize = 64;

/// Files up to this size let their worker claim the next ones in a run.
const RUN_FILE_MAX: u64 = 64 * 1024;

/// The files a worker claimed at once and has not taken yet (positions
/// `at..end` of the queue's order), and whether the file it hashed last
/// was small enough to claim more than one at a time.
///
/// Each claim is an update of the one cursor all workers share, a cache
/// line that moves between cores: on 12,000 warm files of 3 KiB one claim
/// per file was a measurable part of the time. A run of small files keeps
/// the order of the plan and the writer's window; a large file, which may
/// hold its worker for seconds, makes the next claim a single file again,
/// so at most a run's remaining files wait behind one.
#[derive(Debug, Default)]
pub(super) struct Run {
    at: usize,
    end: usize,
    small: bool,
}

impl Run {
    /// Note the size of the file just hashed.
    pub(super) fn hashed(&mut self, size: u64) {
        self.small = size <= RUN_FILE_MAX;
    }

    /// Whether files claimed are still waiting here (a worker that leaves
    /// the pool hashes them first).
    pub(super) fn holds(&self) -> bool {
        self.at < self.end
    }
}

/// The files of a run, handed out largest first, and the flag that stops it.
pub(super) struct Queue<'a> {
    /// Every file of the run; results carry indices into it.
    pub(super) files: &'a [Job],
    order: Vec<usize>,
    cursor: AtomicUsize,
    /// Whether, and how, files are taken in the disk's order.
    disk: Option<&'a DiskOrder<'a>>,
    /// The run's shared state; its stop flag is set when the writer stops
    /// the run: workers stop between two files and in the middle of one, so
    /// a huge file is not finished for nobody.
    pub(super) reading: &'a Reading,
}

impl<'a> Queue<'a> {
    /// A queue of `files`, largest first.
    pub(super) fn new(files: &'a [Job], reading: &'a Reading) -> Queue<'a> {
        Queue {
            files,
            order: largest_first(files),
            cursor: AtomicUsize::new(0),
            disk: None,
            reading,
        }
    }

    /// The same queue, taking files in the disk's order while `disk` says so.
    pub(super) fn in_disk_order(self, disk: Option<&'a DiskOrder<'a>>) -> Queue<'a> {
        Queue { disk, ..self }
    }

    /// Whether files may be taken in the disk's order in this run.
    pub(super) fn sorts(&self) -> bool {
        self.disk.is_some()
    }

    /// The index of the next file to hash; `None` once every file is taken
    /// or the run was stopped.
    pub(super) fn next(&self) -> Option<usize> {
        if self.reading.stopped() {
            return None;
        }
        if let Some(disk) = self.disk {
            return disk.next(self.files, &self.order, &self.cursor, self.reading);
        }
        self.order
            .get(self.cursor.fetch_add(1, Ordering::Relaxed))
            .copied()
    }

    /// [`Queue::next`], for a worker that keeps `run`: the next file it
    /// claimed, else a new claim, of several files after a small one while
    /// many are left and the disk's order is not wanted.
    pub(super) fn next_in(&self, run: &mut Run) -> Option<usize> {
        if self.reading.stopped() {
            return None;
        }
        if run.holds() {
            run.at += 1;
            return self.order.get(run.at - 1).copied();
        }
        let len = self.order.len();
        let left = len.saturating_sub(self.cursor.load(Ordering::Relaxed));
        let n = (left / RUN_SHARE).min(RUN);
        if n <= 1 || !run.small || self.disk.is_some_and(DiskOrder::sorting) {
            return self.next();
        }
        let start = self.cursor.fetch_add(n, Ordering::Relaxed);
        let end = (start + n).min(len);
        if let Some(disk) = self.disk {
            disk.claimed(start, end);
        }
        if start >= end {
            // Others claimed the rest meanwhile; a sorted chunk may still
            // hold files.
            return self.next();
        }
        *run = Run {
            at: start + 1,
            end,
            small: true,
        };
        self.order.get(start).copied()
    }

    /// Whether some file has not been claimed yet.
    pub(super) fn has_more(&self) -> bool {
        self.cursor.load(Ordering::Relaxed) < self.order.len()
            || self.disk.is_some_and(DiskOrder::has_more)
    }
}

/// Feed the results arriving in batches on `rx` to `sink` until every file of
/// `queue` is reported, stopping the run when the sink says stop. If every
/// worker is gone first (the channel closed: one panicked), the files never
/// reported go to `sink` as errors.
pub(super) fn collect(queue: &Queue<'_>, rx: &mpsc::Receiver<Batch>, sink: &mut Sink<'_>) {
    let mut left = queue.files.len();
    let mut reported = vec![false; left];
    while left > 0 {
        let Ok(batch) = rx.recv() else {
            for i in (0..reported.len()).filter(|&i| !reported[i]) {
                if sink(i, Err(lost())).is_break() {
                    return;
                }
            }
            return;
        };
        left -= batch.len();
        for (i, outcome) in batch {
            reported[i] = true;
            if let ControlFlow::Break(()) = sink(i, outcome) {
                queue.reading.stop();
                return;
            }
        }
    }
}

/// Hash every file left in `queue` on the calling thread, straight into
/// `sink`: what a pool does when not one of its threads could start.
pub(super) fn hash_here(queue: &Queue<'_>, sink: &mut Sink<'_>) {
    let mut buf = crate::hasher::Buffer::small();
    while let Some(i) = queue.next() {
        let outcome = crate::hasher::hash(&queue.files[i].request(queue.reading, None), &mut buf);
        if sink(i, outcome).is_break() {
            queue.reading.stop();
        }
    }
}

/// The error of a file whose worker died before reporting it.
pub(super) fn lost() -> ErrorKind {
    io::Error::other("not hashed: a hashing thread panicked").into()
}

/// Run a worker's `body` with its sender and its batch of results not sent
/// yet, ending it quietly if it panics: the panic message is printed (by the
/// default hook), the results it finished are still sent, its sender is
/// dropped, and [`collect`] reports the files it held as errors. Uncaught,
/// the panic would come back out of `thread::scope` and end the whole run
/// after the fact.
pub(super) fn guard(tx: mpsc::Sender<Batch>, body: impl FnOnce(&mpsc::Sender<Batch>, &mut Batch)) {
    let mut batch = Batch::new();
    let body = std::panic::AssertUnwindSafe(|| body(&tx, &mut batch));
    let _ = std::panic::catch_unwind(body);
    if !batch.is_empty() {
        let _ = tx.send(batch);
    }
}

/// Test hook (`test-hooks` feature only, like the worker hooks of `procs`): a
/// hashing thread panics when it takes a file whose path ends with the value
/// of this variable, as a bug would.
#[cfg(any(test, feature = "test-hooks"))]
pub(super) const HOOK_PANIC: &str = "HASHRACE_TEST_THREAD_PANIC";

/// Panic if [`HOOK_PANIC`] names `job` (`test-hooks` feature only).
pub(super) fn test_hook(job: &Job) {
    #[cfg(any(test, feature = "test-hooks"))]
    {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStrExt;
        use std::sync::OnceLock;
        static SUFFIX: OnceLock<Option<OsString>> = OnceLock::new();
        let suffix = SUFFIX.get_or_init(|| std::env::var_os(HOOK_PANIC));
        if let Some(suffix) = suffix {
            let path = job.path.as_os_str().as_bytes();
            if path.ends_with(suffix.as_bytes()) {
                panic!("{HOOK_PANIC}: panicking on {}", job.path.display());
            }
        }
    }
    #[cfg(not(any(test, feature = "test-hooks")))]
    let _ = job;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hasher::FileDigest;
    use std::path::PathBuf;
    use std::thread;

    fn files(n: usize) -> Vec<Job> {
        (0..n)
            .map(|i| Job::new(PathBuf::from(format!("f{i}")), 0, false))
            .collect()
    }

    const DONE: FileDigest = FileDigest {
        digest: [7; 32],
        size: 1,
        held: None,
    };

    type Worker = fn(&Queue<'_>, &mpsc::Sender<Batch>, &mut Batch);

    /// Run `worker` on two guarded threads and collect what reaches the sink.
    fn run(n: usize, worker: Worker) -> Vec<(usize, String)> {
        let (files, reading) = (files(n), Reading::default());
        let queue = Queue::new(&files, &reading);
        let (tx, rx) = mpsc::channel();
        let mut got = Vec::new();
        thread::scope(|scope| {
            for _ in 0..2 {
                let (queue, tx) = (&queue, tx.clone());
                scope.spawn(move || guard(tx, |tx, batch| worker(queue, tx, batch)));
            }
            drop(tx);
            collect(&queue, &rx, &mut |i, outcome| {
                let text = match outcome {
                    Ok(d) => format!("ok {}", d.size),
                    Err(e) => e.to_string(),
                };
                got.push((i, text));
                ControlFlow::Continue(())
            });
        });
        got.sort();
        got
    }

    /// A worker's loop: take files with `take` (each hashed as 3 KiB, so
    /// runs may follow) until the queue is empty, and send a batch each
    /// `every` files. A worker's files must come in the plan's order: the
    /// queue's cursor only moves forward, a run included.
    fn take_all(
        queue: &Queue<'_>,
        tx: &mpsc::Sender<Batch>,
        batch: &mut Batch,
        every: usize,
        take: impl Fn(&Queue<'_>, &mut Run) -> Option<usize>,
    ) {
        let (mut run, mut last) = (Run::default(), None);
        while let Some(i) = take(queue, &mut run) {
            assert!(last < Some(i), "file {i} handed out after {last:?}");
            last = Some(i);
            run.hashed(3 * 1024);
            batch.push((i, Ok(DONE)));
            if batch.len() == every {
                tx.send(std::mem::take(batch)).unwrap();
            }
        }
    }

    #[test]
    fn every_file_is_reported_once() {
        let got = run(50, |queue, tx, batch| {
            take_all(queue, tx, batch, 3, |queue, _| queue.next());
        });
        let want: Vec<_> = (0..50).map(|i| (i, "ok 1".to_owned())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_panicking_worker_costs_its_files_not_the_run() {
        // Whichever thread takes file 2 panics before reporting it (the
        // message in the test output is expected), with files 0 and 1 in its
        // batch if it took them; the other thread hashes the rest, and the
        // collector must not wait for file 2.
        let got = run(5, |queue, _, batch| {
            while let Some(i) = queue.next() {
                assert_ne!(i, 2, "a worker bug (expected by this test)");
                batch.push((i, Ok(DONE)));
            }
        });
        let mut want: Vec<_> = (0..5).map(|i| (i, "ok 1".to_owned())).collect();
        want[2].1 = lost().to_string();
        assert_eq!(got, want);
    }

    #[test]
    fn a_queue_in_the_disks_order_has_more_until_its_chunk_is_empty() {
        // Taking the first file claims the whole chunk from the cursor;
        // the pool must still see files left (it adds readers only then).
        use super::super::order::{DiskOrder, ReadOrder};
        use crate::inflight::Storage;
        let (files, reading) = (files(5), Reading::default());
        let disk = DiskOrder::new(ReadOrder::Disk, Storage::Unknown, None).unwrap();
        let queue = Queue::new(&files, &reading).in_disk_order(Some(&disk));
        let mut got = vec![queue.next().unwrap()];
        assert!(queue.has_more());
        while let Some(i) = queue.next() {
            got.push(i);
        }
        assert!(!queue.has_more());
        got.sort();
        assert_eq!(got, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_stop_from_the_sink_empties_the_queue() {
        let files = files(3);
        let reading = Reading::default();
        let queue = Queue::new(&files, &reading);
        assert_eq!(queue.next(), Some(0));
        assert!(queue.has_more());
        reading.stop();
        assert_eq!(queue.next(), None);
    }

    #[test]
    fn runs_hand_out_every_file_once_in_plan_order_per_claim() {
        // Two workers claiming runs of small files: together they take
        // every file once, each run in the plan's order.
        let got = run(5_000, |queue, tx, batch| {
            take_all(queue, tx, batch, 7, |queue, run| queue.next_in(run));
        });
        let want: Vec<_> = (0..5_000).map(|i| (i, "ok 1".to_owned())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_run_follows_small_files_only_and_shrinks_towards_the_end() {
        let (files, reading) = (files(RUN_SHARE * RUN * 2), Reading::default());
        let queue = Queue::new(&files, &reading);
        let mut run = Run::default();
        // Nothing hashed yet: one file.
        assert_eq!(queue.next_in(&mut run), Some(0));
        assert!(!run.holds());
        // After a small file: a whole run, the next files of the plan.
        run.hashed(RUN_FILE_MAX);
        assert_eq!(queue.next_in(&mut run), Some(1));
        assert_eq!(queue.cursor.load(Ordering::Relaxed), 1 + RUN);
        for want in 2..=RUN {
            assert_eq!(queue.next_in(&mut run), Some(want));
        }
        assert!(!run.holds());
        // After a large one: one file again.
        run.hashed(RUN_FILE_MAX + 1);
        assert_eq!(queue.next_in(&mut run), Some(RUN + 1));
        assert!(!run.holds());
        // With fewer than RUN_SHARE * 2 files left, one at a time.
        let end = files.len() - RUN_SHARE * 2 + 1;
        queue.cursor.store(end, Ordering::Relaxed);
        run.hashed(1);
        assert_eq!(queue.next_in(&mut run), Some(end));
        assert!(!run.holds());
        // A stop drops what a run still holds.
        queue.cursor.store(0, Ordering::Relaxed);
        assert_eq!(queue.next_in(&mut run), Some(0));
        assert!(run.holds());
        reading.stop();
        assert_eq!(queue.next_in(&mut run), None);
    }

    #[test]
    fn runs_stop_while_the_disks_order_sorts() {
        use super::super::order::LOOK_EVERY;
        const LOOK_AFTER: usize = LOOK_EVERY + RUN + 1;
        use super::super::order::{DiskOrder, ReadOrder};
        use crate::inflight::Storage;
        let (files, reading) = (files(RUN_SHARE * RUN * 4), Reading::default());
        // Asked for: the order turns on at the first look, and from then
        // on files come one at a time from sorted chunks.
        let disk = DiskOrder::new(ReadOrder::Disk, Storage::Unknown, None).unwrap();
        let queue = Queue::new(&files, &reading).in_disk_order(Some(&disk));
        let mut run = Run::default();
        let mut got = Vec::new();
        let mut sorted = 0;
        loop {
            let sorting = disk.sorting();
            let Some(i) = queue.next_in(&mut run) else {
                break;
            };
            if sorting {
                assert!(!run.holds(), "a run claimed while the order sorts");
                sorted += 1;
            }
            run.hashed(1);
            got.push(i);
        }
        // It turned on within the first look and a run.
        assert!(sorted >= files.len() - LOOK_AFTER, "{sorted}");
        got.sort();
        assert_eq!(got, (0..files.len()).collect::<Vec<_>>());
    }
}
