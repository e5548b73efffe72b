//! The worker process: read requests on stdin, hash, answer on stdout.
//!
//! A worker is the same binary started by the pool (see [`super::is_worker`]).
//! On a local disk it hashes one file at a time on its main thread and
//! batches the answers to small files so the parent wakes once per batch
//! ([`serve`]); when its reads wait for the disk it adds readers, threads
//! that share the files it holds ([`Readers::grow`]), as `hash-threads`
//! does. Under a depth policy (a network file system, `--max-in-flight`) it
//! reads as many files at once as the parent gives it, each on a thread of
//! its own, and answers each when done ([`serve_many`]). It holds no state
//! besides its read buffers and the directories it opened last, so a worker
//! that dies loses nothing but the files it held, which the pool retries.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use super::pool::Started;
use super::wire::{
    read_request, read_started, write_response, write_returned, write_streamed, write_waited,
    Request,
};
use super::{ANSWER_AT_ONCE, BATCH_BYTES, MAX_BATCH, RETURN_MIN};
use crate::hasher::{self, new_buffer, ReadPolicy, Reading};
use crate::strategy::{DirFd, Job, Outcome};

/// Test hooks (read by workers only, compiled in only with the `test-hooks`
/// feature, which every test build has; documented in the tests that use them):
/// abort when asked to hash a path ending with this value...
#[cfg(any(test, feature = "test-hooks"))]
const HOOK_ABORT: &str = "HASHRACE_TEST_WORKER_ABORT";
/// ...and write its pid to this FIFO once it holds work (tests wait on it);
#[cfg(any(test, feature = "test-hooks"))]
const HOOK_READY: &str = "HASHRACE_TEST_WORKER_READY";
/// a worker panics when asked to hash a path ending with this value, on
/// whichever thread reads it (a reader of [`serve_many`], one a local disk's
/// worker added, or its main thread);
#[cfg(any(test, feature = "test-hooks"))]
const HOOK_PANIC: &str = "HASHRACE_TEST_WORKER_PANIC";
/// and, set to `1`, every file a local disk's worker answers counts as a
/// read that waited for the disk, so the worker adds readers as on a cold
/// tree (after each file, where a real wait adds one during the read).
#[cfg(any(test, feature = "test-hooks"))]
const HOOK_WAIT: &str = "HASHRACE_TEST_WORKER_WAIT";

/// Run `f`, one of a worker's readers; a panic ends the worker (`abort`).
/// A reader that panicked would leave its file unanswered and the others
/// waiting for more work; ended, the worker's end is heard by the parent,
/// which retries what it held.
fn abort_on_panic(f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        std::process::abort();
    }
}

/// [`HOOK_PANIC`] as a reader thread read it when it started.
struct PanicHook(#[cfg(any(test, feature = "test-hooks"))] Option<std::ffi::OsString>);

impl PanicHook {
    fn new() -> PanicHook {
        PanicHook(
            #[cfg(any(test, feature = "test-hooks"))]
            std::env::var_os(HOOK_PANIC),
        )
    }

    /// Panic if the hook names `req`'s file.
    fn check(&self, req: &Request) {
        #[cfg(any(test, feature = "test-hooks"))]
        if let Some(name) = &self.0 {
            if req.path.as_os_str().as_bytes().ends_with(name.as_bytes()) {
                panic!("test hook: {}", req.path.display());
            }
        }
        let _ = req;
    }
}

/// Whether [`HOOK_WAIT`] is set.
fn every_read_waits() -> bool {
    #[cfg(any(test, feature = "test-hooks"))]
    return std::env::var_os(HOOK_WAIT).is_some_and(|v| v == "1");
    #[cfg(not(any(test, feature = "test-hooks")))]
    false
}

/// The worker's main loop: answer requests until stdin closes.
pub(crate) fn worker_main() -> ExitCode {
    #[cfg(any(test, feature = "test-hooks"))]
    let abort_on = std::env::var_os(HOOK_ABORT);
    #[cfg(not(any(test, feature = "test-hooks")))]
    let abort_on: Option<std::ffi::OsString> = None;
    #[cfg(any(test, feature = "test-hooks"))]
    let ready = std::env::var_os(HOOK_READY);
    // Own the descriptors directly rather than through std's locked handles.
    let (Ok(input), Ok(output)) = (
        io::stdin().as_fd().try_clone_to_owned(),
        io::stdout().as_fd().try_clone_to_owned(),
    ) else {
        return ExitCode::FAILURE;
    };
    // A worker outlives no parent: the kernel kills it when the parent dies.
    // The request is made here, after exec, rather than between fork and
    // exec; a parent that died before it took effect is caught by the check
    // of who the parent now is.
    let orphaned =
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
            .is_err()
            || !super::parent_is_named();
    let mut input = BufReader::new(File::from(input));
    let Ok(how) = read_started(&mut input) else {
        return ExitCode::FAILURE;
    };
    if orphaned {
        return ExitCode::FAILURE;
    }
    let output = Mutex::new(Out::new(File::from(output)));
    let reading = Reading::new(ReadPolicy {
        path: how.data_path,
        stamps: how.stamps,
        ..ReadPolicy::default()
    });
    reading.set_cores(how.cores_each);
    let _hashing = reading.hashing();
    std::thread::scope(|scope| {
        let (stop, stopped) = mpsc::channel::<()>();
        // Without this thread only the progress line loses: hashing goes on.
        let _ = crate::limits::thread_builder()
            .spawn_scoped(scope, || report_streamed(&reading, &output, stopped));
        let hooks = Hooks {
            abort_on,
            #[cfg(any(test, feature = "test-hooks"))]
            ready,
        };
        let code = match how.files_each {
            0 | 1 => serve(input, &output, &reading, hooks, how),
            most => serve_many(input, &output, &reading, hooks, most),
        };
        drop(stop);
        code
    })
}

/// The test hooks a worker was started with (see [`HOOK_ABORT`]).
struct Hooks {
    abort_on: Option<std::ffi::OsString>,
    #[cfg(any(test, feature = "test-hooks"))]
    ready: Option<std::ffi::OsString>,
}

impl Hooks {
    /// Run the hooks for a request just read: say once that work is held,
    /// abort on the named path.
    fn on_request(&mut self, req: &Request) {
        #[cfg(any(test, feature = "test-hooks"))]
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

/// How often a worker tells the parent how many bytes it has hashed: often
/// enough for a progress line redrawn a few times a second, rarely enough
/// to cost nothing.
const STREAMED_EVERY: Duration = Duration::from_millis(200);

/// A worker's output, and the answers written to it but not yet flushed:
/// how many, and their files' bytes (see [`answer`]).
struct Out {
    w: BufWriter<File>,
    unsent: usize,
    unsent_bytes: u64,
}

impl Out {
    fn new(file: File) -> Out {
        Out {
            w: BufWriter::new(file),
            unsent: 0,
            unsent_bytes: 0,
        }
    }

    /// Send everything written so far.
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()?;
        (self.unsent, self.unsent_bytes) = (0, 0);
        Ok(())
    }
}

/// Until `stop` closes, say every [`STREAMED_EVERY`] how many more bytes
/// went through SHA-256, when any did.
fn report_streamed(reading: &Reading, output: &Mutex<Out>, stop: mpsc::Receiver<()>) {
    let mut said = 0;
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(STREAMED_EVERY) {
        let now = reading.bytes_read();
        if now > said {
            let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
            if write_streamed(&mut out.w, now - said)
                .and_then(|()| out.flush())
                .is_err()
            {
                return; // the parent is gone: the main loop will see it too
            }
            said = now;
        }
    }
}

/// Write the answer to `req` (`Err`: handed back unread, with its size).
/// Answers to small files are sent together (one write per batch, not per
/// 4 KiB file): when no request waits behind this one (`more`, asked with
/// the output locked, says none: so among readers answering at once, the
/// last to write sees the queue as it is and sends what the others wrote),
/// or after half a batch (by count, or by bytes where the parent batches by
/// the sizes it knows), so the parent refills the queue before it runs dry;
/// a large file is answered at once so the parent can send more work
/// without delay. Half, not a quarter: each answer wakes the parent and
/// this worker again; on 12,000 warm files of 3 KiB (2-vCPU Intel Xeon
/// guest, `perf stat -r 20`) a quarter made 694 context switches a run and
/// half 425, and ran 37.8 → 35.6 ms (hyperfine medians, 40 runs; three
/// quarters: 35.5; measured with batches of 256, before they grew to 512
/// and half a batch to 256 files).
fn answer(
    output: &Mutex<Out>,
    req: &Request,
    hashed: Result<Outcome, u64>,
    more: &dyn Fn() -> bool,
) -> io::Result<()> {
    let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
    let outcome = match hashed {
        Ok(outcome) => outcome,
        Err(size) => {
            write_returned(&mut out.w, req.id, size)?;
            return out.flush();
        }
    };
    write_response(&mut out.w, req.id, &outcome)?;
    out.unsent += 1;
    if req.keep {
        // Its size was known to the parent, which batched it by bytes.
        out.unsent_bytes += outcome.as_ref().map_or(0, |d| d.size);
    }
    let batch_done = out.unsent >= MAX_BATCH / 2 || out.unsent_bytes >= BATCH_BYTES / 2 || !more();
    let large = outcome.as_ref().is_ok_and(|d| d.size >= ANSWER_AT_ONCE);
    if batch_done || large {
        out.flush()?;
    }
    Ok(())
}

/// What the readers of a local disk's worker share: the requests the main
/// thread has passed on, the output, and how many readers run.
struct Readers<'a> {
    inbox: Inbox,
    output: &'a Mutex<Out>,
    reading: &'a Reading,
    /// Set when an answer could not be written: the parent is gone.
    failed: AtomicBool,
    /// Readers added...
    count: AtomicUsize,
    /// ...and the most there may be.
    most: usize,
    /// Files answered since a reader was last added (see [`worth_growing`])...
    answered: AtomicUsize,
    /// ...and the reads that waited for the disk since.
    waits: AtomicUsize,
    /// Whether a reader was added: the main thread then stops reading files
    /// and passes requests on to the readers through the inbox.
    shared: AtomicBool,
    /// A test's: see [`HOOK_WAIT`].
    every_read_waits: bool,
}

impl<'a> Readers<'a> {
    /// One more reader, called when a read had to wait for the disk (as
    /// it waits, not after the file: a large file takes milliseconds): a
    /// worker reads one file at a time until its files turn out not to be
    /// cached, and then as many as [`Readers::most`] (cold small files are
    /// bound by latency, and only many reads in flight reach the disk's
    /// rate). The parent hears of each (`Waited`) and gives the worker more
    /// files to hold.
    fn grow<'s>(&'s self, scope: &'s std::thread::Scope<'s, 'a>) {
        let waits = self.waits.fetch_add(1, Ordering::Relaxed) + 1;
        if !worth_growing(waits, self.answered.load(Ordering::Relaxed)) {
            return;
        }
        self.waits.store(0, Ordering::Relaxed);
        self.answered.store(0, Ordering::Relaxed);
        // Claimed first, so racing readers cannot overshoot.
        if self.count.fetch_add(1, Ordering::Relaxed) < self.most {
            let reader = move || abort_on_panic(|| self.help(scope));
            if crate::limits::thread_builder()
                .spawn_scoped(scope, reader)
                .is_ok()
            {
                self.shared.store(true, Ordering::Relaxed);
                let mut out = self.output.lock().unwrap_or_else(|e| e.into_inner());
                if write_waited(&mut out.w).and_then(|()| out.flush()).is_err() {
                    self.failed.store(true, Ordering::Relaxed);
                }
                return;
            }
        }
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// The next request from `intake`, `None` at its end or when it broke
    /// (then the worker has failed).
    fn take_in(&self, intake: &mut Intake) -> Option<Request> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        intake.next().unwrap_or_else(|_| {
            self.failed.store(true, Ordering::Relaxed);
            None
        })
    }

    /// An added reader: hash what the inbox holds until it closes, into a
    /// small buffer (the disk, not the copy, is the limit here).
    fn help<'s>(&'s self, scope: &'s std::thread::Scope<'s, 'a>) {
        let mut buf = hasher::Buffer::small();
        let mut dirs = LastDir::default();
        let on_block = |_| self.grow(scope);
        let panic_on = PanicHook::new();
        while let Some(req) = self.inbox.take() {
            if self.failed.load(Ordering::Relaxed) {
                return;
            }
            let read = (&mut dirs, &mut buf[..], &on_block as &dyn hasher::OnBlock);
            if !self.answer_one(scope, &req, read, &|| !self.inbox.is_empty(), &panic_on) {
                return;
            }
        }
    }

    /// Hash `req` with `read` (the thread's directory, buffer and `on_block`
    /// hook) and answer it, for the main thread and added readers alike;
    /// `more`: whether requests wait behind it. `false` once the answer could
    /// not be written: the worker has failed.
    fn answer_one<'s>(
        &'s self,
        scope: &'s std::thread::Scope<'s, 'a>,
        req: &Request,
        (dirs, buf, on_block): (&mut LastDir, &mut [u8], &dyn hasher::OnBlock),
        more: &dyn Fn() -> bool,
        panic_on: &PanicHook,
    ) -> bool {
        panic_on.check(req);
        // A large file the parent did not know the size of, with more files
        // already here behind it: handed back unread (see `RETURN_MIN`).
        let hashed = dirs.hash(req, self.reading, buf, on_block, !req.keep && more());
        self.answered.fetch_add(1, Ordering::Relaxed);
        if answer(self.output, req, hashed, more).is_err() {
            self.failed.store(true, Ordering::Relaxed);
            return false;
        }
        if self.every_read_waits {
            self.grow(scope);
        }
        true
    }
}

/// A worker's input: requests read from stdin.
struct Intake {
    input: BufReader<File>,
    hooks: Hooks,
}

impl Intake {
    /// The next request, `None` at the end of input; `Err`: the parent is
    /// gone or broken.
    fn next(&mut self) -> io::Result<Option<Request>> {
        let req = read_request(&mut self.input)?;
        if let Some(req) = &req {
            self.hooks.on_request(req);
        }
        Ok(req)
    }

    /// Whether requests wait behind the one being hashed.
    fn more(&self) -> bool {
        !self.input.buffer().is_empty()
    }
}

/// Answer requests from `input` until it closes (a local disk's worker):
/// one file at a time on this thread, with a large read buffer, until a
/// read waits for the disk; from then on readers, up to `most`, added as
/// reads wait (see [`Readers::grow`]), while this thread passes requests on
/// to them as they arrive.
fn serve(
    input: BufReader<File>,
    output: &Mutex<Out>,
    reading: &Reading,
    hooks: Hooks,
    how: Started,
) -> ExitCode {
    let most = how.readers_each;
    let mut buf = if how.small_buffers {
        hasher::Buffer::small()
    } else {
        new_buffer()
    };
    let readers = Readers {
        inbox: Inbox::default(),
        output,
        reading,
        failed: AtomicBool::new(false),
        count: AtomicUsize::new(0),
        // A worker held to one file at a time (a fixed depth, `-j` at the
        // threads strategy's ceiling, or few descriptors left) adds none: one
        // added reader would only take the main thread's place.
        most: Some(readers_allowed(most))
            .filter(|&n| n > 1 && most > 1)
            .unwrap_or(0),
        answered: AtomicUsize::new(0),
        waits: AtomicUsize::new(0),
        shared: AtomicBool::new(false),
        every_read_waits: every_read_waits(),
    };
    let mut intake = Intake { input, hooks };
    let mut dirs = LastDir::default();
    let panic_on = PanicHook::new();
    std::thread::scope(|scope| {
        // Called when a read had to wait for the disk (see
        // `hasher::Request::on_block`).
        let on_block = |_| readers.grow(scope);
        // A panic here would leave the added readers waiting for requests.
        abort_on_panic(|| {
            // One file at a time, until a reader is added...
            while !readers.shared.load(Ordering::Relaxed) {
                let Some(req) = readers.take_in(&mut intake) else {
                    return;
                };
                let read = (&mut dirs, &mut buf[..], &on_block as &dyn hasher::OnBlock);
                if !readers.answer_one(scope, &req, read, &|| intake.more(), &panic_on) {
                    return;
                }
            }
            // ...then every request goes to the readers, as it arrives; the
            // large buffer and the directory kept are no longer used.
            buf = hasher::Buffer::Small(Box::default());
            dirs = LastDir::default();
            while let Some(req) = readers.take_in(&mut intake) {
                readers.inbox.put(req);
            }
        });
        readers.inbox.close();
    });
    if readers.failed.load(Ordering::Relaxed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Whether `waits` reads that waited for the disk, against `answered`
/// files, call for one more reader: when at least one file in
/// [`FILES_PER_WAIT`] waited. A rare wait must not add one: on the Intel
/// Xeon guest a warm tree still had a few pages read from disk a run
/// (`/proc/diskstats`: 74 reads over 20 runs of 12,000 cached files), and a
/// reader added for them takes turns on the cores with the hashing ones. On
/// a cold tree nearly every file waits, so growth there is prompt.
fn worth_growing(waits: usize, answered: usize) -> bool {
    waits * FILES_PER_WAIT >= answered
}

/// See [`worth_growing`].
const FILES_PER_WAIT: usize = 64;

/// The most readers a worker may run, of `most` asked for: each holds a
/// file and its directory open, and the descriptors left may allow fewer.
fn readers_allowed(most: usize) -> usize {
    let free = crate::limits::free_descriptors().unwrap_or(usize::MAX);
    most.min(free.saturating_sub(DESCRIPTORS_KEPT) / 2).max(1)
}

/// Answer requests from `input` until it closes, reading up to `most` files
/// at once, each on a thread of its own (a network file system's worker:
/// there each file waits for round trips, so files in flight, not cores,
/// set the pace, and the parent decides how many a worker holds). A thread
/// starts when a request finds none idle; each answers its file at once.
fn serve_many(
    mut input: BufReader<File>,
    output: &Mutex<Out>,
    reading: &Reading,
    mut hooks: Hooks,
    most: usize,
) -> ExitCode {
    // The requests beyond what the descriptors left allow wait in the
    // inbox, never fail.
    let most = readers_allowed(most);
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
                let reader =
                    || abort_on_panic(|| read_files((&inbox, &dirs), output, reading, &failed));
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

/// Requests waiting for a reader (one of [`serve_many`]'s, or one a local
/// disk's worker added, see [`Readers`]). One condition
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

    /// Whether no request is queued.
    fn is_empty(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.requests.is_empty()
    }

    /// No more requests: readers finish what is queued, then end.
    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.ready.notify_all();
    }
}

/// Descriptors a worker leaves to everything but its readers (the
/// standard streams, their copies, the progress reporter's, a library's).
const DESCRIPTORS_KEPT: usize = 8;

/// One of [`serve_many`]'s readers: hash the requests in `inbox` until it
/// closes, answering each at once; `dirs` is the directory the readers
/// last opened a file in.
fn read_files(
    (inbox, dirs): (&Inbox, &Mutex<LastDir>),
    output: &Mutex<Out>,
    reading: &Reading,
    failed: &AtomicBool,
) {
    let mut buf = hasher::Buffer::small();
    let panic_on = PanicHook::new();
    while let Some(req) = inbox.take() {
        panic_on.check(&req);
        let dir = parent_of(&req).and_then(|p| shared_dir(dirs, p));
        // (Nothing is handed back unasked; were it, the parent sends it again.)
        let hashed = hash_in(&req, dir, reading, &mut buf, &|_| {}, false);
        let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
        let written = match &hashed {
            Ok(outcome) => write_response(&mut out.w, req.id, outcome),
            Err(size) => write_returned(&mut out.w, req.id, *size),
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
        on_block: &dyn hasher::OnBlock,
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
    on_block: &dyn hasher::OnBlock,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rare_wait_adds_no_reader_and_waits_on_most_files_do() {
        // The first wait of a run, before many answers: grow.
        assert!(worth_growing(1, 0));
        assert!(worth_growing(1, FILES_PER_WAIT));
        // One wait among thousands of warm files: do not.
        assert!(!worth_growing(1, 3_000));
        assert!(!worth_growing(40, 3_000));
        // Waits that add up to one file in 64 do.
        assert!(worth_growing(3_000 / FILES_PER_WAIT + 1, 3_000));
    }
}
