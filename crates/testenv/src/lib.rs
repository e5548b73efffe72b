//! The test environment shared by the four binaries' integration tests.
//!
//! `tests/conformance.rs` holds every binary to one contract: each test runs on
//! each binary through [`each_binary`] and a [`TestEnv`] (fd's `tests/testenv`
//! is the model). Expected output always comes from an independent source: GNU
//! `find | sort | xargs sha256sum` run on the same tree, never from hash-core.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use hash_core::READ_BUF_SIZE;

pub mod gnu_cases;
pub mod process;
pub mod sshfs;
mod test_env;

pub use process::*;
pub use test_env::{check_built_binary, each_binary, TestEnv};

/// A temporary directory tree that everyone (including `nobody`) can read.
#[derive(Debug)]
pub struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    /// An empty tree.
    pub fn new() -> Tree {
        let dir = tempfile::Builder::new()
            .prefix("hashrace-test")
            .tempdir()
            .unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        Tree { dir }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `root/rel`, where `rel` may hold any bytes.
    pub fn path(&self, rel: &[u8]) -> PathBuf {
        self.root().join(OsStr::from_bytes(rel))
    }

    /// Write a file (creating parent directories), world-readable.
    pub fn file(&self, rel: &[u8], content: &[u8]) -> PathBuf {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, content).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        p
    }

    /// A symbolic link `rel -> target`.
    pub fn link(&self, rel: &[u8], target: &str) {
        symlink(target, self.path(rel)).unwrap();
    }

    /// A FIFO.
    pub fn fifo(&self, rel: &[u8]) -> PathBuf {
        let p = self.path(rel);
        mkfifo(&p, 0o644);
        p
    }

    /// The tree every conformance test uses: awkward sizes and awkward names.
    pub fn nasty() -> Tree {
        let t = Tree::new();
        let n = READ_BUF_SIZE;
        t.file(b"empty", b"");
        t.file(b"sizes/buf-minus-1", &pattern(n - 1));
        t.file(b"sizes/buf", &pattern(n));
        t.file(b"sizes/buf-plus-1", &pattern(n + 1));
        t.file(b"sizes/three-bufs", &pattern(3 * n + 17));
        t.file(b"deep/a/b/c/d/file", b"deep\n");
        t.file(b"deep/a-b", b"sorts before deep/a/\n");
        t.file(b"with space", b"space\n");
        t.file(b"-leading-dash", b"dash\n");
        t.file(b"back\\slash", b"backslash\n");
        t.file(b"new\nline", b"newline\n");
        t.file(b"carriage\rreturn", b"cr\n");
        t.file(b"invalid-\xff\xfe-utf8", b"bytes\n");
        t.file(b"UPPER", b"sorts before lower case\n");
        t.link(b"link-to-file", "with space");
        t.link(b"dangling", "does-not-exist");
        t.link(b"loop-a", "loop-b");
        t.link(b"loop-b", "loop-a");
        t.link(b"deep/a/up", "../..");
        t.fifo(b"fifo");
        t
    }
}

impl Default for Tree {
    fn default() -> Self {
        Tree::new()
    }
}

/// The workspace binary `name`, found beside the running test's executable
/// (`target/<profile>/deps/..`), where `cargo test --workspace` builds it.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test executable lives in target/<profile>/deps");
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test --workspace` so every binary is built",
        bin.display()
    );
    bin
}

/// Make a FIFO at `path` with permissions `mode`.
pub fn mkfifo(path: &Path, mode: u32) {
    use rustix::fs::{mkfifoat, Mode, CWD};
    mkfifoat(CWD, path, Mode::from_raw_mode(mode))
        .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
}

/// Deterministic, non-repeating-looking content of `len` bytes.
pub fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9 ^ len as u32;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// What GNU tools print for this tree: `find OPT ROOT -type f -print0 |
/// LC_ALL=C sort -z | xargs -0 -r sha256sum` (stdout only).
pub fn reference(find_opt: &str, roots: &[&Path]) -> Vec<u8> {
    let script = format!(
        "find {find_opt} \"$@\" -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 -r sha256sum"
    );
    let out = run(Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .args(roots));
    assert!(out.status.success(), "reference pipeline failed: {out:?}");
    out.stdout
}

/// GNU `sha256sum` of individual files.
pub fn sha256sum(files: &[&Path]) -> Vec<u8> {
    let out = run(Command::new("sha256sum").args(files));
    assert!(out.status.success(), "sha256sum failed: {out:?}");
    out.stdout
}

/// Whether this process may set up an io_uring, asked of the kernel directly
/// (`io_uring_setup(2)`, not through the code under test); `Err` says why not
/// (an old kernel, `kernel.io_uring_disabled`, a seccomp filter).
pub fn io_uring_usable() -> Result<(), String> {
    io_uring::IoUring::new(1)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// `bin args...`, run with [`run`].
pub fn hash(bin: &str, args: &[&OsStr]) -> Output {
    run(Command::new(bin).args(args))
}

/// Bytes as text for assertion messages (lossy, escapes visible).
pub fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `--stats` line on files in flight in `stderr` ("in flight: ..."),
/// and the depth it opens with, if it opens with one ("in flight: 16 in
/// flight, settled ..."; a cap opens "at most 128"). Panics without one.
pub fn in_flight(stderr: &str) -> (&str, Option<usize>) {
    let line = stderr
        .lines()
        .find(|l| l.contains("in flight: "))
        .unwrap_or_else(|| panic!("no in-flight line in {stderr}"));
    let depth = line
        .split("in flight: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok());
    (line, depth)
}

/// A world-readable copy of `bin`, for running it as `nobody`: the checkout
/// it was built in may sit under a directory `nobody` cannot enter. Keep the
/// returned directory alive while the copy is used.
pub fn nobody_copy(bin: impl AsRef<Path>) -> (tempfile::TempDir, PathBuf) {
    let bin = bin.as_ref();
    let dir = tempfile::Builder::new()
        .prefix("hashrace-bin")
        .tempdir()
        .unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.path().join(bin.file_name().unwrap());
    fs::copy(bin, &copy).unwrap();
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
    wait_until_executable(&copy);
    (dir, copy)
}

/// Run a freshly written executable once (`--version`) until `exec` stops
/// failing with "Text file busy": while the copy was being written, another
/// test thread may have forked a child that still holds the write descriptor
/// until its own `exec` (close-on-exec closes it only then). Once one `exec`
/// succeeds, no process can hold it any more: it was closed before.
fn wait_until_executable(path: &Path) {
    for _ in 0..1000 {
        match crate::try_run(Command::new(path).arg("--version")) {
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::TXTBSY.raw_os_error()) => {
                std::thread::yield_now();
            }
            Err(e) => panic!("{}: {e}", path.display()),
            Ok(_) => return,
        }
    }
    panic!("{}: still busy after 1000 tries", path.display());
}

/// A command running `program` as the unprivileged `nobody` user, so that
/// permission errors are real even though CI runs as root (which ignores
/// permission bits). A user who is not root is unprivileged already (and
/// cannot change user): `program` runs as that user.
pub fn as_nobody(program: &Path) -> Command {
    if !rustix::process::geteuid().is_root() {
        return Command::new(program);
    }
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program);
    cmd
}
