//! The tree digest (`--tree`): one SHA-256 naming a whole directory's content.
//!
//! Canonical form, version 1. Take every regular file hashed, with its path
//! relative to the root it was found under (raw bytes, `/`-separated, exactly as
//! the walk produced it), its size and its SHA-256. Sort by the relative path's
//! bytes. The tree digest is the SHA-256 of
//!
//! ```text
//! "hashrace-tree-v1" NUL
//! then for each file:  relative-path NUL size-in-decimal NUL 32-raw-digest-bytes
//! ```
//!
//! Where the files were found under more than one root (the parts of their
//! paths before the relative part differ: `--tree r1 r2`), each file's whole
//! path (raw bytes, as walked, not escaped as printed) takes the place of its
//! relative path: relative paths alone would let a file move from one root
//! to another unnoticed. Digests of one root are those of earlier versions.
//!
//! A Unix path cannot contain NUL, so the encoding is unambiguous. For one
//! root, the root's own name, the strategy, the job count and the machine do
//! not enter it; any change to a file's content, name or place does. It does
//! not cover permissions, owners, times, empty directories, symbolic links
//! that were not followed, or files that could not be read (the run reports
//! those and exits 1).

use sha2::{Digest, Sha256};

/// Collects files, in any order, and computes the tree digest.
#[derive(Debug, Default)]
pub struct TreeDigest {
    entries: Vec<Entry>,
}

/// A file's whole path, where its relative part starts, its size, its digest.
type Entry = (Vec<u8>, usize, u64, [u8; 32]);

impl TreeDigest {
    /// Add one file: its path, the offset in it where the part relative to
    /// its root starts, its size and its digest.
    pub fn add(&mut self, path: &[u8], rel: usize, size: u64, digest: [u8; 32]) {
        self.entries.push((path.to_vec(), rel, size, digest));
    }

    /// The digest of everything added (see the module doc for the form).
    pub fn finish(self) -> [u8; 32] {
        let one_root = match self.entries.first() {
            None => true,
            Some((p0, r0, ..)) => self.entries.iter().all(|(p, r, ..)| p[..*r] == p0[..*r0]),
        };
        let mut named: Vec<(&[u8], u64, [u8; 32])> = self
            .entries
            .iter()
            .map(|(path, rel, size, digest)| {
                let name = if one_root { &path[*rel..] } else { &path[..] };
                (name, *size, *digest)
            })
            .collect();
        named.sort_by(|a, b| a.0.cmp(b.0));
        let mut h = Sha256::new();
        h.update(b"hashrace-tree-v1\0");
        for (name, size, digest) in &named {
            h.update(name);
            h.update(b"\0");
            h.update(size.to_string().as_bytes());
            h.update(b"\0");
            h.update(digest);
        }
        h.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_form_is_what_the_doc_says() {
        let mut t = TreeDigest::default();
        // One root, "r/": the relative paths are named.
        t.add(b"r/b", 2, 3, [2; 32]);
        t.add(b"r/a/x", 2, 1, [1; 32]);
        let mut stream = b"hashrace-tree-v1\0a/x\x001\0".to_vec();
        stream.extend([1; 32]);
        stream.extend(b"b\x003\0");
        stream.extend([2; 32]);
        // Independent check: GNU sha256sum of the documented byte stream.
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&stream).unwrap();
        // A wait with a deadline: a stuck child fails the test instead of CI.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(child.wait_with_output()));
        let out = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("sha256sum did not finish within 60 s")
            .unwrap();
        let want = String::from_utf8(out.stdout).unwrap()[..64].to_owned();
        assert_eq!(crate::hasher::hex(&t.finish()), want);
    }

    #[test]
    fn order_of_adding_does_not_matter_but_names_and_sizes_do() {
        let digest = |files: &[(&[u8], u64, u8)]| {
            let mut t = TreeDigest::default();
            for &(p, s, d) in files {
                t.add(p, 0, s, [d; 32]);
            }
            t.finish()
        };
        let base = digest(&[(b"a", 1, 1), (b"b", 2, 2)]);
        assert_eq!(base, digest(&[(b"b", 2, 2), (b"a", 1, 1)]));
        assert_ne!(base, digest(&[(b"a", 1, 1), (b"c", 2, 2)]));
        assert_ne!(base, digest(&[(b"a", 1, 1), (b"b", 3, 2)]));
        assert_ne!(base, digest(&[(b"a", 1, 1), (b"b", 2, 3)]));
        assert_ne!(base, digest(&[(b"a", 1, 1)]));
    }

    #[test]
    fn files_under_several_roots_are_named_by_their_whole_paths() {
        let digest = |files: &[(&[u8], usize)]| {
            let mut t = TreeDigest::default();
            for (i, &(path, rel)) in files.iter().enumerate() {
                t.add(path, rel, 1, [i as u8; 32]);
            }
            t.finish()
        };
        // One root: its name does not count.
        assert_eq!(
            digest(&[(b"A/x", 2), (b"A/y", 2)]),
            digest(&[(b"B/x", 2), (b"B/y", 2)])
        );
        // Two roots: x moving from r1 to r2 (and y back) changes the digest,
        // where the relative paths alone would not.
        let before = digest(&[(b"r1/x", 3), (b"r2/y", 3)]);
        assert_ne!(before, digest(&[(b"r2/x", 3), (b"r1/y", 3)]));
        // ...and it is the digest of the whole paths, as one root "" would give.
        assert_eq!(before, digest(&[(b"r1/x", 0), (b"r2/y", 0)]));
    }
}
