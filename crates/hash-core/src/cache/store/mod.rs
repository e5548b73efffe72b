//! The cache on disk: one SQLite database, reached only through this module.
//!
//! One table, `segments`: a row holds up to `SEGMENT` entries of one
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

mod pack;
mod segment;

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::rule::Entry;

pub use pack::entries;
pub(crate) use pack::seg_check;
use segment::{take_overlapping, Loaded, Packer, Seg};

/// `PRAGMA application_id` of a hashrace cache ("HRC1").
pub(crate) const APPLICATION_ID: i32 = 0x4852_4331;

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
    pub(crate) fn scan(
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
    pub(crate) fn drop_damaged(&mut self, damaged: &[Damaged]) -> rusqlite::Result<()> {
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
    pub(crate) fn holds_any(&self, prefix: &[u8]) -> bool {
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
    /// result is written back in segments of at most `SEGMENT` entries:
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
pub(crate) struct Damaged {
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

/// The first key past every key that starts with `prefix` (which ends in
/// `/`; `0` is the byte after `/`).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    debug_assert!(prefix.ends_with(b"/"));
    let mut end = prefix.to_vec();
    *end.last_mut().expect("a prefix ends in /") = b'/' + 1;
    end
}

#[cfg(test)]
mod tests;
