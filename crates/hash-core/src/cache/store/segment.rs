//! Segment rows as SQLite holds them: read back and checked, taken out where a
//! write falls among them, and packed anew in rows of at most [`SEGMENT`] entries.

use rusqlite::{params, Connection};

use super::pack::pack;
use super::{entries, seg_check, COLUMNS, SEGMENT};
use crate::cache::rule::Entry;

/// One segment row, borrowed from the row; `entries` is `None` when the
/// check over it fails.
pub(super) struct Seg<'r> {
    pub(super) dir: &'r [u8],
    pub(super) first: &'r [u8],
    last: &'r [u8],
    pub(super) entries: Option<&'r [u8]>,
    /// The check the row holds (`None`: not even a number).
    pub(super) check: Option<i64>,
}

impl<'r> Seg<'r> {
    /// The segment in row `r` (selected as [`COLUMNS`]).
    pub(super) fn of(r: &'r rusqlite::Row<'_>) -> rusqlite::Result<Seg<'r>> {
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

/// The segment [`Store::get`](super::Store::get) read last, unpacked.
#[derive(Debug)]
pub(super) struct Loaded {
    dir: Vec<u8>,
    first: Vec<u8>,
    last: Vec<u8>,
    /// `None`: it failed its check.
    pub(super) entries: Option<Vec<(Vec<u8>, Entry)>>,
}

impl Loaded {
    pub(super) fn of(s: &Seg<'_>) -> Loaded {
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
    pub(super) fn holds(&self, dir: &[u8], name: &[u8]) -> bool {
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
pub(super) fn take_overlapping(
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
pub(super) struct Packer<'c> {
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
    pub(super) fn new(
        conn: &'c Connection,
        dir: &'c [u8],
        total: usize,
    ) -> rusqlite::Result<Packer<'c>> {
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
    pub(super) fn push(&mut self, name: &[u8], e: &Entry) -> rusqlite::Result<()> {
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
    pub(super) fn flush(&mut self) -> rusqlite::Result<()> {
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

/// The bytes of a blob (or text) value; `None` for anything else.
fn bytes(v: rusqlite::types::ValueRef<'_>) -> Option<&[u8]> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Blob(b) | ValueRef::Text(b) => Some(b),
        _ => None,
    }
}
