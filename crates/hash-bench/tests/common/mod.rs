//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// A scratch directory on a disk-backed filesystem: eviction is a no-op on tmpfs, so
/// cache tests must not run there. Cargo's per-target temp dir lives in the target
/// directory, which is on disk in any sane setup; /var/tmp is the fallback.
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
