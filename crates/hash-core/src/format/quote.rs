//! GNU's shell quoting of file names in diagnostics (`quotef`), on raw bytes.
//!
//! GNU `sha256sum` prints every file name in a message on stderr through
//! gnulib's `quotef`: `quotearg_n_style_colon(0, shell_escape_quoting_style, name)`.
//! A name made only of safe bytes is printed as is (`a/b`); anything else is
//! put in single quotes, with non-printable bytes written as `$'\ooo'` or
//! `$'\n'` pieces (`'FFF'$'\377''DIR'`), and a `'` written `'\''` — unless the
//! name holds a `'` and nothing that needs escaping, which is put in double
//! quotes instead (`"it's"`).
//!
//! This is a port of gnulib's `quotearg_buffer_restyled` for exactly that
//! style, in the C locale (every byte >= 0x80 is non-printable; see the README
//! for the locale difference). It keeps one oddity of the gnulib that
//! coreutils 9.1 ships: when a name holds a `'` *and* needs escaping, gnulib
//! scans the name once, then writes it in a second pass that starts with the
//! first pass's "inside `$'...'`" state, which adds a stray `''` or drops a
//! `$'` (`'''a'\'''$'\177'` for `a'<DEL>`). Byte-for-byte agreement with GNU
//! is the point, so the quirk is reproduced; the unit tests hold GNU's own
//! output for each case.
//!
//! Stdout never uses this: hash lines and check verdicts keep the `\`
//! escaping of [`crate::checkline::escape_name`].

use std::path::Path;

use crate::escape::path_bytes;

/// Bytes that never need quoting ('@' is printable and not special; ':' is
/// quoted because `quotef` asks for it).
fn is_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"%+,-./]_@".contains(&b)
}

/// Whether `name` can be printed without quotes.
fn needs_quotes(name: &[u8]) -> bool {
    if name.is_empty() {
        return true;
    }
    name.iter().enumerate().any(|(i, &b)| match b {
        // Special only at the start of a word.
        b'#' | b'~' => i == 0,
        // Special only alone (brace expansion).
        b'{' | b'}' => name.len() == 1,
        _ => !is_safe(b),
    })
}

/// The C escape letter of a control byte, if it has one.
fn escape_letter(b: u8) -> Option<u8> {
    Some(match b {
        0x07 => b'a',
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x0b => b'v',
        _ => return None,
    })
}

/// Whether gnulib would also accept `b` (at `i`) inside double quotes without
/// escaping (its `c_and_shell_quote_compat`).
fn double_quote_compatible(name: &[u8], i: usize) -> bool {
    let b = name[i];
    match b {
        b'#' | b'~' => i == 0,
        b'{' | b'}' => name.len() == 1,
        b' ' | b'\'' => true,
        b'!' | b'"' | b'$' | b'&' | b'(' | b')' | b'*' | b';' | b'<' | b'=' | b'>' | b'['
        | b'^' | b'`' | b'|' | b'?' | b'\\' => false,
        _ => (0x20..0x7f).contains(&b),
    }
}

/// One pass of the single-quoting writer, starting inside a `$'...'` piece
/// when `pending` (see the module doc). Returns the output and whether it
/// ended inside such a piece.
fn single_quoted(name: &[u8], mut pending: bool) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(name.len() + 8);
    out.push(b'\'');
    for &b in name {
        let escape: Option<Vec<u8>> = match escape_letter(b) {
            Some(letter) => Some(vec![letter]),
            None if b == b'\'' => None,
            None if (0x20..0x7f).contains(&b) => None,
            None => Some(vec![b'0' + (b >> 6), b'0' + ((b >> 3) & 7), b'0' + (b & 7)]),
        };
        if let Some(esc) = escape {
            if !pending {
                out.extend_from_slice(b"'$'");
                pending = true;
            }
            out.push(b'\\');
            out.extend_from_slice(&esc);
            continue;
        }
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
            pending = false;
            continue;
        }
        if pending {
            out.extend_from_slice(b"''");
            pending = false;
        }
        out.push(b);
    }
    out.push(b'\'');
    (out, pending)
}

/// `name` quoted as GNU `sha256sum` 9.1 quotes file names in messages (C locale).
pub fn quote_name(name: &[u8]) -> Vec<u8> {
    if !needs_quotes(name) {
        return name.to_vec();
    }
    if !name.contains(&b'\'') {
        return single_quoted(name, false).0;
    }
    if (0..name.len()).all(|i| double_quote_compatible(name, i)) {
        let mut out = Vec::with_capacity(name.len() + 2);
        out.push(b'"');
        out.extend_from_slice(name);
        out.push(b'"');
        return out;
    }
    // gnulib's scan pass, then the writing pass that inherits its end state.
    let (_, pending) = single_quoted(name, false);
    single_quoted(name, pending).0
}

/// [`quote_name`] of a path.
pub fn quote_path(path: &Path) -> Vec<u8> {
    quote_name(path_bytes(path))
}

/// [`quote_path`] as a `String`, for messages built with `format!` (a quoted
/// name is ASCII, so nothing is lost).
pub fn quoted(path: &Path) -> String {
    String::from_utf8_lossy(&quote_path(path)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Name, and what GNU coreutils 9.1 `sha256sum NAME` printed for the
    /// missing file under `LC_ALL=C` (`sha256sum: QUOTED: No such file or
    /// directory`), collected on the reference machine with the loop in
    /// docs/check-format.md ("Names in messages").
    const GNU: &[(&[u8], &[u8])] = &[
        (b"a", b"a"),
        (b"a/b", b"a/b"),
        (b"%+,-./09AZ]_az", b"%+,-./09AZ]_az"),
        (b"a@b", b"a@b"),
        (b"-", b"-"),
        (b"", b"''"),
        (b"a b", b"'a b'"),
        (b"*empty", b"'*empty'"),
        (b"a:b", b"'a:b'"),
        (b"a\\b", b"'a\\b'"),
        (b"a?b", b"'a?b'"),
        (b"a=b", b"'a=b'"),
        (b"\"", b"'\"'"),
        (b"#x", b"'#x'"),
        (b"x#", b"x#"),
        (b"~x", b"'~x'"),
        (b"x~", b"x~"),
        (b"{", b"'{'"),
        (b"}", b"'}'"),
        (b"{a", b"{a"),
        (b"standard input", b"'standard input'"),
        (b"FFF\xffDIR", b"'FFF'$'\\377''DIR'"),
        (b"\xff", b"''$'\\377'"),
        (b"\xff\xfe", b"''$'\\377\\376'"),
        (b"\xc3\xa9", b"''$'\\303\\251'"),
        (b"a\nb", b"'a'$'\\n''b'"),
        (b"a\tb\xff", b"'a'$'\\t''b'$'\\377'"),
        (b"a\x7f", b"'a'$'\\177'"),
        (b"a\x01b", b"'a'$'\\001''b'"),
        (b"a\x07\x08\x0c\x0b\r", b"'a'$'\\a\\b\\f\\v\\r'"),
        // A single quote and nothing that needs escaping: double quotes.
        (b"it's", b"\"it's\""),
        (b"a'b c", b"\"a'b c\""),
        (b"a'b:c", b"\"a'b:c\""),
        (b"a'b'", b"\"a'b'\""),
        (b"'", b"\"'\""),
        (b"#'", b"\"#'\""),
        (b"~'", b"\"~'\""),
        (b"a'@", b"\"a'@\""),
        (b"a':b", b"\"a':b\""),
        // A single quote and something else special.
        (b"a'$b", b"'a'\\''$b'"),
        (b"a'#b", b"'a'\\''#b'"),
        (b"a'\"b", b"'a'\\''\"b'"),
        (b"a'b\\c", b"'a'\\''b\\c'"),
        (b"a'{", b"'a'\\''{'"),
        (b"{'", b"'{'\\'''"),
        (b"'#", b"''\\''#'"),
        (b"a'~", b"'a'\\''~'"),
        (b"a'?", b"'a'\\''?'"),
        (b"a'=", b"'a'\\''='"),
        (b"a'!", b"'a'\\''!'"),
        (b"a'\tb", b"'a'\\'''$'\\t''b'"),
        (b"a\xff'b", b"'a'$'\\377'\\''b'"),
        (b"\xff'\"", b"''$'\\377'\\''\"'"),
        // gnulib's two-pass quirk (see the module doc).
        (b"a'\xff", b"'''a'\\'''$'\\377'"),
        (b"a'\x7f", b"'''a'\\'''$'\\177'"),
        (b"'\xff", b"''\\'''$'\\377'"),
        (b"\xff'x\xff", b"'\\377'\\''x'$'\\377'"),
    ];

    #[test]
    fn quotes_like_gnu_sha256sum() {
        for (name, want) in GNU {
            assert_eq!(
                String::from_utf8_lossy(&quote_name(name)),
                String::from_utf8_lossy(want),
                "name {:?}",
                String::from_utf8_lossy(name)
            );
        }
    }

    #[test]
    fn every_byte_alone_and_inside_a_name_quotes_consistently() {
        // Safe bytes pass through; every other byte forces quotes, and the
        // quoted form never contains a raw control or high byte.
        for b in 1..=255u8 {
            for name in [vec![b], vec![b'x', b, b'y']] {
                let q = quote_name(&name);
                let special = match b {
                    b'#' | b'~' | b'{' | b'}' => name.len() == 1,
                    _ => !is_safe(b),
                };
                assert_eq!(q == name, !special, "{name:?} -> {q:?}");
                assert!(
                    q.iter().all(|&c| (0x20..0x7f).contains(&c)),
                    "{name:?} -> {q:?}"
                );
            }
        }
    }
}
