//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// A scratch directory on a disk-backed filesystem: eviction is a no-op on tmpfs, so
/// cache tests must not run there. Cargo's per-target temp dir lives in the target
/// directory, which is on disk in any sane setup; /var/tmp is the fallback.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn disk_tempdir() -> tempfile::TempDir {
    let candidates = [
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        PathBuf::from("/var/tmp"),
    ];
    for c in &candidates {
        std::fs::create_dir_all(c).unwrap();
        if hash_bench::cache::fs_check(c, false).is_ok() {
            return tempfile::tempdir_in(c).unwrap();
        }
    }
    panic!("no disk-backed scratch directory among {candidates:?}: cache tests need one");
}

/// Whether every tool is on PATH; says which is missing when one is (the test then
/// skips, since what it compares against is not there).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn have_all(tools: &[&str]) -> bool {
    match tools.iter().find(|t| hash_bench::util::which(t).is_none()) {
        Some(t) => {
            eprintln!("skipped: {t} is not installed");
            false
        }
        None => true,
    }
}

/// What GNU prints for `root` (relative to `dir`): the reference every hashrace and
/// Python program is held to.
#[allow(dead_code)]
pub fn gnu_sha256sum(dir: &std::path::Path, root: &str) -> std::process::Output {
    let out = testenv::run(
        std::process::Command::new("sh")
            .args([
                "-c",
                &format!("find -H {root} -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum"),
            ])
            .current_dir(dir),
    );
    assert!(out.status.success(), "{out:?}");
    out
}
