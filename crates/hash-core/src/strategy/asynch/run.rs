//! The async strategy's run: a tokio runtime whose blocking pool hashes tasks of
//! files, and io_uring rings where the kernel allows them. Built only with the
//! `async` feature, so the binaries that do not run it link neither tokio nor
//! io-uring.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::{Async, IoMode};
use crate::hasher::{hash, new_buffer, Buffer, Reading};
use crate::inflight::{Climb, Hint, Policy, Shared, Storage};
use crate::limits::{thread_builder, THREAD_STACK};
use crate::strategy::order::sorted_plan;
use crate::strategy::queue::{lost, test_hook};
use crate::strategy::threads::{max_readers, MAX_READERS};
use crate::strategy::{
    clamp_workers, fewer_threads, largest_first, uring, Job, Outcome, Ran, Runner, Sink, Strategy,
};
impl Runner for Async {
    fn strategy(&self) -> Strategy {
        Strategy::Async
    }

    fn workers(&self, files: usize) -> usize {
        clamp_workers(self.workers, files)
    }

    /// Many opens and reads in flight, on rings or the blocking pool.
    fn reads_one_at_a_time(&self) -> bool {
        false
    }

    /// `--io pool` never touches io_uring; the others ask the kernel first.
    fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran {
        let workers = self.workers(files.len());
        let io = match self.io {
            IoMode::Pool => "pool".to_owned(),
            IoMode::Auto | IoMode::Uring => {
                // A ring keeps one file at least: fewer files in flight than
                // `-j` take fewer rings.
                let rings = workers.min(self.max_in_flight.unwrap_or(usize::MAX));
                match uring::available().map(|()| uring::slots(rings, self.max_in_flight)) {
                    Ok(slots) if slots > 0 => {
                        let mut ran = self.on_rings(files, (rings, slots), reading, sink);
                        ran.workers = (rings < workers).then_some(rings);
                        return ran;
                    }
                    Ok(_) => "pool (too few file descriptors left for io_uring)".into(),
                    Err(why) => format!("pool (io_uring unavailable: {why})"),
                }
            }
        };
        let max = self.max_in_flight.unwrap_or_else(|| max_readers(workers));
        let (order, described) =
            sorted_plan(reading.policy().order, files, largest_first(files), reading);
        // The user's depth, or a network file system's, measured, sets the
        // tasks running: reads there do not say when they wait. Elsewhere
        // (a local disk, whatever it says it is) waiting reads add tasks.
        let first = files.first().map(|f| f.path.as_path());
        let depth = Shared::for_run(self.max_in_flight, first, (workers, max), Climb::FromHint)
            .filter(|d| !d.is_cap())
            .map(Arc::new);
        run(files, &order, (workers, max), depth.clone(), reading, sink);
        let in_flight = match depth {
            Some(d) => format!("{} on the blocking pool", d.describe()),
            None => format!("up to {max} in flight on the blocking pool"),
        };
        Ran {
            io: Some(io),
            in_flight: Some(in_flight),
            order: described,
            workers: None,
        }
    }
}

impl Async {
    /// Hash `files` on `workers` io_uring rings of `slots` slots, at the
    /// depth the storage's policy keeps (on a network file system measured
    /// from the rings' full depth down; on a disk that says it spins, capped
    /// once its seek test says it seeks; elsewhere every slot).
    fn on_rings(
        &self,
        files: &[Job],
        (workers, slots): (usize, usize),
        reading: &Arc<Reading>,
        sink: &mut Sink<'_>,
    ) -> Ran {
        let most = workers * slots;
        // From the hint itself: a depth the user fixed says nothing of the
        // storage, and a FUSE open must not hold up the ring at any depth.
        let hint = files.first().map(|f| Hint::of(&f.path));
        let network = hint.as_ref().is_some_and(|h| h.storage == Storage::Network);
        let limits = (workers, most);
        let policy = Shared::for_hint(self.max_in_flight, hint.as_ref(), limits, Climb::FromMost);
        let depth = uring::Depth::new(policy.as_ref());
        let order = uring::run(files, (workers, slots), &depth, network, reading, sink);
        // A ring always keeps one file (see `uring::Depth`), whatever the
        // depth says.
        let plural = if workers == 1 { "" } else { "s" };
        let rings = match &policy {
            Some(p) if p.target() < workers => {
                format!("{workers} ring{plural} of {slots}, one file in each at least")
            }
            // The open-file limit left fewer slots than the user's depth.
            Some(p) if p.is_fixed() && most < p.target() => {
                format!(
                    "{workers} ring{plural} of {slots}: {most} at most, for want of descriptors"
                )
            }
            _ => format!("{workers} ring{plural} of {slots}"),
        };
        let in_flight = match (&policy, hint) {
            (Some(p), _) if network => format!(
                "{}; {rings}, every request handed to the kernel's workers",
                p.describe()
            ),
            // A ring's reads queue behind each other: the seek test was
            // given each wait divided by the reads served while it waited.
            (Some(p), _) if p.is_cap() => {
                format!("{}; {rings}; waits per read served", p.describe())
            }
            (Some(p), _) => format!("{}; {rings}", p.describe()),
            (None, Some(hint)) => {
                format!("{most} in flight: {rings} (every slot: {})", hint.source)
            }
            (None, None) => format!("{most} in flight: {rings} (no files)"),
        };
        Ran {
            io: Some("io_uring".into()),
            in_flight: Some(in_flight),
            order,
            workers: None,
        }
    }
}

/// A task returns after this many files...
const TASK_FILES: usize = 1024;
/// ...or this many where a measured depth sets the tasks running, which
/// changes only as tasks end: 16 files are a few round trips' wait on a
/// network file system, and still few hand-offs.
const POLICY_TASK_FILES: usize = 16;
/// ...or once it has hashed this many bytes, whichever comes first.
const TASK_BYTES: u64 = 4 * 1024 * 1024;

enum Msg {
    Done(Vec<(usize, Outcome)>),
    Blocked,
}

/// What every task shares.
struct Common {
    tx: mpsc::UnboundedSender<Msg>,
    files: Arc<[Job]>,
    order: Arc<[usize]>,
    /// The next place in `order`.
    cursor: AtomicUsize,
    reading: Arc<Reading>,
    /// Hashing workers' buffers; extra readers get small ones (see threads).
    bufs: Mutex<Vec<Buffer>>,
    /// The depth policy, where it sets the tasks running.
    depth: Option<Arc<Shared>>,
    /// Tasks running that have not chosen to leave (see [`task`]).
    running: AtomicUsize,
}

/// The runtime for up to `max` tasks in flight. The async side only admits
/// tasks and collects results, which the calling thread can do alone: a
/// current-thread runtime saves a scheduler thread competing for the cores;
/// the blocking pool does the hashing. tokio panics when its blocking pool
/// cannot start even one thread, so this fails instead if not one can start
/// now.
fn runtime(max: usize) -> std::io::Result<tokio::runtime::Runtime> {
    thread_builder().spawn(|| {})?.join().ok();
    tokio::runtime::Builder::new_current_thread()
        // A fixed depth above it has its tasks run, not queue.
        .max_blocking_threads(MAX_READERS.max(max))
        .thread_stack_size(THREAD_STACK)
        .on_thread_start(crate::strategy::queue::own_credentials)
        .build()
}

/// Hash `files` in the order `order` gives, on `workers` tasks, more (up to
/// `max`) while reads wait for the disk, or as many as `depth` says.
fn run(
    files: &[Job],
    order: &[usize],
    (workers, max): (usize, usize),
    depth: Option<Arc<Shared>>,
    reading: &Arc<Reading>,
    sink: &mut Sink<'_>,
) {
    let runtime = match runtime(max) {
        Ok(runtime) => runtime,
        Err(e) => {
            fewer_threads(0, workers, "tokio threads", &e);
            crate::strategy::serial::hash_in_order(files, reading, sink);
            return;
        }
    };
    let nfiles = files.len();
    let stopped = runtime.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let common = Arc::new(Common {
            tx,
            files: files.into(),
            order: order.into(),
            cursor: AtomicUsize::new(0),
            reading: reading.clone(),
            bufs: Mutex::new((0..workers).map(|_| new_buffer()).collect()),
            depth,
            running: AtomicUsize::new(0),
        });
        let more = || common.cursor.load(Ordering::Relaxed) < common.order.len();
        let spawn = || spawn_task(Arc::clone(&common));
        let mut in_flight = 0usize;
        let start = common.depth.as_ref().map_or(workers, |d| d.target());
        while in_flight < start.max(1) && in_flight < nfiles {
            spawn();
            in_flight += 1;
        }
        let mut pending = nfiles;
        let mut reported = vec![false; nfiles];
        while pending > 0 {
            let Some(msg) = rx.recv().await else { break };
            let done = match msg {
                Msg::Blocked => {
                    if common.depth.is_none() && in_flight < max && more() {
                        spawn();
                        in_flight += 1;
                    }
                    continue;
                }
                Msg::Done(done) => done,
            };
            pending -= done.len();
            in_flight -= 1;
            // The policy's depth, else as many as before; at least one while
            // files are left (nothing else would take them).
            let want = common.depth.as_ref().map_or(in_flight + 1, |d| d.target());
            while in_flight < want.max(1) && more() {
                spawn();
                in_flight += 1;
            }
            for (i, outcome) in done {
                reported[i] = true;
                if let ControlFlow::Break(()) = sink(i, outcome) {
                    reading.stop();
                    return true;
                }
            }
            if in_flight == 0 {
                break; // every task is done: files are pending only after a panic
            }
        }
        report_lost(&reported, sink).is_break()
    });
    if stopped {
        // Do not wait for files still being hashed: nobody will read them.
        runtime.shutdown_background();
    }
}

/// Start one task on the blocking pool, counted as running until it leaves.
fn spawn_task(common: Arc<Common>) {
    common.running.fetch_add(1, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || {
        let tx = common.tx.clone();
        let (mut done, mut left) = (Vec::new(), false);
        let body = || task(&common, &mut done, &mut left);
        // A task that panics (a bug; the default hook has printed it) still
        // reports what it finished, and that it ended: the loop holds a
        // sender itself, so it would wait forever for a task that says
        // nothing. The file it was on stays pending.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        if !left {
            common.running.fetch_sub(1, Ordering::Relaxed);
        }
        // A closed channel means the writer stopped: nothing to do.
        let _ = tx.send(Msg::Done(done));
    });
}

/// Report each file no task reported (its task panicked) as lost, so that
/// every file is either hashed or reported.
fn report_lost(reported: &[bool], sink: &mut Sink<'_>) -> ControlFlow<()> {
    for i in (0..reported.len()).filter(|&i| !reported[i]) {
        sink(i, Err(lost()))?;
    }
    ControlFlow::Continue(())
}

/// One task on the blocking pool: hash files from the shared cursor into
/// `done` until it has done enough (see the module doc), or until the depth
/// policy wants fewer tasks than are running: then it leaves, having taken
/// itself off the count, and sets `left` (before anything else can panic).
/// Without leaving, the tasks of a higher depth would finish their files
/// after a halving, and the controller would credit the lower depth with
/// their work.
fn task(common: &Common, done: &mut Vec<(usize, Outcome)>, left: &mut bool) {
    let Common {
        tx,
        files,
        order,
        cursor,
        reading,
        bufs,
        depth,
        running,
    } = common;
    let _hashing = reading.hashing();
    let mut buf = bufs.lock().unwrap().pop().unwrap_or_else(Buffer::small);
    let blocked = |_| {
        let _ = tx.send(Msg::Blocked);
    };
    // Under a policy, waiting reads add no task: no need to ask.
    let hook = depth
        .is_none()
        .then_some(&blocked as &dyn crate::hasher::OnBlock);
    let most = match depth {
        Some(d) if !d.is_fixed() => POLICY_TASK_FILES,
        _ => TASK_FILES,
    };
    let mut bytes = 0u64;
    while done.len() < most && bytes < TASK_BYTES {
        let Some(&i) = order.get(cursor.fetch_add(1, Ordering::Relaxed)) else {
            break;
        };
        let job = &files[i];
        test_hook(job);
        let outcome = hash(&job.request(reading, hook), &mut buf);
        let size = outcome.as_ref().map_or(0, |d| d.size);
        bytes += size;
        done.push((i, outcome));
        if let Some(depth) = depth {
            depth.completed(1, size);
            if depth.leave(running) {
                *left = true;
                break;
            }
        }
    }
    bufs.lock().unwrap().push(buf);
}
