//! Generation is deterministic across machines and releases: generating committed specs
//! reproduces their committed manifest digests, which were computed with `sha256sum`
//! (an independent implementation), not with this code.

mod common;

use std::path::Path;
use std::process::Command;

use hash_bench::gen::{generate, GenOptions};
use hash_bench::spec::Spec;

fn spec(name: &str) -> Spec {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets")
        .join(format!("{name}.json"));
    Spec::load(&p).unwrap()
}

fn check(name: &str) {
    let s = spec(name);
    let expected = s
        .expected_manifest_sha256
        .clone()
        .expect("committed digest");
    let root = common::disk_tempdir();
    let opts = GenOptions {
        progress: false,
        ..GenOptions::default()
    };
    let r = generate(&s, root.path(), &opts).unwrap();
    assert_eq!(r.manifest_sha256, expected);
    assert_eq!(r.matches_expected, Some(true));

    // And straight from the reference pipeline, where the tools exist.
    if hash_bench::util::which("sha256sum").is_none() {
        eprintln!("skipped the GNU cross-check of {name}: sha256sum is not installed");
    } else {
        let out = testenv::run(
            Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "find -H {name} -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum"
                ))
                .current_dir(root.path()),
        );
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.split_whitespace().next(), Some(expected.as_str()));
    }
}

#[test]
fn smoke_is_golden() {
    check("smoke");
}

#[test]
fn small_quick_is_golden() {
    check("small-quick");
}

#[test]
fn every_default_sweep_dataset_has_a_committed_digest() {
    for name in [
        "shards",
        "small",
        "huge",
        "mixed",
        "shards-quick",
        "small-quick",
        "huge-quick",
        "mixed-quick",
        "smoke",
    ] {
        assert!(
            spec(name).expected_manifest_sha256.is_some(),
            "{name} has no committed digest"
        );
    }
}
