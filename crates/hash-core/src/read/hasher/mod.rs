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
//!
//! Split by what each part guards: `open.rs` the rules above (and the wait for
//! a descriptor), `buffers.rs` the memory a read goes into, `large.rs` and
//! `mapper.rs` large files already in the page cache (mapped, or read beside the
//! hasher), `stamps.rs` what `fstat` said of a file while it was read.

mod buffers;
mod large;
mod mapper;
mod open;
mod stamps;

use rustix::io::Errno;
use sha2::{Digest, Sha256};
use std::io::{self, Read};
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::datapath::{Chooser, DataPath};
use crate::error::ErrorKind;
use crate::stamp::Held;
use crate::striped::Striped;

pub(crate) use buffers::new_buffer;
pub use buffers::Buffer;
#[cfg(feature = "async")]
pub(crate) use open::checked_file;
pub(crate) use open::open;
pub(crate) use open::{open_dir, Opened};
pub(crate) use stamps::stamped;

use large::hash_cached;
use stamps::stamp_delay_hook;

/// Size of each worker's read buffer. Large enough that syscall overhead is
/// negligible next to hashing (~1.3 GB/s per core), small enough to stay in L2.
pub const READ_BUF_SIZE: usize = 256 * 1024;

/// A read that takes this long waited for a disk (a page-cache hit takes a
/// few microseconds, even when `RWF_NOWAIT` refused it because a page was
/// briefly locked).
pub(crate) const DISK_WAIT: std::time::Duration = std::time::Duration::from_micros(100);

/// How files are read, whatever the strategy: a policy the engine is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ReadPolicy {
    /// How large files already in the page cache reach SHA-256 (see
    /// `crate::datapath`); `--no-mmap` is `DataPath::Read`. Mapping also
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
pub(crate) enum ReadOrder {
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
    pub(crate) fn new(policy: ReadPolicy) -> Reading {
        Reading {
            policy,
            chooser: Chooser::new(policy.path),
            ..Reading::default()
        }
    }

    /// The way large cached files went, once known (see
    /// `crate::datapath`), and the timed segments that decided it; no way
    /// when no file took one.
    pub(crate) fn data_path(&self) -> (Option<crate::datapath::Way>, crate::datapath::Samples) {
        let took = self.took_data_path.load(Ordering::Relaxed);
        let way = self.chooser.decided().filter(|_| took);
        (way, self.chooser.samples())
    }

    /// The policy this run reads by.
    pub(crate) fn policy(&self) -> ReadPolicy {
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
    pub(crate) fn bytes_read(&self) -> u64 {
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
    pub(crate) fn saw_uncached(&self) -> bool {
        self.uncached.load(Ordering::Relaxed)
    }

    /// Count the calling thread as one of the run's hashers while the
    /// returned guard lives.
    pub(crate) fn hashing(&self) -> Hashing<'_> {
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
    /// policy asks for it (`ReadPolicy::stamps`) and `fstat` gave it.
    pub held: Option<Held>,
}

impl FileDigest {
    /// The digest as 64 lowercase hex digits.
    #[cfg(test)]
    pub(crate) fn hex(&self) -> String {
        hex(&self.digest)
    }
}

/// Lowercase hex of some bytes (`--json`, tree digests, manifests; output
/// lines use `hex_digits`).
pub fn hex(bytes: &[u8]) -> String {
    ::hex::encode(bytes)
}

/// A digest's 64 lowercase hex digits, on the stack: an output line takes no
/// allocation for them. Building a `String` per line was 2.4 % of
/// `hash-serial`'s samples on 12,000 warm files of 3 KiB (`perf record`).
pub(crate) fn hex_digits(digest: &[u8; 32]) -> [u8; 64] {
    let mut text = [0; 64];
    // Cannot fail: 64 bytes are exactly two digits for each of 32.
    let _ = ::hex::encode_to_slice(digest, &mut text);
    text
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
pub(crate) struct Request<'a> {
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
pub(crate) trait OnBlock {
    /// A file's read waited `wait` for the disk (heard at most once a file).
    fn waited(&self, wait: std::time::Duration);

    /// Whether the next file that waits should first read one page alone, so
    /// that its wait is the disk's latency rather than a transfer: a depth
    /// policy that asks whether the disk seeks needs latencies (see
    /// `crate::inflight::SeekTest`). A large file's first read otherwise
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
    #[cfg(test)]
    pub(crate) fn new(path: &'a Path, follow: bool, reading: &'a Reading) -> Self {
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
pub(crate) fn hash(req: &Request<'_>, buf: &mut [u8]) -> Result<FileDigest, ErrorKind> {
    Ok(hash_opened(&open(req)?, buf, req.reading, req.on_block)?)
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
pub(crate) struct Hashing<'r>(&'r Reading);

impl Drop for Hashing<'_> {
    fn drop(&mut self) {
        self.0.hashers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Hash an opened file: a large one whose start is in the page cache by
/// `hash_cached`, any other with positioned reads into `buf`.
///
/// The read loop stops at the first short read that brings the total to the size
/// `fstat` reported: a regular file returns fewer bytes than asked only at its
/// end, so the final `read` returning 0 is skipped. A file that is shorter
/// than it claimed (or grows) is still read to a `read` of 0, as before.
///
/// With `on_block`, reads first try `RWF_NOWAIT`: data in the page cache is
/// returned at no extra cost. When it is not, the read is made again,
/// blocking, and if that took at least `DISK_WAIT` and the thread slept in
/// it (`sleeps`) the hook hears that this file waited for the disk (once
/// per file), whatever its size: more
/// readers help cold 8 MiB files too (measured: cold shards-quick took 17 %
/// longer when only files under 1 MiB could add readers).
pub(crate) fn hash_opened(
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
    use super::buffers::BUF_ALLOC;
    use super::large::AHEAD_WINDOW;
    use super::open::open_path;
    use super::*;
    use std::fs::File;

    pub(super) fn hash_file(
        path: &Path,
        follow: bool,
        buf: &mut [u8],
    ) -> Result<FileDigest, ErrorKind> {
        hash(&Request::new(path, follow, &Reading::default()), buf)
    }

    /// Pseudo-random bytes (xorshift), so block boundaries carry distinct data.
    pub(super) fn noise(len: usize, seed: u64) -> Vec<u8> {
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
    fn size_counts_every_byte() {
        let data = vec![7u8; READ_BUF_SIZE * 2 + 3];
        let mut buf = new_buffer();
        assert_eq!(
            hash_reader(&data[..], &mut buf).unwrap().size,
            data.len() as u64
        );
    }
}
