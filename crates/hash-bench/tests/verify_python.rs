//! `hash-bench verify` on the Python rows, as bench.sh runs it: every Python row is
//! checked before timing, whatever its interpreter and work, and a pysum row that prints
//! a wrong byte sum stops the sweep. The hashers are stand-ins printing GNU's lines; the
//! Python rows are the real `scripts/pyhash.py` (through a wrapper for the bad case).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const HB: &str = env!("CARGO_BIN_EXE_hash-bench");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A directory standing in for the repository: `scripts/pyhash.py` is `pyhash`.
fn fake_repo(dir: &Path, pyhash: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/pyhash.py"), pyhash).unwrap();
    dir.to_path_buf()
}

/// Plan, generate and verify the smoke dataset with `fake` as the repository; the
/// verify step's output, and the work directory.
fn plan_and_verify(t: &Path, fake: &Path) -> (std::process::Output, PathBuf) {
    let bins = t.join("bin");
    std::fs::create_dir_all(&bins).unwrap();
    let names = testenv::run(Command::new(HB).arg("strategies"));
    for h in String::from_utf8(names.stdout).unwrap().lines() {
        // The dataset is the last argument; print what GNU prints.
        script(
            &bins.join(h),
            "#!/bin/sh\nfor a; do d=$a; done\n\
             find -H \"$d\" -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum\n",
        );
    }
    let plan = testenv::run(
        Command::new(HB)
            .args(["plan", "--sweep", "smoke", "--no-cold", "--peers", "none"])
            // The rows' -j values, whatever this machine's CPU count.
            .args(["--jobs", "2", "--cores", "2"])
            .arg("--specs-dir")
            .arg(repo().join("datasets"))
            .arg("--data-root")
            .arg(t.join("data"))
            .arg("--bin-dir")
            .arg(&bins)
            .arg("--work-parent")
            .arg(t.join("work"))
            .arg("--repo")
            .arg(fake),
    );
    assert!(plan.status.success(), "{plan:?}");
    let work = PathBuf::from(String::from_utf8(plan.stdout).unwrap().trim());
    let gen = testenv::run(
        Command::new(HB)
            .args(["gen", "--quiet", "--work"])
            .arg(&work),
    );
    assert!(gen.status.success(), "{gen:?}");
    let verify = testenv::run(Command::new(HB).args(["verify", "--work"]).arg(&work));
    (verify, work)
}

#[test]
fn every_python_row_is_checked_and_a_wrong_byte_sum_stops_the_sweep() {
    if !common::have_all(&["python3", "sha256sum", "find", "sort", "xargs"]) {
        return;
    }
    let real = std::fs::read_to_string(repo().join("scripts/pyhash.py")).unwrap();
    let t = common::disk_tempdir();

    let good = fake_repo(&t.path().join("good"), &real);
    let (out, work) = plan_and_verify(t.path(), &good);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for cmd in [
        "threads --work pysum -j 2 smoke",
        "procs --work pysum smoke",
        "asyncio -j 2 smoke",
    ] {
        assert!(stderr.contains(cmd), "not verified: {cmd}\n{stderr}");
    }
    // The record carries the pysum output's digest: the committed golden, which
    // `hash-bench manifest-digest --work pysum` computes in Rust.
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("verified/smoke.json")).unwrap())
            .unwrap();
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("datasets/smoke.json")).unwrap())
            .unwrap();
    assert_eq!(
        record["pysum_output_sha256"],
        spec["expected_pysum_manifest_sha256"]
    );

    // One strategy's byte sums are off by one: verification names the disagreement.
    let bad = real.replace(
        "return (path, \"%08x\" % total, None)",
        "return (path, \"%08x\" % ((total + (threading.current_thread() is not threading.main_thread())) % 2**32), None)",
    );
    assert_ne!(
        bad, real,
        "pyhash.py no longer has the line this test alters"
    );
    let bad = bad.replace("import sys\n", "import sys\nimport threading\n");
    let bad_repo = fake_repo(&t.path().join("bad"), &bad);
    std::fs::remove_dir_all(t.path().join("work")).unwrap();
    let (out, _) = plan_and_verify(t.path(), &bad_repo);
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("outputs differ on smoke"), "{stderr}");
    assert!(stderr.contains("--work pysum"), "{stderr}");

    // Every strategy off by one: they agree, but not with the harness's own sums.
    let off = real.replace(
        "return (path, \"%08x\" % total, None)",
        "return (path, \"%08x\" % ((total + 1) % 2**32), None)",
    );
    let off_repo = fake_repo(&t.path().join("off"), &off);
    std::fs::remove_dir_all(t.path().join("work")).unwrap();
    let (out, _) = plan_and_verify(t.path(), &off_repo);
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("the pysum programs agree on smoke, but not with hash-bench's own byte sums"),
        "{stderr}"
    );
}
