//! File lists: `--list` writes one, `--files-from` reads it (or a plain list of paths) back.
//!
//! On a shared filesystem holding millions of files, walking is expensive and
//! every shard would walk the same tree; `--list` walks once and the shards read
//! the list. A list must keep each path's exact bytes (any byte but NUL may be in
//! a name), the size the walk saw (for balancing shards), where the root ends in
//! the path (for the tree digest) and whether the file may be opened through a
//! final symbolic link (file roots and `-L`), so that hashing a list is exactly
//! hashing the tree it came from. The format, version 1:
//!
//! ```text
//! # hashrace-list v1
//! <size> <root offset> <follow 0|1>  <name>
//! ```
//!
//! - Records end with a newline; the name is escaped as `sha256sum` does (the
//!   record then starts with `\`, and `\`, newline, CR are written `\\`, `\n`,
//!   `\r`). With `-z` records end with NUL and names are raw. Read it back with
//!   `--files-from LIST` (or `--files-from LIST -0` for the NUL form).
//! - The numbers are decimal, separated by single spaces; two spaces end them.
//!   A record may give the size alone (`<size>  <name>`): offset 0, follow 1,
//!   like a path named on the command line.
//! - Records starting with `#` after the header are comments.
//!
//! A `--files-from` file whose first record is not the header is the plain list
//! it always was (one path per line or per NUL, each walked like a PATH
//! argument), so existing uses keep working.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::checkline::{escape_name, split_lines, unescape_name};
use crate::error::{Error, ErrorKind};
use crate::escape::path_bytes;
use crate::exit::Exit;
use crate::strategy::Job;
use crate::walk::Plan;

/// The first record of a list.
pub const HEADER: &[u8] = b"# hashrace-list v1";

/// What `--files-from` read.
#[derive(Debug)]
pub enum Listed {
    /// A plain list: paths to walk like PATH arguments.
    Paths(Vec<PathBuf>),
    /// A `--list` list: the planned files themselves, no walk needed.
    Jobs(Vec<Job>),
}

/// Read `list` ('-' = stdin), NUL-separated if `nul`. A line longer than
/// [`MAX_LINE`](crate::stdio::MAX_LINE) ends the list: what came before it
/// is returned, with the error that names the list.
pub fn read(list: &Path, nul: bool) -> Result<(Listed, Option<Error>), Error> {
    let sep = if nul { b'\0' } else { b'\n' };
    let read = if list == Path::new("-") {
        crate::stdio::stdin().and_then(|input| crate::stdio::read_lines(input, sep))
    } else {
        std::fs::File::open(list).and_then(|file| crate::stdio::read_lines(file, sep))
    };
    let (data, cut) = match read.map_err(|e| Error::new(list, e))? {
        Ok(data) => (data, None),
        Err(cut) => {
            let why = io::Error::other(cut.to_string());
            (cut.before, Some(Error::new(list, why)))
        }
    };
    let listed =
        parse(&data, nul).map_err(|why| Error::new(list, ErrorKind::Io(io::Error::other(why))))?;
    Ok((listed, cut))
}

/// Parse a list's bytes (see the module doc).
pub fn parse(data: &[u8], nul: bool) -> Result<Listed, String> {
    let sep = if nul { b'\0' } else { b'\n' };
    let other = if nul { b'\n' } else { b'\0' };
    if data.starts_with(HEADER) && data.get(HEADER.len()) == Some(&other) {
        return Err(if nul {
            "a newline-separated hashrace list; read it without -0".into()
        } else {
            "a NUL-separated hashrace list; read it with -0".into()
        });
    }
    let mut lines = split_lines(data, nul);
    if !matches!(lines.next(), Some((_, first)) if first == HEADER) {
        return Ok(Listed::Paths(
            data.split(|&b| b == sep)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(OsStr::from_bytes(p)))
                .collect(),
        ));
    }
    let mut jobs = Vec::new();
    for (n, line) in lines {
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let job =
            parse_record(line, nul).ok_or_else(|| format!("record {n}: not a list record"))?;
        jobs.push(job);
    }
    // The order a walk would give, whatever order the list was written in.
    jobs.sort_by(|a, b| path_bytes(&a.path).cmp(path_bytes(&b.path)));
    Ok(Listed::Jobs(jobs))
}

fn parse_record(line: &[u8], raw: bool) -> Option<Job> {
    let (escaped, line) = match line.strip_prefix(b"\\") {
        Some(rest) if !raw => (true, rest),
        _ => (false, line),
    };
    let split = line.windows(2).position(|w| w == b"  ")?;
    let (fields, name) = (&line[..split], &line[split + 2..]);
    let name = if escaped {
        unescape_name(name)?
    } else {
        name.to_vec()
    };
    if name.is_empty() || name.contains(&0) {
        return None;
    }
    let nums: Vec<u64> = std::str::from_utf8(fields)
        .ok()?
        .split(' ')
        .map(|f| {
            // `parse` takes a leading '+'; a list never has one.
            f.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| f.parse().ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    let (size, rel, follow) = match nums[..] {
        [size] => (size, 0, true),
        [size, rel, follow @ (0 | 1)] => (size, usize::try_from(rel).ok()?, follow == 1),
        _ => return None,
    };
    if rel > name.len() {
        return None;
    }
    Some(Job {
        rel,
        ..Job::new(PathBuf::from(OsStr::from_bytes(&name)), size, follow)
    })
}

/// Write the list of `jobs` (header first) to `out`; `zero` for the NUL form.
pub fn write(out: &mut impl Write, jobs: &[Job], zero: bool) -> io::Result<()> {
    let end: &[u8] = if zero { b"\0" } else { b"\n" };
    out.write_all(HEADER)?;
    out.write_all(end)?;
    for j in jobs {
        let raw = path_bytes(&j.path);
        let (escaped, name) = if zero {
            (false, std::borrow::Cow::Borrowed(raw))
        } else {
            escape_name(raw)
        };
        if escaped {
            out.write_all(b"\\")?;
        }
        write!(out, "{} {} {}  ", j.size, j.rel, u8::from(j.follow))?;
        out.write_all(&name)?;
        out.write_all(end)?;
    }
    out.flush()
}

/// `--list`: report the walk's errors, print the list of `plan`'s files.
pub fn run(plan: &Plan, zero: bool) -> Exit {
    for e in &plan.errors {
        crate::diag::path_error(e, None);
    }
    match write(
        &mut io::BufWriter::new(crate::stdio::stdout()),
        &plan.files,
        zero,
    ) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Exit::Success,
        Err(e) => return crate::diag::write_failed(&e),
    }
    if plan.errors.is_empty() {
        Exit::Success
    } else {
        Exit::Failure
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs() -> Vec<Job> {
        let mut odd = Job::new(
            PathBuf::from(OsStr::from_bytes(b"r/a\nb\\c\r\xff  x")),
            7,
            false,
        );
        odd.rel = 2;
        vec![
            Job::new(PathBuf::from("#not-a-comment"), 0, true),
            Job {
                rel: 2,
                ..Job::new(PathBuf::from("r/1 2"), 12345, false)
            },
            odd,
        ]
    }

    #[test]
    fn round_trips_any_bytes_in_both_forms() {
        for zero in [false, true] {
            let mut out = Vec::new();
            write(&mut out, &jobs(), zero).unwrap();
            let Listed::Jobs(back) = parse(&out, zero).unwrap() else {
                panic!("not read as a list")
            };
            assert_eq!(back, jobs(), "zero={zero}");
        }
    }

    #[test]
    fn the_text_form_is_what_the_doc_says() {
        let mut out = Vec::new();
        write(&mut out, &jobs()[1..], false).unwrap();
        assert_eq!(
            out,
            b"# hashrace-list v1\n12345 2 0  r/1 2\n\\7 2 0  r/a\\nb\\\\c\\r\xff  x\n"
        );
    }

    #[test]
    fn size_only_records_and_comments_are_accepted() {
        let Listed::Jobs(j) =
            parse(b"# hashrace-list v1\n# made by hand\n5  a b\n", false).unwrap()
        else {
            panic!()
        };
        assert_eq!(j, [Job::new(PathBuf::from("a b"), 5, true)]);
    }

    #[test]
    fn bad_records_are_refused_with_their_number() {
        for bad in [
            &b"x  a"[..],
            b"1 2  a",
            b"1 0 2  a",
            b"+1  a",
            b"1 9 0  a",
            b"1",
            b"1  ",
            b"\\1  a\\q",
        ] {
            let mut data = b"# hashrace-list v1\n1  ok\n".to_vec();
            data.extend_from_slice(bad);
            let e = parse(&data, false).unwrap_err();
            assert_eq!(
                e,
                "record 3: not a list record",
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn plain_lists_stay_plain_and_the_wrong_separator_is_named() {
        let Listed::Paths(p) = parse(b"a\n\nb c\n", false).unwrap() else {
            panic!()
        };
        assert_eq!(p, [PathBuf::from("a"), PathBuf::from("b c")]);
        let Listed::Paths(p) = parse(b"a\nb\0c\0", true).unwrap() else {
            panic!()
        };
        assert_eq!(p, [PathBuf::from("a\nb"), PathBuf::from("c")]);
        assert!(parse(b"# hashrace-list v1\x001  a\0", false)
            .unwrap_err()
            .contains("with -0"));
        assert!(parse(b"# hashrace-list v1\n1  a\n", true)
            .unwrap_err()
            .contains("without -0"));
    }
}
