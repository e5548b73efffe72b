//! `--cache PATH`: re-hash only the files whose metadata changed since their
//! digest was recorded, without ever printing a digest the file would not
//! give now.
//!
//! The cache sits in the shared pipeline, between the walk and the engine,
//! so every strategy gets it and no cached file reaches a worker:
//!
//! 1. `Cache::lookup`: every planned file is paired with its entry
//!    (`key`: by absolute path; [`store`]: SQLite); a file with an entry
//!    is `stat`ed and judged ([`rule`]: same size, mtime, ctime, inode and
//!    device, and not racy). Unchanged files go straight to the writer with
//!    their recorded digest; the rest are the misses.
//! 2. The engine hashes the misses, and its hashers stamp each file they
//!    read (`crate::stamp::Held`: `fstat` at the open and after the last
//!    byte; the read policy asks for it). `Cache::hashed` judges the
//!    stamps: a file whose metadata moved while it was read is reported
//!    (`PATH: changed while being read`) and not recorded; one whose
//!    timestamps are too fresh to trust (racy) is not recorded either; the
//!    rest are recorded, in batches of one transaction each.
//! 3. [`Cache::finish`]: the last batch is written, and after a run that
//!    failed nothing (no file or directory error, output written to its
//!    end), the entries under the walked directories that the walk did not
//!    see are deleted.
//!
//! A cache that cannot be read or written (a read-only location, a full
//! disk) only costs speed: the run says so once and goes on without it. A
//! file that is not a cache is refused before anything is printed (see
//! [`store`]). The rules and their reasons are in docs/cache.md.

use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::exit::Exit;
use crate::progress::Progress;
use crate::strategy::{Job, Outcome};

mod cached;
mod key;
mod lookup;
mod recorder;
pub mod rule;
pub mod store;

pub(crate) use cached::Cached;
pub(crate) use store::OpenError;
pub use store::SCHEMA_VERSION;

use key::Group;
use lookup::{Filesystems, Verdict};
use recorder::Recorder;
use rule::Entry;
use store::{Batch, Store};

/// Records written in one transaction, when they come in key order.
const BATCH: usize = 4096;

/// Records gathered before a transaction when they come out of key order
/// (a run that hashes its files largest first): each batch rewrites the
/// segments its names fall among, and scattered names fall among all of
/// them, so such batches are made larger and fewer (about 40 MB of memory).
const SCATTERED_BATCH: usize = 1 << 18;

/// Records of a batch that may come back out of key order before it is
/// gathered as a scattered one (a stalled read passed by the reorder window
/// comes back alone).
const LATE_MAX: usize = 64;

/// What a run did with the cache, for `--stats` and the exit status.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Files answered from the cache, not read.
    pub unchanged: u64,
    /// Files handed to the engine to hash.
    pub hashed: u64,
    /// Digests recorded.
    pub recorded: u64,
    /// Files whose metadata moved while they were read (not recorded).
    pub changed: u64,
    /// Entries deleted because the walk no longer found their files.
    pub pruned: u64,
    /// Entries whose check failed (re-hashed, and replaced).
    pub damaged: u64,
}

impl Counts {
    /// The `--stats` line.
    pub fn render(&self) -> String {
        format!(
            "cache: {} unchanged (not read), {} hashed, {} recorded, {} changed while read, {} pruned",
            self.unchanged, self.hashed, self.recorded, self.changed, self.pruned
        )
    }
}

/// A miss: a file to hash, and the group whose key it is recorded under
/// (`u32::MAX`: none, it is not recorded).
#[derive(Debug, Clone, Copy)]
struct Miss {
    group: u32,
}

/// The cache of one run.
#[derive(Debug)]
pub struct Cache {
    /// `None` once it failed (the run goes on without it), or while the
    /// recorder holds it.
    store: Option<Store>,
    /// Writes the records while the engine hashes, from the first full
    /// batch on; `finish` takes the store back.
    recorder: Option<Recorder>,
    /// No recorder thread could start: records are written here.
    no_recorder: bool,
    path: PathBuf,
    /// The moment this run started looking (before any `stat`), which
    /// every record of this run carries.
    recorded_ns: i64,
    groups: Vec<Group>,
    /// The misses, by plan index, in plan order.
    misses: Vec<(u32, Miss)>,
    pending: Batch,
    /// Records put back into miss order before they are batched (see
    /// [`Reorder`]).
    reorder: Reorder<Entry>,
    /// The miss batched last, and how often the batch being gathered has
    /// gone back in miss order.
    last_batched: Option<usize>,
    late: usize,
    unseen: Vec<Vec<u8>>,
    damaged_segments: Vec<store::Damaged>,
    fs: Filesystems,
    /// What happened so far.
    pub counts: Counts,
}

impl Cache {
    /// Open the cache at `path`.
    pub(crate) fn open(path: &Path) -> Result<Cache, OpenError> {
        Ok(Cache {
            store: Some(Store::open(path)?),
            recorder: None,
            no_recorder: false,
            path: path.to_path_buf(),
            recorded_ns: 0,
            groups: Vec::new(),
            misses: Vec::new(),
            pending: Batch::default(),
            reorder: Reorder::default(),
            last_batched: None,
            late: 0,
            unseen: Vec::new(),
            damaged_segments: Vec::new(),
            fs: Filesystems::default(),
            counts: Counts::default(),
        })
    }

    /// Say that the cache failed with `e` while it was being `doing` (read,
    /// written), and go on without it. Damage is called damage whenever it
    /// is met: which phase meets it first depends on the strategy's order,
    /// and every binary must say the same of the same file.
    fn failed(&mut self, e: &rusqlite::Error, doing: &str) {
        let why = if store::is_damage(e) {
            format!("is damaged ({})", store::reason(e))
        } else {
            format!("cannot be {doing} ({})", store::reason(e))
        };
        self.give_up(&why);
    }

    /// Say that the cache failed for `why`, and go on without it.
    fn give_up(&mut self, why: &str) {
        if self.store.take().is_some() {
            crate::show!(
                "warning: {}: {why}; going on without the cache",
                crate::quote::quoted(&self.path)
            );
        }
        self.pending = Batch::default();
        self.reorder = Reorder::default();
    }

    /// Open the cache at `path` for a run: `Ok(None)` when it cannot be
    /// used (said on stderr: the run goes on without it), `Err` with the
    /// exit status when the file is not a cache (said on stderr, with how to
    /// start afresh: the run stops before printing anything).
    pub(crate) fn open_for_run(path: &Path) -> Result<Option<Cache>, Exit> {
        match Cache::open(path) {
            Ok(cache) => {
                if let Some(v) = cache.store.as_ref().and_then(|s| s.replaced) {
                    crate::show!(
                        "warning: {}: a cache of schema version {v} (an older hashrace's) was \
                         emptied for version {SCHEMA_VERSION}; every file is hashed again",
                        crate::quote::quoted(path)
                    );
                }
                Ok(Some(cache))
            }
            Err(OpenError::Unavailable(why)) => {
                crate::show!(
                    "warning: {}: {why}; going on without the cache",
                    crate::quote::quoted(path)
                );
                Ok(None)
            }
            Err(OpenError::NotRegular(p)) => {
                crate::show!("{}: not a regular file", crate::quote::quoted(&p));
                Err(Exit::Usage)
            }
            Err(OpenError::Refused(why)) => {
                crate::show!(
                    "{}: {why}; remove it (or name another file with --cache) to start afresh",
                    crate::quote::quoted(path)
                );
                Err(Exit::Usage)
            }
        }
    }

    /// Judge every file of `files` (the plan; `dirs` are its roots walked as
    /// directories): the unchanged ones go to `sink` with their recorded
    /// digest; the rest, the misses, are to be hashed, in the order of
    /// [`Cache::miss`] (plan order), and passed to [`Cache::hashed`] with
    /// their place in that order. Returns how many there are. With `prune`,
    /// the entries under `dirs` the walk did not see are noted, to be deleted
    /// by [`Cache::finish`]. `Break`: the sink stopped the run.
    pub(crate) fn lookup(
        &mut self,
        files: &[Job],
        dirs: &[PathBuf],
        prune: bool,
        sink: &mut crate::strategy::Sink<'_>,
    ) -> ControlFlow<(), usize> {
        self.recorded_ns = now_ns();
        self.groups = key::groups(files, dirs, &key::cwd());
        let mut answered = vec![false; files.len()];
        let mut misses = Vec::new();
        let mut broke = false;
        if let Some(store) = &self.store {
            let unchanged = &mut self.counts.unchanged;
            let scanned = lookup::lookup(store, files, &self.groups, prune, &mut |f| {
                answered[f.index as usize] = true;
                match f.verdict {
                    Verdict::Hit(d) => {
                        *unchanged += 1;
                        let flow = sink(f.index as usize, Ok(d));
                        broke |= flow.is_break();
                        flow
                    }
                    Verdict::Miss => {
                        misses.push((f.index, Miss { group: f.group }));
                        ControlFlow::Continue(())
                    }
                }
            });
            self.counts.damaged = scanned.damaged;
            self.unseen = scanned.unseen;
            self.damaged_segments = scanned.damaged_segments;
            if let Some(e) = scanned.error {
                self.failed(&e, "read");
            }
        }
        if broke {
            return ControlFlow::Break(());
        }
        // A file without a verdict (standard input, or one a `stat` thread
        // lost to a bug) is a miss with nothing to record.
        let nothing = Miss { group: u32::MAX };
        let left = answered.iter().enumerate().filter(|(_, a)| !**a);
        misses.extend(left.map(|(i, _)| (i as u32, nothing)));
        misses.sort_unstable_by_key(|m| m.0);
        self.counts.hashed = misses.len() as u64;
        self.misses = misses;
        ControlFlow::Continue(self.misses.len())
    }

    /// The plan index of the `k`-th miss.
    pub fn miss(&self, k: usize) -> usize {
        self.misses[k].0 as usize
    }

    /// Take the outcome of the `k`-th miss (of `files`, the plan): record
    /// its digest if the file held still while it was read and is not too
    /// fresh to trust; say so if it did not hold still.
    pub(crate) fn hashed(
        &mut self,
        k: usize,
        files: &[Job],
        outcome: &Outcome,
        progress: Option<&Progress>,
    ) {
        let entry = self.record(k, &files[self.miss(k)], outcome, progress);
        {
            let mut batch_up = batcher(&self.misses, &self.groups, files, &mut self.pending);
            let (last, late) = (&mut self.last_batched, &mut self.late);
            self.reorder.put(k, entry, &mut |k, e| {
                *late += usize::from(last.is_some_and(|l| k < l));
                *last = Some(k);
                batch_up(k, e);
            });
        }
        // A straggler or two ride in a batch of the usual size.
        let full = if self.late > LATE_MAX {
            SCATTERED_BATCH
        } else {
            BATCH
        };
        if self.pending.len() >= full {
            self.flush();
            self.late = 0;
        }
    }

    /// Batch every record still held for key order (the hashing is over:
    /// nothing more will come). `files` is the plan.
    pub fn settle(&mut self, files: &[Job]) {
        let mut batch_up = batcher(&self.misses, &self.groups, files, &mut self.pending);
        self.reorder.drain(&mut batch_up);
    }

    /// What to record of the `k`-th miss, `job`, if anything.
    fn record(
        &mut self,
        k: usize,
        job: &Job,
        outcome: &Outcome,
        progress: Option<&Progress>,
    ) -> Option<Entry> {
        let Ok(d) = outcome else { return None };
        let miss = self.misses[k].1;
        // The hasher stamped the descriptor it read when it was opened and
        // after its last byte (the read policy asks for it when there is a
        // cache); without stamps there is nothing to vouch for.
        let (Some(held), Some(_)) = (d.held, self.groups.get(miss.group as usize)) else {
            return None;
        };
        let (before, after) = (held.opened, held.read);
        let rules = self.fs.rules(job.dir.as_ref(), &job.path, after.dev);
        if !rule::held_still(&before, &after, d.size, rules) {
            self.counts.changed += 1;
            let why = io::Error::other("changed while being read");
            crate::diag::path_error(&Error::new(job.path.clone(), ErrorKind::Io(why)), progress);
            return None;
        }
        let recording = self.recorder.as_ref().is_some_and(|r| !r.failed());
        let writable = self.store.is_some() || recording;
        if !writable || rule::racy(&before, self.recorded_ns, rules) {
            return None; // too fresh: the next run records it
        }
        Some(Entry {
            stamp: before,
            digest: d.digest,
            recorded_ns: self.recorded_ns,
        })
    }

    /// Hand the records waiting for their batch to the recorder (started
    /// on the first batch), or write them here when it could not start.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        if self.recorder.is_none() && !self.no_recorder {
            if let Some(store) = self.store.take() {
                match Recorder::start(store) {
                    Ok(r) => self.recorder = Some(r),
                    Err(store) => {
                        self.store = Some(*store);
                        self.no_recorder = true;
                    }
                }
            }
        }
        let batch = std::mem::take(&mut self.pending);
        if let Some(r) = &self.recorder {
            return r.send(batch);
        }
        let Some(store) = &mut self.store else { return };
        match store.insert(&batch) {
            Ok(()) => self.counts.recorded += batch.len() as u64,
            Err(e) => self.failed(&e, "written"),
        }
    }

    /// Wait for the recorder to write what it was given, and take the store
    /// back (or give up on it, if a write failed).
    fn join_recorder(&mut self) {
        let Some(r) = self.recorder.take() else {
            return;
        };
        let written = r.finish();
        self.counts.recorded += written.recorded;
        self.store = Some(written.store);
        if let Some(e) = written.error {
            self.failed(&e, "written");
        }
    }

    /// End the run: write what waits, and, if the run `succeeded` (no file
    /// or directory failed, the output was written to its end), prune the
    /// entries noted by `Cache::lookup`. An interrupted or failed run
    /// prunes nothing.
    pub fn finish(&mut self, succeeded: bool) -> Counts {
        self.flush();
        self.join_recorder();
        let unseen = std::mem::take(&mut self.unseen);
        if let (true, false, Some(store)) = (succeeded, unseen.is_empty(), &mut self.store) {
            match store.delete(&unseen) {
                Ok(()) => self.counts.pruned = unseen.len() as u64,
                Err(e) => self.failed(&e, "written"),
            }
        }
        let damaged = std::mem::take(&mut self.damaged_segments);
        if let (true, false, Some(store)) = (succeeded, damaged.is_empty(), &mut self.store) {
            if let Err(e) = store.drop_damaged(&damaged) {
                self.failed(&e, "written");
            }
        }
        if self.counts.damaged > 0 {
            crate::show!(
                "warning: {}: {} damaged records (segments of a directory's entries, or a \
                 file's) were skipped; their files were hashed again",
                crate::quote::quoted(&self.path),
                self.counts.damaged
            );
        }
        self.counts
    }
}

/// Misses held out of order at most before the earliest is given up on.
const REORDER_WINDOW: usize = 1 << 18;

/// What adds the record of the `k`-th miss (of `misses`, planned in
/// `files`, grouped by `groups`) to `batch`, under the file's key.
fn batcher<'a>(
    misses: &'a [(u32, Miss)],
    groups: &'a [Group],
    files: &'a [Job],
    batch: &'a mut Batch,
) -> impl FnMut(usize, Entry) + 'a {
    move |k, entry| {
        let (i, miss) = misses[k];
        if let Some(group) = groups.get(miss.group as usize) {
            batch.push(&[&group.prefix, files[i as usize].rel_path()], entry);
        }
    }
}

/// Puts records back into miss order (which is key order) before they are
/// batched. Parallel readers finish files out of order, a few thousand
/// apart on a warm tree of small files; batches of such records would each
/// touch many directories' segments, some of them twice (see
/// [`Store::insert`]), while in key order each batch only appends. A miss
/// that is still out after [`REORDER_WINDOW`] later ones (a stalled read)
/// is not waited for: its record, if any, goes in a later batch.
#[derive(Debug)]
struct Reorder<T> {
    /// The miss of `held[0]`.
    base: usize,
    /// From miss `base` on: `None` while not back, then what it records.
    held: std::collections::VecDeque<Option<Option<T>>>,
}

impl<T> Default for Reorder<T> {
    fn default() -> Self {
        Reorder {
            base: 0,
            held: Default::default(),
        }
    }
}

impl<T> Reorder<T> {
    /// Miss `k` is back with `record`; pass what is now in order to `out`
    /// (with its miss).
    fn put(&mut self, k: usize, record: Option<T>, out: &mut dyn FnMut(usize, T)) {
        if k < self.base {
            if let Some(r) = record {
                out(k, r); // given up on: goes now
            }
            return;
        }
        // Make room for `k` within the window by passing the earliest
        // misses, back or not (a run that takes its files largest first
        // finishes them in no key order at all: the window stays bounded).
        while k - self.base >= REORDER_WINDOW {
            match self.held.pop_front() {
                Some(slot) => {
                    if let Some(Some(r)) = slot {
                        out(self.base, r);
                    }
                    self.base += 1;
                }
                None => self.base = k + 1 - REORDER_WINDOW,
            }
        }
        let at = k - self.base;
        if self.held.len() <= at {
            self.held.resize_with(at + 1, || None);
        }
        self.held[at] = Some(record);
        while let Some(Some(_)) = self.held.front() {
            if let Some(Some(Some(r))) = self.held.pop_front() {
                out(self.base, r);
            }
            self.base += 1;
        }
    }

    /// Pass every record held to `out` (the run is ending).
    fn drain(&mut self, out: &mut dyn FnMut(usize, T)) {
        for (i, slot) in std::mem::take(&mut self.held).into_iter().enumerate() {
            if let Some(Some(r)) = slot {
                out(self.base + i, r);
            }
        }
    }
}

/// Our clock, in nanoseconds since the epoch.
fn now_ns() -> i64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(t.as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_leave_in_miss_order_and_a_stalled_miss_is_not_waited_for() {
        let mut r = Reorder::<usize>::default();
        let mut out = Vec::new();
        let put = |r: &mut Reorder<usize>, k: usize, v: Option<usize>, out: &mut Vec<usize>| {
            r.put(k, v, &mut |at, v| {
                assert_eq!(at, v, "passed with its own miss");
                out.push(v);
            })
        };
        put(&mut r, 2, Some(2), &mut out);
        put(&mut r, 1, None, &mut out); // hashed, nothing to record
        assert!(out.is_empty(), "miss 0 is not back");
        put(&mut r, 0, Some(0), &mut out);
        put(&mut r, 3, Some(3), &mut out);
        assert_eq!(out, [0, 2, 3]);
        // Miss 4 stalls: the window fills behind it, then it is passed.
        out.clear();
        for k in 5..6 + REORDER_WINDOW {
            put(&mut r, k, Some(k), &mut out);
        }
        assert_eq!(
            out.first(),
            Some(&5),
            "the earliest went once 4 was given up"
        );
        put(&mut r, 4, Some(4), &mut out);
        assert_eq!(out.last(), Some(&4), "a late record still goes");
        r.drain(&mut |_, v| out.push(v));
        out.sort_unstable();
        let want: Vec<usize> = (4..6 + REORDER_WINDOW).collect();
        assert_eq!(out, want, "every record exactly once");
    }

    #[test]
    fn a_miss_far_ahead_moves_the_window_instead_of_growing_it() {
        let mut r = Reorder::<usize>::default();
        let mut out = Vec::new();
        r.put(1, Some(1), &mut |_, v| out.push(v));
        r.put(10_000_000, Some(10_000_000), &mut |_, v| out.push(v));
        assert!(r.held.len() <= REORDER_WINDOW, "{}", r.held.len());
        assert_eq!(out, [1], "the earlier record passed when the window moved");
        r.put(0, Some(0), &mut |_, v| out.push(v));
        assert_eq!(out, [1, 0], "a miss behind the window goes at once");
        r.drain(&mut |_, v| out.push(v));
        assert_eq!(out, [1, 0, 10_000_000]);
    }
}
