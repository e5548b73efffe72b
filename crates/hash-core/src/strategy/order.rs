//! The order files are read in: as planned, or by where their data lies on
//! the disk, for a disk that seeks.
//!
//! On a spinning disk, a file whose data lies far from the last one read
//! costs a seek of several milliseconds, and path order scatters files across
//! the platter. fclones measured 50,000 files in 19.5 s in physical order
//! against 217 s in size order. So a run may take its files in chunks of
//! [`CHUNK`], each sorted by where the file's data starts: the physical
//! offset of its first extent (`FS_IOC_FIEMAP`), or its inode number where
//! the file system has no FIEMAP (tmpfs, many network file systems). The
//! output does not change: the single writer puts results back in planned
//! order, as it does for every parallel run.
//!
//! The key costs an open, an `fstat`, an `ioctl` and a close per file, on top
//! of the read's own open (measured: docs/findings.md, "Read order on a
//! disk that seeks"). Next to a seek that is nothing; where data is cached,
//! or the storage does not seek, it is pure loss. So `--read-order auto`
//! (the default) sorts only when `pays`: the storage says it spins, the
//! depth policy found that it seeks (see `inflight::SeekTest`) and settled
//! at one or two reads in flight, and reads waited for the disk since the
//! last look. `--read-order disk` always sorts, `planned` never does.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::Job;
pub(crate) use crate::hasher::ReadOrder;
use crate::hasher::{self, Reading};
use crate::inflight::{Policy, Shared, Storage};

/// Files sorted at once: every file of any tree up to a million files, so
/// that it is read in one sweep across the disk. A partial sort gains much
/// less than its share: where files lie close together, only a full sort
/// turns seeks into short skips (the simulation in this module's tests, of
/// 20,000 files: 65 s sorted in chunks of 4,096, 41 s sorted whole, 37 s
/// for the model's best). The keys cost 24 bytes a file while a chunk is
/// sorted; the first data read waits for the chunk's keys (its inodes,
/// which are read anyway).
pub const CHUNK: usize = 1 << 20;

/// Planned files between two looks at whether the disk's order pays.
pub(super) const LOOK_EVERY: usize = 256;

/// Where a file's data starts, for sorting: by the first extent's physical
/// offset, by inode number where FIEMAP is not supported, or unknown (the
/// file could not be opened: its read reports why, first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Key {
    /// Not opened: read first, so its error comes early and costs nothing.
    Unknown,
    /// The physical byte offset of the file's first extent.
    Offset(u64),
    /// The file system maps no extents (or the file has none): its inode
    /// number, which on most file systems grows with where it was placed.
    Inode(u64),
}

/// The key of `job`, opened with the same checks as its read.
pub(crate) fn key(job: &Job, reading: &Reading) -> Key {
    let Ok(opened) = hasher::open(&job.request(reading, None)) else {
        return Key::Unknown;
    };
    match first_extent(opened.file.as_fd()) {
        Ok(Some(offset)) => Key::Offset(offset),
        _ => Key::Inode(opened.stamp.ino),
    }
}

/// `struct fiemap` of `<linux/fiemap.h>` with room for one extent.
#[repr(C)]
#[derive(Default)]
struct Fiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extent: FiemapExtent,
}

/// `struct fiemap_extent`.
#[repr(C)]
#[derive(Default)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

/// `_IOWR('f', 11, struct fiemap)`: the header (32 bytes) is the size the
/// kernel encodes; the extents follow it.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;

/// The physical offset of the first extent of the open file `fd`: `None`
/// when it has none (an empty file, or data not yet allocated).
pub(crate) fn first_extent(fd: BorrowedFd<'_>) -> io::Result<Option<u64>> {
    let mut map = Fiemap {
        length: u64::MAX,
        extent_count: 1,
        ..Fiemap::default()
    };
    // SAFETY: `map` is a `struct fiemap` followed by room for the one extent
    // `extent_count` allows; the kernel writes no more than that. Neither rustix
    // nor nix wraps FIEMAP, and disk order is what takes a seeking disk from 0.27
    // of the sorted read time to 0.90 (the read-order model in docs/findings.md).
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_FIEMAP as _, &mut map as *mut Fiemap) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // An extent whose place is unknown, or still delayed (written, not yet
    // placed), has no offset to sort by.
    const UNKNOWN: u32 = 0x2;
    const DELALLOC: u32 = 0x4;
    let placed = map.extent.flags & (UNKNOWN | DELALLOC) == 0;
    Ok((map.mapped_extents > 0 && placed).then_some(map.extent.physical))
}

/// Sort `ids` by `key`; equal keys keep their planned order.
pub(crate) fn sort_by_key(ids: &mut [usize], mut key: impl FnMut(usize) -> Key) {
    let mut keyed: Vec<(Key, usize)> = ids.iter().map(|&i| (key(i), i)).collect();
    keyed.sort_by_key(|&(k, _)| k);
    for (slot, (_, i)) in ids.iter_mut().zip(keyed) {
        *slot = i;
    }
}

/// Whether the disk's order pays now, under `--read-order auto`: the storage
/// says it spins, the policy settled at `depth`, at most two (it settles at
/// all only on a disk whose reads wait like a seek's: on a virtio disk that
/// says it spins the cap stays open), and reads `waited` for the disk since
/// the last look (cached data gains nothing).
pub(crate) fn pays(storage: Storage, depth: usize, waited: bool) -> bool {
    storage == Storage::Rotational && depth <= 2 && waited
}

/// How a run reads its files in the disk's order, if it may: the user's
/// choice and what the auto rule looks at. Counted for `--stats`.
#[derive(Debug)]
pub(crate) struct DiskOrder<'a> {
    order: ReadOrder,
    storage: Storage,
    /// The depth policy, and the reads that waited for the disk, if the run
    /// has one (threads, io_uring's rings; an auto run without one never sorts).
    depth: Option<&'a dyn Policy>,
    /// Waits counted at the last look.
    seen: AtomicU64,
    /// Whether the next files come from sorted chunks.
    active: AtomicBool,
    /// The sorted chunk being handed out, and where in it.
    chunk: Mutex<(Vec<usize>, usize)>,
    /// Files the chunk still holds (read without its lock).
    left: AtomicUsize,
    /// Files taken from sorted chunks, and how many of them had an offset.
    sorted: AtomicUsize,
    by_offset: AtomicUsize,
}

impl<'a> DiskOrder<'a> {
    /// The disk order of a run reading by `order` from `storage`, with the
    /// depth policy `depth` if it has one. `None` where it can never apply
    /// (planned order, or auto on storage that does not spin).
    pub fn new(order: ReadOrder, storage: Storage, depth: Option<&'a dyn Policy>) -> Option<Self> {
        let possible = match order {
            ReadOrder::Planned => false,
            ReadOrder::Disk => true,
            ReadOrder::Auto => storage == Storage::Rotational && depth.is_some(),
        };
        possible.then(|| DiskOrder {
            order,
            storage,
            depth,
            seen: AtomicU64::new(0),
            active: AtomicBool::new(order == ReadOrder::Disk),
            chunk: Mutex::new((Vec::new(), 0)),
            left: AtomicUsize::new(0),
            sorted: AtomicUsize::new(0),
            by_offset: AtomicUsize::new(0),
        })
    }

    /// [`DiskOrder::new`] for a run under the depth policy `depth`: its
    /// storage, and the policy only if it is a cap (a disk that says it
    /// spins, no `--max-in-flight`), the one with the seek test that the
    /// auto rule needs.
    pub(crate) fn for_run(order: ReadOrder, depth: Option<&'a Shared>) -> Option<Self> {
        let storage = depth.map_or(Storage::Unknown, Shared::storage);
        let policy = depth.filter(|p| p.is_cap()).map(|p| p as &dyn Policy);
        DiskOrder::new(order, storage, policy)
    }

    /// Whether the disk's order pays now (always, if the user asked for it).
    fn wanted(&self) -> bool {
        if self.order == ReadOrder::Disk {
            return true;
        }
        let Some(depth) = self.depth else {
            return false;
        };
        let waits = depth.waits();
        let waited = waits > self.seen.swap(waits, Ordering::Relaxed);
        // Settled, not passing through on the way.
        let settled = depth.settled().filter(|&d| d == depth.target());
        settled.is_some_and(|d| pays(self.storage, d, waited))
    }

    /// Whether files come from sorted chunks now: then only
    /// [`DiskOrder::next`] may hand them out.
    pub(crate) fn sorting(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// The planned files `start..end` were claimed at once, past the sorted
    /// chunks: look, as [`DiskOrder::next`] does every `LOOK_EVERY` files,
    /// whether the disk's order pays now.
    pub(crate) fn claimed(&self, start: usize, end: usize) {
        if end / LOOK_EVERY > start / LOOK_EVERY && self.wanted() {
            self.active.store(true, Ordering::Relaxed);
        }
    }

    /// The next file of `order` (the planned order, taken through `cursor`):
    /// from a chunk sorted by key while the disk's order is wanted, else the
    /// next planned one. Claims from `cursor` are disjoint either way.
    pub fn next(
        &self,
        files: &[Job],
        order: &[usize],
        cursor: &AtomicUsize,
        reading: &Reading,
    ) -> Option<usize> {
        self.next_with(order, cursor, |ids| self.sort(files, ids, reading))
    }

    /// [`DiskOrder::next`], with `sort` putting a chunk in the disk's order.
    fn next_with(
        &self,
        order: &[usize],
        cursor: &AtomicUsize,
        sort: impl FnOnce(&mut [usize]),
    ) -> Option<usize> {
        if self.active.load(Ordering::Relaxed) {
            if let Some(i) = self.chunk_next(order, cursor, sort) {
                return Some(i);
            }
        }
        let i = cursor.fetch_add(1, Ordering::Relaxed);
        if i % LOOK_EVERY == LOOK_EVERY - 1 && self.wanted() {
            self.active.store(true, Ordering::Relaxed);
        }
        match order.get(i) {
            Some(&i) => Some(i),
            // Whatever a sorted chunk still holds, should one thread have
            // turned the chunk off while another refilled it.
            None => self.take(&mut self.chunk.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }

    /// The next file of the sorted chunk, refilled when empty and the
    /// disk's order is wanted (claimed from `cursor`, never past the end of
    /// `order`); `None` turns the chunk off.
    fn chunk_next(
        &self,
        order: &[usize],
        cursor: &AtomicUsize,
        sort: impl FnOnce(&mut [usize]),
    ) -> Option<usize> {
        let mut chunk = self.chunk.lock().unwrap_or_else(|e| e.into_inner());
        if chunk.1 == chunk.0.len() && self.wanted() {
            let len = order.len();
            let claim = |c: usize| Some((c + CHUNK).min(len).max(c));
            let start = cursor
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, claim)
                .unwrap_or(len)
                .min(len);
            chunk.0 = order[start..(start + CHUNK).min(len)].to_vec();
            chunk.1 = 0;
            sort(&mut chunk.0);
            self.left.store(chunk.0.len(), Ordering::Relaxed);
            self.active.store(true, Ordering::Relaxed);
        }
        let next = self.take(&mut chunk);
        if next.is_none() {
            self.active.store(false, Ordering::Relaxed);
        }
        next
    }

    /// Hand out the next file of `chunk`, if it holds one.
    fn take(&self, chunk: &mut (Vec<usize>, usize)) -> Option<usize> {
        let (ids, at) = chunk;
        let i = *ids.get(*at)?;
        *at += 1;
        self.left.fetch_sub(1, Ordering::Relaxed);
        Some(i)
    }

    /// Whether the sorted chunk still holds files.
    pub(crate) fn has_more(&self) -> bool {
        self.left.load(Ordering::Relaxed) > 0
    }

    /// Sort one chunk of `files` by key, counting it.
    /// Once the run is stopped (nobody wants results: `| head`), the files
    /// left are not opened for a key: a million of them would hold the
    /// stop up for seconds.
    pub fn sort(&self, files: &[Job], ids: &mut [usize], reading: &Reading) {
        let mut offsets = 0;
        sort_by_key(ids, |i| {
            if reading.stopped() {
                return Key::Unknown;
            }
            let k = key(&files[i], reading);
            offsets += usize::from(matches!(k, Key::Offset(_)));
            k
        });
        self.sorted.fetch_add(ids.len(), Ordering::Relaxed);
        self.by_offset.fetch_add(offsets, Ordering::Relaxed);
    }

    /// Whether `--stats` has something to say: the user asked for the
    /// disk's order, or a chunk was sorted.
    pub fn used(&self) -> bool {
        self.order == ReadOrder::Disk || self.sorted.load(Ordering::Relaxed) > 0
    }

    /// One line for `--stats`.
    pub fn describe(&self) -> String {
        let (sorted, offsets) = (
            self.sorted.load(Ordering::Relaxed),
            self.by_offset.load(Ordering::Relaxed),
        );
        let why = match self.order {
            ReadOrder::Disk => "--read-order disk",
            _ => "a disk that spins, at most two reads in flight, reads waiting for it",
        };
        format!(
            "{} in the disk's order ({why}): {offsets} by their first extent's \
             offset, {} by inode number",
            crate::units::count(sorted as u64, "file"),
            sorted - offsets
        )
    }
}

/// The planned order of `files`, sorted into the disk's order chunk by chunk
/// before the run when the user asked for it (`--read-order disk`), with the
/// `--stats` line: for the runs that hand out a whole list they hold
/// (`hash-procs`' parent, `hash-async`'s blocking pool).
pub(crate) fn sorted_plan(
    order: ReadOrder,
    files: &[Job],
    planned: Vec<usize>,
    reading: &Reading,
) -> (Vec<usize>, Option<String>) {
    let Some(disk) = DiskOrder::new(order, Storage::Unknown, None) else {
        return (planned, None);
    };
    let mut planned = planned;
    for chunk in planned.chunks_mut(CHUNK) {
        disk.sort(files, chunk, reading);
    }
    (planned, Some(disk.describe()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inflight::Shared;
    use std::path::PathBuf;
    use std::time::Duration;

    /// A spinning disk for the simulation: files of [`FILE`] bytes read in
    /// requests of [`PIECE`], served in the order they arrive (readers in
    /// flight take turns, a request each). A request that does not continue
    /// the last one seeks: settling, half a rotation, and a part growing
    /// with the square root of the distance, as on a 7,200 rpm disk.
    mod hdd {
        pub const FILE: u64 = 256 * 1024;
        const PIECE: u64 = 128 * 1024;
        const PLATTER: f64 = 1e12;
        const RATE: f64 = 150e6;

        /// A gap ahead costs the time it takes to pass under the head, if
        /// that is less than a seek.
        fn seek(from: u64, to: u64) -> f64 {
            if from == to {
                return 0.0;
            }
            let far = 0.5e-3 + 4.2e-3 + 8e-3 * (from.abs_diff(to) as f64 / PLATTER).sqrt();
            if to > from {
                far.min((to - from) as f64 / RATE)
            } else {
                far
            }
        }

        /// Seconds to read the files at `offsets` at once, the head moving
        /// from `head`.
        pub fn serve(offsets: &[u64], head: &mut u64) -> f64 {
            let mut t = 0.0;
            for piece in 0..FILE / PIECE {
                for &at in offsets {
                    let pos = at + piece * PIECE;
                    t += seek(*head, pos) + PIECE as f64 / RATE;
                    *head = pos + PIECE;
                }
            }
            t
        }

        /// Seconds to read every file of `offsets` in the order `ids` gives,
        /// `depth` at a time.
        pub fn fixed(offsets: &[u64], ids: &[usize], depth: usize) -> f64 {
            let mut head = 0;
            ids.chunks(depth)
                .map(|g| {
                    let at: Vec<u64> = g.iter().map(|&i| offsets[i]).collect();
                    serve(&at, &mut head)
                })
                .sum()
        }
    }

    /// `n` files laid out one after another (16 KiB apart), in an order
    /// unrelated to their names (a deterministic shuffle).
    fn scattered(n: usize) -> Vec<u64> {
        let mut slots: Vec<(u64, u64)> = (0..n as u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17), i))
            .collect();
        slots.sort();
        let spacing = hdd::FILE + 16 * 1024;
        slots
            .iter()
            .map(|&(_, slot)| 1e11 as u64 + slot * spacing)
            .collect()
    }

    #[test]
    fn a_simulated_spinning_disk_settles_low_reads_in_offset_order_and_nears_the_best() {
        let n = 20_000;
        let offsets = scattered(n);
        let planned: Vec<usize> = (0..n).collect();
        let mut best_ids = planned.clone();
        best_ids.sort_by_key(|&i| offsets[i]);
        // The model's best: one file at a time, every file in offset order.
        let best = hdd::fixed(&offsets, &best_ids, 1);
        // The model is one where order and depth matter.
        assert!(hdd::fixed(&offsets, &planned, 1) > 1.5 * best);
        assert!(hdd::fixed(&offsets, &best_ids, 2) > 1.5 * best);

        // The run as `hash-threads` makes it on a disk that says it spins:
        // its depth policy, fed the simulated waits and completions, and
        // the queue's disk order, sorting while the auto rule holds.
        let policy = Shared::cap(128, "simulated".into());
        let disk = DiskOrder::new(ReadOrder::Auto, Storage::Rotational, Some(&policy)).unwrap();
        let cursor = AtomicUsize::new(0);
        let by_offset = |ids: &mut [usize]| sort_by_key(ids, |i| Key::Offset(offsets[i]));
        let (mut now, mut head, mut taken) = (0.0, 0, Vec::new());
        let mut settled_after = None;
        loop {
            let group: Vec<usize> = (0..policy.target())
                .map_while(|_| disk.next_with(&planned, &cursor, by_offset))
                .collect();
            if group.is_empty() {
                break;
            }
            let at: Vec<u64> = group.iter().map(|&i| offsets[i]).collect();
            let took = hdd::serve(&at, &mut head);
            now += took;
            for _ in &group {
                policy.waited(Duration::from_secs_f64(took), group.len());
            }
            let files = group.len() as u64;
            policy.completed_at(Duration::from_secs_f64(now), files, files * hdd::FILE);
            if policy.settled().is_some() && settled_after.is_none() {
                settled_after = Some(taken.len());
            }
            taken.extend(group);
        }
        let settled = policy
            .settled()
            .unwrap_or_else(|| panic!("never settled: {}", policy.describe()));
        assert!(settled <= 2, "settled at {settled}: {}", policy.describe());
        let rising = taken
            .windows(2)
            .filter(|w| offsets[w[0]] < offsets[w[1]])
            .count();
        assert!(
            rising * 10 >= taken.len() * 9,
            "{rising} of {n} reads in offset order"
        );
        assert!(
            best / now >= 0.8,
            "{:.0} s against the best {best:.0} s ({:.2})",
            now,
            best / now
        );
        let mut all = taken;
        all.sort();
        assert_eq!(all, planned, "every file read once");
    }

    #[test]
    fn unknown_keys_come_first_then_offsets_then_inodes_and_ties_keep_their_order() {
        let keys = [
            Key::Inode(3),
            Key::Offset(900),
            Key::Unknown,
            Key::Offset(100),
            Key::Offset(100),
            Key::Inode(1),
        ];
        let mut ids: Vec<usize> = (0..keys.len()).collect();
        sort_by_key(&mut ids, |i| keys[i]);
        assert_eq!(ids, [2, 3, 4, 1, 5, 0]);
    }

    #[test]
    fn the_auto_rule_needs_a_spinning_disk_few_reads_and_waits() {
        assert!(pays(Storage::Rotational, 1, true));
        assert!(pays(Storage::Rotational, 2, true));
        assert!(!pays(Storage::Rotational, 3, true));
        assert!(!pays(Storage::Rotational, 2, false));
        for s in [Storage::SolidState, Storage::Network, Storage::Unknown] {
            assert!(!pays(s, 1, true), "{s:?}");
        }
    }

    #[test]
    fn a_stopped_run_opens_nothing_for_keys() {
        // Three files, started in the reverse of their disk order (their
        // keys, offsets or inodes, differ). Stopped, none is opened for a
        // key: all are unknown, and the order stays as it was.
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<Job> = (0..3)
            .map(|i| {
                let path = dir.path().join(format!("f{i}"));
                std::fs::write(&path, b"data").unwrap();
                Job::new(path, 0, false)
            })
            .collect();
        let reading = Reading::default();
        let mut by_disk = vec![0, 1, 2];
        by_disk.sort_by_key(|&i| key(&files[i], &reading));
        let reversed: Vec<usize> = by_disk.iter().rev().copied().collect();
        let disk = DiskOrder::new(ReadOrder::Disk, Storage::Unknown, None).unwrap();
        let mut ids = reversed.clone();
        disk.sort(&files, &mut ids, &reading);
        assert_eq!(ids, by_disk, "not stopped: sorted");
        reading.stop();
        let mut ids = reversed.clone();
        disk.sort(&files, &mut ids, &reading);
        assert_eq!(ids, reversed, "stopped: left as it was");
    }

    #[test]
    fn planned_or_impossible_orders_make_no_disk_order() {
        assert!(DiskOrder::new(ReadOrder::Planned, Storage::Rotational, None).is_none());
        assert!(DiskOrder::new(ReadOrder::Auto, Storage::SolidState, None).is_none());
        assert!(DiskOrder::new(ReadOrder::Auto, Storage::Rotational, None).is_none());
        assert!(DiskOrder::new(ReadOrder::Disk, Storage::Network, None).is_some());
    }

    #[test]
    fn a_forced_disk_order_hands_out_every_file_once_in_key_order() {
        // Files whose data was written in reverse name order: the disk's
        // order (FIEMAP where supported, inodes elsewhere) is not the
        // planned one, and every file still comes out exactly once.
        let dir = tempfile::tempdir().unwrap();
        let n = 40;
        let files: Vec<Job> = (0..n)
            .map(|i| Job::new(dir.path().join(format!("f{i:03}")), 0, false))
            .collect();
        for job in files.iter().rev() {
            std::fs::write(&job.path, vec![7u8; 8192]).unwrap();
            std::fs::File::open(&job.path).unwrap().sync_all().unwrap();
        }
        let missing = Job::new(PathBuf::from("/nonexistent/x"), 0, false);
        let mut all = files.clone();
        all.push(missing);
        let reading = Reading::default();
        let disk = DiskOrder::new(ReadOrder::Disk, Storage::Unknown, None).unwrap();
        let planned: Vec<usize> = (0..all.len()).collect();
        let cursor = AtomicUsize::new(0);
        let got: Vec<usize> =
            std::iter::from_fn(|| disk.next(&all, &planned, &cursor, &reading)).collect();
        let keys: Vec<Key> = got.iter().map(|&i| key(&all[i], &reading)).collect();
        assert_eq!(got[0], n, "the file that cannot be opened goes first");
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{keys:?}");
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(sorted, planned);
        assert!(disk.describe().starts_with(&format!("{} files", n + 1)));
    }
}
