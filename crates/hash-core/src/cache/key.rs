//! Cache keys: each file's absolute path, as bytes, and the groups of
//! planned files that share a root.
//!
//! A key is the path the walk gave, made absolute against the working
//! directory and tidied lexically (`.` components and doubled slashes
//! dropped; `..` and symbolic links kept as they are, since resolving them
//! would cost a lookup per file). So `d/x` and `./d/x` share a key, and a run
//! from another directory finds the same entries.
//!
//! The walk lists the files below one root in the order of their keys (they
//! share the root's prefix), so each root's files are a [`Group`] whose
//! entries one sequential scan of the cache's key order can match, and that
//! same scan names the entries under the root that the walk did not see.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::escape::path_bytes;
use crate::strategy::Job;

/// The planned files that share a prefix (the part of their paths before
/// the part relative to their root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The prefix made absolute; it ends in `/`.
    pub prefix: Vec<u8>,
    /// Whether the prefix is a root the walk listed as a directory: then
    /// every entry under it was either seen or is gone, so it is scanned
    /// (and pruned). Files named one by one are looked up one by one.
    pub scan: bool,
    /// Indices of its files in the plan, in plan (and so key) order.
    pub jobs: Vec<u32>,
}

impl Group {
    /// The key of `job`, one of this group's.
    pub fn key(&self, job: &Job) -> Vec<u8> {
        let rel = job.rel_path();
        let mut key = Vec::with_capacity(self.prefix.len() + rel.len());
        key.extend_from_slice(&self.prefix);
        key.extend_from_slice(rel);
        key
    }
}

/// Group `files` by prefix; `dirs` are the roots walked as directories.
/// Standard input (`-`) belongs to no group.
pub fn groups(files: &[Job], dirs: &[PathBuf], cwd: &[u8]) -> Vec<Group> {
    let walked: Vec<Vec<u8>> = dirs.iter().map(|d| dir_prefix(path_bytes(d))).collect();
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    let mut out: Vec<Group> = Vec::new();
    let mut last: Option<(&[u8], usize)> = None;
    for (i, job) in files.iter().enumerate() {
        if crate::walk::is_stdin(job) {
            continue;
        }
        let raw = &path_bytes(&job.path)[..job.rel];
        // Files of one root come together: most lookups end here.
        let g = match last {
            Some((p, g)) if p == raw => g,
            _ => *index.entry(raw).or_insert_with(|| {
                out.push(Group {
                    prefix: absolute_dir(cwd, raw),
                    scan: walked.iter().any(|w| w == raw),
                    jobs: Vec::new(),
                });
                out.len() - 1
            }),
        };
        last = Some((raw, g));
        out[g].jobs.push(i as u32);
    }
    out
}

/// The prefix the walk gives the files below the directory root `root`:
/// the root and a `/` (none added if it ends in one).
fn dir_prefix(root: &[u8]) -> Vec<u8> {
    let mut p = root.to_vec();
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    p
}

/// The working directory's path bytes (`/` if it cannot be known: then
/// relative paths get keys no other directory shares, which costs only
/// misses).
pub fn cwd() -> Vec<u8> {
    std::env::current_dir().map_or_else(|_| b"/".to_vec(), |d| d.as_os_str().as_bytes().to_vec())
}

/// `dir` (a prefix: empty or ending in `/`) made absolute against `cwd` and
/// tidied, ending in `/`.
pub(crate) fn absolute_dir(cwd: &[u8], dir: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(cwd.len() + dir.len() + 2);
    let base: &[u8] = if dir.starts_with(b"/") { b"" } else { cwd };
    let slash = |b: &u8| *b == b'/';
    let parts = base.split(slash).chain(dir.split(slash));
    for part in parts.filter(|p| !p.is_empty() && *p != b".") {
        out.push(b'/');
        out.extend_from_slice(part);
    }
    out.push(b'/');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_made_absolute_and_tidied_lexically() {
        let cwd = b"/home/u";
        for (dir, want) in [
            (&b""[..], &b"/home/u/"[..]),
            (b"d/", b"/home/u/d/"),
            (b"./d/", b"/home/u/d/"),
            (b"d//e/./", b"/home/u/d/e/"),
            (b"../d/", b"/home/u/../d/"),
            (b"/", b"/"),
            (b"/abs//x/", b"/abs/x/"),
            (b"\xff/", b"/home/u/\xff/"),
        ] {
            assert_eq!(absolute_dir(cwd, dir), want, "{dir:?}");
        }
        assert_eq!(absolute_dir(b"/", b"d/"), b"/d/");
    }

    fn job(path: &str, rel: usize) -> Job {
        Job {
            rel,
            ..Job::new(PathBuf::from(path), 0, false)
        }
    }

    #[test]
    fn files_group_by_root_and_only_directory_roots_are_scanned() {
        let files = [
            job("-", 0),
            job("d/a", 2),
            job("d/b/c", 2),
            job("e/x", 2), // a file named on its own: root e/x
            job("e/y", 2), // a file below the directory root e
        ];
        let dirs = [PathBuf::from("d")];
        let g = groups(&files, &dirs, b"/w");
        assert_eq!(g.len(), 2);
        assert_eq!((g[0].prefix.as_slice(), g[0].scan), (&b"/w/d/"[..], true));
        assert_eq!(g[0].jobs, [1, 2]);
        assert_eq!(g[0].key(&files[2]), b"/w/d/b/c");
        assert_eq!((g[1].prefix.as_slice(), g[1].scan), (&b"/w/e/"[..], false));
        assert_eq!(g[1].jobs, [3, 4]);
        let g = groups(&files, &[PathBuf::from("e/")], b"/w");
        assert!(g[1].scan, "a root given with its slash");
    }
}
