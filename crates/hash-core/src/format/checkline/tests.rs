//! Unit tests of the manifest line parser and the name escaping, most of them
//! lines real GNU `sha256sum` 9.1 printed or accepted (see docs/check-format.md).

use super::*;
use proptest::prelude::*;

/// `printf 'hello\n' | sha256sum`: the content of every fixture file.
const HELLO_HEX: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
const HELLO: [u8; 32] = [
    0x58, 0x91, 0xb5, 0xb5, 0x22, 0xd5, 0xdf, 0x08, 0x6d, 0x0f, 0xf0, 0xb1, 0x10, 0xfb, 0xd9, 0xd2,
    0x1b, 0xb4, 0xfc, 0x71, 0x63, 0xaf, 0x34, 0xd0, 0x82, 0x86, 0xa2, 0xe8, 0x46, 0xf6, 0xbe, 0x03,
];

/// Build a line from text pieces with `{H}` standing for the digest.
fn l(template: &str) -> Vec<u8> {
    template.replace("{H}", HELLO_HEX).into_bytes()
}

fn entry(path: &[u8], format: LineFormat) -> Result<Parsed, ParseError> {
    Ok(Parsed::Entry(CheckLine {
        digest: HELLO,
        path: path.to_vec(),
        format,
    }))
}

fn gnu(path: &[u8]) -> Result<Parsed, ParseError> {
    entry(path, LineFormat::Gnu)
}

fn bsd(path: &[u8]) -> Result<Parsed, ParseError> {
    entry(path, LineFormat::Bsd)
}

fn rev(path: &[u8]) -> Result<Parsed, ParseError> {
    entry(path, LineFormat::BsdReversed)
}

fn parse(line: &[u8]) -> Result<Parsed, ParseError> {
    parse_check_line(line)
}

// ---- Lines printed by real GNU sha256sum 9.1 (see docs/check-format.md) ----

/// `sha256sum -- <names>` output, byte for byte, with the real names.
const GNU_OUTPUT: &[(&[u8], &[u8])] = &[
    (b"\\{H}  b\\\\c", b"b\\c"),
    (b"\\{H}  n\\nl", b"n\nl"),
    (b"\\{H}  c\\rr", b"c\rr"),
    (b"{H}  tab\tx", b"tab\tx"),
    (b"{H}  p) = q", b"p) = q"),
    (b"{H}  x\xff\xfey", b"x\xff\xfey"),
    (b"{H}   lead", b" lead"),
    (b"{H}  *star", b"*star"),
    (b"{H}  trail ", b"trail "),
    (b"\\{H}  all\\\\\\n\\r", b"all\\\n\r"),
];

/// `sha256sum --tag -- <names>` output for the same names.
const GNU_TAG_OUTPUT: &[(&[u8], &[u8])] = &[
    (b"\\SHA256 (b\\\\c) = {H}", b"b\\c"),
    (b"\\SHA256 (n\\nl) = {H}", b"n\nl"),
    (b"\\SHA256 (c\\rr) = {H}", b"c\rr"),
    (b"SHA256 (tab\tx) = {H}", b"tab\tx"),
    (b"SHA256 (p) = q) = {H}", b"p) = q"),
    (b"SHA256 (x\xff\xfey) = {H}", b"x\xff\xfey"),
    (b"SHA256 ( lead) = {H}", b" lead"),
    (b"SHA256 (*star) = {H}", b"*star"),
    (b"SHA256 (trail ) = {H}", b"trail "),
    (b"\\SHA256 (all\\\\\\n\\r) = {H}", b"all\\\n\r"),
];

/// Substitute `{H}` in a byte template that may hold invalid UTF-8.
fn fill(template: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.windows(3).position(|w| w == b"{H}") {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(HELLO_HEX.as_bytes());
        rest = &rest[at + 3..];
    }
    out.extend_from_slice(rest);
    out
}

#[test]
fn parses_real_gnu_output() {
    for (line, name) in GNU_OUTPUT {
        assert_eq!(parse(&fill(line)), gnu(name), "{:?}", fill(line));
    }
}

#[test]
fn parses_real_gnu_tag_output() {
    for (line, name) in GNU_TAG_OUTPUT {
        assert_eq!(parse(&fill(line)), bsd(name), "{:?}", fill(line));
    }
}

#[test]
fn one_parser_takes_a_whole_real_manifest() {
    let mut p = CheckParser::new();
    for (line, name) in GNU_OUTPUT {
        assert_eq!(p.parse(&fill(line)), gnu(name));
    }
    for (line, name) in GNU_TAG_OUTPUT {
        assert_eq!(p.parse(&fill(line)), bsd(name));
    }
}

#[test]
fn escape_matches_real_gnu_output() {
    for (line, name) in GNU_OUTPUT {
        let line = fill(line);
        let (backslash, escaped) = escape_name(name);
        assert_eq!(backslash, line[0] == b'\\', "{name:?}");
        assert!(line.ends_with(&escaped), "{name:?}");
        let mut rebuilt = Vec::new();
        if backslash {
            rebuilt.push(b'\\');
        }
        rebuilt.extend_from_slice(HELLO_HEX.as_bytes());
        rebuilt.extend_from_slice(b"  ");
        rebuilt.extend_from_slice(&escaped);
        assert_eq!(rebuilt, line);
    }
}

// ---- GNU format ----

#[test]
fn gnu_text_and_binary_flags() {
    assert_eq!(parse(&l("{H}  a")), gnu(b"a"));
    assert_eq!(parse(&l("{H} *a")), gnu(b"a"));
}

#[test]
fn uppercase_and_mixed_case_hex() {
    let upper = HELLO_HEX.to_ascii_uppercase();
    assert_eq!(parse(format!("{upper}  a").as_bytes()), gnu(b"a"));
    let mixed: String = HELLO_HEX
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    assert_eq!(parse(format!("{mixed}  a").as_bytes()), gnu(b"a"));
}

#[test]
fn leading_spaces_and_tabs_are_skipped() {
    assert_eq!(parse(&l("  \t{H}  a")), gnu(b"a"));
    assert_eq!(parse(&l("\t\\{H}  a")), gnu(b"a"));
}

#[test]
fn only_space_and_tab_count_as_leading_blank() {
    assert_eq!(parse(&l("\x0b{H}  a")), Err(ParseError::BadDigest));
}

#[test]
fn tab_may_be_the_separator() {
    // GNU: `<hex>\t a` -> "a", `<hex>\t*a` -> "a".
    assert_eq!(parse(&l("{H}\t a")), gnu(b"a"));
    assert_eq!(parse(&l("{H}\t*a")), gnu(b"a"));
}

#[test]
fn tab_is_not_a_type_flag() {
    // GNU: `<hex>\t\ta` and `<hex> \ta` name "\ta" (reversed shape).
    assert_eq!(parse(&l("{H}\t\ta")), rev(b"\ta"));
    assert_eq!(parse(&l("{H} \ta")), rev(b"\ta"));
}

#[test]
fn name_keeps_all_whitespace_after_the_flag() {
    assert_eq!(parse(&l("{H}   a")), gnu(b" a"));
    assert_eq!(parse(&l("{H}  a ")), gnu(b"a "));
    assert_eq!(parse(&l("{H}  a b  c")), gnu(b"a b  c"));
    assert_eq!(parse(&l("{H} * a")), gnu(b" a"));
}

#[test]
fn names_may_start_with_flag_bytes() {
    assert_eq!(parse(&l("{H}  *a")), gnu(b"*a"));
    assert_eq!(parse(&l("{H} **")), gnu(b"*"));
}

#[test]
fn unescaped_backslashes_are_literal() {
    assert_eq!(parse(&l("{H}  b\\c")), gnu(b"b\\c"));
    assert_eq!(parse(&l("{H}  b\\\\c")), gnu(b"b\\\\c"));
    assert_eq!(parse(&l("{H}  a\\")), gnu(b"a\\"));
    assert_eq!(parse(&l("{H}  \\n")), gnu(b"\\n"));
}

#[test]
fn invalid_utf8_names_are_kept_as_bytes() {
    let mut line = l("{H}  ");
    line.extend_from_slice(b"\xff\xfe\x80z");
    assert_eq!(parse(&line), gnu(b"\xff\xfe\x80z"));
}

#[test]
fn tag_like_names_in_gnu_lines() {
    assert_eq!(parse(&l("{H}  SHA256 (x) = y")), gnu(b"SHA256 (x) = y"));
    assert_eq!(parse(&l("{H}  #x")), gnu(b"#x"));
}

// ---- Escaped names ----

#[test]
fn each_escape_in_a_gnu_line() {
    assert_eq!(parse(&l("\\{H}  a\\\\b")), gnu(b"a\\b"));
    assert_eq!(parse(&l("\\{H}  a\\nb")), gnu(b"a\nb"));
    assert_eq!(parse(&l("\\{H}  a\\rb")), gnu(b"a\rb"));
    assert_eq!(parse(&l("\\{H}  a")), gnu(b"a"));
    assert_eq!(parse(&l("\\{H} *\\n")), gnu(b"\n"));
}

#[test]
fn invalid_escapes() {
    // GNU 9.1: all of these are "improperly formatted".
    for bad in [
        "\\{H}  b\\c",
        "\\{H}  b\\tc",
        "\\{H}  a\\",
        "\\{H}  a\\0",
        "\\{H}  \\",
    ] {
        assert_eq!(parse(&l(bad)), Err(ParseError::InvalidEscape), "{bad}");
    }
}

#[test]
fn escape_marker_must_come_after_leading_blanks() {
    // GNU: `\ <hex>  a` and `\\<hex>  a` are malformed.
    assert_eq!(parse(&l("\\ {H}  a")), Err(ParseError::BadDigest));
    assert_eq!(parse(&l("\\\\{H}  a")), Err(ParseError::BadDigest));
}

// ---- BSD tag format ----

#[test]
fn bsd_basic_and_uppercase() {
    assert_eq!(parse(&l("SHA256 (a) = {H}")), bsd(b"a"));
    let upper = HELLO_HEX.to_ascii_uppercase();
    assert_eq!(parse(format!("SHA256 (a) = {upper}").as_bytes()), bsd(b"a"));
}

#[test]
fn bsd_spacing_variants_gnu_accepts() {
    assert_eq!(parse(&l("SHA256(a)= {H}")), bsd(b"a"));
    assert_eq!(parse(&l("SHA256 (a)={H}")), bsd(b"a"));
    assert_eq!(parse(&l("SHA256 (a)\t=\t{H}")), bsd(b"a"));
    assert_eq!(parse(&l("SHA256 (a)  =  {H}")), bsd(b"a"));
    assert_eq!(parse(&l(" \tSHA256 (a) = {H}")), bsd(b"a"));
}

#[test]
fn bsd_spacing_variants_gnu_refuses() {
    assert_eq!(
        parse(&l("SHA256  (a) = {H}")),
        Err(ParseError::MalformedTag)
    );
    assert_eq!(
        parse(&l("SHA256\t(a) = {H}")),
        Err(ParseError::MalformedTag)
    );
    assert_eq!(parse(&l("SHA256 (a) = {H} ")), Err(ParseError::BadDigest));
    assert_eq!(parse(&l("SHA256 (a)==={H}")), Err(ParseError::BadDigest));
    assert_eq!(parse(&l("SHA256 (a) {H}")), Err(ParseError::NoEquals));
    assert_eq!(parse(&l("SHA256 (a = {H}")), Err(ParseError::NoCloseParen));
    assert_eq!(parse(&l("SHA256 a) = {H}")), Err(ParseError::MalformedTag));
    assert_eq!(parse(b"SHA256 ("), Err(ParseError::NoCloseParen));
    assert_eq!(parse(b"SHA256"), Err(ParseError::MalformedTag));
}

#[test]
fn bsd_name_ends_at_last_paren() {
    // GNU: `SHA256 (a)) = <hex>` checks "a)"; a repeated `) = <hex>`
    // belongs to the name.
    assert_eq!(parse(&l("SHA256 (a)) = {H}")), bsd(b"a)"));
    assert_eq!(
        parse(&l("SHA256 (a) = {H}) = {H}")),
        bsd(l("a) = {H}").as_slice())
    );
    assert_eq!(parse(&l("SHA256 ((x)) = {H}")), bsd(b"(x)"));
}

#[test]
fn bsd_escaped_names() {
    assert_eq!(parse(&l("\\SHA256 (b\\\\c) = {H}")), bsd(b"b\\c"));
    assert_eq!(parse(&l("\\SHA256 (\\n\\r) = {H}")), bsd(b"\n\r"));
    assert_eq!(parse(&l("  \\SHA256 (a) = {H}")), bsd(b"a"));
    assert_eq!(parse(&l("SHA256 (b\\c) = {H}")), bsd(b"b\\c"));
    assert_eq!(
        parse(&l("\\SHA256 (b\\c) = {H}")),
        Err(ParseError::InvalidEscape)
    );
    assert_eq!(
        parse(&l("\\SHA256 (a\\0) = {H}")),
        Err(ParseError::InvalidEscape)
    );
    assert_eq!(
        parse(&l("\\SHA256 (a\\) = {H}")),
        Err(ParseError::InvalidEscape)
    );
}

#[test]
fn bsd_digest_must_be_64_hex() {
    let short = &HELLO_HEX[..63];
    assert_eq!(
        parse(format!("SHA256 (a) = {short}").as_bytes()),
        Err(ParseError::BadDigest)
    );
    assert_eq!(parse(&l("SHA256 (a) = {H}0")), Err(ParseError::BadDigest));
    assert_eq!(
        parse(format!("SHA256 (a) = {short}g").as_bytes()),
        Err(ParseError::BadDigest)
    );
    assert_eq!(parse(b"SHA256 (a) = "), Err(ParseError::BadDigest));
}

#[test]
fn bsd_empty_name_is_refused() {
    // Deviation: GNU tries to open "" and reports a read failure.
    assert_eq!(parse(&l("SHA256 () = {H}")), Err(ParseError::EmptyName));
}

#[test]
fn other_algorithms_are_malformed() {
    assert_eq!(parse(&l("MD5 (a) = {H}")), Err(ParseError::OtherAlgorithm));
    assert_eq!(
        parse(&l("SHA512 (a) = {H}")),
        Err(ParseError::OtherAlgorithm)
    );
    assert_eq!(parse(&l("SHA1(a)= {H}")), Err(ParseError::OtherAlgorithm));
    assert_eq!(
        parse(&l("BLAKE2b-256 (a) = {H}")),
        Err(ParseError::OtherAlgorithm)
    );
    assert_eq!(parse(&l("sha256 (a) = {H}")), Err(ParseError::BadDigest));
    // Starts with our tag but names another algorithm.
    assert_eq!(
        parse(&l("SHA2565 (a) = {H}")),
        Err(ParseError::MalformedTag)
    );
    assert_eq!(
        parse(&l("SHA256-256 (a) = {H}")),
        Err(ParseError::MalformedTag)
    );
}

// ---- BSD reversed format and the GNU lock ----

#[test]
fn reversed_single_blank() {
    assert_eq!(parse(&l("{H} a")), rev(b"a"));
    assert_eq!(parse(&l("{H}\ta")), rev(b"a"));
    assert_eq!(parse(&l("\\{H} b\\\\c")), rev(b"b\\c"));
}

#[test]
fn lone_flag_byte_is_a_reversed_name() {
    // GNU: `<hex>  ` checks " ", `<hex> *` checks "*".
    assert_eq!(parse(&l("{H}  ")), rev(b" "));
    assert_eq!(parse(&l("{H} *")), rev(b"*"));
}

#[test]
fn gnu_then_reversed_is_refused() {
    let mut p = CheckParser::new();
    assert_eq!(p.parse(&l("{H}  a")), gnu(b"a"));
    assert_eq!(p.parse(&l("{H} a")), Err(ParseError::MixedFormat));
    assert_eq!(p.parse(&l("{H} *")), Err(ParseError::MixedFormat));
    assert_eq!(p.parse(&l("{H} *a")), gnu(b"a"));
}

#[test]
fn reversed_then_gnu_keeps_the_flag_in_the_name() {
    // GNU: after `<hex> a`, `<hex>  a` checks " a" and `<hex> *a` "*a".
    let mut p = CheckParser::new();
    assert_eq!(p.parse(&l("{H} a")), rev(b"a"));
    assert_eq!(p.parse(&l("{H}  a")), rev(b" a"));
    assert_eq!(p.parse(&l("{H} *a")), rev(b"*a"));
}

#[test]
fn tag_lines_do_not_touch_the_lock() {
    let mut p = CheckParser::new();
    assert_eq!(p.parse(&l("SHA256 (a) = {H}")), bsd(b"a"));
    assert_eq!(p.parse(&l("{H} a")), rev(b"a"));
    assert_eq!(p.parse(&l("SHA256 (a) = {H}")), bsd(b"a"));
}

#[test]
fn bad_digest_does_not_take_the_lock() {
    // GNU: a non-hex reversed-looking line, then `<hex>  a` -> "a".
    let mut p = CheckParser::new();
    let z = "z".repeat(64);
    assert_eq!(
        p.parse(format!("{z} a").as_bytes()),
        Err(ParseError::BadDigest)
    );
    assert_eq!(p.parse(&l("{H}  a")), gnu(b"a"));
}

#[test]
fn bad_escape_still_takes_the_lock() {
    // GNU: `\<hex> b\x` (malformed), then `<hex>  a` -> " a".
    let mut p = CheckParser::new();
    assert_eq!(p.parse(&l("\\{H} b\\x")), Err(ParseError::InvalidEscape));
    assert_eq!(p.parse(&l("{H}  a")), rev(b" a"));
}

#[test]
fn skipped_lines_do_not_take_the_lock() {
    let mut p = CheckParser::new();
    assert_eq!(p.parse(b"# x"), Ok(Parsed::Skip));
    assert_eq!(p.parse(b""), Ok(Parsed::Skip));
    assert_eq!(p.parse(&l("{H} a")), rev(b"a"));
}

// ---- Digest shape ----

#[test]
fn wrong_length_or_non_hex_digest() {
    let short = &HELLO_HEX[..63];
    assert_eq!(
        parse(format!("{short}  a").as_bytes()),
        Err(ParseError::BadDigest)
    );
    assert_eq!(parse(&l("{H}0  a")), Err(ParseError::BadDigest));
    assert_eq!(
        parse(format!("{short}g  a").as_bytes()),
        Err(ParseError::BadDigest)
    );
    assert_eq!(
        parse(format!("{short}  ab").as_bytes()),
        Err(ParseError::BadDigest)
    );
}

#[test]
fn too_short_lines() {
    assert_eq!(parse(&l("{H}")), Err(ParseError::TooShort));
    assert_eq!(parse(&l("{H} ")), Err(ParseError::TooShort));
    assert_eq!(parse(&l("  {H} ")), Err(ParseError::TooShort));
    assert_eq!(parse(b"x"), Err(ParseError::TooShort));
    assert_eq!(parse(b" "), Err(ParseError::TooShort));
    assert_eq!(parse(b"\t"), Err(ParseError::TooShort));
    assert_eq!(parse(b"\\"), Err(ParseError::TooShort));
}

// ---- Comments, empty lines, CR ----

#[test]
fn comments_and_empty_lines_are_skipped() {
    assert_eq!(parse(b"#"), Ok(Parsed::Skip));
    assert_eq!(parse(&l("#{H}  a")), Ok(Parsed::Skip));
    assert_eq!(parse(b"#\r"), Ok(Parsed::Skip));
    assert_eq!(parse(b""), Ok(Parsed::Skip));
    assert_eq!(parse(b"\r"), Ok(Parsed::Skip));
}

#[test]
fn indented_hash_is_not_a_comment() {
    assert_eq!(parse(b" #c"), Err(ParseError::TooShort));
    assert_eq!(parse(&l(" #{H}  a")), Err(ParseError::BadDigest));
}

#[test]
fn exactly_one_trailing_cr_is_dropped() {
    assert_eq!(parse(&l("{H}  a\r")), gnu(b"a"));
    // GNU: `<hex>  a\r\r` checks "a\r"; a lone "\r\r" line is malformed.
    assert_eq!(parse(&l("{H}  a\r\r")), gnu(b"a\r"));
    assert_eq!(parse(b"\r\r"), Err(ParseError::TooShort));
    assert_eq!(parse(&l("{H}  a\rb")), gnu(b"a\rb"));
    assert_eq!(parse(&l("SHA256 (a) = {H}\r")), bsd(b"a"));
}

// ---- NUL bytes ----

#[test]
fn nul_in_name_is_refused() {
    // Deviation: GNU 9.1 checks "a" for `<hex>  a\0b` (C string cut).
    assert_eq!(parse(&l("{H}  a\0b")), Err(ParseError::NulInName));
    assert_eq!(parse(&l("{H} \0a")), Err(ParseError::NulInName));
    assert_eq!(parse(&l("SHA256 (a\0) = {H}")), Err(ParseError::NulInName));
    // GNU too refuses a NUL in an escaped name.
    assert_eq!(parse(&l("\\{H}  a\0b")), Err(ParseError::NulInName));
}

#[test]
fn nul_elsewhere_is_malformed_as_in_gnu() {
    assert_eq!(parse(&l("{H}\0 a")), Err(ParseError::BadDigest));
    assert_eq!(parse(&l("SHA256 (a) = \0{H}")), Err(ParseError::BadDigest));
    assert_eq!(parse(&l("\0{H}  a")), Err(ParseError::BadDigest));
}

// ---- Errors display ----

#[test]
fn every_error_has_a_short_reason() {
    let all = [
        ParseError::TooShort,
        ParseError::BadDigest,
        ParseError::OtherAlgorithm,
        ParseError::MalformedTag,
        ParseError::NoCloseParen,
        ParseError::NoEquals,
        ParseError::InvalidEscape,
        ParseError::NulInName,
        ParseError::EmptyName,
        ParseError::MixedFormat,
    ];
    for e in all {
        let s = e.to_string();
        assert!(!s.is_empty() && s.len() < 60 && !s.contains('\n'), "{s}");
    }
}

// ---- split_lines ----

fn lines(data: &[u8], z: bool) -> Vec<(usize, &[u8])> {
    split_lines(data, z).collect()
}

#[test]
fn split_lines_by_newline() {
    assert_eq!(lines(b"", false), vec![]);
    assert_eq!(lines(b"\n", false), vec![(1, &b""[..])]);
    assert_eq!(
        lines(b"a\nb\n", false),
        vec![(1, &b"a"[..]), (2, &b"b"[..])]
    );
    assert_eq!(lines(b"a\nb", false), vec![(1, &b"a"[..]), (2, &b"b"[..])]);
    assert_eq!(
        lines(b"a\n\n\nb", false),
        vec![(1, &b"a"[..]), (2, &b""[..]), (3, &b""[..]), (4, &b"b"[..])]
    );
    assert_eq!(lines(b"a\0b\r\n", false), vec![(1, &b"a\0b\r"[..])]);
}

#[test]
fn split_lines_by_nul() {
    assert_eq!(lines(b"", true), vec![]);
    assert_eq!(lines(b"a\0b\0", true), vec![(1, &b"a"[..]), (2, &b"b"[..])]);
    assert_eq!(
        lines(b"a\nb\0c", true),
        vec![(1, &b"a\nb"[..]), (2, &b"c"[..])]
    );
    assert_eq!(lines(b"\0\0", true), vec![(1, &b""[..]), (2, &b""[..])]);
}

#[test]
fn split_then_parse_a_crlf_manifest() {
    let data = l("# made on Windows\r\n{H}  a\r\n\r\n{H} *b\r\n");
    let got: Vec<_> = split_lines(&data, false)
        .map(|(n, line)| (n, parse(line)))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, Ok(Parsed::Skip)),
            (2, gnu(b"a")),
            (3, Ok(Parsed::Skip)),
            (4, gnu(b"b")),
        ]
    );
}

// ---- escape_name / unescape_name ----

#[test]
fn escape_plain_names_borrow() {
    for name in [&b"a"[..], b"", b"a b\tc", b"\xff", b"p) = q", b"*"] {
        let (backslash, out) = escape_name(name);
        assert!(!backslash);
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(&*out, name);
    }
}

#[test]
fn escape_each_special_byte() {
    assert_eq!(escape_name(b"b\\c"), (true, Cow::Owned(b"b\\\\c".to_vec())));
    assert_eq!(escape_name(b"n\nl"), (true, Cow::Owned(b"n\\nl".to_vec())));
    assert_eq!(escape_name(b"c\rr"), (true, Cow::Owned(b"c\\rr".to_vec())));
    assert_eq!(
        escape_name(b"\\\n\r\t"),
        (true, Cow::Owned(b"\\\\\\n\\r\t".to_vec()))
    );
}

#[test]
fn status_lines_escape_only_when_a_newline_is_present() {
    // `sha256sum <names> | sha256sum -c - | od -c` with GNU 9.1 printed
    // `b\c: OK`, `\n\nl: OK`, `c<CR>r: OK`, `\all\\\n\r: OK`.
    assert_eq!(
        escape_status_name(b"b\\c"),
        (false, Cow::Borrowed(&b"b\\c"[..]))
    );
    assert_eq!(
        escape_status_name(b"c\rr"),
        (false, Cow::Borrowed(&b"c\rr"[..]))
    );
    assert_eq!(
        escape_status_name(b"n\nl"),
        (true, Cow::Owned(b"n\\nl".to_vec()))
    );
    assert_eq!(
        escape_status_name(b"all\\\n\r"),
        (true, Cow::Owned(b"all\\\\\\n\\r".to_vec()))
    );
}

#[test]
fn unescape_each_escape_and_each_failure() {
    assert_eq!(unescape_name(b""), Some(vec![]));
    assert_eq!(unescape_name(b"plain"), Some(b"plain".to_vec()));
    assert_eq!(
        unescape_name(b"a\\\\b\\nc\\rd"),
        Some(b"a\\b\nc\rd".to_vec())
    );
    assert_eq!(unescape_name(b"\\"), None);
    assert_eq!(unescape_name(b"a\\"), None);
    assert_eq!(unescape_name(b"\\t"), None);
    assert_eq!(unescape_name(b"\\0"), None);
    assert_eq!(unescape_name(b"\\N"), None);
    assert_eq!(unescape_name(b"a\0"), None);
}

/// A GNU output line built the way `sha256sum` (optionally `--tag`)
/// builds it: leading `\` if needed, escaped name.
fn format_line(name: &[u8], tagged: bool, binary: bool) -> Vec<u8> {
    let (backslash, escaped) = escape_name(name);
    let mut line = Vec::new();
    if backslash {
        line.push(b'\\');
    }
    if tagged {
        line.extend_from_slice(b"SHA256 (");
        line.extend_from_slice(&escaped);
        line.extend_from_slice(b") = ");
        line.extend_from_slice(HELLO_HEX.as_bytes());
    } else {
        line.extend_from_slice(HELLO_HEX.as_bytes());
        line.extend_from_slice(if binary { b" *" } else { b"  " });
        line.extend_from_slice(&escaped);
    }
    line
}

proptest! {
    #[test]
    fn formatted_lines_round_trip(
        name in proptest::collection::vec(1u8..=255, 1..40),
        tagged: bool,
        binary: bool,
    ) {
        let line = format_line(&name, tagged, binary);
        // The line must survive the manifest's own splitting intact.
        let split: Vec<_> = split_lines(&line, false).collect();
        prop_assert_eq!(split.len(), 1);
        let want = if tagged { LineFormat::Bsd } else { LineFormat::Gnu };
        prop_assert_eq!(
            parse(split[0].1),
            Ok(Parsed::Entry(CheckLine { digest: HELLO, path: name, format: want }))
        );
    }

    #[test]
    fn escape_then_unescape_is_identity(name in proptest::collection::vec(1u8..=255, 0..40)) {
        let (backslash, escaped) = escape_name(&name);
        prop_assert!(!escaped.contains(&b'\n') && !escaped.contains(&b'\r'));
        if backslash {
            prop_assert_eq!(unescape_name(&escaped), Some(name));
        } else {
            prop_assert_eq!(&*escaped, &name[..]);
        }
    }

    #[test]
    fn parser_never_panics(line in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse(&line);
        let _ = unescape_name(&line);
        let _ = escape_name(&line);
        let _ = split_lines(&line, false).count();
        let _ = split_lines(&line, true).count();
    }

    #[test]
    fn parser_never_panics_near_valid_lines(
        prefix in proptest::collection::vec(
            prop_oneof![Just(b' '), Just(b'\t'), Just(b'\\'), Just(b'*'), Just(b'\r'), Just(b')')],
            0..4,
        ),
        tagged: bool,
        cut in 0usize..90,
        tail in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        // Random bytes almost never reach the digest/name code, so also
        // feed truncated well-formed lines with junk on either side.
        let mut line = prefix;
        line.extend_from_slice(&format_line(b"a\\b", tagged, false));
        line.truncate(line.len().min(cut));
        line.extend_from_slice(&tail);
        let mut p = CheckParser::new();
        let _ = p.parse(&line);
        let _ = p.parse(&line);
    }

    #[test]
    fn parsed_names_are_never_empty_or_nul(line in proptest::collection::vec(any::<u8>(), 0..120)) {
        if let Ok(Parsed::Entry(e)) = parse(&line) {
            prop_assert!(!e.path.is_empty() && !e.path.contains(&0));
        }
    }
}
