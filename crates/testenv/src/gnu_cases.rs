//! The test cases of the tools we imitate, run differentially against GNU.
//!
//! Ported from GNU coreutils `tests/cksum/` (`md5sum.pl`, `md5sum-bsd.sh`,
//! `md5sum-newline.pl`, `sha256sum.pl`, `sha224sum.pl`, `cksum-c.sh`; older
//! trees have them under `tests/misc/`) and from the check-mode parts of uutils
//! `tests/by-util/test_sha256sum.rs` (with its `common_checksum_tests.rs`) and
//! `test_cksum.rs`. MD5, SHA-1 and SHA-224 cases are translated to SHA-256
//! (tags, digests, "improperly formatted SHA256 checksum line").
//!
//! The suites' own expected text is *not* used: each case runs GNU
//! `sha256sum` on this machine and the binary under test with the same
//! arguments, files and standard input, in the same directory, under
//! `LC_ALL=C`, and compares stdout, stderr (with the tool name swapped) and
//! the exit status byte for byte. Where GNU 9.1 and a suite disagree, GNU
//! wins, and a comment on the case says so. Every case records its origin.
//!
//! A few cases are documented differences (README, docs/check-format.md) and
//! are held to that documented behaviour instead ([`Expect`]). Skipped, because
//! `sha256sum` 9.1 has no such feature: everything about `cksum -a`, `-l`,
//! `--base64`, `--raw`, `--untagged`, BLAKE2/SM3/CRC/SysV/BSD sums, and
//! uutils' cases that only compare one digest with a fixture file
//! (`binary.png`), which the vector cases below cover.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// SHA-256 of the empty string (FIPS 180-2; `sha256sum.pl` s1).
pub const E: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// SHA-256 of "a" (`sha256sum.pl` s2).
const A: &str = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";
/// SHA-256 of "foo-content\n" (Python's hashlib), for uutils' comment cases.
const FOO_CONTENT: &str = "60e1eba2abd6619550990882578b2e09da757e382da4dc39b949ba82e33567b6";
/// A digest nothing here has (`cksum-c.sh`'s `invalid_sum`).
const BAD: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaafdb57c725157cb40b5aee8d937b8351477e";

/// How the binary's run must relate to GNU's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Identical stdout, stderr (tool name swapped) and exit status.
    Same,
    /// A usage error: GNU exits 1 with its own message, we exit 2 with clap's
    /// (documented); neither prints anything on stdout.
    Usage,
    /// Several operands: we print in sorted order (documented), so our stdout
    /// is GNU's lines sorted by bytes; stderr and status are the same.
    Sorted,
    /// A manifest line GNU accepts that we refuse as malformed (documented:
    /// a NUL in a name, or a `-` entry): we exit 1 and say the manifest has
    /// no properly formatted line.
    OursMalformed,
}

/// One ported case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Where it comes from: suite file and case name.
    pub origin: &'static str,
    /// Files (`None` content: a directory) created before running.
    pub files: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// A shell script run in the directory after the files are made (for the
    /// `.sh` suites, whose manifests are made by GNU itself).
    pub setup: Option<&'static str>,
    /// Arguments after the program name.
    pub args: Vec<Vec<u8>>,
    /// Standard input (otherwise empty).
    pub stdin: Vec<u8>,
    /// Or: standard input is what this script prints in the directory after
    /// setup (for the `.sh` suites' pipelines).
    pub stdin_script: Option<&'static str>,
    /// How to compare.
    pub expect: Expect,
}

fn case(origin: &'static str, args: &[&str]) -> Case {
    Case {
        origin,
        files: Vec::new(),
        setup: None,
        args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        stdin: Vec::new(),
        stdin_script: None,
        expect: Expect::Same,
    }
}

impl Case {
    fn file(mut self, name: impl AsRef<[u8]>, content: impl AsRef<[u8]>) -> Case {
        let content = content.as_ref().to_vec();
        self.files.push((name.as_ref().to_vec(), Some(content)));
        self
    }
    fn dir(mut self, name: &str) -> Case {
        self.files.push((name.as_bytes().to_vec(), None));
        self
    }
    fn raw_arg(mut self, arg: &[u8]) -> Case {
        self.args.push(arg.to_vec());
        self
    }
    fn stdin(mut self, data: impl AsRef<[u8]>) -> Case {
        self.stdin = data.as_ref().to_vec();
        self
    }
    fn stdin_from_setup(mut self, script: &'static str) -> Case {
        self.stdin_script = Some(script);
        self
    }
    fn setup(mut self, script: &'static str) -> Case {
        self.setup = Some(script);
        self
    }
    fn expect(mut self, e: Expect) -> Case {
        self.expect = e;
        self
    }
}

/// Every ported case.
pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let million_a = "a".repeat(1_000_000);
    // --- coreutils tests/cksum/sha256sum.pl (each case with --text)
    for (id, input) in [
        ("sha256sum.pl s1", ""),
        ("sha256sum.pl s2", "a"),
        ("sha256sum.pl s3", "abc"),
        (
            "sha256sum.pl s4",
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        ),
        ("sha256sum.pl s8", million_a.as_str()),
        // --- sha224sum.pl: the same inputs, hashed with SHA-256.
        ("sha224sum.pl s3", "abc"),
        (
            "sha224sum.pl s4",
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        ),
        ("sha224sum.pl s8", million_a.as_str()),
    ] {
        v.push(case(id, &["--text", "f"]).file("f", input));
    }
    // --- coreutils tests/cksum/md5sum.pl (hash cases with --text)
    let alnum: String = ('A'..='Z').chain('a'..='z').chain('0'..='9').collect();
    let digits = "1234567890".repeat(8);
    for (id, input) in [
        ("md5sum.pl 1", ""),
        ("md5sum.pl 2", "a"),
        ("md5sum.pl 3", "abc"),
        ("md5sum.pl 4", "message digest"),
        ("md5sum.pl 5", "abcdefghijklmnopqrstuvwxyz"),
        ("md5sum.pl 6", alnum.as_str()),
        ("md5sum.pl 7", digits.as_str()),
    ] {
        v.push(case(id, &["--text", "f"]).file("f", input));
    }
    for (id, name) in [
        ("md5sum.pl backslash-1", ".\nfoo"),
        ("md5sum.pl backslash-2", ".\\foo"),
        ("md5sum.pl backslash-3", ".\rfoo"),
    ] {
        v.push(case(id, &["--text", name]).file(name, ""));
    }
    let m = |id, args: &[&str], manifest: String| case(id, args).file("f.sums", manifest);
    v.push(
        m(
            "md5sum.pl check-1",
            &["--check", "f.sums"],
            format!("{E}  f\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-windows",
            &["--check", "f.sums"],
            format!("{E}  f\r\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl ck-strict-1",
            &["--check", "--strict", "f.sums"],
            format!("{E}  f\n\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl ck-strict-2",
            &["--check", "--strict", "f.sums"],
            format!("ERR\n{E}  f\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-2",
            &["--check", "--status", "f.sums"],
            format!("{E}  f\n"),
        )
        .file("f", "foo"),
    );
    v.push(
        m(
            "md5sum.pl check-quiet1",
            &["--check", "--quiet", "f.sums"],
            format!("{E}  f\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-quiet2",
            &["--check", "--quiet", "f.sums"],
            format!("{E}  f\n"),
        )
        .file("f", "foo"),
    );
    let multi = format!("{E}  f\n{E}  f\ninvalid\n");
    v.push(
        m(
            "md5sum.pl check-multifail",
            &["--check", "f.sums"],
            multi.clone(),
        )
        .file("f", "foo"),
    );
    v.push(
        m(
            "md5sum.pl check-multifail-warn",
            &["--check", "--warn", "f.sums"],
            multi,
        )
        .file("f", "foo"),
    );
    // "broken in 9.2": GNU 9.1 is right here.
    v.push(
        m(
            "md5sum.pl check-multifail-state",
            &["--check", "--warn", "f.sums"],
            format!("{E}  f\n{E}  g\n{E}  f\n"),
        )
        .file("f", "")
        .file("g", "a"),
    );
    // check-bsd: a tag of another algorithm is not ours (MD5 -> SHA256, SHA1 stays foreign).
    v.push(
        m(
            "md5sum.pl check-bsd",
            &["--check", "f.sums"],
            format!("SHA1 (f) = {E}\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-bsd2",
            &["--check", "f.sums"],
            format!("SHA256 (f) = {E}\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-bsd3",
            &["--check", "--status", "f.sums"],
            format!("SHA256 (f) = {E}\n"),
        )
        .file("f", "bar"),
    );
    v.push(
        m(
            "md5sum.pl check-openssl",
            &["--check", "f.sums"],
            format!("SHA1(f)= {E}\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-openssl2",
            &["--check", "f.sums"],
            format!("SHA256(f)= {E}\n"),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-openssl3",
            &["--check", "--status", "f.sums"],
            format!("SHA256(f)= {E}\n"),
        )
        .file("f", "bar"),
    );
    let two = format!("{E}  f\n{E}  f.missing\n");
    v.push(
        m(
            "md5sum.pl check-ignore-missing-1",
            &["--check", "--ignore-missing", "f.sums"],
            two.clone(),
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-ignore-missing-2",
            &["--check", "--ignore-missing", "f.sums"],
            two,
        )
        .file("f", ""),
    );
    v.push(
        m(
            "md5sum.pl check-ignore-missing-3",
            &["--check", "--quiet", "--ignore-missing", "f.sums"],
            format!("{E}  missing/f\n{E}  f\n"),
        )
        .file("f", ""),
    );
    v.push(
        case(
            "md5sum.pl check-ignore-missing-4",
            &["--ignore-missing", "f"],
        )
        .file("f", "")
        .expect(Expect::Usage),
    );
    v.push(
        m(
            "md5sum.pl check-ignore-missing-5",
            &["--check", "--ignore-missing", "f.sums"],
            format!("{E}  missing\n"),
        )
        .file("f", ""),
    );
    // A digest starting with 00 ("69t", found with Python's hashlib).
    v.push(
        m(
            "md5sum.pl check-ignore-missing-6",
            &["--check", "--ignore-missing", "f.sums"],
            "005a4aa92019606a89c5f628ce131e2b264be665a5cf9ecc826516f4d2666f75  f\n".to_owned(),
        )
        .file("f", "69t"),
    );
    v.push(case("md5sum.pl bsd-segv", &["--check", "z"]).file("z", "SHA256 ("));
    let mut nul = vec![0u8; 64];
    nul.extend_from_slice(b"  h\n");
    v.push(case("md5sum.pl nul-in-cksum", &["--check", "h"]).file("h", nul));
    // --- coreutils tests/cksum/md5sum-newline.pl
    v.push(case("md5sum-newline.pl newline", &["--text", "a\nb"]).file("a\nb", ""));
    v.push(case("md5sum-newline.pl zero", &["--text", "--zero", "a\nb"]).file("a\nb", ""));
    // --- coreutils tests/cksum/md5sum-bsd.sh (manifests made by GNU itself)
    const BSD_FILES: &str = "for i in 'a' ' b' '*c' 'dd' ' '; do echo \"$i\" > \"$i\"; \
        sha256sum --text \"$i\" >> check.sums; done; sed 's/  / /' check.sums > check.rev";
    v.push(
        case(
            "md5sum-bsd.sh --strict -c (GNU lines)",
            &["--strict", "-c", "check.sums"],
        )
        .setup(BSD_FILES),
    );
    v.push(
        case(
            "md5sum-bsd.sh --strict -c (reversed lines)",
            &["--strict", "-c", "check.rev"],
        )
        .setup(BSD_FILES),
    );
    v.push(
        case("md5sum-bsd.sh GPG-like first line", &["-c", "check2.sums"]).setup(
            "for i in 'a' ' b' '*c' 'dd' ' '; do echo \"$i\" > \"$i\"; sha256sum --text \"$i\" >> check.sums; done; \
             { echo '____not_all_hex_so_no_match_____ blah'; cat check.sums; } > check2.sums",
        ),
    );
    v.push(
        case(
            "md5sum-bsd.sh reversed without its first line",
            &["--strict", "-c"],
        )
        .setup(BSD_FILES)
        .stdin_from_setup("tail -n+2 check.rev"),
    );
    v.push(
        case(
            "md5sum-bsd.sh --tag --check",
            &["--tag", "--check", "/dev/null"],
        )
        .expect(Expect::Usage),
    );
    v.push(
        case(
            "md5sum-bsd.sh --tag --text",
            &["--tag", "--text", "/dev/null"],
        )
        .expect(Expect::Usage),
    );
    v.push(
        case("md5sum-bsd.sh --tag lines check", &["--strict", "-c", "check.tag"]).setup(
            "for i in 'a' ' b' '*c' 'dd' ' '; do echo \"$i\" > \"$i\"; sha256sum --tag \"$i\" >> check.tag; done",
        ),
    );
    v.push(
        case(
            "md5sum-bsd.sh --tag escaped names check",
            &["--strict", "-c", "check.tag"],
        )
        .setup(
            "nl='\n'; tab='\t'; for i in 'a\\b' 'a\\' \"a${nl}b\" \"a${tab}b\"; do : > \"$i\"; \
             sha256sum --tag \"$i\" >> check.tag; done",
        ),
    );
    v.push(
        case(
            "md5sum-bsd.sh --tag escaped output",
            &["--tag", "test\n\\\\file"],
        )
        .file("test\n\\\\file", ""),
    );
    // --- coreutils tests/cksum/cksum-c.sh (the parts sha256sum has; -a cases skipped)
    const SUMS: &str = "seq 10 > input; sha256sum --tag input > CHECKSUMS";
    v.push(
        case(
            "cksum-c.sh --strict --check",
            &["--strict", "--check", "CHECKSUMS"],
        )
        .setup(SUMS),
    );
    v.push(
        case(
            "cksum-c.sh leading blanks and backslash",
            &["--strict", "-c"],
        )
        .setup(SUMS)
        .stdin_from_setup("sed 's/^/ \\\\/' CHECKSUMS"),
    );
    v.push(
        case("cksum-c.sh signed manifest", &["--check", "signed"]).setup(
            "seq 10 > input; { printf -- '-----BEGIN PGP SIGNED MESSAGE-----\\nHash: SHA256\\n\\n# ignored comment\\n'; \
             sha256sum --tag input; printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nSHA384+BCAAdFiEEjFummQvbJuGfKhqAEWGuaUVxmjkFAmCDId0ACgkQEWGuaUVx\\n=AWU7\\n-----END PGP SIGNATURE-----\\n'; } > signed",
        ),
    );
    v.push(case("cksum-c.sh --status", &["--status", "--check", "CHECKSUMS"]).setup(SUMS));
    const WITH_COMMENT: &str = "seq 10 > input; sha256sum --tag input > CHECKSUMS; echo '# Very important comment' >> CHECKSUMS";
    v.push(case("cksum-c.sh comment", &["--status", "--check", "CHECKSUMS"]).setup(WITH_COMMENT));
    const ONE_INVALID: &str = "seq 10 > input; sha256sum --tag input > CHECKSUMS; echo '# c' >> CHECKSUMS; echo 'invalid line' >> CHECKSUMS";
    v.push(case("cksum-c.sh invalid line", &["--check", "CHECKSUMS"]).setup(ONE_INVALID));
    v.push(
        case(
            "cksum-c.sh invalid line --strict",
            &["--strict", "--check", "CHECKSUMS"],
        )
        .setup(ONE_INVALID),
    );
    const TWO_INVALID: &str = "seq 10 > input; sha256sum --tag input > CHECKSUMS; echo 'invalid line' >> CHECKSUMS; echo 'invalid line' >> CHECKSUMS";
    v.push(
        case(
            "cksum-c.sh two invalid lines --strict",
            &["--strict", "--check", "CHECKSUMS"],
        )
        .setup(TWO_INVALID),
    );
    const WRONG: &str = "seq 10 > input; sha256sum --tag input > CHECKSUMS; echo 'invalid line' >> CHECKSUMS; \
        echo \"SHA256 (input) = 0000000000000000000000000000000000000000000000000000000000000000\" >> CHECKSUMS; \
        echo \"SHA256 (missing-file) = 0000000000000000000000000000000000000000000000000000000000000000\" >> CHECKSUMS";
    for (id, args) in [
        (
            "cksum-c.sh incorrect checksum",
            &["--check", "CHECKSUMS"][..],
        ),
        (
            "cksum-c.sh incorrect checksum --strict",
            &["--check", "--strict", "CHECKSUMS"],
        ),
        (
            "cksum-c.sh --status with errors",
            &["--status", "--check", "CHECKSUMS"],
        ),
        ("cksum-c.sh --warn", &["--warn", "--check", "CHECKSUMS"]),
        (
            "cksum-c.sh --status --warn",
            &["--status", "--warn", "--check", "CHECKSUMS"],
        ),
        (
            "cksum-c.sh --warn --status",
            &["--warn", "--status", "--check", "CHECKSUMS"],
        ),
        (
            "cksum-c.sh --status --ignore-missing",
            &["--status", "--ignore-missing", "--check", "CHECKSUMS"],
        ),
    ] {
        v.push(case(id, args).setup(WRONG));
    }
    let missing = format!("SHA256 (nonexistent) = {}\n", BAD);
    for (id, args) in [
        (
            "cksum-c.sh non-existing file",
            &["--check", "CHECKSUMS-missing"][..],
        ),
        (
            "cksum-c.sh non-existing file --strict",
            &["--check", "--strict", "CHECKSUMS-missing"],
        ),
        (
            "cksum-c.sh --ignore-missing",
            &["--ignore-missing", "--check", "CHECKSUMS-missing"],
        ),
        (
            "cksum-c.sh --status --warn --ignore-missing",
            &[
                "--status",
                "--warn",
                "--ignore-missing",
                "--check",
                "CHECKSUMS-missing",
            ],
        ),
    ] {
        v.push(case(id, args).file("CHECKSUMS-missing", &missing));
    }
    v.push(case(
        "cksum-c.sh several missing manifests",
        &["--check", "non-existing-1", "non-existing-2"],
    ));
    v.push(
        case(
            "cksum-c.sh several empty manifests",
            &["--check", "empty-1", "empty-2"],
        )
        .file("empty-1", "")
        .file("empty-2", ""),
    );
    // --- uutils tests/by-util/test_sha256sum.rs and common_checksum_tests.rs
    v.push(
        case("uutils test_sha256sum.rs test_tag", &["--tag", "foobar"]).file("foobar", "foo bar\n"),
    );
    v.push(
        case(
            "uutils test_sha256sum.rs test_conflicting_arg (--tag --check)",
            &["--tag", "--check"],
        )
        .expect(Expect::Usage),
    );
    v.push(
        case(
            "uutils test_sha256sum.rs test_conflicting_arg (--tag --text)",
            &["--tag", "--text"],
        )
        .expect(Expect::Usage),
    );
    v.push(
        case(
            "uutils common_checksum_tests.rs test_single_file",
            &["input.txt"],
        )
        .file("input.txt", "hello, world\n"),
    );
    v.push(case("uutils common_checksum_tests.rs test_stdin", &[]).stdin("hello, world\n"));
    v.push(
        case(
            "uutils common_checksum_tests.rs test_zero",
            &["--zero", "input.txt"],
        )
        .file("input.txt", "hello, world\n"),
    );
    v.push(
        case(
            "uutils common_checksum_tests.rs test_stdin_with_dash_directory",
            &[],
        )
        .dir("-")
        .stdin("hello, world\n"),
    );
    v.push(
        case(
            "uutils common_checksum_tests.rs test_check",
            &["--check", "c"],
        )
        .file("input.txt", "a")
        .file("c", format!("{A}  input.txt\n")),
    );
    v.push(
        case(
            "uutils common_checksum_tests.rs test_missing_file",
            &["a", "b", "c"],
        )
        .file("a", "file1\n")
        .file("c", "file3\n"),
    );
    // --- uutils tests/by-util/test_cksum.rs, check mode
    v.push(
        case(
            "uutils test_cksum.rs test_cksum_check_case",
            &["--check", "CHECKSUM"],
        )
        .file("f", "")
        .file("CHECKSUM", format!("Sha256 (f) = {E}\n")),
    );
    let invalid = format!("SHA256 (f) = {E}\nagain incorrect data\naze\n");
    v.push(
        case(
            "uutils test_cksum.rs test_cksum_check_invalid --strict",
            &["--check", "--strict", "CHECKSUM"],
        )
        .file("f", "")
        .file("CHECKSUM", &invalid),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_cksum_check_invalid",
            &["--check", "CHECKSUM"],
        )
        .file("f", "")
        .file("CHECKSUM", &invalid),
    );
    let failed = format!("{invalid}SHA256 (input) = {}\n", BAD);
    let failed2 = format!("SHA256 (f2) = {}\nagain incorrect data\naze\nSHA256 (input2) = {b}\nagain incorrect data\naze\nSHA256 (input2) = {b}\n",
        "73475cb40a568e8da8a045ced110137e159f890ac4da883b6b17dc651b3a8049", b = BAD);
    v.push(
        case(
            "uutils test_cksum.rs test_cksum_check_failed --strict",
            &["--check", "--strict", "CHECKSUM"],
        )
        .file("f", "")
        .file("CHECKSUM", &failed),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_cksum_check_failed",
            &["--check", "CHECKSUM"],
        )
        .file("f", "")
        .file("CHECKSUM", &failed),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_cksum_check_failed (two manifests)",
            &["--check", "CHECKSUM", "CHECKSUM2"],
        )
        .file("f", "")
        .file("f2", "42")
        .file("CHECKSUM", &failed)
        .file("CHECKSUM2", &failed2),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_check_md5_format",
            &["--check", "f"],
        )
        .file("empty", "")
        .file("f", format!("{E} *empty\n")),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_cksum_garbage (start)",
            &["--check", "check-file"],
        )
        .file("check-file", format!("garbage SHA256 (README.md) = {E}")),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_cksum_garbage (end)",
            &["--check", "check-file"],
        )
        .file("check-file", format!("SHA256 (README.md) = {E} garbage")),
    );
    v.push(
        case("uutils test_cksum.rs test_bsd_case", &["-c", "f"])
            .file("f", "bSD (README.md) = 0000\n"),
    );
    v.push(
        case("uutils test_cksum.rs test_unknown_sha", &["-c", "f"])
            .file("f", "SHA4 (README.md) = 00000000\n"),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_check_directory_error",
            &["--check", "f"],
        )
        .dir("d")
        .file("f", format!("SHA256 (d) = {E}\n")),
    );
    v.push(case(
        "uutils test_cksum.rs test_several_files_error_mgmt (missing)",
        &["--check", "empty", "incorrect"],
    ));
    v.push(
        case(
            "uutils test_cksum.rs test_several_files_error_mgmt (empty)",
            &["--check", "empty", "incorrect"],
        )
        .file("empty", "")
        .file("incorrect", ""),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_check_comment_line",
            &["--check", "CHECKSUM"],
        )
        .file("foo", "foo-content\n")
        .file(
            "CHECKSUM",
            format!(
                "# This is a comment\nSHA256 (foo) = {FOO_CONTENT}\n# next comment is empty\n#"
            ),
        ),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_check_comment_only",
            &["--check", "CHECKSUM"],
        )
        .file("CHECKSUM", "# This is a comment\n"),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_check_comment_leading_space",
            &["--check", "CHECKSUM"],
        )
        .file("foo", "foo-content\n")
        .file(
            "CHECKSUM",
            format!(" # This is a comment\nSHA256 (foo) = {FOO_CONTENT}\n"),
        ),
    );
    let unreadable = format!("SHA256 (dir) = {b}\nSHA256 (not-file) = {b}\n", b = BAD);
    v.push(
        case(
            "uutils test_cksum.rs test_check_failed_to_read",
            &["--check", "CHECKSUM"],
        )
        .dir("dir")
        .file("CHECKSUM", &unreadable),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_check_failed_to_read --ignore-missing",
            &["--check", "CHECKSUM", "--ignore-missing"],
        )
        .dir("dir")
        .file("CHECKSUM", &unreadable),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_check_trailing_space_fails",
            &["--check", "CHECKSUM"],
        )
        .file("foo", "foo-content\n")
        .file("CHECKSUM", format!("SHA256 (foo) = {FOO_CONTENT}    \n")),
    );
    v.push(
        case(
            "uutils test_cksum.rs test_check_non_utf8_comment",
            &["--check", "check"],
        )
        .file("empty", "")
        .file(
            "check",
            [
                b"# Comment with a non utf8 char: >>\xff<<\n".as_slice(),
                format!("SHA256 (empty) = {E}\n").as_bytes(),
            ]
            .concat(),
        ),
    );
    for (id, digest, name) in [
        (
            "uutils test_cksum.rs test_check_non_utf8_filename (match)",
            E,
            &b"funky\xffname"[..],
        ),
        (
            "uutils test_cksum.rs test_check_non_utf8_filename (mismatch)",
            BAD,
            b"funky\xffname",
        ),
        (
            "uutils test_cksum.rs test_check_non_utf8_filename (missing)",
            BAD,
            b"flakey\xffname",
        ),
    ] {
        let line = [
            b"SHA256 (".as_slice(),
            name,
            b") = ",
            digest.as_bytes(),
            b"\n",
        ]
        .concat();
        v.push(
            case(id, &["--check", "check"])
                .file(b"funky\xffname", "")
                .file("check", line),
        );
    }
    for (id, first, second) in [
        (
            "uutils test_cksum.rs ..._keeps_processing_hex (good, bad)",
            E,
            &E[..63],
        ),
        (
            "uutils test_cksum.rs ..._keeps_processing_hex (bad, good)",
            &E[..63],
            E,
        ),
    ] {
        v.push(
            case(id, &["--check"])
                .file("f", "")
                .stdin(format!("SHA256 (f) = {first}\nSHA256 (f) = {second}")),
        );
    }
    v.extend(drop_in_cases());
    v
}

/// Our own cases for what makes the binaries drop-ins for `sha256sum` in
/// scripts and the suites above leave untested: standard input as `-`, the
/// `-b`/`-t` markers, names quoted in messages, manifests that cannot be read,
/// and `--ignore-missing` with no file verified. Checked against GNU in the
/// same way, then the documented differences.
fn drop_in_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let i = "hashrace: sha256sum drop-in";
    v.push(case(i, &["-"]).stdin("abc"));
    v.push(case(i, &["-", "-"]).stdin("abc"));
    v.push(case(i, &["-b", "-"]).stdin("abc"));
    v.push(case(i, &["-b", "f"]).file("f", "x"));
    v.push(case(i, &["--binary", "--text", "f"]).file("f", "x"));
    v.push(case(i, &["-t", "-b", "f"]).file("f", "x"));
    v.push(case(i, &["-b", "-z", "a\nb"]).file("a\nb", "x"));
    v.push(case(i, &["-b", "a\\b"]).file("a\\b", "x"));
    v.push(case(i, &["--tag", "-b", "f"]).file("f", "x"));
    v.push(case(i, &["-t", "--tag", "f"]).file("f", "x"));
    v.push(
        case(i, &["--tag", "-t", "f"])
            .file("f", "x")
            .expect(Expect::Usage),
    );
    v.push(
        case(i, &["-b", "-c", "f"])
            .file("f", "x")
            .expect(Expect::Usage),
    );
    v.push(case(i, &["-c"]).file("f", "x").stdin(format!("{A}  f\n")));
    v.push(case(i, &["-c", "-"]).stdin("garbage\n"));
    v.push(case(i, &["-c", "-w"]).stdin(format!("garbage\n{E}  nope\n")));
    v.push(case(i, &["-c", "-"]).dir("-").stdin(format!("{A}  -\n")));
    v.push(case(i, &["-c", "dir"]).dir("dir"));
    v.push(case(i, &["-c", "--status", "dir"]).dir("dir"));
    for name in [
        &b"a b"[..],
        b"*empty",
        b"FFF\xffDIR",
        b"a/b",
        b"it's",
        b"a:b",
        b"a'\xff",
        b"new\nline",
        b"",
    ] {
        v.push(case(i, &[]).raw_arg(name));
        let mut manifest = format!("{E}  ").into_bytes();
        let (escaped, n) = hash_core::escape::escape_name(name);
        if escaped {
            manifest.insert(0, b'\\');
        }
        manifest.extend_from_slice(&n);
        manifest.push(b'\n');
        if !name.is_empty() {
            v.push(case(i, &["-c", "m"]).file("m", manifest));
        }
    }
    v.push(case(i, &["-c"]).raw_arg(b"my sums\xff"));
    v.push(
        case(i, &["-c", "--warn"])
            .raw_arg(b"it's")
            .file("it's", "bad line\n"),
    );
    for sw in [
        &["--ignore-missing"][..],
        &["--ignore-missing", "--status"],
        &["--ignore-missing", "--quiet"],
    ] {
        for (what, manifest) in [
            ("only mismatches", format!("{E}  f\n")),
            ("only directories", format!("{E}  dir\n")),
            ("only missing", format!("{E}  nope\n")),
            ("missing and malformed", format!("x\n{E}  nope\n")),
            ("one match", format!("{E}  nope\n{A}  f\n")),
        ] {
            let _ = what; // names the manifest's shape for the reader
            let mut args = vec!["-c"];
            args.extend_from_slice(sw);
            args.push("m");
            v.push(case(i, &args).file("f", "a").dir("dir").file("m", manifest));
        }
    }
    // Documented differences.
    v.push(
        case("documented: sorted operands", &["b", "a"])
            .file("a", "1")
            .file("b", "2")
            .expect(Expect::Sorted),
    );
    v.push(
        case("documented: NUL in a manifest name", &["-c", "m"])
            .file("a", "")
            .file("m", [format!("{E}  a").as_bytes(), b"\0b\n"].concat())
            .expect(Expect::OursMalformed),
    );
    v.push(
        case("documented: '-' inside a manifest", &["-c", "m"])
            .file("m", format!("{E}  -\n"))
            .expect(Expect::OursMalformed),
    );
    v
}

fn build(dir: &Path, c: &Case) -> Vec<u8> {
    for (name, content) in &c.files {
        let p = dir.join(std::ffi::OsStr::from_bytes(name));
        match content {
            None => fs::create_dir_all(&p).unwrap(),
            Some(data) => {
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(&p, data).unwrap();
            }
        }
    }
    let sh = |script: &str| {
        let out = crate::run(
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(dir)
                .env("LC_ALL", "C"),
        );
        assert!(
            out.status.success(),
            "{}: setup {script:?} failed",
            c.origin
        );
        out.stdout
    };
    if let Some(script) = c.setup {
        sh(script);
    }
    match c.stdin_script {
        Some(script) => sh(script),
        None => c.stdin.clone(),
    }
}

fn run_in(dir: &Path, program: &Path, args: &[Vec<u8>], stdin: &[u8]) -> Output {
    let input = dir.join(".stdin");
    fs::write(&input, stdin).unwrap();
    let mut cmd = Command::new(program);
    cmd.args(args.iter().map(|a| std::ffi::OsStr::from_bytes(a)))
        .current_dir(dir)
        .env("LC_ALL", "C");
    let out = crate::run_with_stdin(&mut cmd, Stdio::from(fs::File::open(&input).unwrap()));
    fs::remove_file(&input).unwrap();
    out
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Compare one case; `Err` says how it differs.
pub fn check(bin: &Path, name: &str, c: &Case) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let stdin = build(dir.path(), c);
    let gnu = run_in(dir.path(), Path::new("sha256sum"), &c.args, &stdin);
    let ours = run_in(dir.path(), bin, &c.args, &stdin);
    let gnu_err = show(&gnu.stderr).replace("sha256sum: ", &format!("{name}: "));
    let status = (gnu.status.code(), ours.status.code());
    let fail = |what: &str, g: String, o: String| {
        Err(format!(
            "{} {:?}: {what} differs\n  GNU:  {g:?}\n  ours: {o:?}",
            c.origin,
            c.args.iter().map(|a| show(a)).collect::<Vec<_>>()
        ))
    };
    match c.expect {
        Expect::Same | Expect::Sorted => {
            let mut want = gnu.stdout.clone();
            if c.expect == Expect::Sorted {
                let mut lines: Vec<&[u8]> = gnu.stdout.split_inclusive(|&b| b == b'\n').collect();
                lines.sort();
                want = lines.concat();
            }
            if ours.stdout != want {
                return fail("stdout", show(&want), show(&ours.stdout));
            }
            if show(&ours.stderr) != gnu_err {
                return fail("stderr", gnu_err, show(&ours.stderr));
            }
            if status.0 != status.1 {
                return fail(
                    "status",
                    format!("{:?}", status.0),
                    format!("{:?}", status.1),
                );
            }
        }
        Expect::Usage => {
            let ok =
                status == (Some(1), Some(2)) && gnu.stdout.is_empty() && ours.stdout.is_empty();
            if !ok {
                return fail(
                    "usage error",
                    format!("{status:?} {gnu_err}"),
                    show(&ours.stderr),
                );
            }
        }
        Expect::OursMalformed => {
            let ok = ours.status.code() == Some(1)
                && show(&ours.stderr).contains("no properly formatted checksum lines found");
            if !ok {
                return fail("refusal", gnu_err, show(&ours.stderr));
            }
        }
    }
    Ok(())
}

/// Run every case on `bin` (called `name` in messages); panic listing all
/// that differ. Skips, saying why, when GNU sha256sum is not 9.1.
pub fn run_all(bin: &Path, name: &str) {
    let version = crate::try_run(Command::new("sha256sum").arg("--version"));
    let first_line = version
        .as_ref()
        .map(|o| show(&o.stdout))
        .unwrap_or_default();
    if !first_line.starts_with("sha256sum (GNU coreutils) 9.1\n") {
        eprintln!("skipped: the oracle is GNU sha256sum 9.1, found {first_line:?}");
        return;
    }
    let cases = cases();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| check(bin, name, c).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} ported cases differ from GNU:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
