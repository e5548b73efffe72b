//! The lookup before hashing: which planned files the cache may answer for.
//!
//! This thread reads the cache in key order, one sequential scan per
//! directory root (a point query per file named on its own), and pairs each
//! planned file with its entry, directory by directory (the cache keeps a
//! directory's entries together, in name order); files whose key no entry
//! has get none (and are misses without a `stat`). The pairs go in chunks
//! to `stat` threads, since a million `stat` calls are most of the work and
//! parallel; their verdicts come back here, where they are handed on (the
//! unchanged files' digests to the writer). The scan of a directory root
//! also names its entries that the walk did not see: the candidates for
//! pruning.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Mutex;

use super::key::Group;
use super::rule::{unchanged, Entry, FsRules, Stamp};
use super::store::{split, Store};
use crate::hasher::FileDigest;
use crate::strategy::{DirFd, Job};
use std::path::Path;

/// Files handed to a `stat` thread at once.
const CHUNK: usize = 1024;

/// What the lookup says of one planned file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Unchanged since its digest was recorded: this is its digest.
    Hit(FileDigest),
    /// To be hashed (the hasher stamps it: [`crate::stamp::Held`]).
    Miss,
}

/// The verdict on the planned file `index`, of group `group`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    /// Its index in the plan.
    pub index: u32,
    /// Its group (see [`super::key::groups`]).
    pub group: u32,
    /// What to do with it.
    pub verdict: Verdict,
}

/// What the scan learnt besides the verdicts.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    /// Keys under a scanned root that no planned file had (only collected
    /// when asked to prune).
    pub unseen: Vec<Vec<u8>>,
    /// Records whose check failed (re-hashed, and replaced).
    pub damaged: u64,
    /// Segments under a scanned root whose check failed (only collected
    /// when asked to prune: a run that failed nothing deletes those still
    /// there at its end, whose files were all hashed and recorded anew).
    pub damaged_segments: Vec<super::store::Damaged>,
    /// The cache could not be read to the end: the files after are misses.
    pub error: Option<rusqlite::Error>,
}

/// A planned file paired with what the cache holds for it.
struct Item {
    index: u32,
    group: u32,
    entry: Option<Entry>,
}

/// Look up every file of `groups` (files of `files`) in `store`, handing
/// each verdict to `out` (in no particular order). Stops early when `out`
/// breaks; then not every file has a verdict.
pub fn lookup(
    store: &Store,
    files: &[Job],
    groups: &[Group],
    prune: bool,
    out: &mut dyn FnMut(Found) -> ControlFlow<()>,
) -> Scanned {
    let (work_tx, work_rx) = mpsc::sync_channel::<Vec<Item>>(4);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<Vec<Found>>();
    std::thread::scope(|scope| {
        let mut workers = 0;
        for _ in 0..crate::strategy::default_workers() {
            let (rx, tx) = (&work_rx, done_tx.clone());
            let body = move || stat_worker(files, rx, &tx);
            match crate::limits::thread_builder().spawn_scoped(scope, body) {
                Ok(_) => workers += 1,
                Err(_) => break, // the rest is done here
            }
        }
        drop(done_tx);
        let mut hand = Hand {
            files,
            chunk: Vec::with_capacity(CHUNK),
            tx: (workers > 0).then_some(work_tx),
            rx: done_rx,
            out,
            fs: Filesystems::default(),
            stopped: false,
        };
        let scanned = produce(store, files, groups, prune, &mut |item| hand.push(item));
        hand.finish();
        scanned
    })
}

/// Hands chunks of items to the `stat` threads (or judges them here when
/// none could start) and passes their verdicts on.
struct Hand<'a, 'o> {
    files: &'a [Job],
    chunk: Vec<Item>,
    tx: Option<SyncSender<Vec<Item>>>,
    rx: Receiver<Vec<Found>>,
    out: &'o mut dyn FnMut(Found) -> ControlFlow<()>,
    fs: Filesystems,
    stopped: bool,
}

impl Hand<'_, '_> {
    /// Take one item; false once the receiver of verdicts has stopped. A
    /// file the cache has nothing for is a miss without a `stat`: its
    /// verdict is passed on here, not sent round the `stat` threads (a
    /// first run sends none).
    fn push(&mut self, item: Item) -> bool {
        if item.entry.is_none() {
            self.pass_one(Found {
                index: item.index,
                group: item.group,
                verdict: Verdict::Miss,
            });
            return !self.stopped;
        }
        self.chunk.push(item);
        if self.chunk.len() == CHUNK {
            self.send();
        }
        !self.stopped
    }

    fn send(&mut self) {
        let chunk = std::mem::take(&mut self.chunk);
        match &self.tx {
            Some(tx) => {
                let _ = tx.send(chunk);
                while let Ok(found) = self.rx.try_recv() {
                    self.pass(found);
                }
            }
            None => {
                let found = judge(self.files, chunk, &mut self.fs);
                self.pass(found);
            }
        }
    }

    fn pass(&mut self, found: Vec<Found>) {
        for f in found {
            self.pass_one(f);
        }
    }

    fn pass_one(&mut self, f: Found) {
        if self.stopped || (self.out)(f).is_break() {
            self.stopped = true;
        }
    }

    /// Send the last chunk and pass every verdict still to come.
    fn finish(mut self) {
        if !self.chunk.is_empty() && !self.stopped {
            self.send();
        }
        self.tx = None; // the threads end when the queue is empty
        while let Ok(found) = self.rx.recv() {
            self.pass(found);
        }
    }
}

/// Pair every file of every group with its entry into `push` (which says
/// false to stop).
fn produce(
    store: &Store,
    files: &[Job],
    groups: &[Group],
    prune: bool,
    push: &mut dyn FnMut(Item) -> bool,
) -> Scanned {
    let mut scanned = Scanned::default();
    for (g, group) in groups.iter().enumerate() {
        // A root the cache holds nothing under (a first run) needs no
        // pairing: every file is a miss, and there is nothing to prune.
        let empty = group.scan && scanned.error.is_none() && !store.holds_any(&group.prefix);
        let lists = if group.scan && !empty {
            by_dir(files, group)
        } else {
            vec![(Vec::new(), group.jobs.clone())]
        };
        let mut pairing = Pairing {
            files,
            group,
            g: g as u32,
            lists,
            i: 0,
            j: 0,
            push: &mut *push,
            go: true,
        };
        if scanned.error.is_none() && !empty {
            let res = if group.scan {
                pairing.merge(store, prune, &mut scanned)
            } else {
                pairing.points(store, &mut scanned)
            };
            if let Err(e) = res {
                scanned.error = Some(e);
            }
        }
        // After an error (or for a group not scanned because of one), the
        // rest are misses.
        pairing.rest();
        if !pairing.go {
            break;
        }
    }
    scanned
}

/// The files of `group` by directory: each directory's key (absolute, with
/// its `/`) and its files in name order, the directories in key order, as
/// the cache keeps its segments. (The walk's order is the order of whole
/// paths, in which a directory's files can come on both sides of a
/// subdirectory's.)
fn by_dir(files: &[Job], group: &Group) -> Vec<(Vec<u8>, Vec<u32>)> {
    let mut at: HashMap<&[u8], usize> = HashMap::new();
    let mut lists: Vec<(&[u8], Vec<u32>)> = Vec::new();
    let mut last: Option<(&[u8], usize)> = None;
    for &index in &group.jobs {
        let rel = files[index as usize].rel_path();
        let dir = split(rel).0;
        let k = match last {
            Some((d, k)) if d == dir => k,
            _ => *at.entry(dir).or_insert_with(|| {
                lists.push((dir, Vec::new()));
                lists.len() - 1
            }),
        };
        last = Some((dir, k));
        lists[k].1.push(index);
    }
    let mut out: Vec<(Vec<u8>, Vec<u32>)> = lists
        .into_iter()
        .map(|(dir, jobs)| ([&group.prefix[..], dir].concat(), jobs))
        .collect();
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The files of one group being paired with entries, list by list.
struct Pairing<'a, 'p> {
    files: &'a [Job],
    group: &'a Group,
    g: u32,
    /// The files to pair: by directory (see [`by_dir`]) when the group is
    /// scanned, one list in plan order when its files are looked up one by
    /// one (then the directory is not used).
    lists: Vec<(Vec<u8>, Vec<u32>)>,
    /// The list being paired, and its next file.
    i: usize,
    j: usize,
    push: &'p mut dyn FnMut(Item) -> bool,
    go: bool,
}

impl Pairing<'_, '_> {
    /// The next file of the list being paired, if any.
    fn next(&self) -> Option<u32> {
        self.lists.get(self.i)?.1.get(self.j).copied()
    }

    /// The name (after its directory) of planned file `index`.
    fn name(&self, index: u32) -> &[u8] {
        let rel = self.files[index as usize].rel_path();
        split(rel).1
    }

    /// Pair the next file with `entry` and move on.
    fn emit(&mut self, index: u32, entry: Option<Entry>) {
        self.go = (self.push)(Item {
            index,
            group: self.g,
            entry,
        });
        self.j += 1;
    }

    /// The rest of the current list get nothing; move to the next list.
    fn finish_list(&mut self) {
        while let (true, Some(index)) = (self.go, self.next()) {
            self.emit(index, None);
        }
        (self.i, self.j) = (self.i + 1, 0);
    }

    /// Every file not yet paired gets nothing.
    fn rest(&mut self) {
        while self.go && self.i < self.lists.len() {
            self.finish_list();
        }
    }

    /// In the current list, the files named before `name` get nothing and
    /// those named `name` (one, or more when a root was given twice) get
    /// `entry`. Whether any did.
    fn pair(&mut self, name: &[u8], entry: Entry) -> bool {
        while let (true, Some(index)) = (self.go, self.next()) {
            if self.name(index) >= name {
                break;
            }
            self.emit(index, None);
        }
        let mut matched = false;
        while let (true, Some(index)) = (self.go, self.next()) {
            if self.name(index) != name {
                break;
            }
            self.emit(index, Some(entry));
            matched = true;
        }
        matched
    }

    /// One scan under the group's prefix, merged with its files directory
    /// by directory (both in key order).
    fn merge(&mut self, store: &Store, prune: bool, scanned: &mut Scanned) -> rusqlite::Result<()> {
        let damaged = store.scan(&self.group.prefix, |dir, packed| {
            while self.go && self.lists.get(self.i).is_some_and(|l| l.0.as_slice() < dir) {
                self.finish_list();
            }
            let here = self.lists.get(self.i).is_some_and(|l| l.0 == dir);
            match packed {
                // Its files get nothing: they are hashed, and recorded anew.
                None => scanned.damaged += 1,
                Some(p) => {
                    for (name, entry) in super::store::entries(p) {
                        let matched = here && self.pair(name, entry);
                        if !matched && prune {
                            scanned.unseen.push([dir, name].concat());
                        }
                    }
                }
            }
            // With every file paired, reading on only serves pruning.
            self.go && (prune || self.i < self.lists.len())
        })?;
        if prune {
            scanned.damaged_segments.extend(damaged);
        }
        Ok(())
    }

    /// A query per file.
    fn points(&mut self, store: &Store, scanned: &mut Scanned) -> rusqlite::Result<()> {
        while let (true, Some(index)) = (self.go, self.next()) {
            let key = self.group.key(&self.files[index as usize]);
            let entry = match store.get(&key)? {
                Some(Some(e)) => Some(e),
                Some(None) => {
                    scanned.damaged += 1;
                    None
                }
                None => None,
            };
            self.emit(index, entry);
        }
        Ok(())
    }
}

/// A `stat` thread: judge chunks until the queue closes.
fn stat_worker(files: &[Job], rx: &Mutex<Receiver<Vec<Item>>>, tx: &Sender<Vec<Found>>) {
    let mut fs = Filesystems::default();
    loop {
        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(chunk) = next else { return };
        if tx.send(judge(files, chunk, &mut fs)).is_err() {
            return;
        }
    }
}

/// The verdicts on a chunk: `stat` each file and compare.
fn judge(files: &[Job], chunk: Vec<Item>, fs: &mut Filesystems) -> Vec<Found> {
    chunk
        .into_iter()
        .map(|item| {
            let job = &files[item.index as usize];
            // (A file the cache has nothing for does not come here: see
            // `Hand::push`.)
            let now = item.entry.and_then(|e| Some((e, stat(job)?)));
            let verdict = match now {
                Some((e, s)) if unchanged(&e, &s, fs.rules(job.dir.as_ref(), &job.path, s.dev)) => {
                    Verdict::Hit(FileDigest {
                        digest: e.digest,
                        size: s.size,
                        held: None,
                    })
                }
                _ => Verdict::Miss,
            };
            Found {
                index: item.index,
                group: item.group,
                verdict,
            }
        })
        .collect()
}

/// The metadata of `job`'s file, looked up the way the hasher will open it
/// (relative to its directory, never following a final link unless the job
/// may); `None` if it is gone or no longer a regular file (hashing it will
/// say what it is).
pub fn stat(job: &Job) -> Option<Stamp> {
    use rustix::fs::{statat, AtFlags, FileType, CWD};
    let st = match (&job.dir, job.path.file_name()) {
        (Some(dir), Some(name)) if !job.follow => {
            statat(dir.0.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)
        }
        _ if job.follow => statat(CWD, &job.path, AtFlags::empty()),
        _ => statat(CWD, &job.path, AtFlags::SYMLINK_NOFOLLOW),
    }
    .ok()?;
    (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile).then(|| Stamp::of(&st))
}

/// The rules of each filesystem met, by device number (one `statfs` each).
#[derive(Debug, Default)]
pub(crate) struct Filesystems(HashMap<u64, FsRules>);

impl Filesystems {
    /// The rules for a file on device `dev`, `path` (in `dir`, when walked).
    pub fn rules(&mut self, dir: Option<&DirFd>, path: &Path, dev: u64) -> FsRules {
        *self.0.entry(dev).or_insert_with(|| {
            let st = match dir {
                Some(dir) => rustix::fs::fstatfs(dir.0.as_fd()),
                None => rustix::fs::statfs(path),
            };
            st.map_or(FsRules::UNKNOWN, |st| FsRules::for_type(st.f_type as u32))
        })
    }
}
