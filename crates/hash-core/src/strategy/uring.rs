//! `hash-async --io uring`: many opens and reads in flight from few threads,
//! with Linux's io_uring.
//!
//! tokio (like Python's asyncio) has no asynchronous file I/O: its files are
//! blocking calls on a thread pool. io_uring is the real thing: a thread
//! queues `openat` and `read` requests in a ring shared with the kernel and
//! collects their completions, so one thread can keep dozens of files waiting
//! for the disk at once. Here each of `workers` threads owns a ring with
//! `MAX_READERS`` / workers` slots (fewer when the open-file limit leaves
//! fewer descriptors: see `slots`); a slot walks one file through
//! open → `fstat` → reads → close and hashes each block as it completes, so
//! hashing stays on the cores while the disk works on the other slots' reads.
//!
//! How many of the slots hold a file at once is the run's depth policy
//! (`crate::inflight`), shared by all rings (`Depth`): on a network file
//! system a controller measured from all the slots down, on a disk that says
//! it spins the cap its seek test drives, where the user fixed one
//! (`--max-in-flight`) that, and elsewhere every slot. A ring always keeps
//! one file, so the rings together never keep fewer than there are rings.
//!
//! On a network or FUSE file system (the `statfs` hint of
//! `crate::inflight`) every request is queued with `IOSQE_ASYNC`. io_uring
//! first tries a request on the submitting thread, expecting it to fail fast
//! with `EAGAIN` where it would wait; FUSE's open (and NFS's) does not: it
//! sends the request to the server and sleeps for the answer right there, so a
//! ring submitting 30 opens sat through 30 round trips one after the other
//! (sshfs at 20 ms: 130 files/s whatever the depth, against 230 for 16
//! threads). Handed straight to the kernel's worker threads, as many as the
//! ring has slots, the round trips overlap as they do for threads. On a local
//! disk the first try usually succeeds (cached data), and punting every
//! request would cost a thread hop each, so it is only done there.
//!
//! The same safety rules as everywhere ([`crate::hasher`]): walked entries are
//! opened `O_NOFOLLOW | O_NONBLOCK` relative to their directory and checked
//! with `fstat` before a byte is read; a path that may be followed (a root, a
//! manifest entry, `-L`) is hashed by the ordinary blocking path, which looks
//! before it opens. The `fstat` and `close` are plain system calls: both are
//! cheap and never wait for the disk here.
//!
//! If io_uring cannot be used (an old kernel, `kernel.io_uring_disabled`, a
//! seccomp filter), [`available`] says why and the caller falls back to the
//! blocking pool.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

use super::order::DiskOrder;
use super::queue::{
    collect, guard, hash_here, own_credentials, own_descriptor_table, test_hook, Batch, Queue, Run,
};
use super::threads::MAX_READERS;
use super::{fewer_threads, spawn_scoped, Job, Outcome, Sink};
use crate::error::ErrorKind;
use crate::hasher::{self, hash, new_buffer, FileDigest, Reading, Running};
use crate::inflight::{Policy, Shared};
use crate::stamp::Stamp;

/// Bytes read per request.
const BLOCK: usize = 64 * 1024;

/// Descriptors the rings leave for everything else (see [`run`]).
const FDS_KEPT: usize = 8;

/// Results a ring thread collects before waking the writer.
const BATCH: usize = 256;

/// Test hook (`test-hooks` feature only): every timed read counts as having waited
/// this many milliseconds for each read served meanwhile, as on a disk that
/// seeks, so that tests can drive the seek test, and the cap it starts, on
/// any disk that says it spins. It gives the seek test exactly this wait,
/// so it does not test how a wait is divided among the reads served.
#[cfg(any(test, feature = "test-hooks"))]
pub(crate) const HOOK_SEEK_MS: &str = "HASHRACE_TEST_SEEK_MS";

/// [`HOOK_SEEK_MS`]'s wait, if set.
fn test_seek() -> Option<Duration> {
    #[cfg(any(test, feature = "test-hooks"))]
    {
        use std::sync::OnceLock;
        static WAIT: OnceLock<Option<Duration>> = OnceLock::new();
        *WAIT.get_or_init(|| {
            let ms = std::env::var(HOOK_SEEK_MS).ok()?.parse().ok()?;
            Some(Duration::from_millis(ms))
        })
    }
    #[cfg(not(any(test, feature = "test-hooks")))]
    None
}

/// Whether io_uring can run the opcodes this module needs; `Err` says why not.
pub fn available() -> Result<(), String> {
    #[cfg(any(test, feature = "test-hooks"))]
    if std::env::var_os("HASHRACE_TEST_NO_URING").is_some() {
        // Test hook (`test-hooks` feature only): behave as a kernel without io_uring.
        return Err("disabled for a test (HASHRACE_TEST_NO_URING)".into());
    }
    let ring = IoUring::new(4).map_err(|e| format!("io_uring_setup: {e}"))?;
    let mut probe = io_uring::Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| format!("io_uring probe: {e}"))?;
    for (code, name) in [
        (opcode::OpenAt::CODE, "openat"),
        (opcode::Read::CODE, "read"),
    ] {
        if !probe.is_supported(code) {
            return Err(format!("io_uring cannot {name} on this kernel"));
        }
    }
    Ok(())
}

/// Files each of `workers` rings keeps in flight. Every slot holds an open
/// file, and so does every ring: they stay within the descriptors left (a
/// low `ulimit -n`), keeping some for the standard streams, mapped files and
/// what the caller opens meanwhile. 0: not one file per ring fits.
/// `fixed`: the user's total (`--max-in-flight`), shared among the rings.
/// Otherwise [`MAX_READERS`] over all rings, as for `hash-threads`' readers,
/// or one per ring where `-j` asks for more rings than that.
pub(super) fn slots(workers: usize, fixed: Option<usize>) -> usize {
    let free = crate::limits::free_descriptors().unwrap_or(usize::MAX);
    let usable = free.saturating_sub(FDS_KEPT + workers) / workers;
    let wanted = match fixed {
        Some(n) => n.div_ceil(workers),
        None => (MAX_READERS / workers).max(1),
    };
    // Under a low `ulimit -v`, the slots' buffers may take a sixteenth of
    // it (the rest of the run needs the room: see [`new_slots`]), unless the
    // user fixed the depth, which is taken as given.
    let room = match (fixed, crate::room::address_space()) {
        (None, Some(limit)) => {
            let blocks = usize::try_from(limit / 16 / BLOCK as u64).unwrap_or(usize::MAX);
            (blocks / workers).max(1)
        }
        _ => usize::MAX,
    };
    wanted.min(usable).min(room)
}

/// The depth all rings keep together: the run's depth policy, if it has
/// one (see [`crate::inflight::Shared::for_run`]), and the files in flight
/// over all rings.
pub(super) struct Depth<'p> {
    pub policy: Option<&'p Shared>,
    total: AtomicUsize,
    /// Reads completed over all rings while reads are timed (see
    /// [`Ring::read_done`]).
    reads: AtomicU64,
    /// Whether a ring has said it got fewer slots than asked.
    said_fewer: AtomicBool,
}

impl<'p> Depth<'p> {
    pub fn new(policy: Option<&'p Shared>) -> Self {
        Depth {
            policy,
            total: AtomicUsize::new(0),
            reads: AtomicU64::new(0),
            said_fewer: AtomicBool::new(false),
        }
    }

    /// Whether a ring holding `held` files may start one more: always its
    /// first (a ring with nothing in flight would end), and more while all
    /// rings together hold fewer than the policy's depth.
    fn admits(&self, held: usize) -> bool {
        held == 0
            || self
                .policy
                .is_none_or(|p| self.total.load(Ordering::Relaxed) < p.target())
    }

    /// Whether reads are timed for the policy: on a disk that says it spins
    /// (a cap), while its seek test wants waits, and once it found that the
    /// disk seeks (the read order goes by reads that wait).
    fn times_reads(&self) -> bool {
        self.policy
            .is_some_and(|p| p.is_cap() && (p.seek_pending() || p.seeking()))
    }
}

/// Hash `files` on `workers` rings of `slots` slots each (see [`slots`]: at
/// least one), keeping in flight what `depth` allows; the `--stats` line of
/// the read order, if files were taken in the disk's order.
pub(super) fn run(
    files: &[Job],
    (workers, slots): (usize, usize),
    depth: &Depth<'_>,
    network: bool,
    reading: &Reading,
    sink: &mut Sink<'_>,
) -> Option<String> {
    let (tx, rx) = mpsc::channel();
    let disk = DiskOrder::for_run(reading.policy().order, depth.policy);
    let queue = Queue::new(files, reading).in_disk_order(disk.as_ref());
    thread::scope(|scope| {
        for started in 0..workers {
            let (queue, tx) = (&queue, tx.clone());
            let ring = move || {
                guard(tx, |tx, batch| {
                    ring_thread(queue, tx, batch, (slots, depth), network)
                })
            };
            if let Err(e) = spawn_scoped(scope, ring) {
                fewer_threads(started, workers, "io_uring threads", &e);
                if started == 0 {
                    return hash_here(queue, sink);
                }
                break;
            }
        }
        // The ring threads hold the only senders now (see `queue`).
        drop(tx);
        collect(&queue, &rx, sink);
    });
    disk.filter(DiskOrder::used).map(|d| d.describe())
}

/// One file on its way through a slot.
struct Slot {
    job: usize,
    /// The name the `openat` request points at (kept alive until it completes).
    name: CString,
    fd: Option<OwnedFd>,
    size: u64,
    /// What `fstat` said of the file when it was opened.
    stamp: Stamp,
    run: Running,
    buf: Box<[u8]>,
    /// When its read was submitted, and the reads completed over all rings
    /// by then (only while reads are timed: see [`Depth::times_reads`]).
    sent: Option<(Instant, u64)>,
}

impl Slot {
    /// A slot with its buffer, or `None` where no memory is left for the
    /// buffer (a low `ulimit -v`): the ring then runs with fewer slots
    /// instead of aborting the run.
    fn new() -> Option<Slot> {
        Some(Slot {
            job: 0,
            name: CString::default(),
            fd: None,
            size: 0,
            stamp: Stamp::default(),
            run: Running::default(),
            buf: zeroed_block()?,
            sent: None,
        })
    }
}

/// A zeroed [`BLOCK`]-byte buffer, or `None` when a `ulimit -v` leaves no
/// room for it (a failed allocation would abort the process). Zeroed, not
/// written: the allocator hands out fresh pages already zero, so a ring's
/// 8 MiB of buffers cost nothing until reads fill them.
fn zeroed_block() -> Option<Box<[u8]>> {
    // `vec![0; n]` asks the allocator for zeroed memory (no write of its own).
    crate::room::leaves_room(BLOCK).then(|| vec![0u8; BLOCK].into_boxed_slice())
}

/// `n` slots, or where memory runs out first, half of those that fitted
/// (rounded up): the other half's memory is left for the rest of the run
/// (its output, the other rings, a blocking read), which would otherwise
/// find none.
fn new_slots(n: usize) -> Vec<Slot> {
    let mut slots: Vec<Slot> = (0..n).map_while(|_| Slot::new()).collect();
    if slots.len() < n {
        slots.truncate(slots.len().div_ceil(2));
    }
    slots
}

/// A ring's slots. Their names and buffers are the kernel's while requests
/// on them are in flight, so if the thread unwinds (a bug: see
/// `queue::guard`) they are leaked, never freed under the kernel.
struct Slots(Vec<Slot>);

impl Drop for Slots {
    fn drop(&mut self) {
        if thread::panicking() {
            std::mem::forget(std::mem::take(&mut self.0));
        }
    }
}

impl std::ops::Deref for Slots {
    type Target = [Slot];
    fn deref(&self) -> &[Slot] {
        &self.0
    }
}

impl std::ops::DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut [Slot] {
        &mut self.0
    }
}

/// What a request's `user_data` says: the slot, and whether it was the open.
fn tag(slot: usize, open: bool) -> u64 {
    (slot as u64) << 1 | u64::from(open)
}

/// Hash files from `queue` through one ring until it is empty; what is left
/// in `batch` at the end is sent by [`guard`].
fn ring_thread(
    queue: &Queue<'_>,
    tx: &mpsc::Sender<Batch>,
    batch: &mut Batch,
    (nslots, depth): (usize, &Depth<'_>),
    network: bool,
) {
    // Before the ring: its requests open files in this thread's table.
    own_descriptor_table();
    own_credentials();
    let _hashing = queue.reading.hashing();
    batch.reserve(BATCH);
    let slots = new_slots(nslots);
    // Said once for all rings, as for threads that cannot start.
    if slots.len() < nslots && !depth.said_fewer.swap(true, Ordering::Relaxed) {
        let k = slots.len();
        let how = match k {
            0 => "this ring's files are read one at a time".to_owned(),
            k => format!("running with {k}"),
        };
        crate::show!("could start only {k} of {nslots} io_uring slots (out of memory); {how}");
    }
    let nslots = slots.len();
    let ring = match (nslots > 0).then(|| IoUring::new((2 * nslots) as u32)) {
        Some(Ok(ring)) => ring,
        _ => {
            // `available` said yes a moment ago (say, memory for the ring
            // ran out): hash this thread's share the blocking way.
            hash_rest_blocking(queue, &mut Run::default(), batch, &mut new_buffer());
            let _ = tx.send(std::mem::take(batch));
            return;
        }
    };
    if network {
        // Reads of regular files go to the ring's bounded workers, at most
        // 4 per CPU by default: allow one per slot. Without it (an old
        // kernel) the depth is only lower; nothing else changes.
        let n = nslots as u32;
        let _ = ring.submitter().register_iowq_max_workers(&mut [n, n]);
    }
    let mut ring = Ring {
        queue,
        tx,
        ring,
        slots: Slots(slots),
        free: (0..nslots).rev().collect(),
        in_flight: 0,
        depth,
        unsent: Vec::new(),
        draining: false,
        plain_buf: None,
        limit: 2,
        run: Run::default(),
        flags: if network {
            io_uring::squeue::Flags::ASYNC
        } else {
            io_uring::squeue::Flags::empty()
        },
    };
    let mut done = Vec::new();
    loop {
        ring.start_files(batch);
        let flush = batch.len() >= BATCH || (ring.in_flight == 0 && !batch.is_empty());
        if flush {
            ring.send(batch);
        }
        if ring.in_flight == 0 {
            return;
        }
        let reaped = match ring.submit() {
            Ok(reaped) => reaped,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return ring.fail(&e, batch),
        };
        done.clear();
        done.extend(ring.ring.completion().map(|c| (c.user_data(), c.result())));
        for &(data, res) in &done {
            let (s, open) = ((data >> 1) as usize, data & 1 == 1);
            if let Some(reaped) = reaped.filter(|_| !open) {
                ring.read_done(s, reaped);
            }
            ring.completed(s, open, res, batch);
        }
        if queue.reading.stopped() {
            ring.draining = true;
        }
    }
}

/// Hash every file nobody has taken yet, and those `run` holds, the
/// blocking way, into `batch`.
fn hash_rest_blocking(queue: &Queue<'_>, run: &mut Run, batch: &mut Batch, buf: &mut [u8]) {
    while let Some(i) = queue.next_in(run) {
        batch.push((i, hash(&queue.files[i].request(queue.reading, None), buf)));
    }
}

/// One ring thread's state: the ring, its slots, and what is in flight.
struct Ring<'q, 'e> {
    queue: &'q Queue<'e>,
    tx: &'q mpsc::Sender<Batch>,
    ring: IoUring,
    slots: Slots,
    /// Slots holding no file.
    free: Vec<usize>,
    in_flight: usize,
    /// What all rings keep in flight together.
    depth: &'q Depth<'q>,
    /// Slots whose read was queued since the last submission (only while
    /// reads are timed).
    unsent: Vec<usize>,
    /// Set once nobody wants results: take no new files, finish the rest.
    draining: bool,
    /// The buffer for files hashed the blocking way (made when first needed).
    plain_buf: Option<hasher::Buffer>,
    /// Files in flight at most, for now (see [`Ring::start_files`]).
    limit: usize,
    /// The files claimed at once and not yet started.
    run: Run,
    /// `IOSQE_ASYNC` on a network file system (see the module's doc).
    flags: io_uring::squeue::Flags,
}

impl Ring<'_, '_> {
    /// Queue a request made by [`Ring::open`] or [`Ring::completed`]: an
    /// `openat` of a slot's name, or a `read` into a slot's buffer.
    fn push(&mut self, entry: &io_uring::squeue::Entry) {
        // SAFETY: the request points only at its slot's name or buffer,
        // which the slot keeps, untouched, until the request completes: a
        // slot is reused only after its completion, and slots are leaked,
        // never freed, if the thread unwinds or the ring fails (`Slots`,
        // `Ring::fail`). The queue has an entry for every slot.
        unsafe {
            self.ring
                .submission()
                .push(entry)
                .expect("a free entry per slot")
        };
    }

    /// Deliver `batch` to the writer; a writer gone means: drain.
    fn send(&mut self, batch: &mut Batch) {
        let full = std::mem::replace(batch, Vec::with_capacity(BATCH));
        if self.tx.send(full).is_err() {
            self.draining = true;
        }
    }

    /// Give free slots a file, up to `limit` in flight: sizes are not known
    /// before the open, and a ring that filled all its slots at once could
    /// claim every large file of a tree and hash them alone while the other
    /// rings idle. Small files raise the limit, a large one (hashed right
    /// here) lowers it again.
    fn start_files(&mut self, batch: &mut Batch) {
        while !self.draining && self.in_flight < self.limit && self.depth.admits(self.in_flight) {
            let Some(&s) = self.free.last() else { break };
            let Some(i) = self.queue.next_in(&mut self.run) else {
                break;
            };
            let job = &self.queue.files[i];
            test_hook(job);
            if job.follow || job.path.file_name().is_none() {
                // Roots, manifest entries, `-L`: the blocking path looks before
                // it opens, which a queued `openat` cannot.
                let buf = self.plain_buf.get_or_insert_with(hasher::Buffer::small);
                batch.push((i, hash(&job.request(self.queue.reading, None), buf)));
                if batch.len() >= BATCH || self.in_flight == 0 {
                    // Deliver what is done (`| head` should not wait for the
                    // thread's whole share of command-line files).
                    self.send(batch);
                }
                continue;
            }
            self.free.pop();
            self.open(s, i);
        }
    }

    /// Queue the `openat` of job `i` in slot `s`, relative to its directory.
    fn open(&mut self, s: usize, i: usize) {
        let job = &self.queue.files[i];
        let dir = job.dir.as_ref().map(|d| d.0.as_raw_fd());
        let name = match (dir, job.path.file_name()) {
            (Some(_), Some(name)) => name.as_bytes(),
            _ => job.path.as_os_str().as_bytes(),
        };
        let Ok(name) = CString::new(name) else {
            unreachable!("paths from the walk have no NUL")
        };
        let slot = &mut self.slots[s];
        slot.job = i;
        slot.name = name;
        slot.size = 0; // until the open says (a FIFO must not leave the last size)
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let open =
            opcode::OpenAt::new(types::Fd(dir.unwrap_or(libc::AT_FDCWD)), slot.name.as_ptr())
                .flags(flags)
                .build()
                .flags(self.flags)
                .user_data(tag(s, true));
        self.push(&open);
        self.in_flight += 1;
        self.depth.total.fetch_add(1, Ordering::Relaxed);
    }

    /// Submit what is queued and wait for a completion. Where reads are
    /// timed, also when the completions were reaped and whether the ring
    /// had to wait for them: completions there right after a plain
    /// submission did not (cached reads complete inside it), those that
    /// came while the ring slept for at least [`hasher::DISK_WAIT`] did.
    fn submit(&mut self) -> io::Result<Option<(Instant, bool)>> {
        if !self.depth.times_reads() {
            self.unsent.clear();
            self.ring.submit_and_wait(1)?;
            return Ok(None);
        }
        let now = Instant::now();
        let reads = self.depth.reads.load(Ordering::Relaxed);
        for s in self.unsent.drain(..) {
            self.slots[s].sent = Some((now, reads));
        }
        self.ring.submit()?;
        if !self.ring.completion().is_empty() {
            return Ok(Some((Instant::now(), test_seek().is_some())));
        }
        let before = Instant::now();
        self.ring.submit_and_wait(1)?;
        let now = Instant::now();
        let waited = now.duration_since(before) >= hasher::DISK_WAIT;
        Ok(Some((now, waited || test_seek().is_some())))
    }

    /// The read of slot `s` completed (`reaped`: when, and whether the ring
    /// waited for it): if it waited, tell the policy how long the disk took
    /// per read meanwhile. A ring keeps many reads queued at once, so a
    /// read's wait is a queue's: divided by the reads completed from its
    /// submission to its completion (itself included, over all rings), it
    /// is the time the disk took per read (a seek on a spinning disk, a
    /// fraction of a millisecond on flash or virtio), the figure a thread's
    /// lone blocking read gives the seek test.
    fn read_done(&mut self, s: usize, (now, waited): (Instant, bool)) {
        let reads = self.depth.reads.fetch_add(1, Ordering::Relaxed) + 1;
        let (Some((sent, then)), Some(policy)) = (self.slots[s].sent.take(), self.depth.policy)
        else {
            return;
        };
        let served = reads.saturating_sub(then).clamp(1, u64::from(u32::MAX)) as u32;
        let wait = test_seek().map_or(now.duration_since(sent), |w| w * served);
        if waited && wait >= hasher::DISK_WAIT {
            let total = self.depth.total.load(Ordering::Relaxed);
            policy.waited(wait / served, total);
        }
    }

    /// The request of slot `s` (its open, or a read) completed with `res`.
    fn completed(&mut self, s: usize, open: bool, res: i32, batch: &mut Batch) {
        let finished = if open {
            self.open_completed(s, res)
        } else {
            read(&mut self.slots[s], res, self.queue.reading)
        };
        let slot = &mut self.slots[s];
        let Some(outcome) = finished else {
            let fd = slot.fd.as_ref().expect("open").as_raw_fd();
            let read = opcode::Read::new(types::Fd(fd), slot.buf.as_mut_ptr(), BLOCK as u32)
                .offset(slot.run.size())
                .build()
                .flags(self.flags)
                .user_data(tag(s, false));
            self.push(&read);
            if self.depth.times_reads() {
                self.unsent.push(s);
            }
            return;
        };
        slot.fd = None; // close
        slot.sent = None;
        if let Some(policy) = self.depth.policy {
            policy.completed(1, outcome.as_ref().map_or(0, |d| d.size));
        }
        batch.push((slot.job, outcome));
        self.free.push(s);
        self.in_flight -= 1;
        self.depth.total.fetch_sub(1, Ordering::Relaxed);
    }

    /// The open of slot `s` completed: `Some` when the file is done with (an
    /// error, or a large file hashed here), `None` when its first read is due.
    fn open_completed(&mut self, s: usize, res: i32) -> Option<Outcome> {
        let slot = &mut self.slots[s];
        if res == -libc::ENAMETOOLONG {
            // Over PATH_MAX: the blocking path opens it a directory at a time.
            let job = &self.queue.files[slot.job];
            let buf = self.plain_buf.get_or_insert_with(hasher::Buffer::small);
            return Some(hash(&job.request(self.queue.reading, None), buf));
        }
        let outcome = opened(slot, res).or_else(|| {
            // A large file is hashed here, through mapped windows
            // with the kernel's readahead (see `crate::mapped`):
            // 64 KiB reads one at a time would crawl on cold data.
            (slot.size >= hasher::MAP_MIN).then(|| {
                let file = File::from(slot.fd.take().expect("open"));
                let opened = hasher::Opened {
                    file,
                    size: slot.size,
                    stamp: slot.stamp,
                    _counted: None,
                };
                let buf = self.plain_buf.get_or_insert_with(hasher::Buffer::small);
                Ok(hasher::hash_opened(&opened, buf, self.queue.reading, None)?)
            })
        });
        if res >= 0 {
            self.run.hashed(slot.size);
        }
        if res >= 0 && slot.size >= hasher::MAP_MIN {
            self.limit = 2;
        } else {
            self.limit = (self.limit + 1).min(self.slots.len());
        }
        outcome
    }

    /// The ring itself failed: no completion will come. Report what the
    /// slots held, never reading into their buffers again (they are leaked,
    /// as the kernel may still own them), and hash the files nobody has
    /// taken yet the blocking way: the other rings may have ended already.
    fn fail(mut self, e: &io::Error, batch: &mut Batch) {
        for s in (0..self.slots.len()).filter(|s| !self.free.contains(s)) {
            let job = self.slots[s].job;
            batch.push((job, Err(io::Error::other(e.to_string()).into())));
            self.depth.total.fetch_sub(1, Ordering::Relaxed);
        }
        std::mem::forget(std::mem::take(&mut self.slots.0));
        let buf = self.plain_buf.get_or_insert_with(hasher::Buffer::small);
        hash_rest_blocking(self.queue, &mut self.run, batch, buf);
        let _ = self.tx.send(std::mem::take(batch));
    }
}

fn errno(res: i32) -> ErrorKind {
    io::Error::from_raw_os_error(-res).into()
}

/// The `openat` completed: check what was opened, and ask for the first block.
/// `Some` when the file is done with (an error).
fn opened(slot: &mut Slot, res: i32) -> Option<Outcome> {
    if res == -libc::ELOOP {
        // The walk saw a regular file; now it is a link.
        return Some(Err(ErrorKind::NotRegular));
    }
    if res < 0 {
        return Some(Err(errno(res)));
    }
    // SAFETY: a successful openat returns a new descriptor that nobody else owns.
    let file = unsafe { File::from_raw_fd(res) };
    match hasher::checked_file(file) {
        Ok(hasher::Opened {
            file, size, stamp, ..
        }) => {
            // O_NONBLOCK kept a FIFO from blocking the open; for a regular
            // file it would only make some filesystems answer EAGAIN.
            // We opened it O_RDONLY|O_NONBLOCK (O_NOFOLLOW and O_CLOEXEC are
            // not status flags), so clearing every status flag clears just
            // O_NONBLOCK, with one call instead of a get and a set.
            let _ = rustix::fs::fcntl_setfl(&file, rustix::fs::OFlags::empty());
            slot.fd = Some(file.into());
            slot.size = size;
            slot.stamp = stamp;
            slot.run = Running::default();
            None
        }
        Err(e) => Some(Err(e)),
    }
}

/// A read completed: hash it; `Some` when the file is done.
fn read(slot: &mut Slot, mut res: i32, reading: &Reading) -> Option<Outcome> {
    if res == -libc::EINTR || res == -libc::EAGAIN {
        // A filesystem without non-blocking reads (FUSE, 9p, ...) may answer
        // EAGAIN every time: asking the ring again would spin forever, so
        // this block is read the ordinary way.
        let fd = slot.fd.as_ref().expect("open");
        res = loop {
            match rustix::io::pread(fd, &mut slot.buf[..], slot.run.size()) {
                Ok(n) => break n as i32,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => break -e.raw_os_error(),
            }
        };
    }
    if res < 0 {
        return Some(Err(errno(res)));
    }
    let n = res as usize;
    if let Err(e) = slot.run.feed(&slot.buf[..n], reading) {
        return Some(Err(e.into()));
    }
    // The end: a read of 0, or a short one that reaches the size fstat gave
    // (see `hasher::hash_opened`).
    if n == 0 || (n < BLOCK && slot.run.size() == slot.size) {
        let fd = slot.fd.as_ref().expect("open");
        if let Err(e) = crate::mapped::ended_early(fd, slot.run.size(), slot.size) {
            return Some(Err(e.into()));
        }
        let digest = std::mem::take(&mut slot.run).finish();
        if !reading.policy().stamps {
            return Some(Ok(digest));
        }
        let fd = slot.fd.as_ref().expect("open").as_fd();
        let held = crate::stamp::Held::after(slot.stamp, fd);
        return Some(Ok(FileDigest { held, ..digest }));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rings_keep_at_most_what_threads_would_read_at_once() {
        let free = crate::limits::free_descriptors();
        for workers in [1, 2, 3, 7, 64, 100, 129, 300, 1000] {
            let slots = slots(workers, None);
            assert!(
                slots * workers <= MAX_READERS.max(workers),
                "{workers} rings of {slots} slots"
            );
            // Every ring keeps a file, where the descriptors allow one each
            // (with room to spare: other tests open files meanwhile).
            if free.is_some_and(|free| free > FDS_KEPT + 3 * workers) {
                assert!(slots >= 1, "{workers} rings of no slot");
            }
        }
        // Where the open-file limit allows, the default's two rings keep
        // 128 between them.
        if free.is_some_and(|free| free > 2 * MAX_READERS + FDS_KEPT) {
            assert_eq!(slots(2, None) * 2, MAX_READERS);
        }
    }
}
