//! The single writer: restores planned order, prints lines and errors, counts.
//!
//! Strategies deliver outcomes in completion order; [`Writer::accept`] parks each
//! one in its slot and prints every slot that has become the next in line, so
//! output starts as soon as the first files are done and is byte-identical
//! whatever the strategy or the number of workers. Errors are printed in the same
//! order, on stderr, as `tool: PATH: reason`, after flushing stdout so that the
//! two streams interleave sensibly on a terminal.
//!
//! A closed stdout (`| head -1`) is not an error: the writer reports `Break`,
//! the strategy stops, and the program exits quietly.

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::time::Duration;

use crate::error::Error;
use crate::escape::{escape, needs_escape, path_bytes};
use crate::hasher::hex;
use crate::strategy::{Job, Outcome};

/// Counts for `--stats` and the exit status.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Files hashed.
    pub files: u64,
    /// Bytes hashed.
    pub bytes: u64,
    /// Files and directories that could not be read.
    pub errors: u64,
    /// Entries skipped because they are not regular files.
    pub skipped: u64,
}

impl Summary {
    /// Human-readable one-liner for `--stats`.
    pub fn render(&self, elapsed: Duration, strategy: &str, workers: usize) -> String {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let mib = self.bytes as f64 / (1024.0 * 1024.0);
        format!(
            "{} files, {:.1} MiB, {} errors, {} skipped (not regular files) in {:.3} s: \
             {:.1} MiB/s, {:.0} files/s ({}, {} worker{})",
            self.files,
            mib,
            self.errors,
            self.skipped,
            secs,
            mib / secs,
            self.files as f64 / secs,
            strategy,
            workers,
            if workers == 1 { "" } else { "s" }
        )
    }
}

/// Write one GNU `sha256sum` line: `[\]HEX  NAME\n`.
pub fn write_gnu_line(out: &mut impl Write, digest: &[u8; 32], path: &[u8]) -> io::Result<()> {
    if needs_escape(path) {
        out.write_all(b"\\")?;
    }
    out.write_all(hex(digest).as_bytes())?;
    out.write_all(b"  ")?;
    out.write_all(&escape(path))?;
    out.write_all(b"\n")
}

/// Write `tool: PATH: reason\n` with the path's raw (escaped) bytes.
pub fn write_error(err: &mut impl Write, tool: &str, e: &Error) -> io::Result<()> {
    err.write_all(tool.as_bytes())?;
    err.write_all(b": ")?;
    err.write_all(&escape(path_bytes(&e.path)))?;
    writeln!(err, ": {}", e.kind)
}

/// The single writer for one run.
pub struct Writer<'a, W: Write> {
    tool: &'a str,
    jobs: &'a [Job],
    out: BufWriter<W>,
    slots: Vec<Option<Outcome>>,
    next: usize,
    /// Counts so far.
    pub summary: Summary,
    /// Set when stdout failed for a reason other than a closed pipe.
    pub write_error: Option<io::Error>,
}

impl<W: Write> std::fmt::Debug for Writer<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("next", &self.next)
            .field("summary", &self.summary)
            .finish()
    }
}

impl<'a, W: Write> Writer<'a, W> {
    /// A writer for `jobs`, printing to `out`.
    pub fn new(tool: &'a str, jobs: &'a [Job], out: W) -> Self {
        Writer {
            tool,
            jobs,
            out: BufWriter::with_capacity(64 * 1024, out),
            slots: (0..jobs.len()).map(|_| None).collect(),
            next: 0,
            summary: Summary::default(),
            write_error: None,
        }
    }

    /// Report an error that is not about a planned file (a walk error).
    pub fn error(&mut self, e: &Error) {
        self.summary.errors += 1;
        // Keep stdout and stderr in order when both go to one terminal.
        let _ = self.out.flush();
        let _ = write_error(&mut io::stderr().lock(), self.tool, e);
    }

    /// Take the outcome of job `i`; print everything that is now in order.
    pub fn accept(&mut self, i: usize, outcome: Outcome) -> ControlFlow<()> {
        self.slots[i] = Some(outcome);
        while let Some(outcome) = self.slots.get_mut(self.next).and_then(Option::take) {
            let job = &self.jobs[self.next];
            self.next += 1;
            match outcome {
                Ok(d) => {
                    self.summary.files += 1;
                    self.summary.bytes += d.size;
                    let written = write_gnu_line(&mut self.out, &d.digest, path_bytes(&job.path));
                    self.check(written)?;
                }
                Err(kind) => self.error(&Error::new(job.path.clone(), kind)),
            }
        }
        ControlFlow::Continue(())
    }

    /// Flush what is buffered; call once at the end.
    pub fn finish(&mut self) -> ControlFlow<()> {
        let flushed = self.out.flush();
        self.check(flushed)
    }

    fn check(&mut self, r: io::Result<()>) -> ControlFlow<()> {
        match r {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                if e.kind() != io::ErrorKind::BrokenPipe {
                    self.write_error = Some(e);
                }
                ControlFlow::Break(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hasher::FileDigest;
    use std::path::PathBuf;

    fn job(name: &str) -> Job {
        Job {
            path: PathBuf::from(name),
            size: 0,
            follow: false,
        }
    }

    fn ok(byte: u8, size: u64) -> Outcome {
        Ok(FileDigest {
            digest: [byte; 32],
            size,
        })
    }

    #[test]
    fn gnu_lines_escape_like_sha256sum() {
        let mut out = Vec::new();
        write_gnu_line(&mut out, &[0; 32], b"a b").unwrap();
        write_gnu_line(&mut out, &[0; 32], b"x\ny\\").unwrap();
        let zero = "0".repeat(64);
        let expected = format!("{zero}  a b\n\\{zero}  x\\ny\\\\\n");
        assert_eq!(out, expected.as_bytes());
    }

    #[test]
    fn out_of_order_results_print_in_planned_order() {
        let jobs = [job("a"), job("b"), job("c")];
        let mut buf = Vec::new();
        {
            let mut w = Writer::new("t", &jobs, &mut buf);
            assert!(w.accept(2, ok(2, 5)).is_continue());
            assert!(w.accept(0, ok(0, 1)).is_continue());
            assert!(w.accept(1, ok(1, 10)).is_continue());
            assert!(w.finish().is_continue());
            assert_eq!(
                w.summary,
                Summary {
                    files: 3,
                    bytes: 16,
                    errors: 0,
                    skipped: 0
                }
            );
        }
        let text = String::from_utf8(buf).unwrap();
        let names: Vec<_> = text.lines().map(|l| &l[66..]).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn errors_are_counted_and_not_printed_to_stdout() {
        let jobs = [job("a"), job("b")];
        let mut buf = Vec::new();
        let mut w = Writer::new("t", &jobs, &mut buf);
        let _ = w.accept(0, Err(crate::ErrorKind::NotRegular));
        let _ = w.accept(1, ok(1, 1));
        let _ = w.finish();
        assert_eq!(w.summary.errors, 1);
        assert_eq!(w.summary.files, 1);
        drop(w);
        assert_eq!(buf.len(), 64 + 2 + 1 + 1);
    }

    #[test]
    fn error_lines_escape_the_path() {
        let mut err = Vec::new();
        let e = Error::new("a\nb", crate::ErrorKind::NotRegular);
        write_error(&mut err, "hash-x", &e).unwrap();
        assert_eq!(err, b"hash-x: a\\nb: not a regular file\n");
    }

    #[test]
    fn a_closed_pipe_is_a_quiet_break() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
        }
        let jobs = [job("a")];
        let mut w = Writer::new("t", &jobs, Closed);
        let _ = w.accept(0, ok(0, 0));
        assert!(w.finish().is_break());
        assert!(w.write_error.is_none());
    }
}
