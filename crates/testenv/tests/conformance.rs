//! The contract every hasher binary keeps, tested on each of them.
//!
//! Each test runs on every binary in `Strategy::ALL` through [`each_binary`], so
//! a new strategy is held to all of it at once, and a failure names the binary
//! (and still tries the others). The binaries are found next to this test's
//! executable, where `cargo test --workspace` builds them. Expected output comes
//! from GNU `find`, `sort` and `sha256sum` run on the same tree, never from
//! hash-core; a tree the binaries only read is made once and shared by them.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use hash_core::report::{JsonSummary, Line, Report, SCHEMA_VERSION};
use testenv::*;

/// `find -H "$1" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum ARGS`
/// in `dir` (stdout only); unlike [`reference`], `root` is spelled as given.
fn gnu_sums(dir: &Path, root: impl AsRef<OsStr>, sha256sum_args: &str) -> Vec<u8> {
    let script = format!(
        "find -H \"$1\" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum {sha256sum_args}"
    );
    let out = run(Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(root)
        .current_dir(dir));
    out.stdout
}

#[test]
fn matches_find_sort_sha256sum_on_the_nasty_tree() {
    let t = Tree::nasty();
    let expected = reference("-H", &[t.root()]);
    assert!(
        show(&expected).contains("/new\\nline"),
        "the reference escapes names"
    );
    each_binary(|env| {
        for opts in env.variants() {
            let out = env.run(&opts, &[t.root()]);
            assert_eq!(show(&out.stdout), show(&expected), "{opts:?}");
            assert_eq!(out.stdout, expected, "{opts:?}: byte for byte");
            assert_eq!(show(&out.stderr), "", "{opts:?}");
            assert_eq!(out.status.code(), Some(0), "{opts:?}");
        }
    });
}

#[test]
fn follow_hashes_link_targets_and_reports_loops() {
    let t = Tree::nasty();
    let expected = reference("-L", &[t.root()]);
    assert!(show(&expected).contains("link-to-file"));
    each_binary(|env| {
        let out = env.run(&["-L"], &[t.root()]);
        assert_eq!(show(&out.stdout), show(&expected));
        let (n, r) = (env.name(), t.root().display());
        let want = format!(
            "{n}: {r}/deep/a/up: File system loop detected (leads back to {r})\n\
             {n}: {r}/loop-a: Too many levels of symbolic links\n\
             {n}: {r}/loop-b: Too many levels of symbolic links\n"
        );
        assert_eq!(show(&out.stderr), want);
        assert_eq!(out.status.code(), Some(1));
    });
}

#[test]
fn a_file_argument_is_hashed_like_sha256sum_does() {
    let t = Tree::new();
    let f = t.file(b"f", b"abc");
    t.link(b"l", "f");
    let l = t.path(b"l");
    let expected = sha256sum(&[&f, &l]);
    each_binary(|env| {
        let out = env.run(&[], &[&f, &l]);
        assert_eq!(show(&out.stdout), show(&expected));
        assert_eq!(out.status.code(), Some(0));
    });
}

#[test]
fn a_missing_path_is_reported_and_the_rest_is_hashed() {
    let t = Tree::new();
    t.file(b"d/x", b"x");
    let missing = t.path(b"nope");
    let d = t.path(b"d");
    let expected = reference("-H", &[&d]);
    each_binary(|env| {
        let out = env.run(&[], &[&missing, &d]);
        assert_eq!(show(&out.stdout), show(&expected));
        assert_eq!(
            show(&out.stderr),
            format!(
                "{}: {}: No such file or directory\n",
                env.name(),
                missing.display()
            )
        );
        assert_eq!(out.status.code(), Some(1));
    });
}

#[test]
fn a_fifo_argument_is_refused_without_hanging() {
    let t = Tree::new();
    let fifo = t.fifo(b"p");
    each_binary(|env| {
        let out = env.run(&[], &[&fifo]);
        assert_eq!(show(&out.stdout), "");
        assert_eq!(
            show(&out.stderr),
            format!("{}: {}: not a regular file\n", env.name(), fifo.display())
        );
        assert_eq!(out.status.code(), Some(1));
    });
}

#[test]
fn unreadable_files_and_directories_are_reported_as_nobody() {
    let t = Tree::new();
    let a = t.file(b"ok/a", b"a");
    let secret = t.file(b"ok/secret", b"s");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    t.file(b"closed/inside", b"i");
    let closed = t.path(b"closed");
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();
    let expected = sha256sum(&[&a]);
    each_binary(|env| {
        let (_dir, bin) = env.nobody_copy();
        let out = run(as_nobody(&bin).arg(t.root()));
        assert_eq!(show(&out.stdout), show(&expected));
        let n = env.name();
        assert_eq!(
            show(&out.stderr),
            format!(
                "{n}: {}: Permission denied\n{n}: {}: Permission denied\n",
                closed.display(),
                secret.display()
            )
        );
        assert_eq!(out.status.code(), Some(1));
    });
}

#[test]
fn usage_errors_exit_2() {
    each_binary(|env| {
        // (No operand at all is not an error: it means standard input.)
        let out = env.run(&["--strict", "."], &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            show(&out.stderr).contains("Usage:"),
            "{}",
            show(&out.stderr)
        );
        let out = env.run(&["--no-such-option", "."], &[]);
        assert_eq!(out.status.code(), Some(2));
    });
}

/// GNU's and uutils' own test cases, against GNU (see `gnu_cases`).
#[test]
fn ported_coreutils_and_uutils_cases_match_gnu() {
    each_binary(|env| gnu_cases::run_all(env.path(), env.name()));
}

#[test]
fn completions_and_man_page_are_generated_from_the_real_options() {
    each_binary(|env| {
        for kind in [
            "completions-bash",
            "completions-zsh",
            "completions-fish",
            "man",
        ] {
            let out = env.run(&["--generate", kind], &[]);
            assert_eq!(out.status.code(), Some(0), "{kind}");
            let text = show(&out.stdout);
            assert!(text.contains(env.name()), "{kind}");
            assert!(
                text.contains("ignore") && text.contains("missing"),
                "{kind}"
            );
            assert_eq!(text.contains("jobs"), env.is_parallel(), "{kind}");
        }
    });
}

#[test]
fn help_and_version_exit_0() {
    each_binary(|env| {
        let out = env.run(&["--help"], &[]);
        assert_eq!(out.status.code(), Some(0));
        let help = show(&out.stdout);
        assert!(help.contains("Examples:"), "{help}");
        assert!(help.contains(env.name()));
        assert_eq!(help.contains("--jobs"), env.is_parallel());
        let out = env.run(&["--version"], &[]);
        assert_eq!(out.status.code(), Some(0));
        assert!(show(&out.stdout).starts_with(env.name()));
    });
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let t = Tree::new();
    for i in 0..3000 {
        t.file(format!("f{i:05}").as_bytes(), b"x");
    }
    each_binary(|env| {
        let mut child = env
            .command()
            .arg(t.root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(first.ends_with("f00000\n"), "{first}");
        // The reader is dropped: stdout is now a closed pipe.
        let out = wait_output(child, env.name());
        assert_eq!(show(&out.stderr), "");
        assert_eq!(out.status.code(), Some(0));
    });
}

#[test]
fn stats_summarise_on_stderr_only() {
    let t = Tree::new();
    t.file(b"a", &[1; 1000]);
    t.file(b"b", &[2; 24]);
    t.fifo(b"p");
    let expected = reference("-H", &[t.root()]);
    each_binary(|env| {
        let out = env.run(&["--stats"], &[t.root()]);
        assert_eq!(out.stdout, expected);
        let err = show(&out.stderr);
        let summary = format!(
            "{}: 2 files, 1.00 KiB, 0 errors, 1 skipped (not regular files) in ",
            env.name()
        );
        assert!(err.starts_with(&summary), "{err}");
        let one = env.run(&["--stats"], &[&t.path(b"b")]);
        let err_one = show(&one.stderr);
        let summary = format!("{}: 1 file, 24 B, 0 errors, 0 skipped", env.name());
        assert!(err_one.starts_with(&summary), "{err_one}");
        if !env.is_parallel() {
            assert!(err_one.contains(" (serial, 1 worker)"), "{err_one}");
        }
        // The parallel binaries add how many files they read at once.
        let lines: Vec<&str> = err.lines().collect();
        if env.is_parallel() {
            assert_eq!(lines.len(), 2, "{err}");
            let depth = format!("{}: in flight: ", env.name());
            assert!(lines[1].starts_with(&depth), "{err}");
        } else {
            assert_eq!(lines.len(), 1, "{err}");
        }
    });
}

#[test]
fn root_spellings_are_kept_as_find_prints_them() {
    let t = Tree::new();
    t.file(b"d/x", b"x");
    t.file(b"d/sub/y", b"y");
    t.link(b"via-link", "d");
    let roots = ["d", "d/", "d//", "./d", "via-link", "via-link/", "."];
    each_binary(|env| {
        for root in roots {
            let out = run(env.command().arg(root).current_dir(t.root()));
            let want = gnu_sums(t.root(), root, "");
            assert_eq!(show(&out.stdout), show(&want), "root {root:?}");
        }
    });
}

#[test]
fn a_path_given_twice_is_listed_twice_like_find() {
    let t = Tree::new();
    t.file(b"d/x", b"x");
    let d = t.path(b"d");
    let expected = reference("-H", &[&d, &d]);
    each_binary(|env| {
        let out = env.run(&[], &[&d, &d]);
        assert_eq!(show(&out.stdout), show(&expected));
    });
}

#[test]
fn zero_and_tag_outputs_match_gnu() {
    let t = Tree::nasty();
    let z = gnu_sums(t.root(), t.root(), "-z");
    let tag = gnu_sums(t.root(), t.root(), "--tag");
    each_binary(|env| {
        let out = env.run(&["-z"], &[t.root()]);
        assert_eq!(out.stdout, z, "-z");
        let out = env.run(&["--tag"], &[t.root()]);
        assert_eq!(show(&out.stdout), show(&tag), "--tag");
    });
}

#[test]
fn manifests_round_trip_through_gnu_and_ourselves() {
    let t = Tree::nasty();
    each_binary(|env| {
        let dir = tempfile::tempdir().unwrap();
        for style in [None, Some("--tag")] {
            let opts: Vec<&str> = style.into_iter().collect();
            let made = env.run(&opts, &[t.root()]);
            assert_eq!(made.status.code(), Some(0));
            let manifest = dir.path().join("SUMS");
            std::fs::write(&manifest, &made.stdout).unwrap();
            let gnu = run(Command::new("sha256sum")
                .args(["-c", "--strict"])
                .arg(&manifest));
            assert_eq!(
                gnu.status.code(),
                Some(0),
                "GNU rejects our {style:?} manifest: {}",
                show(&gnu.stderr)
            );
            let ours = env.run(&["-c", "--strict"], &[&manifest]);
            assert_eq!(show(&ours.stdout), show(&gnu.stdout), "{style:?}");
            assert_eq!(show(&ours.stderr), "");
            assert_eq!(ours.status.code(), Some(0));
        }
    });
}

/// Run GNU and `bin` (a copy of `env`'s binary that `nobody` can run) on one
/// manifest with the same switches, as `nobody` (so an unreadable file is
/// real), in `dir`; compare everything.
fn same_as_gnu_check(env: &TestEnv, bin: &Path, dir: &Path, manifest: &str, switches: &[&str]) {
    let gnu = run(as_nobody(Path::new("sha256sum"))
        .arg("-c")
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
        show(&gnu.stderr).replace("sha256sum:", &format!("{}:", env.name())),
        "stderr, {ctx}"
    );
    assert_eq!(ours.status.code(), gnu.status.code(), "status, {ctx}");
}

#[test]
fn check_mode_matches_gnu_verdicts_messages_and_statuses() {
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
    each_binary(|env| {
        let (_dir, bin) = env.nobody_copy();
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
                same_as_gnu_check(env, &bin, t.root(), name, switches);
            }
        }
        same_as_gnu_check(env, &bin, t.root(), "no-such-manifest", &[]);
    });
}

#[test]
fn check_reads_the_manifest_from_stdin() {
    let t = Tree::new();
    let f = t.file(b"f", b"x");
    let sums = sha256sum(&[&f]);
    each_binary(|env| {
        let out = run_with_input(env.command().args(["-c", "-"]), &sums);
        assert_eq!(show(&out.stdout), format!("{}: OK\n", f.display()));
        assert_eq!(out.status.code(), Some(0));
    });
}

#[test]
fn standard_input_is_hashed_once_and_kept_out_of_the_tree() {
    let t = Tree::new();
    t.file(b"d/x", b"x");
    let d = t.path(b"d");
    let input = t.file(b"input", b"from stdin");
    let gnu_stdin = show(&sha256sum(&[&input])).replace(&*input.to_string_lossy(), "-");
    let last = |s: &str| s.lines().last().unwrap().to_owned();
    each_binary(|env| {
        let with_stdin = |args: &[&OsStr]| {
            run_with_stdin(
                env.command().args(args),
                Stdio::from(std::fs::File::open(&input).unwrap()),
            )
        };
        let out = with_stdin(&[OsStr::new("--tree"), OsStr::new("-"), d.as_os_str()]);
        let alone = env.run(&["--tree"], &[&d]);
        let text = show(&out.stdout);
        assert!(text.starts_with(&gnu_stdin), "{text}");
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
    });
}

#[test]
fn json_agrees_with_the_text_output() {
    let t = Tree::nasty();
    each_binary(|env| {
        let text = env.run(&[], &[t.root()]);
        let out = env.run(&["--json", "-L"], &[t.root()]);
        assert_eq!(out.status.code(), Some(1), "loops under -L are errors");
        let report: Report = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report.schema_version, SCHEMA_VERSION);
        assert_eq!(report.tool, env.name());
        // Rebuild GNU lines from the JSON and compare with the -L text output.
        let follow_text = env.run(&["-L"], &[t.root()]);
        let mut rebuilt = Vec::new();
        for f in &report.files {
            let path = f.path.to_bytes().unwrap();
            let mut d = [0u8; 32];
            d.copy_from_slice(&hash_core::report::unhex(&f.sha256).unwrap());
            hash_core::output::write_line(&mut rebuilt, &Default::default(), &d, &path).unwrap();
        }
        assert_eq!(show(&rebuilt), show(&follow_text.stdout));
        assert!(
            report.files.iter().any(|f| f.path.path_hex.is_some()),
            "invalid UTF-8 kept"
        );
        // The directory loop (deep/a/up) and the two symbolic links that
        // lead to each other are all loops.
        let kinds: Vec<&str> = report.errors.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["loop", "loop", "loop"]);
        let links = report
            .errors
            .iter()
            .filter(|e| e.message.contains("symbolic links"));
        assert_eq!(links.count(), 2, "{:?}", report.errors);
        assert_eq!(report.summary.files as usize, report.files.len());
        assert_eq!(report.summary.errors, 3);
        assert_eq!(
            report.summary.bytes,
            report.files.iter().map(|f| f.size).sum::<u64>()
        );
        // Without -L: links and the FIFO are listed as skipped.
        let out = env.run(&["--json"], &[t.root()]);
        let report: Report = serde_json::from_slice(&out.stdout).unwrap();
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
    });
}

/// `--json-lines` output, parsed line by line.
fn json_lines(stdout: &[u8]) -> Vec<Line> {
    let text = std::str::from_utf8(stdout).expect("JSON is UTF-8");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn json_lines_hold_the_document_one_entry_a_line() {
    let t = Tree::nasty();
    let gnu = reference("-H", &[t.root()]);
    each_binary(|env| {
        // Rebuilt as GNU lines, the files are sha256sum's, in its order.
        for opts in env.variants() {
            let args = [&opts[..], &["--json-lines"]].concat();
            let out = env.run(&args, &[t.root()]);
            assert_eq!(out.status.code(), Some(0), "{opts:?}");
            let mut rebuilt = Vec::new();
            for line in json_lines(&out.stdout) {
                if let Line::File(f) = line {
                    let mut d = [0u8; 32];
                    d.copy_from_slice(&hash_core::report::unhex(&f.sha256).unwrap());
                    let path = f.path.to_bytes().unwrap();
                    hash_core::output::write_line(&mut rebuilt, &Default::default(), &d, &path)
                        .unwrap();
                }
            }
            assert_eq!(show(&rebuilt), show(&gnu), "{opts:?}");
        }
        // Entry for entry the --json document, with the loops of -L as errors.
        let doc = env.run(&["--json", "--tree", "-L"], &[t.root()]);
        let doc: Report = serde_json::from_slice(&doc.stdout).unwrap();
        let out = env.run(&["--json-lines", "--tree", "-L"], &[t.root()]);
        assert_eq!(out.status.code(), Some(1), "loops under -L are errors");
        let mut lines = json_lines(&out.stdout);
        let Some(Line::Summary(end)) = lines.pop() else {
            panic!("the last line is not the summary: {}", show(&out.stdout));
        };
        let (mut files, mut errors, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
        for line in lines {
            match line {
                Line::File(f) => files.push(f),
                Line::Error(e) => errors.push(e),
                Line::Skipped(s) => skipped.push(s),
                Line::Summary(_) => panic!("a second summary"),
            }
        }
        assert_eq!(files, doc.files);
        assert_eq!(errors, doc.errors);
        assert_eq!(errors.len(), 3);
        assert_eq!(skipped, doc.skipped);
        assert_eq!(
            (end.tool, end.schema_version),
            (doc.tool, doc.schema_version)
        );
        assert_eq!(end.tree_sha256, doc.tree_sha256);
        assert!(end.tree_sha256.is_some());
        let counts = |s: &JsonSummary| (s.files, s.bytes, s.errors, s.skipped, s.jobs);
        assert_eq!(counts(&end.totals), counts(&doc.summary));
        // GNU's own styles cannot be written as JSON.
        for other in ["--tag", "-z", "--json", "-c"] {
            let out = env.run(&["--json-lines", other], &[t.root()]);
            assert_eq!(out.status.code(), Some(2), "{other}");
            assert!(out.stdout.is_empty(), "{other}");
        }
    });
}

/// The `# tree-sha256` digest `env`'s binary prints for `root` with `extra`.
fn tree_digest(env: &TestEnv, root: &Path, extra: &[&str]) -> String {
    let mut opts = extra.to_vec();
    opts.push("--tree");
    let out = env.run(&opts, &[root]);
    let text = show(&out.stdout);
    let last = text.lines().last().unwrap().to_owned();
    last.strip_prefix("# tree-sha256 ")
        .expect("a tree line")
        .to_owned()
}

#[test]
fn the_tree_digest_tracks_content_names_and_layout_not_the_root() {
    // Each binary gets a tree of its own: the test renames and edits it.
    each_binary(|env| {
        let parent = Tree::new();
        let a = parent.path(b"one");
        parent.file(b"one/x/a", b"a");
        parent.file(b"one/b", b"b");
        parent.file(b"one/new\nline", b"n");
        let base = tree_digest(env, &a, &[]);
        for opts in env.variants() {
            assert_eq!(tree_digest(env, &a, &opts), base, "{opts:?}");
        }
        std::fs::rename(&a, parent.path(b"renamed-root")).unwrap();
        let a = parent.path(b"renamed-root");
        let digest = |dir: &Path| tree_digest(env, dir, &[]);
        assert_eq!(digest(&a), base, "the root's name is not covered");
        std::fs::write(a.join("b"), b"c").unwrap();
        let edited = digest(&a);
        assert_ne!(edited, base, "one-byte edit");
        std::fs::write(a.join("b"), b"b").unwrap();
        assert_eq!(digest(&a), base);
        std::fs::rename(a.join("b"), a.join("c")).unwrap();
        assert_ne!(digest(&a), base, "rename");
        std::fs::rename(a.join("c"), a.join("x/b")).unwrap();
        assert_ne!(digest(&a), base, "move to another directory");
        std::fs::rename(a.join("x/b"), a.join("b")).unwrap();
        assert_eq!(digest(&a), base);
        // The comment line keeps the manifest checkable by GNU.
        let out = env.run(&["--tree"], &[&a]);
        let m = parent.path(b"SUMS");
        std::fs::write(&m, &out.stdout).unwrap();
        let gnu = run(Command::new("sha256sum").args(["-c", "--strict"]).arg(&m));
        assert_eq!(gnu.status.code(), Some(0), "{}", show(&gnu.stderr));
    });
}

#[test]
fn a_file_moved_between_two_roots_changes_the_tree_digest() {
    // In A and C: r1/x and r2/y; in B: r2/x and r1/y. The same relative
    // paths and contents; only the places differ. Run inside each, so that
    // the printed paths are the same but for the move.
    let t = Tree::new();
    for top in ["A", "C"] {
        t.file(format!("{top}/r1/x").as_bytes(), b"one");
        t.file(format!("{top}/r2/y").as_bytes(), b"two");
    }
    t.file(b"B/r2/x", b"one");
    t.file(b"B/r1/y", b"two");
    each_binary(|env| {
        let digest = |top: &str| {
            let mut cmd = env.command();
            cmd.current_dir(t.path(top.as_bytes()));
            let out = run(cmd.args(["--tree", "r1", "r2"]));
            show(&out.stdout).lines().last().unwrap().to_owned()
        };
        let a = digest("A");
        assert!(a.starts_with("# tree-sha256 "), "{a}");
        assert_eq!(a, digest("C"), "the same layout elsewhere");
        assert_ne!(a, digest("B"), "x and y moved between the roots");
    });
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
    let mut nul = a.clone().into_os_string().into_encoded_bytes();
    nul.push(0);
    nul.extend_from_slice(b.as_os_str().as_encoded_bytes());
    let list0 = lists.file(b"list-nul", &nul);
    each_binary(|env| {
        let out = env.run(&["--files-from"], &[&list]);
        assert_eq!(show(&out.stdout), show(&want));
        let out = env.run_os(&[
            OsStr::new("--files-from"),
            list0.as_os_str(),
            OsStr::new("-0"),
        ]);
        assert_eq!(show(&out.stdout), show(&want));
    });
}
