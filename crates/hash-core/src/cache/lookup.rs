//! The lookup before hashing: which planned files the cache may answer for.
//!
//! This thread reads the cache in key order, one sequential scan per
//! directory root (a point query per file named on its own), and pairs each
//! planned file with its entry; files whose key no entry has get none (and
//! are misses without a `stat`). The pairs go in chunks to `stat` threads,
//! since a million `stat` calls are most of the work and parallel; their
//! verdicts come back here, where they
//! are handed on (the unchanged files' digests to the writer). The scan of a
//! directory root also names its entries that the walk did not see: the
//! candidates for pruning.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Mutex;

use super::key::Group;
use super::rule::{unchanged, Entry, FsRules, Stamp};
use super::store::Store;
use crate::hasher::FileDigest;
use crate::strategy::{DirFd, Job};
use std::path::Path;

/// Files handed to a `stat` thread at once.
const CHUNK: usize = 1024;

/// What the lookup says of one planned file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Unchanged since its digest was recorded: this is its digest.
    Hit(FileDigest),
    /// To be hashed (the hasher stamps it: [`crate::stamp::Held`]).
    Miss,
}

/// The verdict on the planned file `index`, of group `group`.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    /// Its index in the plan.
    pub index: u32,
    /// Its group (see [`super::key::groups`]).
    pub group: u32,
    /// What to do with it.
    pub verdict: Verdict,
}

/// What the scan learnt besides the verdicts.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Keys under a scanned root that no planned file had (only collected
    /// when asked to prune).
    pub unseen: Vec<Vec<u8>>,
    /// Entries whose check failed (re-hashed, and replaced).
    pub damaged: u64,
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

/// Pair every file of every group with its entry, in key order, into `push`
/// (which says false to stop).
fn produce(
    store: &Store,
    files: &[Job],
    groups: &[Group],
    prune: bool,
    push: &mut dyn FnMut(Item) -> bool,
) -> Scanned {
    let mut scanned = Scanned::default();
    for (g, group) in groups.iter().enumerate() {
        let mut pairing = Pairing {
            files,
            group,
            g: g as u32,
            next: 0,
            key: Vec::new(),
            push: &mut *push,
            go: true,
        };
        if scanned.error.is_none() {
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
        while pairing.go && pairing.next < group.jobs.len() {
            pairing.emit(None);
        }
        if !pairing.go {
            break;
        }
    }
    scanned
}

/// The files of one group being paired with entries.
struct Pairing<'a, 'p> {
    files: &'a [Job],
    group: &'a Group,
    g: u32,
    /// Files of the group paired so far.
    next: usize,
    /// The key of file `next`.
    key: Vec<u8>,
    push: &'p mut dyn FnMut(Item) -> bool,
    go: bool,
}

impl Pairing<'_, '_> {
    fn load_key(&mut self) {
        let (files, group) = (self.files, self.group);
        self.key.clear();
        self.key.extend_from_slice(&group.prefix);
        self.key
            .extend_from_slice(files[group.jobs[self.next] as usize].rel_path());
    }

    /// Pair file `next` with `entry` and move on.
    fn emit(&mut self, entry: Option<Entry>) {
        let index = self.group.jobs[self.next];
        self.go = (self.push)(Item {
            index,
            group: self.g,
            entry,
        });
        self.next += 1;
    }

    /// One scan under the group's prefix, merged with its files (both in
    /// key order; a root given twice lists its files twice, side by side).
    fn merge(&mut self, store: &Store, prune: bool, scanned: &mut Scanned) -> rusqlite::Result<()> {
        let (group, n) = (self.group, self.group.jobs.len());
        if n > 0 {
            self.load_key();
        }
        store.scan(&group.prefix, |row, entry| {
            let mut matched = false;
            while self.go && self.next < n {
                match self.key.as_slice().cmp(row) {
                    std::cmp::Ordering::Less => self.emit(None),
                    std::cmp::Ordering::Equal => {
                        matched = true;
                        self.emit(entry);
                    }
                    std::cmp::Ordering::Greater => break,
                }
                if self.next < n {
                    self.load_key();
                }
            }
            if matched && entry.is_none() {
                scanned.damaged += 1;
            }
            if !matched && prune {
                scanned.unseen.push(row.to_vec());
            }
            // With every file paired, reading on only serves pruning.
            self.go && (prune || self.next < n)
        })
    }

    /// A query per file.
    fn points(&mut self, store: &Store, scanned: &mut Scanned) -> rusqlite::Result<()> {
        while self.go && self.next < self.group.jobs.len() {
            self.load_key();
            let entry = match store.get(&self.key)? {
                Some(Some(e)) => Some(e),
                Some(None) => {
                    scanned.damaged += 1;
                    None
                }
                None => None,
            };
            self.emit(entry);
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
pub struct Filesystems(HashMap<u64, FsRules>);

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
