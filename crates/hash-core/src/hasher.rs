//! Hash one file: open it safely, stream it through SHA-256 with a reused buffer.
//!
//! Every strategy ends up here, so this is where the safety rules live:
//! - Open with `O_NONBLOCK`: if a FIFO has replaced a regular file between the
//!   walk and the open, opening it for reading must not wait for a writer.
//! - Check with `fstat` on the opened descriptor (not the path) that it is a
//!   regular file; anything else is reported, never read. A path that may
//!   lead anywhere (`follow`) is also `stat`ed before it is opened, so a device
//!   named in a manifest is not even opened.
//! - Without `-L`, open walked entries with `O_NOFOLLOW`, so a file replaced by
//!   a symbolic link is reported rather than silently followed.
//! - Read into the caller's buffer, so memory is bounded by the number of
//!   workers and no file is ever read whole.

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::datapath::{Chooser, DataPath};
use crate::error::ErrorKind;
use crate::stamp::{Held, Stamp};
use crate::striped::Striped;

/// Size of each worker's read buffer. Large enough that syscall overhead is
/// negligible next to hashing (~1.3 GB/s per core), small enough to stay in L2.
pub const READ_BUF_SIZE: usize = 256 * 1024;

/// Files at least this large get `POSIX_FADV_SEQUENTIAL` (a larger readahead
/// window for cold data); for small files the extra syscall is not worth it.
const SEQUENTIAL_HINT_MIN: u64 = 4 * 1024 * 1024;

/// A read that takes this long waited for a disk (a page-cache hit takes a
/// few microseconds, even when `RWF_NOWAIT` refused it because a page was
/// briefly locked).
pub(crate) const DISK_WAIT: std::time::Duration = std::time::Duration::from_micros(100);

/// How files are read, whatever the strategy: a policy the engine is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadPolicy {
    /// How large files already in the page cache reach SHA-256 (see
    /// [`crate::datapath`]); `--no-mmap` is [`DataPath::Read`]. Mapping also
    /// needs the binary to have installed the `SIGBUS` handler
    /// ([`crate::mapped::catch_sigbus`]); without it files are read.
    pub path: DataPath,
    /// Whether each digest carries what `fstat` said of its file when it was
    /// opened and after its last byte ([`FileDigest::held`]): what the
    /// metadata cache records, and how it tells a file that moved while it
    /// was read. Off, no `fstat` is made for it (the field is there either
    /// way; the writer and check mode park only the digest and the size).
    pub stamps: bool,
    /// The order files are read in (see [`crate::strategy::order`]).
    pub order: ReadOrder,
}

/// The order a run reads its files in, as the command line asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReadOrder {
    /// The planned order, or the disk's order on a disk found to seek.
    #[default]
    Auto,
    /// The planned order: path order, or largest first when sizes are known.
    Planned,
    /// Always the disk's order, chunk by chunk.
    Disk,
}

/// What the hashers of one run share: the read policy, the flag that stops
/// the run, and the counts kept while reading. One per run (never a
/// process-wide static), so two runs in one process cannot see each other.
#[derive(Debug, Default)]
pub struct Reading {
    policy: ReadPolicy,
    /// Which way large cached files go, measured during the run when the
    /// policy leaves it open.
    pub(crate) chooser: Chooser,
    /// Set by somebody who no longer wants results: hashing stops between
    /// two files and in the middle of one, so a huge file is not finished
    /// for nobody.
    stop: AtomicBool,
    /// Bytes fed to SHA-256 so far. Progress samples it so that a single huge
    /// file still shows movement. Striped: one add per read of a small file
    /// on one shared line was a line passed between the cores per file.
    bytes: Striped,
    /// Threads hashing, or waiting for files to hash (see [`Hashing`]).
    hashers: AtomicUsize,
    /// Helper threads of large files (mapping or reading ahead) running.
    ahead: AtomicUsize,
    /// Whether a large file's data was found not to be in the page cache:
    /// the run reads from the disk (the progress line's hint for what its
    /// small files will cost before any has been read).
    uncached: AtomicBool,
    /// Whether a large cached file took the data path (mapped or read by
    /// [`crate::datapath`]'s choice): on a network file system none does,
    /// whatever `--data-path` asked.
    took_data_path: AtomicBool,
    cores: std::sync::OnceLock<usize>,
}

impl Reading {
    /// The shared state of a run that reads by `policy`.
    pub fn new(policy: ReadPolicy) -> Reading {
        Reading {
            policy,
            chooser: Chooser::new(policy.path),
            ..Reading::default()
        }
    }

    /// The way large cached files went, once known (see
    /// [`crate::datapath`]), and the timed segments that decided it; no way
    /// when no file took one.
    pub fn data_path(&self) -> (Option<crate::datapath::Way>, crate::datapath::Samples) {
        let took = self.took_data_path.load(Ordering::Relaxed);
        let way = self.chooser.decided().filter(|_| took);
        (way, self.chooser.samples())
    }

    /// The policy this run reads by.
    pub fn policy(&self) -> ReadPolicy {
        self.policy
    }

    /// Stop the run: nobody wants more results.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether [`Reading::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Bytes this run's hashers have fed to SHA-256 so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes.get()
    }

    /// Count `n` bytes fed to SHA-256 for this run somewhere else (by a
    /// `hash-procs` worker), so that progress sees them as they stream.
    pub(crate) fn add_streamed(&self, n: u64) {
        self.bytes.add(n);
    }

    /// Count only `n` CPUs as this run's (a `hash-procs` worker's share of
    /// the machine), before anything asked how many there are.
    pub(crate) fn set_cores(&self, n: usize) {
        let _ = self.cores.set(n.max(1));
    }

    /// Whether a large file's data had to come from the disk.
    pub fn saw_uncached(&self) -> bool {
        self.uncached.load(Ordering::Relaxed)
    }

    /// Count the calling thread as one of the run's hashers while the
    /// returned guard lives.
    pub fn hashing(&self) -> Hashing<'_> {
        self.hashers.fetch_add(1, Ordering::Relaxed);
        Hashing(self)
    }

    fn cores(&self) -> usize {
        *self
            .cores
            .get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
    }
}

/// The SHA-256 of one file and the number of bytes that went into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileDigest {
    /// The raw 32-byte digest.
    pub digest: [u8; 32],
    /// Bytes read (the file's size at the time it was read).
    pub size: u64,
    /// The file's metadata when opened and after it was read, when the read
    /// policy asks for it ([`ReadPolicy::stamps`]) and `fstat` gave it.
    pub held: Option<Held>,
}

impl FileDigest {
    /// The digest as 64 lowercase hex digits.
    pub fn hex(&self) -> String {
        hex(&self.digest)
    }
}

/// Lowercase hex of some bytes (`--json`, tree digests, manifests; output
/// lines use [`hex_digits`]).
pub fn hex(bytes: &[u8]) -> String {
    ::hex::encode(bytes)
}

/// A digest's 64 lowercase hex digits, on the stack: an output line takes no
/// allocation for them. Building a `String` per line was 2.4 % of
/// `hash-serial`'s samples on 12,000 warm files of 3 KiB (`perf record`).
pub fn hex_digits(digest: &[u8; 32]) -> [u8; 64] {
    let mut text = [0; 64];
    // Cannot fail: 64 bytes are exactly two digits for each of 32.
    let _ = ::hex::encode_to_slice(digest, &mut text);
    text
}

/// Alignment and size of the allocation behind a [`ReadBuf`]: one huge page.
const BUF_ALLOC: usize = 2 * 1024 * 1024;

/// A worker's reusable read buffer of [`READ_BUF_SIZE`] bytes.
///
/// Why not a plain `Vec`: measured on this project's VMs, `read()` into an
/// ordinary 256 KiB heap buffer ran at 1.2–1.8 GiB/s from page cache for the
/// whole run in some processes and ~5 GiB/s in others, depending only on which
/// memory the allocator handed out (guest memory returned to the host comes
/// back slower). A 2 MiB-aligned allocation advised with `MADV_HUGEPAGE` ran at
/// ~5 GiB/s every time, so every worker gets one of those (2 MiB each).
pub struct ReadBuf {
    /// An anonymous mapping of two huge pages' worth, so that one whole
    /// 2 MiB-aligned huge page lies inside it whatever address it got.
    map: memmap2::MmapMut,
    /// Offset of that aligned page in `map`.
    start: usize,
}

impl ReadBuf {
    /// Allocate a buffer (zeroed, as every anonymous mapping is); fails
    /// when the address space is exhausted, or nearly (a low `ulimit -v`:
    /// see [`crate::room::leaves_room`]).
    pub fn new() -> io::Result<ReadBuf> {
        if !crate::room::leaves_room(2 * BUF_ALLOC) {
            return Err(io::Error::from_raw_os_error(libc::ENOMEM));
        }
        let map = memmap2::MmapOptions::new().len(2 * BUF_ALLOC).map_anon()?;
        let start = (BUF_ALLOC - map.as_ptr() as usize % BUF_ALLOC) % BUF_ALLOC;
        // Failing only costs speed: it is advice.
        let _ = map.advise_range(memmap2::Advice::HugePage, start, BUF_ALLOC);
        Ok(ReadBuf { map, start })
    }
}

impl std::fmt::Debug for ReadBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBuf").finish_non_exhaustive()
    }
}

impl std::ops::Deref for ReadBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.start..self.start + READ_BUF_SIZE]
    }
}

impl std::ops::DerefMut for ReadBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.start..self.start + READ_BUF_SIZE]
    }
}

/// A fresh read buffer of a hashing worker: a [`ReadBuf`], or a small one
/// where no address space is left for it (a low `ulimit -v`): slower, never
/// wrong.
pub fn new_buffer() -> Buffer {
    ReadBuf::new().map_or_else(|_| Buffer::small(), Buffer::Huge)
}

/// Size of the buffer of a reader added only to keep more reads in flight
/// (see [`Buffer::Small`]).
pub const SMALL_BUF_SIZE: usize = 64 * 1024;

/// A worker's read buffer: the huge-page one of a hashing worker, or a small
/// plain one for the extra readers a pool adds while files wait for the disk.
/// Those only matter for small cold files, where the disk, not the copy, is
/// the limit; 64 of them cost 4 MiB instead of 128.
#[derive(Debug)]
pub enum Buffer {
    /// A [`ReadBuf`] (2 MiB of memory, [`READ_BUF_SIZE`] used).
    Huge(ReadBuf),
    /// [`SMALL_BUF_SIZE`] bytes on the heap.
    Small(Box<[u8]>),
}

impl Buffer {
    /// A small buffer.
    pub fn small() -> Buffer {
        Buffer::Small(vec![0; SMALL_BUF_SIZE].into_boxed_slice())
    }
}

impl std::ops::Deref for Buffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buffer::Huge(b) => b,
            Buffer::Small(b) => b,
        }
    }
}

impl std::ops::DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Buffer::Huge(b) => b,
            Buffer::Small(b) => b,
        }
    }
}

/// An open regular file and the size `fstat` gave it.
#[derive(Debug)]
pub struct Opened {
    /// The file, open for reading.
    pub file: File,
    /// Its size when opened: lets the read loop stop without a last `read`
    /// that returns 0 (one system call of five per small file).
    pub size: u64,
    /// What `fstat` said of it when opened.
    pub stamp: Stamp,
    /// Counts it, while it lives, among the files [`open`] opened (those
    /// the io_uring rings open are not counted: they never wait in `open`).
    pub(crate) _counted: Option<Counted>,
}

/// Files the hashers hold open, over every thread of the process (see
/// [`open`]: an open that finds no descriptor left waits while any is).
/// Striped: counted twice per file, it is read only when descriptors run out.
static FILES_OPEN: Striped = Striped::new();

/// One of [`FILES_OPEN`], until dropped.
#[derive(Debug)]
pub(crate) struct Counted(());

impl Counted {
    /// Count one more file open.
    pub(crate) fn new() -> Counted {
        FILES_OPEN.add(1);
        Counted(())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        FILES_OPEN.sub(1);
    }
}

/// Open `path` for hashing: non-blocking, regular files only, following a
/// final symbolic link only when `follow` is set. A path longer than the
/// kernel resolves at once (`PATH_MAX`) is opened in its parent directory,
/// which is opened one component at a time ([`open_dir`]).
fn open_path(path: &Path, follow: bool) -> Result<Opened, ErrorKind> {
    match open_path_at(rustix::fs::CWD, path, follow) {
        Err(ErrorKind::Io(e)) if e.raw_os_error() == Some(Errno::NAMETOOLONG.raw_os_error()) => {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                return Err(e.into());
            };
            // A bare name too long for the kernel stays too long in `.`.
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            let dir = open_dir(parent)?;
            open_path_at(dir.as_fd(), Path::new(name), follow)
        }
        res => res,
    }
}

/// [`open_path`] of `path` relative to `dir`.
fn open_path_at(dir: BorrowedFd<'_>, path: &Path, follow: bool) -> Result<Opened, ErrorKind> {
    use rustix::fs::{statat, AtFlags, FileType};
    if follow {
        // A path that may lead anywhere (a root, a manifest entry, `-L`) is
        // looked at before it is opened: opening some devices has side effects.
        // The fstat below still catches a swap between the two calls.
        let st = statat(dir, path, AtFlags::empty()).map_err(io::Error::from)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            // What `sha256sum` says of a directory.
            FileType::Directory => return Err(io::Error::from(Errno::ISDIR).into()),
            _ => return Err(ErrorKind::NotRegular),
        }
    }
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    match rustix::fs::openat(dir, path, flags, Mode::empty()) {
        Ok(fd) => checked_file(File::from(fd)),
        // O_NOFOLLOW reports a symbolic link as ELOOP; the walk saw a regular
        // file here, so the honest reason is that the entry changed type.
        Err(Errno::LOOP) if !follow => Err(ErrorKind::NotRegular),
        Err(e) => Err(io::Error::from(e).into()),
    }
}

/// Open the directory `path`, however long: a path the kernel refuses as
/// too long (`ENAMETOOLONG`, over `PATH_MAX`) is opened one component at a
/// time, each relative to the last, as the kernel would resolve it.
pub fn open_dir(path: &Path) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{open, openat, CWD};
    use std::path::Component;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    match open(path, flags, Mode::empty()) {
        Err(Errno::NAMETOOLONG) => {}
        res => return res.map_err(Into::into),
    }
    let mut dir: Option<std::os::fd::OwnedFd> = None;
    for part in path.components() {
        let name: &OsStr = match part {
            Component::RootDir => "/".as_ref(),
            Component::CurDir => continue,
            Component::ParentDir => "..".as_ref(),
            Component::Normal(name) => name,
            Component::Prefix(_) => unreachable!("no prefixes on Unix"),
        };
        let next = match &dir {
            Some(d) => openat(d, name, flags, Mode::empty()),
            None => openat(CWD, name, flags, Mode::empty()),
        };
        dir = Some(next?);
    }
    match dir {
        Some(dir) => Ok(dir),
        None => Ok(open(".", flags, Mode::empty())?),
    }
}

/// Open `name` in the directory `dir` (a walked entry: never following a final
/// link), with the same rules as `open_path`. Opening relative to the
/// parent's descriptor skips the lookup of every ancestor, which is most of
/// the cost of opening a small file by its full path.
pub fn open_in(dir: BorrowedFd<'_>, name: &OsStr) -> Result<Opened, ErrorKind> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => checked_file(File::from(fd)),
        Err(Errno::LOOP) => Err(ErrorKind::NotRegular),
        Err(e) => Err(io::Error::from(e).into()),
    }
}

/// Check an opened file as `open_path` does: a regular file (with the
/// sequential hint when large), its size and stamp.
pub fn checked_file(file: File) -> Result<Opened, ErrorKind> {
    use rustix::fs::FileType;
    // fstat, not std's statx(fd, "", AT_EMPTY_PATH): no empty-path lookup.
    let st = rustix::fs::fstat(&file).map_err(io::Error::from)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        // What `sha256sum` says of a directory.
        FileType::Directory => return Err(io::Error::from(Errno::ISDIR).into()),
        _ => return Err(ErrorKind::NotRegular),
    }
    let size = st.st_size as u64;
    if size >= SEQUENTIAL_HINT_MIN {
        // A failure is harmless: it is a hint.
        let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Sequential);
    }
    Ok(Opened {
        size,
        file,
        stamp: Stamp::of(&st),
        _counted: None,
    })
}

/// A digest being computed. Every read path feeds its bytes through here, so
/// cancellation, the byte count and the progress counter are handled once.
#[derive(Debug, Default)]
pub(crate) struct Running {
    hasher: Sha256,
    size: u64,
}

impl Running {
    /// Bytes hashed so far (the offset of the next read).
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Hash `bytes`, unless the run was stopped (then `Interrupted`): nobody
    /// wants the result of a huge file any more.
    pub(crate) fn feed(&mut self, bytes: &[u8], reading: &Reading) -> io::Result<()> {
        self.feed_by(bytes, reading, |h, b| h.update(b))
    }

    /// [`Running::feed`] for bytes hashed where they are mapped: in pieces,
    /// the page four ahead asked for first (see [`crate::mapped::in_pieces`]).
    fn feed_mapped(&mut self, bytes: &[u8], reading: &Reading) -> io::Result<()> {
        self.feed_by(bytes, reading, |h, b| {
            crate::mapped::in_pieces(b, |piece| h.update(piece))
        })
    }

    fn feed_by(
        &mut self,
        bytes: &[u8],
        reading: &Reading,
        hash: impl FnOnce(&mut Sha256, &[u8]),
    ) -> io::Result<()> {
        if reading.stopped() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
        }
        hash(&mut self.hasher, bytes);
        self.size += bytes.len() as u64;
        reading.bytes.add(bytes.len() as u64);
        Ok(())
    }

    /// The digest of everything fed.
    pub(crate) fn finish(self) -> FileDigest {
        FileDigest {
            digest: self.hasher.finalize().into(),
            size: self.size,
            held: None,
        }
    }
}

/// Stream everything `reader` yields through SHA-256, reusing `buf`.
pub fn hash_reader(mut reader: impl Read, buf: &mut [u8]) -> io::Result<FileDigest> {
    let (mut run, reading) = (Running::default(), Reading::default());
    loop {
        match reader.read(buf) {
            Ok(0) => return Ok(run.finish()),
            Ok(n) => run.feed(&buf[..n], &reading)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// How one file is to be hashed: everything but the buffer.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// The file's path (its last component is opened in `dir` when given).
    pub path: &'a Path,
    /// The walked parent directory, open, if the walk kept it.
    pub dir: Option<BorrowedFd<'a>>,
    /// Whether a final symbolic link may be followed.
    pub follow: bool,
    /// The run's shared state: its read policy, stop flag and counts.
    pub reading: &'a Reading,
    /// Called (at most once per file) when the data is not in the page cache,
    /// just before a read that will wait for the disk: lets a pool put
    /// another reader to work meanwhile. `None`: nobody cares, read plainly.
    pub on_block: Option<&'a dyn OnBlock>,
}

/// What a read that waits for the disk tells the strategy that made it
/// ([`Request::on_block`]). A closure taking the wait is one that never
/// asks for a probe.
pub trait OnBlock {
    /// A file's read waited `wait` for the disk (heard at most once a file).
    fn waited(&self, wait: std::time::Duration);

    /// Whether the next file that waits should first read one page alone, so
    /// that its wait is the disk's latency rather than a transfer: a depth
    /// policy that asks whether the disk seeks needs latencies (see
    /// [`crate::inflight::SeekTest`]). A large file's first read otherwise
    /// waits for its readahead too, which on a host whose `read_ahead_kb` is
    /// 8 MiB took 2.4–5.3 ms on a virtio disk whose 4 KiB reads take a
    /// fraction of one, and the disk was taken for one that seeks.
    fn probe(&self) -> bool {
        false
    }
}

impl<F: Fn(std::time::Duration)> OnBlock for F {
    fn waited(&self, wait: std::time::Duration) {
        self(wait)
    }
}

/// Bytes of a probe (see [`OnBlock::probe`]): one page.
const PROBE: usize = 4096;

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("path", &self.path)
            .field("dir", &self.dir)
            .field("follow", &self.follow)
            .field("reading", &self.reading)
            .field("on_block", &self.on_block.is_some())
            .finish()
    }
}

impl<'a> Request<'a> {
    /// A plain request of a run: no directory, no blocking hook.
    pub fn new(path: &'a Path, follow: bool, reading: &'a Reading) -> Self {
        Request {
            path,
            dir: None,
            follow,
            reading,
            on_block: None,
        }
    }
}

/// Open and hash the file `req` names into `buf`.
pub fn hash(req: &Request<'_>, buf: &mut [u8]) -> Result<FileDigest, ErrorKind> {
    Ok(hash_opened(&open(req)?, buf, req.reading, req.on_block)?)
}

/// Open the file `req` names, with the checks [`hash`] makes before it reads
/// (a caller may look at its size first: see `strategy::procs`).
///
/// An open that fails for want of descriptors (`EMFILE`, `ENFILE`: a low
/// `ulimit -n`, a depth the user set above it, a network file system that
/// holds every reader's file open for round trips) is tried again while
/// other files are open (or being opened) for hashing, since one of them
/// closes soon; a failure with none, or after [`DESCRIPTORS_WAIT`], is the
/// file's error. Without this, on sshfs under `ulimit -n 20`, `hash-threads
/// --max-in-flight 17` reported most of 308 files as "Too many open files".
pub fn open(req: &Request<'_>) -> Result<Opened, ErrorKind> {
    let mut pause = std::time::Duration::from_micros(100);
    let mut waited = std::time::Duration::ZERO;
    loop {
        // Counted while it opens too: on a network file system an open and
        // its `fstat` take round trips, and a thread that found no
        // descriptor must see those opening as holding one.
        // Once open, the file keeps the same count.
        let opening = Counted::new();
        let res = match (req.dir, req.path.file_name()) {
            (Some(dir), Some(name)) if !req.follow => open_in(dir, name),
            _ => open_path(req.path, req.follow),
        };
        let e = match res {
            Ok(opened) => {
                return Ok(Opened {
                    _counted: Some(opening),
                    ..opened
                })
            }
            Err(ErrorKind::Io(e)) => e,
            Err(other) => return Err(other),
        };
        let out_of_descriptors = [Errno::MFILE, Errno::NFILE]
            .iter()
            .any(|n| e.raw_os_error() == Some(n.raw_os_error()));
        if !out_of_descriptors
            || FILES_OPEN.get() <= 1
            || waited >= DESCRIPTORS_WAIT
            || req.reading.stopped()
        {
            return Err(ErrorKind::Io(e));
        }
        drop(opening);
        std::thread::sleep(pause);
        waited += pause;
        pause = (pause * 2).min(std::time::Duration::from_millis(20));
    }
}

/// The longest an open waits for a descriptor (see [`open`]): long enough
/// for a file being read over a slow link to close, short enough that a run
/// whose descriptors never come back still ends.
const DESCRIPTORS_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// With the `test-hooks` feature only: with `HASHRACE_TEST_STAMP_DELAY_MS` set, wait that
/// long between a file's open (and first stamp) and its first byte, so
/// that a test can change it while it is being read, however fast it reads;
/// with `HASHRACE_TEST_STAMPED_DIR` too, first say so there (an empty file
/// named `stamped-SIZE`), so that the test waits on an event, not a clock,
/// and go on as soon as the test removes that file again.
fn stamp_delay_hook(size: u64) {
    #[cfg(any(test, feature = "test-hooks"))]
    {
        static DELAY: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
        let delay = DELAY.get_or_init(|| {
            let ms = std::env::var("HASHRACE_TEST_STAMP_DELAY_MS").ok()?;
            ms.parse().ok()
        });
        if let Some(ms) = delay {
            let limit = std::time::Duration::from_millis(*ms);
            let Some(dir) = std::env::var_os("HASHRACE_TEST_STAMPED_DIR") else {
                std::thread::sleep(limit);
                return;
            };
            // Until the test removes the file (it has done what it wanted to do
            // meanwhile), or the delay is over.
            let said = Path::new(&dir).join(format!("stamped-{size}"));
            let _ = File::create(&said);
            let start = std::time::Instant::now();
            while said.exists() && start.elapsed() < limit {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
    #[cfg(not(any(test, feature = "test-hooks")))]
    let _ = size;
}

/// Files at least this large are hashed through memory-mapped windows
/// ([`crate::mapped`]): no copy out of the page cache.
pub const MAP_MIN: u64 = 1024 * 1024;

/// Marks a thread as one of the run's hashers while it lives. A large file
/// gets a thread that maps its windows ahead of the hasher only while
/// hashers and those threads together leave a core free: with every core
/// hashing already, it would just take turns with them.
/// Made by [`Reading::hashing`].
#[derive(Debug)]
pub struct Hashing<'r>(&'r Reading);

impl Drop for Hashing<'_> {
    fn drop(&mut self) {
        self.0.hashers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Half of what a file must have left for the read-ahead thread to be worth
/// starting, and for the [`Mapper`] to map it in windows of
/// [`WINDOW`](crate::mapped::WINDOW) rather than [`SHORT_WINDOW`].
const AHEAD_WINDOW: usize = 8 * 1024 * 1024;

/// A helper of a large file (mapping or reading ahead of the hasher),
/// counted while it works on the file; see [`Hashing`].
struct Ahead<'r>(&'r Reading);

impl Drop for Ahead<'_> {
    fn drop(&mut self) {
        self.0.ahead.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A helper thread's place, when hashers and helpers together leave a core
/// free: with every core hashing already, it would just take turns with them.
/// Whether [`spare_core`] would give a helper now, without taking one.
fn core_to_spare(reading: &Reading) -> bool {
    let ahead = reading.ahead.load(Ordering::Relaxed);
    reading.hashers.load(Ordering::Relaxed).max(1) + ahead < reading.cores()
}

fn spare_core(reading: &Reading) -> Option<Ahead<'_>> {
    let ahead = reading.ahead.fetch_add(1, Ordering::Relaxed);
    let guard = Ahead(reading);
    (reading.hashers.load(Ordering::Relaxed).max(1) + ahead < reading.cores()).then_some(guard)
}

/// Hash one mapped window, unless pages were lost under it, and hand it
/// back to be unmapped where that costs least.
fn take(
    run: &mut Running,
    window: crate::mapped::Window,
    opened: &Opened,
    reading: &Reading,
) -> io::Result<crate::mapped::Window> {
    run.feed_mapped(window.bytes(), reading)?;
    if !window.intact() {
        return Err(crate::mapped::fault_error(&opened.file, opened.size));
    }
    Ok(window)
}

/// Map and hash the next `len` bytes of `opened` on this thread, in windows
/// of at most `window` (populated at once or filled by faults: see
/// [`crate::mapped::Window::map`]); `Ok(false)` as soon as one cannot be
/// mapped (the rest is then read).
fn map_here(
    run: &mut Running,
    opened: &Opened,
    len: u64,
    window: usize,
    reading: &Reading,
    populate: bool,
) -> io::Result<bool> {
    use crate::mapped::{will_need, Window};
    let end = run.size() + len;
    while run.size() < end {
        let offset = run.size();
        let n = window.min((end - offset) as usize);
        let Some(w) = Window::map(&opened.file, offset, n, populate) else {
            return Ok(false);
        };
        will_need(&opened.file, offset + n as u64, window);
        drop(take(run, w, opened, reading)?);
    }
    Ok(true)
}

/// Map and hash the next `len` bytes of `opened` on this thread, as [`map_here`], and
/// return the thread's CPU time it took: the hashing (with the faults of a window not
/// populated), and `share` (0 to 1) of the mapping and unmapping. `None` as soon as a
/// window cannot be mapped.
fn map_timed(
    run: &mut Running,
    opened: &Opened,
    len: u64,
    reading: &Reading,
    share: f64,
    populate: bool,
) -> io::Result<Option<std::time::Duration>> {
    use crate::datapath::{thread_time, SEGMENT};
    use crate::mapped::{will_need, Window};
    let end = run.size() + len;
    let mut took = std::time::Duration::ZERO;
    while run.size() < end {
        let offset = run.size();
        let n = (SEGMENT as usize).min((end - offset) as usize);
        let mapping = thread_time();
        let Some(w) = Window::map(&opened.file, offset, n, populate) else {
            return Ok(None);
        };
        will_need(&opened.file, offset + n as u64, SEGMENT as usize);
        let hashing = thread_time();
        let w = take(run, w, opened, reading)?;
        let hashed = thread_time();
        drop(w);
        let mapped = hashing.saturating_sub(mapping) + thread_time().saturating_sub(hashed);
        took += hashed.saturating_sub(hashing) + mapped.mul_f64(share);
    }
    Ok(Some(took))
}

/// Read and hash the next `len` bytes of `opened` into `buf` (fewer if the
/// file ends first).
fn read_here(
    run: &mut Running,
    opened: &Opened,
    buf: &mut [u8],
    len: u64,
    reading: &Reading,
) -> io::Result<()> {
    let end = run.size() + len;
    while run.size() < end {
        let want = buf.len().min((end - run.size()) as usize);
        match rustix::io::pread(&opened.file, &mut buf[..want], run.size()) {
            Ok(0) => break,
            Ok(n) => run.feed(&buf[..n], reading)?,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Hash a large, mappable file whose start is in the page cache, the way the run's
/// [`crate::datapath::Chooser`] says; while it is still measuring, in timed
/// segments that take turns. A file that grew is read on to a read of 0.
fn hash_cached(opened: &Opened, buf: &mut [u8], reading: &Reading) -> io::Result<FileDigest> {
    use crate::datapath::{Way, SEGMENT};
    reading.took_data_path.store(true, Ordering::Relaxed);
    let size = opened.size;
    let mut run = Running::default();
    let way = loop {
        let decided = reading.chooser.decided();
        if decided == Some(Way::Read) || run.size() >= size {
            break Way::Read;
        }
        if let Some(way) = decided {
            break way;
        }
        let way = reading.chooser.next_sample();
        let len = SEGMENT.min(size - run.size());
        let before = run.size();
        let took = if way != Way::Read {
            // Timed as the run's next files of this size would run (`map_rest` from
            // their start): with a core to spare, more than a `SHORT_WINDOW` in the
            // file and a mapper not refused, the hasher maps and unmaps the first
            // `SHORT_WINDOW` and its mapper the rest, so the hasher is charged that
            // share of the page-table work, wherever in the file the segment lies.
            // Charging all of it to 8 MiB files made the way a coin toss for
            // `hash-serial` on them (0.65 against 0.66 ms per MiB), though reading
            // them took 8 % longer (AMD EPYC family 25 model 17). Faults are taken
            // by the hasher itself (a mapper would only move them), so they are all
            // charged.
            let populate = way == Way::Map;
            let helper = populate
                && core_to_spare(reading)
                && size > SHORT_WINDOW as u64
                && !mapper_refused();
            let share = if helper {
                SHORT_WINDOW as f64 / size as f64
            } else {
                1.0
            };
            match map_timed(&mut run, opened, len, reading, share, populate)? {
                Some(took) => took,
                None => break Way::Read,
            }
        } else {
            // The read way's copy stays on the hasher: it is what puts the bytes in this
            // core's L2 (a read-ahead helper saves the copy but hands over bytes another
            // core wrote, which is no cheaper to hash).
            let start = crate::datapath::thread_time();
            read_here(&mut run, opened, buf, len, reading)?;
            crate::datapath::thread_time().saturating_sub(start)
        };
        reading.chooser.record(way, run.size() - before, took);
        if run.size() - before < len {
            // The file ended early (it shrank): read on to the end, as
            // `sha256sum` would; mapping past the end would fault.
            break Way::Read;
        }
    };
    match way {
        Way::Map => map_rest(&mut run, opened, reading)?,
        // A window that cannot be mapped leaves the rest to `read_on`.
        Way::MapFault => {
            let left = size.saturating_sub(run.size());
            map_here(
                &mut run,
                opened,
                left,
                crate::mapped::WINDOW,
                reading,
                false,
            )?;
        }
        Way::Read => read_rest(&mut run, opened, reading)?,
    }
    read_on(run, opened, buf, reading, None)
}

/// Hash the rest of a mapped file window by window (see [`crate::mapped`]),
/// as far as windows can be mapped.
///
/// Filling a window's page-table entries (`MAP_POPULATE`) costs ~10 % of
/// hashing it, and tearing its page table down again a few per cent more.
/// When a core is free and more than one [`SHORT_WINDOW`] is left, the hashing
/// thread's [`Mapper`] maps the windows ahead and unmaps those hashed, so the
/// hasher only hashes (the kernel still flushes its TLB when a window is
/// unmapped): windows of [`SHORT_WINDOW`] while at most two [`AHEAD_WINDOW`]s
/// are left, of [`WINDOW`](crate::mapped::WINDOW) when more are.
fn map_rest(run: &mut Running, opened: &Opened, reading: &Reading) -> io::Result<()> {
    use crate::mapped::WINDOW;
    let left = opened.size.saturating_sub(run.size());
    // A thread whose mapper could not be started takes no spare core for it.
    if left > SHORT_WINDOW as u64 && !mapper_refused() {
        if let Some(_ahead) = spare_core(reading) {
            let window = if left <= 2 * AHEAD_WINDOW as u64 {
                SHORT_WINDOW
            } else {
                WINDOW
            };
            return map_ahead(run, opened, window, reading);
        }
    }
    map_here(run, opened, left, WINDOW, reading, true).map(drop)
}

/// Whether this thread's [`Mapper`] could not be started (one not tried yet is
/// not refused).
fn mapper_refused() -> bool {
    MAPPER.with(|m| matches!(*m.borrow(), Some(None)))
}

/// Windows of a file of a few MiB mapped by the hashing thread's [`Mapper`],
/// and the first window of every file it maps, which the hasher maps itself.
const SHORT_WINDOW: usize = 2 * 1024 * 1024;

/// One file's windows for a [`Mapper`] to map: a duplicate of its descriptor
/// (the hasher may close its own as soon as it stops waiting), where to start
/// and end, the windows' size, and where to send each window (`None`: it
/// could not be mapped).
struct MapJob {
    file: std::os::fd::OwnedFd,
    at: u64,
    end: u64,
    window: usize,
    out: std::sync::mpsc::SyncSender<Option<crate::mapped::Window>>,
}

/// A thread that maps the windows of a hashing thread's files ahead of it
/// and unmaps those it hashed, kept from file to file: for files of a few
/// MiB, a thread started and joined for each file cost what its page tables
/// saved. With the sending channel's room for one, at most three windows
/// are mapped at once: one hashed, one ready, one being mapped. On a
/// 2-vCPU AMD EPYC guest (family 25 model 17), `hash-serial` on warm 8 MiB
/// files (`shards`) took 341.7 ms without a helper and 341.3 ms with a
/// thread per file, 355.0 → 330.7 ms with this one; on 6 MiB files (`six`)
/// 167.2 → 157.3 ms (interleaved rounds). It waits on its channel between
/// files, and ends when the hashing thread does (its thread-local drops the
/// senders) or with the process. The last windows of a file come back after
/// its job has ended: they are unmapped when the next job starts, or when the
/// thread ends. Unmapping them as soon as the hasher is done with the file (a
/// return channel per job) cost `hash-serial` 0.7 % on `shards` and 1.4 % on
/// `six` (15 and 25 interleaved rounds): the unmap then meets the hasher
/// mapping the next file's first window.
struct Mapper {
    jobs: std::sync::mpsc::Sender<MapJob>,
    done: std::sync::mpsc::Sender<crate::mapped::Window>,
}

impl Mapper {
    fn start() -> Option<Mapper> {
        use crate::mapped::{will_need, Window};
        let (jobs, job_rx) = std::sync::mpsc::channel::<MapJob>();
        let (done, done_rx) = std::sync::mpsc::channel::<Window>();
        crate::limits::thread_builder()
            .spawn(move || {
                while let Ok(job) = job_rx.recv() {
                    let mut at = job.at;
                    while at < job.end {
                        done_rx.try_iter().for_each(drop);
                        // Windows end on a multiple of their size (where huge
                        // pages would map whole), wherever the job starts.
                        let len = (job.window - (at % job.window as u64) as usize)
                            .min((job.end - at) as usize);
                        will_need(&job.file, at + len as u64, job.window);
                        let window = Window::map(&job.file, at, len, true);
                        let failed = window.is_none();
                        if job.out.send(window).is_err() || failed {
                            break;
                        }
                        at += len as u64;
                    }
                    done_rx.try_iter().for_each(drop);
                }
            })
            .ok()?;
        Some(Mapper { jobs, done })
    }
}

thread_local! {
    /// This thread's [`Mapper`]: `None` until the first file it maps ahead,
    /// then the mapper, or `Some(None)` if the thread could not be started
    /// (not tried again: its files are mapped by the hasher alone).
    static MAPPER: std::cell::RefCell<Option<Option<Mapper>>> =
        const { std::cell::RefCell::new(None) };
}

/// Hash the rest of a file: this thread maps and hashes the first
/// [`SHORT_WINDOW`] while its [`Mapper`] maps the others, `window` bytes at a
/// time.
fn map_ahead(
    run: &mut Running,
    opened: &Opened,
    window: usize,
    reading: &Reading,
) -> io::Result<()> {
    use crate::mapped::WINDOW;
    let size = opened.size;
    let first = SHORT_WINDOW as u64;
    let at = run.size() + first;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let done = MAPPER.with(|m| {
        let mut m = m.borrow_mut();
        let mapper = m.get_or_insert_with(Mapper::start).as_ref()?;
        let file = opened.file.as_fd().try_clone_to_owned().ok()?;
        mapper
            .jobs
            .send(MapJob {
                file,
                at,
                end: size,
                window,
                out: tx,
            })
            .ok()?;
        Some(mapper.done.clone())
    });
    let Some(done) = done else {
        return map_here(run, opened, size - run.size(), WINDOW, reading, true).map(drop);
    };
    if !map_here(run, opened, first, SHORT_WINDOW, reading, true)? {
        return Ok(());
    }
    while run.size() < size {
        // A window that could not be mapped: the rest is read later.
        let Some(mapped) = rx.recv().ok().flatten() else {
            break;
        };
        let _ = done.send(take(run, mapped, opened, reading)?);
    }
    Ok(())
}

/// Buffers a read-ahead thread fills while the hasher hashes: one being
/// read, one being hashed (measured best: more of them, or larger ones, fell
/// out of the caches before they were hashed).
const READ_AHEAD_BUFFERS: usize = 2;

/// Hash the rest of a cached file read into L2-sized buffers. When a core is
/// free, a thread beside the hasher does the reading (the copy out of the
/// page cache), so the hasher only hashes; otherwise the caller reads on.
fn read_rest(run: &mut Running, opened: &Opened, reading: &Reading) -> io::Result<()> {
    let size = opened.size;
    let left = size.saturating_sub(run.size());
    let Some(_ahead) = spare_core(reading).filter(|_| left > 2 * AHEAD_WINDOW as u64) else {
        return Ok(());
    };
    type Filled = io::Result<(Buffer, usize)>;
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Filled>(READ_AHEAD_BUFFERS);
        let (free_tx, free_rx) = std::sync::mpsc::channel::<Buffer>();
        for _ in 0..READ_AHEAD_BUFFERS {
            let _ = free_tx.send(new_buffer());
        }
        let file = &opened.file;
        let mut at = run.size();
        let reader = crate::limits::thread_builder().spawn_scoped(scope, move || {
            while let Ok(mut buf) = free_rx.recv() {
                let want = buf.len().min(size.saturating_sub(at) as usize);
                let res = loop {
                    match rustix::io::pread(file, &mut buf[..want], at) {
                        Err(Errno::INTR) => continue,
                        r => break r,
                    }
                };
                let end = matches!(res, Ok(0) | Err(_));
                if let Ok(n) = res {
                    at += n as u64;
                }
                if full_tx
                    .send(res.map(|n| (buf, n)).map_err(io::Error::from))
                    .is_err()
                    || end
                {
                    return;
                }
            }
        });
        if reader.is_err() {
            return Ok(());
        }
        while run.size() < size {
            let Ok(filled) = full_rx.recv() else { break };
            let (buf, n) = filled?;
            if n == 0 {
                break;
            }
            run.feed(&buf[..n], reading)?;
            let _ = free_tx.send(buf);
        }
        Ok(())
    })
}

/// Hash an opened file: a large one whose start is in the page cache by
/// [`hash_cached`], any other with positioned reads into `buf`.
///
/// The read loop stops at the first short read that brings the total to the size
/// `fstat` reported: a regular file returns fewer bytes than asked only at its
/// end, so the final `read` returning 0 is skipped. A file that is shorter
/// than it claimed (or grows) is still read to a `read` of 0, as before.
///
/// With `on_block`, reads first try `RWF_NOWAIT`: data in the page cache is
/// returned at no extra cost. When it is not, the read is made again,
/// blocking, and if that took at least [`DISK_WAIT`] and the thread slept in
/// it ([`sleeps`]) the hook hears that this file waited for the disk (once
/// per file), whatever its size: more
/// readers help cold 8 MiB files too (measured: cold shards-quick took 17 %
/// longer when only files under 1 MiB could add readers).
pub fn hash_opened(
    opened: &Opened,
    buf: &mut [u8],
    reading: &Reading,
    on_block: Option<&dyn OnBlock>,
) -> io::Result<FileDigest> {
    // Network and FUSE files are neither mapped nor read ahead by a thread:
    // their reads tell the pool when they wait (`on_block`), which is what
    // keeps enough requests in flight there.
    stamp_delay_hook(opened.size);
    let large = opened.size >= MAP_MIN && crate::mapped::mappable(&opened.file);
    let digest = if large && cached(opened) {
        hash_cached(opened, buf, reading)?
    } else {
        if large {
            reading.uncached.store(true, Ordering::Relaxed);
        }
        read_on(Running::default(), opened, buf, reading, on_block)?
    };
    // Every way reads on to a read of 0 when it is short of the size: the same
    // outcome whichever way a file took.
    crate::mapped::ended_early(&opened.file, digest.size, opened.size)?;
    Ok(stamped(digest, opened, reading))
}

/// `digest`, of `opened`, with the file's stamps when the policy asks for
/// them (see [`ReadPolicy::stamps`]).
pub fn stamped(digest: FileDigest, opened: &Opened, reading: &Reading) -> FileDigest {
    if !reading.policy.stamps {
        return digest;
    }
    FileDigest {
        held: Held::after(opened.stamp, opened.file.as_fd()),
        ..digest
    }
}

/// Whether the start of a file is in the page cache (a one-page `RWF_NOWAIT`
/// read). Mapped windows or a read-ahead thread pay only when the data is
/// there; on a cold file the faults of `MAP_POPULATE` read it in smaller
/// pieces than `read()` with the sequential readahead hint (measured: cold
/// shards at 948 MiB/s mapped, against 1.44 GiB/s for two plain readers), so
/// cold files are read.
fn cached(opened: &Opened) -> bool {
    use rustix::io::{preadv2, ReadWriteFlags};
    let mut probe = [0u8; 1];
    let mut iov = [io::IoSliceMut::new(&mut probe)];
    !matches!(
        preadv2(&opened.file, &mut iov, 0, ReadWriteFlags::NOWAIT),
        Err(Errno::AGAIN)
    )
}

/// How often the calling thread has gone to sleep (its voluntary context
/// switches). A read that waited for a disk slept; one that took long only
/// because the thread was preempted (two hashers and the writer taking turns
/// on two cores) did not, and must not add a reader: on a warm tree of a
/// million files those preemptions, in the rare reads `RWF_NOWAIT` refuses
/// (0.2 % here), grew the pool to its limit of 128 threads.
fn sleeps() -> i64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(0, |u| u.voluntary_context_switches())
}

/// Read and hash `opened` from where `run` stands to a read of 0 (see
/// [`hash_opened`]).
fn read_on(
    mut run: Running,
    opened: &Opened,
    buf: &mut [u8],
    reading: &Reading,
    on_block: Option<&dyn OnBlock>,
) -> io::Result<FileDigest> {
    use rustix::io::{pread, preadv2, ReadWriteFlags};
    let mut nowait = on_block;
    loop {
        let size = run.size();
        let res = match nowait {
            Some(hook) => {
                let mut iov = [io::IoSliceMut::new(buf)];
                match preadv2(&opened.file, &mut iov, size, ReadWriteFlags::NOWAIT) {
                    Err(Errno::AGAIN) => {
                        // Not cached, or only briefly locked (page migration
                        // says EAGAIN too): the blocking read tells which.
                        nowait = None;
                        // A probe reads one page of a larger file first; the
                        // loop reads on from there.
                        let probe = opened.size.saturating_sub(size) > PROBE as u64
                            && buf.len() > PROBE
                            && hook.probe();
                        let want = if probe { PROBE } else { buf.len() };
                        let (start, slept) = (std::time::Instant::now(), sleeps());
                        let res = pread(&opened.file, &mut buf[..want], size);
                        let waited = start.elapsed();
                        if waited >= DISK_WAIT && sleeps() > slept {
                            hook.waited(waited);
                        }
                        res
                    }
                    // An old kernel or a filesystem without it: read plainly.
                    Err(Errno::OPNOTSUPP | Errno::INVAL | Errno::NOSYS) => {
                        nowait = None;
                        continue;
                    }
                    r => r,
                }
            }
            None => pread(&opened.file, &mut *buf, size),
        };
        match res {
            Ok(0) => break,
            Ok(n) => {
                run.feed(&buf[..n], reading)?;
                if n < buf.len() && run.size() == opened.size {
                    break;
                }
            }
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(run.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_file(path: &Path, follow: bool, buf: &mut [u8]) -> Result<FileDigest, ErrorKind> {
        hash(&Request::new(path, follow, &Reading::default()), buf)
    }

    /// Pseudo-random bytes (xorshift), so block boundaries carry distinct data.
    fn noise(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Sizes around every boundary of the read paths: the first short block
    /// of the pipeline, its 2 MiB blocks, the pipeline threshold, the plain
    /// buffer.
    fn awkward_sizes() -> Vec<usize> {
        let mib2 = BUF_ALLOC;
        vec![
            0,
            1,
            READ_BUF_SIZE - 1,
            READ_BUF_SIZE,
            READ_BUF_SIZE + 1,
            mib2 + READ_BUF_SIZE,
            MAP_MIN as usize - 1,
            MAP_MIN as usize,
            crate::mapped::WINDOW - 1,
            crate::mapped::WINDOW + 4097,
            READ_BUF_SIZE + 2 * mib2,
            READ_BUF_SIZE + 2 * mib2 + 1,
            3 * mib2 - 1,
        ]
    }

    #[test]
    fn a_read_buffer_is_zeroed_and_starts_a_huge_page() {
        for _ in 0..4 {
            let mut buf = ReadBuf::new().unwrap();
            assert_eq!(buf.len(), READ_BUF_SIZE);
            assert_eq!(buf.as_ptr() as usize % (2 << 20), 0, "2 MiB-aligned");
            assert!(buf.iter().all(|&b| b == 0));
            buf.fill(7); // writable to the end
            assert_eq!(buf[READ_BUF_SIZE - 1], 7);
        }
    }

    #[test]
    fn every_read_path_gives_the_in_memory_digest() {
        let dir = tempfile::tempdir().unwrap();
        crate::mapped::catch_sigbus();
        let never = Reading::default();
        let hook_calls = AtomicUsize::new(0);
        let hook = |_| {
            hook_calls.fetch_add(1, Ordering::Relaxed);
        };
        // Past the measured segments and long enough for a helper thread.
        let long = 3 * crate::datapath::SEGMENT as usize + 2 * AHEAD_WINDOW + 12_345;
        let sizes = awkward_sizes().into_iter().chain([long]);
        for (k, size) in sizes.enumerate() {
            let data = noise(size, k as u64 + 1);
            let path = dir.path().join(format!("f{k}"));
            std::fs::write(&path, &data).unwrap();
            // The oracle: the sha2 crate over the bytes in memory, no I/O.
            let want: [u8; 32] = Sha256::digest(&data).into();
            let opened = open_path(&path, false).unwrap();
            assert_eq!(opened.size, size as u64);
            let mut buf = new_buffer();
            let plain = hash_opened(&opened, &mut buf, &never, None).unwrap();
            let nowait = hash_opened(&opened, &mut buf, &never, Some(&hook)).unwrap();
            let mut small = Buffer::small();
            let small = hash_opened(&opened, &mut small, &never, Some(&hook)).unwrap();
            let read = read_on(Running::default(), &opened, &mut buf, &never, None).unwrap();
            let mut ways = vec![];
            for path in [
                DataPath::Auto,
                DataPath::Map,
                DataPath::MapFault,
                DataPath::Read,
            ] {
                // A fresh run each time, so `auto` measures inside this file.
                let run = Reading::new(ReadPolicy {
                    path,
                    ..ReadPolicy::default()
                });
                let got = hash_cached(&opened, &mut buf, &run).unwrap();
                ways.push((path.name(), got));
            }
            let fixed = [
                ("plain", plain),
                ("nowait", nowait),
                ("small", small),
                ("read", read),
            ];
            for (how, got) in fixed.into_iter().chain(ways) {
                assert_eq!(got.digest, want, "{how}, {size} bytes");
                assert_eq!(got.size, size as u64, "{how}, {size} bytes");
            }
        }
    }

    /// `data` written to `path`, evicted from the page cache and opened;
    /// `None` (said on stderr) where the filesystem keeps evicted pages.
    fn evicted(path: &Path, data: &[u8]) -> Option<Opened> {
        std::fs::write(path, data).unwrap();
        let f = File::open(path).unwrap();
        f.sync_all().unwrap();
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        let opened = open_path(path, false).unwrap();
        if first_page_resident(&opened.file) {
            eprintln!("skipped: this filesystem keeps evicted pages (tmpfs?)");
            return None;
        }
        Some(opened)
    }

    /// Whether the first page of `file` is in the page cache, asked of `mincore`.
    /// Asking with a `RWF_NOWAIT` read ([`cached`]) starts a readahead, which could
    /// bring the page in before the test reads it: the probe test then saw a cached
    /// file and no probe (6 of 12 runs on a 2-vCPU guest while two more cold-file
    /// tests ran beside it; none of 12 without them).
    fn first_page_resident(file: &File) -> bool {
        let mut page = [0u8; 1];
        crate::mapped::resident(file, 0, 1, &mut page).unwrap();
        page[0] & 1 == 1
    }

    #[test]
    fn a_cold_large_file_is_read_and_gives_the_in_memory_digest() {
        let dir = tempfile::tempdir().unwrap();
        let data = noise(3 * 1024 * 1024 + 5, 11);
        let Some(opened) = evicted(&dir.path().join("cold"), &data) else {
            return;
        };
        let got = hash_opened(&opened, &mut new_buffer(), &Reading::default(), None).unwrap();
        let want: [u8; 32] = Sha256::digest(&data).into();
        assert_eq!(got.digest, want);
        assert_eq!(got.size, data.len() as u64);
    }

    #[test]
    fn files_mapped_ahead_by_one_mapper_give_the_in_memory_digest() {
        let dir = tempfile::tempdir().unwrap();
        crate::mapped::catch_sigbus();
        // Two cores for the run, whatever this machine has, so that a core is
        // spare for the mapper; several files on this thread, so that one
        // mapper serves them in turn.
        let reading = Reading::new(ReadPolicy {
            path: DataPath::Map,
            ..ReadPolicy::default()
        });
        reading.set_cores(2);
        let sizes = [
            SHORT_WINDOW + 1,
            2 * SHORT_WINDOW,
            5 * SHORT_WINDOW / 2 + 12_345,
            2 * AHEAD_WINDOW,
            // Beyond two windows ahead: windows of `WINDOW`.
            2 * AHEAD_WINDOW + PROBE + 7,
            3 * AHEAD_WINDOW + SHORT_WINDOW / 2,
        ];
        for (k, size) in sizes.into_iter().enumerate() {
            let data = noise(size, 40 + k as u64);
            let path = dir.path().join(format!("m{k}"));
            std::fs::write(&path, &data).unwrap();
            let opened = open_path(&path, false).unwrap();
            let mut run = Running::default();
            map_rest(&mut run, &opened, &reading).unwrap();
            let got = read_on(run, &opened, &mut new_buffer(), &reading, None).unwrap();
            let want: [u8; 32] = Sha256::digest(&data).into();
            assert_eq!(got.digest, want, "{size} bytes");
            assert_eq!(got.size, size as u64);
        }
        assert!(
            MAPPER.with(|m| matches!(*m.borrow(), Some(Some(_)))),
            "a mapper was started"
        );
    }

    /// A hook that asks for probes and counts what it hears.
    #[derive(Default)]
    struct Probing {
        asked: AtomicUsize,
    }

    impl OnBlock for Probing {
        fn waited(&self, _wait: std::time::Duration) {}

        fn probe(&self) -> bool {
            self.asked.fetch_add(1, Ordering::Relaxed);
            true
        }
    }

    #[test]
    fn a_cold_file_read_after_a_one_page_probe_gives_the_in_memory_digest() {
        let dir = tempfile::tempdir().unwrap();
        // A page and a byte (the least a probe is made for), a size that ends
        // inside the probe's buffer, and one past several buffers.
        for (k, size) in [PROBE + 1, 3 * PROBE + 7, 3 * READ_BUF_SIZE + 12_345]
            .into_iter()
            .enumerate()
        {
            let data = noise(size, 20 + k as u64);
            let want: [u8; 32] = Sha256::digest(&data).into();
            // The page can come back between the eviction and the read (on a busy
            // 2-vCPU guest it did, once in a CI run): then no probe is due. Evicted
            // afresh up to three times, a read of it must probe exactly once in one.
            let mut probes = Vec::new();
            for _ in 0..3 {
                let Some(opened) = evicted(&dir.path().join(format!("cold{k}")), &data) else {
                    return;
                };
                let hook = Probing::default();
                let got = read_on(
                    Running::default(),
                    &opened,
                    &mut new_buffer(),
                    &Reading::default(),
                    Some(&hook),
                )
                .unwrap();
                assert_eq!(got.digest, want, "{size} bytes");
                assert_eq!(got.size, size as u64);
                probes.push(hook.asked.load(Ordering::Relaxed));
                if probes.last() == Some(&1) {
                    break;
                }
            }
            assert!(probes.iter().all(|&n| n <= 1), "{size} bytes: {probes:?}");
            assert_eq!(probes.last(), Some(&1), "{size} bytes: {probes:?}");
        }
    }

    #[test]
    fn a_file_that_shrinks_under_its_mapping_is_an_error_not_a_crash() {
        // Populated at once, or filled by faults as it is hashed.
        for populate in [true, false] {
            shrinks_under_its_mapping(populate);
        }
    }

    fn shrinks_under_its_mapping(populate: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, noise(2 * 1024 * 1024, 3)).unwrap();
        let opened = open_path(&path, false).unwrap();
        crate::mapped::catch_sigbus();
        let window =
            crate::mapped::Window::map(&opened.file, 0, 2 * 1024 * 1024, populate).unwrap();
        assert!(window.intact());
        // Another writer truncates the file while it is mapped: touching the
        // lost pages raises SIGBUS, which must not kill us.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        // Hashed as every mapped window is (in pages, pages ahead requested):
        // the lost pages are noticed and reported, not hashed as zeros.
        let err = take(
            &mut Running::default(),
            window,
            &opened,
            &Reading::default(),
        )
        .expect_err("the lost pages were noticed");
        assert!(
            err.to_string().contains("shrank"),
            "{err} (populate: {populate})"
        );
        // Hashing it now sees the new size; a fresh mapping is intact.
        let d = hash_file(&path, false, &mut new_buffer()).unwrap();
        assert_eq!(d.size, 4096);
    }

    fn digest_hex(data: &[u8]) -> String {
        let mut buf = vec![0; 7]; // tiny buffer: exercises the chunk loop
        hash_reader(data, &mut buf).unwrap().hex()
    }

    #[test]
    fn both_hex_encoders_give_two_lowercase_digits_per_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let by_format: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&all), by_format);
        for (i, chunk) in all.chunks_exact(32).enumerate() {
            let digest: [u8; 32] = chunk.try_into().unwrap();
            assert_eq!(
                hex_digits(&digest)[..],
                by_format.as_bytes()[i * 64..][..64]
            );
        }
        let abc = Sha256::digest(b"abc");
        assert_eq!(
            hex_digits(&abc.into()),
            *b"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    // FIPS 180-2 / NIST CSHA256 published test vectors.
    #[test]
    fn published_vectors() {
        assert_eq!(
            digest_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            digest_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            digest_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let million_a = vec![b'a'; 1_000_000];
        let mut buf = new_buffer();
        assert_eq!(
            hash_reader(&million_a[..], &mut buf).unwrap().hex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn read_buffers_are_zeroed_and_exactly_read_buf_size() {
        let mut b = new_buffer();
        assert_eq!(b.len(), READ_BUF_SIZE);
        assert!(b.iter().all(|&x| x == 0));
        b[READ_BUF_SIZE - 1] = 7;
        assert_eq!(b[READ_BUF_SIZE - 1], 7);
    }

    #[test]
    fn size_counts_every_byte() {
        let data = vec![7u8; READ_BUF_SIZE * 2 + 3];
        let mut buf = new_buffer();
        assert_eq!(
            hash_reader(&data[..], &mut buf).unwrap().size,
            data.len() as u64
        );
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let mut buf = new_buffer();
        assert!(matches!(
            hash_file(&fifo, true, &mut buf),
            Err(ErrorKind::NotRegular)
        ));
    }

    #[test]
    fn a_symlink_is_refused_unless_following() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("target"), b"abc").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("target", &link).unwrap();
        let mut buf = new_buffer();
        assert!(matches!(
            hash_file(&link, false, &mut buf),
            Err(ErrorKind::NotRegular)
        ));
        assert_eq!(
            hash_file(&link, true, &mut buf).unwrap().hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
