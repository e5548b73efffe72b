//! Faults and hostile input: what every binary promises when its input, its
//! output or its environment fails. Each test is one promise, bounded in time
//! (every child is waited for with a deadline, `testenv::process`), and says
//! what is promised: the exit status, what stderr names, and that no digest
//! printed is wrong (expected digests come from GNU `sha256sum`).
//!
//! The promises tested here:
//! - a closed stdout or stdin, and a full disk behind stdout, fail as GNU does;
//! - a reader that leaves early (`| head`) ends the run quietly, in hash and
//!   check mode alike, with the status of what was done until then;
//! - an input without line ends (`-c /dev/zero`) is refused by name, not read
//!   until memory runs out; a manifest is checked as it is read, so a verdict comes
//!   before the manifest ends;
//! - a file truncated while it is read is reported on every data path, never a
//!   digest of what was left; a path of 64 KiB is read back by `-c` and
//!   `--files-from`;
//! - paths longer than `PATH_MAX` are hashed by every binary;
//! - a low `ulimit -n` or `ulimit -v` loses no file and crashes nothing;
//! - a signal while `hash-procs` starts its workers aborts no worker;
//! - files on a network mount (sshfs) hash as they do locally, and a mount
//!   that dies mid-run fails the files it held, by name, and the run ends
//!   (no digest is printed for a file not read to its end).
//!
//! The same promises for other faults are kept beside the code they concern:
//! FIFOs, sockets, devices, symlink loops, unreadable files and directories
//! as an unprivileged user, missing paths (`conformance.rs`); files that
//! vanish mid-run and killed or crashing workers (`hash-procs/tests/workers.rs`);
//! a panicking hashing thread (`panic.rs`); shards that are incomplete,
//! foreign, changed or reordered (`scaleout.rs`); options no mode may drop
//! (`engine_options.rs`).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

use testenv::*;

/// `sh -c SCRIPT` with the binary as `$0` and `args` after it.
fn sh(script: &str, bin: &Path, args: &[&OsStr]) -> std::process::Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).arg(bin).args(args);
    run(&mut cmd)
}

/// GNU `sha256sum`'s first message for the same fault, with our name.
fn gnu_first_message(script: &str, args: &[&OsStr], name: &str) -> String {
    let out = sh(script, Path::new("sha256sum"), args);
    let first = show(&out.stderr)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    first.replacen("sha256sum", name, 1)
}

#[test]
fn closed_standard_streams_and_a_full_disk_fail_as_gnu_does() {
    let t = Tree::new();
    let f = t.file(b"f", b"some data\n");
    let file = [f.as_os_str()];
    let cases: [(&str, &[&OsStr]); 4] = [
        // stdout closed, with output to write: GNU's "write error".
        (r#"exec "$0" "$1" >&-"#, &file),
        // stdin closed, hashed as '-' and as a manifest.
        (r#"exec "$0" <&-"#, &[]),
        (r#"exec "$0" -c <&-"#, &[]),
        // A full disk behind stdout.
        (r#"exec "$0" "$1" >/dev/full"#, &file),
    ];
    each_binary(|env| {
        for (script, args) in cases {
            let out = sh(script, env.path(), args);
            assert_eq!(out.status.code(), Some(1), "{script}");
            // GNU's words, and no more lines (on a full disk GNU says only
            // "write error"; we add the reason).
            let want = gnu_first_message(script, args, env.name());
            let err = show(&out.stderr);
            assert!(
                err.starts_with(&want),
                "{script}: {err} is not GNU's {want}"
            );
            assert_eq!(err.lines().count(), 1, "{script}: {err}");
        }
        // /dev/null is no closed stream, however it was opened: Python's
        // subprocess.DEVNULL opens it read-write, as the Rust runtime opens
        // its stand-in for a closed stream.
        let quiet = [
            r#"exec "$0" "$1" >/dev/null </dev/null"#,
            r#"exec "$0" "$1" 1<>/dev/null 0<>/dev/null"#,
        ];
        for script in quiet {
            let out = sh(script, env.path(), &file);
            let got = (out.status.code(), show(&out.stderr));
            assert_eq!(got, (Some(0), String::new()), "{script}");
        }
        let empty = show(&sha256sum(&[Path::new("/dev/null")]))[..64].to_owned();
        for script in [r#"exec "$0" </dev/null"#, r#"exec "$0" 0<>/dev/null"#] {
            let out = sh(script, env.path(), &[]);
            assert_eq!(show(&out.stdout), format!("{empty}  -\n"), "{script}");
        }
        // Nothing to write: a closed stdout is no error (GNU: the same).
        let sums = t.file(b"sums", &sha256sum(&[&f]));
        let script = r#"exec "$0" -c --status "$1" >&-"#;
        let out = sh(script, env.path(), &[sums.as_os_str()]);
        assert_eq!(
            (out.status.code(), show(&out.stderr)),
            (Some(0), String::new())
        );
    });
}

#[test]
fn help_version_and_generated_files_fail_on_a_full_disk_as_gnu_does() {
    each_binary(|env| {
        for what in [
            "--help",
            "--version",
            "--generate completions-bash",
            "--generate man",
        ] {
            // GNU: `sha256sum --help >/dev/full` says "write error" and exits
            // 1, and so does `>&-` (its "Bad file descriptor").
            for to in [">/dev/full", ">&-"] {
                let gnu = format!(r#"exec "$0" --help {to}"#);
                let want = gnu_first_message(&gnu, &[], env.name());
                let script = format!(r#"exec "$0" {what} {to}"#);
                let out = sh(&script, env.path(), &[]);
                let err = show(&out.stderr);
                assert_eq!(out.status.code(), Some(1), "{script}: {err}");
                assert!(
                    err.starts_with(&want),
                    "{script}: {err} is not GNU's {want}"
                );
                assert_eq!(err.lines().count(), 1, "{script}: {err}");
            }
            // A reader that leaves early is no error, as in a hashing run
            // (the subshell reports the binary's own status).
            let script = format!(r#"("$0" {what}; echo "status $?" >&2) | true"#);
            let out = sh(&script, env.path(), &[]);
            assert_eq!(show(&out.stderr), "status 0\n", "{script}");
        }
    });
}

#[test]
fn a_reader_that_leaves_early_ends_the_run_quietly_with_the_status_so_far() {
    let t = Tree::new();
    for i in 0..3000 {
        t.file(format!("f{i:05}").as_bytes(), b"x");
    }
    let sums = t.root().join("..").join(format!(
        "{}.sums",
        t.root().file_name().unwrap().to_string_lossy()
    ));
    let good = reference("-H", &[t.root()]);
    std::fs::write(&sums, &good).unwrap();
    // The same manifest with the first digest wrong.
    let mut bad = good.clone();
    bad[0] = if bad[0] == b'0' { b'1' } else { b'0' };
    let bad_sums = sums.with_extension("bad");
    std::fs::write(&bad_sums, &bad).unwrap();
    each_binary(|env| {
        for (manifest, status) in [(&sums, 0), (&bad_sums, 1)] {
            let mut child = env
                .command()
                .arg("-c")
                .arg(manifest)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut first = String::new();
            std::io::BufRead::read_line(
                &mut std::io::BufReader::new(child.stdout.take().unwrap()),
                &mut first,
            )
            .unwrap();
            let verdict = if status == 0 { "OK" } else { "FAILED" };
            assert!(first.ends_with(&format!("f00000: {verdict}\n")), "{first}");
            // The reader is gone: the check ends, quietly.
            let out = wait_output(child, env.name());
            let err = show(&out.stderr);
            assert!(!err.contains("Broken pipe"), "{err}");
            assert_eq!(out.status.code(), Some(status), "{manifest:?}: {err}");
        }
    });
    let _ = std::fs::remove_file(&sums);
    let _ = std::fs::remove_file(&bad_sums);
}

#[test]
fn an_input_without_line_ends_is_refused_by_name() {
    let t = Tree::new();
    let f = t.file(b"f", b"data");
    // A manifest's good line, then one line far too long: the good one is
    // still checked, the rest refused.
    let mut manifest = sha256sum(&[&f]);
    manifest.extend(std::iter::repeat_n(b'x', hash_core::stdio::MAX_LINE + 1));
    manifest.extend(b"\n");
    let long = t.file(b"long.sums", &manifest);
    each_binary(|env| {
        for args in [
            vec!["-c", "/dev/zero"],
            vec!["--files-from", "/dev/zero"],
            vec!["-c", long.to_str().unwrap()],
        ] {
            let out = env.run(&args, &[]);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let err = show(&out.stderr);
            let name = args[1];
            let want = format!("{}: {name}: line ", env.name());
            assert!(
                err.lines()
                    .any(|l| l.starts_with(&want) && l.contains("longer than")),
                "{args:?}: {err}"
            );
        }
        let out = env.run(&["-c", long.to_str().unwrap()], &[]);
        assert!(
            show(&out.stdout).ends_with("/f: OK\n"),
            "{}",
            show(&out.stdout)
        );
    });
}

#[test]
fn check_mode_answers_before_its_manifest_ends() {
    use std::io::{BufRead, Write};
    let t = Tree::new();
    let f = t.file(b"f", b"data\n");
    let line = sha256sum(&[&f]);
    each_binary(|env| {
        let mut child = env
            .command()
            .arg("-c")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The first batch's worth of lines, and the manifest left open: a check that
        // read the whole manifest first would print nothing until it ends.
        let mut stdin = child.stdin.take().unwrap();
        for _ in 0..16 {
            stdin.write_all(&line).unwrap();
        }
        stdin.flush().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(stdout).lines() {
                if tx.send(l.unwrap()).is_err() {
                    break;
                }
            }
        });
        let first = rx
            .recv_timeout(hang_limit())
            .expect("a verdict while the manifest is still open");
        assert!(first.ends_with("/f: OK"), "{first}");
        drop(stdin);
        let out = wait_output(child, "check mode on a manifest that was left open");
        assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
        assert_eq!(rx.iter().count(), 15, "every line checked once");
    });
}

#[test]
fn a_file_truncated_while_it_is_read_is_reported_on_every_data_path() {
    // One file: the hook holds every file it sees until the test lets it go.
    let t = Tree::new();
    let size = 8 << 20;
    let big = t.file(b"big", &pattern(size));
    each_binary(|env| {
        for path in ["read", "map", "auto"] {
            std::fs::write(&big, pattern(size)).unwrap();
            // The hasher says when it has opened a file (an empty file named by its
            // size appears in `signals`), then waits before reading it until that
            // file is gone: the truncation lands in that wait, after the size was
            // taken.
            let signals = tempfile::tempdir().unwrap();
            let watch = OpenWatch::on(signals.path(), rustix::fs::inotify::WatchFlags::CREATE);
            let opened = signals.path().join(format!("stamped-{size}"));
            let child = env
                .command()
                .args(["--data-path", path])
                .arg(t.root())
                .env("HASHRACE_TEST_STAMP_DELAY_MS", "60000")
                .env("HASHRACE_TEST_STAMPED_DIR", signals.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            while !opened.exists() {
                watch.wait("the big file to be opened");
            }
            let f = std::fs::OpenOptions::new().write(true).open(&big).unwrap();
            f.set_len(4096).unwrap();
            drop(f);
            std::fs::remove_file(&opened).unwrap();
            let out = wait_output(child, "a run with a file truncated");
            let err = show(&out.stderr);
            let said = format!(
                "{}: {}: file shrank while it was being read\n",
                env.name(),
                big.display()
            );
            assert_eq!(err, said, "--data-path {path}");
            assert_eq!(out.status.code(), Some(1), "--data-path {path}: {err}");
            assert_eq!(show(&out.stdout), "", "no digest, --data-path {path}");
        }
    });
}

#[test]
fn paths_longer_than_path_max_are_hashed_by_every_binary() {
    let t = Tree::new();
    // 30 directories of 200-odd bytes: a path of over 6,000 bytes, made
    // with relative steps (the shell's own path would be too long).
    let mut rel = Vec::new();
    for i in 0..30 {
        rel.extend(std::iter::repeat_n(b'd', 200));
        rel.extend(format!("{i}/").as_bytes());
    }
    rel.extend(b"file");
    assert!(t.root().as_os_str().len() + rel.len() > 6000);
    make_deep(t.root(), &rel, b"deep content\n");
    t.file(b"top", b"top\n");
    // GNU cannot open the deep path itself: its digest comes from the same
    // content at a short path.
    let short = t.file(b"short", b"deep content\n");
    let deep_digest = show(&sha256sum(&[&short]))[..64].to_owned();
    std::fs::remove_file(&short).unwrap();
    each_binary(|env| {
        for variant in env.variants() {
            let out = env.run(&variant, &[t.root()]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{variant:?}: {}",
                show(&out.stderr)
            );
            let text = show(&out.stdout);
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 2, "{variant:?}: {text}");
            assert!(
                lines[0].starts_with(&deep_digest),
                "{variant:?}: {}",
                lines[0]
            );
            assert!(lines[0].ends_with("/file"));
            assert!(lines[1].ends_with("/top"));
        }
    });
}

#[test]
fn a_path_of_64_kib_is_read_back_by_check_and_files_from() {
    let t = Tree::new();
    // 300 directories of 220-odd bytes, one of them with a newline and a
    // backslash, so that its line is escaped as well as long.
    let mut rel = Vec::new();
    for i in 0..300 {
        rel.extend(std::iter::repeat_n(b'd', 220));
        if i == 7 {
            rel.extend(b"\\n\n");
        }
        rel.extend(format!("{i}/").as_bytes());
    }
    rel.extend(b"file");
    assert!(rel.len() > 64 * 1024);
    make_deep(t.root(), &rel, b"deep content\n");
    let lists = tempfile::tempdir().unwrap();
    let sums = lists.path().join("SUMS");
    let list = lists.path().join("LIST");
    each_binary(|env| {
        let out = env.run_os(&[t.root().as_os_str()]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
        assert!(out.stdout.len() > 64 * 1024);
        std::fs::write(&sums, &out.stdout).unwrap();
        let check = env.run_os(&["-c".as_ref(), sums.as_os_str()]);
        assert_eq!(check.status.code(), Some(0), "{}", show(&check.stderr));
        assert!(show(&check.stdout).ends_with("/file: OK\n"));
        // Its own --list -z, read back with --files-from -0, gives the same lines.
        let listed = env.run_os(&["--list".as_ref(), "-z".as_ref(), t.root().as_os_str()]);
        assert_eq!(listed.status.code(), Some(0), "{}", show(&listed.stderr));
        std::fs::write(&list, &listed.stdout).unwrap();
        let from = env.run_os(&["--files-from".as_ref(), list.as_os_str(), "-0".as_ref()]);
        assert_eq!(from.status.code(), Some(0), "{}", show(&from.stderr));
        assert_eq!(show(&from.stdout), show(&out.stdout));
    });
}

/// Create `rel` (directories ending in a file) below `root` one step at a
/// time, each relative to the last, as no single path could.
fn make_deep(root: &Path, rel: &[u8], content: &[u8]) {
    use rustix::fs::{mkdirat, openat, Mode, OFlags};
    let mut dir = rustix::fs::open(root, OFlags::DIRECTORY, Mode::empty()).unwrap();
    let parts: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    let (file, dirs) = parts.split_last().unwrap();
    for d in dirs {
        mkdirat(&dir, *d, Mode::from_raw_mode(0o755)).unwrap();
        dir = openat(&dir, *d, OFlags::DIRECTORY, Mode::empty()).unwrap();
    }
    let flags = OFlags::WRONLY | OFlags::CREATE;
    let f = openat(&dir, *file, flags, Mode::from_raw_mode(0o644)).unwrap();
    rustix::io::write(&f, content).unwrap();
}

/// The binary run under `ulimit -LETTER LIMIT` with `args`.
fn limited(bin: &Path, letter: char, limit: u64, args: &[&OsStr]) -> std::process::Output {
    let script = format!(r#"ulimit -{letter} {limit} && exec "$0" "$@""#);
    sh(&script, bin, args)
}

/// Asserts that `err`, the stderr of `env`'s run `what`, says nothing but
/// that fewer workers than asked could start (said once, plainly).
fn says_only_fewer_workers(env: &testenv::TestEnv, err: &str, what: &str) {
    let fewer = format!("{}: could start only ", env.name());
    for line in err.lines() {
        assert!(line.starts_with(&fewer), "{what}: {err}");
    }
}

#[test]
fn a_low_open_file_limit_loses_no_file() {
    let t = Tree::new();
    for i in 0..2000 {
        t.file(
            format!("d{}/f{i}", i % 20).as_bytes(),
            format!("{i}").as_bytes(),
        );
    }
    let want = reference("-H", &[t.root()]);
    each_binary(|env| {
        for limit in [128, 32] {
            for variant in env.variants() {
                let mut args: Vec<&OsStr> = variant.iter().map(OsStr::new).collect();
                args.push(t.root().as_os_str());
                let out = limited(env.path(), 'n', limit, &args);
                let err = show(&out.stderr);
                assert_eq!(out.status.code(), Some(0), "-n {limit} {variant:?}: {err}");
                // No file is lost to the limit.
                says_only_fewer_workers(env, &err, &format!("-n {limit} {variant:?}"));
                assert!(out.stdout == want, "-n {limit} {variant:?}: output differs");
            }
        }
    });
}

#[test]
fn a_low_address_space_limit_runs_with_the_threads_it_can_start() {
    let t = Tree::new();
    for i in 0..200 {
        t.file(format!("f{i}").as_bytes(), format!("{i}").as_bytes());
    }
    let want = reference("-H", &[t.root()]);
    each_binary(|env| {
        let mut args: Vec<&OsStr> = Vec::new();
        if env.is_parallel() {
            args.extend([OsStr::new("-j"), OsStr::new("32")]);
        }
        args.push(t.root().as_os_str());
        let out = limited(env.path(), 'v', 204_800, &args);
        let err = show(&out.stderr);
        // Never a panic (101) or an abort (134): the run ends normally...
        assert_eq!(out.status.code(), Some(0), "{err}");
        // ...and every file is there, with GNU's digest.
        assert!(out.stdout == want, "output differs: {err}");
        says_only_fewer_workers(env, &err, "-v 204800 -j 32");
    });
}

/// The lowest `ulimit -v` (KiB, to 256 KiB) under which `bin --version`
/// runs: what loading the binary and its libraries takes on this machine.
fn address_space_to_start(bin: &Path) -> u64 {
    let starts = |kib: u64| {
        limited(bin, 'v', kib, &[OsStr::new("--version")])
            .status
            .success()
    };
    let (mut low, mut high) = (1024, 1 << 21);
    assert!(starts(high), "{} does not start under 2 GiB", bin.display());
    while high - low > 256 {
        let mid = (low + high) / 2;
        if starts(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    high
}

#[test]
fn a_tight_address_space_limit_loses_no_file_and_aborts_nothing() {
    // 8 MiB above what starting takes: room for two threads and their
    // buffers, not for every buffer a run would like (hash-async's rings
    // asked for 8 MiB of read buffers, and aborted when they got it).
    let t = Tree::new();
    for i in 0..200 {
        t.file(format!("f{i}").as_bytes(), format!("{i}").as_bytes());
    }
    t.file(b"big1", &vec![7u8; 3_000_000]);
    t.file(b"big2", &vec![9u8; 1 << 20]);
    let want = reference("-H", &[t.root()]);
    each_binary(|env| {
        let limit = address_space_to_start(env.path()) + 8 * 1024;
        let mut args: Vec<&OsStr> = Vec::new();
        if env.is_parallel() {
            args.extend([OsStr::new("-j"), OsStr::new("2")]);
        }
        args.push(t.root().as_os_str());
        let out = limited(env.path(), 'v', limit, &args);
        let err = show(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "-v {limit}: {err}");
        assert!(out.stdout == want, "-v {limit}: output differs: {err}");
        says_only_fewer_workers(env, &err, &format!("-v {limit} -j 2"));
    });
}

/// The first child of process `pid`, if it has one yet.
fn first_child(pid: u32) -> Option<u32> {
    let list = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    list.split_whitespace().next()?.parse().ok()
}

#[test]
fn a_signal_while_hash_procs_starts_its_workers_aborts_no_worker() {
    let t = Tree::new();
    for i in 0..200 {
        t.file(format!("f{i}").as_bytes(), b"x");
    }
    let bin = binary("hash-procs");
    // Run where a core file would land, to see that none does.
    let cwd = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let child = Command::new(&bin)
            .args(["-j", "64"])
            .arg(t.root())
            .current_dir(cwd.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // As soon as the first worker exists, the parent is still starting
        // the other 63: that is when the signal must land. (A spin on
        // /proc with a 10 s deadline: a parent that finished first is a
        // round without.)
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let seen = loop {
            if first_child(pid).is_some() {
                break true;
            }
            if std::time::Instant::now() > deadline {
                break false;
            }
        };
        let signal = if round % 2 == 0 { "TERM" } else { "INT" };
        let _ = Command::new("kill")
            .args(["-s", signal, &pid.to_string()])
            .status();
        let out = wait_output(child, "hash-procs");
        let err = show(&out.stderr);
        assert!(!err.contains("fatal runtime error"), "round {round}: {err}");
        assert!(!err.contains("panicked"), "round {round}: {err}");
        if seen {
            use std::os::unix::process::ExitStatusExt;
            let ended = out.status.signal().is_some() || out.status.code().is_some();
            assert!(ended);
        }
    }
    let cores: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().flatten().collect();
    assert!(
        cores.is_empty(),
        "files left where the run started: {cores:?}"
    );
}

/// A source tree of a few small files and one large enough to be mapped
/// were it local, and its sshfs mount; `None` (after saying why) where this
/// machine cannot mount one.
fn network_tree(big: usize) -> Option<(Tree, testenv::sshfs::Sshfs)> {
    let t = Tree::new();
    t.file(b"a", b"small\n");
    t.file(b"dir/b", &pattern(100_000));
    t.file(b"dir/big", &pattern(big));
    mounted(t)
}

/// GNU's output for tree `t` as it reads through its mount `fs` (the paths
/// under the mount point).
fn reference_mounted(t: &Tree, fs: &testenv::sshfs::Sshfs) -> String {
    show(&reference("-H", &[t.root()])).replace(
        &t.root().display().to_string(),
        &fs.root().display().to_string(),
    )
}

/// `t` and its sshfs mount; `None` (after saying why) where none can be made.
fn mounted(t: Tree) -> Option<(Tree, testenv::sshfs::Sshfs)> {
    match testenv::sshfs::Sshfs::mount(t.root()) {
        Ok(fs) => Some((t, fs)),
        Err(why) => {
            eprintln!("skipped: no network mount here: {why}");
            None
        }
    }
}

#[test]
fn files_on_a_network_mount_hash_as_they_do_locally() {
    let Some((t, fs)) = network_tree(3 << 20) else {
        return;
    };
    let want = reference_mounted(&t, &fs);
    each_binary(|env| {
        for variant in env.variants() {
            let out = env.run(&variant, &[fs.root()]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{variant:?}: {}",
                show(&out.stderr)
            );
            assert_eq!(show(&out.stdout), want, "{variant:?}");
        }
    });
}

#[test]
fn a_network_mount_that_dies_mid_run_fails_its_files_and_the_run_ends() {
    each_binary(|env| {
        let Some((t, mut fs)) = network_tree(128 << 20) else {
            return;
        };
        let local = show(&reference("-H", &[t.root()]));
        // The server opens the file when the hasher does: then the client
        // dies, and the mount with it.
        let child = start_until_opened(env, &[], fs.root(), &t.path(b"dir/big"));
        fs.kill_client();
        let out = wait_output_within(child, env.name(), std::time::Duration::from_secs(60));
        let err = show(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let big = fs.path("dir/big").display().to_string();
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("{}: {big}: ", env.name()))),
            "stderr names {big}: {err}"
        );
        // What was printed is right, and nothing is printed for the file
        // that was not read to its end.
        let root = fs.root().display().to_string();
        for line in show(&out.stdout).lines() {
            assert!(!line.ends_with("/dir/big"), "a digest for dir/big: {line}");
            let local_line = line.replace(&root, &t.root().display().to_string());
            assert!(local.lines().any(|l| l == local_line), "wrong: {line}");
        }
    });
}

/// Start `env`'s binary with `opts` on `root`, output piped, and return once
/// `watched` (the file behind the mount) has been opened: by then the run
/// has walked and is reading.
fn start_until_opened(
    env: &TestEnv,
    opts: &[&str],
    root: &Path,
    watched: &Path,
) -> std::process::Child {
    let opened = OpenWatch::new(watched);
    let child = env
        .command()
        .args(opts)
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    opened.wait(&format!("the server to open {}", watched.display()));
    child
}

/// Threads and resident KiB of process `pid` and its descendants (a
/// `hash-procs` parent and its workers), from `/proc`.
fn tree_tasks_and_rss(pid: u32) -> (usize, u64) {
    let (mut tasks, mut rss) = (0, 0);
    let mut pending = vec![pid];
    while let Some(pid) = pending.pop() {
        let Ok(list) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue; // gone meanwhile
        };
        for task in list.flatten() {
            tasks += 1;
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            pending.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        rss += status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    (tasks, rss)
}

/// A storage stall: the server stops answering for 2 s while a run reads
/// (`SIGSTOP`, as a network that hangs). Nothing completes meanwhile, so the
/// in-flight policy has nothing to grow on: the readers and memory stay
/// bounded, and once the server answers the run ends with every file right.
#[test]
fn a_stalled_server_grows_nothing_and_loses_nothing() {
    each_parallel_binary_on_a_mount(400, |env, t, fs, want| {
        // The server stops when it opens the first file in name order,
        // which every strategy reads among its first: the walk is done and
        // the reads have begun.
        let child = start_until_opened(env, &["--stats"], fs.root(), &t.path(b"d0/f0"));
        fs.pause();
        // The stall is what is tested: its length is the point, not a guess
        // at how long something takes.
        std::thread::sleep(std::time::Duration::from_secs(2));
        let (tasks, rss_kib) = tree_tasks_and_rss(child.id());
        fs.resume();
        let out = wait_output(child, env.name());
        let err = show(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(show(&out.stdout), want);
        // At most 128 reads in flight (threads, workers, or a ring's kernel
        // workers), and a few threads besides.
        assert!(tasks <= 128 + 16, "{tasks} threads during the stall");
        assert!(
            rss_kib < 256 * 1024,
            "{rss_kib} KiB resident during the stall"
        );
        let (line, depth) = testenv::in_flight(&err);
        let depth = depth.unwrap_or_else(|| panic!("no depth in {line}"));
        assert!(depth <= 128, "{line}");
    });
}

/// More files in flight than descriptors left, on a network file system:
/// every reader holds its file open for round trips there, so opens find no
/// descriptor (`EMFILE`). Such an open waits for another file to close; it
/// does not fail the file. (Before, `--max-in-flight 17` under `ulimit -n
/// 20` reported most of 300 files as "Too many open files" in every run.)
#[test]
fn a_depth_above_the_open_file_limit_loses_no_file_on_a_network() {
    each_parallel_binary_on_a_mount(300, |env, _, fs, want| {
        for variant in env.variants() {
            for depth in ["17", "64"] {
                let mut args: Vec<&OsStr> = variant.iter().map(OsStr::new).collect();
                args.extend([OsStr::new("--max-in-flight"), OsStr::new(depth)]);
                args.push(fs.root().as_os_str());
                let out = limited(env.path(), 'n', 20, &args);
                let err = show(&out.stderr);
                let what = format!("-n 20 {variant:?} --max-in-flight {depth}");
                assert_eq!(out.status.code(), Some(0), "{what}: {err}");
                assert!(show(&out.stdout) == want, "{what}: output differs");
                says_only_fewer_workers(env, &err, &what);
            }
        }
    });
}

/// Files on a network file system are read, never mapped, whatever
/// `--data-path` asks: `--stats` claims no data path that no file took.
/// (It said "data path: map" there.) On the local disk the same run says it,
/// so the test can see the line.
#[test]
fn stats_claim_no_data_path_a_network_file_did_not_take() {
    let t = Tree::new();
    t.file(b"big", &pattern(3 << 20));
    let Some((t, fs)) = mounted(t) else {
        return;
    };
    let want = reference_mounted(&t, &fs);
    each_binary(|env| {
        let args = ["--stats", "--data-path", "map"];
        let out = env.run(&args, &[fs.root()]);
        let err = show(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(show(&out.stdout), want);
        assert!(!err.contains("data path:"), "{err}");
        // hash-procs' workers choose for themselves; the parent says nothing.
        if env.name() != "hash-procs" {
            let local = show(&env.run(&args, &[t.root()]).stderr);
            assert!(local.contains("data path: map"), "{local}");
        }
    });
}

/// Run `test` for each parallel binary on a tree of `n` small files mounted
/// over sshfs, given GNU's output for the mount; skipped, saying why, where
/// no mount can be made.
fn each_parallel_binary_on_a_mount(
    n: usize,
    test: impl Fn(&testenv::TestEnv, &Tree, &testenv::sshfs::Sshfs, &str),
) {
    let Some((t, fs)) = network_small_files(n) else {
        return;
    };
    let want = reference_mounted(&t, &fs);
    each_binary(|env| {
        if env.is_parallel() {
            test(env, &t, &fs, &want);
        }
    });
}

/// A tree of `n` small files and its sshfs mount (`None` after saying why).
fn network_small_files(n: usize) -> Option<(Tree, testenv::sshfs::Sshfs)> {
    let t = Tree::new();
    for i in 0..n {
        t.file(format!("d{}/f{i}", i % 4).as_bytes(), &pattern(100 + i));
    }
    mounted(t)
}

#[test]
fn files_in_flight_follow_the_storage_or_the_user() {
    each_parallel_binary_on_a_mount(120, |env, t, fs, want| {
        let local = show(&reference("-H", &[t.root()]));
        // On the mount, the depth starts from the network hint (statfs says
        // FUSE), and a fixed depth is the user's; the output never changes.
        for (opts, says) in [
            (&["--stats"][..], "statfs: fuse"),
            (
                &["--stats", "--max-in-flight", "3"][..],
                "--max-in-flight 3",
            ),
        ] {
            let out = env.run(opts, &[fs.root()]);
            let err = show(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{opts:?}: {err}");
            assert_eq!(show(&out.stdout), want, "{opts:?}");
            let (line, _) = testenv::in_flight(&err);
            assert!(line.contains(says), "{opts:?}: {line}");
            // io_uring's rings hand every request to the kernel's workers on
            // a network file system, whose opens would block the submitter,
            // at any depth.
            if line.contains(" rings of ") || line.contains(" ring of ") {
                assert!(line.contains("handed to the kernel's workers"), "{line}");
            }
        }
        // `hash-async`'s blocking pool (no io_uring, or `--io pool`) follows
        // the same policy: reads on FUSE never say they wait, so without it
        // the pool kept its two tasks.
        if env.name() == "hash-async" {
            let out = env.run(&["--stats", "--io", "pool"], &[fs.root()]);
            let err = show(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{err}");
            assert_eq!(show(&out.stdout), want, "--io pool");
            let (line, _) = testenv::in_flight(&err);
            assert!(
                line.contains("statfs: fuse") && line.contains("blocking pool"),
                "{line}"
            );
        }
        // Locally, rings try each request on the submitting thread first.
        let out = env.run(&["--stats"], &[t.root()]);
        let err = show(&out.stderr);
        assert!(!err.contains("handed to the kernel's workers"), "{err}");
        // Locally, a fixed depth changes nothing in the output either.
        for n in ["1", "5"] {
            let out = env.run(&["--max-in-flight", n], &[t.root()]);
            assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
            assert_eq!(show(&out.stdout), local, "--max-in-flight {n}");
        }
    });
}
