//! `--io`: both modes give GNU's output, and io_uring falls back to the pool,
//! saying so, where it cannot be used.
use std::ffi::OsStr;

use testenv::{hash, reference, show, Tree};

const BIN: &str = env!("CARGO_BIN_EXE_hash-async");

fn tree() -> Tree {
    let t = Tree::new();
    for i in 0..200 {
        t.file(
            format!("d{}/f{i}", i % 7).as_bytes(),
            &testenv::pattern(i * 997),
        );
    }
    t.file(b"big", &testenv::pattern(5 << 20));
    t
}

fn stats_line(io: &str, env: Option<(&str, &str)>) -> (Vec<u8>, String) {
    let t = tree();
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["--stats", "--io", io]).arg(t.root());
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let out = testenv::run(&mut cmd);
    assert!(out.status.success(), "{}", show(&out.stderr));
    assert_eq!(out.stdout, reference("-H", &[t.root()]), "--io {io}");
    (out.stdout, show(&out.stderr))
}

#[test]
fn pool_mode_says_pool() {
    let (_, err) = stats_line("pool", None);
    assert!(err.contains("(async (pool), "), "{err}");
}

#[test]
fn uring_falls_back_to_the_pool_and_says_why() {
    if !cfg!(debug_assertions) {
        eprintln!("skipped: the HASHRACE_TEST_NO_URING hook is compiled out of release builds");
        return;
    }
    let (_, err) = stats_line("uring", Some(("HASHRACE_TEST_NO_URING", "1")));
    assert!(
        err.contains("(async (pool (io_uring unavailable: disabled for a test"),
        "{err}"
    );
}

#[test]
fn uring_mode_uses_io_uring_where_the_kernel_allows_it() {
    let (_, err) = stats_line("uring", None);
    if let Err(why) = testenv::io_uring_usable() {
        eprintln!("skipped: io_uring cannot be set up here ({why})");
        assert!(err.contains("io_uring unavailable"), "{err}");
        return;
    }
    assert!(err.contains("(async (io_uring), "), "{err}");
}

#[test]
fn an_unknown_mode_is_a_usage_error() {
    let out = hash(
        BIN,
        &[OsStr::new("--io"), OsStr::new("mmap"), OsStr::new(".")],
    );
    assert_eq!(out.status.code(), Some(2));
}
