//! The manifest of a dataset and its digest: exactly what
//! `cd ROOT && find -H NAME -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum`
//! prints, and the SHA-256 of that text.
//!
//! The same lines can carry the other kind of work the Python references race,
//! [`Work::Pysum`]: the sum of a file's bytes mod 2^32 as 8 hex digits, which is what
//! `scripts/pyhash.py --work pysum` prints. Computing it here, in Rust, gives the Python
//! rows a golden value that does not come from Python.
//!
//! This is the harness's own, independent reading of the data (it does not use the
//! hashers under test), used by `gen` to check the generator against the committed
//! digest. Dataset file names are plain ASCII (see [`crate::spec`]), so no `sha256sum`
//! escaping applies; a name that would need it is an error rather than a silent mismatch.

use std::fs::File;
use std::io::Read;
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

/// What a manifest line carries for each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Work {
    /// SHA-256, 64 hex digits (`sha256sum`'s lines).
    #[default]
    Sha256,
    /// The sum of the bytes mod 2^32, 8 hex digits (`pyhash.py --work pysum`).
    Pysum,
}

impl Work {
    /// Name as `pyhash.py --work` and the results spell it.
    pub fn name(self) -> &'static str {
        match self {
            Work::Sha256 => "sha256",
            Work::Pysum => "pysum",
        }
    }

    /// The kind of work a program's `algorithm` names, if it is one of these.
    pub fn from_name(s: &str) -> Option<Work> {
        [Work::Sha256, Work::Pysum]
            .into_iter()
            .find(|w| w.name() == s)
    }

    /// This work's value of one file, as printed, and the file's size.
    fn of_file(self, path: &Path, buf: &mut [u8]) -> Result<(String, u64)> {
        match self {
            Work::Sha256 => sha256_file(path, buf).map(|(d, n)| (hex(&d), n)),
            Work::Pysum => pysum_file(path, buf).map(|(v, n)| (format!("{v:08x}"), n)),
        }
    }
}

/// The sum of `bytes` added to `acc`, mod 2^32.
pub fn pysum_bytes(acc: u32, bytes: &[u8]) -> u32 {
    // u64 partial sums cannot overflow for any buffer a machine can hold.
    let s: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
    acc.wrapping_add(s as u32)
}

/// The byte sum of one file mod 2^32, and its size.
pub fn pysum_file(path: &Path, buf: &mut [u8]) -> Result<(u32, u64)> {
    let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let (mut acc, mut size) = (0u32, 0u64);
    loop {
        let n = match f.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        acc = pysum_bytes(acc, &buf[..n]);
        size += n as u64;
    }
    Ok((acc, size))
}

/// SHA-256 of one file, streamed through a reused buffer (hash-core's hasher).
pub fn sha256_file(path: &Path, buf: &mut [u8]) -> Result<([u8; 32], u64)> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let d = hash_core::hasher::hash_reader(f, buf)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok((d.digest, d.size))
}

/// `work`'s value of each of `paths`, as printed, on `threads` threads (largest-first
/// would balance better, but the file order is what callers need back, and datasets
/// interleave sizes well enough).
pub fn hash_files(
    paths: &[PathBuf],
    work: Work,
    threads: usize,
    progress: &Progress,
) -> Result<Vec<String>> {
    let out: Mutex<Vec<Option<String>>> = Mutex::new(vec![None; paths.len()]);
    parallel_for(paths.len(), threads, progress, |i, buf| {
        let (d, n) = work.of_file(&paths[i], buf)?;
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

/// Build the SHA-256 manifest of `root/name`, reading every file.
pub fn manifest(root: &Path, name: &str, threads: usize, show_progress: bool) -> Result<Manifest> {
    manifest_of(root, name, Work::Sha256, threads, show_progress)
}

/// Build the manifest of `root/name` for `work`, reading every file.
pub fn manifest_of(
    root: &Path,
    name: &str,
    work: Work,
    threads: usize,
    show_progress: bool,
) -> Result<Manifest> {
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
        format!("{} {name}", work.name()),
        paths.len() as u64,
        total,
        show_progress,
    );
    let digests = hash_files(&paths, work, threads, &progress)?;
    let mut text = String::new();
    for ((shown, _), d) in keyed.iter().zip(&digests) {
        text.push_str(d);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pysum_wraps_at_two_to_the_32() {
        // 0xff × 16,843,010 = 4,294,967,550 = 2^32 + 254.
        let ones = vec![0xffu8; 16_843_010];
        assert_eq!(pysum_bytes(0, &ones), 254);
        assert_eq!(pysum_bytes(0, b"abc"), 97 + 98 + 99);
        assert_eq!(pysum_bytes(u32::MAX, &[1]), 0);
    }

    #[test]
    fn pysum_of_a_file_is_the_sum_of_its_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let bytes: Vec<u8> = (0..3_000_017u32).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let want = bytes
            .iter()
            .fold(0u32, |a, &b| a.wrapping_add(u32::from(b)));
        // A buffer smaller than the file: the chunks must add up across reads.
        let mut buf = vec![0u8; 4096];
        assert_eq!(
            pysum_file(&p, &mut buf).unwrap(),
            (want, bytes.len() as u64)
        );
        assert_eq!(
            Work::Pysum.of_file(&p, &mut buf).unwrap().0,
            format!("{want:08x}")
        );
    }
}
