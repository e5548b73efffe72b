//! `--merge SHARD...`: rebuild the single-machine output from shard outputs.
//!
//! Each shard (see [`crate::shard`] for the format) holds its lines in plan
//! order and, in `#` lines, each line's plan index, size and root offset. So the
//! merge needs neither the tree nor the list: it orders all lines by plan index,
//! which is the single machine's order, prints them in the style asked for on
//! its own command line (as a hashing run would: `--tag`, `-z`, `--tree`), and
//! computes the tree digest from the same (relative path, size, digest) triples
//! the single machine would have fed it.
//!
//! Nothing is printed unless the set is whole: every shard present exactly once,
//! each complete (its end line written), all from one plan and one shard count,
//! whatever order they are given in. Each problem is reported as
//! `tool: SHARD-FILE: reason` (or `tool: shard K/N: missing`), and the exit
//! status is 1. A whole set whose shards reported errors when they ran is
//! merged (the single machine would have printed the same lines) and the merge
//! exits 1, as the single machine would have.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::checkline::{split_lines, unescape_name};
use crate::error::{io_reason, Error, ErrorKind};
use crate::escape::display_path;
use crate::exit::Exit;
use crate::hasher::hex;
use crate::output::{write_line, OutputOptions};
use crate::report::unhex;
use crate::shard::{Shard, END, FILE, HEADER};
use crate::tree::TreeDigest;

/// One hashed file, as a shard recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Position in the plan.
    pub index: usize,
    /// Path as printed (root joined with the path below it).
    pub path: Vec<u8>,
    /// Bytes hashed.
    pub size: u64,
    /// Where the path below the root starts.
    pub rel: usize,
    /// SHA-256.
    pub digest: [u8; 32],
}

/// A parsed shard output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardFile {
    /// Which shard.
    pub shard: Shard,
    /// Plan id (hex).
    pub plan: String,
    /// Files in the whole plan.
    pub total: usize,
    /// Its files.
    pub entries: Vec<Entry>,
    /// Errors it reported; `None` if its end line is missing (killed, still
    /// running, or cut short).
    pub errors: Option<u64>,
}

/// Parse a shard output. Errors are reasons (the caller adds the path).
pub fn parse(data: &[u8]) -> Result<ShardFile, String> {
    let not_shard = || {
        format!(
            "not a hashrace shard output (no '{}' first line)",
            HEADER.trim_end()
        )
    };
    if !data.starts_with(HEADER.as_bytes()) {
        return Err(not_shard());
    }
    let zero = match data.iter().position(|&b| b == b'\n' || b == 0) {
        Some(i) => data[i] == 0,
        None => return Err(not_shard()),
    };
    let mut lines = split_lines(data, zero);
    let (_, header) = lines.next().ok_or_else(not_shard)?;
    let header = std::str::from_utf8(&header[HEADER.len()..]).map_err(|_| not_shard())?;
    let (shard, plan, total, tag) = parse_header(header).ok_or_else(not_shard)?;
    let term = if zero { 0 } else { b'\n' };
    let has_end = data
        .windows(END.len() + 1)
        .any(|w| w[0] == term && &w[1..] == END.as_bytes());
    if !has_end {
        // Killed mid-run: the last line may be cut anywhere; only the header counts.
        return Ok(ShardFile {
            shard,
            plan,
            total,
            entries: Vec::new(),
            errors: None,
        });
    }
    let mut digests = Vec::new();
    let mut files = Vec::new();
    let mut errors = None;
    for (n, line) in lines {
        let bad = |what: &str| format!("line {n}: {what}");
        if errors.is_some() {
            return Err(bad("text after the end line"));
        }
        if let Some(rest) = line.strip_prefix(FILE.as_bytes()) {
            files.push(parse_numbers(rest).ok_or_else(|| bad("malformed '# f' line"))?);
        } else if let Some(rest) = line.strip_prefix(END.as_bytes()) {
            let end = std::str::from_utf8(rest).map_err(|_| bad("malformed end line"))?;
            errors = Some(parse_end(end, shard, digests.len()).map_err(|e| bad(&e))?);
        } else if line.starts_with(b"#") || line.is_empty() {
            continue;
        } else {
            digests.push(parse_line(line, tag, zero).ok_or_else(|| bad("malformed digest line"))?);
        }
    }
    if errors.is_some() && files.len() != digests.len() {
        return Err(format!(
            "{} digest lines but {} '# f' lines",
            digests.len(),
            files.len()
        ));
    }
    let mut entries = Vec::with_capacity(digests.len());
    let mut last = None;
    for ((digest, path), nums) in digests.into_iter().zip(files) {
        let [index, size, rel] = nums;
        let (index, rel) = (index as usize, rel as usize);
        if index >= total || last.is_some_and(|l| index <= l) || rel > path.len() {
            return Err(format!("'# f {index} {size} {rel}' does not fit the plan"));
        }
        last = Some(index);
        entries.push(Entry {
            index,
            path,
            size,
            rel,
            digest,
        });
    }
    Ok(ShardFile {
        shard,
        plan,
        total,
        entries,
        errors,
    })
}

/// `K/N plan=HEX files=F style=gnu|tag`.
fn parse_header(h: &str) -> Option<(Shard, String, usize, bool)> {
    let mut words = h.split(' ');
    let (k, n) = words.next()?.split_once('/')?;
    let shard = Shard {
        k: k.parse().ok()?,
        n: n.parse().ok()?,
    };
    let plan = words.next()?.strip_prefix("plan=")?;
    let total = words.next()?.strip_prefix("files=")?.parse().ok()?;
    let tag = match words.next()?.strip_prefix("style=")? {
        "gnu" => false,
        "tag" => true,
        _ => return None,
    };
    let ok = shard.k < shard.n && plan.len() == 64 && unhex(plan).is_some();
    ok.then(|| (shard, plan.to_owned(), total, tag))
}

fn parse_numbers(rest: &[u8]) -> Option<[u64; 3]> {
    let text = std::str::from_utf8(rest).ok()?;
    let nums: Vec<u64> = text
        .split(' ')
        .map(|w| {
            w.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| w.parse().ok())?
        })
        .collect::<Option<_>>()?;
    nums.try_into().ok()
}

/// `K/N hashed=M errors=E`; gives E.
fn parse_end(end: &str, shard: Shard, lines: usize) -> Result<u64, String> {
    let mut words = end.split(' ');
    let same_shard = words.next() == Some(&shard.to_string()[..]);
    let hashed = words.next().and_then(|w| w.strip_prefix("hashed="));
    let errors = words.next().and_then(|w| w.strip_prefix("errors="));
    match (
        same_shard,
        hashed.and_then(|h| h.parse::<usize>().ok()),
        errors.and_then(|e| e.parse().ok()),
    ) {
        (true, Some(h), Some(e)) if h == lines => Ok(e),
        (true, Some(h), Some(_)) => Err(format!(
            "the end line says {h} lines, the shard has {lines}"
        )),
        _ => Err("malformed end line".into()),
    }
}

/// One of our own lines: `[\]HEX  NAME`, `[\]HEX *NAME` or `[\]SHA256 (NAME) = HEX`.
fn parse_line(line: &[u8], tag: bool, zero: bool) -> Option<([u8; 32], Vec<u8>)> {
    let (escaped, line) = match line.strip_prefix(b"\\") {
        Some(rest) if !zero => (true, rest),
        _ => (false, line),
    };
    let (hex_part, name) = if tag {
        let body = line.strip_prefix(b"SHA256 (")?;
        let (name, hex_part) = body.split_at(body.len().checked_sub(68)?);
        (hex_part.strip_prefix(b") = ")?, name)
    } else {
        let (hex_part, rest) = line.split_at_checked(64)?;
        // `  ` or, from a shard run with `-b`, ` *` (GNU's binary-mode mark).
        let name = rest
            .strip_prefix(b"  ")
            .or_else(|| rest.strip_prefix(b" *"))?;
        (hex_part, name)
    };
    let digest: [u8; 32] = unhex(std::str::from_utf8(hex_part).ok()?)?
        .try_into()
        .ok()?;
    let name = if escaped {
        unescape_name(name)?
    } else {
        name.to_vec()
    };
    (!name.is_empty()).then_some((digest, name))
}

fn refuse(path: &Path, why: impl Into<String>) {
    let e = Error::new(path, ErrorKind::Io(io::Error::other(why.into())));
    crate::diag::path_error(&e, None);
}

/// Merge the shard outputs `paths` and print the result with `opts`.
pub fn run(paths: &[PathBuf], opts: &OutputOptions) -> Exit {
    let mut shards = Vec::new();
    let mut refused = false;
    for p in paths {
        match std::fs::read(p)
            .map_err(|e| io_reason(&e))
            .and_then(|d| parse(&d))
        {
            Ok(s) => shards.push((p, s)),
            Err(why) => {
                refuse(p, why);
                refused = true;
            }
        }
    }
    let Some((first_path, first)) = shards.first() else {
        return Exit::Failure;
    };
    let (plan, n) = (first.plan.clone(), first.shard.n);
    let mut by_k: BTreeMap<usize, Vec<&PathBuf>> = BTreeMap::new();
    for (p, s) in &shards {
        if s.plan != plan || s.shard.n != n {
            let why = if s.plan != plan {
                format!(
                    "made from a different file list or tree (plan {}) than {} (plan {})",
                    &s.plan[..12],
                    display_path(first_path),
                    &plan[..12]
                )
            } else {
                format!(
                    "split in {} shards, {} in {n}",
                    s.shard.n,
                    display_path(first_path)
                )
            };
            refuse(p, format!("shard {} does not belong: {why}", s.shard));
            refused = true;
            continue;
        }
        if s.errors.is_none() {
            refuse(p,
                format!(
                    "shard {} is incomplete (no end line: killed, still running or cut short); rerun it",
                    s.shard
                ),
            );
            refused = true;
        }
        by_k.entry(s.shard.k).or_default().push(p);
    }
    for (k, files) in &by_k {
        if files.len() > 1 {
            let names: Vec<String> = files.iter().map(|p| display_path(p)).collect();
            crate::show!("shard {k}/{n}: given more than once ({})", names.join(", "));
            refused = true;
        }
    }
    let missing: Vec<usize> = (0..n).filter(|k| !by_k.contains_key(k)).collect();
    for k in &missing {
        crate::show!(
            "shard {k}/{n}: missing (plan {}); run it and merge again",
            &plan[..12]
        );
        refused = true;
    }
    if refused {
        return Exit::Failure;
    }
    let mut entries: Vec<&Entry> = shards.iter().flat_map(|(_, s)| &s.entries).collect();
    entries.sort_by_key(|e| e.index);
    if let Some(w) = entries.windows(2).find(|w| w[0].index == w[1].index) {
        crate::show!(
            "plan file {} is in more than one shard; refusing",
            w[0].index
        );
        return Exit::Failure;
    }
    match write(&entries, opts) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Exit::Success,
        Err(e) => return crate::diag::write_failed(&e),
    }
    let mut status = Exit::Success;
    for (p, s) in &shards {
        if let Some(e @ 1..) = s.errors {
            refuse(
                p,
                format!(
                    "shard {} reported {e} errors when it ran (see its log)",
                    s.shard
                ),
            );
            status = Exit::Failure;
        }
    }
    status
}

fn write(entries: &[&Entry], opts: &OutputOptions) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, crate::stdio::stdout());
    let mut tree = opts.tree.then(TreeDigest::default);
    for e in entries {
        write_line(&mut out, opts, &e.digest, &e.path)?;
        if let Some(t) = &mut tree {
            t.add(&e.path[e.rel..], e.size, e.digest);
        }
    }
    if let Some(t) = tree {
        // The same comment line a hashing run ends with.
        let end = if opts.zero { "\0" } else { "\n" };
        write!(out, "# tree-sha256 {}{end}", hex(&t.finish()))?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

    fn header(k: usize, n: usize, style: &str) -> String {
        format!(
            "{HEADER}{k}/{n} plan={} files=5 style={style}\n",
            "ab".repeat(32)
        )
    }

    #[test]
    fn parses_a_complete_shard_in_both_styles() {
        for (style, line) in [
            ("gnu", format!("\\{D}  r/a\\nb\n")),
            ("gnu", format!("\\{D} *r/a\\nb\n")), // a shard run with -b
            ("tag", format!("\\SHA256 (r/a\\nb) = {D}\n")),
        ] {
            let text = format!(
                "{}{line}# something else\n# f 3 12 2\n{END}1/2 hashed=1 errors=0\n",
                header(1, 2, style)
            );
            let s = parse(text.as_bytes()).unwrap();
            assert_eq!(s.shard, Shard { k: 1, n: 2 });
            assert_eq!(s.total, 5);
            assert_eq!(s.errors, Some(0));
            assert_eq!(s.entries.len(), 1);
            let e = &s.entries[0];
            assert_eq!((e.index, e.size, e.rel), (3, 12, 2));
            assert_eq!(e.path, b"r/a\nb");
            assert_eq!(hex(&e.digest), D);
        }
    }

    #[test]
    fn a_zero_shard_keeps_raw_names() {
        let text = format!(
            "{}{D}  \\x\ny\0# f 0 1 0\0{END}0/1 hashed=1 errors=0\0",
            header(0, 1, "gnu").trim_end()
        )
        .replace(&format!("gnu{D}"), &format!("gnu\0{D}"));
        let s = parse(text.as_bytes()).unwrap();
        assert_eq!(s.entries[0].path, b"\\x\ny");
    }

    #[test]
    fn a_shard_without_its_end_line_is_incomplete_wherever_it_was_cut() {
        let text = format!("{}{D}  a\n# f 0 1 0\n", header(0, 2, "gnu"));
        for cut in header(0, 2, "gnu").len()..text.len() {
            let s = parse(&text.as_bytes()[..cut]).unwrap();
            assert_eq!((s.errors, s.shard), (None, Shard { k: 0, n: 2 }));
        }
    }

    #[test]
    fn inconsistent_shards_are_refused_with_a_reason() {
        let h = header(0, 2, "gnu");
        for (text, why) in [
            ("x\n".to_owned(), "not a hashrace shard"),
            (
                format!("{h}{D}  a\n{END}0/2 hashed=1 errors=0\n"),
                "1 digest lines but 0",
            ),
            (
                format!("{h}{D}  a\n# f 5 1 0\n{END}0/2 hashed=1 errors=0\n"),
                "does not fit",
            ),
            (
                format!("{h}{D}  a\n# f 0 1 0\n{END}1/2 hashed=1 errors=0\n"),
                "malformed end",
            ),
            (
                format!("{h}{D}  a\n# f 0 1 0\n{END}0/2 hashed=2 errors=0\n"),
                "says 2 lines",
            ),
            (
                format!("{h}{END}0/2 hashed=0 errors=0\n{D}  a\n"),
                "after the end line",
            ),
            (
                format!("{h}{D} a\n{END}0/2 hashed=1 errors=0\n"),
                "malformed digest",
            ),
            (
                format!("{h}{D}  a\n# f 0 1 9\n{END}0/2 hashed=1 errors=0\n"),
                "does not fit",
            ),
        ] {
            let e = parse(text.as_bytes()).unwrap_err();
            assert!(e.contains(why), "{e:?} should say {why:?}");
        }
    }
}
