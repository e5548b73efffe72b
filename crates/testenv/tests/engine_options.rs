//! Every mode runs the engine the command line built: an option given to a
//! binary holds in hash mode, check mode and `--files-from` alike. What the
//! process really did is read off `strace` (the system calls are the
//! independent witness), so these tests skip, saying why, where `strace`
//! cannot trace (not installed, or ptrace refused).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use testenv::{binary, pattern, run};

/// The system calls `args` makes when `bin` runs them under `strace -f`,
/// one per line, only those in `calls`; `None` when strace cannot run here.
fn traced(bin: &str, args: &[&OsStr], calls: &str) -> Option<(String, i32)> {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-e", &format!("trace={calls}"), "-o"])
        .arg(log.path())
        .arg(binary(bin))
        .args(args);
    let out = match testenv::try_run(&mut cmd) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: strace cannot be run here ({e})");
            return None;
        }
    };
    // A call that another thread's call interrupts is traced on two lines,
    // the second "<... name resumed>": keep the first, so that a call is one
    // line and counting lines counts calls.
    let text: String = std::fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .filter(|l| !l.contains(" resumed>"))
        .flat_map(|l| [l, "\n"])
        .collect();
    if text.is_empty() && !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        eprintln!("skipped: strace could not trace ({})", why.trim());
        return None;
    }
    Some((text, out.status.code().unwrap_or(-1)))
}

/// A tree of one 3 MiB file (large enough to be mapped) and a manifest of
/// it written by `sha256sum` (an independent source of the digest).
fn tree_with_manifest(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("big");
    std::fs::write(&file, pattern(3 << 20)).unwrap();
    let out = run(Command::new("sha256sum").arg(&file));
    assert!(out.status.success(), "sha256sum failed");
    let manifest = dir.join("SUMS");
    std::fs::write(&manifest, &out.stdout).unwrap();
    manifest
}

/// Whether io_uring works here at all, asked of the kernel directly.
fn io_uring_works() -> bool {
    testenv::io_uring_usable().is_ok()
}

#[test]
fn io_pool_makes_no_io_uring_call_in_any_mode() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = tree_with_manifest(dir.path());
    let list = dir.path().join("list");
    std::fs::write(&list, format!("{}\n", dir.path().join("big").display())).unwrap();
    let modes: [Vec<&OsStr>; 3] = [
        vec![dir.path().as_os_str()],
        vec![OsStr::new("-c"), manifest.as_os_str()],
        vec![OsStr::new("--files-from"), list.as_os_str()],
    ];
    for mode in &modes {
        let mut args = vec![OsStr::new("--io"), OsStr::new("pool")];
        args.extend(mode);
        let Some((calls, code)) = traced("hash-async", &args, "io_uring_setup") else {
            return;
        };
        assert_eq!(code, 0, "{mode:?}");
        assert!(
            !calls.contains("io_uring_setup"),
            "{mode:?} with --io pool set up io_uring:\n{calls}"
        );
        // The witness can see io_uring when it is used: without --io pool
        // the same mode sets a ring up (where the kernel allows it).
        if io_uring_works() {
            let (calls, _) = traced("hash-async", mode, "io_uring_setup").unwrap();
            assert!(
                calls.contains("io_uring_setup"),
                "{mode:?}: the default --io auto used no io_uring, so this test could not fail"
            );
        }
    }
}

/// `--max-in-flight N` below `-j` is N files in flight, not `-j`: io_uring
/// sets up N rings (a ring keeps a file at least), `hash-procs` starts N
/// workers, and `--stats` names the workers that ran. Before, `hash-async -j
/// 8 --max-in-flight 1` kept 8 files in flight and said 1.
#[test]
fn a_fixed_depth_below_the_workers_is_what_runs() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..40 {
        std::fs::write(dir.path().join(format!("f{i}")), pattern(1000 + i)).unwrap();
    }
    let root = dir.path().as_os_str();
    let fixed = [
        OsStr::new("-j"),
        OsStr::new("8"),
        OsStr::new("--max-in-flight"),
    ];
    let mut cases: Vec<(&str, &str, &str)> = vec![("hash-procs", "clone", "1")];
    if io_uring_works() {
        cases.push(("hash-async", "io_uring_setup", "2"));
    }
    for (bin, call, depth) in cases {
        let mut args = fixed.to_vec();
        args.extend([OsStr::new(depth), OsStr::new("--stats"), root]);
        let Some((calls, code)) = traced(bin, &args, call) else {
            return;
        };
        assert_eq!(code, 0, "{bin}");
        let made = calls.lines().filter(|l| l.contains(call)).count();
        let n: usize = depth.parse().unwrap();
        // hash-procs: a clone per worker (and none besides, for 40 small
        // files: the parent's threads are spawned with clone3). hash-async:
        // io_uring_setup per ring, and one that asks whether it works.
        let want = if bin == "hash-async" { n + 1 } else { n };
        assert!(
            made <= want,
            "{bin} -j 8 --max-in-flight {depth}: {made} {call}:\n{calls}"
        );
        let out = run(Command::new(binary(bin)).args(&args));
        let err = String::from_utf8_lossy(&out.stderr);
        let says = format!("{n} worker{}", if n == 1 { "" } else { "s" });
        assert!(err.contains(&says), "{bin}: {err}");
    }
}

/// `mmap` calls of hashed windows: private read-only mappings filled at once
/// (`MAP_POPULATE`). The loader's and allocator's maps are not populated, and
/// io_uring's rings are shared and writable.
fn window_maps(calls: &str) -> usize {
    let window = "PROT_READ, MAP_PRIVATE|MAP_POPULATE,";
    calls.lines().filter(|l| l.contains(window)).count()
}

/// `mmap` calls of hashed windows left to fill by page faults: private
/// read-only mappings of 1 MiB or more without `MAP_POPULATE` (the loader maps
/// its small cache that way too).
fn fault_window_maps(calls: &str) -> usize {
    calls
        .lines()
        .filter(|l| l.contains("PROT_READ, MAP_PRIVATE, "))
        .filter_map(|l| l.split(", ").nth(1)?.parse::<u64>().ok())
        .filter(|&len| len >= 1 << 20)
        .count()
}

#[test]
fn no_mmap_and_data_path_reach_every_binary_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = tree_with_manifest(dir.path());
    let tree = [dir.path().join("big").into_os_string()];
    let check = [OsStr::new("-c").to_owned(), manifest.into_os_string()];
    for bin in hash_core::Strategy::ALL.map(|s| s.binary()) {
        for mode in [&tree[..], &check[..]] {
            let mode: Vec<&OsStr> = mode.iter().map(|a| a.as_os_str()).collect();
            let Some((calls, code)) = traced(bin, &mode, "mmap") else {
                return;
            };
            assert_eq!(code, 0, "{bin} {mode:?}");
            // Warm and 3 MiB: mapped by default (`auto` times a mapped
            // segment first), so the test can fail.
            assert!(
                window_maps(&calls) > 0,
                "{bin} {mode:?} mapped no window by default:\n{calls}"
            );
            // Each way, with whether it maps populated windows and windows
            // filled by faults.
            let ways: [(&[&str], bool, bool); 4] = [
                (&["--no-mmap"], false, false),
                (&["--data-path", "read"], false, false),
                (&["--data-path", "map"], true, false),
                (&["--data-path", "map-fault"], false, true),
            ];
            for (flags, maps, faults) in ways {
                let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
                args.extend(&mode);
                let (calls, code) = traced(bin, &args, "mmap").unwrap();
                assert_eq!(code, 0, "{bin} {flags:?} {mode:?}");
                assert_eq!(
                    (window_maps(&calls) > 0, fault_window_maps(&calls) > 0),
                    (maps, faults),
                    "{bin} {flags:?} {mode:?}: windows mapped populated, by faults: {}, {}\n{calls}",
                    window_maps(&calls),
                    fault_window_maps(&calls)
                );
            }
        }
    }
}

/// `hash-procs` learns sizes from its workers' answers (the walk does not
/// `stat`), so a batch sent on the evidence of small files may hold a large
/// one. The worker hands it back unread when more files wait behind it, and
/// it goes out again on its own: opened twice (`strace`, following every
/// worker), hashed once, and the output is GNU's.
#[test]
fn hash_procs_hands_back_a_large_file_found_in_a_batch_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..600 {
        std::fs::write(dir.path().join(format!("f{i:04}")), pattern(100 + i)).unwrap();
    }
    // Between f0150 and f0151 in name order: the middle of a batch. (Not
    // half way: two workers share the 601 files about equally, so the last
    // file of the first worker's share lies near f0300, and a large file
    // there is simply the last it holds, hashed, not handed back.)
    std::fs::write(dir.path().join("f0150-big"), pattern(2 << 20)).unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-e", "trace=openat", "-o"])
        .arg(log.path())
        .arg(binary("hash-procs"))
        .args(["-j", "2"])
        .arg(dir.path());
    let out = match testenv::try_run(&mut cmd) {
        Ok(out) if out.status.success() => out,
        other => {
            eprintln!("skipped: strace cannot trace here ({other:?})");
            return;
        }
    };
    let want = testenv::reference("-H", &[dir.path()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&want)
    );
    let calls = std::fs::read_to_string(log.path()).unwrap();
    let opens = calls
        .lines()
        .filter(|l| l.contains("\"f0150-big\"") && !l.contains("ENOENT"))
        .count();
    assert_eq!(opens, 2, "opens of f0150-big:\n{calls}");
}

/// Where each file's data starts, by an independent witness: the physical
/// block of its first extent as `filefrag -v` (e2fsprogs) reports it, or,
/// where it reports none for some file (a file system without extents),
/// every file's inode number. `None` when `filefrag` cannot run here.
fn disk_keys(files: &[std::path::PathBuf]) -> Option<Vec<u64>> {
    if let Err(e) = testenv::try_run(Command::new("filefrag").arg("-V")) {
        eprintln!("skipped: filefrag cannot be run here ({e})");
        return None;
    }
    let first_block = |p: &Path| -> Option<u64> {
        let out = testenv::try_run(Command::new("filefrag").arg("-v").arg(p)).ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = text.lines().find(|l| l.trim_start().starts_with("0:"))?;
        let physical = line.split(':').nth(2)?;
        physical.trim().split("..").next()?.trim().parse().ok()
    };
    let blocks: Option<Vec<u64>> = files.iter().map(|p| first_block(p)).collect();
    Some(blocks.unwrap_or_else(|| {
        use std::os::unix::fs::MetadataExt;
        files
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().ino())
            .collect()
    }))
}

/// `--read-order disk` reads files in the order of their data on the disk,
/// in every binary: the tree is written in a shuffled order (each file
/// synced, so its data is placed then), and under `strace` each reading
/// thread or worker process opens its files in rising `disk_keys` order,
/// every file once to learn its key and once to read it; the output is
/// GNU's, in name order.
#[test]
fn read_order_disk_reads_in_the_disks_order_and_prints_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let n = 200;
    let files: Vec<_> = (0..n)
        .map(|i| dir.path().join(format!("f{i:03}")))
        .collect();
    for i in (0..n).map(|k| k * 73 % n) {
        std::fs::write(&files[i], pattern(8192 + i)).unwrap();
        std::fs::File::open(&files[i]).unwrap().sync_all().unwrap();
    }
    let Some(keys) = disk_keys(&files) else {
        return;
    };
    assert!(
        keys.windows(2).any(|w| w[0] > w[1]),
        "the shuffled writes left the files in name order on the disk: {keys:?}"
    );
    let want = testenv::reference("-H", &[dir.path()]);
    let runs: [(&str, &[&str]); 4] = [
        ("hash-serial", &[]),
        ("hash-threads", &["-j", "2"]),
        ("hash-procs", &["-j", "2"]),
        // io_uring's opens are no system calls strace could see.
        ("hash-async", &["-j", "2", "--io", "pool"]),
    ];
    for (bin, opts) in runs {
        let mut args: Vec<&OsStr> = opts.iter().map(OsStr::new).collect();
        args.extend([OsStr::new("--read-order"), OsStr::new("disk")]);
        args.push(dir.path().as_os_str());
        let out = run(Command::new(binary(bin)).args(&args));
        assert_eq!(testenv::show(&out.stdout), testenv::show(&want), "{bin}");
        let Some((calls, code)) = traced(bin, &args, "openat") else {
            continue;
        };
        assert_eq!(code, 0, "{bin}");
        // (pid, file) of every successful open of a file of the tree.
        let opens: Vec<(String, usize)> = calls
            .lines()
            .filter(|l| !l.contains("= -1"))
            .filter_map(|l| {
                let pid = l.split_whitespace().next()?.to_owned();
                let name = l.split('"').nth(1)?;
                let i = name.rsplit('/').next()?.strip_prefix('f')?.parse().ok()?;
                Some((pid, i))
            })
            .collect();
        let mut seen = vec![0; n];
        let mut read_by: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
        for (pid, i) in opens {
            seen[i] += 1;
            // The first open of a file learns its key; the second reads it.
            if seen[i] == 2 {
                read_by.entry(pid).or_default().push(keys[i]);
            }
        }
        assert!(
            seen.iter().all(|&c| c == 2),
            "{bin}: opens per file {seen:?}"
        );
        for (pid, order) in &read_by {
            assert!(
                order.windows(2).all(|w| w[0] <= w[1]),
                "{bin}: {pid} read out of the disk's order: {order:?}"
            );
        }
    }
}

/// On a disk that says it spins, `hash-async`'s rings feed the seek test.
/// Where the disk seeks (the test hook makes every read count as a 10 ms
/// wait, as a spinning disk's would), the policy drops from the rings' 128
/// to one read and climbs from there, while the rings still hold reads
/// started at the old depth: nothing is lost or hangs, the output is GNU's,
/// and `--stats` says why and where the depth went. Skips where the
/// temporary directory's disk does not say it spins.
#[test]
fn hash_async_on_a_disk_that_seeks_caps_its_rings() {
    if !io_uring_works() {
        eprintln!("skipped: io_uring is not usable here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for i in 0..300 {
        let sub = dir.path().join(format!("d{}", i % 3));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i:03}")), pattern(4096 + i)).unwrap();
    }
    let want = testenv::reference("-H", &[dir.path()]);
    let out = run(Command::new(binary("hash-async"))
        .args(["--stats", "--io", "uring"])
        .arg(dir.path())
        .env("HASHRACE_TEST_SEEK_MS", "10"));
    let err = testenv::show(&out.stderr);
    let (line, depth) = testenv::in_flight(&err);
    if !line.contains("a disk that says it spins") {
        eprintln!("skipped: the temporary directory's disk does not say it spins ({line})");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(testenv::show(&out.stdout), testenv::show(&want));
    assert!(line.contains("the disk seeks"), "{line}");
    let depth = depth.unwrap_or_else(|| panic!("no depth in {line}"));
    assert!(depth < 128, "the rings kept their full depth: {line}");
}
