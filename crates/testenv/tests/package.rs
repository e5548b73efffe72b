//! The package's promises that the build itself decides: the three binaries that do
//! not hash asynchronously link neither tokio nor io-uring (hash-core's `async`
//! feature, which only hash-async turns on), so `cargo install hash-serial` builds
//! neither.

use std::process::Command;

/// The crates in `package`'s normal dependency tree, as `cargo tree` resolves them
/// for that package alone (features are unified only among the packages built).
fn dependencies(package: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
        ])
        .arg(package)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn only_hash_async_depends_on_tokio_and_io_uring() {
    let others = hash_core::Strategy::ALL.into_iter().map(|s| s.binary());
    for package in others.filter(|b| *b != "hash-async") {
        let deps = dependencies(package);
        assert!(deps.iter().any(|d| d == "hash-core"), "{package}: {deps:?}");
        for absent in ["tokio", "io-uring"] {
            assert!(
                !deps.iter().any(|d| d == absent),
                "{package} depends on {absent}"
            );
        }
    }
    let deps = dependencies("hash-async");
    for present in ["tokio", "io-uring"] {
        assert!(deps.iter().any(|d| d == present), "hash-async: {deps:?}");
    }
}
