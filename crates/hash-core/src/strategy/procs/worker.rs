//! The worker process: read requests on stdin, hash, answer on stdout.
//!
//! A worker is the same binary started by the pool (see [`super::is_worker`]);
//! it hashes one file at a time and batches the answers to small files so the
//! parent wakes once per batch ([`serve`]); under a depth policy (a network
//! file system, `--max-in-flight`) it reads several at once, each on a thread
//! of its own, and answers each when done ([`serve_many`]). It holds no state
//! besides its read buffers and the last directory it opened, so a worker
//! that dies loses nothing but the files it held, which the pool retries.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use super::wire::{
    read_request, write_response, write_returned, write_streamed, write_waited, Request,
};
use super::{
    ANSWER_AT_ONCE, BATCH_BYTES, MAX_BATCH, RETURN_MIN, WORKER_CORES_ENV, WORKER_DATA_PATH_ENV,
    WORKER_FILES_ENV, WORKER_SMALL_BUFFER_ENV, WORKER_STAMPS_ENV,
};
use crate::datapath::DataPath;
use crate::hasher::{self, new_buffer, ReadPolicy, Reading};
use crate::strategy::{DirFd, Job, Outcome};

/// Test hooks (read by workers only, compiled into debug builds only, which
/// is what `cargo test` runs; documented in the tests that use them):
/// abort when asked to hash a path ending with this value...
#[cfg(debug_assertions)]
const HOOK_ABORT: &str = "HASHRACE_TEST_WORKER_ABORT";
/// ...and write its pid to this FIFO once it holds work (tests wait on it);
#[cfg(debug_assertions)]
const HOOK_READY: &str = "HASHRACE_TEST_WORKER_READY";
/// a reader of [`serve_many`] panics when asked to hash a path ending with
/// this value.
#[cfg(debug_assertions)]
const HOOK_PANIC: &str = "HASHRACE_TEST_WORKER_PANIC";

/// The worker's main loop: answer requests until stdin closes.
pub fn worker_main() -> ExitCode {
    #[cfg(debug_assertions)]
    let abort_on = std::env::var_os(HOOK_ABORT);
    #[cfg(not(debug_assertions))]
    let abort_on: Option<std::ffi::OsString> = None;
    #[cfg(debug_assertions)]
    let ready = std::env::var_os(HOOK_READY);
    // Own the descriptors directly rather than through std's locked handles.
    let (Ok(input), Ok(output)) = (
        io::stdin().as_fd().try_clone_to_owned(),
        io::stdout().as_fd().try_clone_to_owned(),
    ) else {
        return ExitCode::FAILURE;
    };
    let input = BufReader::new(File::from(input));
    let output = Mutex::new(BufWriter::new(File::from(output)));
    let path = std::env::var(WORKER_DATA_PATH_ENV).ok();
    let path = path
        .as_deref()
        .and_then(DataPath::named)
        .unwrap_or_default();
    let stamps = std::env::var_os(WORKER_STAMPS_ENV).is_some_and(|v| v == "1");
    let reading = Reading::new(ReadPolicy {
        path,
        stamps,
        ..ReadPolicy::default()
    });
    if let Some(n) = std::env::var(WORKER_CORES_ENV)
        .ok()
        .and_then(|n| n.parse().ok())
    {
        reading.set_cores(n);
    }
    let _hashing = reading.hashing();
    std::thread::scope(|scope| {
        let (stop, stopped) = mpsc::channel::<()>();
        // Without this thread only the progress line loses: hashing goes on.
        let _ = crate::limits::thread_builder()
            .spawn_scoped(scope, || report_streamed(&reading, &output, stopped));
        let hooks = Hooks {
            abort_on,
            #[cfg(debug_assertions)]
            ready,
        };
        let most = std::env::var(WORKER_FILES_ENV)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        let code = if most > 1 {
            serve_many(input, &output, &reading, hooks, most)
        } else {
            serve(input, &output, &reading, hooks)
        };
        drop(stop);
        code
    })
}

/// The test hooks a worker was started with (see [`HOOK_ABORT`]).
struct Hooks {
    abort_on: Option<std::ffi::OsString>,
    #[cfg(debug_assertions)]
    ready: Option<std::ffi::OsString>,
}

impl Hooks {
    /// Run the hooks for a request just read: say once that work is held,
    /// abort on the named path.
    fn on_request(&mut self, req: &Request) {
        #[cfg(debug_assertions)]
        if let Some(fifo) = self.ready.take() {
            let pid = format!("{}\n", std::process::id());
            let _ = std::fs::OpenOptions::new()
                .append(true)
                .open(fifo)
                .and_then(|mut f| f.write_all(pid.as_bytes()));
        }
        if let Some(name) = &self.abort_on {
            if req.path.as_os_str().as_bytes().ends_with(name.as_bytes()) {
                std::process::abort();
            }
        }
    }
}

/// The shortest time between two `Waited` messages of a worker: the parent
/// starts at most one worker per message, and a new one takes ~2 ms to start.
const WAITED_EVERY: Duration = Duration::from_millis(2);

/// How often a worker tells the parent how many bytes it has hashed: often
/// enough for a progress line redrawn a few times a second, rarely enough
/// to cost nothing.
const STREAMED_EVERY: Duration = Duration::from_millis(200);

/// Until `stop` closes, say every [`STREAMED_EVERY`] how many more bytes
/// went through SHA-256, when any did.
fn report_streamed(reading: &Reading, output: &Mutex<BufWriter<File>>, stop: mpsc::Receiver<()>) {
    let mut said = 0;
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(STREAMED_EVERY) {
        let now = reading.bytes_read();
        if now > said {
            let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
            if write_streamed(&mut *out, now - said)
                .and_then(|()| out.flush())
                .is_err()
            {
                return; // the parent is gone: the main loop will see it too
            }
            said = now;
        }
    }
}

/// Answer requests from `input` until it closes.
fn serve(
    mut input: BufReader<File>,
    output: &Mutex<BufWriter<File>>,
    reading: &Reading,
    mut hooks: Hooks,
) -> ExitCode {
    let small = std::env::var_os(WORKER_SMALL_BUFFER_ENV).is_some_and(|v| v == "1");
    let mut buf = if small {
        hasher::Buffer::small()
    } else {
        new_buffer()
    };
    let mut dirs = LastDir::default();
    // Answers written but not yet flushed: how many, and their files' bytes.
    let (mut unsent, mut unsent_bytes) = (0usize, 0u64);
    // Set when a read had to wait for the disk (see `hasher::Request::on_block`).
    let waited = std::cell::Cell::new(false);
    let on_block = |_| waited.set(true);
    let mut said_waited: Option<std::time::Instant> = None;
    loop {
        let req = match read_request(&mut input) {
            Ok(Some(req)) => req,
            Ok(None) => return ExitCode::SUCCESS,
            Err(_) => return ExitCode::FAILURE, // the parent is gone or broken
        };
        hooks.on_request(&req);
        // A large file the parent did not know the size of, with more files
        // already here behind it: handed back unread (see `RETURN_MIN`).
        let hand_back = !req.keep && !input.buffer().is_empty();
        let outcome = match dirs.hash(&req, reading, &mut buf, &on_block, hand_back) {
            Ok(outcome) => outcome,
            Err(size) => {
                let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                if write_returned(&mut *out, req.id, size)
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return ExitCode::FAILURE;
                }
                (unsent, unsent_bytes) = (0, 0);
                continue;
            }
        };
        let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
        if write_response(&mut *out, req.id, &outcome).is_err() {
            return ExitCode::FAILURE;
        }
        // Said at once, so the parent may start another worker meanwhile,
        // but at most every WAITED_EVERY: on a cold tree nearly every file
        // waits, and a write per file would undo the batching of answers.
        if waited.take() && said_waited.is_none_or(|t| t.elapsed() >= WAITED_EVERY) {
            if write_waited(&mut *out).and_then(|()| out.flush()).is_err() {
                return ExitCode::FAILURE;
            }
            said_waited = Some(std::time::Instant::now());
        }
        // Answers to small files are sent together (one write per batch,
        // not per 4 KiB file): when no request is waiting, or after half a
        // batch (by count, or by bytes where the parent batches by the sizes
        // it knows), so the parent refills the queue before it runs dry; a
        // large file is answered at once so the parent can send more work
        // without delay. Half, not a quarter: each answer wakes the parent
        // (then via a reader thread, since removed) and this worker again; on 12,000
        // warm files of 3 KiB (2-vCPU Intel Xeon guest, `perf stat -r 20`) a
        // quarter made 694 context switches a run and half 425, and ran
        // 37.8 → 35.6 ms (hyperfine medians, 40 runs; three quarters: 35.5;
        // measured with batches of 256, before they grew to 512 and half a
        // batch to 256 files).
        unsent += 1;
        if req.keep {
            // Its size was known to the parent, which batched it by bytes.
            unsent_bytes += outcome.as_ref().map_or(0, |d| d.size);
        }
        let batch_done =
            input.buffer().is_empty() || unsent >= MAX_BATCH / 2 || unsent_bytes >= BATCH_BYTES / 2;
        let large = outcome.as_ref().is_ok_and(|d| d.size >= ANSWER_AT_ONCE);
        if batch_done || large {
            if out.flush().is_err() {
                return ExitCode::FAILURE;
            }
            (unsent, unsent_bytes) = (0, 0);
        }
    }
}

/// Answer requests from `input` until it closes, reading up to `most` files
/// at once, each on a thread of its own (a network file system's worker:
/// there each file waits for round trips, so files in flight, not cores,
/// set the pace, and the parent decides how many a worker holds). A thread
/// starts when a request finds none idle; each answers its file at once.
fn serve_many(
    mut input: BufReader<File>,
    output: &Mutex<BufWriter<File>>,
    reading: &Reading,
    mut hooks: Hooks,
    most: usize,
) -> ExitCode {
    // Each reader holds a file and its directory open; the requests beyond
    // what the descriptors left allow wait in the inbox, never fail.
    let free = crate::limits::free_descriptors().unwrap_or(usize::MAX);
    let most = most.min(free.saturating_sub(DESCRIPTORS_KEPT) / 2).max(1);
    let inbox = Inbox::default();
    let failed = AtomicBool::new(false);
    // One for all readers: they take files in path order, and a directory
    // opened per reader costs a round trip per reader on a network file system.
    let dirs = Mutex::new(LastDir::default());
    std::thread::scope(|scope| {
        let mut readers = 0;
        loop {
            let req = match read_request(&mut input) {
                Ok(Some(req)) => req,
                Ok(None) => break,
                Err(_) => {
                    // The parent is gone or broken.
                    failed.store(true, Ordering::Relaxed);
                    break;
                }
            };
            hooks.on_request(&req);
            if !inbox.put(req) && readers < most {
                // A panic in a reader would leave its file unanswered and
                // the worker waiting for more work: the worker ends instead,
                // as it would with the panic on its main thread, and the
                // parent retries what it held.
                let reader = || {
                    let read = || read_files((&inbox, &dirs), output, reading, &failed);
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).is_err() {
                        std::process::abort();
                    }
                };
                if crate::limits::thread_builder()
                    .spawn_scoped(scope, reader)
                    .is_ok()
                {
                    readers += 1;
                }
            }
            // With no reader at all (none could start), the parent hears
            // this worker's end and retries its files elsewhere.
            if readers == 0 {
                failed.store(true, Ordering::Relaxed);
                break;
            }
        }
        inbox.close();
    });
    if failed.load(Ordering::Relaxed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Requests waiting for one of [`serve_many`]'s readers. One condition
/// variable, not a channel behind a lock: each request then wakes one
/// reader, where a channel's receiver shared under a mutex woke two (the
/// one that got it, and the next in line for the lock).
#[derive(Default)]
struct Inbox {
    state: Mutex<InboxState>,
    ready: std::sync::Condvar,
}

#[derive(Default)]
struct InboxState {
    requests: std::collections::VecDeque<Request>,
    /// Readers waiting for a request.
    idle: usize,
    closed: bool,
}

impl Inbox {
    /// Queue `req`; whether a reader was idle to take it.
    fn put(&self, req: Request) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.requests.push_back(req);
        let idle = state.idle >= state.requests.len();
        drop(state);
        self.ready.notify_one();
        idle
    }

    /// The next request, or `None` once closed and empty.
    fn take(&self) -> Option<Request> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(req) = state.requests.pop_front() {
                return Some(req);
            }
            if state.closed {
                return None;
            }
            state.idle += 1;
            state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
            state.idle -= 1;
        }
    }

    /// No more requests: readers finish what is queued, then end.
    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.ready.notify_all();
    }
}

/// Descriptors [`serve_many`] leaves to everything but its readers (the
/// standard streams, their copies, the progress reporter's, a library's).
const DESCRIPTORS_KEPT: usize = 8;

/// One of [`serve_many`]'s readers: hash the requests in `inbox` until it
/// closes, answering each at once; `dirs` is the directory the readers
/// last opened a file in.
fn read_files(
    (inbox, dirs): (&Inbox, &Mutex<LastDir>),
    output: &Mutex<BufWriter<File>>,
    reading: &Reading,
    failed: &AtomicBool,
) {
    let mut buf = hasher::Buffer::small();
    #[cfg(debug_assertions)]
    let panic_on = std::env::var_os(HOOK_PANIC);
    while let Some(req) = inbox.take() {
        #[cfg(debug_assertions)]
        if let Some(name) = &panic_on {
            if req.path.as_os_str().as_bytes().ends_with(name.as_bytes()) {
                panic!("test hook: {}", req.path.display());
            }
        }
        let dir = parent_of(&req).and_then(|p| shared_dir(dirs, p));
        // (Nothing is handed back unasked; were it, the parent sends it again.)
        let hashed = hash_in(&req, dir, reading, &mut buf, &|_| {}, false);
        let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
        let written = match &hashed {
            Ok(outcome) => write_response(&mut *out, req.id, outcome),
            Err(size) => write_returned(&mut *out, req.id, *size),
        };
        if written.and_then(|()| out.flush()).is_err() {
            failed.store(true, Ordering::Relaxed);
            return;
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
    /// Hash the file `req` names; with `hand_back`, a file of [`RETURN_MIN`]
    /// bytes or more is not read: `Err` says its size.
    fn hash(
        &mut self,
        req: &Request,
        reading: &Reading,
        buf: &mut [u8],
        on_block: &dyn Fn(std::time::Duration),
        hand_back: bool,
    ) -> Result<Outcome, u64> {
        let dir = parent_of(req).and_then(|p| self.dir(p));
        hash_in(req, dir, reading, buf, on_block, hand_back)
    }

    /// A descriptor of directory `parent`: the last one's, if it is the
    /// same directory; `None` if it cannot be opened (the file is then
    /// opened by its path, and fails or not on its own).
    fn dir(&mut self, parent: &Path) -> Option<DirFd> {
        if let Some(fd) = self.kept(parent) {
            return Some(fd);
        }
        let fd = open_dir(parent);
        self.keep(parent, fd.clone());
        fd
    }

    /// The descriptor kept, if it is `parent`'s.
    fn kept(&self, parent: &Path) -> Option<DirFd> {
        self.fd.clone().filter(|_| self.path == parent)
    }

    /// Keep `fd` as `parent`'s descriptor.
    fn keep(&mut self, parent: &Path, fd: Option<DirFd>) {
        self.path = parent.to_path_buf();
        self.fd = fd;
    }
}

/// A descriptor of directory `parent`, `None` if it cannot be opened.
fn open_dir(parent: &Path) -> Option<DirFd> {
    hasher::open_dir(parent)
        .ok()
        .map(|fd| DirFd(std::sync::Arc::new(fd)))
}

/// A descriptor of directory `parent` from `dirs`, the last one its readers
/// opened, or opened now and kept there. The lock is not held while it
/// opens: on a network file system that is a round trip, and a directory
/// that does not answer must not hold up readers of other directories.
fn shared_dir(dirs: &Mutex<LastDir>, parent: &Path) -> Option<DirFd> {
    let lock = || dirs.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(fd) = lock().kept(parent) {
        return Some(fd);
    }
    let fd = open_dir(parent);
    lock().keep(parent, fd.clone());
    fd
}

/// The directory to open `req`'s file in, if it is opened relative to one:
/// a walked file's (a file named on the command line, or under `-L`, is
/// opened by its path, following links as its rules say).
fn parent_of(req: &Request) -> Option<&Path> {
    req.path
        .parent()
        .filter(|p| !req.follow && !p.as_os_str().is_empty())
}

/// Hash the file `req` names, in `dir` when given (see [`LastDir::hash`]).
fn hash_in(
    req: &Request,
    dir: Option<DirFd>,
    reading: &Reading,
    buf: &mut [u8],
    on_block: &dyn Fn(std::time::Duration),
    hand_back: bool,
) -> Result<Outcome, u64> {
    let job = Job {
        dir,
        ..Job::new(req.path.clone(), 0, req.follow)
    };
    let request = job.request(reading, Some(on_block));
    let opened = match hasher::open(&request) {
        Ok(opened) => opened,
        Err(e) => return Ok(Err(e)),
    };
    if hand_back && opened.size >= RETURN_MIN {
        return Err(opened.size);
    }
    Ok(hasher::hash_opened(&opened, buf, reading, Some(on_block)).map_err(Into::into))
}
