//! A pool of worker processes, fed file paths over pipes.
//!
//! The parent re-executes its own binary as workers, marked by the
//! environment variable [`WORKER_ENV`] (see [`is_worker`]; no argument can
//! turn a run into a worker). Each worker reads requests on stdin — a job id,
//! a follow flag and the raw bytes of a path, length-prefixed so any name
//! survives — and answers on stdout with the id and either the digest and
//! size or the error.
//!
//! Scheduling is dynamic: each worker holds [`DEPTH`] files at a time (one
//! hashing, one queued so it never waits for the parent) — or, once its last
//! answer showed a small file (the walk does not `stat`, so sizes are learnt
//! from answers), a batch of up to [`MAX_BATCH`] — and gets more, in planned
//! order, as it answers. Workers answer small files in groups of a quarter
//! batch, so the parent refills a worker's queue before it runs dry, at one
//! pipe round trip per group rather than per file. One reader thread per worker turns its
//! answers into events on a channel; the calling thread alone owns the queue and
//! the workers, so there is no shared mutable state.
//!
//! Failure handling, the point of using processes at all:
//! - A worker that crashes or is killed closes its stdout. Its unfinished files
//!   go back to the front of the queue, a replacement worker is started, and a
//!   notice goes to stderr. Those files become suspects, each retried alone
//!   on a worker; a suspect that kills a worker again while alone is reported
//!   as an error instead (it is what kills workers), so a poisonous file
//!   cannot loop forever, innocent files in its batch are not blamed, and the
//!   exit status says so.
//! - Workers never outlive the parent: each asks the kernel for `SIGKILL` when
//!   its parent dies (`PR_SET_PDEATHSIG`), and exits at end of input anyway.
//!   Ctrl-C reaches the whole process group.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitCode, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use super::DirFd;
use super::{largest_first, Job, Outcome, Sink};
use crate::error::ErrorKind;
use crate::hasher::{hash, hash_file, new_buffer, FileDigest, Hashing, NEVER};

/// Set, to the parent's pid, in the environment of the workers a `hash-procs`
/// starts.
pub const WORKER_ENV: &str = "HASHRACE_PROCS_WORKER";

/// Files a worker always holds when there is work: one hashing, one queued, so
/// it never waits for the parent between two files.
const DEPTH: usize = 2;

/// Small files are handed out in batches, so that 20 k files of 4 KiB do not
/// cost 20 k round trips: a worker may hold up to this many files...
const MAX_BATCH: usize = 256;

/// ...as long as what it holds stays under this many bytes. Large files (which
/// come first) therefore go two at a time, keeping the tail balanced.
const BATCH_BYTES: u64 = 4 * 1024 * 1024;

/// A file lost with [`MAX_ATTEMPTS`] dying workers, the last time hashed alone,
/// is reported instead of retried.
const MAX_ATTEMPTS: u8 = 2;

/// Workers answer files at least this large at once, smaller ones per batch.
const ANSWER_AT_ONCE: u64 = 64 * 1024;

/// Test hooks (read by workers only, compiled into debug builds only, which
/// is what `cargo test` runs; documented in the tests that use them):
/// abort when asked to hash a path ending with this value...
#[cfg(debug_assertions)]
const HOOK_ABORT: &str = "HASHRACE_TEST_WORKER_ABORT";
/// ...and sleep this many milliseconds before each file.
#[cfg(debug_assertions)]
const HOOK_DELAY: &str = "HASHRACE_TEST_WORKER_DELAY_MS";
/// ...and write its pid to this FIFO once it holds work (tests wait on it).
#[cfg(debug_assertions)]
const HOOK_READY: &str = "HASHRACE_TEST_WORKER_READY";

/// Whether this process is a worker: [`WORKER_ENV`] names our parent, and the
/// parent runs the very same executable as we do (same inode behind
/// `/proc/PID/exe`). An environment variable left over in a shell, or a
/// `hash-procs` started by anything but `hash-procs`, is therefore an
/// ordinary run.
pub fn is_worker() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(parent) = std::env::var_os(WORKER_ENV) else {
        return false;
    };
    // SAFETY: getppid(2) cannot fail and has no preconditions.
    let ppid = unsafe { libc::getppid() };
    if parent.to_str() != Some(&ppid.to_string()) {
        return false;
    }
    let inode = |p: &str| std::fs::metadata(p).map(|m| (m.dev(), m.ino()));
    match (inode("/proc/self/exe"), inode(&format!("/proc/{ppid}/exe"))) {
        (Ok(me), Ok(parent)) => me == parent,
        _ => false,
    }
}

// ---------------------------------------------------------------- protocol

/// A request: hash this path.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    id: u32,
    follow: bool,
    path: PathBuf,
}

fn write_request(w: &mut impl Write, id: u32, job: &Job) -> io::Result<()> {
    let path = job.path.as_os_str().as_bytes();
    let len = u32::try_from(path.len()).map_err(|_| io::Error::other("path too long"))?;
    w.write_all(&id.to_le_bytes())?;
    w.write_all(&[job.follow as u8])?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(path)
}

/// The next request, or `None` at a clean end of input.
fn read_request(r: &mut impl Read) -> io::Result<Option<Request>> {
    let mut head = [0u8; 9];
    match r.read_exact(&mut head[..1]) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        other => other?,
    }
    r.read_exact(&mut head[1..])?;
    let id = u32::from_le_bytes(head[0..4].try_into().unwrap());
    let follow = head[4] != 0;
    let len = u32::from_le_bytes(head[5..9].try_into().unwrap()) as usize;
    let mut path = vec![0; len];
    r.read_exact(&mut path)?;
    let path = PathBuf::from(OsStr::from_bytes(&path));
    Ok(Some(Request { id, follow, path }))
}

const TAG_OK: u8 = 0;
const TAG_ERRNO: u8 = 1;
const TAG_NOT_REGULAR: u8 = 2;
const TAG_MESSAGE: u8 = 3;

fn write_response(w: &mut impl Write, id: u32, outcome: &Outcome) -> io::Result<()> {
    w.write_all(&id.to_le_bytes())?;
    match outcome {
        Ok(d) => {
            w.write_all(&[TAG_OK])?;
            w.write_all(&d.digest)?;
            w.write_all(&d.size.to_le_bytes())
        }
        Err(ErrorKind::Io(e)) if e.raw_os_error().is_some() => {
            w.write_all(&[TAG_ERRNO])?;
            w.write_all(&e.raw_os_error().unwrap_or(0).to_le_bytes())
        }
        Err(ErrorKind::NotRegular) => w.write_all(&[TAG_NOT_REGULAR]),
        Err(other) => {
            let msg = other.to_string();
            w.write_all(&[TAG_MESSAGE])?;
            w.write_all(&(msg.len() as u32).to_le_bytes())?;
            w.write_all(msg.as_bytes())
        }
    }
}

/// The next response, or `None` at a clean end of input.
fn read_response(r: &mut impl Read) -> io::Result<Option<(u32, Outcome)>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head[..1]) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        other => other?,
    }
    r.read_exact(&mut head[1..])?;
    let id = u32::from_le_bytes(head[0..4].try_into().unwrap());
    let outcome = match head[4] {
        TAG_OK => {
            let mut body = [0u8; 40];
            r.read_exact(&mut body)?;
            Ok(FileDigest {
                digest: body[..32].try_into().unwrap(),
                size: u64::from_le_bytes(body[32..].try_into().unwrap()),
            })
        }
        TAG_ERRNO => {
            let mut code = [0u8; 4];
            r.read_exact(&mut code)?;
            Err(ErrorKind::Io(io::Error::from_raw_os_error(
                i32::from_le_bytes(code),
            )))
        }
        TAG_NOT_REGULAR => Err(ErrorKind::NotRegular),
        TAG_MESSAGE => {
            let mut len = [0u8; 4];
            r.read_exact(&mut len)?;
            let mut msg = vec![0; u32::from_le_bytes(len) as usize];
            r.read_exact(&mut msg)?;
            Err(ErrorKind::Io(io::Error::other(
                String::from_utf8_lossy(&msg).into_owned(),
            )))
        }
        tag => return Err(io::Error::other(format!("bad response tag {tag}"))),
    };
    Ok(Some((id, outcome)))
}

// ------------------------------------------------------------------ worker

/// The worker's main loop: answer requests until stdin closes.
pub fn worker_main() -> ExitCode {
    #[cfg(debug_assertions)]
    let (abort_on, delay) = (
        std::env::var_os(HOOK_ABORT),
        std::env::var(HOOK_DELAY)
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis),
    );
    #[cfg(not(debug_assertions))]
    let (abort_on, delay): (Option<std::ffi::OsString>, Option<Duration>) = (None, None);
    #[cfg(debug_assertions)]
    let mut ready = std::env::var_os(HOOK_READY);
    // Own the descriptors directly rather than through std's locked handles.
    let (Ok(input), Ok(output)) = (
        io::stdin().as_fd().try_clone_to_owned(),
        io::stdout().as_fd().try_clone_to_owned(),
    ) else {
        return ExitCode::FAILURE;
    };
    let mut input = BufReader::new(File::from(input));
    let mut output = BufWriter::new(File::from(output));
    let _hashing = Hashing::start(1);
    let mut buf = new_buffer();
    let mut dirs = LastDir::default();
    let mut unsent = 0usize;
    loop {
        let req = match read_request(&mut input) {
            Ok(Some(req)) => req,
            Ok(None) => return ExitCode::SUCCESS,
            Err(_) => return ExitCode::FAILURE, // the parent is gone or broken
        };
        #[cfg(debug_assertions)]
        if let Some(fifo) = ready.take() {
            let pid = format!("{}\n", std::process::id());
            let _ = std::fs::OpenOptions::new()
                .append(true)
                .open(fifo)
                .and_then(|mut f| f.write_all(pid.as_bytes()));
        }
        if let Some(name) = &abort_on {
            if req.path.as_os_str().as_bytes().ends_with(name.as_bytes()) {
                std::process::abort();
            }
        }
        if let Some(delay) = delay {
            thread::sleep(delay);
        }
        let outcome = dirs.hash(&req, &mut buf);
        if write_response(&mut output, req.id, &outcome).is_err() {
            return ExitCode::FAILURE;
        }
        // Answers to small files are sent together (one write per batch,
        // not per 4 KiB file): when no request is waiting, or after a
        // quarter of a batch, so the parent refills the queue before it runs
        // dry; a large file is answered at once so the parent can send more
        // work without delay.
        unsent += 1;
        let batch_done = input.buffer().is_empty() || unsent >= MAX_BATCH / 4;
        let large = outcome.as_ref().is_ok_and(|d| d.size >= ANSWER_AT_ONCE);
        if batch_done || large {
            if output.flush().is_err() {
                return ExitCode::FAILURE;
            }
            unsent = 0;
        }
    }
}

/// The directory of the last file a worker opened, kept open: files come in
/// path order, so most share their directory with the one before, and
/// opening them relative to it skips the lookup of every ancestor (the
/// threads strategy gets the same from the walk's descriptors).
#[derive(Default)]
struct LastDir {
    path: PathBuf,
    fd: Option<DirFd>,
}

impl LastDir {
    fn hash(&mut self, req: &Request, buf: &mut [u8]) -> Outcome {
        let parent = match req.path.parent() {
            Some(p) if !req.follow && !p.as_os_str().is_empty() => p,
            _ => return hash_file(&req.path, req.follow, buf),
        };
        if self.fd.is_none() || self.path != parent {
            use rustix::fs::{open, Mode, OFlags};
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            self.fd = open(parent, flags, Mode::empty())
                .ok()
                .map(|fd| DirFd(std::sync::Arc::new(fd)));
            self.path = parent.to_path_buf();
        }
        let job = Job {
            dir: self.fd.clone(),
            ..Job::new(req.path.clone(), 0, false)
        };
        hash(&job.request(&NEVER, None), buf)
    }
}

// ------------------------------------------------------------------ parent

enum Event {
    /// Answers read from one worker in one go (a batch of small files costs
    /// one wake-up of the parent, not one per file).
    Done {
        worker: usize,
        answers: Vec<(u32, Outcome)>,
    },
    Gone {
        worker: usize,
    },
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
    tool: &'a str,
    exe: PathBuf,
    jobs: &'a [Job],
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
    /// Sizes as far as known: from the plan, or looked up here when a file
    /// would join a batch (see [`Pool::size_of`]).
    sizes: Vec<Option<u64>>,
}

pub(super) fn run(tool: &str, jobs: &[Job], workers: usize, sink: &mut Sink<'_>) {
    if jobs.is_empty() {
        return;
    }
    // /proc/self/exe stays this very binary even if the file is replaced
    // (rebuilt, upgraded) during the run; a path would not.
    let proc_exe = PathBuf::from("/proc/self/exe");
    let exe = match proc_exe
        .exists()
        .then_some(proc_exe)
        .map_or_else(std::env::current_exe, Ok)
    {
        Ok(exe) => exe,
        Err(e) => {
            let why = format!("cannot find own executable to start workers: {e}");
            for i in 0..jobs.len() {
                if sink(i, Err(ErrorKind::WorkerDied(why.clone()))).is_break() {
                    return;
                }
            }
            return;
        }
    };
    assert!(jobs.len() <= u32::MAX as usize, "more than 2^32 files");
    let (events, rx) = mpsc::channel();
    let mut pool = Pool {
        tool,
        exe,
        jobs,
        sink,
        queue: largest_first(jobs).into_iter().map(|i| i as u32).collect(),
        attempts: vec![0; jobs.len()],
        workers: Vec::new(),
        // Enough to replace every worker a few times; a binary whose workers
        // die on start-up must not respawn forever.
        spawns_left: workers * 4 + 4,
        remaining: jobs.len(),
        events,
        sized: jobs.iter().any(|j| j.size > 0),
        sizes: vec![None; jobs.len()],
    };
    if pool.sized {
        pool.sizes = jobs.iter().map(|j| Some(j.size)).collect();
    }
    for _ in 0..workers {
        pool.spawn();
    }
    pool.feed_all();
    let flow = pool.event_loop(&rx);
    pool.shutdown(flow.is_break());
}

impl Pool<'_, '_> {
    /// The size of job `id`, for batching. The walk does not `stat` (it cost
    /// the serial phase 15 % on small files), so a file that would join a
    /// batch beyond the first [`DEPTH`] is looked up here, relative to its
    /// directory, while the workers hash: a batch must not take a tree's
    /// largest files to one worker (`mixed` hashed at 1.14x `hash-serial`
    /// when its three models, right after its config files, went together).
    fn size_of(jobs: &[Job], sizes: &mut [Option<u64>], id: u32, held: usize) -> u64 {
        let i = id as usize;
        if let Some(size) = sizes[i] {
            return size;
        }
        if held < DEPTH {
            return 0; // joins anyway; nothing to decide
        }
        let job = &jobs[i];
        let size = match (&job.dir, job.path.file_name()) {
            (Some(dir), Some(name)) if !job.follow => {
                rustix::fs::statat(&*dir.0, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .map(|st| st.st_size as u64)
                    .ok()
            }
            _ => std::fs::metadata(&job.path).map(|m| m.len()).ok(),
        };
        // Unknown (vanished, unreadable): the worker will say; batch it alone.
        let size = size.unwrap_or(BATCH_BYTES);
        sizes[i] = Some(size);
        size
    }

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
                Event::Done { worker, answers } => {
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
                    self.feed(worker);
                }
                Event::Gone { worker } => self.bury(worker)?,
            }
        }
        ControlFlow::Continue(())
    }

    fn live_workers(&self) -> usize {
        self.workers.iter().flatten().count()
    }

    fn report(&mut self, id: u32, outcome: Outcome) -> ControlFlow<()> {
        self.remaining -= 1;
        (self.sink)(id as usize, outcome)
    }

    fn spawn(&mut self) {
        if self.spawns_left == 0 {
            return;
        }
        self.spawns_left -= 1;
        let parent = std::process::id();
        let mut cmd = Command::new(&self.exe);
        cmd.env(WORKER_ENV, parent.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: between fork and exec only async-signal-safe calls are made
        // (prctl, getppid, _exit), and no memory is allocated or locked.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died before the request took effect.
                if libc::getppid() as u32 != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                eprintln!("{}: cannot start a worker process: {e}", self.tool);
                return;
            }
        };
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return;
        };
        let index = self.workers.len();
        let events = self.events.clone();
        thread::spawn(move || {
            let mut r = BufReader::with_capacity(64 * 1024, stdout);
            let mut answers = Vec::new();
            loop {
                let answer = read_response(&mut r);
                let end = !matches!(answer, Ok(Some(_)));
                if let Ok(Some(a)) = answer {
                    answers.push(a);
                }
                // Everything already read goes to the parent together.
                if (end || r.buffer().is_empty()) && !answers.is_empty() {
                    let done = Event::Done {
                        worker: index,
                        answers: std::mem::take(&mut answers),
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
        self.workers.push(Some(Worker {
            child,
            stdin: Some(BufWriter::new(stdin)),
            in_flight: VecDeque::new(),
            in_flight_bytes: 0,
            small: false,
        }));
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
            let size = Pool::size_of(self.jobs, &mut self.sizes, id, w.in_flight.len());
            let held = w.in_flight.len();
            // A suspect (lost with a dying worker before) travels alone, so a
            // second crash points at it and at nothing else.
            let suspect = |id: &u32| self.attempts[*id as usize] > 0;
            let room = if suspect(&id) || w.in_flight.iter().any(suspect) {
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
            if write_request(stdin, id, &self.jobs[id as usize]).is_err() {
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
            eprintln!(
                "{}: worker process {} {}; {} file(s) retried on another worker",
                self.tool,
                w.child.id(),
                why,
                retried
            );
        } else {
            eprintln!("{}: worker process {} {}", self.tool, w.child.id(), why);
        }
        if !self.queue.is_empty() {
            self.spawn();
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
    fn requests_round_trip_with_raw_bytes() {
        let path = PathBuf::from(OsStr::from_bytes(b"d/\xff\nname\\x"));
        let job = Job::new(path.clone(), 3, true);
        let mut wire = Vec::new();
        write_request(&mut wire, 7, &job).unwrap();
        write_request(
            &mut wire,
            8,
            &Job {
                follow: false,
                ..job
            },
        )
        .unwrap();
        let mut r = &wire[..];
        assert_eq!(
            read_request(&mut r).unwrap(),
            Some(Request {
                id: 7,
                follow: true,
                path: path.clone()
            })
        );
        assert_eq!(
            read_request(&mut r).unwrap(),
            Some(Request {
                id: 8,
                follow: false,
                path
            })
        );
        assert_eq!(read_request(&mut r).unwrap(), None);
    }

    #[test]
    fn a_truncated_request_is_an_error_not_a_clean_end() {
        let job = Job::new(PathBuf::from("abc"), 0, false);
        let mut wire = Vec::new();
        write_request(&mut wire, 1, &job).unwrap();
        for cut in 1..wire.len() {
            assert!(read_request(&mut &wire[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn responses_round_trip_every_kind() {
        let ok = FileDigest {
            digest: [0xab; 32],
            size: 1 << 40,
        };
        let mut wire = Vec::new();
        write_response(&mut wire, 1, &Ok(ok)).unwrap();
        write_response(
            &mut wire,
            2,
            &Err(io::Error::from_raw_os_error(libc::EACCES).into()),
        )
        .unwrap();
        write_response(&mut wire, 3, &Err(ErrorKind::NotRegular)).unwrap();
        write_response(&mut wire, 4, &Err(io::Error::other("odd").into())).unwrap();
        let mut r = &wire[..];
        assert_eq!(read_response(&mut r).unwrap().unwrap().1.unwrap(), ok);
        let (id, e) = read_response(&mut r).unwrap().unwrap();
        assert_eq!(id, 2);
        assert_eq!(e.unwrap_err().to_string(), "Permission denied");
        assert!(matches!(
            read_response(&mut r).unwrap().unwrap().1,
            Err(ErrorKind::NotRegular)
        ));
        assert_eq!(
            read_response(&mut r)
                .unwrap()
                .unwrap()
                .1
                .unwrap_err()
                .to_string(),
            "odd"
        );
        assert!(read_response(&mut r).unwrap().is_none());
    }

    #[test]
    fn an_unknown_tag_is_an_error() {
        let wire = [1, 0, 0, 0, 99];
        assert!(read_response(&mut &wire[..]).is_err());
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
