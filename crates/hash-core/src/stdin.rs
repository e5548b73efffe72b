//! Hashing standard input, the `-` operand of GNU `sha256sum`.
//!
//! Standard input is read in the calling process, whatever the strategy: it
//! cannot be handed to a worker thread's `open` or to a worker process (whose
//! own stdin is the request pipe), and there is only one of it, so nothing is
//! gained by spreading it. Each `-` reads from where the previous one stopped,
//! so a second `-` hashes the empty rest, exactly as GNU does.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

use crate::hasher::FileDigest;
use crate::strategy::Outcome;

/// The SHA-256 of everything `input` still has to give.
pub fn hash_reader(input: &mut impl Read) -> io::Result<FileDigest> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; crate::READ_BUF_SIZE];
    let mut size = 0u64;
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(FileDigest {
        digest: hasher.finalize().into(),
        size,
    })
}

/// The SHA-256 of the rest of this process's standard input.
pub fn hash_stdin() -> Outcome {
    hash_reader(&mut io::stdin().lock()).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors_and_a_read_that_ends_where_the_last_stopped() {
        // FIPS 180-2 "abc", and the empty string.
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let mut input: &[u8] = b"abc";
        let d = hash_reader(&mut input).unwrap();
        assert_eq!((d.hex().as_str(), d.size), (abc, 3));
        assert_eq!(hash_reader(&mut input).unwrap().hex(), empty);
    }
}
