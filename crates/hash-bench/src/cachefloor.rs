//! The floor under a metadata cache (`hash-bench cache-floor`): the least work
//! any `--cache` run must do on a tree, measured piece by piece with nothing
//! else around it, so that its targets can be checked against what the machine
//! allows.
//!
//! - **walk**: list every regular file (`readdir` of each directory, no `stat`);
//! - **stat**: `fstatat` each file relative to its open directory (no path
//!   lookup beyond the last name), on `-j` threads: what an unchanged file costs
//!   at least, since only its metadata can say it is unchanged;
//! - **fstat**: one `fstat` of an open file, the second stamp a hashed file needs;
//! - **record**: every file's record (key: absolute path bytes) written into a
//!   fresh cache by the cache's own store, in key order and in the cache's
//!   batches: segments of a directory's entries, packed and checked, one
//!   transaction a batch. What recording a file costs, on one thread.
//!
//! CPU time is the process's (`getrusage`), so a step on two threads reports
//! both threads' time.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

/// One step's cost: wall and CPU seconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cost {
    pub wall: f64,
    pub cpu: f64,
}

/// The floor's pieces on one tree.
#[derive(Debug, Clone, Copy, Default)]
pub struct Floor {
    pub files: usize,
    pub walk: Cost,
    pub stat: Cost,
    /// CPU seconds of one `fstat`.
    pub fstat_each: f64,
    pub insert: Cost,
}

/// The process's CPU seconds so far.
fn cpu_now() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Time `f` in wall and CPU seconds.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Cost) {
    let (start, cpu) = (Instant::now(), cpu_now());
    let out = f();
    let cost = Cost {
        wall: start.elapsed().as_secs_f64(),
        cpu: cpu_now() - cpu,
    };
    (out, cost)
}

/// The regular files under `root`: each directory kept open, and the names in it.
struct Listing {
    dirs: Vec<(File, PathBuf)>,
    /// (index into `dirs`, name)
    names: Vec<(usize, OsString)>,
}

fn list(root: &Path, out: &mut Listing) -> Result<()> {
    let dir = File::open(root).with_context(|| format!("open {}", root.display()))?;
    let d = out.dirs.len();
    out.dirs.push((dir, root.to_path_buf()));
    for entry in std::fs::read_dir(root).with_context(|| format!("read {}", root.display()))? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            list(&entry.path(), out)?;
        } else if kind.is_file() {
            out.names.push((d, entry.file_name()));
        }
    }
    Ok(())
}

/// Measure the floor on the tree at `root` with `jobs` threads for the `stat`s;
/// the SQLite file is made in `scratch` and removed.
pub fn measure(root: &Path, jobs: usize, scratch: &Path) -> Result<Floor> {
    let root = std::path::absolute(root)?;
    let mut listing = Listing {
        dirs: Vec::new(),
        names: Vec::new(),
    };
    let (listed, walk) = timed(|| list(&root, &mut listing));
    listed?;
    let (_, stat) = timed(|| stat_all(&listing, jobs.max(1)));
    let fstat_each = fstat_cost(&listing)?;
    let mut keys: Vec<Vec<u8>> = listing
        .names
        .iter()
        .map(|(d, name)| {
            listing.dirs[*d]
                .1
                .join(name)
                .as_os_str()
                .as_bytes()
                .to_vec()
        })
        .collect();
    keys.sort(); // the walk's order, which the cache writes in
    let (inserted, insert) = timed(|| insert_all(&keys, scratch));
    inserted?;
    Ok(Floor {
        files: listing.names.len(),
        walk,
        stat,
        fstat_each,
        insert,
    })
}

fn stat_all(listing: &Listing, jobs: usize) {
    use rustix::fs::{statat, AtFlags};
    std::thread::scope(|s| {
        for j in 0..jobs {
            s.spawn(move || {
                for (d, name) in listing.names.iter().skip(j).step_by(jobs) {
                    let _ = statat(listing.dirs[*d].0.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW);
                }
            });
        }
    });
}

/// CPU seconds of one `fstat`, from 200,000 of them on the first file.
fn fstat_cost(listing: &Listing) -> Result<f64> {
    const CALLS: usize = 200_000;
    let Some((d, name)) = listing.names.first() else {
        return Ok(0.0);
    };
    let file = File::open(listing.dirs[*d].1.join(name))?;
    let (_, cost) = timed(|| {
        for _ in 0..CALLS {
            let _ = rustix::fs::fstat(&file);
        }
    });
    Ok(cost.cpu / CALLS as f64)
}

/// Records per transaction: the cache's batch.
const BATCH: usize = 4096;

fn insert_all(keys: &[Vec<u8>], scratch: &Path) -> Result<()> {
    use hash_core::cache::rule::{Entry, Stamp};
    use hash_core::cache::store::{Batch, Store};
    let path = scratch.join(format!("hashrace-cache-floor-{}.db", std::process::id()));
    let result = (|| -> Result<()> {
        let mut store = Store::open(&path).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        // Like a file written a day before it is recorded.
        let t = 1_764_000_000_000_000_000i64;
        for (c, chunk) in keys.chunks(BATCH).enumerate() {
            let mut batch = Batch::default();
            for (i, key) in chunk.iter().enumerate() {
                let n = (c * BATCH + i) as u64;
                let stamp = Stamp {
                    size: 64,
                    mtime_ns: t + n as i64 * 1_000,
                    ctime_ns: t + n as i64 * 1_000,
                    ino: 1_000_000 + n,
                    dev: 2049,
                };
                let mut digest = [0u8; 32];
                digest[..8].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
                let entry = Entry {
                    stamp,
                    digest,
                    recorded_ns: t + 86_400_000_000_000,
                };
                batch.push(&[key], entry);
            }
            store.insert(&batch)?;
        }
        Ok(())
    })();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    result.context("recording into a cache")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_regular_files_only_and_leaves_no_scratch_behind() {
        let tree = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("a/b")).unwrap();
        for name in ["x", "a/y", "a/b/z"] {
            std::fs::write(tree.path().join(name), name).unwrap();
        }
        std::os::unix::fs::symlink("x", tree.path().join("link")).unwrap();
        let floor = measure(tree.path(), 2, scratch.path()).unwrap();
        assert_eq!(
            floor.files, 3,
            "three files; the directories and the link are not"
        );
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
    }
}
