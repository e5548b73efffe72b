//! Hash large files through bounded memory-mapped windows.
//!
//! Copying data out of the page cache with `read()` costs a fifth of hashing
//! it again on the same core; mapping the page cache costs no copy, but
//! SHA-256 then reads from memory instead of from the L2 cache, which on some
//! machines costs more than the copy saved. `crate::datapath` measures which
//! way wins on the machine; this module is the mapped way. Each [`WINDOW`] is
//! mapped with `MAP_POPULATE` (page-table entries filled in one call, no fault
//! per page), hashed a page at a time with the first cache line of the page
//! four ahead requested first ([`in_pieces`]), and unmapped, so memory stays
//! bounded whatever the file's size. Before a window is hashed
//! the next one is announced with `POSIX_FADV_WILLNEED`, so on cold data the
//! disk reads ahead while the core hashes. A window can also be left to fill
//! by page faults as it is hashed: which costs less depends on how large the
//! page cache's folios are, so `crate::datapath` times both.
//!
//! The classic danger of mapping a file is that another process truncates it
//! while it is mapped: touching a page past the new end raises `SIGBUS`,
//! which kills the process. A `SIGBUS` handler (installed once) checks whether
//! the faulting address lies in a window registered here; if so it maps
//! zero-filled anonymous memory over the rest of the window and marks it, and
//! the hash of that window is then reported as an error (the file changed
//! while it was read) instead of crashing. A fault anywhere else is handed
//! back to the previous handler.
//!
//! A signal handler is process-wide state, so the library never installs it
//! by itself: a binary opts in with [`catch_sigbus`] at start-up. Until it
//! has, [`Window::map`] maps nothing and every file is read with `pread`
//! (also what `--no-mmap` asks for: see `crate::hasher::ReadPolicy`).
//!
//! Mapping and unmapping go through `memmap2` (one `mmap`, one `munmap`, as
//! before); only the handler itself needs `libc`, for `sigaction`.

use std::io;
use std::num::NonZeroU64;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// Bytes mapped at once: large enough that mapping costs nothing next to
/// hashing (populating 2,048 page-table entries vs ~6 ms of SHA-256), small
/// enough that many workers stay far below the memory budget.
pub const WINDOW: usize = 8 * 1024 * 1024;

/// Windows that may be mapped at once in this process: a hashing thread
/// holds one, or up to three with its mapper thread (counting windows handed
/// back to it and not yet unmapped). With none free, files are read.
const SLOTS: usize = 256;

struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    faulted: AtomicBool,
    taken: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    faulted: AtomicBool::new(false),
    taken: AtomicBool::new(false),
};

static SLOTS_TABLE: [Slot; SLOTS] = [FREE; SLOTS];

/// The `SIGBUS` action before ours, restored for faults that are not ours.
/// Set once, before the handler is installed, and only read after: the
/// handler's `get` is an atomic load, safe in a signal handler.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    // Only a fault on a mapped page (not a `kill -BUS`) can be ours.
    let fault = code == libc::BUS_ADRERR || code == libc::BUS_OBJERR;
    for slot in SLOTS_TABLE.iter().filter(|_| fault) {
        let start = slot.start.load(Ordering::Acquire);
        let len = slot.len.load(Ordering::Acquire);
        // `start` is published last and cleared first: if it changed while
        // `len` was read, the slot was being reused and this pair is torn.
        if start == 0 || slot.start.load(Ordering::Acquire) != start {
            continue;
        }
        if addr >= start && addr < start + len {
            let page = addr & !(page_size() - 1);
            // SAFETY: [page, start + len) lies inside a mapping this module
            // made and still owns; MAP_FIXED replaces it with zero pages, so
            // the faulting access (and the rest of the window) can complete.
            // rustix makes the mmap system call directly: async-signal-safe.
            let zeros = unsafe {
                use rustix::mm::{mmap_anonymous, MapFlags, ProtFlags};
                mmap_anonymous(
                    page as *mut std::ffi::c_void,
                    start + len - page,
                    ProtFlags::READ,
                    MapFlags::PRIVATE | MapFlags::FIXED,
                )
            };
            if zeros.is_err() {
                break; // cannot repair it: die of the signal as usual
            }
            slot.faulted.store(true, Ordering::Release);
            return;
        }
    }
    // Not ours: put the previous action back (later windows then read with
    // `pread` instead, see `Window::map`) and let it act: returning re-runs
    // a faulting access; a sent signal is raised again.
    INSTALLED.store(false, Ordering::Release);
    // SAFETY: sigaction, signal and raise are async-signal-safe, and the
    // action put back is the one sigaction reported.
    unsafe {
        match PREVIOUS.get() {
            Some(old) => libc::sigaction(libc::SIGBUS, old, std::ptr::null_mut()),
            None => libc::signal(libc::SIGBUS, libc::SIG_DFL) as libc::c_int,
        };
        if !fault {
            libc::raise(libc::SIGBUS);
        }
    }
}

fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            let p = rustix::param::page_size();
            PAGE.store(p, Ordering::Relaxed);
            p
        }
        p => p,
    }
}

/// Install the `SIGBUS` handler that makes mapping files safe (once; later
/// calls only report). Returns whether it is installed: if not, nothing is
/// ever mapped. Call it at start-up, before threads that may map exist.
pub fn catch_sigbus() -> bool {
    INSTALL.call_once(|| {
        page_size();
        // SAFETY: a zeroed sigaction is valid; the handler only touches
        // atomics and makes async-signal-safe calls; PREVIOUS is set
        // before the handler can run and never again.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut new.sa_mask);
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) == 0 {
                let _ = PREVIOUS.set(old);
                if libc::sigaction(libc::SIGBUS, &new, std::ptr::null_mut()) == 0 {
                    INSTALLED.store(true, Ordering::Release);
                }
            }
        }
    });
    INSTALLED.load(Ordering::Acquire)
}

/// One mapped window of a file, registered with the `SIGBUS` handler.
#[derive(Debug)]
pub struct Window {
    // Fields drop in this order, after `Window::drop` has unregistered the
    // range: the mapping is unmapped before its slot is free for reuse.
    map: memmap2::Mmap,
    slot: Claim,
}

/// A claimed entry of [`SLOTS_TABLE`], released when dropped.
#[derive(Debug)]
struct Claim(usize);

impl Drop for Claim {
    fn drop(&mut self) {
        SLOTS_TABLE[self.0].taken.store(false, Ordering::Release);
    }
}

impl Window {
    /// Map `len` bytes of `file` at `offset` (a multiple of the page size),
    /// with `populate` its page-table entries filled at once (`MAP_POPULATE`),
    /// else by page faults as it is read. `None` when mapping is not possible
    /// here (no handler installed with [`catch_sigbus`], no free slot, `mmap`
    /// refused, too little address space left under a `ulimit -v`: see
    /// `crate::room::leaves_room`): the caller reads instead.
    pub fn map(file: &impl AsRawFd, offset: u64, len: usize, populate: bool) -> Option<Window> {
        if len == 0 || !INSTALLED.load(Ordering::Acquire) || !crate::room::leaves_room(len) {
            return None;
        }
        let slot = Claim(
            SLOTS_TABLE
                .iter()
                .position(|s| !s.taken.swap(true, Ordering::AcqRel))?,
        );
        let mut options = memmap2::MmapOptions::new();
        options.offset(offset).len(len);
        if populate {
            options.populate();
        }
        // SAFETY: a fresh private read-only mapping of an open file. Another
        // process may truncate the file while it is mapped: the SIGBUS handler
        // above turns the lost pages into zeros and `intact` reports it, so
        // the slice `bytes` hands out stays readable for its lifetime. Kept
        // because hashing in place wins where memory is fast: `gib` 632 ms
        // mapped against 702 ms read (AMD EPYC family 26 model 2), `shards`
        // `-j 2` 150 against 167 ms (Intel Xeon family 6 model 167).
        let map = unsafe { options.map_copy_read_only(file) }.ok()?;
        let s = &SLOTS_TABLE[slot.0];
        s.faulted.store(false, Ordering::Release);
        s.len.store(len, Ordering::Release);
        s.start.store(map.as_ptr() as usize, Ordering::Release);
        Some(Window { map, slot })
    }

    /// The mapped bytes. Pages past the end of a file that shrank read as
    /// zeros; `Window::intact` says whether that happened.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Whether every byte read so far came from the file.
    pub(crate) fn intact(&self) -> bool {
        !SLOTS_TABLE[self.slot.0].faulted.load(Ordering::Acquire)
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        let s = &SLOTS_TABLE[self.slot.0];
        s.start.store(0, Ordering::Release);
        s.len.store(0, Ordering::Release);
        // Then `map` is unmapped and `slot` released (field order).
    }
}

/// Bytes hashed between two requests for a page ahead: a page.
const PIECE: usize = 4096;

/// How far ahead of the hashing a page is asked for: four pages. On the
/// Intel guest below (`hash-serial` on a warm 1 GiB file, one line a page):
/// one page ahead 906 ± 105 ms (too late, and erratic), two to eight pages
/// 692–701 ms, sixteen 717 ms.
const AHEAD: usize = 4 * PIECE;

/// Hand `bytes` (mapped page-cache memory) to `hash` a page at a time, first
/// asking the CPU for the first cache line of the page four ahead (on x86_64;
/// elsewhere the pages are only handed over).
///
/// A hardware prefetcher follows a stream only within a 4 KiB page, and the
/// page cache's pages are scattered, so hashing a mapping in place waits at
/// every page for its address translation and its first lines. One request
/// a page starts both early; the hardware streams the rest of the page.
/// Requesting every line of the page instead cost more than it saved (the
/// requests themselves took ~8 % of the hasher's samples). On a 2-vCPU Intel
/// Xeon guest (SHA-NI, AVX-512), `hash-serial --data-path map` on a warm 1 GiB
/// file: 896 ms in place, 720 ms with every line requested, 693 ms with one
/// line a page, against 628 ms for the same bytes hashed from L2
/// (`hash-bench ceiling`). Measured on that Intel guest only; on the AMD EPYC
/// guests SHA-256 ran nearly as fast from memory as from L2, so there is less
/// to gain. A prefetch is a hint: it never faults, so a page lost to a
/// truncation is still caught by the `SIGBUS` handler when it is hashed.
pub fn in_pieces(bytes: &[u8], mut hash: impl FnMut(&[u8])) {
    for at in (0..AHEAD.min(bytes.len())).step_by(PIECE) {
        prefetch(&bytes[at]);
    }
    for (i, piece) in bytes.chunks(PIECE).enumerate() {
        if let Some(ahead) = bytes.get(i * PIECE + AHEAD) {
            prefetch(ahead);
        }
        hash(piece);
    }
}

/// Ask the CPU to bring the cache line holding `byte` into its L2 cache.
fn prefetch(byte: &u8) {
    // SAFETY: a prefetch is a hint that reads nothing and never faults; the
    // address is inside a live slice, and SSE is part of every x86_64 CPU.
    // Kept because it is what made mapping the fastest warm way on Intel Xeon
    // family 6 model 167 (`shards` `-j 2` 150 ms against 167–169 ms read).
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(
            std::ptr::from_ref(byte).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = byte;
}

/// `statfs` magic numbers of file systems whose pages may never come: the
/// network and user-space ones. A fault on a mapped page of such a file waits
/// for a server; if the server is gone (a dead mount, a killed FUSE daemon)
/// the fault spins in the kernel, where no signal but `SIGKILL` ends it, and
/// `MAP_POPULATE` takes every fault of a window at once. `read()` there
/// returns an error instead, so these files are read.
const FRAGILE: [(&str, u32); 16] = [
    ("fuse", 0x6573_5546),
    ("nfs", 0x6969),
    ("smb", 0x517b),
    ("smb2", 0xfe53_4d42),
    ("cifs", 0xff53_4d42),
    ("9p", 0x0102_1997),
    ("ceph", 0x00c3_6400),
    ("afs", 0x5346_414f),
    ("kafs", 0x6b41_4653),
    ("lustre", 0x0bd0_0bd0),
    ("gfs2", 0x0116_1970),
    ("ocfs2", 0x7461_636f),
    ("gpfs", 0x4750_4653),
    ("beegfs", 0x1983_0326),
    ("orangefs", 0x2003_0528),
    ("coda", 0x7375_7245),
];

/// The name of a network or user-space file system, by its `statfs` magic
/// number (`None`: a local one, as far as this list knows).
pub(crate) fn network_fs(magic: u32) -> Option<&'static str> {
    FRAGILE
        .iter()
        .find(|&&(_, m)| m == magic)
        .map(|&(name, _)| name)
}

/// Whether `file` lives on a file system where mapping is safe: not one of
/// the `FRAGILE` ones (nor one `statfs` cannot name).
pub(crate) fn mappable(file: &impl AsFd) -> bool {
    match rustix::fs::fstatfs(file) {
        // (`f_type` is an i64 here, an i32 or u32 on other targets: the
        // magic numbers are its low 32 bits everywhere.)
        Ok(st) => !is_remote(st.f_type as u32),
        Err(_) => false,
    }
}

/// Whether the `statfs` type `f_type` (its low 32 bits) is a network or
/// user-space file system, one of the `FRAGILE` ones. The metadata cache
/// asks too: there, inode numbers are not stable and timestamps come from
/// another clock (see `crate::cache`).
pub(crate) fn is_remote(f_type: u32) -> bool {
    FRAGILE.iter().any(|&(_, magic)| f_type == magic)
}

/// Announce that `len` bytes at `offset` will be read soon (a hint).
pub(crate) fn will_need(file: &impl AsFd, offset: u64, len: usize) {
    use rustix::fs::{fadvise, Advice};
    // A failure is harmless: it is a hint.
    let _ = fadvise(file, offset, NonZeroU64::new(len as u64), Advice::WillNeed);
}

/// Which pages of `len` bytes of `file` at the page-aligned `offset` are in the
/// page cache: `mincore(2)` writes one byte per page into `pages` (bit 0 set if
/// resident), which must hold `len.div_ceil(page size)` bytes. Asking with a
/// `RWF_NOWAIT` read instead would start a readahead and bring in the pages it
/// asks about. The harness's cache report and the cold-file tests both ask here.
pub fn resident(file: &impl AsFd, offset: u64, len: usize, pages: &mut [u8]) -> io::Result<()> {
    use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};
    if len == 0 {
        return Ok(());
    }
    if pages.len() < len.div_ceil(page_size()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "page vector too short",
        ));
    }
    // SAFETY: rustix and nix wrap `mmap` but not `mincore`, and `mincore` asks
    // about a mapping. `mmap` makes a fresh read-only shared mapping of a file the
    // caller holds open; it is never dereferenced (mincore asks the kernel about
    // its pages), so a concurrent truncation cannot fault us. `mincore` gets its
    // page-aligned start, its length and a vector checked above to hold a byte per
    // page. `munmap` removes exactly that mapping, which nothing else knows of.
    unsafe {
        let addr = mmap(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ,
            MapFlags::SHARED,
            file,
            offset,
        )?;
        let rc = libc::mincore(addr, len, pages.as_mut_ptr());
        let err = io::Error::last_os_error();
        let _ = munmap(addr, len);
        if rc != 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// What a file that lost bytes while it was read is reported as, on every data
/// path: a digest of the bytes that were left would be a digest of no version of it.
pub(crate) const SHRANK: &str = "file shrank while it was being read";

/// The error for a window that faulted: the file shrank under it, or (its
/// size unchanged) the disk could not supply a page.
pub(crate) fn fault_error(file: &impl AsFd, expected: u64) -> io::Error {
    match rustix::fs::fstat(file) {
        Ok(st) if (st.st_size as u64) < expected => io::Error::other(SHRANK),
        _ => rustix::io::Errno::IO.into(),
    }
}

/// After reads that ended (a read of 0) at `read` bytes, short of the `expected`
/// size `fstat` gave at the open: an error if the file is now smaller than that,
/// as a mapped window that faults is. A file whose size still says `expected`
/// (sysfs gives a page for any attribute) ended where its content does, and what
/// was read is the file, as `sha256sum` has it.
pub(crate) fn ended_early(file: &impl AsFd, read: u64, expected: u64) -> io::Result<()> {
    if read >= expected {
        return Ok(());
    }
    match rustix::fs::fstat(file) {
        Ok(st) if (st.st_size as u64) < expected => Err(io::Error::other(SHRANK)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_hand_over_every_byte_once_in_order() {
        // Not periodic in a page, so a page handed over twice or out of order shows.
        let data: Vec<u8> = (0..3 * PIECE + AHEAD + 5)
            .map(|i| (i * 7 + i / 4099) as u8)
            .collect();
        for len in [
            0,
            1,
            PIECE - 1,
            PIECE,
            PIECE + 1,
            AHEAD,
            AHEAD + 1,
            data.len(),
        ] {
            let mut seen = Vec::new();
            let mut largest = 0;
            in_pieces(&data[..len], |piece| {
                largest = largest.max(piece.len());
                seen.extend_from_slice(piece);
            });
            assert_eq!(seen, &data[..len], "length {len}");
            assert!(
                largest <= PIECE,
                "a piece of {largest} bytes at length {len}"
            );
        }
    }
}
