//! The worker process: read requests on stdin, hash, answer on stdout.
//!
//! A worker is the same binary started by the pool (see [`super::is_worker`]);
//! it hashes one file at a time and batches the answers to small files so the
//! parent wakes once per batch. It holds no state besides its read buffer and
//! the last directory it opened, so a worker that dies loses nothing but the
//! files it held, which the pool retries.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use super::wire::{
    read_request, write_response, write_returned, write_streamed, write_waited, Request,
};
use super::{
    ANSWER_AT_ONCE, BATCH_BYTES, MAX_BATCH, RETURN_MIN, WORKER_CORES_ENV, WORKER_DATA_PATH_ENV,
    WORKER_SMALL_BUFFER_ENV, WORKER_STAMPS_ENV,
};
use crate::datapath::DataPath;
use crate::hasher::{self, new_buffer, ReadPolicy, Reading};
use crate::strategy::{DirFd, Job, Outcome};

/// Test hooks (read by workers only, compiled into debug builds only, which
/// is what `cargo test` runs; documented in the tests that use them):
/// abort when asked to hash a path ending with this value...
#[cfg(debug_assertions)]
const HOOK_ABORT: &str = "HASHRACE_TEST_WORKER_ABORT";
/// ...and write its pid to this FIFO once it holds work (tests wait on it).
#[cfg(debug_assertions)]
const HOOK_READY: &str = "HASHRACE_TEST_WORKER_READY";

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
        let code = serve(input, &output, &reading, hooks);
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
    hooks: Hooks,
) -> ExitCode {
    #[cfg(debug_assertions)]
    let mut ready = hooks.ready;
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
        #[cfg(debug_assertions)]
        if let Some(fifo) = ready.take() {
            let pid = format!("{}\n", std::process::id());
            let _ = std::fs::OpenOptions::new()
                .append(true)
                .open(fifo)
                .and_then(|mut f| f.write_all(pid.as_bytes()));
        }
        if let Some(name) = &hooks.abort_on {
            if req.path.as_os_str().as_bytes().ends_with(name.as_bytes()) {
                std::process::abort();
            }
        }
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
        // (then through a reader thread) and then this worker again, and on 12,000
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
        let hash = |request: &hasher::Request<'_>, buf: &mut [u8]| {
            let opened = match hasher::open(request) {
                Ok(opened) => opened,
                Err(e) => return Ok(Err(e)),
            };
            if hand_back && opened.size >= RETURN_MIN {
                return Err(opened.size);
            }
            Ok(hasher::hash_opened(&opened, buf, reading, Some(on_block)).map_err(Into::into))
        };
        let parent = match req.path.parent() {
            Some(p) if !req.follow && !p.as_os_str().is_empty() => p,
            _ => {
                let request = hasher::Request {
                    on_block: Some(on_block),
                    ..hasher::Request::new(&req.path, req.follow, reading)
                };
                return hash(&request, buf);
            }
        };
        if self.fd.is_none() || self.path != parent {
            self.fd = hasher::open_dir(parent)
                .ok()
                .map(|fd| DirFd(std::sync::Arc::new(fd)));
            self.path = parent.to_path_buf();
        }
        let job = Job {
            dir: self.fd.clone(),
            ..Job::new(req.path.clone(), 0, false)
        };
        hash(&job.request(reading, Some(on_block)), buf)
    }
}
