//! The parent's side: start workers, feed them, collect answers, replace
//! the ones that die.
//!
//! The calling thread alone owns the queue and the workers; one reader thread
//! per worker turns its answers into [`Event`]s on a channel. Scheduling and
//! failure handling are described in the [module doc](super).

use std::collections::VecDeque;
use std::io::{BufReader, BufWriter, Write};
use std::ops::ControlFlow;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;

use super::wire::STREAMED_ID;
use super::wire::{read_message, write_request, Message};
use super::{
    ANSWER_AT_ONCE, BATCH_BYTES, DEPTH, MAX_ATTEMPTS, MAX_BATCH, WORKER_CORES_ENV,
    WORKER_DATA_PATH_ENV, WORKER_ENV, WORKER_SMALL_BUFFER_ENV, WORKER_STAMPS_ENV,
};
use crate::error::ErrorKind;
use crate::hasher::Reading;
use crate::strategy::{Job, Outcome, Sink};
use std::sync::Arc;

enum Event {
    /// Answers read from one worker in one go (a batch of small files costs
    /// one wake-up of the parent, not one per file).
    Done {
        worker: usize,
        answers: Vec<(u32, Outcome)>,
        /// Files handed back unread, with their sizes.
        returned: Vec<(u32, u64)>,
    },
    Gone {
        worker: usize,
    },
    /// A worker's file had to wait for the disk.
    Waited,
}

struct Worker {
    child: Child,
    /// `None` once we have told the worker there is no more work.
    stdin: Option<BufWriter<ChildStdin>>,
    /// Ids sent and not yet answered, oldest first.
    in_flight: VecDeque<u32>,
    /// Planned bytes of `in_flight`.
    in_flight_bytes: u64,
    /// Whether its last answer was a small file: the walk does not `stat`
    /// files, so batches grow on evidence that files here are small.
    small: bool,
}

struct Pool<'a, 's> {
    exe: PathBuf,
    /// How the next worker is started (its data path, share of the CPUs,
    /// buffer and stamps).
    how: Started,
    /// The run's shared state: bytes the workers say they streamed are
    /// counted in it, for the progress line.
    reading: Arc<Reading>,
    /// The most workers the pool may grow to while files wait for the disk.
    grow_to: usize,
    /// The most workers that were alive at once.
    peak: usize,
    /// Files answered since `Waited` messages last called for a worker
    /// (see [`worth_growing`])...
    answered: usize,
    /// ...and the `Waited` messages heard since.
    waits: usize,
    files: &'a [Job],
    sink: &'a mut Sink<'s>,
    queue: VecDeque<u32>,
    attempts: Vec<u8>,
    workers: Vec<Option<Worker>>,
    spawns_left: usize,
    remaining: usize,
    events: mpsc::Sender<Event>,
    /// Whether the plan knows file sizes (then batches are bounded by bytes
    /// from the start, largest files first).
    sized: bool,
    /// Sizes as far as known: from the plan, or from a worker that handed
    /// the file back (see [`super::RETURN_MIN`]).
    sizes: Vec<Option<u64>>,
}

/// Hash `files` on `workers` worker processes, more (up to `grow_to`) while
/// files wait for the disk, handing them out in `order`; the most workers
/// that ran at once. `small_buffers`: every worker reads into a small
/// buffer (see [`WORKER_SMALL_BUFFER_ENV`]), not only those added for a
/// waiting disk. The first workers are taken from `early` where they were
/// started as these would be; the rest of `early` is ended.
pub(super) fn run(
    files: &[Job],
    order: &[usize],
    (workers, grow_to): (usize, usize),
    (small_buffers, early): (bool, Option<Early>),
    reading: &Arc<Reading>,
    sink: &mut Sink<'_>,
) -> usize {
    if files.is_empty() {
        return 0;
    }
    let exe = match own_exe() {
        Ok(exe) => exe,
        Err(e) => {
            let why = format!("cannot find own executable to start workers: {e}");
            for i in 0..files.len() {
                if sink(i, Err(ErrorKind::WorkerDied(why.clone()))).is_break() {
                    return 0;
                }
            }
            return 0;
        }
    };
    assert!(files.len() < STREAMED_ID as usize, "2^32 files or more");
    let (events, rx) = mpsc::channel();
    let mut pool = Pool {
        exe,
        how: Started {
            data_path: reading.policy().path,
            cores_each: super::cores_each(workers),
            small_buffers,
            stamps: reading.policy().stamps,
        },
        reading: Arc::clone(reading),
        files,
        sink,
        queue: order.iter().map(|&i| i as u32).collect(),
        attempts: vec![0; files.len()],
        workers: Vec::new(),
        // Enough to replace every worker a few times; a binary whose workers
        // die on start-up must not respawn forever.
        spawns_left: workers.max(grow_to) * 4 + 4,
        grow_to: grow_to.min(files.len()),
        peak: 0,
        answered: 0,
        waits: 0,
        remaining: files.len(),
        events,
        sized: files.iter().any(|j| j.size > 0),
        sizes: vec![None; files.len()],
    };
    if pool.sized {
        pool.sizes = files.iter().map(|j| Some(j.size)).collect();
    }
    // Workers started early as these would be are taken; the others are
    // ended before any worker is given work.
    let mut early = early.filter(|e| e.how == pool.how);
    for started in 0..workers {
        let res = match early.as_mut().and_then(|e| e.children.pop()) {
            Some(child) => {
                pool.spawns_left = pool.spawns_left.saturating_sub(1);
                pool.adopt(child)
            }
            None => pool.spawn(),
        };
        if let Err(e) = res {
            crate::strategy::fewer_threads(started, workers, "worker processes", &e);
            if started == 0 {
                // Not one: this process hashes them all itself.
                crate::strategy::serial::hash_in_order(files, reading, pool.sink);
                return 0;
            }
            break;
        }
    }
    drop(early);
    pool.peak = pool.live_workers();
    pool.feed_all();
    let flow = pool.event_loop(&rx);
    pool.shutdown(flow.is_break());
    pool.peak
}

impl Pool<'_, '_> {
    fn event_loop(&mut self, rx: &mpsc::Receiver<Event>) -> ControlFlow<()> {
        while self.remaining > 0 {
            if self.live_workers() == 0 {
                self.fail_queue("no worker process could be started")?;
                break;
            }
            // Every live worker has a reader thread holding a sender, and a
            // worker's reader always ends with `Gone`, so this cannot block forever.
            let Ok(event) = rx.recv() else { break };
            match event {
                Event::Done {
                    worker,
                    answers,
                    returned,
                } => {
                    self.take_back(worker, &returned);
                    for (id, outcome) in answers {
                        if let Some(w) = self.workers[worker].as_mut() {
                            if let Some(pos) = w.in_flight.iter().position(|&x| x == id) {
                                w.in_flight.remove(pos);
                                w.in_flight_bytes -= self.sizes[id as usize].unwrap_or(0);
                            }
                            w.small = outcome.as_ref().is_ok_and(|d| d.size < ANSWER_AT_ONCE);
                        }
                        self.report(id, outcome)?;
                    }
                    if returned.is_empty() {
                        self.feed(worker);
                    } else {
                        self.feed_all();
                    }
                }
                Event::Gone { worker } => self.bury(worker)?,
                Event::Waited => {
                    self.waits += 1;
                    if worth_growing(self.waits, self.answered) {
                        (self.waits, self.answered) = (0, 0);
                        self.grow();
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// Files `worker` handed back unread: first in line again, their sizes
    /// known now, so they are batched by bytes (and never handed back).
    fn take_back(&mut self, worker: usize, returned: &[(u32, u64)]) {
        for &(id, size) in returned.iter().rev() {
            if let Some(w) = self.workers[worker].as_mut() {
                if let Some(pos) = w.in_flight.iter().position(|&x| x == id) {
                    w.in_flight.remove(pos);
                }
            }
            self.sizes[id as usize] = Some(size);
            self.queue.push_front(id);
        }
    }

    /// One more worker, while files wait for the disk and the pool may grow
    /// (up to `grow_to`): a worker reads one file at a time, so on a local
    /// disk the workers are the files in flight.
    fn grow(&mut self) {
        if self.live_workers() >= self.grow_to || self.queue.is_empty() {
            return;
        }
        // A worker started for waiting files counts one CPU as its own (the
        // share of the first workers is already taken) and reads into a
        // small buffer.
        self.how.cores_each = 1;
        self.how.small_buffers = true;
        if self.spawn().is_ok() {
            self.peak = self.peak.max(self.live_workers());
            self.feed(self.workers.len() - 1);
        }
    }

    fn live_workers(&self) -> usize {
        self.workers.iter().flatten().count()
    }

    fn report(&mut self, id: u32, outcome: Outcome) -> ControlFlow<()> {
        self.remaining -= 1;
        self.answered += 1;
        (self.sink)(id as usize, outcome)
    }

    /// Start one more worker; `Err` says why none could be started.
    fn spawn(&mut self) -> std::io::Result<()> {
        if self.spawns_left == 0 {
            return Err(std::io::Error::other("too many workers died"));
        }
        self.spawns_left -= 1;
        let child = start(&self.exe, self.how)?;
        self.adopt(child)
    }

    /// Take `child`, a started worker, into the pool: a reader thread turns
    /// its answers into events.
    fn adopt(&mut self, mut child: Child) -> std::io::Result<()> {
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both pipes were asked for");
        };
        let index = self.workers.len();
        let events = self.events.clone();
        let reading = Arc::clone(&self.reading);
        let reader = crate::strategy::thread_builder().spawn(move || {
            let mut r = BufReader::with_capacity(64 * 1024, stdout);
            let (mut answers, mut returned) = (Vec::new(), Vec::new());
            loop {
                let message = read_message(&mut r);
                let end = !matches!(message, Ok(Some(_)));
                match message {
                    Ok(Some(Message::Answer(id, outcome))) => answers.push((id, outcome)),
                    Ok(Some(Message::Returned(id, size))) => returned.push((id, size)),
                    Ok(Some(Message::Streamed(n))) => reading.add_streamed(n),
                    // The event loop may start another worker meanwhile.
                    Ok(Some(Message::Waited)) if events.send(Event::Waited).is_err() => return,
                    _ => {}
                }
                // Everything already read goes to the parent together.
                if (end || r.buffer().is_empty()) && !(answers.is_empty() && returned.is_empty()) {
                    let done = Event::Done {
                        worker: index,
                        answers: std::mem::take(&mut answers),
                        returned: std::mem::take(&mut returned),
                    };
                    if events.send(done).is_err() {
                        return;
                    }
                }
                if end {
                    break;
                }
            }
            let _ = events.send(Event::Gone { worker: index });
        });
        if let Err(e) = reader {
            // Without a reader nobody would hear this worker: end it.
            end(&mut child);
            return Err(e);
        }
        self.workers.push(Some(Worker {
            child,
            stdin: Some(BufWriter::new(stdin)),
            in_flight: VecDeque::new(),
            in_flight_bytes: 0,
            small: false,
        }));
        Ok(())
    }

    /// Top up one worker (see the module doc); close its input when the queue
    /// is dry.
    fn feed(&mut self, index: usize) {
        // Never batch more than a fair share of what is left, so that with few
        // files every worker still gets some.
        let share = self.queue.len() / self.live_workers().max(1);
        let batch = MAX_BATCH.min(share).max(DEPTH);
        let Some(w) = self.workers[index].as_mut() else {
            return;
        };
        let Some(stdin) = w.stdin.as_mut() else {
            return;
        };
        let mut sent = false;
        while let Some(&id) = self.queue.front() {
            // Unknown (the walk does not `stat`): counted as nothing here; a
            // large one is handed back by its worker, with its size.
            let known = self.sizes[id as usize];
            let size = known.unwrap_or(0);
            let held = w.in_flight.len();
            // A suspect (lost with a dying worker before) travels alone, so a
            // second crash points at it and at nothing else.
            let suspect = |id: &u32| self.attempts[*id as usize] > 0;
            // (A suspect held is held alone, so it is the first held: no
            // scan of the batch, which made feeding quadratic in it.)
            let room = if suspect(&id) || w.in_flight.front().is_some_and(suspect) {
                held == 0
            } else {
                held < DEPTH
                    || ((w.small || self.sized)
                        && held < batch
                        && w.in_flight_bytes + size <= BATCH_BYTES)
            };
            if !room {
                break;
            }
            if write_request(stdin, id, &self.files[id as usize], known.is_some()).is_err() {
                // The worker is dying; its reader will report it gone.
                return;
            }
            self.queue.pop_front();
            w.in_flight.push_back(id);
            w.in_flight_bytes += size;
            sent = true;
        }
        if sent && stdin.flush().is_err() {
            return;
        }
        if self.queue.is_empty() && w.in_flight.is_empty() {
            w.stdin = None; // end of input: the worker exits
        }
    }

    fn feed_all(&mut self) {
        for i in 0..self.workers.len() {
            self.feed(i);
        }
    }

    /// A worker's output closed: collect it, requeue or fail what it held.
    fn bury(&mut self, index: usize) -> ControlFlow<()> {
        let Some(mut w) = self.workers[index].take() else {
            return ControlFlow::Continue(());
        };
        drop(w.stdin.take());
        let status = w.child.wait();
        if w.in_flight.is_empty() && status.as_ref().is_ok_and(ExitStatus::success) {
            return ControlFlow::Continue(()); // finished its share normally
        }
        let why = match &status {
            Ok(s) => describe(*s),
            Err(e) => format!("could not be waited for ({e})"),
        };
        // Answers are sent in batches, so any unanswered file may be the one
        // that was being hashed: all become suspects and are retried alone
        // (see `feed`). A file that kills a worker while alone, after an
        // earlier loss, is the culprit and is reported.
        let alone = w.in_flight.len() == 1;
        let mut retried = 0;
        for &id in w.in_flight.iter().rev() {
            self.attempts[id as usize] += 1;
            if alone && self.attempts[id as usize] >= MAX_ATTEMPTS {
                self.report(id, Err(ErrorKind::WorkerDied(why.clone())))?;
            } else {
                self.queue.push_front(id);
                retried += 1;
            }
        }
        if retried > 0 {
            crate::show!(
                "worker process {} {}; {} file(s) retried on another worker",
                w.child.id(),
                why,
                retried
            );
        } else {
            crate::show!("worker process {} {}", w.child.id(), why);
        }
        if !self.queue.is_empty() {
            if let Err(e) = self.spawn() {
                crate::show!("cannot start a worker process: {e}");
            }
            self.feed_all();
        }
        ControlFlow::Continue(())
    }

    fn fail_queue(&mut self, why: &str) -> ControlFlow<()> {
        while let Some(id) = self.queue.pop_front() {
            self.report(id, Err(ErrorKind::WorkerDied(why.to_owned())))?;
        }
        ControlFlow::Continue(())
    }

    fn shutdown(&mut self, abandon: bool) {
        for w in self.workers.iter_mut().flatten() {
            drop(w.stdin.take());
            if abandon {
                let _ = w.child.kill();
            }
            let _ = w.child.wait();
        }
    }
}

/// Whether `waits` messages of files that waited for the disk, against
/// `answered` files, call for one more worker: when at least one file in
/// [`FILES_PER_WAIT`] waited. A worker costs a process start (~1.5 ms of CPU
/// on the 2-vCPU guests) and its memory, so a rare wait must not add one: on
/// the Intel Xeon guest a warm tree still had a few pages read from disk a
/// run (`/proc/diskstats`: 74 reads over 20 runs of 12,000 cached files),
/// and growing on each wait took `hash-procs` past its two workers in 2 of
/// 30 runs, once to 14. On a cold tree nearly every file waits (a worker
/// says so at most every 2 ms), so growth there is as prompt as before.
fn worth_growing(waits: usize, answered: usize) -> bool {
    waits * FILES_PER_WAIT >= answered
}

/// See [`worth_growing`].
const FILES_PER_WAIT: usize = 64;

/// How a worker was started: what its environment tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Started {
    /// The run's `--data-path`.
    pub(super) data_path: crate::datapath::DataPath,
    /// CPUs it may count as its own (see [`WORKER_CORES_ENV`]).
    pub(super) cores_each: usize,
    /// Whether it reads into a small buffer (see [`WORKER_SMALL_BUFFER_ENV`]).
    pub(super) small_buffers: bool,
    /// Whether it sends each file's stamps (see [`WORKER_STAMPS_ENV`]).
    pub(super) stamps: bool,
}

/// Workers started before the run knew its files (see
/// [`super::Procs::start_early`]); those not taken into a pool are killed
/// (they hold no work) and reaped when this is dropped.
#[derive(Debug)]
pub(super) struct Early {
    /// How every one of them was started.
    pub(super) how: Started,
    pub(super) children: Vec<Child>,
}

impl Drop for Early {
    fn drop(&mut self) {
        self.children.iter_mut().for_each(end);
    }
}

/// The executable workers run: `/proc/self/exe` stays this very binary even
/// if the file is replaced (rebuilt, upgraded) during the run; a path would not.
pub(super) fn own_exe() -> std::io::Result<PathBuf> {
    let proc_exe = PathBuf::from("/proc/self/exe");
    proc_exe
        .exists()
        .then_some(proc_exe)
        .map_or_else(std::env::current_exe, Ok)
}

/// Start a worker process of `exe`, with pipes for its input and output.
pub(super) fn start(exe: &std::path::Path, how: Started) -> std::io::Result<Child> {
    let parent = std::process::id();
    let mut cmd = Command::new(exe);
    cmd.env(WORKER_ENV, parent.to_string())
        .env(WORKER_DATA_PATH_ENV, how.data_path.name())
        .env(WORKER_CORES_ENV, how.cores_each.to_string())
        .env(
            WORKER_SMALL_BUFFER_ENV,
            u8::from(how.small_buffers).to_string(),
        )
        .env(WORKER_STAMPS_ENV, u8::from(how.stamps).to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // SAFETY: between fork and exec only async-signal-safe calls are made
    // (the prctl, getppid and _exit system calls), and no memory is
    // allocated or locked.
    unsafe {
        cmd.pre_exec(move || {
            use rustix::process::{getppid, set_parent_process_death_signal, Pid, Signal};
            // If the request fails, or the parent died before it took
            // effect (a signal during start-up), the child ends here,
            // before exec, with `_exit`: returning an error would have
            // std report it to a parent that may be gone, and abort
            // (and dump core) when that write fails.
            let doomed = set_parent_process_death_signal(Some(Signal::KILL)).is_err()
                || Pid::as_raw(getppid()) as u32 != parent;
            if doomed {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Kill a worker that holds no work, and reap it.
fn end(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// "was killed by signal 9 (SIGKILL)" / "exited with status 3".
fn describe(status: ExitStatus) -> String {
    if let Some(sig) = status.signal() {
        let name = match sig {
            libc::SIGKILL => " (SIGKILL)",
            libc::SIGABRT => " (SIGABRT)",
            libc::SIGSEGV => " (SIGSEGV)",
            libc::SIGTERM => " (SIGTERM)",
            libc::SIGBUS => " (SIGBUS)",
            _ => "",
        };
        format!("was killed by signal {sig}{name}")
    } else {
        match status.code() {
            Some(code) => format!("exited with status {code} before finishing"),
            None => "ended abnormally".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rare_wait_adds_no_worker_and_waits_on_most_files_do() {
        // The first wait of a run, before many answers: grow.
        assert!(worth_growing(1, 0));
        assert!(worth_growing(1, FILES_PER_WAIT));
        // One wait among thousands of warm files: do not.
        assert!(!worth_growing(1, 3_000));
        assert!(!worth_growing(40, 3_000));
        // Waits that add up to one file in 64 do.
        assert!(worth_growing(3_000 / FILES_PER_WAIT + 1, 3_000));
    }

    #[test]
    fn describe_names_signals_and_codes() {
        assert_eq!(
            describe(ExitStatus::from_raw(9)),
            "was killed by signal 9 (SIGKILL)"
        );
        assert_eq!(
            describe(ExitStatus::from_raw(3 << 8)),
            "exited with status 3 before finishing"
        );
    }
}
