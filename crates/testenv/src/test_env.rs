//! One built binary under test, and the loop that holds every binary to a test.
//!
//! [`TestEnv`] knows a binary's path, its name and the argument variants it must
//! give the same output for (job counts, I/O modes), so a test says what to run
//! and not how to find or spell it (fd's `tests/testenv` is the model). The
//! binaries come from [`Strategy::ALL`], so a new strategy is tested without
//! touching a test. [`each_binary`] runs a test on every one of them and keeps
//! going past a failure, so one run shows every binary that breaks a rule.

use std::ffi::OsStr;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hash_core::Strategy;

/// A built hasher binary and what it accepts.
#[derive(Debug, Clone)]
pub struct TestEnv {
    strategy: Strategy,
    path: PathBuf,
}

impl TestEnv {
    /// The binary that runs `strategy`, as `cargo test --workspace` built it
    /// (see [`crate::binary`]).
    pub fn new(strategy: Strategy) -> TestEnv {
        TestEnv {
            strategy,
            path: crate::binary(strategy.binary()),
        }
    }

    /// The binary at `path` (a binary crate's `CARGO_BIN_EXE_*`), which is
    /// to run `strategy`.
    pub fn at(strategy: Strategy, path: impl Into<PathBuf>) -> TestEnv {
        TestEnv {
            strategy,
            path: path.into(),
        }
    }

    /// Every strategy's binary, in [`Strategy::ALL`] order.
    pub fn all() -> Vec<TestEnv> {
        Strategy::ALL.into_iter().map(TestEnv::new).collect()
    }

    /// The binary's name (`hash-threads`), as it names itself in messages.
    pub fn name(&self) -> &'static str {
        self.strategy.binary()
    }

    /// The binary's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The strategy it runs.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Whether it takes `-j/--jobs`.
    pub fn is_parallel(&self) -> bool {
        self.strategy.is_parallel()
    }

    /// The option sets that must not change its output: for a parallel binary
    /// several job counts (one, fewer and more workers than cores, more than
    /// files in most trees) and its default; for one with `--io`, both I/O modes
    /// too (its default is io_uring where available, so `pool` is asked for).
    pub fn variants(&self) -> Vec<Vec<&'static str>> {
        if !self.is_parallel() {
            return vec![vec![]];
        }
        let mut v = vec![
            vec!["-j", "1"],
            vec!["-j", "2"],
            vec!["-j", "3"],
            vec!["-j", "16"],
            vec![],
        ];
        if self.strategy.has_io_option() {
            v.push(vec!["--io", "pool"]);
            v.push(vec!["--io", "uring", "-j", "3"]);
        }
        v
    }

    /// A command for the binary, to add arguments, a directory or input to.
    pub fn command(&self) -> Command {
        Command::new(&self.path)
    }

    /// Run it with options `opts` then `paths`, stdin from /dev/null, within
    /// the hang limit (see [`crate::run`]).
    pub fn run(&self, opts: &[&str], paths: &[&Path]) -> Output {
        crate::run(self.command().args(opts).args(paths))
    }

    /// Run it with raw arguments (names that are not UTF-8, or an order
    /// [`TestEnv::run`] cannot give).
    pub fn run_os(&self, args: &[&OsStr]) -> Output {
        crate::run(self.command().args(args))
    }

    /// A world-readable copy of the binary for running as `nobody` (see
    /// [`crate::nobody_copy`]); keep the directory alive while it is used.
    pub fn nobody_copy(&self) -> (tempfile::TempDir, PathBuf) {
        crate::nobody_copy(&self.path)
    }
}

/// Run `test` on every binary ([`TestEnv::all`]), going on past a failure,
/// then fail naming each binary that failed. Each run's panic message is
/// printed where it happens, under a line naming the binary.
pub fn each_binary(test: impl Fn(&TestEnv)) {
    let mut failed = Vec::new();
    for env in TestEnv::all() {
        eprintln!("=== {} ({})", env.name(), env.path().display());
        // Nothing is shared between the runs but what `test` captured, which
        // a test only reads, so a panic cannot leave it half-changed.
        if panic::catch_unwind(AssertUnwindSafe(|| test(&env))).is_err() {
            failed.push(env.name());
        }
    }
    assert!(
        failed.is_empty(),
        "failed on {} (messages above, under '=== NAME')",
        failed.join(", ")
    );
}

/// For a binary crate's own test: `built`, the binary it built (its
/// `CARGO_BIN_EXE_*`), is the one [`each_binary`] runs for `strategy`, so the
/// conformance tests see this build; and it runs `strategy`, under its own
/// name, which the conformance tests (each binary held to the same output)
/// cannot tell.
pub fn check_built_binary(strategy: Strategy, built: &str) {
    let env = TestEnv::at(strategy, built);
    assert_eq!(
        TestEnv::new(strategy).path(),
        env.path(),
        "the conformance tests look for {} elsewhere",
        env.name()
    );
    let t = crate::Tree::new();
    let f = t.file(b"f", b"abc");
    let out = env.run(&["--json"], &[t.root()]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::show(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tool"], env.name());
    assert_eq!(report["summary"]["strategy"], strategy.name());
    let gnu = crate::show(&crate::sha256sum(&[&f]));
    assert_eq!(report["files"][0]["sha256"], gnu[..64]);
}
