//! What `fstat` says of a file that a recorded digest depends on, taken by
//! the hasher on the descriptor it reads when asked ([`crate::hasher::ReadPolicy::stamps`]).
//!
//! The metadata cache trusts a digest only for a file that held still while
//! it was read. Stamping the open descriptor, once when it is opened and once
//! after its last byte, answers that for exactly the bytes hashed (a file
//! renamed over the path meanwhile cannot be mistaken for the one read) and
//! costs two `fstat`s, where a `stat` by path before and after costs two
//! lookups of the name: on a warm tree of a million 64-byte files those
//! lookups were a fifth of a first cached run's samples (`perf`).

/// Nanoseconds in a second.
pub(crate) const NS: i64 = 1_000_000_000;

/// Metadata that must not move for a cached digest to stand: what `stat`
/// says of a file, as stored in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// Size in bytes.
    pub size: u64,
    /// Last modification, in nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Last status change (any write, rename, chmod, `touch`), nanoseconds.
    pub ctime_ns: i64,
    /// Inode number.
    pub ino: u64,
    /// Device number of the filesystem.
    pub dev: u64,
}

impl Stamp {
    /// The stamp of a `stat` result.
    // The fields' integer types differ between targets: the casts are
    // no-ops on some.
    #[allow(clippy::unnecessary_cast)]
    pub fn of(st: &rustix::fs::Stat) -> Stamp {
        let ns = |s: i64, n: i64| s.saturating_mul(NS).saturating_add(n);
        Stamp {
            size: st.st_size as u64,
            mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
            ino: st.st_ino,
            dev: st.st_dev,
        }
    }

    /// Whether both timestamps fall on whole seconds: the mark of a
    /// filesystem that keeps seconds only (ext3, ext4 with small inodes,
    /// HFS+, ...), whose type alone does not tell. A fine-grained stamp falls
    /// on a whole second once in a billion, or once per tick of the coarse
    /// clock at worst; that file is then only trusted a little later.
    pub(crate) fn whole_seconds(&self) -> bool {
        self.mtime_ns % NS == 0 && self.ctime_ns % NS == 0
    }
}

/// What `fstat` said of a file when it was opened and again after the last
/// byte of it was hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// When opened, before anything was read.
    pub opened: Stamp,
    /// After the last byte was read.
    pub read: Stamp,
}

impl Held {
    /// The stamps of the file open as `fd`, stamped `opened` when it was
    /// opened, now that it is read.
    pub fn after(opened: Stamp, fd: std::os::fd::BorrowedFd<'_>) -> Option<Held> {
        let read = Stamp::of(&rustix::fs::fstat(fd).ok()?);
        Some(Held { opened, read })
    }
}
