//! The test environment shared by the four binaries' integration tests.
//!
//! Each binary crate's `tests/cli.rs` expands [`conformance_tests!`] with its own
//! `CARGO_BIN_EXE_*` path, so all four are held to one contract by one set of
//! tests (fd's `tests/testenv` is the model). Expected output always comes from
//! an independent source: GNU `find | sort | xargs sha256sum` run on the same
//! tree, never from hash-core.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use hash_core::READ_BUF_SIZE;

pub mod gnu_cases;
pub mod process;

pub use process::*;

/// A temporary directory tree that everyone (including `nobody`) can read.
#[derive(Debug)]
pub struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    /// An empty tree.
    pub fn new() -> Tree {
        let dir = tempfile::Builder::new()
            .prefix("hashrace-test")
            .tempdir()
            .unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        Tree { dir }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `root/rel`, where `rel` may hold any bytes.
    pub fn path(&self, rel: &[u8]) -> PathBuf {
        self.root().join(OsStr::from_bytes(rel))
    }

    /// Write a file (creating parent directories), world-readable.
    pub fn file(&self, rel: &[u8], content: &[u8]) -> PathBuf {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, content).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        p
    }

    /// A symbolic link `rel -> target`.
    pub fn link(&self, rel: &[u8], target: &str) {
        symlink(target, self.path(rel)).unwrap();
    }

    /// A FIFO.
    pub fn fifo(&self, rel: &[u8]) -> PathBuf {
        let p = self.path(rel);
        mkfifo(&p, 0o644);
        p
    }

    /// The tree every conformance test uses: awkward sizes and awkward names.
    pub fn nasty() -> Tree {
        let t = Tree::new();
        let n = READ_BUF_SIZE;
        t.file(b"empty", b"");
        t.file(b"sizes/buf-minus-1", &pattern(n - 1));
        t.file(b"sizes/buf", &pattern(n));
        t.file(b"sizes/buf-plus-1", &pattern(n + 1));
        t.file(b"sizes/three-bufs", &pattern(3 * n + 17));
        t.file(b"deep/a/b/c/d/file", b"deep\n");
        t.file(b"deep/a-b", b"sorts before deep/a/\n");
        t.file(b"with space", b"space\n");
        t.file(b"-leading-dash", b"dash\n");
        t.file(b"back\\slash", b"backslash\n");
        t.file(b"new\nline", b"newline\n");
        t.file(b"carriage\rreturn", b"cr\n");
        t.file(b"invalid-\xff\xfe-utf8", b"bytes\n");
        t.file(b"UPPER", b"sorts before lower case\n");
        t.link(b"link-to-file", "with space");
        t.link(b"dangling", "does-not-exist");
        t.link(b"loop-a", "loop-b");
        t.link(b"loop-b", "loop-a");
        t.link(b"deep/a/up", "../..");
        t.fifo(b"fifo");
        t
    }
}

impl Default for Tree {
    fn default() -> Self {
        Tree::new()
    }
}

/// The workspace binary `name`, found beside the running test's executable
/// (`target/<profile>/deps/..`), where `cargo test --workspace` builds it.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test executable lives in target/<profile>/deps");
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test --workspace` so every binary is built",
        bin.display()
    );
    bin
}

/// Make a FIFO at `path` with permissions `mode`.
pub fn mkfifo(path: &Path, mode: u32) {
    use rustix::fs::{mkfifoat, Mode, CWD};
    mkfifoat(CWD, path, Mode::from_raw_mode(mode))
        .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
}

/// Deterministic, non-repeating-looking content of `len` bytes.
pub fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9 ^ len as u32;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// What GNU tools print for this tree: `find OPT ROOT -type f -print0 |
/// LC_ALL=C sort -z | xargs -0 -r sha256sum` (stdout only).
pub fn reference(find_opt: &str, roots: &[&Path]) -> Vec<u8> {
    let script = format!(
        "find {find_opt} \"$@\" -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 -r sha256sum"
    );
    let out = run(Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .args(roots));
    assert!(out.status.success(), "reference pipeline failed: {out:?}");
    out.stdout
}

/// GNU `sha256sum` of individual files.
pub fn sha256sum(files: &[&Path]) -> Vec<u8> {
    let out = run(Command::new("sha256sum").args(files));
    assert!(out.status.success(), "sha256sum failed: {out:?}");
    out.stdout
}

/// Whether this process may set up an io_uring, asked of the kernel directly
/// (`io_uring_setup(2)`, not through the code under test); `Err` says why not
/// (an old kernel, `kernel.io_uring_disabled`, a seccomp filter).
pub fn io_uring_usable() -> Result<(), String> {
    io_uring::IoUring::new(1)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// `bin args...`, run with [`run`].
pub fn hash(bin: &str, args: &[&OsStr]) -> Output {
    run(Command::new(bin).args(args))
}

/// Bytes as text for assertion messages (lossy, escapes visible).
pub fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A world-readable copy of `bin`, for running it as `nobody`: the checkout
/// it was built in may sit under a directory `nobody` cannot enter. Keep the
/// returned directory alive while the copy is used.
pub fn nobody_copy(bin: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("hashrace-bin")
        .tempdir()
        .unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.path().join(Path::new(bin).file_name().unwrap());
    fs::copy(bin, &copy).unwrap();
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
    (dir, copy)
}

/// A command running `program` as the unprivileged `nobody` user, so that
/// permission errors are real even though CI runs as root (which ignores
/// permission bits).
pub fn as_nobody(program: &Path) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program);
    cmd
}

/// Expands to the conformance tests for one binary. `$bin` is its path
/// (`env!("CARGO_BIN_EXE_hash-threads")`), `$name` its name, `$parallel`
/// whether it takes `-j`.
#[macro_export]
macro_rules! conformance_tests {
    ($bin:expr, $name:expr, $parallel:expr) => {
        use std::ffi::OsStr;
        use std::path::Path;
        use $crate::*;

        const BIN: &str = $bin;
        const NAME: &str = $name;

        fn jobs_variants() -> Vec<Vec<&'static str>> {
            if $parallel {
                let mut v = vec![
                    vec!["-j", "1"],
                    vec!["-j", "2"],
                    vec!["-j", "3"],
                    vec!["-j", "16"],
                    vec![],
                ];
                if NAME == "hash-async" {
                    // Both I/O modes (`auto` above is io_uring where available).
                    v.push(vec!["--io", "pool"]);
                    v.push(vec!["--io", "uring", "-j", "3"]);
                }
                v
            } else {
                vec![vec![]]
            }
        }

        fn os<'a>(args: &[&'a str]) -> Vec<&'a OsStr> {
            args.iter().map(|a| OsStr::new(*a)).collect()
        }

        #[test]
        fn matches_find_sort_sha256sum_on_the_nasty_tree() {
            let t = Tree::nasty();
            let expected = reference("-H", &[t.root()]);
            assert!(
                show(&expected).contains("/new\\nline"),
                "the reference escapes names"
            );
            for jobs in jobs_variants() {
                let mut args = os(&jobs);
                args.push(t.root().as_os_str());
                let out = hash(BIN, &args);
                assert_eq!(show(&out.stdout), show(&expected), "{jobs:?}");
                assert_eq!(out.stdout, expected, "{jobs:?}: byte for byte");
                assert_eq!(show(&out.stderr), "", "{jobs:?}");
                assert_eq!(out.status.code(), Some(0), "{jobs:?}");
            }
        }

        #[test]
        fn follow_hashes_link_targets_and_reports_loops() {
            let t = Tree::nasty();
            let expected = reference("-L", &[t.root()]);
            assert!(show(&expected).contains("link-to-file"));
            let out = hash(BIN, &[OsStr::new("-L"), t.root().as_os_str()]);
            assert_eq!(show(&out.stdout), show(&expected));
            let r = t.root().display();
            let want = format!(
                "{NAME}: {r}/deep/a/up: File system loop detected (leads back to {r})\n\
                 {NAME}: {r}/loop-a: Too many levels of symbolic links\n\
                 {NAME}: {r}/loop-b: Too many levels of symbolic links\n"
            );
            assert_eq!(show(&out.stderr), want);
            assert_eq!(out.status.code(), Some(1));
        }

        #[test]
        fn a_file_argument_is_hashed_like_sha256sum_does() {
            let t = Tree::new();
            let f = t.file(b"f", b"abc");
            t.link(b"l", "f");
            let l = t.path(b"l");
            let out = hash(BIN, &[f.as_os_str(), l.as_os_str()]);
            assert_eq!(show(&out.stdout), show(&sha256sum(&[&f, &l])));
            assert_eq!(out.status.code(), Some(0));
        }

        #[test]
        fn a_missing_path_is_reported_and_the_rest_is_hashed() {
            let t = Tree::new();
            t.file(b"d/x", b"x");
            let missing = t.path(b"nope");
            let d = t.path(b"d");
            let out = hash(BIN, &[missing.as_os_str(), d.as_os_str()]);
            assert_eq!(show(&out.stdout), show(&reference("-H", &[&d])));
            assert_eq!(
                show(&out.stderr),
                format!("{NAME}: {}: No such file or directory\n", missing.display())
            );
            assert_eq!(out.status.code(), Some(1));
        }

        #[test]
        fn a_fifo_argument_is_refused_without_hanging() {
            let t = Tree::new();
            let fifo = t.fifo(b"p");
            let out = hash(BIN, &[fifo.as_os_str()]);
            assert_eq!(show(&out.stdout), "");
            assert_eq!(
                show(&out.stderr),
                format!("{NAME}: {}: not a regular file\n", fifo.display())
            );
            assert_eq!(out.status.code(), Some(1));
        }

        #[test]
        fn unreadable_files_and_directories_are_reported_as_nobody() {
            use std::os::unix::fs::PermissionsExt;
            let t = Tree::new();
            t.file(b"ok/a", b"a");
            let secret = t.file(b"ok/secret", b"s");
            std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
            t.file(b"closed/inside", b"i");
            let closed = t.path(b"closed");
            std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();
            let (_dir, bin) = nobody_copy(BIN);
            let out = run(as_nobody(&bin).arg(t.root()));
            let a = t.path(b"ok/a");
            assert_eq!(show(&out.stdout), show(&sha256sum(&[&a])));
            assert_eq!(
                show(&out.stderr),
                format!(
                    "{NAME}: {}: Permission denied\n{NAME}: {}: Permission denied\n",
                    closed.display(),
                    secret.display()
                )
            );
            assert_eq!(out.status.code(), Some(1));
        }

        #[test]
        fn usage_errors_exit_2() {
            // (No operand at all is not an error: it means standard input.)
            let out = hash(BIN, &[OsStr::new("--strict"), OsStr::new(".")]);
            assert_eq!(out.status.code(), Some(2));
            assert!(
                show(&out.stderr).contains("Usage:"),
                "{}",
                show(&out.stderr)
            );
            let out = hash(BIN, &[OsStr::new("--no-such-option"), OsStr::new(".")]);
            assert_eq!(out.status.code(), Some(2));
        }

        /// GNU's and uutils' own test cases, against GNU (see `gnu_cases`).
        #[test]
        fn ported_coreutils_and_uutils_cases_match_gnu() {
            gnu_cases::run_all(BIN, NAME);
        }

        #[test]
        fn completions_and_man_page_are_generated_from_the_real_options() {
            for kind in [
                "completions-bash",
                "completions-zsh",
                "completions-fish",
                "man",
            ] {
                let out = hash(BIN, &[OsStr::new("--generate"), OsStr::new(kind)]);
                assert_eq!(out.status.code(), Some(0), "{kind}");
                let text = show(&out.stdout);
                assert!(text.contains(NAME), "{kind}");
                assert!(
                    text.contains("ignore") && text.contains("missing"),
                    "{kind}"
                );
                assert_eq!(text.contains("jobs"), $parallel, "{kind}");
            }
        }

        #[test]
        fn help_and_version_exit_0() {
            let out = hash(BIN, &[OsStr::new("--help")]);
            assert_eq!(out.status.code(), Some(0));
            let help = show(&out.stdout);
            assert!(help.contains("Examples:"), "{help}");
            assert!(help.contains(NAME));
            assert_eq!(help.contains("--jobs"), $parallel);
            let out = hash(BIN, &[OsStr::new("--version")]);
            assert_eq!(out.status.code(), Some(0));
            assert!(show(&out.stdout).starts_with(NAME));
        }

        #[test]
        fn a_closed_stdout_ends_quietly() {
            use std::io::{BufRead, BufReader};
            let t = Tree::new();
            for i in 0..3000 {
                t.file(format!("f{i:05}").as_bytes(), b"x");
            }
            let mut child = std::process::Command::new(BIN)
                .arg(t.root())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut first = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut first)
                .unwrap();
            assert!(first.ends_with("f00000\n"), "{first}");
            // The reader is dropped: stdout is now a closed pipe.
            let out = wait_output(child, NAME);
            assert_eq!(show(&out.stderr), "");
            assert_eq!(out.status.code(), Some(0));
        }

        #[test]
        fn stats_summarise_on_stderr_only() {
            let t = Tree::new();
            t.file(b"a", &[1; 1000]);
            t.file(b"b", &[2; 24]);
            t.fifo(b"p");
            let out = hash(BIN, &[OsStr::new("--stats"), t.root().as_os_str()]);
            assert_eq!(out.stdout, reference("-H", &[t.root()]));
            let err = show(&out.stderr);
            assert!(
                err.starts_with(&format!("{NAME}: 2 files, 0.0 MiB, 0 errors, 1 skipped")),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1);
        }

        #[test]
        fn root_spellings_are_kept_as_find_prints_them() {
            let t = Tree::new();
            t.file(b"d/x", b"x");
            t.file(b"d/sub/y", b"y");
            t.link(b"via-link", "d");
            for root in ["d", "d/", "d//", "./d", "via-link", "via-link/", "."] {
                let out = run(std::process::Command::new(BIN)
                    .arg(root)
                    .current_dir(t.root()));
                let want = run(std::process::Command::new("sh")
                    .arg("-c")
                    .arg("find -H \"$1\" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum")
                    .arg("sh")
                    .arg(root)
                    .current_dir(t.root()));
                assert_eq!(show(&out.stdout), show(&want.stdout), "root {root:?}");
            }
        }

        #[test]
        fn a_path_given_twice_is_listed_twice_like_find() {
            let t = Tree::new();
            t.file(b"d/x", b"x");
            let d = t.path(b"d");
            let out = hash(BIN, &[d.as_os_str(), d.as_os_str()]);
            assert_eq!(show(&out.stdout), show(&reference("-H", &[&d, &d])));
        }

        #[test]
        fn zero_and_tag_outputs_match_gnu() {
            let t = Tree::nasty();
            let z = run(std::process::Command::new("sh")
                .arg("-c")
                .arg("find -H \"$1\" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum -z")
                .arg("sh")
                .arg(t.root()));
            let out = hash(BIN, &[OsStr::new("-z"), t.root().as_os_str()]);
            assert_eq!(out.stdout, z.stdout, "-z");
            let tag = run(std::process::Command::new("sh")
                .arg("-c")
                .arg("find -H \"$1\" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum --tag")
                .arg("sh")
                .arg(t.root()));
            let out = hash(BIN, &[OsStr::new("--tag"), t.root().as_os_str()]);
            assert_eq!(show(&out.stdout), show(&tag.stdout), "--tag");
        }

        #[test]
        fn manifests_round_trip_through_gnu_and_ourselves() {
            let t = Tree::nasty();
            let dir = tempfile::tempdir().unwrap();
            for style in [None, Some("--tag")] {
                let mut args: Vec<&OsStr> = style.iter().map(OsStr::new).collect();
                args.push(t.root().as_os_str());
                let made = hash(BIN, &args);
                assert_eq!(made.status.code(), Some(0));
                let manifest = dir.path().join("SUMS");
                std::fs::write(&manifest, &made.stdout).unwrap();
                let gnu = run(std::process::Command::new("sha256sum")
                    .args(["-c", "--strict"])
                    .arg(&manifest));
                assert_eq!(
                    gnu.status.code(),
                    Some(0),
                    "GNU rejects our {style:?} manifest: {}",
                    show(&gnu.stderr)
                );
                let ours = hash(
                    BIN,
                    &[
                        OsStr::new("-c"),
                        OsStr::new("--strict"),
                        manifest.as_os_str(),
                    ],
                );
                assert_eq!(show(&ours.stdout), show(&gnu.stdout), "{style:?}");
                assert_eq!(show(&ours.stderr), "");
                assert_eq!(ours.status.code(), Some(0));
            }
        }

        /// Run GNU and us on one manifest with the same switches, as `nobody`
        /// (so an unreadable file is real), in `dir`; compare everything.
        fn same_as_gnu_check(bin: &Path, dir: &Path, manifest: &str, switches: &[&str]) {
            let gnu = run(std::process::Command::new("setpriv")
                .args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "--",
                    "sha256sum",
                    "-c",
                ])
                .args(switches)
                .arg(manifest)
                .current_dir(dir));
            let ours = run(as_nobody(bin)
                .arg("-c")
                .args(switches)
                .arg(manifest)
                .current_dir(dir));
            let ctx = format!("{manifest} {switches:?}");
            assert_eq!(show(&ours.stdout), show(&gnu.stdout), "stdout, {ctx}");
            assert_eq!(
                show(&ours.stderr),
                show(&gnu.stderr).replace("sha256sum:", &format!("{NAME}:")),
                "stderr, {ctx}"
            );
            assert_eq!(ours.status.code(), gnu.status.code(), "status, {ctx}");
        }

        #[test]
        fn check_mode_matches_gnu_verdicts_messages_and_statuses() {
            use std::os::unix::fs::PermissionsExt;
            let t = Tree::new();
            t.file(b"good", b"good\n");
            t.file(b"bad", b"changed\n");
            let locked = t.file(b"locked", b"secret\n");
            std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
            let good = sha256sum(&[&t.path(b"good")]);
            let hex = |line: &[u8]| String::from_utf8(line[..64].to_vec()).unwrap();
            let g = hex(&good);
            let zeros = "0".repeat(64);
            let manifests: &[(&str, String)] = &[
                (
                    "all-ok",
                    format!("{g}  good\n{g} *good\nSHA256 (good) = {g}\n"),
                ),
                (
                    "mixed",
                    format!("{g}  good\n{zeros}  bad\n{g}  missing\n{g}  locked\nnot a line\n"),
                ),
                ("only-missing", format!("{g}  missing\n# comment\n")),
                ("malformed-only", "garbage\n\n".to_owned()),
                ("crlf", format!("{g}  good\r\n")),
            ];
            for (name, text) in manifests {
                t.file(name.as_bytes(), text.as_bytes());
            }
            let (_dir, bin) = nobody_copy(BIN);
            for (name, _) in manifests {
                for switches in [
                    &[][..],
                    &["--quiet"],
                    &["--status"],
                    &["--warn"],
                    &["--strict"],
                    &["--ignore-missing"],
                    &["--status", "--warn"],
                    &["--strict", "--quiet", "--ignore-missing"],
                ] {
                    same_as_gnu_check(&bin, t.root(), name, switches);
                }
            }
            same_as_gnu_check(&bin, t.root(), "no-such-manifest", &[]);
        }

        #[test]
        fn check_reads_the_manifest_from_stdin() {
            let t = Tree::new();
            let f = t.file(b"f", b"x");
            let sums = sha256sum(&[&f]);
            let out = run_with_input(std::process::Command::new(BIN).args(["-c", "-"]), &sums);
            assert_eq!(show(&out.stdout), format!("{}: OK\n", f.display()));
            assert_eq!(out.status.code(), Some(0));
        }

        #[test]
        fn standard_input_is_hashed_once_and_kept_out_of_the_tree() {
            let t = Tree::new();
            t.file(b"d/x", b"x");
            let d = t.path(b"d");
            let input = t.file(b"input", b"from stdin");
            let with_stdin = |args: &[&OsStr]| {
                run_with_stdin(
                    std::process::Command::new(BIN).args(args),
                    std::process::Stdio::from(std::fs::File::open(&input).unwrap()),
                )
            };
            let out = with_stdin(&[OsStr::new("--tree"), OsStr::new("-"), d.as_os_str()]);
            let alone = hash(BIN, &[OsStr::new("--tree"), d.as_os_str()]);
            let text = show(&out.stdout);
            let gnu_stdin = show(&sha256sum(&[&input])).replace(&*input.to_string_lossy(), "-");
            assert!(text.starts_with(&gnu_stdin), "{text}");
            let last = |s: &str| s.lines().last().unwrap().to_owned();
            assert_eq!(
                last(&text),
                last(&show(&alone.stdout)),
                "stdin is not in the tree"
            );
            assert_eq!(out.status.code(), Some(0));
            // A second '-' finds stdin at its end, as with GNU.
            let twice = with_stdin(&[OsStr::new("-"), OsStr::new("-")]);
            let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n";
            assert_eq!(show(&twice.stdout), format!("{gnu_stdin}{empty}"));
        }

        #[test]
        fn json_agrees_with_the_text_output() {
            let t = Tree::nasty();
            let text = hash(BIN, &[t.root().as_os_str()]);
            let out = hash(
                BIN,
                &[OsStr::new("--json"), OsStr::new("-L"), t.root().as_os_str()],
            );
            assert_eq!(out.status.code(), Some(1), "loops under -L are errors");
            let report: hash_core::report::Report = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(report.schema_version, hash_core::report::SCHEMA_VERSION);
            assert_eq!(report.tool, NAME);
            // Rebuild GNU lines from the JSON and compare with the -L text output.
            let follow_text = hash(BIN, &[OsStr::new("-L"), t.root().as_os_str()]);
            let mut rebuilt = Vec::new();
            for f in &report.files {
                let path = f.path.to_bytes().unwrap();
                let mut d = [0u8; 32];
                d.copy_from_slice(&hash_core::report::unhex(&f.sha256).unwrap());
                hash_core::output::write_line(&mut rebuilt, &Default::default(), &d, &path)
                    .unwrap();
            }
            assert_eq!(show(&rebuilt), show(&follow_text.stdout));
            assert!(
                report.files.iter().any(|f| f.path.path_hex.is_some()),
                "invalid UTF-8 kept"
            );
            let kinds: Vec<&str> = report.errors.iter().map(|e| e.kind.as_str()).collect();
            assert_eq!(kinds, ["loop", "io", "io"]);
            assert_eq!(report.summary.files as usize, report.files.len());
            assert_eq!(report.summary.errors, 3);
            assert_eq!(
                report.summary.bytes,
                report.files.iter().map(|f| f.size).sum::<u64>()
            );
            // Without -L: links and the FIFO are listed as skipped.
            let out = hash(BIN, &[OsStr::new("--json"), t.root().as_os_str()]);
            let report: hash_core::report::Report = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(
                report.files.len(),
                text.stdout.iter().filter(|&&b| b == b'\n').count()
            );
            let mut skipped: Vec<&str> = report.skipped.iter().map(|s| s.kind.as_str()).collect();
            skipped.sort();
            assert_eq!(
                skipped,
                ["fifo", "symlink", "symlink", "symlink", "symlink", "symlink"]
            );
        }

        fn tree_digest(root: &Path, extra: &[&str]) -> String {
            let mut args: Vec<&OsStr> = extra.iter().map(OsStr::new).collect();
            args.push(OsStr::new("--tree"));
            args.push(root.as_os_str());
            let out = hash(BIN, &args);
            let text = show(&out.stdout);
            let last = text.lines().last().unwrap().to_owned();
            last.strip_prefix("# tree-sha256 ")
                .expect("a tree line")
                .to_owned()
        }

        #[test]
        fn the_tree_digest_tracks_content_names_and_layout_not_the_root() {
            let parent = Tree::new();
            let a = parent.path(b"one");
            parent.file(b"one/x/a", b"a");
            parent.file(b"one/b", b"b");
            parent.file(b"one/new\nline", b"n");
            let base = tree_digest(&a, &[]);
            for jobs in jobs_variants() {
                assert_eq!(tree_digest(&a, &jobs), base, "{jobs:?}");
            }
            std::fs::rename(&a, parent.path(b"renamed-root")).unwrap();
            let a = parent.path(b"renamed-root");
            assert_eq!(tree_digest(&a, &[]), base, "the root's name is not covered");
            std::fs::write(a.join("b"), b"c").unwrap();
            let edited = tree_digest(&a, &[]);
            assert_ne!(edited, base, "one-byte edit");
            std::fs::write(a.join("b"), b"b").unwrap();
            assert_eq!(tree_digest(&a, &[]), base);
            std::fs::rename(a.join("b"), a.join("c")).unwrap();
            assert_ne!(tree_digest(&a, &[]), base, "rename");
            std::fs::rename(a.join("c"), a.join("x/b")).unwrap();
            assert_ne!(tree_digest(&a, &[]), base, "move to another directory");
            std::fs::rename(a.join("x/b"), a.join("b")).unwrap();
            assert_eq!(tree_digest(&a, &[]), base);
            // The comment line keeps the manifest checkable by GNU.
            let out = hash(BIN, &[OsStr::new("--tree"), a.as_os_str()]);
            let m = parent.path(b"SUMS");
            std::fs::write(&m, &out.stdout).unwrap();
            let gnu = run(std::process::Command::new("sha256sum")
                .args(["-c", "--strict"])
                .arg(&m));
            assert_eq!(gnu.status.code(), Some(0), "{}", show(&gnu.stderr));
        }

        #[test]
        fn files_from_lists_paths_newline_or_nul_separated() {
            let t = Tree::nasty();
            let a = t.path(b"with space");
            let b = t.path(b"deep");
            let want = reference("-H", &[&a, &b]);
            let lists = Tree::new();
            let list = lists.file(
                b"list-nl",
                format!("{}\n\n{}\n", a.display(), b.display()).as_bytes(),
            );
            let out = hash(BIN, &[OsStr::new("--files-from"), list.as_os_str()]);
            assert_eq!(show(&out.stdout), show(&want));
            let mut nul = t.path(b"with space").into_os_string().into_encoded_bytes();
            nul.push(0);
            nul.extend_from_slice(b.as_os_str().as_encoded_bytes());
            let list0 = lists.file(b"list-nul", &nul);
            let out = hash(
                BIN,
                &[
                    OsStr::new("--files-from"),
                    list0.as_os_str(),
                    OsStr::new("-0"),
                ],
            );
            assert_eq!(show(&out.stdout), show(&want));
        }
    };
}
