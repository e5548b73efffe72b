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
//! `<&-`) is refused as GNU refuses it, with "Bad file descriptor". The Rust
//! runtime quietly reopens a closed standard descriptor on `/dev/null`
//! before `main`, after which output would vanish and input read as empty,
//! and nothing tells the stand-in from a `/dev/null` the caller opened; so
//! a constructor that runs before the runtime ([`record_closed`], from
//! `.init_array`) records which of the three were closed.
//!
//! Manifests and file lists are read with a bound on the length of a line
//! ([`MAX_LINE`]): an endless input without line ends (`/dev/zero`) is
//! refused by name instead of filling memory.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU8, Ordering};

use crate::hasher::{hash_reader, new_buffer};
use crate::strategy::Outcome;

/// Which standard descriptors (bit 0: stdin, 1: stdout, 2: stderr) were
/// closed when the process started; written once, before `main`.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Record which standard descriptors are closed, before the Rust runtime
/// reopens them (it runs from `.init_array`, as C constructors do).
extern "C" fn record_closed() {
    use rustix::io::{fcntl_getfd, Errno};
    let fds = [
        rustix::stdio::stdin(),
        rustix::stdio::stdout(),
        rustix::stdio::stderr(),
    ];
    let mut closed = 0;
    for (bit, fd) in fds.into_iter().enumerate() {
        if fcntl_getfd(fd) == Err(Errno::BADF) {
            closed |= 1 << bit;
        }
    }
    CLOSED_AT_START.store(closed, Ordering::Relaxed);
}

#[used]
#[link_section = ".init_array"]
static RECORD_CLOSED: extern "C" fn() = record_closed;

/// Whether standard descriptor `n` (0 stdin, 1 stdout) was closed when the
/// process started.
fn closed_at_start(n: u8) -> bool {
    CLOSED_AT_START.load(Ordering::Relaxed) & (1 << n) != 0
}

fn bad_descriptor() -> io::Error {
    rustix::io::Errno::BADF.into()
}

/// This process's standard input, unless it was closed at start-up (then
/// "Bad file descriptor", as GNU says).
pub fn stdin() -> io::Result<io::StdinLock<'static>> {
    if closed_at_start(0) {
        return Err(bad_descriptor());
    }
    Ok(io::stdin().lock())
}

/// This process's standard output; writing to it fails with "Bad file
/// descriptor" if it was closed at start-up (nothing written, no error: as
/// GNU, which only fails on output it could not write).
pub fn stdout() -> Stdout {
    if closed_at_start(1) {
        Stdout::Closed
    } else {
        Stdout::Open(io::stdout().lock())
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

/// The most a manifest or a file list may hold in all: 1 GiB, some 7
/// million lines of a manifest (a larger tree is better split with
/// `--list` and `--shard`). An endless input of short lines
/// (`--files-from /dev/zero -0`, `-c /dev/urandom`) stops there.
pub const MAX_INPUT: usize = 1 << 30;

/// A list read up to a line longer than [`MAX_LINE`], or up to
/// [`MAX_INPUT`].
#[derive(Debug)]
pub struct LineTooLong {
    /// The lines before it, whole (each with its separator).
    pub before: Vec<u8>,
    /// Its number, counting from 1.
    pub line: usize,
    /// Whether the input as a whole, not the line, was too long.
    pub whole: bool,
}

impl std::fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.whole {
            let gib = MAX_INPUT >> 30;
            write!(
                f,
                "longer than {gib} GiB at line {}; the rest is not read",
                self.line
            )
        } else {
            write!(
                f,
                "line {} is longer than {MAX_LINE} bytes; the rest is not read",
                self.line
            )
        }
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
        let whole = data.len() > MAX_INPUT;
        if too_long || whole || data.len() - line_start > MAX_LINE {
            data.truncate(line_start);
            return Ok(Err(LineTooLong {
                before: data,
                line: lines + 1,
                whole: whole && !too_long,
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
