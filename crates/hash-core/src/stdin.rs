//! Hashing standard input, the `-` operand of GNU `sha256sum`.
//!
//! Standard input is read in the calling process, whatever the strategy: it
//! cannot be handed to a worker thread's `open` or to a worker process (whose
//! own stdin is the request pipe), and there is only one of it, so nothing is
//! gained by spreading it. Each `-` reads from where the previous one stopped,
//! so a second `-` hashes the empty rest, exactly as GNU does.

use std::io;

use crate::hasher::{hash_reader, new_buffer};
use crate::strategy::Outcome;

/// The SHA-256 of the rest of this process's standard input.
pub fn hash_stdin() -> Outcome {
    hash_reader(io::stdin().lock(), &mut new_buffer()).map_err(Into::into)
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
        let mut buf = new_buffer();
        let d = hash_reader(&mut input, &mut buf).unwrap();
        assert_eq!((d.hex().as_str(), d.size), (abc, 3));
        assert_eq!(hash_reader(&mut input, &mut buf).unwrap().hex(), empty);
    }
}
