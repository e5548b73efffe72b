//! `-c/--check`: verify files against manifests, the way GNU `sha256sum -c` does.
//!
//! Each manifest (a file, or `-` for stdin) is parsed with one
//! [`CheckParser`](crate::checkline::CheckParser) for the whole run (GNU's
//! format-guessing state carries across manifests), its listed files are
//! hashed by the binary's own strategy, and results are printed in manifest
//! order: `NAME: OK`, `NAME: FAILED`, or `NAME: FAILED open or read` after a
//! `program: NAME: reason` on stderr. Then come GNU's summary warnings. Options
//! keep GNU's meanings, verified against coreutils 9.1:
//! - `--quiet` drops the `OK` lines; `--status` prints nothing on stdout and no
//!   summary, only read errors on stderr; `--warn` reports each malformed line
//!   with its line number. The last of the three given wins, as in GNU.
//! - `--strict` makes malformed lines fail the run (otherwise they only warn).
//! - `--ignore-missing` skips listed files that do not exist, but a manifest in
//!   which no listed file matched still fails ("no file was verified").
//! - Names in messages on stderr are shell-quoted ([`crate::quote`]); names in
//!   verdicts on stdout keep GNU's `\` escaping. A manifest that cannot be
//!   opened is reported with the system's reason, one that fails later with
//!   GNU's "read error".
//!
//! Exit status 0 only when every listed file matched (and, with `--strict`,
//! every line was well formed). A failing stdout ends the check with status
//! 1; a reader that leaves early (`| head`) ends it quietly, with the status
//! of what was checked until then, as a hashing run does.

use std::fs;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::Path;

use crate::checkline::{CheckLine, CheckParser, Parsed};
use crate::error::{Error, ErrorKind};
use crate::escape::{bytes_path, escape_status_name};
use crate::exit::Exit;
use crate::output::{InOrder, Parked};
use crate::progress::Progress;
use crate::quote::{quote_name, quote_path};
use crate::stdio::{LineError, LineReader, LineTooLong};
use crate::strategy::{Engine, Job};

/// GNU's check-mode switches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Do not print `OK` lines.
    pub quiet: bool,
    /// Print nothing on stdout; the exit status tells.
    pub status: bool,
    /// Report each malformed line.
    pub warn: bool,
    /// Malformed lines make the run fail.
    pub strict: bool,
    /// Files that do not exist are not reported.
    pub ignore_missing: bool,
}

/// Counts for one manifest, which decide its warnings and the exit status.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Lines that are not valid manifest lines.
    pub malformed: u64,
    /// Files that matched.
    pub ok: u64,
    /// Files whose digest differed.
    pub mismatched: u64,
    /// Files that could not be opened or read.
    pub unreadable: u64,
    /// Missing files skipped under `--ignore-missing`.
    pub missing_ignored: u64,
}

impl Tally {
    /// Whether what was checked so far failed: a mismatch, an unreadable
    /// file, or (with `--strict`) a malformed line.
    pub fn failed(&self, opts: &CheckOptions) -> bool {
        self.mismatched > 0 || self.unreadable > 0 || (opts.strict && self.malformed > 0)
    }
}

/// Everything one run needs besides the manifests.
#[derive(Debug, Clone, Copy)]
pub struct CheckRun<'a> {
    /// How to hash: the same engine, with the same settings, as hash mode.
    pub engine: &'a Engine,
    /// GNU switches.
    pub opts: CheckOptions,
    /// Show a progress line.
    pub progress: bool,
}

/// Check every manifest; the exit status covers them all.
pub fn run(run: &CheckRun<'_>, manifests: &[&Path]) -> Exit {
    let mut parser = CheckParser::new();
    let mut failed = false;
    for &manifest in manifests {
        // GNU names stdin "standard input" and shell-quotes every name.
        let name = if manifest == Path::new("-") {
            quote_name(b"standard input")
        } else {
            quote_path(manifest)
        };
        let name = String::from_utf8_lossy(&name).into_owned();
        let mut lines = match open_manifest(manifest) {
            Ok(input) => LineReader::new(input, b'\n'),
            Err(ManifestError::Open(e)) => {
                crate::diag::path_error(&Error::new(manifest, e), None);
                failed = true;
                continue;
            }
            Err(ManifestError::Read) => {
                crate::show!("{name}: read error");
                failed = true;
                continue;
            }
        };
        let mut out = io::BufWriter::new(crate::stdio::stdout());
        let (tally, write_failure, cut) =
            check_manifest(run, &name, &mut lines, &mut parser, &mut out);
        match write_failure {
            // A reader that went away (`| head`) has what it wanted: the run
            // ends quietly, as a hashing run does, and the status says
            // whether anything checked until then failed.
            Some(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                return Exit::from_failed(failed || tally.failed(&run.opts));
            }
            Some(e) => return crate::diag::write_failed(&e),
            None => {}
        }
        match cut {
            Some(LineError::TooLong { line }) => {
                let cut = LineTooLong {
                    before: Vec::new(),
                    line,
                    whole: false,
                };
                crate::show!("{name}: {cut}");
                failed = true;
            }
            // GNU says no more than this of a manifest that fails once open: the
            // verdicts so far, then this, and no summary.
            Some(LineError::Io(_)) => {
                crate::show!("{name}: read error");
                failed = true;
                continue;
            }
            None => {}
        }
        failed |= summarise(&name, &run.opts, &tally);
    }
    if failed {
        Exit::Failure
    } else {
        Exit::Success
    }
}

/// Why a manifest could not be had: GNU reports a failed open with the
/// system's reason, but any failure after that (a closed stdin too) only as
/// "read error".
#[derive(Debug)]
enum ManifestError {
    Open(io::Error),
    Read,
}

/// The manifest, open for reading (stdin for `-`).
fn open_manifest(path: &Path) -> Result<Box<dyn io::Read>, ManifestError> {
    if path == Path::new("-") {
        let stdin = crate::stdio::stdin().map_err(|_| ManifestError::Read)?;
        Ok(Box::new(stdin))
    } else {
        let file = fs::File::open(path).map_err(ManifestError::Open)?;
        Ok(Box::new(file))
    }
}

/// A manifest is checked as it is read, a batch of entries at a time: at most
/// this many entries...
const BATCH_ENTRIES: usize = 4096;
/// ...or this many bytes of their lines, whichever comes first (a line may be
/// as long as [`MAX_LINE`](crate::stdio::MAX_LINE)). The first batch is
/// [`FIRST_BATCH`] entries, so that the first verdict comes at once; each next
/// one is four times larger, up to the bound. Memory is bounded by the batch,
/// whatever the manifest's length; a batch ends where its slowest file does,
/// so batches are large enough for that to cost little.
const BATCH_BYTES: usize = 8 << 20;
const FIRST_BATCH: usize = 16;

/// A batch of a manifest's lines, parsed.
struct Listing {
    /// The well-formed entries, in order.
    entries: Vec<CheckLine>,
    /// GNU reports a malformed line when it reaches it, between the verdicts
    /// of the lines around it: the malformed line numbers before each entry...
    malformed_before: Vec<Vec<usize>>,
    /// ...and after the last one.
    malformed_after: Vec<usize>,
}

/// Read and parse the next batch of at most `limit` entries from `lines`
/// with `parser`, counting malformed lines in `tally`; and why the manifest
/// ended, if it ended with an error. A batch ends right after an entry, or at
/// the end of the manifest: lines after its last entry are malformed ones
/// read at the end.
fn parse_batch(
    lines: &mut LineReader<impl io::Read>,
    parser: &mut CheckParser,
    tally: &mut Tally,
    limit: usize,
) -> (Listing, Option<Result<(), LineError>>) {
    let mut listing = Listing {
        entries: Vec::new(),
        malformed_before: Vec::new(),
        malformed_after: Vec::new(),
    };
    let mut bytes = 0;
    while listing.entries.len() < limit && bytes < BATCH_BYTES {
        let (line_no, line) = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => return (listing, Some(Ok(()))),
            Err(e) => return (listing, Some(Err(e))),
        };
        bytes += line.len();
        match parser.parse(line) {
            // GNU's `-` entry means stdin; we do not hash stdin from a manifest
            // (see docs/check-format.md), so it counts as malformed.
            Ok(Parsed::Entry(entry)) if entry.path != b"-" => {
                listing.entries.push(entry);
                let before = std::mem::take(&mut listing.malformed_after);
                listing.malformed_before.push(before);
            }
            Ok(Parsed::Skip) => {}
            Ok(Parsed::Entry(_)) | Err(_) => {
                tally.malformed += 1;
                listing.malformed_after.push(line_no);
            }
        }
    }
    (listing, None)
}

/// The files `entries` name, with a size hint for largest-first scheduling
/// and the progress total when `sizes` (as in the walk, skipped when neither
/// needs it; a missing file is 0 here and reported when it is opened).
fn jobs(entries: &[CheckLine], sizes: bool) -> Vec<Job> {
    let job = |e: &CheckLine| {
        let path = bytes_path(&e.path).to_path_buf();
        let size = if sizes {
            fs::metadata(&path).map_or(0, |m| m.len())
        } else {
            0
        };
        Job::new(path, size, true)
    };
    entries.iter().map(job).collect()
}

/// What one entry's outcome says.
enum Verdict {
    /// Print `NAME: TEXT` (unless `--status`).
    Print(&'static [u8]),
    /// Print nothing (`--quiet` OK, `--ignore-missing`).
    Silent,
    /// Report the error, then print `FAILED open or read`.
    Unreadable(ErrorKind),
}

/// Judge `outcome` against `entry`, counting it in `tally`.
fn judge(opts: &CheckOptions, entry: &CheckLine, outcome: Parked, tally: &mut Tally) -> Verdict {
    match outcome {
        Ok((digest, _)) if digest == entry.digest => {
            tally.ok += 1;
            if opts.quiet || opts.status {
                Verdict::Silent
            } else {
                Verdict::Print(b"OK")
            }
        }
        Ok(_) => {
            tally.mismatched += 1;
            Verdict::Print(b"FAILED")
        }
        Err(ErrorKind::Io(e)) if opts.ignore_missing && e.kind() == io::ErrorKind::NotFound => {
            tally.missing_ignored += 1;
            Verdict::Silent
        }
        Err(kind) => {
            tally.unreadable += 1;
            Verdict::Unreadable(kind)
        }
    }
}

/// Read the manifest from `lines` batch by batch, hash what each batch lists
/// and print per-file lines to `out`, in manifest order. An error writing to
/// `out` stops the check and is returned with the counts so far; so is the
/// error that ended the manifest early (a line too long, a failed read).
pub fn check_manifest(
    run: &CheckRun<'_>,
    name: &str,
    lines: &mut LineReader<impl io::Read>,
    parser: &mut CheckParser,
    out: &mut impl Write,
) -> (Tally, Option<io::Error>, Option<LineError>) {
    let mut tally = Tally::default();
    let mut progress: Option<Progress> = None;
    let mut limit = FIRST_BATCH;
    let (write_failure, ended) = loop {
        let (listing, ended) = parse_batch(lines, parser, &mut tally, limit);
        limit = (limit * 4).min(BATCH_ENTRIES);
        if !listing.entries.is_empty() {
            if let Some(e) = check_batch(run, name, &listing, &mut tally, &mut progress, out) {
                break (Some(e), None);
            }
        }
        if let Some(ended) = ended {
            warn_malformed(run, name, &listing.malformed_after);
            break (None, ended.err());
        }
    };
    if let Some(p) = progress {
        p.finish();
    }
    (tally, write_failure, ended)
}

/// Hash the files of one batch and print their verdicts (and the warnings
/// for the malformed lines between them) to `out`; the error writing to
/// `out`, which stops the check. The progress line is started with the first
/// batch and grows with each.
fn check_batch(
    run: &CheckRun<'_>,
    name: &str,
    listing: &Listing,
    tally: &mut Tally,
    progress: &mut Option<Progress>,
    out: &mut impl Write,
) -> Option<io::Error> {
    let sizes = run.engine.strategy().is_parallel() || run.progress;
    let files = jobs(&listing.entries, sizes);
    let reading = run.engine.reading();
    let total = files.iter().map(|j| j.size).sum();
    match progress {
        Some(p) => p.add_total(files.len() as u64, total),
        None if run.progress => {
            let one_reader = run.engine.reads_one_at_a_time();
            *progress = Some(Progress::start(
                files.len() as u64,
                total,
                one_reader,
                reading.clone(),
            ));
        }
        None => {}
    }
    let progress = progress.as_ref();
    let mut order = InOrder::new(files.len());
    let mut write_failure = None;
    let mut verdict = |i: usize, outcome: Parked| -> ControlFlow<()> {
        let entry = &listing.entries[i];
        if !listing.malformed_before[i].is_empty() {
            let _ = out.flush();
            warn_malformed(run, name, &listing.malformed_before[i]);
        }
        let text = match judge(&run.opts, entry, outcome, tally) {
            Verdict::Silent => return ControlFlow::Continue(()),
            Verdict::Print(text) => text,
            Verdict::Unreadable(kind) => {
                let _ = out.flush();
                let e = Error::new(files[i].path.clone(), kind);
                crate::diag::path_error(&e, progress);
                b"FAILED open or read"
            }
        };
        if run.opts.status {
            return ControlFlow::Continue(());
        }
        match write_status(out, &entry.path, text) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                write_failure = Some(e);
                ControlFlow::Break(())
            }
        }
    };
    run.engine.run(&files, &reading, &mut |i, outcome| {
        // Progress counts completions as they happen, not in print order.
        if let Some(p) = progress {
            p.file_done(files[i].size);
        }
        order.insert(i, crate::output::parked(outcome));
        while let Some((i, outcome)) = order.pop_ready() {
            verdict(i, outcome)?;
        }
        ControlFlow::Continue(())
    });
    if let Err(e) = out.flush() {
        write_failure.get_or_insert(e);
    }
    write_failure
}

/// With `--warn`, GNU's warning for each of the malformed lines `line_numbers` of
/// the manifest `name`.
fn warn_malformed(run: &CheckRun<'_>, name: &str, line_numbers: &[usize]) {
    if run.opts.warn {
        for line_no in line_numbers {
            crate::show!("{name}: {line_no}: improperly formatted SHA256 checksum line");
        }
    }
}

/// `NAME: VERDICT`, with GNU's check-mode escaping of the name.
pub fn write_status(out: &mut impl Write, name: &[u8], verdict: &[u8]) -> io::Result<()> {
    let (escaped, name) = escape_status_name(name);
    if escaped {
        out.write_all(b"\\")?;
    }
    out.write_all(&name)?;
    out.write_all(b": ")?;
    out.write_all(verdict)?;
    out.write_all(b"\n")
}

/// Print GNU's warnings for one manifest; return whether it failed.
fn summarise(name: &str, opts: &CheckOptions, t: &Tally) -> bool {
    let listed = t.ok + t.mismatched + t.unreadable + t.missing_ignored;
    if listed == 0 {
        crate::show!("{name}: no properly formatted checksum lines found");
        return true;
    }
    if !opts.status {
        let warnings = [
            (t.malformed, "line is", "lines are", "improperly formatted"),
            (
                t.unreadable,
                "listed file",
                "listed files",
                "could not be read",
            ),
            (
                t.mismatched,
                "computed checksum",
                "computed checksums",
                "did NOT match",
            ),
        ];
        for (n, one, many, what) in warnings {
            match n {
                0 => {}
                1 => crate::show!("WARNING: 1 {one} {what}"),
                _ => crate::show!("WARNING: {n} {many} {what}"),
            }
        }
    }
    // GNU: "no file was verified" when no listed file *matched* (mismatches,
    // unreadable files and directories do not count), not under --status.
    let none_matched = opts.ignore_missing && t.ok == 0;
    if none_matched && !opts.status {
        crate::show!("{name}: no file was verified");
    }
    if none_matched {
        return true;
    }
    t.failed(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(ok: u64, mismatched: u64, unreadable: u64, malformed: u64) -> Tally {
        Tally {
            ok,
            mismatched,
            unreadable,
            malformed,
            missing_ignored: 0,
        }
    }

    #[test]
    fn exit_decision_follows_gnu() {
        let o = CheckOptions::default();
        assert!(!summarise("m", &o, &tally(3, 0, 0, 0)));
        assert!(summarise("m", &o, &tally(3, 1, 0, 0)));
        assert!(summarise("m", &o, &tally(3, 0, 1, 0)));
        assert!(
            !summarise("m", &o, &tally(3, 0, 0, 2)),
            "malformed only warns"
        );
        let strict = CheckOptions { strict: true, ..o };
        assert!(summarise("m", &strict, &tally(3, 0, 0, 2)));
        assert!(
            summarise("m", &o, &tally(0, 0, 0, 5)),
            "nothing listed fails"
        );
        let im = CheckOptions {
            ignore_missing: true,
            ..o
        };
        let only_missing = Tally {
            missing_ignored: 2,
            ..Tally::default()
        };
        assert!(summarise("m", &im, &only_missing), "nothing verified fails");
        // GNU 9.1: a manifest of only mismatches or unreadable entries has
        // not *matched* anything either; one match is enough.
        assert!(summarise("m", &im, &tally(0, 1, 0, 0)));
        assert!(summarise("m", &im, &tally(0, 0, 1, 0)));
        assert!(!summarise(
            "m",
            &im,
            &Tally {
                ok: 1,
                ..only_missing
            }
        ));
        let quiet_status = CheckOptions { status: true, ..im };
        assert!(summarise("m", &quiet_status, &only_missing));
    }

    #[test]
    fn status_lines_escape_only_names_with_newlines() {
        let mut out = Vec::new();
        write_status(&mut out, b"a\\b", b"OK").unwrap();
        write_status(&mut out, b"n\nl\\", b"FAILED").unwrap();
        assert_eq!(out, b"a\\b: OK\n\\n\\nl\\\\: FAILED\n");
    }
}
