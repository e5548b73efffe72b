//! Unit tests of the store: what is written comes back, merged segments agree with
//! a plain map, and files that are not our cache are refused untouched.

use super::*;
use crate::cache::rule::Stamp;

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

#[test]
fn prefix_end_is_the_next_byte_after_the_slash() {
    assert_eq!(prefix_end(b"/a/"), b"/a0");
}
