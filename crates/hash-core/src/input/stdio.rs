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
//! a constructor that runs before the runtime (`record_closed`, from
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
pub(crate) fn stdout() -> Stdout {
    if closed_at_start(1) {
        Stdout::Closed
    } else {
        Stdout::Open(io::stdout().lock())
    }
}

/// See [`stdout`].
#[derive(Debug)]
pub(crate) enum Stdout {
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
pub(crate) fn hash_stdin() -> Outcome {
    Ok(hash_reader(stdin()?, &mut new_buffer())?)
}

/// The longest line a manifest or a file list may have: 1 MiB, room for a name
/// of 512 KiB (128 times `PATH_MAX`) with every byte escaped (GNU escapes `\`
/// and newline with two), and a digest. The hashers open names longer than
/// `PATH_MAX` a directory at a time and print them, so the bound must be far
/// above it for their own output to be read back; it is a bound all the same,
/// so that an input without line ends (`/dev/zero`) cannot fill memory.
pub const MAX_LINE: usize = 1 << 20;

/// The most a manifest or a file list may hold in all: 1 GiB, some 7
/// million lines of a manifest (a larger tree is better split with
/// `--list` and `--shard`). An endless input of short lines
/// (`--files-from /dev/zero -0`, `-c /dev/urandom`) stops there.
pub(crate) const MAX_INPUT: usize = 1 << 30;

/// A list read up to a line longer than [`MAX_LINE`], or up to
/// [`MAX_INPUT`].
#[derive(Debug)]
pub(crate) struct LineTooLong {
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
pub(crate) fn read_lines(
    mut input: impl Read,
    sep: u8,
) -> io::Result<Result<Vec<u8>, LineTooLong>> {
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

/// Why [`LineReader::next_line`] stopped short of the end.
#[derive(Debug)]
pub(crate) enum LineError {
    /// Reading failed. GNU's message names no reason ("read error"), so
    /// only the tests read the error.
    Io(#[allow(dead_code)] io::Error),
    /// Line `line` (counting from 1) is longer than [`MAX_LINE`]; the rest
    /// is not read.
    TooLong {
        /// Its number.
        line: usize,
    },
}

/// Lines of an input read as they come, holding at most one line (up to
/// [`MAX_LINE`]) and one read ahead: what lets `-c` check a manifest of any
/// length, or an endless one (`yes LINE | hash-serial -c`), in bounded memory.
/// Lines are split as `crate::checkline::split_lines` splits them: the
/// separator is not part of the line, and a last line without one still is one.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    input: R,
    sep: u8,
    buf: Vec<u8>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Lines returned so far.
    line: usize,
    at_end: bool,
}

/// What one read of [`LineReader`] asks of its input.
const READ_AHEAD: usize = 64 * 1024;

impl<R: Read> LineReader<R> {
    /// Lines of `input` separated by `sep`.
    pub fn new(input: R, sep: u8) -> LineReader<R> {
        LineReader {
            input,
            sep,
            buf: Vec::new(),
            start: 0,
            end: 0,
            line: 0,
            at_end: false,
        }
    }

    /// The next line and its number, `None` at the end of the input.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, &[u8])>, LineError> {
        let (from, to) = loop {
            let unread = &self.buf[self.start..self.end];
            if let Some(len) = unread.iter().position(|&b| b == self.sep) {
                if len > MAX_LINE {
                    return Err(self.too_long());
                }
                let from = self.start;
                self.start += len + 1;
                break (from, from + len);
            }
            if unread.len() > MAX_LINE {
                return Err(self.too_long());
            }
            if self.at_end {
                if unread.is_empty() {
                    return Ok(None);
                }
                let from = self.start;
                self.start = self.end;
                break (from, self.end);
            }
            self.fill().map_err(LineError::Io)?;
        };
        self.line += 1;
        Ok(Some((self.line, &self.buf[from..to])))
    }

    fn too_long(&mut self) -> LineError {
        // Nothing more is read: the line may never end (`/dev/zero`).
        self.at_end = true;
        self.start = self.end;
        LineError::TooLong {
            line: self.line + 1,
        }
    }

    /// Move the unread bytes to the front and read more after them.
    fn fill(&mut self) -> io::Result<()> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.buf.len() < self.end + READ_AHEAD {
            self.buf.resize(self.end + READ_AHEAD, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.at_end = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of `input`, read through a reader that hands over `step`
    /// bytes at a time, and how it ended.
    fn lines_of(input: &[u8], sep: u8, step: usize) -> (Vec<(usize, Vec<u8>)>, Option<usize>) {
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.1.min(buf.len()).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut r = LineReader::new(Trickle(input, step), sep);
        let mut got = Vec::new();
        loop {
            match r.next_line() {
                Ok(Some((n, line))) => got.push((n, line.to_vec())),
                Ok(None) => return (got, None),
                Err(LineError::TooLong { line }) => return (got, Some(line)),
                Err(LineError::Io(e)) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn streamed_lines_are_the_lines_split_lines_gives() {
        let cases: [&[u8]; 7] = [
            b"",
            b"\n",
            b"a\nb\n",
            b"a\nb",
            b"a\n\n\nb",
            b"a\0b\r\n",
            b"\n\n",
        ];
        for input in cases {
            let want: Vec<(usize, Vec<u8>)> = crate::checkline::split_lines(input, false)
                .map(|(n, l)| (n, l.to_vec()))
                .collect();
            for step in [1, 2, 7, 1 << 20] {
                assert_eq!(
                    lines_of(input, b'\n', step),
                    (want.clone(), None),
                    "{input:?}"
                );
            }
        }
        assert_eq!(
            lines_of(b"a\nb\0c", 0, 3).0,
            [(1, b"a\nb".to_vec()), (2, b"c".to_vec())]
        );
    }

    #[test]
    fn a_line_longer_than_the_bound_ends_the_stream_where_it_starts() {
        let mut input = b"a\nbb\n".to_vec();
        input.extend(vec![b'x'; MAX_LINE + 1]);
        input.extend(b"\nc\n");
        let (got, cut) = lines_of(&input, b'\n', 64 * 1024);
        assert_eq!(got, [(1, b"a".to_vec()), (2, b"bb".to_vec())]);
        assert_eq!(cut, Some(3));
        // At the bound exactly, and unterminated, a line is whole.
        let mut ok = vec![b'y'; MAX_LINE];
        ok.push(b'\n');
        ok.extend(vec![b'z'; MAX_LINE]);
        let (got, cut) = lines_of(&ok, b'\n', 1000);
        assert_eq!((got.len(), cut), (2, None));
        // An endless input without separators stops at the bound.
        let mut r = LineReader::new(std::io::repeat(0).take(u64::MAX), b'\n');
        assert!(matches!(r.next_line(), Err(LineError::TooLong { line: 1 })));
        assert!(matches!(r.next_line(), Ok(None)));
    }

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
