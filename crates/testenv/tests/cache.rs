//! The metadata cache (`--cache`), held to its promises on every binary.
//!
//! Each test runs on each binary through [`each_binary`], with a cache of its
//! own, and says what is promised: the output is byte for byte what GNU
//! `find | sort | sha256sum` (or the same binary without the cache) prints,
//! an unchanged file is not even opened (inotify is the witness: it sees
//! opens through io_uring too), and when the cache file or its disk fails,
//! nothing printed is wrong. The counts a run reports with `--stats`
//! (`cache: N unchanged (not read), N hashed, N recorded, N changed while
//! read, N pruned`) say what was recorded; the next run's output says
//! whether that was right.
//!
//! Records are trusted only once a file's timestamps are clearly older than
//! the run that recorded it (the racy rule), so a tree is left to settle
//! before its first cached run ([`settle`]).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use testenv::*;

/// Wait until the files of `root` are old enough to be recorded: the clock
/// past their newest timestamp by more than the racy window (two seconds
/// where the filesystem keeps whole seconds only). What is awaited is the
/// clock itself, so the wait is measured from the files' own times, not
/// guessed from when this function was called.
fn settle(root: &Path) {
    let meta = fs::metadata(root).unwrap();
    let whole = meta.mtime_nsec() == 0 && meta.ctime_nsec() == 0;
    let window = Duration::from_millis(if whole { 2200 } else { 200 });
    let until = newest_change(root) + window;
    while let Ok(left) = until.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(left);
    }
}

/// The latest mtime or ctime of `path` and everything under it.
fn newest_change(path: &Path) -> std::time::SystemTime {
    let m = fs::symlink_metadata(path).unwrap();
    let at = |s: i64, ns: i64| std::time::UNIX_EPOCH + Duration::new(s as u64, ns as u32);
    let mut newest = at(m.mtime(), m.mtime_nsec()).max(at(m.ctime(), m.ctime_nsec()));
    if m.is_dir() {
        for e in fs::read_dir(path).unwrap() {
            newest = newest.max(newest_change(&e.unwrap().path()));
        }
    }
    newest
}

/// The `cache:` counts of a run with `--stats`: unchanged, hashed,
/// recorded, changed while read, pruned.
fn counts(out: &Output) -> [u64; 5] {
    let err = show(&out.stderr);
    let line = err
        .lines()
        .find_map(|l| l.split_once(": cache: ").map(|(_, rest)| rest.to_owned()))
        .unwrap_or_else(|| panic!("no cache line in: {err}"));
    let numbers: Vec<u64> = line
        .split(", ")
        .map(|part| part.split(' ').next().unwrap().parse().unwrap())
        .collect();
    numbers.try_into().unwrap_or_else(|_| panic!("{line}"))
}

/// Every regular file under `root` (as GNU `find` lists them).
fn regular_files(root: &Path) -> Vec<PathBuf> {
    let out = run(Command::new("find")
        .arg(root)
        .args(["-type", "f", "-print0"]));
    out.stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect()
}

/// Opens of some files from now on, read after the fact: the kernel queues
/// an `IN_OPEN` event in the `open` call itself, so once a run has ended its
/// opens are all in the queue.
struct Opens {
    fd: std::os::fd::OwnedFd,
}

impl Opens {
    fn watch(files: &[PathBuf]) -> Opens {
        use rustix::fs::inotify;
        let flags = inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK;
        let fd = inotify::init(flags).unwrap();
        for f in files {
            inotify::add_watch(&fd, f, inotify::WatchFlags::OPEN).unwrap();
        }
        Opens { fd }
    }

    /// Whether any watched file was opened.
    fn any(&self) -> bool {
        let mut buf = [0u8; 4096];
        rustix::io::read(&self.fd, &mut buf).is_ok_and(|n| n > 0)
    }
}

/// A scratch directory for caches.
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("hashrace-cache")
        .tempdir()
        .unwrap()
}

/// `args` with `--cache CACHE` (and `--stats`) in front.
fn cached<'a>(cache: &'a Path, args: &[&'a OsStr]) -> Vec<&'a OsStr> {
    let mut v: Vec<&OsStr> = vec!["--cache".as_ref(), cache.as_os_str(), "--stats".as_ref()];
    v.extend_from_slice(args);
    v
}

/// A `--json` document without its timings, which differ from run to run.
fn json_sans_timing(stdout: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(stdout).unwrap();
    let summary = v["summary"].as_object_mut().unwrap();
    for key in ["elapsed_seconds", "mib_per_second", "files_per_second"] {
        summary.remove(key).unwrap();
    }
    v
}

#[test]
fn a_second_run_opens_no_unchanged_file_and_prints_the_same_bytes() {
    let t = Tree::nasty();
    settle(t.root());
    let expected = reference("-H", &[t.root()]);
    let files = regular_files(t.root());
    let n = files.len() as u64;
    let root = t.root().as_os_str();
    each_binary(|env| {
        let dir = scratch();
        let cache = dir.path().join("cache.db");
        let first = env.run_os(&cached(&cache, &[root]));
        assert_eq!(show(&first.stdout), show(&expected));
        assert_eq!(first.status.code(), Some(0), "{}", show(&first.stderr));
        assert_eq!(counts(&first), [0, n, n, 0, 0]);
        let opens = Opens::watch(&files);
        let second = env.run_os(&cached(&cache, &[root]));
        assert_eq!(second.stdout, expected, "byte for byte");
        assert_eq!(second.status.code(), Some(0));
        assert_eq!(counts(&second), [n, 0, 0, 0, 0]);
        assert!(!opens.any(), "an unchanged file was opened");
        // Every output form, against the same binary without the cache.
        for opts in [&["--tree"][..], &["--tag", "-z"], &["-b"]] {
            let mut args: Vec<&OsStr> = opts.iter().map(OsStr::new).collect();
            args.push(root);
            let plain = env.run_os(&args);
            let with = env.run_os(&cached(&cache, &args));
            assert_eq!(with.stdout, plain.stdout, "{opts:?}");
            assert_eq!(counts(&with)[0], n, "{opts:?}");
        }
        let json: [&OsStr; 3] = ["--json".as_ref(), "--tree".as_ref(), root];
        let plain = json_sans_timing(&env.run_os(&json).stdout);
        let with = env.run_os(&cached(&cache, &json));
        assert_eq!(json_sans_timing(&with.stdout), plain);
        assert!(plain["tree_sha256"].is_string());
    });
}

#[test]
fn files_from_and_shards_get_the_cache_and_the_same_output() {
    let t = Tree::new();
    for i in 0..40 {
        t.file(format!("d{}/f{i:02}", i % 3).as_bytes(), &pattern(i * 97));
    }
    settle(t.root());
    let dir = scratch();
    let list = dir.path().join("list");
    let mut names = Vec::new();
    for f in regular_files(t.root()) {
        names.extend_from_slice(f.as_os_str().as_bytes());
        names.push(b'\n');
    }
    fs::write(&list, names).unwrap();
    let root = t.root().as_os_str();
    let modes: [&[&OsStr]; 3] = [
        &["--files-from".as_ref(), list.as_os_str()],
        &["--shard".as_ref(), "2/3".as_ref(), root],
        &["--shard".as_ref(), "1/3".as_ref(), "--tag".as_ref(), root],
    ];
    each_binary(|env| {
        for mode in modes {
            let cache = dir.path().join(format!("{}.db", env.name()));
            let _ = fs::remove_file(&cache);
            let plain = env.run_os(mode);
            assert_eq!(plain.status.code(), Some(0), "{}", show(&plain.stderr));
            let first = env.run_os(&cached(&cache, mode));
            let second = env.run_os(&cached(&cache, mode));
            for out in [&first, &second] {
                assert_eq!(show(&out.stdout), show(&plain.stdout), "{mode:?}");
                assert_eq!(out.status.code(), Some(0), "{mode:?}");
            }
            let [unchanged, hashed, recorded, ..] = counts(&second);
            assert_eq!((hashed, recorded), (0, 0), "{mode:?}");
            assert_eq!(unchanged, counts(&first)[2], "{mode:?}");
            assert!(unchanged > 0, "{mode:?}");
        }
    });
}

#[test]
fn a_rewrite_to_the_same_size_with_its_mtime_restored_is_hashed_again() {
    each_binary(|env| {
        let t = Tree::new();
        let f = t.file(b"a", b"first content");
        t.file(b"b", b"unchanged");
        settle(t.root());
        let dir = scratch();
        let cache = dir.path().join("cache.db");
        let first = env.run_os(&cached(&cache, &[t.root().as_os_str()]));
        assert_eq!(counts(&first)[2], 2);
        let before = fs::metadata(&f).unwrap();
        fs::write(&f, b"other content").unwrap();
        let stamp = format!("@{}.{:09}", before.mtime(), before.mtime_nsec());
        let touched = run(Command::new("touch").args(["-m", "-d", &stamp]).arg(&f));
        assert!(touched.status.success(), "{}", show(&touched.stderr));
        let after = fs::metadata(&f).unwrap();
        assert_eq!(
            (after.len(), after.mtime(), after.mtime_nsec()),
            (before.len(), before.mtime(), before.mtime_nsec()),
            "the rewrite kept size and mtime"
        );
        let second = env.run_os(&cached(&cache, &[t.root().as_os_str()]));
        assert_eq!(show(&second.stdout), show(&reference("-H", &[t.root()])));
        assert!(show(&second.stdout).starts_with(&show(&sha256sum(&[&f]))));
        assert_eq!(counts(&second)[..2], [1, 1], "b from the cache, a read");
    });
}

#[test]
fn a_file_that_is_not_a_cache_is_refused_by_name_and_left_alone() {
    let t = Tree::new();
    t.file(b"f", b"data");
    let dir = scratch();
    let junk = dir.path().join("junk.db");
    let bytes: Vec<u8> = pattern(64 * 1024);
    fs::write(&junk, &bytes).unwrap();
    let foreign = dir.path().join("foreign.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE files (path BLOB PRIMARY KEY, sha256 BLOB); INSERT INTO files VALUES (x'2f66', x'00')")
        .unwrap();
    drop(conn);
    let foreign_bytes = fs::read(&foreign).unwrap();
    let cases = [
        (
            &junk,
            "not a hashrace cache (file is not a database)",
            &bytes,
        ),
        (
            &foreign,
            "not a hashrace cache (another program's SQLite database)",
            &foreign_bytes,
        ),
    ];
    each_binary(|env| {
        for (path, why, content) in cases {
            for mode in [&["--json"][..], &[]] {
                let mut args: Vec<&OsStr> = vec!["--cache".as_ref(), path.as_os_str()];
                args.extend(mode.iter().map(OsStr::new));
                args.push(t.root().as_os_str());
                let out = env.run_os(&args);
                let want = format!(
                    "{}: {}: {why}; remove it (or name another file with --cache) to start afresh\n",
                    env.name(),
                    path.display()
                );
                assert_eq!(show(&out.stderr), want);
                assert_eq!(out.status.code(), Some(2));
                assert_eq!(show(&out.stdout), "", "nothing printed");
                assert_eq!(&fs::read(path).unwrap(), content, "left as it was");
            }
        }
    });
}

/// A loop device over a file of `bytes`, when this machine lets the test make
/// one (root, `losetup`, the loop driver); it is detached when dropped.
struct Loop {
    dev: PathBuf,
}

impl Loop {
    fn over(image: &Path) -> Result<Loop, String> {
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(image)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!("losetup: {}", show(&out.stderr).trim()));
        }
        Ok(Loop {
            dev: PathBuf::from(show(&out.stdout).trim()),
        })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

#[test]
fn a_cache_path_that_is_not_a_regular_file_is_refused_before_anything_is_written() {
    let t = Tree::new();
    t.file(b"f", b"data");
    let dir = scratch();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo, 0o644);
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    // A cache whose write-ahead log would go to a FIFO: refused too, by the
    // log's name.
    let beside = dir.path().join("beside.db");
    let beside_wal = dir.path().join("beside.db-wal");
    mkfifo(&beside_wal, 0o644);
    let image = dir.path().join("blk.img");
    let noise = pattern(1 << 20);
    fs::write(&image, &noise).unwrap();
    let device = Loop::over(&image);
    if let Err(why) = &device {
        eprintln!("the block device case is skipped: cannot make a loop device ({why})");
    }
    let mut cases: Vec<(PathBuf, PathBuf)> = vec![
        (fifo.clone(), fifo.clone()),
        (sub.clone(), sub.clone()),
        (beside.clone(), beside_wal.clone()),
        ("/dev/null".into(), "/dev/null".into()),
    ];
    if let Ok(l) = &device {
        cases.push((l.dev.clone(), l.dev.clone()));
    }
    each_binary(|env| {
        for (cache, named) in &cases {
            let args: Vec<&OsStr> =
                vec!["--cache".as_ref(), cache.as_os_str(), t.root().as_os_str()];
            let out = env.run_os(&args);
            let want = format!("{}: {}: not a regular file\n", env.name(), named.display());
            assert_eq!(show(&out.stderr), want);
            assert_eq!(out.status.code(), Some(2));
            assert_eq!(show(&out.stdout), "", "nothing printed");
        }
        assert!(
            !beside.exists(),
            "the database beside a FIFO log was not made"
        );
        assert_eq!(fs::read_dir(&sub).unwrap().count(), 0);
        for suffix in ["-journal", "-wal", "-shm"] {
            let p = format!("/dev/null{suffix}");
            assert!(!Path::new(&p).exists(), "{p} was made");
        }
    });
    if let Ok(l) = device {
        for suffix in ["-journal", "-wal", "-shm"] {
            let p = format!("{}{suffix}", l.dev.display());
            assert!(!Path::new(&p).exists(), "{p} was made");
        }
        drop(l);
        assert!(
            fs::read(&image).unwrap() == noise,
            "the device was not written"
        );
    }
}

#[test]
fn check_mode_refuses_the_cache() {
    let dir = scratch();
    let sums = dir.path().join("SUMS");
    fs::write(&sums, "").unwrap();
    let cache = dir.path().join("cache.db");
    each_binary(|env| {
        let out = env.run_os(&[
            "-c".as_ref(),
            "--cache".as_ref(),
            cache.as_os_str(),
            sums.as_os_str(),
        ]);
        assert_eq!(out.status.code(), Some(2));
        let err = show(&out.stderr);
        assert!(
            err.contains("--cache") && err.contains("cannot be used with"),
            "{err}"
        );
        assert!(!cache.exists());
    });
}

/// A tree of `n` small files.
fn many_files(n: usize) -> Tree {
    let t = Tree::new();
    for i in 0..n {
        t.file(
            format!("d{:02}/f{i:05}", i % 50).as_bytes(),
            &pattern(i % 300),
        );
    }
    t
}

/// `PRAGMA integrity_check` of the database at `path`.
fn integrity(path: &Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_run_killed_while_it_writes_the_cache_loses_nothing() {
    let t = many_files(30_000);
    settle(t.root());
    let expected = reference("-H", &[t.root()]);
    let root = t.root().as_os_str();
    each_binary(|env| {
        let dir = scratch();
        let cache = dir.path().join("cache.db");
        let wal = dir.path().join("cache.db-wal");
        // Every write of the log from the start on wakes the wait below.
        let written = OpenWatch::on(
            dir.path(),
            rustix::fs::inotify::WatchFlags::MODIFY | rustix::fs::inotify::WatchFlags::CREATE,
        );
        let mut child = env
            .command()
            .args(cached(&cache, &[root]))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The first batch of records is committed once a few thousand files
        // are hashed (the log then holds far more than the empty schema's
        // few pages): kill it then, in the middle of the run.
        while fs::metadata(&wal).map_or(0, |m| m.len()) < 128 * 1024 {
            written.wait("the cache's log to grow");
        }
        kill(child.id());
        let status = wait_status(&mut child, "the killed run");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "killed mid-run, not finished");
        for _ in 0..2 {
            let out = env.run_os(&cached(&cache, &[root]));
            assert!(
                out.stdout == expected,
                "wrong output; {}",
                show(&out.stderr)
            );
            assert_eq!(out.status.code(), Some(0));
        }
        let last = env.run_os(&cached(&cache, &[root]));
        assert!(last.stdout == expected, "wrong output");
        assert_eq!(counts(&last)[..2], [30_000, 0]);
        assert_eq!(integrity(&cache), "ok");
    });
}

#[test]
fn two_runs_sharing_a_cache_at_once_both_finish_correctly() {
    let a = many_files(6000);
    let b = many_files(4000);
    settle(a.root());
    let want_a = reference("-H", &[a.root()]);
    let want_b = reference("-H", &[b.root()]);
    each_binary(|env| {
        let dir = scratch();
        let cache = dir.path().join("cache.db");
        let start = |root: &Path| {
            env.command()
                .args(cached(&cache, &[root.as_os_str()]))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        // Two on the same tree, one on another, all at once.
        let children = [start(a.root()), start(a.root()), start(b.root())];
        for (child, want) in children.into_iter().zip([&want_a, &want_a, &want_b]) {
            let out = wait_output(child, "a concurrent run");
            assert!(out.stdout == *want, "wrong output; {}", show(&out.stderr));
            assert_eq!(out.status.code(), Some(0));
            assert!(
                !show(&out.stderr).contains("warning"),
                "{}",
                show(&out.stderr)
            );
        }
        assert_eq!(integrity(&cache), "ok");
        let again = env.run_os(&cached(
            &cache,
            &[a.root().as_os_str(), b.root().as_os_str()],
        ));
        assert_eq!(counts(&again)[..2], [10_000, 0]);
    });
}

#[test]
fn a_read_only_cache_location_warns_and_hashes_without_it() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to run as nobody");
        return;
    }
    let t = Tree::new();
    t.file(b"f", b"data");
    t.file(b"g/h", b"more");
    settle(t.root());
    let expected = reference("-H", &[t.root()]);
    let ro = scratch(); // root's, mode 0700: nobody cannot even look in
    fs::set_permissions(ro.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let cache = ro.path().join("cache.db");
    each_binary(|env| {
        let (_keep, bin) = env.nobody_copy();
        let _ = fs::remove_file(&cache);
        // First with no cache there, then with one root made.
        for made in [false, true] {
            if made {
                let root_run = env.run_os(&cached(&cache, &[t.root().as_os_str()]));
                assert_eq!(counts(&root_run)[2], 2);
            }
            let out = run(as_nobody(&bin).args(cached(&cache, &[t.root().as_os_str()])));
            assert_eq!(out.stdout, expected, "made: {made}");
            assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
            let err = show(&out.stderr);
            let warning = err.lines().next().unwrap_or_default();
            let head = format!("{}: warning: {}: ", env.name(), cache.display());
            assert!(warning.starts_with(&head), "made {made}: {err}");
            assert!(warning.ends_with("; going on without the cache"), "{err}");
            assert!(
                !err.contains("cache: "),
                "no cache counts without a cache: {err}"
            );
        }
    });
}

/// A tmpfs of `kib` KiB mounted at a fresh directory, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(kib: u32) -> Option<SmallDisk> {
        let dir = scratch();
        let out = testenv::try_run(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
                .arg(dir.path()),
        );
        match out {
            Ok(o) if o.status.success() => Some(SmallDisk { dir }),
            Ok(o) => {
                eprintln!("skipped: cannot mount a tmpfs ({})", show(&o.stderr).trim());
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount ({e})");
                None
            }
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = testenv::try_run(Command::new("umount").arg(self.dir.path()));
    }
}

#[test]
fn a_full_disk_under_the_cache_warns_and_hashes_without_it() {
    let t = many_files(3000);
    settle(t.root());
    let expected = reference("-H", &[t.root()]);
    each_binary(|env| {
        // Room for the empty database, not for 3,000 records.
        let Some(disk) = SmallDisk::mount(96) else {
            return;
        };
        let cache = disk.dir.path().join("cache.db");
        for _ in 0..2 {
            let out = env.run_os(&cached(&cache, &[t.root().as_os_str()]));
            assert!(out.stdout == expected, "wrong output");
            assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
            let err = show(&out.stderr);
            let head = format!("{}: warning: {}: ", env.name(), cache.display());
            assert!(err.starts_with(&head), "{err}");
            assert!(err.contains("full"), "{err}");
            assert!(err.contains("; going on without the cache\n"), "{err}");
        }
    });
}

#[test]
fn a_file_appended_to_while_it_is_hashed_is_reported_and_not_recorded() {
    let t = Tree::new();
    let big = t.file(b"big", &pattern(64 << 20));
    t.file(b"small", b"still");
    settle(t.root());
    let root = t.root().as_os_str();
    each_binary(|env| {
        let dir = scratch();
        let cache = dir.path().join("cache.db");
        for strict in [false, true] {
            let old = show(&sha256sum(&[&big]))[..64].to_owned();
            let mut args = cached(&cache, &[root]);
            if strict {
                args.insert(0, "--strict".as_ref());
            }
            // The hasher says when it has stamped a file it opened (an empty
            // file named by its size appears in `signals`), then waits 600 ms
            // before reading it: the append lands in that wait.
            let signals = scratch();
            let watch = OpenWatch::on(signals.path(), rustix::fs::inotify::WatchFlags::CREATE);
            let stamped = signals
                .path()
                .join(format!("stamped-{}", fs::metadata(&big).unwrap().len()));
            let child = env
                .command()
                .args(args)
                .env("HASHRACE_TEST_STAMP_DELAY_MS", "600")
                .env("HASHRACE_TEST_STAMPED_DIR", signals.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            while !stamped.exists() {
                watch.wait("the big file to be stamped");
            }
            let mut f = fs::OpenOptions::new().append(true).open(&big).unwrap();
            std::io::Write::write_all(&mut f, b"+").unwrap();
            drop(f);
            let out = wait_output(child, "a run with a file growing");
            let err = show(&out.stderr);
            let said = format!(
                "{}: {}: changed while being read\n",
                env.name(),
                big.display()
            );
            assert!(err.starts_with(&said), "{err}");
            assert_eq!(out.status.code(), Some(if strict { 1 } else { 0 }), "{err}");
            let [_, _, _, changed, _] = counts(&out);
            assert_eq!(changed, 1);
            // What was printed is what was read: the old bytes or the new.
            let new = show(&sha256sum(&[&big]))[..64].to_owned();
            let line = show(&out.stdout).lines().next().unwrap().to_owned();
            assert!(line.starts_with(&old) || line.starts_with(&new), "{line}");
        }
        // Not recorded: the next run reads it, and gets today's digest.
        let next = env.run_os(&cached(&cache, &[root]));
        assert_eq!(show(&next.stdout), show(&reference("-H", &[t.root()])));
        assert_eq!(counts(&next)[..2], [1, 1], "small from the cache, big read");
    });
}

#[test]
fn entries_of_vanished_files_are_pruned_only_by_a_run_that_failed_nothing() {
    each_binary(|env| {
        let t = Tree::new();
        for name in ["a", "b", "sub/c", "sub/d"] {
            t.file(name.as_bytes(), name.as_bytes());
        }
        settle(t.root());
        let dir = scratch();
        let cache = dir.path().join("cache.db");
        let root = t.root().as_os_str();
        assert_eq!(counts(&env.run_os(&cached(&cache, &[root])))[2], 4);
        fs::remove_file(t.path(b"b")).unwrap();
        fs::remove_dir_all(t.path(b"sub")).unwrap();
        // A failed run (a missing operand) prunes nothing...
        let missing = dir.path().join("missing");
        let failed = env.run_os(&cached(&cache, &[root, missing.as_os_str()]));
        assert_eq!(failed.status.code(), Some(1));
        assert_eq!(counts(&failed), [1, 0, 0, 0, 0]);
        // ... a run of another tree prunes nothing here ...
        let other = Tree::new();
        other.file(b"x", b"x");
        let elsewhere = env.run_os(&cached(&cache, &[other.root().as_os_str()]));
        assert_eq!(counts(&elsewhere)[4], 0);
        // ... and a successful run of this one prunes the three.
        let ok = env.run_os(&cached(&cache, &[root]));
        assert_eq!(ok.status.code(), Some(0));
        assert_eq!(counts(&ok), [1, 0, 0, 0, 3]);
        assert_eq!(show(&ok.stdout), show(&reference("-H", &[t.root()])));
    });
}

#[test]
fn files_on_a_network_mount_are_answered_from_the_cache_too() {
    // sshfs: FUSE, whole-second timestamps, inode numbers of its own; the
    // cache must leave the inode out and wait out the 2 s window, and then
    // answer for the files all the same.
    let t = Tree::new();
    t.file(b"a", b"small\n");
    t.file(b"dir/b", &pattern(100_000));
    let fs = match testenv::sshfs::Sshfs::mount(t.root()) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("skipped: no network mount here: {why}");
            return;
        }
    };
    settle(fs.root());
    let want = show(&reference("-H", &[t.root()])).replace(
        &t.root().display().to_string(),
        &fs.root().display().to_string(),
    );
    each_binary(|env| {
        let dir = scratch();
        let cache = dir.path().join("cache.db");
        let root = fs.root().as_os_str();
        let first = env.run_os(&cached(&cache, &[root]));
        let second = env.run_os(&cached(&cache, &[root]));
        for out in [&first, &second] {
            assert_eq!(show(&out.stdout), want);
            assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
        }
        assert_eq!(counts(&first)[..3], [0, 2, 2]);
        assert_eq!(counts(&second)[..2], [2, 0]);
    });
}
