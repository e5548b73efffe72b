//! The manifest of a dataset and its digest: exactly what
//! `cd ROOT && find -H NAME -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum`
//! prints, and the SHA-256 of that text.
//!
//! This is the harness's own, independent reading of the data (it does not use the
//! hashers under test), used by `gen` to check the generator against the committed
//! digest. Dataset file names are plain ASCII (see [`crate::spec`]), so no `sha256sum`
//! escaping applies; a name that would need it is an error rather than a silent mismatch.

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::cache::walk_files;
use crate::progress::Progress;
use crate::util::{hex, parallel_for};

/// A dataset's manifest text and its digest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The `sha256sum`-format text, one line per file, sorted by path bytes.
    pub text: String,
    /// Hex SHA-256 of `text`.
    pub digest: String,
    /// Number of files.
    pub files: u64,
    /// Total bytes.
    pub bytes: u64,
}

/// SHA-256 of one file, streamed through a reused buffer (hash-core's hasher).
pub fn sha256_file(path: &Path, buf: &mut [u8]) -> Result<([u8; 32], u64)> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let d = hash_core::hasher::hash_reader(f, buf)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok((d.digest, d.size))
}

/// Hash `paths` on `threads` threads (largest-first would balance better, but the file
/// order is what callers need back, and datasets interleave sizes well enough).
pub fn hash_files(paths: &[PathBuf], threads: usize, progress: &Progress) -> Result<Vec<[u8; 32]>> {
    let out: Mutex<Vec<Option<[u8; 32]>>> = Mutex::new(vec![None; paths.len()]);
    parallel_for(paths.len(), threads, progress, |i, buf| {
        let (d, n) = sha256_file(&paths[i], buf)?;
        progress.add(n);
        progress.file_done();
        out.lock().unwrap()[i] = Some(d);
        Ok(())
    })?;
    Ok(out
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|d| d.expect("every file hashed"))
        .collect())
}

/// Build the manifest of `root/name`, reading every file.
pub fn manifest(root: &Path, name: &str, threads: usize, show_progress: bool) -> Result<Manifest> {
    let dir = root.join(name);
    let mut files = walk_files(&dir)?;
    // `find NAME` prints NAME/…; sort those byte strings as `LC_ALL=C sort -z` does.
    let display = |p: &Path| -> Result<Vec<u8>> {
        let rel = p.strip_prefix(&dir).expect("walk stays under dir");
        let mut v = name.as_bytes().to_vec();
        v.push(b'/');
        v.extend_from_slice(rel.as_os_str().as_bytes());
        if v.iter().any(|&b| b == b'\\' || b == b'\n' || b == b'\r') {
            bail!(
                "{}: name needs sha256sum escaping; dataset names must be plain",
                p.display()
            );
        }
        Ok(v)
    };
    let mut keyed: Vec<(Vec<u8>, PathBuf)> = files
        .drain(..)
        .map(|p| Ok((display(&p)?, p)))
        .collect::<Result<_>>()?;
    keyed.sort();
    let paths: Vec<PathBuf> = keyed.iter().map(|(_, p)| p.clone()).collect();
    let total: u64 = paths
        .iter()
        .map(|p| p.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    let progress = Progress::new(
        format!("hash {name}"),
        paths.len() as u64,
        total,
        show_progress,
    );
    let digests = hash_files(&paths, threads, &progress)?;
    let mut text = String::new();
    for ((shown, _), d) in keyed.iter().zip(&digests) {
        text.push_str(&hex(d));
        text.push_str("  ");
        text.push_str(std::str::from_utf8(shown).context("dataset path is not UTF-8")?);
        text.push('\n');
    }
    let digest = hex(&Sha256::digest(text.as_bytes()));
    Ok(Manifest {
        text,
        digest,
        files: paths.len() as u64,
        bytes: total,
    })
}
