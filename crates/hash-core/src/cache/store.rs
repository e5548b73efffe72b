//! The cache on disk: one SQLite database, reached only through this module.
//!
//! One table, `files`, keyed by absolute path bytes (a `WITHOUT ROWID` table:
//! the rows live in the key's B-tree, so the walk's sorted order is a
//! sequential scan), versioned by `PRAGMA application_id` (ours, so another
//! program's database is told apart) and `PRAGMA user_version`. The schema is
//! described in docs/cache.md.
//!
//! Nothing is written before the file is known to be ours or empty: a
//! corrupt file or another program's database is refused by name, never
//! overwritten. WAL mode lets a run read while another writes; `busy_timeout`
//! makes concurrent writers wait for each other instead of failing; writes go
//! in batches, one transaction each. Every row carries a check over its
//! fields, so a damaged row is re-hashed instead of trusted.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};
use sha2::{Digest, Sha256};

use super::rule::{Entry, Stamp};

/// `PRAGMA application_id` of a hashrace cache ("HRC1").
pub const APPLICATION_ID: i32 = 0x4852_4331;

/// `PRAGMA user_version`: the schema this build reads and writes.
pub const SCHEMA_VERSION: i32 = 1;

/// How long a run waits for another run's write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS files (
    path BLOB PRIMARY KEY NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    dev INTEGER NOT NULL,
    recorded_ns INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    row_check INTEGER NOT NULL
) WITHOUT ROWID";

const COLUMNS: &str = "path, size, mtime_ns, ctime_ns, ino, dev, recorded_ns, sha256, row_check";

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
}

/// An open cache database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
}

/// One row to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The absolute path bytes.
    pub key: Vec<u8>,
    /// What is recorded for it.
    pub entry: Entry,
}

/// Whether a failure means the file is not usable as a cache at all.
fn is_damage(e: &rusqlite::Error) -> bool {
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
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(classify)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(classify)?;
        let fresh = match patiently(|| inspect(&conn)).map_err(classify)? {
            Found::Ours(SCHEMA_VERSION) => false,
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
        // WAL: readers and one writer at a time; NORMAL: a power cut may
        // lose the last transactions, never the database. A page cache of
        // 16 MiB and no memory map (the bundled default), so a scan of a
        // million rows does not put the whole file in the resident set.
        patiently(|| conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)))
            .map_err(classify)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16384")
            .map_err(classify)?;
        let store = Store { conn };
        if fresh {
            store.create().map_err(classify)?;
        }
        Ok(store)
    }

    /// Lay out an empty database, unless a run that opened it at the same
    /// time has done it first (the write lock orders the two).
    fn create(&self) -> rusqlite::Result<()> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let laid = match read_header(&self.conn) {
            Ok(Found::Empty) => self.conn.execute_batch(&format!(
                "{SCHEMA}; PRAGMA application_id = {APPLICATION_ID}; \
                 PRAGMA user_version = {SCHEMA_VERSION}"
            )),
            // Laid out meanwhile.
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        match laid {
            Ok(()) => self.conn.execute_batch("COMMIT"),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Call `row` for every entry whose key starts with `prefix` (which ends
    /// in `/`), in key order, until it returns false. An entry whose check
    /// fails comes as `None`.
    pub fn scan(
        &self,
        prefix: &[u8],
        mut row: impl FnMut(&[u8], Option<Entry>) -> bool,
    ) -> rusqlite::Result<()> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM files WHERE path >= ?1 AND path < ?2 ORDER BY path"
        ))?;
        let mut rows = stmt.query(params![prefix, prefix_end(prefix)])?;
        while let Some(r) = rows.next()? {
            let key = bytes(r.get_ref(0)?).unwrap_or_default();
            if !row(key, entry(key, r)?) {
                break;
            }
        }
        Ok(())
    }

    /// The entry of `key` (`Some(None)`: there is one, but its check fails).
    pub fn get(&self, key: &[u8]) -> rusqlite::Result<Option<Option<Entry>>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM files WHERE path = ?1"))?;
        stmt.query_row([key], |r| entry(key, r)).optional()
    }

    /// Write `records` (replacing what their keys held) in one transaction.
    pub fn insert(&mut self, records: &[Record]) -> rusqlite::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached(&format!(
                "INSERT OR REPLACE INTO files ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?;
            for r in records {
                let (s, e) = (&r.entry.stamp, &r.entry);
                stmt.execute(params![
                    r.key,
                    s.size as i64,
                    s.mtime_ns,
                    s.ctime_ns,
                    s.ino as i64,
                    s.dev as i64,
                    e.recorded_ns,
                    &e.digest[..],
                    row_check(&r.key, e),
                ])?;
            }
        }
        tx.commit()
    }

    /// Delete the entries of `keys`, in one transaction.
    pub fn delete(&mut self, keys: &[Vec<u8>]) -> rusqlite::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached("DELETE FROM files WHERE path = ?1")?;
            for key in keys {
                stmt.execute([key])?;
            }
        }
        tx.commit()
    }
}

/// The first key past every key that starts with `prefix` (which ends in
/// `/`; `0` is the byte after `/`).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    debug_assert!(prefix.ends_with(b"/"));
    let mut end = prefix.to_vec();
    *end.last_mut().expect("a prefix ends in /") = b'/' + 1;
    end
}

/// The entry in row `r` of `key`, `None` if its check fails.
fn entry(key: &[u8], r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<Entry>> {
    let digest: [u8; 32] = match bytes(r.get_ref(7)?).map(<[u8; 32]>::try_from) {
        Some(Ok(d)) => d,
        _ => return Ok(None),
    };
    let e = Entry {
        stamp: Stamp {
            size: r.get::<_, i64>(1)? as u64,
            mtime_ns: r.get(2)?,
            ctime_ns: r.get(3)?,
            ino: r.get::<_, i64>(4)? as u64,
            dev: r.get::<_, i64>(5)? as u64,
        },
        recorded_ns: r.get(6)?,
        digest,
    };
    let check: i64 = r.get(8)?;
    Ok((check == row_check(key, &e)).then_some(e))
}

/// The bytes of a blob (or text) value; `None` for anything else.
fn bytes(v: rusqlite::types::ValueRef<'_>) -> Option<&[u8]> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Blob(b) | ValueRef::Text(b) => Some(b),
        _ => None,
    }
}

/// A check over every field of a row: the first 8 bytes of the SHA-256 of
/// them all. A flipped bit anywhere in a row makes it a miss, not a lie.
pub fn row_check(key: &[u8], e: &Entry) -> i64 {
    let s = &e.stamp;
    let mut h = Sha256::new();
    h.update((key.len() as u64).to_le_bytes());
    h.update(key);
    for n in [s.size, s.mtime_ns as u64, s.ctime_ns as u64, s.ino, s.dev] {
        h.update(n.to_le_bytes());
    }
    h.update(e.recorded_ns.to_le_bytes());
    h.update(e.digest);
    let d = h.finalize();
    i64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &str, n: u8) -> Record {
        Record {
            key: key.as_bytes().to_vec(),
            entry: Entry {
                stamp: Stamp {
                    size: u64::from(n),
                    mtime_ns: 1,
                    ctime_ns: 2,
                    ino: u64::MAX,
                    dev: 4,
                },
                digest: [n; 32],
                recorded_ns: 5,
            },
        }
    }

    #[test]
    fn rows_come_back_as_written_and_a_scan_stays_under_its_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("c")).unwrap();
        let rows = [
            record("/a/b", 1),
            record("/a/b/x", 2),
            record("/a/b/y", 3),
            record("/a/b0", 4),
            record("/a/b-c", 5),
        ];
        s.insert(&rows).unwrap();
        let mut seen = Vec::new();
        s.scan(b"/a/b/", |k, e| {
            seen.push((k.to_vec(), e.unwrap()));
            true
        })
        .unwrap();
        let want: Vec<_> = rows[1..3]
            .iter()
            .map(|r| (r.key.clone(), r.entry))
            .collect();
        assert_eq!(seen, want);
        assert_eq!(s.get(b"/a/b0").unwrap(), Some(Some(rows[3].entry)));
        assert_eq!(s.get(b"/a/z").unwrap(), None);
        s.delete(&[b"/a/b0".to_vec()]).unwrap();
        assert_eq!(s.get(b"/a/b0").unwrap(), None);
        // Reopened: still ours.
        drop(s);
        let s = Store::open(&dir.path().join("c")).unwrap();
        assert_eq!(s.get(b"/a/b").unwrap(), Some(Some(rows[0].entry)));
    }

    #[test]
    fn a_row_changed_behind_our_back_fails_its_check() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("c")).unwrap();
        s.insert(&[record("/f", 1)]).unwrap();
        s.conn
            .execute("UPDATE files SET sha256 = zeroblob(32)", [])
            .unwrap();
        assert_eq!(s.get(b"/f").unwrap(), Some(None));
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
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
            .unwrap();
        let before = std::fs::read(&other).unwrap();
        match Store::open(&other) {
            Err(OpenError::Refused(why)) => assert!(why.contains("another program"), "{why}"),
            r => panic!("{r:?}"),
        }
        assert_eq!(std::fs::read(&other).unwrap(), before);
    }

    #[test]
    fn prefix_end_is_the_next_byte_after_the_slash() {
        assert_eq!(prefix_end(b"/a/"), b"/a0");
    }
}
