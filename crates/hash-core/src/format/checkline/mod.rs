//! Parsing `sha256sum -c` manifest lines, and escaping names for output, the
//! way GNU coreutils 9.1 `sha256sum` does.
//!
//! A manifest is whatever `sha256sum` (or `sha256sum --tag`, or BSD
//! `sha256 -r`) printed earlier, possibly edited by hand. Check mode must
//! accept exactly the lines GNU accepts and read the same file name out of
//! each, or a manifest that GNU verifies would fail here (or, worse, verify a
//! different file). Every rule below was confirmed against the real
//! `/usr/bin/sha256sum` 9.1; `docs/check-format.md` is the written spec, with the
//! commands used.
//!
//! Three line shapes are accepted, each optionally preceded by spaces/tabs and
//! then by a single `\` that says "the name is escaped":
//!
//! * GNU: `<64 hex> <' ' or '*'><name>`, the separator being a space or a tab.
//! * BSD tag: `SHA256 (<name>) = <64 hex>`, the name ending at the *last* `)`
//!   because names may themselves contain `) = `.
//! * BSD reversed (`sha256 -r`): `<64 hex><space or tab><name>`, recognised
//!   when the byte after the separator is not a type flag or is the last.
//!
//! The GNU and reversed shapes are ambiguous (`<hex>  a` is either `a` in GNU
//! form or ` a` in reversed form), so GNU resolves them with state: the first
//! untagged line decides, and mixing is then refused. [`CheckParser`] carries
//! that state; `parse_check_line` is the stateless view of a first line.
//!
//! Everything is bytes: names are never decoded as UTF-8, because a manifest
//! may name any file the file system can hold.
//!
//! Output goes the other way: [`escape_name`] gives the escaping of a hash
//! line, [`escape_status_name`] the (different, in 9.1) escaping of a
//! `NAME: OK` line in check mode, and [`unescape_name`] undoes the former.
//!
//! Deliberate deviations from GNU (both make a line malformed that GNU would
//! act on; see `docs/check-format.md`):
//! * a name containing NUL is refused, where GNU silently cuts the name at the
//!   NUL (a C-string artefact that checks a *different* file);
//! * an empty BSD name `SHA256 () = ...` is refused, where GNU tries to open
//!   `""` and reports a read failure.

use std::borrow::Cow;
use std::fmt;

/// Hex digits in a SHA-256 digest.
const HEX_LEN: usize = 64;

/// The algorithm tag GNU `sha256sum --tag` writes.
const TAG: &[u8] = b"SHA256";

/// GNU's `ISWHITE`: only space and tab, not the other C whitespace bytes.
fn is_white(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Which syntax a manifest line used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// `<hex> <flag><name>`, what `sha256sum` prints by default.
    Gnu,
    /// `SHA256 (<name>) = <hex>`, what `sha256sum --tag` prints.
    Bsd,
    /// `<hex> <name>` with no type flag, what BSD `sha256 -r` prints.
    BsdReversed,
}

/// One parsed manifest line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckLine {
    /// The expected digest, decoded from hex (either case).
    pub digest: [u8; 32],
    /// The file name, unescaped if the line was escaped; never empty, never
    /// containing NUL.
    pub path: Vec<u8>,
    /// The syntax the line used.
    pub format: LineFormat,
}

/// Why a line is not a valid SHA-256 manifest line.
///
/// GNU reports all of these with the same "improperly formatted SHA256
/// checksum line" message; the variants exist for tests and diagnostics, so a
/// GNU-compatible front end should print GNU's message, not [`fmt::Display`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// An untagged line shorter than 64 hex digits, a separator and a name.
    TooShort,
    /// The first field (or the digest after `=`) is not exactly 64 hex digits,
    /// or an untagged digest is not followed by a space or tab.
    BadDigest,
    /// A tag line for some other algorithm, such as `MD5 (x) = ...`.
    OtherAlgorithm,
    /// `SHA256` not followed by ` (` or `(`.
    MalformedTag,
    /// A tag line with no `)` closing the name.
    NoCloseParen,
    /// A tag line whose `)` is not followed by `=`.
    NoEquals,
    /// An escaped name with a `\` not followed by `\`, `n` or `r`.
    InvalidEscape,
    /// A name containing a NUL byte (GNU would truncate it; we refuse).
    NulInName,
    /// A tag line with nothing between the parentheses.
    EmptyName,
    /// A reversed-format line after a GNU-format line in the same run.
    MixedFormat,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseError::TooShort => "line too short",
            ParseError::BadDigest => "digest is not 64 hex digits followed by a blank",
            ParseError::OtherAlgorithm => "not a SHA256 line",
            ParseError::MalformedTag => "SHA256 tag not followed by '('",
            ParseError::NoCloseParen => "no ')' after the file name",
            ParseError::NoEquals => "no '=' after the file name",
            ParseError::InvalidEscape => "invalid escape in file name",
            ParseError::NulInName => "NUL byte in file name",
            ParseError::EmptyName => "empty file name",
            ParseError::MixedFormat => "BSD reversed line after a GNU-format line",
        })
    }
}

impl std::error::Error for ParseError {}

/// What a line holds once its terminator is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A well-formed line naming a file to check.
    Entry(CheckLine),
    /// A comment (`#` as the very first byte) or an empty line, which GNU
    /// skips without counting it as malformed.
    Skip,
}

/// GNU's three-valued `bsd_reversed`: which untagged shape this run has seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Untagged {
    #[default]
    Undecided,
    Gnu,
    Reversed,
}

/// A manifest parser that remembers, like GNU, which untagged shape it has
/// seen, so that `<hex>  a` after a reversed line names ` a`, and a reversed
/// line after a GNU line is refused.
///
/// GNU keeps this state in a process-wide static that is never reset, so it
/// carries over from one `-c` manifest to the next; use one parser for the
/// whole run to match that.
#[derive(Debug, Clone, Default)]
pub struct CheckParser {
    untagged: Untagged,
}

impl CheckParser {
    /// A parser that has seen no untagged line yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse one line (without its `\n`) and update the GNU/reversed lock.
    pub fn parse(&mut self, line: &[u8]) -> Result<Parsed, ParseError> {
        // GNU tests for '#' on the raw line, before anything is trimmed, so an
        // indented '#' is a malformed line rather than a comment.
        if line.first() == Some(&b'#') {
            return Ok(Parsed::Skip);
        }
        // One trailing CR, so CRLF manifests work; a second CR stays in the
        // name, which is why GNU 9.1 escapes CR in names it prints.
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Ok(Parsed::Skip);
        }
        let start = line
            .iter()
            .position(|&b| !is_white(b))
            .unwrap_or(line.len());
        let mut rest = &line[start..];
        let escaped = match rest.strip_prefix(b"\\") {
            Some(after) => {
                rest = after;
                true
            }
            None => false,
        };
        let entry = if let Some(after_tag) = rest.strip_prefix(TAG) {
            parse_tagged(after_tag, escaped)?
        } else {
            self.parse_untagged(rest, escaped).map_err(|e| {
                // Only to give a better reason: GNU just says "malformed".
                if looks_like_other_tag(rest) {
                    ParseError::OtherAlgorithm
                } else {
                    e
                }
            })?
        };
        Ok(Parsed::Entry(entry))
    }

    /// `<hex><blank><flag><name>` or `<hex><blank><name>`.
    fn parse_untagged(&mut self, rest: &[u8], escaped: bool) -> Result<CheckLine, ParseError> {
        if rest.len() < HEX_LEN + 2 {
            return Err(ParseError::TooShort);
        }
        let (hex, after) = rest.split_at(HEX_LEN);
        // GNU takes exactly 64 bytes and then wants a blank, so a 65-digit
        // field fails here, not as "too long".
        let (&blank, tail) = after.split_first().ok_or(ParseError::TooShort)?;
        if !is_white(blank) {
            return Err(ParseError::BadDigest);
        }
        let digest = decode_digest(hex)?;

        // A lone byte after the blank is the name, even if it is ' ' or '*':
        // GNU only reads a flag when a name follows it. The lock is taken
        // before the name is unescaped, exactly as in GNU, so a line with a
        // bad escape still decides the shape of the run.
        let has_flag = tail.len() >= 2 && matches!(tail[0], b' ' | b'*');
        let (raw_name, format) = if !has_flag {
            if self.untagged == Untagged::Gnu {
                return Err(ParseError::MixedFormat);
            }
            self.untagged = Untagged::Reversed;
            (tail, LineFormat::BsdReversed)
        } else if self.untagged == Untagged::Reversed {
            // Once reversed, the would-be flag belongs to the name: this is
            // GNU's guard against a renamed " a" passing for "a".
            (tail, LineFormat::BsdReversed)
        } else {
            self.untagged = Untagged::Gnu;
            // The flag ('*' binary, ' ' text) means nothing on POSIX systems.
            (&tail[1..], LineFormat::Gnu)
        };
        Ok(CheckLine {
            digest,
            path: finish_name(raw_name, escaped)?,
            format,
        })
    }
}

/// Parse one manifest line (without its `\n`) as if it were the first line of
/// the run (the tests' view; a run uses [`CheckParser`] for a whole manifest).
#[cfg(test)]
pub(crate) fn parse_check_line(line: &[u8]) -> Result<Parsed, ParseError> {
    CheckParser::new().parse(line)
}

/// Everything after `SHA256`: `[ ](<name>)<blanks>=<blanks><64 hex>`.
fn parse_tagged(after_tag: &[u8], escaped: bool) -> Result<CheckLine, ParseError> {
    // One optional space: GNU accepts OpenSSL's `SHA256(name)= hex` too, but
    // not two spaces or a tab.
    let after_space = after_tag.strip_prefix(b" ").unwrap_or(after_tag);
    let body = after_space
        .strip_prefix(b"(")
        .ok_or(ParseError::MalformedTag)?;
    // The last ')' ends the name, since the digest can hold no ')' while the
    // name can hold anything, `) = ` included.
    let close = body
        .iter()
        .rposition(|&b| b == b')')
        .ok_or(ParseError::NoCloseParen)?;
    let raw_name = &body[..close];
    let path = finish_name(raw_name, escaped)?;
    let tail = trim_start_white(&body[close + 1..]);
    let tail = tail.strip_prefix(b"=").ok_or(ParseError::NoEquals)?;
    // The digest runs to the end of the line, so trailing blanks are an error.
    let digest = decode_digest(trim_start_white(tail))?;
    Ok(CheckLine {
        digest,
        path,
        format: LineFormat::Bsd,
    })
}

fn trim_start_white(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_white(b)).unwrap_or(s.len());
    &s[start..]
}

/// Unescape if asked, then apply the checks GNU leaves to `open()`.
fn finish_name(raw: &[u8], escaped: bool) -> Result<Vec<u8>, ParseError> {
    // Checked before unescaping so the reason names the NUL, not the escape.
    if raw.contains(&0) {
        return Err(ParseError::NulInName);
    }
    let name = if escaped {
        unescape_name(raw).ok_or(ParseError::InvalidEscape)?
    } else {
        raw.to_vec()
    };
    if name.is_empty() {
        return Err(ParseError::EmptyName);
    }
    Ok(name)
}

/// Exactly 64 hex digits, either case (GNU compares case-insensitively).
fn decode_digest(hex: &[u8]) -> Result<[u8; 32], ParseError> {
    if hex.len() != HEX_LEN {
        return Err(ParseError::BadDigest);
    }
    let mut out = [0u8; 32];
    // `hex` takes exactly [0-9a-fA-F] pairs, nothing else (no sign, no blank).
    ::hex::decode_to_slice(hex, &mut out).map_err(|_| ParseError::BadDigest)?;
    Ok(out)
}

/// Does this look like `WORD (`, `WORD(` or `WORD-N (`, the tag line of some
/// other algorithm (`MD5`, `SHA512`, `BLAKE2b-256`, ...)? Consulted only after
/// a line has already failed, so it can never reject a good line.
fn looks_like_other_tag(rest: &[u8]) -> bool {
    let word = rest
        .iter()
        .position(|b| !b.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    if word == 0 || !rest[0].is_ascii_uppercase() {
        return false;
    }
    let after = &rest[word..];
    after.starts_with(b"(") || after.starts_with(b" (") || after.starts_with(b"-")
}

/// Split a whole manifest into lines the way GNU's `getline`/`getdelim` loop
/// does: by `\n`, or by NUL when `zero_terminated`; a last line without a
/// terminator still counts, but a final terminator does not start a new empty
/// line. Yields `(line number from 1, line without its terminator)`.
///
/// GNU 9.1 refuses `-c` together with `-z` ("the --zero option is not
/// supported when verifying checksums"); `zero_terminated` is here for a
/// front end that chooses to go further.
pub fn split_lines(data: &[u8], zero_terminated: bool) -> impl Iterator<Item = (usize, &[u8])> {
    let delim = if zero_terminated { b'\0' } else { b'\n' };
    let body = (!data.is_empty()).then(|| data.strip_suffix(&[delim]).unwrap_or(data));
    body.into_iter()
        .flat_map(move |body| body.split(move |&b| b == delim))
        .enumerate()
        .map(|(i, line)| (i + 1, line))
}

/// GNU's escaping of a file name in a `\n`-terminated `sha256sum` output line:
/// if the name holds `\`, LF or CR, the line must start with `\` (the `bool`)
/// and those bytes are written `\\`, `\n`, `\r`; everything else, invalid
/// UTF-8 and tabs included, is written as is. Under `-z` GNU escapes nothing,
/// so do not call this there.
pub fn escape_name(name: &[u8]) -> (bool, Cow<'_, [u8]>) {
    // GNU escapes `\` too, though it is harmless in a line, so that the
    // leading `\` can never be ambiguous and more escapes can be added later.
    if !name.iter().any(|&b| matches!(b, b'\\' | b'\n' | b'\r')) {
        return (false, Cow::Borrowed(name));
    }
    let mut out = Vec::with_capacity(name.len() + 4);
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
    (true, Cow::Owned(out))
}

/// GNU 9.1's escaping of a name in a check-mode status line (`NAME: OK`,
/// `NAME: FAILED`, `NAME: FAILED open or read`). Unlike [`escape_name`], only a
/// newline triggers it: `b\c` and `c<CR>r` are printed raw there, yet once a
/// newline is present `\` and CR are escaped too (seen with `od -c`).
pub fn escape_status_name(name: &[u8]) -> (bool, Cow<'_, [u8]>) {
    if !name.contains(&b'\n') {
        return (false, Cow::Borrowed(name));
    }
    escape_name(name)
}

/// Undo [`escape_name`]: `\\`, `\n` and `\r` are the only escapes; any other
/// byte after `\`, a trailing lone `\`, or a NUL anywhere gives `None`, as in
/// GNU's `filename_unescape`.
pub fn unescape_name(escaped: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(escaped.len());
    let mut bytes = escaped.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'\\' => out.push(match bytes.next()? {
                b'\\' => b'\\',
                b'n' => b'\n',
                b'r' => b'\r',
                _ => return None,
            }),
            0 => return None,
            _ => out.push(b),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
