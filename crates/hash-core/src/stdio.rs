//! The standard streams, and the inputs that are lists of lines.
//!
//! Standard input (the `-` operand of GNU `sha256sum`) is read in the calling
//! process, whatever the strategy: it cannot be handed to a worker thread's
//! `open` or to a worker process (whose own stdin is the request pipe), and
//! there is only one of it, so nothing is gained by spreading it. Each `-`
//! reads from where the previous one stopped, so a second `-` hashes the
//! empty rest, exactly as GNU does.
//!
//! A standard stream that was closed when the program started (`>&-`,
//! `<&-`) is refused as GNU refuses it, with "Bad file descriptor": the Rust
//! runtime quietly reopens a closed standard descriptor on `/dev/null`
//! before `main`, so without a look output would vanish and input would read
//! as empty. The runtime opens `/dev/null` read-write; a shell's
//! `> /dev/null` or `< /dev/null` opens it one way only, and still works.
//!
//! Manifests and file lists are read with a bound on the length of a line
//! ([`MAX_LINE`]): an endless input without line ends (`/dev/zero`) is
//! refused by name instead of filling memory.

use std::io::{self, Read, Write};
use std::os::fd::AsFd;

use crate::hasher::{hash_reader, new_buffer};
use crate::strategy::Outcome;

/// Whether the standard descriptor `fd` is the runtime's stand-in for one
/// that was closed at start-up: `/dev/null`, opened read-write.
fn stand_in(fd: impl AsFd) -> bool {
    use rustix::fs::{fcntl_getfl, fstat, stat, OFlags};
    let (Ok(st), Ok(null)) = (fstat(&fd), stat("/dev/null")) else {
        return false;
    };
    let same = st.st_rdev == null.st_rdev && st.st_ino == null.st_ino && st.st_dev == null.st_dev;
    same && fcntl_getfl(&fd).is_ok_and(|f| f & OFlags::ACCMODE == OFlags::RDWR)
}

fn bad_descriptor() -> io::Error {
    rustix::io::Errno::BADF.into()
}

/// This process's standard input, unless it was closed at start-up (then
/// "Bad file descriptor", as GNU says).
pub fn stdin() -> io::Result<io::StdinLock<'static>> {
    let stdin = io::stdin();
    if stand_in(&stdin) {
        return Err(bad_descriptor());
    }
    Ok(stdin.lock())
}

/// This process's standard output; writing to it fails with "Bad file
/// descriptor" if it was closed at start-up (nothing written, no error: as
/// GNU, which only fails on output it could not write).
pub fn stdout() -> Stdout {
    let stdout = io::stdout();
    if stand_in(&stdout) {
        Stdout::Closed
    } else {
        Stdout::Open(stdout.lock())
    }
}

/// See [`stdout`].
#[derive(Debug)]
pub enum Stdout {
    /// The real standard output.
    Open(io::StdoutLock<'static>),
    /// It was closed when the program started.
    Closed,
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stdout::Open(out) => out.write(buf),
            Stdout::Closed => Err(bad_descriptor()),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stdout::Open(out) => out.write_all(buf),
            Stdout::Closed => Err(bad_descriptor()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stdout::Open(out) => out.flush(),
            Stdout::Closed => Ok(()),
        }
    }
}

/// The SHA-256 of the rest of this process's standard input.
pub fn hash_stdin() -> Outcome {
    Ok(hash_reader(stdin()?, &mut new_buffer())?)
}

/// The longest line a manifest or a file list may have: room for a name of
/// `PATH_MAX` (4,096) bytes with every byte escaped (GNU escapes `\` and
/// newline with two), four times over, and a digest.
pub const MAX_LINE: usize = 4 * 4096 + 256;

/// A list read up to a line longer than [`MAX_LINE`].
#[derive(Debug)]
pub struct LineTooLong {
    /// The lines before it, whole (each with its separator).
    pub before: Vec<u8>,
    /// Its number, counting from 1.
    pub line: usize,
}

impl std::fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} is longer than {MAX_LINE} bytes; the rest is not read",
            self.line
        )
    }
}

/// Read `input` to its end, lines separated by `sep`; `Ok(Err(..))` when a
/// line grows past [`MAX_LINE`] (what came before it is kept).
pub fn read_lines(mut input: impl Read, sep: u8) -> io::Result<Result<Vec<u8>, LineTooLong>> {
    let mut data = Vec::new();
    let (mut line_start, mut lines) = (0usize, 0usize);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => return Ok(Ok(data)),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let at = data.len();
        data.extend_from_slice(&chunk[..n]);
        let mut too_long = false;
        for (i, &b) in data[at..].iter().enumerate() {
            if b == sep {
                if at + i - line_start > MAX_LINE {
                    too_long = true;
                    break;
                }
                lines += 1;
                line_start = at + i + 1;
            }
        }
        if too_long || data.len() - line_start > MAX_LINE {
            data.truncate(line_start);
            return Ok(Err(LineTooLong {
                before: data,
                line: lines + 1,
            }));
        }
    }
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

    #[test]
    fn lines_are_read_whole_up_to_the_first_that_is_too_long() {
        let mut input = b"a\nbb\n".to_vec();
        let long = vec![b'x'; MAX_LINE + 1];
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\nc\n");
        let cut = read_lines(&input[..], b'\n').unwrap().unwrap_err();
        assert_eq!(cut.before, b"a\nbb\n");
        assert_eq!(cut.line, 3);
        // At the limit exactly, and NUL-separated, all is read.
        let mut ok = vec![b'y'; MAX_LINE];
        ok.push(0);
        ok.extend_from_slice(b"z");
        assert_eq!(read_lines(&ok[..], 0).unwrap().unwrap(), ok);
        // An endless input without separators stops at the bound.
        let endless = std::io::repeat(0).take(u64::MAX);
        let cut = read_lines(endless, b'\n').unwrap().unwrap_err();
        assert_eq!((cut.before.len(), cut.line), (0, 1));
    }
}
