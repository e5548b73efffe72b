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
//! Nothing is printed unless the set is whole and untouched: every shard
//! present exactly once, each complete (its end line written), all from one
//! plan and one shard count, whatever order they are given in; each shard's
//! lines in sorted order and matching the digest its end line vouches for;
//! the files the shards were assigned adding up to the plan's, and every one
//! of them hashed or reported as an error. Each problem is reported as
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
use crate::shard::{entries_digest, Shard, Vouched, END, FILE, HEADER, HEADER_V1};
use crate::tree::TreeDigest;
use crate::units;

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
    /// Plan files it was given (hashed or not).
    pub assigned: usize,
    /// Its lines are `--tag` lines (`style=tag`).
    pub tag: bool,
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
    if data.starts_with(HEADER_V1.as_bytes()) {
        let why = "written by an older hashrace (shard format v1, which cannot prove it is \
                   whole); rerun it";
        return Err(why.into());
    }
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
            assigned: 0,
            tag,
            entries: Vec::new(),
            errors: None,
        });
    }
    let mut digests = Vec::new();
    let mut files = Vec::new();
    let mut end: Option<End> = None;
    for (n, line) in lines {
        let bad = |what: &str| format!("line {n}: {what}");
        if end.is_some() {
            return Err(bad("text after the end line"));
        }
        if let Some(rest) = line.strip_prefix(FILE.as_bytes()) {
            files.push(parse_numbers(rest).ok_or_else(|| bad("malformed '# f' line"))?);
        } else if let Some(rest) = line.strip_prefix(END.as_bytes()) {
            let text = std::str::from_utf8(rest).map_err(|_| bad("malformed end line"))?;
            end = Some(parse_end(text, shard, digests.len()).map_err(|e| bad(&e))?);
        } else if line.starts_with(b"#") || line.is_empty() {
            continue;
        } else {
            digests.push(parse_line(line, tag, zero).ok_or_else(|| bad("malformed digest line"))?);
        }
    }
    let Some(end) = end else {
        return Err("no end line after its lines".into());
    };
    if files.len() != digests.len() {
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
    check_vouched(&entries, &end)?;
    Ok(ShardFile {
        shard,
        plan,
        total,
        assigned: end.assigned,
        tag,
        entries,
        errors: Some(end.errors),
    })
}

/// A shard's lines must be in sorted order, and be what its end line vouches
/// for; and every file it was assigned but did not hash must have been
/// reported as an error.
fn check_vouched(entries: &[Entry], end: &End) -> Result<(), String> {
    if let Some(w) = entries.windows(2).find(|w| w[0].path > w[1].path) {
        return Err(format!(
            "its lines are out of order at plan file {} (changed after it was written)",
            w[1].index
        ));
    }
    let vouched = entries.iter().map(|e| Vouched {
        index: e.index,
        size: e.size,
        rel: e.rel,
        path: &e.path,
        digest: &e.digest,
    });
    if entries_digest(vouched) != end.sha256 {
        return Err("its lines do not match the sha256 of its end line \
                    (changed after it was written)"
            .into());
    }
    let missing = end.assigned.checked_sub(entries.len()).ok_or_else(|| {
        format!(
            "{} but only {} assigned",
            units::count(entries.len() as u64, "line"),
            units::count(end.assigned as u64, "file")
        )
    })?;
    if missing as u64 > end.errors {
        return Err(format!(
            "{missing} of its {} are neither hashed nor reported as errors",
            units::count(end.assigned as u64, "file")
        ));
    }
    Ok(())
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

/// What a shard's end line says.
#[derive(Debug)]
struct End {
    assigned: usize,
    errors: u64,
    sha256: [u8; 32],
}

/// `K/N hashed=M assigned=A errors=E sha256=HEX`, for a shard of `lines` lines.
fn parse_end(end: &str, shard: Shard, lines: usize) -> Result<End, String> {
    let mut words = end.split(' ');
    let same_shard = words.next() == Some(&shard.to_string()[..]);
    let mut field = |name: &str| {
        let word = words.next()?;
        word.strip_prefix(name)?.strip_prefix('=')
    };
    let (hashed, assigned, errors, sha256) = (
        field("hashed"),
        field("assigned"),
        field("errors"),
        field("sha256"),
    );
    let sha256 = sha256
        .and_then(unhex)
        .and_then(|d| <[u8; 32]>::try_from(d).ok());
    match (
        same_shard,
        hashed.and_then(|h| h.parse::<usize>().ok()),
        assigned.and_then(|a| a.parse().ok()),
        errors.and_then(|e| e.parse().ok()),
        sha256,
    ) {
        (true, Some(h), Some(assigned), Some(errors), Some(sha256)) if h == lines => Ok(End {
            assigned,
            errors,
            sha256,
        }),
        (true, Some(h), ..) if h != lines => Err(format!(
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
        if let Some(why) = header_differs(s, first, first_path) {
            refuse(p, format!("shard {} does not belong: {why}", s.shard));
            refused = true;
            continue;
        }
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
    let Some(entries) = whole_plan(&shards) else {
        return Exit::Failure;
    };
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
                    "shard {} reported {} when it ran (see its log)",
                    s.shard,
                    units::count(e, "error")
                ),
            );
            status = Exit::Failure;
        }
    }
    status
}

/// Why the header of `s` does not fit that of `first` (read from
/// `first_path`) in the fields a plan fixes beside its id: the plan's file
/// count and the style of its lines. (The id and N are compared by the
/// caller; K is repeated in the end line, the style must parse every line,
/// and the file counts must add up to the assignments.)
fn header_differs(s: &ShardFile, first: &ShardFile, first_path: &Path) -> Option<String> {
    let style = |tag: bool| if tag { "tag" } else { "gnu" };
    if s.plan != first.plan || s.shard.n != first.shard.n {
        return None;
    }
    if s.total != first.total {
        return Some(format!(
            "its header says files={}, {} says files={} for the same plan (changed after it was written)",
            s.total,
            display_path(first_path),
            first.total
        ));
    }
    (s.tag != first.tag).then(|| {
        format!(
            "its lines are style={}, {} style={}",
            style(s.tag),
            display_path(first_path),
            style(first.tag)
        )
    })
}

/// The entries of a set of shards that belong together, in plan order, if
/// they make up the plan: the files assigned add up to the plan's, no plan
/// file is in two shards, and the paths are in sorted order across shards
/// too. Each problem is reported; `None` then.
fn whole_plan<'s>(shards: &'s [(&PathBuf, ShardFile)]) -> Option<Vec<&'s Entry>> {
    let total = shards.first()?.1.total;
    let assigned: usize = shards.iter().map(|(_, s)| s.assigned).sum();
    if assigned != total {
        let given = units::count(assigned as u64, "file");
        crate::show!("the shards were given {given}, the plan has {total}; refusing");
        return None;
    }
    let mut entries: Vec<&Entry> = shards.iter().flat_map(|(_, s)| &s.entries).collect();
    entries.sort_by_key(|e| e.index);
    if let Some(w) = entries.windows(2).find(|w| w[0].index == w[1].index) {
        crate::show!(
            "plan file {} is in more than one shard; refusing",
            w[0].index
        );
        return None;
    }
    if let Some(w) = entries.windows(2).find(|w| w[0].path > w[1].path) {
        crate::show!("plan file {} is out of sorted order; refusing", w[1].index);
        return None;
    }
    Some(entries)
}

fn write(entries: &[&Entry], opts: &OutputOptions) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, crate::stdio::stdout());
    let mut tree = opts.tree.then(TreeDigest::default);
    for e in entries {
        write_line(&mut out, opts, &e.digest, &e.path)?;
        if let Some(t) = &mut tree {
            t.add(&e.path, e.rel, e.size, e.digest);
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

    /// The end line of shard `k/n` vouching for `files` (plan index, size,
    /// root offset, path; digest `D` each), `assigned` files given to it.
    fn end(k: usize, n: usize, files: &[(usize, u64, usize, &[u8])], assigned: usize) -> String {
        let digest: [u8; 32] = unhex(D).unwrap().try_into().unwrap();
        let vouched = files.iter().map(|&(index, size, rel, path)| Vouched {
            index,
            size,
            rel,
            path,
            digest: &digest,
        });
        let sha = hex(&entries_digest(vouched));
        let errors = assigned - files.len();
        format!(
            "{END}{k}/{n} hashed={} assigned={assigned} errors={errors} sha256={sha}",
            files.len()
        )
    }

    #[test]
    fn parses_a_complete_shard_in_both_styles() {
        let end = end(1, 2, &[(3, 12, 2, b"r/a\nb")], 1);
        for (style, line) in [
            ("gnu", format!("\\{D}  r/a\\nb\n")),
            ("gnu", format!("\\{D} *r/a\\nb\n")), // a shard run with -b
            ("tag", format!("\\SHA256 (r/a\\nb) = {D}\n")),
        ] {
            let text = format!(
                "{}{line}# something else\n# f 3 12 2\n{end}\n",
                header(1, 2, style)
            );
            let s = parse(text.as_bytes()).unwrap();
            assert_eq!(s.shard, Shard { k: 1, n: 2 });
            assert_eq!((s.total, s.assigned), (5, 1));
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
        let end = end(0, 1, &[(0, 1, 0, b"\\x\ny")], 1);
        let text = format!(
            "{}\0{D}  \\x\ny\0# f 0 1 0\0{end}\0",
            header(0, 1, "gnu").trim_end()
        );
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
        let one = end(0, 2, &[(0, 1, 0, b"a")], 1);
        let (a, b) = (b"a".as_slice(), b"b".as_slice());
        let two = end(0, 2, &[(0, 1, 0, a), (1, 1, 0, b)], 2);
        let v1 = h.replace(HEADER, HEADER_V1);
        for (text, why) in [
            ("x\n".to_owned(), "not a hashrace shard"),
            (format!("{v1}{D}  a\n# f 0 1 0\n{one}\n"), "older hashrace"),
            (format!("{h}{D}  a\n{one}\n"), "1 digest lines but 0"),
            (format!("{h}{D}  a\n# f 5 1 0\n{one}\n"), "does not fit"),
            (
                format!("{h}{D}  a\n# f 0 1 0\n{}\n", one.replace("0/2", "1/2")),
                "malformed end",
            ),
            (
                format!("{h}{D}  a\n# f 0 1 0\n{END}0/2 hashed=1 errors=0\n"),
                "malformed end",
            ),
            (
                format!(
                    "{h}{D}  a\n# f 0 1 0\n{}\n",
                    one.replace("hashed=1", "hashed=2")
                ),
                "says 2 lines",
            ),
            (
                format!("{h}{}\n{D}  a\n", end(0, 2, &[], 0)),
                "after the end line",
            ),
            (format!("{h}{D} a\n{one}\n"), "malformed digest"),
            (format!("{h}{D}  a\n# f 0 1 9\n{one}\n"), "does not fit"),
            // Changed after the run: a size, a name, two lines swapped, a
            // line deleted with its '# f' line and the count lowered.
            (
                format!("{h}{D}  a\n# f 0 2 0\n{one}\n"),
                "do not match the sha256",
            ),
            (
                format!("{h}{D}  c\n# f 0 1 0\n{one}\n"),
                "do not match the sha256",
            ),
            (
                format!("{h}{D}  b\n{D}  a\n# f 0 1 0\n# f 1 1 0\n{two}\n"),
                "out of order",
            ),
            (
                format!(
                    "{h}{D}  a\n# f 0 1 0\n{}\n",
                    two.replace("hashed=2", "hashed=1")
                ),
                "do not match the sha256",
            ),
            // Given two files, hashed one, and reported no error.
            (
                format!(
                    "{h}{D}  a\n# f 0 1 0\n{}\n",
                    one.replace("assigned=1", "assigned=2")
                ),
                "neither hashed nor reported",
            ),
        ] {
            let e = parse(text.as_bytes()).unwrap_err();
            assert!(e.contains(why), "{e:?} should say {why:?}");
        }
    }

    #[test]
    fn a_set_whose_assigned_files_do_not_add_up_is_not_whole() {
        let text = |k: usize, files: &[(usize, u64, usize, &[u8])], assigned: usize| {
            let mut t = header(k, 2, "gnu");
            for f in files {
                t += &format!("{D}  {}\n", String::from_utf8_lossy(f.3));
            }
            for f in files {
                t += &format!("# f {} {} {}\n", f.0, f.1, f.2);
            }
            t + &end(k, 2, files, assigned) + "\n"
        };
        let parsed = |k, files: &[(usize, u64, usize, &[u8])], assigned| {
            parse(text(k, files, assigned).as_bytes()).unwrap()
        };
        let p = PathBuf::from("s");
        let a = parsed(0, &[(0, 1, 0, b"a"), (1, 1, 0, b"b")], 2);
        let b = parsed(1, &[(2, 1, 0, b"c"), (3, 1, 0, b"d"), (4, 1, 0, b"e")], 3);
        let set = [(&p, a.clone()), (&p, b)];
        let whole = whole_plan(&set).unwrap();
        let names: Vec<&[u8]> = whole.iter().map(|e| e.path.as_slice()).collect();
        assert_eq!(names, [b"a", b"b", b"c", b"d", b"e"]);
        // One file of the plan (5) was given to no shard.
        let short = parsed(1, &[(2, 1, 0, b"c"), (3, 1, 0, b"d")], 2);
        assert!(whole_plan(&[(&p, a.clone()), (&p, short)]).is_none());
        // Each shard sorted, but together out of order.
        let late = parsed(1, &[(2, 1, 0, b"0"), (3, 1, 0, b"d"), (4, 1, 0, b"e")], 3);
        assert!(whole_plan(&[(&p, a), (&p, late)]).is_none());
    }
}
