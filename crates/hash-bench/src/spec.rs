//! Dataset specs (`datasets/*.json`) and the exact list of files each one describes.
//!
//! A spec is small and committed; the bytes are generated (see [`crate::gen`]). The
//! mapping from spec to files and bytes is fully defined here, so that every machine
//! and every release produces the same bytes, hence the same digests:
//!
//! - Files are numbered across groups, in spec order (the *file index*).
//! - Group `g`, file `i` (0-based within the group) is at
//!   `<dir>/` + (`d<j>/` with `j = i mod dirs`, if `dirs > 1`) + `<stem><i><ext>`,
//!   where `i` and `j` are zero-padded to the width of `count-1` and `dirs-1`.
//! - Sizes: `size`, or, with `size_max`, `size + u mod (size_max - size + 1)` where `u`
//!   is the next little-endian `u64` of the ChaCha8 stream `(seed, 2^63 + g)`.
//! - Contents: file `k` holds the first `size` bytes of the ChaCha8 keystream with key
//!   `seed` (8 bytes little-endian, zero-padded to 32) and stream id `k` — see
//!   [`content_rng`]. ChaCha8 is a named, versioned algorithm (unlike `StdRng`), and its
//!   stream/position addressing lets large files be generated in parallel chunks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::util::hex;

/// Version tag of the spec → bytes mapping; part of every spec hash, so changing the
/// mapping invalidates generated data everywhere.
pub const GENERATOR_VERSION: &str = "hashrace-dataset-v1";

/// Stream ids at and above this are reserved for size draws (one per group).
const SIZE_STREAM_BASE: u64 = 1 << 63;

/// One dataset, as committed in `datasets/<name>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Dataset name: `[a-z0-9-]+`; the directory name under the data root.
    pub name: String,
    /// What the dataset is for (which strength or weakness it shows).
    pub description: String,
    /// Seed of all its bytes and sizes.
    pub seed: u64,
    /// Groups of files, in order; file indices count across groups in this order. None:
    /// an empty directory.
    pub groups: Vec<Group>,
    /// SHA-256 (hex) of the dataset's manifest: the output of
    /// `find -H <name> -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum`
    /// run in the data root. `null` when no digest is committed (optional datasets).
    pub expected_manifest_sha256: Option<String>,
    /// SHA-256 (hex) of the dataset's byte-sum manifest (`scripts/pyhash.py --work
    /// pysum`'s output; `hash-bench manifest-digest --work pysum` computes it), when
    /// committed. The Python rows of that work are checked against it before timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_pysum_manifest_sha256: Option<String>,
}

/// A group of similar files inside a dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Sub-directory (relative, `/`-separated) holding the group; empty for the top.
    #[serde(default)]
    pub dir: String,
    /// File-name prefix, before the zero-padded index.
    pub stem: String,
    /// File-name suffix, after the index (e.g. `.bin`).
    #[serde(default)]
    pub ext: String,
    /// Number of files.
    pub count: u64,
    /// Spread the files round-robin over this many sub-directories `d<j>` (1: none).
    #[serde(default = "one")]
    pub dirs: u64,
    /// Size in bytes, or the smallest size when `size_max` is set.
    pub size: u64,
    /// Largest size in bytes (inclusive); sizes are then drawn uniformly.
    #[serde(default)]
    pub size_max: Option<u64>,
}

fn one() -> u64 {
    1
}

/// One file a spec describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// File index: the ChaCha8 stream id of its contents.
    pub index: u64,
    /// Path relative to the dataset directory, `/`-separated.
    pub rel: String,
    /// Size in bytes.
    pub size: u64,
}

/// The ChaCha8 generator for `stream` under `seed`, at position 0.
pub fn content_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(stream);
    rng
}

fn width(n: u64) -> usize {
    n.saturating_sub(1).to_string().len()
}

fn valid_component(c: &str) -> bool {
    !c.is_empty()
        && c != "."
        && c != ".."
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl Spec {
    /// Read and check a spec file.
    pub fn load(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading spec {}", path.display()))?;
        let spec: Spec = serde_json::from_str(&text)
            .with_context(|| format!("parsing spec {}", path.display()))?;
        spec.check()
            .with_context(|| format!("invalid spec {}", path.display()))?;
        Ok(spec)
    }

    /// Check names, paths and sizes, and that no two files share a path.
    pub fn check(&self) -> Result<()> {
        ensure!(
            !self.name.is_empty()
                && self
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "dataset name {:?} must match [a-z0-9-]+",
            self.name
        );
        // No groups is allowed: the dataset is an empty directory (`empty`).
        for (g, group) in self.groups.iter().enumerate() {
            ensure!(group.count > 0, "group {g}: count must be > 0");
            ensure!(group.dirs > 0, "group {g}: dirs must be > 0");
            if !group.dir.is_empty() {
                ensure!(
                    group.dir.split('/').all(valid_component),
                    "group {g}: bad dir {:?}",
                    group.dir
                );
            }
            ensure!(
                valid_component(&format!("{}0{}", group.stem, group.ext)),
                "group {g}: stem/ext must be plain file-name characters"
            );
            if let Some(max) = group.size_max {
                ensure!(max >= group.size, "group {g}: size_max < size");
                ensure!(max < u64::MAX, "group {g}: size_max too large");
            }
        }
        if let Some(d) = &self.expected_manifest_sha256 {
            ensure!(
                d.len() == 64
                    && d.bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
                "expected_manifest_sha256 must be 64 lower-case hex digits"
            );
        }
        let files = self.files();
        let mut seen = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        for f in &files {
            ensure!(seen.insert(f.rel.as_str()), "two files at {}", f.rel);
            let mut prefix = String::new();
            for c in f
                .rel
                .split('/')
                .collect::<Vec<_>>()
                .split_last()
                .map(|x| x.1)
                .unwrap_or(&[])
            {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(c);
                dirs.insert(prefix.clone());
            }
        }
        for d in &dirs {
            ensure!(
                !seen.contains(d.as_str()),
                "{d} is both a file and a directory"
            );
        }
        Ok(())
    }

    /// Every file of the dataset, in file-index order.
    pub fn files(&self) -> Vec<PlannedFile> {
        let mut out = Vec::new();
        let mut index = 0u64;
        for (g, group) in self.groups.iter().enumerate() {
            let mut size_rng = content_rng(self.seed, SIZE_STREAM_BASE + g as u64);
            let (wi, wd) = (width(group.count), width(group.dirs));
            for i in 0..group.count {
                let mut rel = String::new();
                if !group.dir.is_empty() {
                    rel.push_str(&group.dir);
                    rel.push('/');
                }
                if group.dirs > 1 {
                    rel.push_str(&format!("d{:0wd$}/", i % group.dirs));
                }
                rel.push_str(&format!("{}{:0wi$}{}", group.stem, i, group.ext));
                let size = match group.size_max {
                    Some(max) => group.size + size_rng.next_u64() % (max - group.size + 1),
                    None => group.size,
                };
                out.push(PlannedFile { index, rel, size });
                index += 1;
            }
        }
        out
    }

    /// Identity of the bytes this spec describes (generator version, seed, every path and
    /// size), as hex SHA-256. Description and expected digest are not part of it.
    pub fn spec_hash(&self) -> String {
        let mut h = Sha256::new();
        h.update(GENERATOR_VERSION.as_bytes());
        h.update(b"\n");
        h.update(self.seed.to_le_bytes());
        for f in self.files() {
            h.update(f.index.to_le_bytes());
            h.update(f.size.to_le_bytes());
            h.update(f.rel.as_bytes());
            h.update(b"\0");
        }
        hex(&h.finalize())
    }
}

/// Summary numbers of a file list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// Number of files.
    pub files: u64,
    /// Sum of sizes in bytes.
    pub bytes: u64,
    /// Largest file in bytes.
    pub largest: u64,
}

/// Totals of `files`.
pub fn totals(files: &[PlannedFile]) -> Totals {
    Totals {
        files: files.len() as u64,
        bytes: files.iter().map(|f| f.size).sum(),
        largest: files.iter().map(|f| f.size).max().unwrap_or(0),
    }
}

/// Resolve a spec argument: a path to a `.json` file, or a bare dataset name looked up
/// as `<specs_dir>/<name>.json`.
pub fn resolve(arg: &str, specs_dir: &Path) -> Result<PathBuf> {
    let p = Path::new(arg);
    if p.extension().is_some_and(|e| e == "json") || arg.contains('/') {
        return Ok(p.to_path_buf());
    }
    let candidate = specs_dir.join(format!("{arg}.json"));
    if !candidate.is_file() {
        bail!(
            "no dataset spec {arg:?} (looked for {})",
            candidate.display()
        );
    }
    Ok(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(groups: Vec<Group>) -> Spec {
        Spec {
            name: "t".into(),
            description: String::new(),
            seed: 7,
            groups,
            expected_manifest_sha256: None,
            expected_pysum_manifest_sha256: None,
        }
    }

    fn group(
        dir: &str,
        stem: &str,
        count: u64,
        dirs: u64,
        size: u64,
        size_max: Option<u64>,
    ) -> Group {
        Group {
            dir: dir.into(),
            stem: stem.into(),
            ext: ".bin".into(),
            count,
            dirs,
            size,
            size_max,
        }
    }

    #[test]
    fn paths_and_indices() {
        let s = spec(vec![
            group("", "a-", 3, 1, 10, None),
            group("x/y", "f", 12, 4, 0, Some(100)),
        ]);
        s.check().unwrap();
        let files = s.files();
        assert_eq!(files.len(), 15);
        assert_eq!(files[0].rel, "a-0.bin");
        assert_eq!(files[2].rel, "a-2.bin");
        assert_eq!(files[3].rel, "x/y/d0/f00.bin");
        assert_eq!(files[4].rel, "x/y/d1/f01.bin");
        assert_eq!(files[14].rel, "x/y/d3/f11.bin");
        assert_eq!(files[14].index, 14);
        assert!(files[3..].iter().all(|f| f.size <= 100));
        // Sizes are drawn, so not all equal, and drawn the same way every time.
        assert!(files[3..].iter().any(|f| f.size != files[3].size));
        assert_eq!(s.files(), files);
    }

    #[test]
    fn spec_hash_tracks_bytes_not_prose() {
        let a = spec(vec![group("", "a", 2, 1, 10, None)]);
        let mut b = a.clone();
        b.description = "other words".into();
        b.expected_manifest_sha256 = Some("0".repeat(64));
        assert_eq!(a.spec_hash(), b.spec_hash());
        let mut c = a.clone();
        c.seed = 8;
        assert_ne!(a.spec_hash(), c.spec_hash());
        let mut d = a.clone();
        d.groups[0].size = 11;
        assert_ne!(a.spec_hash(), d.spec_hash());
    }

    #[test]
    fn rejects_bad_specs() {
        let mut s = spec(vec![group("", "a", 2, 1, 10, None)]);
        s.name = "Bad Name".into();
        assert!(s.check().is_err());
        let s = spec(vec![group("../up", "a", 2, 1, 10, None)]);
        assert!(s.check().is_err());
        let s = spec(vec![group("", "a", 2, 1, 10, Some(5))]);
        assert!(s.check().is_err());
        // Two groups that produce the same path.
        let s = spec(vec![
            group("", "a", 2, 1, 1, None),
            group("", "a", 1, 1, 1, None),
        ]);
        assert!(s.check().is_err());
        // A file that is also a directory.
        let mut g = group("", "d", 1, 1, 1, None);
        g.ext = String::new();
        let s = spec(vec![g, group("d0", "x", 1, 1, 1, None)]);
        assert!(s.check().is_err());
    }

    #[test]
    fn committed_specs_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let s = Spec::load(&path).unwrap();
                assert_eq!(
                    path.file_stem().unwrap().to_str().unwrap(),
                    s.name,
                    "spec file name must match its dataset name"
                );
                n += 1;
            }
        }
        assert!(
            n >= 9,
            "expected the default, quick and smoke specs, found {n}"
        );
    }

    #[test]
    fn default_specs_have_the_promised_shape() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
        let load = |n: &str| totals(&Spec::load(&dir.join(format!("{n}.json"))).unwrap().files());
        let shards = load("shards");
        assert_eq!((shards.files, shards.bytes), (64, 64 << 23));
        let small = load("small");
        assert_eq!((small.files, small.bytes), (20_000, 20_000 * 4096));
        let huge = load("huge");
        assert_eq!((huge.files, huge.bytes), (1, 2 << 30));
        let mixed = load("mixed");
        assert!(mixed.largest >= 100 << 20 && mixed.files > 1000);
    }
}
