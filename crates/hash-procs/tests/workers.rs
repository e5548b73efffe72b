//! Failure handling that only `hash-procs` has: workers that die, and a parent
//! that dies. Workers read three test-only environment variables (see
//! `hash_core::strategy::procs`): `HASHRACE_TEST_WORKER_DELAY_MS` slows each file
//! down so that a run is reliably still going when we kill something, and
//! `HASHRACE_TEST_WORKER_ABORT` makes a worker abort on one file name, and
//! `HASHRACE_TEST_WORKER_READY` names a FIFO each worker writes its pid to once
//! it holds work (the tests wait on it instead of sleeping). The
//! hooks are compiled into debug builds only; under `cargo test --release`
//! the tests that need them say so and return.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use testenv::*;

const BIN: &str = env!("CARGO_BIN_EXE_hash-procs");

/// Whether the workers' test hooks exist in this build (see the module doc).
fn hooks_compiled() -> bool {
    if !cfg!(debug_assertions) {
        eprintln!("skipped: the worker test hooks are compiled out of release builds");
    }
    cfg!(debug_assertions)
}

fn tree(files: usize) -> Tree {
    let t = Tree::new();
    for i in 0..files {
        t.file(format!("f{i:03}").as_bytes(), &pattern(1000 + i));
    }
    t
}

/// Wait until process `pid` has exited (a pidfd becomes readable then),
/// failing the test after [`HANG`]. A pid that is already gone counts as exited.
fn wait_exit(what: &str, pid: u32) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as i32;
    if fd < 0 {
        return; // ESRCH: already reaped
    }
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid pollfd for the duration of the call.
    let ready = unsafe { libc::poll(&mut pfd, 1, HANG.as_millis() as i32) };
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    assert_eq!(ready, 1, "timed out waiting for {what} (pid {pid})");
}

fn kill(pid: u32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
}

/// Start `hash-procs -j N root` with each file delayed by `delay_ms`, and wait
/// until its `n` workers hold work.
fn start_with_workers(root: &std::path::Path, n: usize, delay_ms: u64) -> (Child, Vec<u32>) {
    // Each worker writes its pid to this FIFO when it starts. Opened
    // read-write here, it never reports end-of-file between two workers.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ready");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let child = Command::new(BIN)
        .args(["-j", &n.to_string()])
        .arg(root)
        .env("HASHRACE_TEST_WORKER_DELAY_MS", delay_ms.to_string())
        .env("HASHRACE_TEST_WORKER_READY", &fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().take(n) {
            let _ = tx.send(line.unwrap().parse::<u32>().unwrap());
        }
    });
    let workers: Vec<u32> = (0..n)
        .map(|_| {
            rx.recv_timeout(HANG)
                .expect("timed out waiting for the workers")
        })
        .collect();
    (child, workers)
}

#[test]
fn a_killed_worker_loses_nothing() {
    if !hooks_compiled() {
        return;
    }
    let t = tree(40);
    let expected = reference("-H", &[t.root()]);
    // Each worker reports once it holds files, so the victim is mid-batch.
    let (child, workers) = start_with_workers(t.root(), 2, 40);
    kill(workers[0]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        show(&out.stdout),
        show(&expected),
        "every file still hashed"
    );
    let err = show(&out.stderr);
    let notice = format!(
        "hash-procs: worker process {} was killed by signal 9 (SIGKILL); ",
        workers[0]
    );
    assert!(err.starts_with(&notice), "{err}");
    assert!(
        err.ends_with("file(s) retried on another worker\n"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "all files were hashed in the end"
    );
}

#[test]
fn a_file_that_kills_every_worker_is_reported_and_the_rest_hashed() {
    if !hooks_compiled() {
        return;
    }
    let t = tree(10);
    let poison = t.file(b"poison", b"boom");
    let expected = reference("-H", &[t.root()]);
    let out = run(Command::new(BIN)
        .args(["-j", "2"])
        .arg(t.root())
        .env("HASHRACE_TEST_WORKER_ABORT", "poison"));
    let poison_line = format!("  {}\n", poison.display());
    let expected: String = show(&expected)
        .lines()
        .map(|l| format!("{l}\n"))
        .filter(|l| !l.ends_with(&poison_line))
        .collect();
    assert_eq!(show(&out.stdout), expected);
    let err = show(&out.stderr);
    let verdict = format!(
        "hash-procs: {}: worker process died: was killed by signal 6 (SIGABRT)\n",
        poison.display()
    );
    assert!(err.contains(&verdict), "{err}");
    // Two attempts, each announced, then the verdict.
    let notices = err
        .lines()
        .filter(|l| l.starts_with("hash-procs: worker process "))
        .count();
    assert_eq!(notices, 2, "{err}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn killing_the_parent_leaves_no_orphan_workers() {
    if !hooks_compiled() {
        return;
    }
    let t = tree(20);
    // Workers that outlived the parent would sleep far past the test's
    // deadline: only the parent-death signal can end them in time.
    let (mut child, workers) = start_with_workers(t.root(), 2, 600_000);
    kill(child.id());
    child.wait().unwrap();
    for &w in &workers {
        wait_exit("a worker to die with its parent", w);
    }
}

#[test]
fn a_vanishing_file_is_reported_and_the_run_goes_on() {
    if !hooks_compiled() {
        return;
    }
    let t = tree(6);
    // The smallest file is hashed last, ~6 × 150 ms after the start.
    let doomed = t.path(b"f000");
    // Once the worker exists the walk is over: f000 is planned, not yet opened.
    let (child, _) = start_with_workers(t.root(), 1, 150);
    std::fs::remove_file(&doomed).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        show(&out.stderr),
        format!(
            "hash-procs: {}: No such file or directory\n",
            doomed.display()
        )
    );
    assert_eq!(show(&out.stdout).lines().count(), 5);
    assert_eq!(out.status.code(), Some(1));
}

/// The run is slowed to ~1 s (several 200 ms progress ticks), so a default
/// that wrongly drew on a pipe would show here; the decision is shared code,
/// so one binary covers all four.
#[test]
fn forced_progress_draws_on_a_pipe_and_the_default_does_not() {
    if !hooks_compiled() {
        return;
    }
    let t = tree(6);
    let slow = |extra: &[&str]| {
        run(Command::new(BIN)
            .args(["-j", "1"])
            .args(extra)
            .arg(t.root())
            .env("HASHRACE_TEST_WORKER_DELAY_MS", "150"))
    };
    let forced = slow(&["--progress"]);
    let err = show(&forced.stderr);
    assert!(err.contains(" MiB/s, ETA "), "{err}");
    assert!(err.contains("/6 files"), "{err}");
    assert_eq!(forced.stdout, reference("-H", &[t.root()]));
    let default = slow(&[]);
    assert_eq!(show(&default.stderr), "");
}

#[test]
fn only_the_file_being_hashed_is_blamed_when_a_batch_dies() {
    if !hooks_compiled() {
        return;
    }
    // Equal small files go to one worker in one batch; the poison sits in the
    // middle, after files the worker has already answered.
    let t = Tree::new();
    for i in 0..10 {
        t.file(format!("f{i}").as_bytes(), &pattern(1000));
    }
    let poison = t.file(b"f4-poison", &pattern(1000));
    let out = run(Command::new(BIN)
        .args(["-j", "1"])
        .arg(t.root())
        .env("HASHRACE_TEST_WORKER_ABORT", "poison"));
    let text = show(&out.stdout);
    assert_eq!(text.lines().count(), 10, "{text}");
    assert!(!text.contains("poison"));
    let err = show(&out.stderr);
    let verdicts: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(": worker process died:"))
        .collect();
    assert_eq!(verdicts.len(), 1, "{err}");
    assert!(
        verdicts[0].starts_with(&format!("hash-procs: {}: ", poison.display())),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn no_argument_turns_a_run_into_a_worker() {
    // The old magic first argument is now an ordinary directory name.
    let t = Tree::new();
    t.file(b"__hashrace_worker/x", b"x\n");
    t.file(b"y", b"y\n");
    let gnu = run(Command::new("sha256sum")
        .args(["__hashrace_worker/x", "y"])
        .current_dir(t.root()));
    let out = run(Command::new(BIN)
        .args(["__hashrace_worker", "y"])
        .current_dir(t.root()));
    assert_eq!(show(&out.stdout), show(&gnu.stdout));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
}

#[test]
fn the_worker_variable_without_a_hash_procs_parent_is_ignored() {
    let t = tree(3);
    let expected = reference("-H", &[t.root()]);
    // Our parent is this test binary, not hash-procs: the first value names
    // the real parent, the second nobody.
    for value in [std::process::id().to_string(), "1".to_owned()] {
        let out = run(Command::new(BIN)
            .arg(t.root())
            .env("HASHRACE_PROCS_WORKER", &value));
        assert_eq!(show(&out.stdout), show(&expected), "{value}");
        assert_eq!(out.status.code(), Some(0), "{value}");
    }
}
