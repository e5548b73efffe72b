//! The parent's side: start workers, feed them, collect answers, replace
//! the ones that die.
//!
//! The calling thread alone owns the queue and the workers, and waits on
//! every worker's pipes at once with `poll`. Scheduling and failure handling
//! are described in the [module doc](super).
//!
//! Why no reader thread per worker: on 12,000 warm 3 KiB files a reader
//! thread woke the event loop through a futex for every batch of answers
//! (~2.5 % of the run's CPU samples in `perf`), and two more threads shared
//! the two cores with the workers and the walk. Polling, the parent wakes
//! once per batch and reads it itself. Its writes to a worker's input do not
//! block (requests the pipe cannot take wait in [`Worker::unsent`]): a
//! parent blocked on a full input pipe would no longer read the worker's
//! answers, and a worker blocked on a full output pipe reads no requests.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};

use rustix::event::{PollFd, PollFlags};

use super::wire::STREAMED_ID;
use super::wire::{read_message, write_request, Message};
use super::{ANSWER_AT_ONCE, BATCH_BYTES, DEPTH, MAX_ATTEMPTS, MAX_BATCH, WORKER_ENV};
use crate::error::ErrorKind;
use crate::hasher::Reading;
use crate::inflight::{Policy, Shared};
use crate::strategy::{Job, Outcome, Sink};
use std::sync::Arc;

/// What one read of a worker's output said (a batch of small files costs
/// one wake-up of the parent, not one per file).
#[derive(Default)]
struct Heard {
    answers: Vec<(u32, Outcome)>,
    /// Files handed back unread, with their sizes.
    returned: Vec<(u32, u64)>,
    /// How many readers it added while its files waited for the disk.
    waited: usize,
    /// Its output ended, or broke the wire format: it is gone or must go.
    gone: bool,
}

struct Worker {
    child: Child,
    /// `None` once we have told the worker there is no more work. Set not
    /// to block (see the module doc).
    stdin: Option<ChildStdin>,
    /// Requests written for the input pipe; it has taken the first
    /// `taken` bytes.
    unsent: Vec<u8>,
    taken: usize,
    stdout: ChildStdout,
    /// Output read and not yet a whole message.
    unread: Vec<u8>,
    /// Ids sent and not yet answered, oldest first.
    in_flight: VecDeque<u32>,
    /// Planned bytes of `in_flight`.
    in_flight_bytes: u64,
    /// Whether its last answer was a small file: the walk does not `stat`
    /// files, so batches grow on evidence that files here are small.
    small: bool,
    /// The readers it added while files waited for the disk (its main
    /// thread reads until the first, and then passes requests on).
    added: usize,
    /// Checks in a row (one a [`STOP_CHECK`] without a word from any
    /// worker) that found it stopped while it held work.
    stopped_checks: u32,
    /// Whether it was ended for being stopped (said when it is buried).
    ended_stopped: bool,
}

/// How long the parent waits for a word from its workers before it looks
/// whether one that holds work is stopped.
const STOP_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A worker found stopped (`SIGSTOP`, or `SIGTSTP` sent to it alone) this
/// many checks in a row, a second apart, is ended and its files go to
/// another worker: otherwise the run would wait for it for good. Counted in
/// checks, not by the clock, so that a whole run suspended with Ctrl-Z
/// (parent and workers alike) is not taken for a stopped worker once it goes
/// on. A worker stopped by a debugger (`t`, traced) is left alone.
const STOPPED_CHECKS: u32 = 5;

/// Whether process `pid` is stopped by a signal (state `T` in
/// `/proc/PID/stat`; the state follows the last `)`, as the command name may
/// hold any bytes).
fn is_stopped(pid: u32) -> bool {
    let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
        return false;
    };
    state_of(&stat) == Some(b'T')
}

/// The state letter of a `/proc/PID/stat` line.
fn state_of(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat.get(close + 2).copied()
}

impl Worker {
    /// How many files it reads at once.
    fn readers(&self) -> usize {
        self.added.max(1)
    }
}

struct Pool<'a, 's> {
    exe: PathBuf,
    /// How the next worker is started (its data path, share of the CPUs,
    /// buffer, stamps, and how many files it may read at once).
    how: Started,
    /// The run's shared state: bytes the workers say they streamed are
    /// counted in it, for the progress line.
    reading: Arc<Reading>,
    /// The most workers, and readers, that were alive at once.
    peak: Peak,
    /// Where a depth policy sets the files in flight (a network file
    /// system, or `--max-in-flight`): shared out among the workers, each of
    /// which reads up to [`Started::files_each`] at once.
    policy: Option<&'a Shared>,
    /// The policy's depth when the workers were last fed.
    target: usize,
    files: &'a [Job],
    sink: &'a mut Sink<'s>,
    queue: VecDeque<u32>,
    attempts: Vec<u8>,
    workers: Vec<Option<Worker>>,
    spawns_left: usize,
    remaining: usize,
    /// Whether the plan knows file sizes (then batches are bounded by bytes
    /// from the start, largest files first).
    sized: bool,
    /// Sizes as far as known: from the plan, or from a worker that handed
    /// the file back (see [`super::RETURN_MIN`]).
    sizes: Vec<Option<u64>>,
}

/// The most workers, and readers summed over them, that ran at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Peak {
    pub(super) workers: usize,
    pub(super) readers: usize,
}

/// Hash `files` on `workers` worker processes started as `how` says,
/// handing them out in `order`; the most workers, and readers, that ran at
/// once. The first workers are taken from `early` where they were started
/// the same way; the rest of `early` is ended. With a depth `policy`, each
/// worker reads up to [`Started::files_each`] files at once and the workers
/// together hold what the policy says.
pub(super) fn run(
    files: &[Job],
    order: &[usize],
    (workers, how): (usize, Started),
    early: Option<Early>,
    policy: Option<&Shared>,
    reading: &Arc<Reading>,
    sink: &mut Sink<'_>,
) -> Peak {
    if files.is_empty() {
        return Peak::default();
    }
    let exe = match own_exe() {
        Ok(exe) => exe,
        Err(e) => {
            let why = format!("cannot find own executable to start workers: {e}");
            for i in 0..files.len() {
                if sink(i, Err(ErrorKind::WorkerDied(why.clone()))).is_break() {
                    return Peak::default();
                }
            }
            return Peak::default();
        }
    };
    assert!(files.len() < STREAMED_ID as usize, "2^32 files or more");
    let mut pool = Pool {
        exe,
        how,
        reading: Arc::clone(reading),
        files,
        sink,
        queue: order.iter().map(|&i| i as u32).collect(),
        attempts: vec![0; files.len()],
        workers: Vec::new(),
        // Enough to replace every worker a few times; a binary whose workers
        // die on start-up must not respawn forever.
        spawns_left: workers * 4 + 4,
        peak: Peak::default(),
        policy,
        target: policy.map_or(0, |p| p.target()),
        remaining: files.len(),
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
                return Peak::default();
            }
            break;
        }
    }
    drop(early);
    pool.note_peak();
    pool.feed_all();
    let flow = pool.event_loop();
    pool.shutdown(flow.is_break());
    pool.peak
}

impl Pool<'_, '_> {
    fn event_loop(&mut self) -> ControlFlow<()> {
        let mut buf = vec![0u8; 64 * 1024];
        while self.remaining > 0 {
            if self.live_workers() == 0 {
                self.fail_queue("no worker process could be started")?;
                break;
            }
            // Every live worker's output is polled, and its end is heard as
            // `gone`, so this cannot wait forever on a worker that died.
            for (index, readable, writable) in self.wait_ready() {
                if writable {
                    self.send(index);
                }
                if readable {
                    let heard = self.hear(index, &mut buf);
                    self.act_on(index, heard)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// Wait until some worker has output to read, or room in its input for
    /// requests waiting to go: `(index, readable, writable)` of each.
    fn wait_ready(&mut self) -> Vec<(usize, bool, bool)> {
        let live: Vec<(usize, &Worker)> = self
            .workers
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.as_ref().map(|w| (i, w)))
            .collect();
        let mut fds = Vec::with_capacity(live.len() * 2);
        for (_, w) in &live {
            fds.push(PollFd::new(&w.stdout, PollFlags::IN));
            let input = w.stdin.as_ref().filter(|_| !w.unsent.is_empty());
            match input {
                Some(stdin) => fds.push(PollFd::new(stdin, PollFlags::OUT)),
                // Nothing to send: a descriptor that polls nothing keeps the
                // pairs in step.
                None => fds.push(PollFd::new(&w.stdout, PollFlags::empty())),
            }
        }
        let busy = live.iter().any(|(_, w)| !w.in_flight.is_empty());
        let check = rustix::event::Timespec::try_from(STOP_CHECK).expect("a second");
        let polled = loop {
            match rustix::event::poll(&mut fds, busy.then_some(&check)) {
                Err(rustix::io::Errno::INTR) => continue,
                other => break other,
            }
        };
        if let Err(e) = polled {
            // Not with valid descriptors, short of memory: the workers
            // cannot be heard, so they end, and their ends are read (a read
            // of a worker still running would wait for it).
            drop(fds);
            let live: Vec<usize> = live.iter().map(|&(i, _)| i).collect();
            crate::show!("cannot wait for the worker processes: {e}");
            for &i in &live {
                if let Some(w) = self.workers[i].as_mut() {
                    let _ = w.child.kill();
                }
            }
            return live.into_iter().map(|i| (i, true, false)).collect();
        }
        if polled == Ok(0) {
            drop(fds);
            let live: Vec<usize> = live.iter().map(|&(i, _)| i).collect();
            self.end_stopped(&live);
            return Vec::new();
        }
        live.iter()
            .zip(fds.chunks_exact(2))
            .filter_map(|(&(i, _), pair)| {
                let out = pair[0].revents();
                let input = pair[1].revents();
                // A hang-up or error is read as the end of the output.
                let readable = !out.is_empty();
                let writable = !input.is_empty();
                (readable || writable).then_some((i, readable, writable))
            })
            .collect()
    }

    /// After a [`STOP_CHECK`] without a word: end each of `live` that holds
    /// work and has been stopped for [`STOPPED_CHECKS`] checks. Its output
    /// then ends, and it is buried as a worker that died, its files retried.
    fn end_stopped(&mut self, live: &[usize]) {
        for &i in live {
            let Some(w) = self.workers[i].as_mut() else {
                continue;
            };
            if w.in_flight.is_empty() || !is_stopped(w.child.id()) {
                w.stopped_checks = 0;
                continue;
            }
            w.stopped_checks += 1;
            if w.stopped_checks >= STOPPED_CHECKS && !w.ended_stopped {
                w.ended_stopped = true;
                let _ = w.child.kill();
            }
        }
    }

    /// Read what worker `index` wrote (one read: it returns what the pipe
    /// holds) and take the whole messages in it.
    fn hear(&mut self, index: usize, buf: &mut [u8]) -> Heard {
        let mut heard = Heard::default();
        let Some(w) = self.workers[index].as_mut() else {
            return heard;
        };
        let n = loop {
            match w.stdout.read(buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Nothing more can be heard from it: it must end, so that
                // burying it does not wait on a worker still running.
                Err(_) => {
                    let _ = w.child.kill();
                    break 0;
                }
            }
        };
        w.unread.extend_from_slice(&buf[..n]);
        let mut rest = &w.unread[..];
        while !rest.is_empty() {
            let mut cursor = rest;
            match read_message(&mut cursor) {
                Ok(Some(message)) => match message {
                    Message::Answer(id, outcome) => heard.answers.push((id, outcome)),
                    Message::Returned(id, size) => heard.returned.push((id, size)),
                    Message::Streamed(n) => self.reading.add_streamed(n),
                    Message::Waited => heard.waited += 1,
                },
                // Part of a message: the rest comes with a later read.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                // Not the wire format: nothing more it says can be trusted.
                Ok(None) | Err(_) => {
                    let _ = w.child.kill();
                    heard.gone = true;
                    break;
                }
            }
            rest = cursor;
        }
        let used = w.unread.len() - rest.len();
        w.unread.drain(..used);
        // The end of its output (a message cut short at the end is lost
        // with the worker, which is what its end means).
        heard.gone |= n == 0;
        heard
    }

    /// Act on what worker `index` said: report its answers, refill it (or
    /// everyone, when it handed files back), count the readers it added,
    /// and bury it when it is gone.
    fn act_on(&mut self, index: usize, heard: Heard) -> ControlFlow<()> {
        let Heard {
            answers,
            returned,
            waited,
            mut gone,
        } = heard;
        if waited > 0 {
            if let Some(w) = self.workers[index].as_mut() {
                w.added += waited;
            }
            self.note_peak();
        }
        let answers_empty = answers.is_empty();
        if let Some(policy) = self.policy {
            let bytes = answers.iter().flat_map(|(_, o)| o.as_ref().map(|d| d.size));
            policy.completed(answers.len() as u64, bytes.sum());
        }
        // An id it does not hold (a repeat, or no file at all) is no answer:
        // nothing more it says can be trusted, so it ends, and the files it
        // still holds are retried as any dead worker's are.
        let mut trusted = self.take_back(index, &returned);
        for (id, outcome) in answers {
            if !trusted || !self.unhold(index, id) {
                trusted = false;
                break;
            }
            if let Some(w) = self.workers[index].as_mut() {
                w.small = outcome.as_ref().is_ok_and(|d| d.size < ANSWER_AT_ONCE);
            }
            self.report(id, outcome)?;
        }
        if !trusted {
            if let Some(w) = self.workers[index].as_mut() {
                let _ = w.child.kill();
            }
            gone = true;
        }
        if gone {
            // Buries it, requeues what it held and refills everyone.
            return self.bury(index);
        }
        // When a policy's depth changed, every worker's share changed with it.
        let target = self.policy.map(|p| p.target());
        let changed = target.is_some_and(|t| t != self.target);
        if !returned.is_empty() || changed {
            self.target = target.unwrap_or(0);
            self.feed_all();
        } else if !answers_empty {
            self.feed(index);
        }
        ControlFlow::Continue(())
    }

    /// Files `worker` handed back unread: first in line again, their sizes
    /// known now, so they are batched by bytes (and never handed back).
    /// Whether it held every one of them.
    fn take_back(&mut self, worker: usize, returned: &[(u32, u64)]) -> bool {
        for &(id, size) in returned.iter().rev() {
            if !self.unhold(worker, id) {
                return false;
            }
            self.sizes[id as usize] = Some(size);
            self.queue.push_front(id);
        }
        true
    }

    /// Take file `id` off what `worker` holds; whether it held it.
    fn unhold(&mut self, worker: usize, id: u32) -> bool {
        let Some(w) = self.workers[worker].as_mut() else {
            return false;
        };
        // Answers come in the order files were sent: found at the front.
        let Some(pos) = w.in_flight.iter().position(|&x| x == id) else {
            return false;
        };
        w.in_flight.remove(pos);
        let size = self.sizes.get(id as usize).copied().flatten();
        w.in_flight_bytes = w.in_flight_bytes.saturating_sub(size.unwrap_or(0));
        true
    }

    /// Keep the most workers and readers alive at once.
    fn note_peak(&mut self) {
        let live = self.workers.iter().flatten();
        self.peak.workers = self.peak.workers.max(live.clone().count());
        self.peak.readers = self.peak.readers.max(live.map(Worker::readers).sum());
    }

    fn live_workers(&self) -> usize {
        self.workers.iter().flatten().count()
    }

    fn report(&mut self, id: u32, outcome: Outcome) -> ControlFlow<()> {
        self.remaining -= 1;
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

    /// Take `child`, a started worker, into the pool; its input is set
    /// not to block (see the module doc).
    fn adopt(&mut self, mut child: Child) -> io::Result<()> {
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both pipes were asked for");
        };
        if let Err(e) = rustix::io::ioctl_fionbio(&stdin, true) {
            end(&mut child);
            return Err(e.into());
        }
        self.workers.push(Some(Worker {
            child,
            stdin: Some(stdin),
            unsent: Vec::new(),
            taken: 0,
            stdout,
            unread: Vec::new(),
            in_flight: VecDeque::new(),
            in_flight_bytes: 0,
            small: false,
            added: 0,
            stopped_checks: 0,
            ended_stopped: false,
        }));
        Ok(())
    }

    /// Write what the input pipe of worker `index` takes of its unsent
    /// requests; close its input once it has no more work.
    fn send(&mut self, index: usize) {
        let Some(w) = self.workers[index].as_mut() else {
            return;
        };
        let Some(stdin) = w.stdin.as_mut() else {
            return;
        };
        while w.taken < w.unsent.len() {
            match stdin.write(&w.unsent[w.taken..]) {
                Ok(n) => w.taken += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // The worker is dying; its output's end will say so.
                Err(_) => break,
            }
        }
        // (Not drained as the pipe takes it: a batch of long paths is
        // written in many pieces.)
        w.unsent.clear();
        w.taken = 0;
        if self.queue.is_empty() && w.in_flight.is_empty() {
            w.stdin = None; // end of input: the worker exits
        }
    }

    /// Top up one worker (see the module doc); close its input when the queue
    /// is dry.
    fn feed(&mut self, index: usize) {
        // Never batch more than a fair share of what is left, so that with few
        // files every worker still gets some.
        let live = self.live_workers().max(1);
        let share = self.queue.len() / live;
        let batch = MAX_BATCH.min(share).max(DEPTH);
        let held_most = self
            .policy
            .map(|p| policy_share(p.target(), live, self.how.files_each));
        let Some(w) = self.workers[index].as_mut() else {
            return;
        };
        if w.stdin.is_none() {
            return;
        }
        let mut too_long = None;
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
            } else if let Some(most) = held_most {
                held < most
            } else {
                // As many for each reader it runs.
                held < DEPTH * w.readers()
                    || ((w.small || self.sized)
                        && held < batch
                        && w.in_flight_bytes + size <= BATCH_BYTES)
            };
            if !room {
                break;
            }
            // Under a policy the worker reads each file on its own thread:
            // nothing waits behind a large one, so it is never handed back.
            let keep = known.is_some() || held_most.is_some();
            if write_request(&mut w.unsent, id, &self.files[id as usize], keep).is_err() {
                too_long = Some(id);
                break;
            }
            self.queue.pop_front();
            w.in_flight.push_back(id);
            w.in_flight_bytes += size;
        }
        if let Some(id) = too_long {
            // 4 GiB of path: reported as that file's error, not sent. (A
            // `Break` from the sink is seen again at the next report.)
            self.queue.pop_front();
            let why = io::Error::other("path too long to hand to a worker");
            let _ = self.report(id, Err(ErrorKind::Io(why)));
            return self.feed(index);
        }
        self.send(index);
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
            _ if w.ended_stopped => {
                format!("was stopped for {STOPPED_CHECKS} s while it held files, so it was ended")
            }
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
            // A worker still writing answers nobody reads ends only when
            // killed.
            if abandon {
                let _ = w.child.kill();
            }
            let _ = w.child.wait();
        }
    }
}

/// The files one of `live` workers may hold when a policy wants `target`
/// in flight: an even share, rounded up (so the workers together hold at
/// least the target), at most the `files_each` it reads at once, and at
/// least one.
fn policy_share(target: usize, live: usize, files_each: usize) -> usize {
    target.div_ceil(live.max(1)).min(files_each).max(1)
}

/// How a worker was started: the first message on its input
/// ([`super::wire::write_started`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Started {
    /// The run's `--data-path`: the workers read by the parent's policy
    /// (each measures for itself under `auto`).
    pub(super) data_path: crate::datapath::DataPath,
    /// The CPUs a worker may count as its own: the machine's, shared out
    /// among the workers. A worker starts a helper thread for a large file
    /// (reading or mapping ahead) only when its share leaves a core free, as
    /// the threads of one process do; without the share, two workers on two
    /// CPUs would each start one and four threads would take turns on two
    /// cores.
    pub(super) cores_each: usize,
    /// Whether it reads into a small buffer (see [`crate::hasher::Buffer`]),
    /// as the extra readers of `hash-threads` do: on a network file system
    /// the round trips, not the copy, are its limit, and the 2 MiB huge-page
    /// buffer was a third of a worker's resident memory.
    pub(super) small_buffers: bool,
    /// Whether it sends each file's stamps
    /// ([`crate::hasher::ReadPolicy::stamps`]: the cache records them).
    pub(super) stamps: bool,
    /// The most files it reads at once, each on a thread of its own (a
    /// network file system's worker, or one under `--max-in-flight`: the
    /// parent holds it to its share of the depth policy's files in flight).
    /// `1`: a local disk's worker, one file at a time until its reads wait.
    pub(super) files_each: usize,
    /// A local disk's worker: the most readers it may run, itself included,
    /// adding one while its files wait for the disk (see
    /// [`super::readers_each`]).
    pub(super) readers_each: usize,
}

impl Started {
    /// How a local disk's worker is started, one of `workers`, for a run
    /// that reads as `read` says.
    pub(super) fn local(read: crate::hasher::ReadPolicy, workers: usize) -> Started {
        Started {
            data_path: read.path,
            cores_each: super::cores_each(workers),
            small_buffers: false,
            stamps: read.stamps,
            files_each: 1,
            readers_each: super::readers_each(workers),
        }
    }
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

/// Start a worker process of `exe`, with pipes for its input and output, and
/// send it how it was started as its first message.
pub(super) fn start(exe: &std::path::Path, how: Started) -> std::io::Result<Child> {
    let mut child = Command::new(exe)
        .env(WORKER_ENV, std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    // A few dozen bytes into an empty pipe: never blocks.
    let sent = super::wire::write_started(child.stdin.as_mut().expect("piped"), &how);
    if let Err(e) = sent {
        end(&mut child);
        return Err(e);
    }
    Ok(child)
}

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
    fn a_policys_depth_is_shared_out_among_the_workers() {
        // Evenly, rounded up: together they hold at least the target.
        assert_eq!(policy_share(16, 2, 64), 8);
        assert_eq!(policy_share(17, 2, 64), 9);
        assert_eq!(policy_share(128, 3, 43), 43);
        // Never more than a worker reads at once, never none.
        assert_eq!(policy_share(128, 1, 64), 64);
        assert_eq!(policy_share(1, 2, 64), 1);
        assert_eq!(policy_share(0, 2, 64), 1);
        // A pool whose workers all died shares among one.
        assert_eq!(policy_share(4, 0, 64), 4);
    }

    #[test]
    fn the_state_is_read_after_the_command_name_whatever_it_holds() {
        assert_eq!(state_of(b"42 (hash-procs) T 1 42"), Some(b'T'));
        assert_eq!(state_of(b"42 (a) S (b) ) R 1"), Some(b'R'));
        assert_eq!(state_of(b"42 (x"), None);
        assert!(!is_stopped(std::process::id()), "this test is running");
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
