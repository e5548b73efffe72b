//! The single writer: restores planned order, prints lines and errors, counts.
//!
//! Strategies deliver outcomes in completion order; `Writer::accept` parks each
//! one in its slot and prints every slot that has become the next in line, so
//! output starts as soon as the first files are done and is byte-identical
//! whatever the strategy or the number of workers. Errors are printed in the same
//! order, on stderr, as `program: PATH: reason`, after flushing stdout so that the
//! two streams interleave sensibly on a terminal.
//!
//! A closed stdout (`| head -1`) is not an error: the writer reports `Break`,
//! the strategy stops, and the program exits quietly.

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::time::Duration;

use crate::error::Error;
use crate::escape::{escape_name, path_bytes};
use crate::hasher::{hex, hex_digits};
use crate::progress::Progress;
use crate::report::{
    ErrorEntry, FileEntry, JsonPath, JsonSummary, Line, LinesSummary, Report, SkippedEntry,
    SCHEMA_VERSION,
};
use crate::strategy::{Job, Outcome};
use crate::tree::TreeDigest;
use crate::units;
use crate::walk::Skipped;

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
    ///
    /// `12 files, 3.00 MiB, 0 errors, 1 skipped (not regular files) in 4.2 ms:
    /// 714.29 MiB/s, 2857 files/s (threads, 2 workers)`.
    pub fn render(&self, elapsed: Duration, strategy: &str, workers: usize) -> String {
        let secs = elapsed.as_secs_f64().max(1e-9);
        format!(
            "{}, {}, {}, {} skipped (not regular files) in {}: {}, {:.0} files/s ({strategy}, {})",
            units::count(self.files, "file"),
            units::bytes(self.bytes),
            units::count(self.errors, "error"),
            self.skipped,
            units::duration(elapsed),
            units::rate(self.bytes as f64 / secs),
            self.files as f64 / secs,
            units::count(workers as u64, "worker"),
        )
    }
}

/// How hash results are printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputOptions {
    /// `--tag`: BSD style, `SHA256 (NAME) = HEX`.
    pub tag: bool,
    /// `-b`: mark untagged lines as binary, `HEX *NAME`.
    pub binary: bool,
    /// `-z`: end lines with NUL and do not escape names.
    pub zero: bool,
    /// `--json` or `--json-lines` instead of GNU's lines.
    pub json: Json,
    /// `--tree`: also compute the tree digest.
    pub tree: bool,
}

/// Which JSON, if any, replaces GNU's lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Json {
    /// GNU's lines.
    #[default]
    No,
    /// `--json`: one [`Report`] at the end, every entry held until then.
    Document,
    /// `--json-lines`: one [`crate::report::Line`] per entry as its turn
    /// comes, then the summary; nothing is held.
    Lines,
}

/// Write `line` as one line of JSON.
fn json_line(out: &mut impl Write, line: &Line) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

/// Write one output line for `path`, in GNU's format for the chosen style.
pub fn write_line(
    out: &mut impl Write,
    opts: &OutputOptions,
    digest: &[u8; 32],
    path: &[u8],
) -> io::Result<()> {
    // GNU's -z writes names raw: NUL cannot occur in them, so nothing is ambiguous.
    let (escaped, name) = if opts.zero {
        (false, std::borrow::Cow::Borrowed(path))
    } else {
        escape_name(path)
    };
    if escaped {
        out.write_all(b"\\")?;
    }
    if opts.tag {
        out.write_all(b"SHA256 (")?;
        out.write_all(&name)?;
        out.write_all(b") = ")?;
        out.write_all(&hex_digits(digest))?;
    } else {
        out.write_all(&hex_digits(digest))?;
        out.write_all(if opts.binary { b" *" } else { b"  " })?;
        out.write_all(&name)?;
    }
    out.write_all(if opts.zero { b"\0" } else { b"\n" })
}

/// Results parked until every earlier one has arrived: the reorder buffer
/// between strategies (completion order) and printing (planned order).
///
/// A window from the next item in line to the farthest one that arrived
/// ahead of its turn, not a slot per planned item: the slots were written
/// before the first file was hashed, 48 bytes a file (562 KiB, 141 page
/// faults, for 12,000 files; 46 MiB for a million), where a run in order
/// needs one. A window that comes to span the whole plan (the first file
/// arrives last) costs what the slots did, and its growth never reserves
/// past the plan's end.
#[derive(Debug)]
pub(crate) struct InOrder<T> {
    window: std::collections::VecDeque<Option<T>>,
    /// The index of the window's first slot.
    next: usize,
    /// How many items there are in all.
    len: usize,
}

impl<T> InOrder<T> {
    /// The buffer for items `0..len`.
    pub(crate) fn new(len: usize) -> Self {
        InOrder {
            window: std::collections::VecDeque::new(),
            next: 0,
            len,
        }
    }

    /// Park item `i` until its turn comes (an item whose turn has passed
    /// is dropped: each index arrives once).
    pub(crate) fn insert(&mut self, i: usize, item: T) {
        debug_assert!(i < self.len, "item {i} of {}", self.len);
        let Some(ahead) = i.checked_sub(self.next) else {
            return;
        };
        if ahead >= self.window.len() {
            let want = ahead + 1;
            if want > self.window.capacity() {
                // Doubling, as a vector grows, but never past the plan's end.
                let room = self.len.saturating_sub(self.next).max(want);
                let cap = want.saturating_mul(2).min(room);
                self.window.reserve_exact(cap - self.window.len());
            }
            self.window.resize_with(want, || None);
        }
        self.window[ahead] = Some(item);
    }

    /// The next item in line, with its index, if it has arrived.
    pub(crate) fn pop_ready(&mut self) -> Option<(usize, T)> {
        self.window.front()?.as_ref()?;
        let item = self.window.pop_front().flatten()?;
        self.next += 1;
        Some((self.next - 1, item))
    }
}

/// What the writer (and check mode) keeps of an outcome until its turn: the
/// digest and the size. Not the file's stamps ([`FileDigest::held`], read by the cache
/// before the writer sees the outcome), which would more than double the
/// reorder buffer's slot for each file waiting there (136 bytes instead of
/// 48).
pub(crate) type Parked = Result<([u8; 32], u64), crate::error::ErrorKind>;

/// `outcome` as it is parked: see [`Parked`].
pub(crate) fn parked(outcome: crate::strategy::Outcome) -> Parked {
    outcome.map(|d| (d.digest, d.size))
}

/// The single writer for one run.
pub(crate) struct Writer<'a, W: Write> {
    jobs: &'a [Job],
    opts: OutputOptions,
    out: BufWriter<W>,
    order: InOrder<Parked>,
    progress: Option<&'a Progress>,
    json: Option<(Vec<FileEntry>, Vec<ErrorEntry>)>,
    tree: Option<TreeDigest>,
    /// Counts so far.
    pub summary: Summary,
    /// Set when stdout failed for a reason other than a closed pipe.
    pub write_error: Option<io::Error>,
}

impl<W: Write> std::fmt::Debug for Writer<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("opts", &self.opts)
            .field("summary", &self.summary)
            .finish()
    }
}

/// What the end of a run adds to the `--json` document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunInfo<'a> {
    /// Strategy name.
    pub strategy: &'a str,
    /// Workers used.
    pub workers: usize,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

impl<'a, W: Write> Writer<'a, W> {
    /// A writer for `jobs`, printing to `out`.
    pub fn new(
        jobs: &'a [Job],
        out: W,
        opts: OutputOptions,
        progress: Option<&'a Progress>,
    ) -> Self {
        Writer {
            jobs,
            opts,
            out: BufWriter::with_capacity(64 * 1024, out),
            order: InOrder::new(jobs.len()),
            progress,
            json: (opts.json == Json::Document).then(Default::default),
            tree: opts.tree.then(TreeDigest::default),
            summary: Summary::default(),
            write_error: None,
        }
    }

    /// Report an error (a walk error, or a file that could not be hashed).
    pub fn error(&mut self, e: &Error) {
        self.summary.errors += 1;
        // Keep stdout and stderr in order when both go to one terminal.
        let _ = self.out.flush();
        crate::diag::path_error(e, self.progress);
        let entry = || ErrorEntry {
            path: JsonPath::from_bytes(path_bytes(&e.path)),
            kind: e.kind.name().to_owned(),
            message: e.kind.to_string(),
        };
        if let Some((_, errors)) = &mut self.json {
            errors.push(entry());
        } else if self.opts.json == Json::Lines {
            // A closed stdout shows at the next file or at the end.
            let written = json_line(&mut self.out, &Line::Error(entry()));
            let _ = self.check(written);
        }
    }

    /// Take the outcome of job `i`; print everything that is now in order.
    pub(crate) fn accept(&mut self, i: usize, outcome: Outcome) -> ControlFlow<()> {
        // Progress counts completions as they happen, not in print order.
        if let Some(p) = self.progress {
            p.file_done(outcome.as_ref().map_or(self.jobs[i].size, |d| d.size));
        }
        self.order.insert(i, parked(outcome));
        while let Some((i, parked)) = self.order.pop_ready() {
            self.emit(i, parked)?;
        }
        ControlFlow::Continue(())
    }

    fn emit(&mut self, i: usize, parked: Parked) -> ControlFlow<()> {
        let job = &self.jobs[i];
        let (digest, size) = match parked {
            Ok(d) => d,
            Err(kind) => {
                self.error(&Error::new(job.path.clone(), kind));
                return ControlFlow::Continue(());
            }
        };
        self.summary.files += 1;
        self.summary.bytes += size;
        // Standard input has no place in a tree.
        if let Some(tree) = self.tree.as_mut().filter(|_| !crate::walk::is_stdin(job)) {
            tree.add(path_bytes(&job.path), job.rel, size, digest);
        }
        let entry = || FileEntry {
            path: JsonPath::from_bytes(path_bytes(&job.path)),
            size,
            sha256: hex(&digest),
        };
        let written = match (&mut self.json, self.opts.json) {
            (Some((files, _)), _) => {
                files.push(entry());
                Ok(())
            }
            (None, Json::Lines) => json_line(&mut self.out, &Line::File(entry())),
            (None, _) => write_line(&mut self.out, &self.opts, &digest, path_bytes(&job.path)),
        };
        self.check(written)
    }

    /// Print what comes at the end (tree digest, JSON document) and flush.
    pub fn finish(&mut self, skipped: &[Skipped], info: RunInfo<'_>) -> ControlFlow<()> {
        self.summary.skipped = skipped.len() as u64;
        let tree = self.tree.take().map(|t| hex(&t.finish()));
        let written = match self.json.take() {
            Some((files, errors)) => {
                let report = self.report(files, errors, skipped, tree, info);
                serde_json::to_writer_pretty(&mut self.out, &report)
                    .map_err(io::Error::from)
                    .and_then(|()| self.out.write_all(b"\n"))
            }
            None if self.opts.json == Json::Lines => self.json_end(skipped, tree, info),
            None => match tree {
                // A comment line: `sha256sum -c` and `--check` skip it.
                Some(t) => {
                    let end = if self.opts.zero { "\0" } else { "\n" };
                    write!(self.out, "# tree-sha256 {t}{end}")
                }
                None => Ok(()),
            },
        };
        self.check(written)?;
        let flushed = self.out.flush();
        self.check(flushed)
    }

    /// `--json-lines`' last lines: the skipped entries and the summary.
    fn json_end(
        &mut self,
        skipped: &[Skipped],
        tree_sha256: Option<String>,
        info: RunInfo<'_>,
    ) -> io::Result<()> {
        for entry in skipped_entries(skipped) {
            json_line(&mut self.out, &Line::Skipped(entry))?;
        }
        let end = LinesSummary {
            schema_version: SCHEMA_VERSION,
            tool: crate::diag::program().to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            tree_sha256,
            totals: self.totals(info),
        };
        json_line(&mut self.out, &Line::Summary(end))
    }

    fn report(
        &self,
        files: Vec<FileEntry>,
        errors: Vec<ErrorEntry>,
        skipped: &[Skipped],
        tree_sha256: Option<String>,
        info: RunInfo<'_>,
    ) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            tool: crate::diag::program().to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            files,
            errors,
            skipped: skipped_entries(skipped).collect(),
            tree_sha256,
            summary: self.totals(info),
        }
    }

    fn totals(&self, info: RunInfo<'_>) -> JsonSummary {
        let s = &self.summary;
        let secs = info.elapsed.as_secs_f64().max(1e-9);
        JsonSummary {
            strategy: info.strategy.to_owned(),
            jobs: info.workers,
            files: s.files,
            bytes: s.bytes,
            errors: s.errors,
            skipped: s.skipped,
            elapsed_seconds: secs,
            mib_per_second: s.bytes as f64 / (1024.0 * 1024.0) / secs,
            files_per_second: s.files as f64 / secs,
        }
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

/// The JSON entries of `skipped`.
fn skipped_entries(skipped: &[Skipped]) -> impl Iterator<Item = SkippedEntry> + '_ {
    skipped.iter().map(|k| SkippedEntry {
        path: JsonPath::from_bytes(path_bytes(&k.path)),
        kind: k.kind.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hasher::FileDigest;
    use std::path::PathBuf;

    fn job(name: &str) -> Job {
        Job::new(PathBuf::from(name), 0, false)
    }

    const INFO: RunInfo<'static> = RunInfo {
        strategy: "serial",
        workers: 1,
        elapsed: Duration::from_secs(1),
    };

    fn ok(byte: u8, size: u64) -> Outcome {
        Ok(FileDigest {
            digest: [byte; 32],
            size,
            held: None,
        })
    }

    #[test]
    fn gnu_lines_escape_like_sha256sum() {
        let mut out = Vec::new();
        let gnu = OutputOptions::default();
        write_line(&mut out, &gnu, &[0; 32], b"a b").unwrap();
        write_line(&mut out, &gnu, &[0; 32], b"x\ny\\").unwrap();
        let zero = "0".repeat(64);
        let expected = format!("{zero}  a b\n\\{zero}  x\\ny\\\\\n");
        assert_eq!(out, expected.as_bytes());
    }

    #[test]
    fn tag_and_zero_styles_match_gnu() {
        let mut out = Vec::new();
        let tag = OutputOptions {
            tag: true,
            ..Default::default()
        };
        write_line(&mut out, &tag, &[0; 32], b"n\nl").unwrap();
        let zero = OutputOptions {
            zero: true,
            ..Default::default()
        };
        write_line(&mut out, &zero, &[0; 32], b"n\nl").unwrap();
        let both = OutputOptions {
            zero: true,
            tag: true,
            ..Default::default()
        };
        write_line(&mut out, &both, &[0; 32], b"a").unwrap();
        let z = "0".repeat(64);
        let want = format!("\\SHA256 (n\\nl) = {z}\n{z}  n\nl\0SHA256 (a) = {z}\0");
        assert_eq!(show(&out), want);
    }

    fn show(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    #[test]
    fn reorder_window_releases_in_order_and_holds_only_what_is_ahead() {
        let mut order = InOrder::new(1000);
        let mut popped = Vec::new();
        for i in [3, 1, 0, 2, 6, 4, 5] {
            order.insert(i, i * 10);
            while let Some((at, item)) = order.pop_ready() {
                assert_eq!(item, at * 10);
                popped.push(at);
            }
            if i == 6 {
                // 4, 5 and 6: three slots from the next in line to the farthest.
                assert_eq!(order.window.len(), 3);
            }
        }
        assert_eq!(popped, [0, 1, 2, 3, 4, 5, 6]);
        assert!(order.window.is_empty());
        // In order, one slot at a time; an index whose turn has passed is dropped.
        for i in 7..1000 {
            order.insert(i, i * 10);
            assert_eq!(order.window.len(), 1);
            assert_eq!(order.pop_ready(), Some((i, i * 10)));
        }
        order.insert(3, 0);
        assert_eq!(order.pop_ready(), None);
        assert!(order.window.is_empty());
        // The first item last: the window grows to span the plan, and no
        // further (a vector's doubling would reserve 1,024 slots).
        let mut order = InOrder::new(600);
        for i in (1..600).chain([0]) {
            order.insert(i, i);
            let cap = order.window.capacity();
            assert!(cap <= 600, "{cap}");
        }
        let popped: Vec<usize> = std::iter::from_fn(|| order.pop_ready().map(|p| p.1)).collect();
        assert_eq!(popped, (0..600).collect::<Vec<_>>());
    }

    #[test]
    fn out_of_order_results_print_in_planned_order() {
        let jobs = [job("a"), job("b"), job("c")];
        let mut buf = Vec::new();
        {
            let mut w = Writer::new(&jobs, &mut buf, OutputOptions::default(), None);
            assert!(w.accept(2, ok(2, 5)).is_continue());
            assert!(w.accept(0, ok(0, 1)).is_continue());
            assert!(w.accept(1, ok(1, 10)).is_continue());
            assert!(w.finish(&[], INFO).is_continue());
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
        let mut w = Writer::new(&jobs, &mut buf, OutputOptions::default(), None);
        let _ = w.accept(0, Err(crate::ErrorKind::NotRegular));
        let _ = w.accept(1, ok(1, 1));
        let _ = w.finish(&[], INFO);
        assert_eq!(w.summary.errors, 1);
        assert_eq!(w.summary.files, 1);
        drop(w);
        assert_eq!(buf.len(), 64 + 2 + 1 + 1);
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
        let mut w = Writer::new(&jobs, Closed, OutputOptions::default(), None);
        let _ = w.accept(0, ok(0, 0));
        assert!(w.finish(&[], INFO).is_break());
        assert!(w.write_error.is_none());
    }
}
