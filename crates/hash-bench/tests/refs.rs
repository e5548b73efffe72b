//! The reference modes and the process-tree RSS sampler, through the built binary:
//! `ceiling` digests against GNU `sha256sum` of the same bytes, `read-floor` counts,
//! `hash-floor`'s digests against `sha256sum` of the same files, and the tree sum of a
//! known process tree.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use testenv::{hang_limit, run, wait_status};

use hash_bench::maxrss::TreeSampler;
use hash_bench::refs::{ceiling_buffer, BUFFER, COMPUTE_BUFFER};

const HB: &str = env!("CARGO_BIN_EXE_hash-bench");

/// Whether `tool` is missing, said so: a test that checks against it is then skipped.
fn skip_without(tool: &str) -> bool {
    let missing = hash_bench::util::which(tool).is_none();
    if missing {
        eprintln!("skipped: {tool} is not installed");
    }
    missing
}

#[test]
fn ceiling_digests_match_gnu_sha256sum_of_the_same_bytes() {
    if skip_without("sha256sum") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let sizes = [0u64, 1, 4096, BUFFER as u64, BUFFER as u64 * 2 + 13];
    let spec = serde_json::json!({
        "name": "ceil",
        "description": "test",
        "seed": 1,
        "groups": sizes.iter().enumerate().map(|(i, s)| serde_json::json!({
            "stem": format!("g{i}-"), "count": 1, "size": s})).collect::<Vec<_>>(),
        "expected_manifest_sha256": null
    });
    let spec_path = t.path().join("ceil.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    // The bytes the ceiling defines: its buffer repeated, cut at each size.
    let buf = ceiling_buffer(COMPUTE_BUFFER);
    std::fs::create_dir(t.path().join("ceil")).unwrap();
    for (i, &s) in sizes.iter().enumerate() {
        let bytes: Vec<u8> = buf.iter().copied().cycle().take(s as usize).collect();
        std::fs::write(t.path().join(format!("ceil/g{i}-0")), bytes).unwrap();
    }
    let ours = run(Command::new(HB)
        .args(["ceiling", "sha256", "--threads", "2", "--digests", "--spec"])
        .arg(&spec_path));
    assert!(ours.status.success(), "{ours:?}");
    let gnu = run(Command::new("sh")
        .args(["-c", "find ceil -type f | LC_ALL=C sort | xargs sha256sum"])
        .current_dir(t.path()));
    assert!(gnu.status.success());
    let mut lines: Vec<&str> = std::str::from_utf8(&ours.stdout).unwrap().lines().collect();
    lines.sort_by(|a, b| a[66..].cmp(&b[66..]));
    let gnu_text = String::from_utf8(gnu.stdout).unwrap();
    assert_eq!(lines, gnu_text.lines().collect::<Vec<_>>());

    // The summary: file count and bytes of the spec.
    let out = run(Command::new(HB)
        .args(["ceiling", "sha256", "--threads", "1", "--spec"])
        .arg(&spec_path));
    let text = String::from_utf8(out.stdout).unwrap();
    let total: u64 = sizes.iter().sum();
    assert!(
        text.starts_with(&format!(
            "ceiling sha256: 5 files, {total} bytes, 1 thread, xor "
        )),
        "{text}"
    );
}

#[test]
fn read_floor_reports_files_bytes_and_errors() {
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(t.path().join("d/e")).unwrap();
    std::fs::write(t.path().join("d/a"), [7u8; 100]).unwrap();
    std::fs::write(t.path().join("d/e/b"), vec![7u8; 3 << 20]).unwrap();
    let out = run(Command::new(HB)
        .args(["read-floor", "-j", "64", "d"])
        .current_dir(t.path()));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("read-floor: 2 files, {} bytes, 0 errors\n", 100 + (3 << 20))
    );
    let out = run(Command::new(HB)
        .args(["read-floor", "d", "missing"])
        .current_dir(t.path()));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hash-bench: missing: "));
}

#[test]
fn hash_floor_xor_matches_gnu_sha256sum_of_the_files() {
    if skip_without("sha256sum") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("d");
    std::fs::create_dir_all(d.join("e")).unwrap();
    std::fs::create_dir_all(d.join("f")).unwrap();
    let files = [
        ("a", 100usize),
        ("e/b", 3 << 20),
        ("e/c", 0),
        ("f/g", 5000),
        ("z", BUFFER),
    ];
    for (i, (name, len)) in files.iter().enumerate() {
        let bytes: Vec<u8> = (0..*len).map(|k| (k * 7 + i) as u8).collect();
        std::fs::write(d.join(name), bytes).unwrap();
    }
    let sums = run(Command::new("sha256sum")
        .args(files.iter().map(|(name, _)| name))
        .current_dir(&d));
    let mut xor = [0u8; 32];
    for line in String::from_utf8(sums.stdout).unwrap().lines() {
        for (k, x) in xor.iter_mut().enumerate() {
            *x ^= u8::from_str_radix(&line[2 * k..2 * k + 2], 16).unwrap();
        }
    }
    let total: usize = files.iter().map(|f| f.1).sum();
    for extra in [&[][..], &["--no-fstat"], &["-j", "2"]] {
        let out = run(Command::new(HB)
            .arg("hash-floor")
            .args(extra)
            .arg("d")
            .current_dir(t.path()));
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!(
                "hash-floor: 5 files, {total} bytes, 0 errors, xor {}\n",
                hash_bench::util::hex(&xor)
            )
        );
    }
    let out = run(Command::new(HB)
        .args(["hash-floor", "--no-hash", "d", "missing"])
        .current_dir(t.path()));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "hash-floor: 5 files, {total} bytes, 1 error, xor 0000"
        )),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("hash-bench: missing: "));
}

/// A shell with two children holding 24 and 40 MiB: the sampled tree sum covers both.
#[test]
fn tree_sampler_sums_a_known_process_tree() {
    // Background jobs of a script read /dev/null unless redirected: give them the
    // shell's stdin, which the test closes to let them go.
    let script = format!("exec 3<&0; '{HB}' hold-memory 24 <&3 & '{HB}' hold-memory 40 <&3 & wait");
    let mut sh = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Both children say `ready` once their memory is touched (read on a
    // thread, so that a child that never does fails the test instead of hanging it).
    let out = BufReader::new(sh.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().take(2) {
            let _ = tx.send(line);
        }
    });
    for _ in 0..2 {
        let line = rx.recv_timeout(hang_limit()).unwrap_or_else(|_| {
            let _ = sh.kill();
            let _ = sh.wait();
            panic!("the hold-memory children did not both say ready")
        });
        assert_eq!(line.unwrap(), "ready");
    }
    let mut s = TreeSampler::default();
    let alive = s.sample(sh.id());
    // Closing stdin (their shared stdin) lets both children, then the shell, finish.
    drop(sh.stdin.take());
    let status = wait_status(&mut sh, "the sh holding two hold-memory children");
    assert!(status.success());
    assert_eq!(alive, 3, "sh and its two children");
    assert_eq!(s.processes(), 3);
    let kib = |m: u64| m * 1024;
    assert!(
        s.largest_kib() >= kib(40),
        "largest {} KiB",
        s.largest_kib()
    );
    assert!(
        s.sum_kib() >= kib(24 + 40),
        "sum {} KiB of a tree holding 64 MiB",
        s.sum_kib()
    );
}

#[test]
fn maxrss_records_the_tree_sum() {
    let t = tempfile::tempdir().unwrap();
    let rec = t.path().join("rss.json");
    let out = run(Command::new(HB).arg("maxrss").arg("--out").arg(&rec).args([
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=16M",
        "count=1",
    ]));
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    let single = v["max_rss_kib"].as_u64().unwrap();
    let sum = v["tree_sum_kib"].as_u64().unwrap();
    assert!(single >= 16 * 1024 && sum >= single, "{v}");
    assert!(v["tree_processes"].as_u64().unwrap() >= 1);
}
