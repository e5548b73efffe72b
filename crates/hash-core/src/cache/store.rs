//! The cache on disk: one SQLite database, reached only through this module.
//!
//! One table, `segments`: a row holds up to [`SEGMENT`] entries of one
//! directory, packed in name order, keyed by the directory's absolute path
//! bytes and its first name (a `WITHOUT ROWID` table: the rows live in the
//! key's B-tree, so a root's directories are one sequential scan). A row per
//! file cost as much to insert as hashing a 64-byte file; a row per segment
//! is one insert per thousand files. Versioned by `PRAGMA application_id`
//! (ours, so another program's database is told apart) and `PRAGMA
//! user_version`. The schema is described in docs/cache.md.
//!
//! Nothing is written before the file is known to be ours or empty (or an
//! older schema of ours): a corrupt file or another program's database is
//! refused by name, never overwritten. WAL mode lets a run read while
//! another writes; `busy_timeout` makes concurrent writers wait for each
//! other instead of failing; writes go in batches, one transaction each,
//! merged into the segments they fall among. Every segment carries a check
//! over its fields, so a damaged one is re-hashed instead of trusted.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::rule::{Entry, Stamp};

/// `PRAGMA application_id` of a hashrace cache ("HRC1").
pub const APPLICATION_ID: i32 = 0x4852_4331;

/// `PRAGMA user_version`: the schema this build reads and writes.
pub const SCHEMA_VERSION: i32 = 2;

/// How long a run waits for another run's write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// Entries packed into one segment row at most (see [`Store::insert`]).
const SEGMENT: usize = 1024;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS segments (
    dir BLOB NOT NULL,
    first BLOB NOT NULL,
    last BLOB NOT NULL,
    entries BLOB NOT NULL,
    seg_check INTEGER NOT NULL,
    PRIMARY KEY (dir, first)
) WITHOUT ROWID";

const COLUMNS: &str = "dir, first, last, entries, seg_check";

/// Why a cache could not be used.
#[derive(Debug)]
pub enum OpenError {
    /// The file is not a cache this build can use (random bytes, another
    /// program's database, another schema): the run stops, the file is left
    /// alone.
    Refused(String),
    /// The cache cannot be reached or written (a read-only location, a full
    /// disk): the run goes on without it.
    Unavailable(String),
    /// The path, or one SQLite would write beside it, exists and is not a
    /// regular file (a block device, `/dev/null`, a FIFO, a directory): the
    /// run stops before anything is written to it.
    NotRegular(std::path::PathBuf),
}

/// The files SQLite writes beside the database `path` in WAL mode, or while
/// it lays one out (its rollback journal).
fn companions(path: &Path) -> [std::path::PathBuf; 3] {
    ["-wal", "-shm", "-journal"].map(|suffix| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    })
}

/// Refuse `path` and its companions unless each is a regular file or absent:
/// SQLite would open a device and write its pages over whatever is on it.
/// (A symbolic link is followed, as SQLite follows it.) Only a check made
/// before the open: a path swapped for a device in between is not covered.
fn only_regular(path: &Path) -> Result<(), OpenError> {
    let all = std::iter::once(path.to_path_buf()).chain(companions(path));
    for p in all {
        if std::fs::metadata(&p).is_ok_and(|m| !m.is_file()) {
            return Err(OpenError::NotRegular(p));
        }
    }
    Ok(())
}

/// An open cache database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    /// The segment [`Store::get`] read last.
    loaded: std::cell::RefCell<Option<Box<Loaded>>>,
    /// The schema version of an older cache this open replaced.
    pub replaced: Option<i32>,
}

/// Records to write: each key (absolute path bytes) and its entry, the keys
/// in one buffer (a first run records a million; an allocation each, freed
/// on another thread, showed in its profile).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Batch {
    keys: Vec<u8>,
    /// Where each key ends in `keys` (it starts where the one before ends),
    /// and its entry.
    records: Vec<(usize, Entry)>,
}

impl Batch {
    /// Add the record of the key made of `parts`, joined.
    pub fn push(&mut self, parts: &[&[u8]], entry: Entry) {
        for p in parts {
            self.keys.extend_from_slice(p);
        }
        self.records.push((self.keys.len(), entry));
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Each key and its entry, in the order pushed.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> + '_ {
        let starts = std::iter::once(0).chain(self.records.iter().map(|r| r.0));
        starts
            .zip(&self.records)
            .map(|(start, (end, e))| (&self.keys[start..*end], e))
    }
}

/// Whether a failure means the file is not usable as a cache at all.
pub(crate) fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    )
}

/// The words of an SQLite failure for a message ("database or disk is
/// full", "file is not a database").
pub fn reason(e: &rusqlite::Error) -> String {
    e.to_string()
}

fn classify(e: rusqlite::Error) -> OpenError {
    if is_damage(&e) {
        OpenError::Refused(format!("not a hashrace cache ({})", reason(&e)))
    } else {
        OpenError::Unavailable(reason(&e))
    }
}

/// What an opened file holds.
enum Found {
    Ours(i32),
    Empty,
    Foreign,
}

/// Run `f` again while it fails because another connection holds a lock,
/// for at most [`BUSY_TIMEOUT`]: SQLite calls the busy handler for most
/// waits, but not for the switch of a new file to WAL, which two runs
/// opening a new cache at once both make.
fn patiently<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match f() {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            r => return r,
        }
    }
}

/// What `conn` holds, read in one transaction: another run may be laying
/// out the same new file at this moment, and three separate reads could
/// see half of its work.
fn inspect(conn: &Connection) -> rusqlite::Result<Found> {
    conn.execute_batch("BEGIN")?;
    let found = read_header(conn);
    // Only read: ending it cannot lose anything.
    let _ = conn.execute_batch("COMMIT");
    found
}

/// [`inspect`], inside a transaction the caller holds.
fn read_header(conn: &Connection) -> rusqlite::Result<Found> {
    let app: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    Ok(match (app, objects) {
        (APPLICATION_ID, _) => Found::Ours(version),
        (0, 0) if version == 0 => Found::Empty,
        _ => Found::Foreign,
    })
}

impl Store {
    /// Open (or create) the cache at `path`. Reads first, and writes only
    /// to a database that is ours or empty.
    pub fn open(path: &Path) -> Result<Store, OpenError> {
        only_regular(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(classify)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(classify)?;
        let fresh = match patiently(|| inspect(&conn)).map_err(classify)? {
            Found::Ours(SCHEMA_VERSION) => false,
            // An older hashrace's: only a cache, laid out afresh.
            Found::Ours(v) if (1..SCHEMA_VERSION).contains(&v) => true,
            Found::Ours(v) => {
                return Err(OpenError::Refused(format!(
                    "a cache of schema version {v}, this program uses {SCHEMA_VERSION}"
                )))
            }
            Found::Empty => true,
            Found::Foreign => {
                return Err(OpenError::Refused(
                    "not a hashrace cache (another program's SQLite database)".into(),
                ))
            }
        };
        if fresh {
            // Segments are tens of KiB: large pages keep their overflow
            // chains short. Only takes effect before the file has pages
            // (a no-op when another run laid it out first).
            conn.execute_batch("PRAGMA page_size = 65536")
                .map_err(classify)?;
        }
        // WAL: readers and one writer at a time; NORMAL: a power cut may
        // lose the last transactions, never the database. A page cache of
        // 16 MiB and no memory map (the bundled default), so a scan of a
        // million rows does not put the whole file in the resident set.
        patiently(|| conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)))
            .map_err(classify)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16384")
            .map_err(classify)?;
        let mut store = Store {
            conn,
            loaded: Default::default(),
            replaced: None,
        };
        if fresh {
            store.replaced = store.create().map_err(classify)?;
        }
        Ok(store)
    }

    /// Lay out an empty database, or one of an older schema (whose version
    /// is returned: its entries are dropped), unless a run that opened it
    /// at the same time has done it first (the write lock orders the two).
    fn create(&self) -> rusqlite::Result<Option<i32>> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let lay_out = format!(
            "{SCHEMA}; PRAGMA application_id = {APPLICATION_ID}; \
             PRAGMA user_version = {SCHEMA_VERSION}"
        );
        let laid = match read_header(&self.conn) {
            Ok(Found::Empty) => self.conn.execute_batch(&lay_out).map(|()| None),
            Ok(Found::Ours(v)) if v < SCHEMA_VERSION => self
                .conn
                .execute_batch(&format!("DROP TABLE IF EXISTS files; {lay_out}"))
                .map(|()| Some(v)),
            // Laid out meanwhile.
            Ok(_) => Ok(None),
            Err(e) => Err(e),
        };
        match laid {
            Ok(v) => self.conn.execute_batch("COMMIT").map(|()| v),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Call `segment` for every segment of every directory whose key starts
    /// with `prefix` (which ends in `/`), in key order (directory, then
    /// name), until it returns false. It gets the directory and the packed
    /// entries ([`entries`] reads them), `None` when the segment's check
    /// fails.
    /// Returns the segments that failed their check.
    pub fn scan(
        &self,
        prefix: &[u8],
        mut segment: impl FnMut(&[u8], Option<&[u8]>) -> bool,
    ) -> rusqlite::Result<Vec<Damaged>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM segments WHERE dir >= ?1 AND dir < ?2 ORDER BY dir, first"
        ))?;
        let mut rows = stmt.query(params![prefix, prefix_end(prefix)])?;
        let mut damaged = Vec::new();
        while let Some(r) = rows.next()? {
            let seg = Seg::of(r)?;
            if seg.entries.is_none() {
                damaged.push(Damaged {
                    dir: seg.dir.to_vec(),
                    first: seg.first.to_vec(),
                    check: seg.check,
                });
            }
            if !segment(seg.dir, seg.entries) {
                break;
            }
        }
        Ok(damaged)
    }

    /// Delete the segments of `damaged` that are still as they were found
    /// (a write since may have replaced one), in one transaction.
    pub fn drop_damaged(&mut self, damaged: &[Damaged]) -> rusqlite::Result<()> {
        self.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "DELETE FROM segments WHERE dir = ?1 AND first = ?2 AND seg_check IS ?3",
            )?;
            for d in damaged {
                stmt.execute(params![d.dir, d.first, d.check])?;
            }
            Ok(())
        })
    }

    /// Run `body` in one write transaction (taken at once, so two runs
    /// writing one cache take turns), committed if it succeeds. The segment
    /// [`Store::get`] kept is forgotten: the write may change it.
    fn write(
        &mut self,
        body: impl FnOnce(&Connection) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        self.loaded.take();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        body(&tx)?;
        tx.commit()
    }

    /// Whether any directory whose key starts with `prefix` (which ends in
    /// `/`) has entries. A failed query says yes: the scan will say why.
    pub fn holds_any(&self, prefix: &[u8]) -> bool {
        let any = || -> rusqlite::Result<bool> {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT 1 FROM segments WHERE dir >= ?1 AND dir < ?2 LIMIT 1")?;
            stmt.exists(params![prefix, prefix_end(prefix)])
        };
        any().unwrap_or(true)
    }

    /// The entry of `key` (`Some(None)`: the segment that would hold it
    /// fails its check). The segment read last is kept, so a list of files
    /// named in key order reads each segment once.
    pub fn get(&self, key: &[u8]) -> rusqlite::Result<Option<Option<Entry>>> {
        let (dir, name) = split(key);
        let mut loaded = self.loaded.borrow_mut();
        let held = loaded.as_ref().is_some_and(|l| l.holds(dir, name));
        if !held {
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM segments WHERE dir = ?1 AND first <= ?2 \
                 ORDER BY first DESC LIMIT 1"
            ))?;
            let found = stmt
                .query_row(params![dir, name], |r| {
                    Seg::of(r).map(|s| Box::new(Loaded::of(&s)))
                })
                .optional()?;
            match found {
                Some(l) if l.holds(dir, name) => *loaded = Some(l),
                _ => return Ok(None),
            }
        }
        let l = loaded.as_ref().expect("loaded above");
        Ok(match &l.entries {
            None => Some(None),
            Some(es) => es
                .binary_search_by(|(n, _)| n.as_slice().cmp(name))
                .ok()
                .map(|i| Some(es[i].1)),
        })
    }

    /// Write the records of `batch` (replacing what their keys held; of two
    /// records of one key, the later) in one transaction. Each directory's new entries
    /// are merged into the segments whose names they fall among, and the
    /// result is written back in segments of at most [`SEGMENT`] entries:
    /// records that arrive in key order (a first run) only append.
    pub fn insert(&mut self, batch: &Batch) -> rusqlite::Result<()> {
        let mut new: Vec<(&[u8], &[u8], &Entry)> = batch
            .iter()
            .map(|(key, e)| {
                let (dir, name) = split(key);
                (dir, name, e)
            })
            .collect();
        // Stable: of equal keys, the later stays later.
        new.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        self.write(|tx| {
            for run in new.chunk_by(|a, b| a.0 == b.0) {
                let (dir, lo, hi) = (run[0].0, run[0].1, run[run.len() - 1].1);
                let old = take_overlapping(tx, dir, lo, hi)?;
                let mut out = Packer::new(tx, dir, old.len() + run.len())?;
                let mut old = old.iter().peekable();
                for (i, &(_, name, e)) in run.iter().enumerate() {
                    if run.get(i + 1).is_some_and(|next| next.1 == name) {
                        continue; // a later record of the same key follows
                    }
                    while let Some((n, oe)) = old.next_if(|(n, _)| n.as_slice() <= name) {
                        if n.as_slice() != name {
                            out.push(n, oe)?;
                        }
                    }
                    out.push(name, e)?;
                }
                for (n, oe) in old {
                    out.push(n, oe)?;
                }
                out.flush()?;
            }
            Ok(())
        })
    }

    /// Delete the entries of `keys`, in one transaction.
    pub fn delete(&mut self, keys: &[Vec<u8>]) -> rusqlite::Result<()> {
        let mut gone: Vec<(&[u8], &[u8])> = keys.iter().map(|k| split(k)).collect();
        gone.sort_unstable();
        gone.dedup();
        self.write(|tx| {
            for run in gone.chunk_by(|a, b| a.0 == b.0) {
                let (dir, lo, hi) = (run[0].0, run[0].1, run[run.len() - 1].1);
                let old = take_overlapping(tx, dir, lo, hi)?;
                let mut out = Packer::new(tx, dir, old.len())?;
                for (n, e) in &old {
                    if run.binary_search_by(|g| g.1.cmp(n.as_slice())).is_err() {
                        out.push(n, e)?;
                    }
                }
                out.flush()?;
            }
            Ok(())
        })
    }
}

/// A segment that failed its check, as a scan found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    dir: Vec<u8>,
    first: Vec<u8>,
    /// The check it holds (`None`: not even a number).
    check: Option<i64>,
}

/// A key (or a relative path) split into its directory (up to and with its
/// last `/`) and name.
pub(super) fn split(key: &[u8]) -> (&[u8], &[u8]) {
    let at = key.iter().rposition(|b| *b == b'/').map_or(0, |i| i + 1);
    key.split_at(at)
}

/// One segment row, borrowed from the row; `entries` is `None` when the
/// check over it fails.
struct Seg<'r> {
    dir: &'r [u8],
    first: &'r [u8],
    last: &'r [u8],
    entries: Option<&'r [u8]>,
    /// The check the row holds (`None`: not even a number).
    check: Option<i64>,
}

impl<'r> Seg<'r> {
    /// The segment in row `r` (selected as [`COLUMNS`]).
    fn of(r: &'r rusqlite::Row<'_>) -> rusqlite::Result<Seg<'r>> {
        let blob = |i: usize| r.get_ref(i).map(|v| bytes(v).unwrap_or_default());
        let (dir, first, last, packed) = (blob(0)?, blob(1)?, blob(2)?, blob(3)?);
        let check: Option<i64> = r.get(4).ok();
        let ok = check == Some(seg_check(dir, first, last, packed));
        Ok(Seg {
            dir,
            first,
            last,
            entries: ok.then_some(packed),
            check,
        })
    }
}

/// The segment [`Store::get`] read last, unpacked.
#[derive(Debug)]
struct Loaded {
    dir: Vec<u8>,
    first: Vec<u8>,
    last: Vec<u8>,
    /// `None`: it failed its check.
    entries: Option<Vec<(Vec<u8>, Entry)>>,
}

impl Loaded {
    fn of(s: &Seg<'_>) -> Loaded {
        Loaded {
            dir: s.dir.to_vec(),
            first: s.first.to_vec(),
            last: s.last.to_vec(),
            entries: s
                .entries
                .map(|p| entries(p).map(|(n, e)| (n.to_vec(), e)).collect()),
        }
    }

    /// Whether `name` of `dir` falls among this segment's names.
    fn holds(&self, dir: &[u8], name: &[u8]) -> bool {
        self.dir == dir && self.first.as_slice() <= name && name <= self.last.as_slice()
    }
}

/// A segment smaller than this (about half full) just before the names of
/// a write is taken into it, so that batches that end in the middle of a
/// directory, and names added after its last, fill segments up instead of
/// leaving small ones behind.
const SMALL: i64 = 32 * 1024;

/// Read and delete the segments of `dir` whose names overlap `lo..=hi`
/// (and the one before them, if it is [`SMALL`]), returning their entries
/// in name order (a damaged segment's are dropped: its files were misses,
/// and are recorded again).
fn take_overlapping(
    conn: &Connection,
    dir: &[u8],
    lo: &[u8],
    hi: &[u8],
) -> rusqlite::Result<Vec<(Vec<u8>, Entry)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM segments WHERE dir = ?1 AND first <= ?3 \
         AND (last >= ?2 OR length(entries) < ?4) \
         AND first >= coalesce((SELECT max(first) FROM segments WHERE dir = ?1 AND first <= ?2), x'') \
         ORDER BY first"
    ))?;
    let mut old = Vec::new();
    let mut firsts = Vec::new();
    let mut rows = stmt.query(params![dir, lo, hi, SMALL])?;
    while let Some(r) = rows.next()? {
        let seg = Seg::of(r)?;
        firsts.push(seg.first.to_vec());
        if let Some(p) = seg.entries {
            old.extend(entries(p).map(|(n, e)| (n.to_vec(), e)));
        }
    }
    let mut del = conn.prepare_cached("DELETE FROM segments WHERE dir = ?1 AND first = ?2")?;
    for first in firsts {
        del.execute(params![dir, first])?;
    }
    Ok(old)
}

/// Entries of one directory packed into segments of at most [`SEGMENT`],
/// each written as a row when full (and by [`Packer::flush`]).
struct Packer<'c> {
    stmt: rusqlite::CachedStatement<'c>,
    dir: &'c [u8],
    packed: Vec<u8>,
    n: usize,
    /// Entries a segment gets.
    per: usize,
    first: Vec<u8>,
    last: Vec<u8>,
}

impl<'c> Packer<'c> {
    /// A packer of about `total` entries of `dir`, spread evenly over as few
    /// segments as [`SEGMENT`] allows (1,025 entries make 513 + 512, not
    /// 1,024 + 1).
    fn new(conn: &'c Connection, dir: &'c [u8], total: usize) -> rusqlite::Result<Packer<'c>> {
        let per = total
            .div_ceil(total.div_ceil(SEGMENT).max(1))
            .clamp(1, SEGMENT);
        Ok(Packer {
            per,
            stmt: conn.prepare_cached(&format!(
                "INSERT OR REPLACE INTO segments ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5)"
            ))?,
            dir,
            packed: Vec::new(),
            n: 0,
            first: Vec::new(),
            last: Vec::new(),
        })
    }

    /// Add the entry of `name`, the greatest so far.
    fn push(&mut self, name: &[u8], e: &Entry) -> rusqlite::Result<()> {
        if self.n == 0 {
            self.first.clear();
            self.first.extend_from_slice(name);
        }
        self.last.clear();
        self.last.extend_from_slice(name);
        pack(&mut self.packed, name, e);
        self.n += 1;
        if self.n == self.per {
            self.flush()?;
        }
        Ok(())
    }

    /// Write the segment being packed, if it holds anything.
    fn flush(&mut self) -> rusqlite::Result<()> {
        if self.n == 0 {
            return Ok(());
        }
        let check = seg_check(self.dir, &self.first, &self.last, &self.packed);
        self.stmt
            .execute(params![self.dir, self.first, self.last, self.packed, check])?;
        self.packed.clear();
        self.n = 0;
        Ok(())
    }
}

/// Append the entry of `name` to `out`: the name's length and the name,
/// the size, mtime (8 bytes LE), ctime less mtime, recorded less ctime,
/// inode, device, then the digest. Lengths and numbers are LEB128 varints
/// (the two differences zigzag-encoded): the usual entry takes about 60
/// bytes instead of 90, and every byte is written to the log, copied into
/// the database and checked.
fn pack(out: &mut Vec<u8>, name: &[u8], e: &Entry) {
    let s = &e.stamp;
    varint(out, name.len() as u64);
    out.extend_from_slice(name);
    varint(out, s.size);
    out.extend_from_slice(&s.mtime_ns.to_le_bytes());
    varint(out, zigzag(s.ctime_ns.wrapping_sub(s.mtime_ns)));
    varint(out, zigzag(e.recorded_ns.wrapping_sub(s.ctime_ns)));
    varint(out, s.ino);
    varint(out, s.dev);
    out.extend_from_slice(&e.digest);
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

/// Reads what [`pack`] wrote; every step fails (`None`) on short or
/// malformed input instead of panicking.
struct Unpack<'p>(&'p [u8]);

impl<'p> Unpack<'p> {
    fn take(&mut self, n: usize) -> Option<&'p [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.take(1)?.first()?;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    }

    fn entry(&mut self) -> Option<(&'p [u8], Entry)> {
        let len = usize::try_from(self.varint()?).ok()?;
        let name = self.take(len)?;
        let size = self.varint()?;
        let mtime_ns = i64::from_le_bytes(self.take(8)?.try_into().ok()?);
        let ctime_ns = mtime_ns.wrapping_add(unzigzag(self.varint()?));
        let recorded_ns = ctime_ns.wrapping_add(unzigzag(self.varint()?));
        let (ino, dev) = (self.varint()?, self.varint()?);
        let digest = self.take(32)?.try_into().ok()?;
        let stamp = Stamp {
            size,
            mtime_ns,
            ctime_ns,
            ino,
            dev,
        };
        Some((
            name,
            Entry {
                stamp,
                digest,
                recorded_ns,
            },
        ))
    }
}

/// The entries packed in a segment (see [`pack`]), in name order. Stops at
/// the first that does not parse (one that passed its check always does).
pub fn entries(packed: &[u8]) -> impl Iterator<Item = (&[u8], Entry)> + '_ {
    let mut input = Unpack(packed);
    std::iter::from_fn(move || input.entry())
}

/// The first key past every key that starts with `prefix` (which ends in
/// `/`; `0` is the byte after `/`).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    debug_assert!(prefix.ends_with(b"/"));
    let mut end = prefix.to_vec();
    *end.last_mut().expect("a prefix ends in /") = b'/' + 1;
    end
}

/// The bytes of a blob (or text) value; `None` for anything else.
fn bytes(v: rusqlite::types::ValueRef<'_>) -> Option<&[u8]> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Blob(b) | ValueRef::Text(b) => Some(b),
        _ => None,
    }
}

/// A check over every field of a segment: XXH3 (64 bits) of them all,
/// each field after its length (u64 LE). A flipped bit anywhere makes its
/// files misses, not lies. (XXH3 is specified and stable across versions,
/// and checks a segment in microseconds; SHA-256 over the segments of a
/// million 64-byte files took a third of the time recording them took.)
pub fn seg_check(dir: &[u8], first: &[u8], last: &[u8], packed: &[u8]) -> i64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for field in [dir, first, last, packed] {
        h.update(&(field.len() as u64).to_le_bytes());
        h.update(field);
    }
    h.digest() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u8) -> Entry {
        Entry {
            stamp: Stamp {
                size: u64::from(n),
                mtime_ns: 1,
                ctime_ns: 2,
                ino: u64::MAX,
                dev: 4,
            },
            digest: [n; 32],
            recorded_ns: 5,
        }
    }

    /// A batch of the records `(key, n)`, entry `entry(n)`.
    fn batch<K: AsRef<[u8]>>(records: &[(K, u8)]) -> Batch {
        let mut b = Batch::default();
        for (k, n) in records {
            b.push(&[k.as_ref()], entry(*n));
        }
        b
    }

    /// Every entry under `prefix`, as (key, entry), from a scan.
    fn scanned(s: &Store, prefix: &[u8]) -> Vec<(Vec<u8>, Option<Entry>)> {
        let mut seen = Vec::new();
        s.scan(prefix, |dir, packed| {
            match packed {
                Some(p) => seen.extend(entries(p).map(|(n, e)| ([dir, n].concat(), Some(e)))),
                None => seen.push((dir.to_vec(), None)),
            }
            true
        })
        .unwrap();
        seen
    }

    #[test]
    fn entries_come_back_as_written_and_a_scan_stays_under_its_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("c")).unwrap();
        let rows = [
            ("/a/b", 1),
            ("/a/b/x", 2),
            ("/a/b/y", 3),
            ("/a/b0", 4),
            ("/a/b-c", 5),
        ];
        s.insert(&batch(&rows)).unwrap();
        let want: Vec<_> = rows[1..3]
            .iter()
            .map(|(k, n)| (k.as_bytes().to_vec(), Some(entry(*n))))
            .collect();
        assert_eq!(scanned(&s, b"/a/b/"), want);
        assert_eq!(s.get(b"/a/b0").unwrap(), Some(Some(entry(4))));
        assert_eq!(s.get(b"/a/z").unwrap(), None);
        assert_eq!(
            s.get(b"/a/b/w").unwrap(),
            None,
            "before the segment's first"
        );
        s.delete(&[b"/a/b0".to_vec()]).unwrap();
        assert_eq!(s.get(b"/a/b0").unwrap(), None);
        assert_eq!(s.get(b"/a/b-c").unwrap(), Some(Some(entry(5))));
        // Reopened: still ours.
        drop(s);
        let s = Store::open(&dir.path().join("c")).unwrap();
        assert_eq!(s.get(b"/a/b").unwrap(), Some(Some(entry(1))));
    }

    /// A small deterministic generator (xorshift), for the model test.
    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn merged_inserts_and_deletes_agree_with_a_plain_map() {
        // Batches out of key order, repeated keys, deletions, spread over
        // directories of several segments: the store must hold what a map
        // would, in key order, in segments of at most SEGMENT entries.
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("c")).unwrap();
        let mut model = std::collections::BTreeMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..12u8 {
            let records: Vec<(String, u8)> = (0..1500)
                .map(|_| {
                    let r = xorshift(&mut x);
                    let key = format!("/t/d{}/f{:05}", r % 3, (r >> 8) % 4000);
                    (key, round)
                })
                .collect();
            s.insert(&batch(&records)).unwrap();
            for (k, n) in &records {
                model.insert(k.as_bytes().to_vec(), entry(*n));
            }
            let gone: Vec<Vec<u8>> = (0..200)
                .map(|_| {
                    let r = xorshift(&mut x);
                    format!("/t/d{}/f{:05}", r % 3, (r >> 8) % 4000).into_bytes()
                })
                .collect();
            s.delete(&gone).unwrap();
            for k in &gone {
                model.remove(k);
            }
        }
        let want: Vec<_> = model.iter().map(|(k, e)| (k.clone(), Some(*e))).collect();
        assert_eq!(scanned(&s, b"/t/"), want);
        for (k, e) in model.iter().step_by(97) {
            assert_eq!(s.get(k).unwrap(), Some(Some(*e)));
        }
        let most: i64 = s
            .conn
            .query_row("SELECT max(length(entries)) FROM segments", [], |r| {
                r.get(0)
            })
            .unwrap();
        // A name, five varints of at most 10 bytes, mtime, the digest.
        let per_entry = (1 + "f00000".len() + 5 * 10 + 8 + 32) as i64;
        assert!(most <= SEGMENT as i64 * per_entry, "{most}");
    }

    /// How many segments `dir` has, and their entry counts.
    fn segments_of(s: &Store, dir: &[u8]) -> Vec<usize> {
        let mut counts = Vec::new();
        s.scan(dir, |d, packed| {
            if d == dir {
                counts.push(entries(packed.unwrap()).count());
            }
            true
        })
        .unwrap();
        counts
    }

    #[test]
    fn a_directory_written_in_small_batches_ends_in_few_segments() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("c")).unwrap();
        // 2,000 names in key order, 100 a batch (a first run's batches
        // cut directories anywhere): a small last segment takes the next
        // batch in, so the segments fill up instead of staying at 100.
        for b in 0..20 {
            let names: Vec<(String, u8)> = (0..100)
                .map(|i| (format!("/d/f{:05}", b * 100 + i), 1))
                .collect();
            s.insert(&batch(&names)).unwrap();
        }
        let counts = segments_of(&s, b"/d/");
        assert_eq!(counts.iter().sum::<usize>(), 2000);
        assert!(counts.len() <= 5, "{counts:?}");
        // One over a full segment is split evenly, not 1,024 + 1.
        let names: Vec<(String, u8)> = (0..SEGMENT + 1)
            .map(|i| (format!("/e/g{i:05}"), 1))
            .collect();
        s.insert(&batch(&names)).unwrap();
        assert_eq!(segments_of(&s, b"/e/"), [513, 512]);
    }

    #[test]
    fn a_segment_changed_behind_our_back_fails_its_check() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("c")).unwrap();
        s.insert(&batch(&[("/d/f", 1), ("/d/g", 2)])).unwrap();
        s.conn
            .execute("UPDATE segments SET entries = entries || x'00'", [])
            .unwrap();
        assert_eq!(s.get(b"/d/f").unwrap(), Some(None));
        assert_eq!(scanned(&s, b"/d/"), [(b"/d/".to_vec(), None)]);
        let damaged = s.scan(b"/d/", |_, _| true).unwrap();
        assert_eq!(damaged.len(), 1);
        // Recorded again: the damaged segment is replaced.
        s.insert(&batch(&[("/d/f", 3)])).unwrap();
        assert_eq!(s.get(b"/d/f").unwrap(), Some(Some(entry(3))));
        assert_eq!(s.get(b"/d/g").unwrap(), None);
        // Its replacement is not what was found damaged: dropping keeps it.
        s.drop_damaged(&damaged).unwrap();
        assert_eq!(s.get(b"/d/f").unwrap(), Some(Some(entry(3))));
        // A damaged segment nothing replaced is dropped.
        s.insert(&batch(&[("/x/f", 1)])).unwrap();
        s.conn
            .execute(
                "UPDATE segments SET seg_check = seg_check + 1 WHERE dir = x'2f782f'",
                [],
            )
            .unwrap();
        let damaged = s.scan(b"/x/", |_, _| true).unwrap();
        s.drop_damaged(&damaged).unwrap();
        assert_eq!(scanned(&s, b"/x/"), []);
        assert_eq!(s.get(b"/d/f").unwrap(), Some(Some(entry(3))));
    }

    /// Run `statements` on a plain SQLite connection to `path`.
    fn sql(path: &Path, statements: &str) {
        Connection::open(path)
            .unwrap()
            .execute_batch(statements)
            .unwrap();
    }

    /// `Store::open` refuses `path`, saying `why`, and leaves it as it was.
    fn refused_untouched(path: &Path, why: &str) {
        let before = std::fs::read(path).unwrap();
        match Store::open(path) {
            Err(OpenError::Refused(said)) => assert!(said.contains(why), "{said}"),
            r => panic!("{r:?}"),
        }
        assert_eq!(std::fs::read(path).unwrap(), before);
    }

    #[test]
    fn an_older_schema_of_ours_is_laid_out_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        sql(
            &path,
            &format!(
                "CREATE TABLE files (path BLOB PRIMARY KEY); INSERT INTO files VALUES (x'2f66'); \
                 PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1"
            ),
        );
        let mut s = Store::open(&path).unwrap();
        assert_eq!(s.replaced, Some(1));
        s.insert(&batch(&[("/f", 1)])).unwrap();
        assert_eq!(s.get(b"/f").unwrap(), Some(Some(entry(1))));
        drop(s);
        assert_eq!(Store::open(&path).unwrap().replaced, None);
        // A newer hashrace's cache is refused, not changed.
        let newer = dir.path().join("newer");
        sql(
            &newer,
            &format!(
                "CREATE TABLE later (x); PRAGMA application_id = {APPLICATION_ID}; \
                 PRAGMA user_version = {}",
                SCHEMA_VERSION + 1
            ),
        );
        refused_untouched(&newer, "schema version");
    }

    #[test]
    fn random_bytes_and_foreign_databases_are_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk");
        let bytes: Vec<u8> = (0..8192u32).map(|i| (i * 7919 % 251) as u8).collect();
        std::fs::write(&junk, &bytes).unwrap();
        assert!(matches!(Store::open(&junk), Err(OpenError::Refused(_))));
        assert_eq!(std::fs::read(&junk).unwrap(), bytes);
        let other = dir.path().join("other.db");
        sql(&other, "CREATE TABLE t (x); INSERT INTO t VALUES (1)");
        refused_untouched(&other, "another program");
    }

    proptest::proptest! {
        #[test]
        fn any_entry_unpacks_as_packed_and_no_truncation_panics(
            name in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            nums in proptest::prelude::any::<[u64; 6]>(),
            digest in proptest::prelude::any::<[u8; 32]>(),
            cut in 0usize..400,
        ) {
            let e = Entry {
                stamp: Stamp {
                    size: nums[0],
                    mtime_ns: nums[1] as i64,
                    ctime_ns: nums[2] as i64,
                    ino: nums[3],
                    dev: nums[4],
                },
                recorded_ns: nums[5] as i64,
                digest,
            };
            let mut packed = Vec::new();
            pack(&mut packed, &name, &e);
            pack(&mut packed, b"next", &e);
            let got: Vec<_> = entries(&packed).map(|(n, e)| (n.to_vec(), e)).collect();
            proptest::prop_assert_eq!(got, vec![(name.clone(), e), (b"next".to_vec(), e)]);
            let short = &packed[..cut.min(packed.len())];
            proptest::prop_assert!(entries(short).count() <= 2);
        }
    }

    #[test]
    fn prefix_end_is_the_next_byte_after_the_slash() {
        assert_eq!(prefix_end(b"/a/"), b"/a0");
    }
}
