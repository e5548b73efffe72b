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
//! A Unix path cannot contain NUL, so the encoding is unambiguous. The root's own
//! name, the strategy, the job count and the machine do not enter it; any change
//! to a file's content, name or place does. It does not cover permissions,
//! owners, times, empty directories, symbolic links that were not followed, or
//! files that could not be read (the run reports those and exits 1).

use sha2::{Digest, Sha256};

/// Collects files, in any order, and computes the tree digest.
#[derive(Debug, Default)]
pub struct TreeDigest {
    entries: Vec<(Vec<u8>, u64, [u8; 32])>,
}

impl TreeDigest {
    /// Add one file: path relative to its root, size, digest.
    pub fn add(&mut self, rel: &[u8], size: u64, digest: [u8; 32]) {
        self.entries.push((rel.to_vec(), size, digest));
    }

    /// The digest of everything added (see the module doc for the form).
    pub fn finish(mut self) -> [u8; 32] {
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut h = Sha256::new();
        h.update(b"hashrace-tree-v1\0");
        for (rel, size, digest) in &self.entries {
            h.update(rel);
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
        t.add(b"b", 3, [2; 32]);
        t.add(b"a/x", 1, [1; 32]);
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
                t.add(p, s, [d; 32]);
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
}
