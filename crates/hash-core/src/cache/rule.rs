//! When a cached digest may stand for a file: the pure rules, apart from any
//! I/O so that every case can be unit-tested.
//!
//! A file is *unchanged* when its size, mtime, ctime (and, where inode numbers
//! are stable, its inode and device) equal what they were when its digest was
//! taken, and that record was not *racy*. Content cannot change without the
//! kernel setting ctime to the current time (short of resetting the clock), so
//! a rewrite that restores size and mtime (`touch -d`) still shows in ctime.
//!
//! The racy rule is git's: a write lands in the timestamp tick it happens in,
//! so a file whose mtime or ctime is not clearly older than the moment its
//! digest was recorded could be written again within that same tick without
//! any timestamp moving. Such a record is kept but not trusted: the file is
//! hashed again next time, and that later record (taken long after the
//! write) is trusted. "Clearly older" means older by more than the
//! filesystem's tick plus the lag of the kernel's coarse clock, which stamps
//! files a little behind the clock we read (`FsRules::window_ns`).

pub use crate::stamp::Stamp;
use crate::stamp::NS;

/// What the cache holds for one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The file's metadata taken before it was hashed (and found unmoved after).
    pub stamp: Stamp,
    /// Its SHA-256.
    pub digest: [u8; 32],
    /// When the run that hashed it started looking (our clock, ns since the
    /// epoch), taken before the file's metadata was.
    pub recorded_ns: i64,
}

/// The racy window of filesystems with fine timestamps: the kernel stamps
/// files from a coarse clock that lags the real one by up to a scheduler
/// tick (10 ms at HZ=100); twice that, and some more, is clearly older.
pub(crate) const FINE_WINDOW_NS: i64 = 50_000_000;

/// The racy window of filesystems with coarse timestamps (FAT keeps mtime in
/// 2 s steps) or whose timestamps come from another machine's clock (network
/// filesystems, FUSE): 2 s.
pub(crate) const COARSE_WINDOW_NS: i64 = 2 * NS;

/// How far a filesystem's metadata can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FsRules {
    /// Whether inode and device numbers name the same file from one run to
    /// the next. Not on network and FUSE filesystems (sshfs numbers inodes
    /// as it meets them; NFS devices are renumbered by a remount) nor on FAT
    /// (inode numbers are made up when a file is first looked up).
    pub stable_inodes: bool,
    /// How much older than the moment of recording a file's timestamps must
    /// be for the record to be trusted (see the module doc).
    pub window_ns: i64,
}

impl FsRules {
    /// Rules for a local filesystem with nanosecond timestamps.
    pub(crate) const FINE: FsRules = FsRules {
        stable_inodes: true,
        window_ns: FINE_WINDOW_NS,
    };

    /// Rules for a filesystem `statfs` cannot name: the most cautious.
    pub(crate) const UNKNOWN: FsRules = FsRules {
        stable_inodes: false,
        window_ns: COARSE_WINDOW_NS,
    };

    /// The rules for a filesystem of `statfs` type `f_type`.
    pub(crate) fn for_type(f_type: u32) -> FsRules {
        if crate::mapped::is_remote(f_type) || COARSE_LOCAL.contains(&f_type) {
            FsRules::UNKNOWN
        } else {
            FsRules::FINE
        }
    }

    /// The racy window for a file stamped `stamp` on this filesystem.
    fn window_for(&self, stamp: &Stamp) -> i64 {
        if stamp.whole_seconds() {
            self.window_ns.max(COARSE_WINDOW_NS)
        } else {
            self.window_ns
        }
    }
}

/// Local filesystems with coarse timestamps and made-up inode numbers:
/// msdos/vfat, exFAT, HFS, HFS+, ISO 9660, UDF.
const COARSE_LOCAL: [u32; 6] = [0x4d44, 0x2011_bab0, 0x4244, 0x482b, 0x9660, 0x1501_3346];

/// Whether `e`, recorded for a file that is now stamped `now`, may stand for
/// it: same metadata (see [`FsRules::stable_inodes`]) and not racy.
pub(crate) fn unchanged(e: &Entry, now: &Stamp, rules: FsRules) -> bool {
    same(&e.stamp, now, rules) && !racy(&e.stamp, e.recorded_ns, rules)
}

/// Whether a record of `stamp` taken at `recorded_ns` is racy: the file's
/// mtime or ctime is not older than that moment by more than the window.
pub(crate) fn racy(stamp: &Stamp, recorded_ns: i64, rules: FsRules) -> bool {
    let newest = stamp.mtime_ns.max(stamp.ctime_ns);
    newest.saturating_add(rules.window_for(stamp)) >= recorded_ns
}

/// Whether `a` and `b` are the same metadata: size and both timestamps, and
/// inode and device where those are stable.
pub(crate) fn same(a: &Stamp, b: &Stamp, rules: FsRules) -> bool {
    a.size == b.size
        && a.mtime_ns == b.mtime_ns
        && a.ctime_ns == b.ctime_ns
        && (!rules.stable_inodes || (a.ino == b.ino && a.dev == b.dev))
}

/// Whether a digest of `read` bytes, taken between an `fstat` of the open
/// file that gave `before` and one after its last byte that gave `after`
/// (`crate::stamp::Held`), is of a file that held still: the same
/// metadata, and as many bytes as it claimed.
pub(crate) fn held_still(before: &Stamp, after: &Stamp, read: u64, rules: FsRules) -> bool {
    same(before, after, rules) && read == before.size
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_700_000_000 * NS + 123_456_789;

    fn stamp() -> Stamp {
        Stamp {
            size: 10,
            mtime_ns: T,
            ctime_ns: T + 5,
            ino: 42,
            dev: 7,
        }
    }

    fn entry(recorded_ns: i64) -> Entry {
        Entry {
            stamp: stamp(),
            digest: [1; 32],
            recorded_ns,
        }
    }

    const LATER: i64 = T + 10 * NS;

    #[test]
    fn the_same_metadata_recorded_long_after_is_unchanged() {
        assert!(unchanged(&entry(LATER), &stamp(), FsRules::FINE));
    }

    #[test]
    fn any_moved_field_is_a_change() {
        let e = entry(LATER);
        let moved: [fn(&mut Stamp); 5] = [
            |s| s.size += 1,
            |s| s.mtime_ns += 1,
            |s| s.ctime_ns += 1,
            |s| s.ino += 1,
            |s| s.dev += 1,
        ];
        for (k, change) in moved.iter().enumerate() {
            let mut now = stamp();
            change(&mut now);
            assert!(!unchanged(&e, &now, FsRules::FINE), "field {k}");
        }
    }

    #[test]
    fn a_rewrite_with_size_and_mtime_restored_shows_in_ctime() {
        // `touch -d` sets mtime back; the kernel sets ctime to now.
        let mut now = stamp();
        now.ctime_ns = LATER + NS;
        assert!(!unchanged(&entry(LATER), &now, FsRules::FINE));
    }

    #[test]
    fn a_record_within_the_window_of_a_timestamp_is_racy() {
        let rules = FsRules::FINE;
        // ctime (the newer) + window must be before the recording.
        let edge = T + 5 + FINE_WINDOW_NS;
        assert!(racy(&stamp(), edge, rules));
        assert!(!racy(&stamp(), edge + 1, rules));
        assert!(!unchanged(&entry(edge), &stamp(), rules));
        assert!(unchanged(&entry(edge + 1), &stamp(), rules));
        // A timestamp after the recording (a clock set back, `touch -d` into
        // the future): never trusted.
        let mut future = stamp();
        future.mtime_ns = LATER + NS;
        assert!(racy(&future, LATER, rules));
    }

    #[test]
    fn coarse_filesystems_need_a_second_scale_window() {
        let fat = FsRules::for_type(0x4d44);
        assert_eq!(fat.window_ns, COARSE_WINDOW_NS);
        let recorded = T + 5 + NS; // a second after: fine for ext4, not FAT
        assert!(!racy(&stamp(), recorded, FsRules::FINE));
        assert!(racy(&stamp(), recorded, fat));
        assert!(!racy(&stamp(), T + 5 + COARSE_WINDOW_NS + 1, fat));
    }

    #[test]
    fn whole_second_timestamps_get_the_coarse_window_anywhere() {
        let mut s = stamp();
        s.mtime_ns = 1_700_000_000 * NS;
        s.ctime_ns = 1_700_000_001 * NS;
        assert!(racy(&s, s.ctime_ns + NS, FsRules::FINE));
        assert!(!racy(&s, s.ctime_ns + COARSE_WINDOW_NS + 1, FsRules::FINE));
    }

    #[test]
    fn unstable_inodes_are_left_out_of_the_comparison() {
        // Magic numbers written out: FUSE, NFS, SMB2, vfat.
        for f_type in [0x6573_5546, 0x6969, 0xfe53_4d42, 0x4d44] {
            let rules = FsRules::for_type(f_type);
            assert!(!rules.stable_inodes, "{f_type:#x}");
            let mut now = stamp();
            now.ino = 99;
            now.dev = 3;
            let e = entry(LATER);
            assert!(unchanged(&e, &now, rules), "{f_type:#x}");
            now.mtime_ns += 1;
            assert!(
                !unchanged(&e, &now, rules),
                "{f_type:#x}: mtime still counts"
            );
        }
        // ext4, xfs, btrfs, tmpfs keep them.
        for f_type in [0xef53, 0x5846_5342, 0x9123_683e, 0x0102_1994] {
            assert_eq!(FsRules::for_type(f_type), FsRules::FINE, "{f_type:#x}");
        }
    }

    #[test]
    fn a_file_held_still_only_if_nothing_moved_and_every_byte_was_read() {
        let (before, rules) = (stamp(), FsRules::FINE);
        assert!(held_still(&before, &before, 10, rules));
        assert!(!held_still(&before, &before, 11, rules), "grew while read");
        let mut after = before;
        after.mtime_ns += 1;
        assert!(!held_still(&before, &after, 10, rules));
        let mut replaced = before;
        replaced.ino += 1;
        assert!(!held_still(&before, &replaced, 10, rules));
        assert!(held_still(
            &before,
            &replaced,
            10,
            FsRules::for_type(0x6969)
        ));
    }
}
