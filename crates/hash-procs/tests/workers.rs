//! Failure handling that only `hash-procs` has: workers that die, and a parent
//! that dies. Workers read test-only environment variables (see
//! `hash_core::strategy::procs`): `HASHRACE_TEST_WORKER_ABORT` makes a worker
//! abort on one file name (when it receives it), `HASHRACE_TEST_WORKER_PANIC`
//! makes whichever of a worker's threads reads a file of that name panic,
//! `HASHRACE_TEST_WORKER_WAIT=1` makes every file a worker answers count as a
//! read that waited for the disk (so a local disk's worker adds readers as
//! on a cold tree),
//! and `HASHRACE_TEST_WORKER_READY` names a FIFO each
//! worker opens and writes its pid to once it holds work, before it hashes
//! anything.
//!
//! Nothing here waits on a clock. The READY FIFO doubles as a gate ([`Gate`]):
//! the test fills its pipe first, so a worker that holds work opens the FIFO
//! (an inotify event the test waits on) and then blocks writing its pid, with
//! every file it holds unanswered, until the test drains the pipe. A worker
//! held there is deterministically "mid-run" for as long as the test needs.
//!
//! The hooks exist only with hash-core's `test-hooks` feature, which the
//! shared test environment turns on, so every test build has them.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use testenv::*;

const BIN: &str = env!("CARGO_BIN_EXE_hash-procs");

fn tree(files: usize) -> Tree {
    let t = Tree::new();
    for i in 0..files {
        t.file(format!("f{i:03}").as_bytes(), &pattern(1000 + i));
    }
    t
}

/// Wait until process `pid` has exited (a pidfd becomes readable then),
/// failing the test after [`hang_limit`]. A pid that is already gone counts as exited.
fn wait_exit(what: &str, pid: u32) {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use rustix::io::Errno;
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    let raw = Pid::from_raw(pid as i32).expect("not pid 0");
    let fd = match pidfd_open(raw, PidfdFlags::empty()) {
        Ok(fd) => fd,
        // Only "no such process" means it is gone; any other failure (no
        // pidfd on this kernel, a seccomp filter) must not pass unchecked.
        Err(Errno::SRCH) => return,
        Err(e) => panic!("pidfd_open for {what} (pid {pid}): {e}"),
    };
    let limit = Timespec::try_from(hang_limit()).expect("the hang limit fits a timespec");
    let ready = loop {
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&limit)) {
            // A signal to the test process is no verdict on the worker.
            Err(Errno::INTR) => continue,
            other => break other.unwrap_or_else(|e| panic!("poll for {what} (pid {pid}): {e}")),
        }
    };
    assert_eq!(ready, 1, "timed out waiting for {what} (pid {pid})");
}

/// The live children of `parent`, from /proc/PID/stat.
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                rest.split_whitespace().nth(1) == Some(&parent.to_string())
            })
        })
        .collect()
}

/// The READY FIFO as a gate (see the module doc): workers that hold work stop
/// in front of it, and pass when the test calls [`Gate::release`].
struct Gate {
    _dir: tempfile::TempDir,
    path: PathBuf,
    /// Our read-write end: with it open, a worker's open never blocks and its
    /// write never meets a closed pipe; it holds the filler.
    keeper: File,
    /// Bytes of filler in the pipe.
    filler: usize,
    /// Opens of the FIFO: each is a worker holding work.
    opened: OpenWatch,
}

impl Gate {
    fn new() -> Gate {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready");
        mkfifo(&path, 0o600);
        let mut keeper = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .unwrap();
        // Fill the pipe with whole PIPE_BUF writes (each takes a buffer of its
        // own, never merging into a partly filled one), so that no further
        // write fits, however short.
        let chunk = [b'.'; libc::PIPE_BUF];
        let mut filler = 0;
        loop {
            match keeper.write(&chunk) {
                Ok(n) => filler += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("filling the gate: {e}"),
            }
        }
        // Watch only now, so that our own open is not an event.
        let opened = OpenWatch::new(&path);
        Gate {
            _dir: dir,
            path,
            keeper,
            filler,
            opened,
        }
    }

    /// The path to give workers as `HASHRACE_TEST_WORKER_READY`.
    fn path(&self) -> &Path {
        &self.path
    }

    /// Wait until a worker has opened the FIFO: it holds work, has answered
    /// none of it, and now blocks writing its pid into the full pipe.
    fn wait_held(&self) {
        self.opened.wait("a worker to hold work");
    }

    /// Let held workers go and later ones pass: unlink the FIFO (a worker that
    /// cannot open it carries on) and read the filler back, which makes room
    /// for every pending pid. The keeper stays open until the gate is dropped,
    /// so no worker's write meets a closed pipe.
    fn release(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let mut buf = vec![0u8; self.filler];
        let mut got = 0;
        while got < self.filler {
            match self.keeper.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => panic!("draining the gate: {e}"),
            }
        }
    }
}

/// `hash-procs -j JOBS root` (plus `extra` options) once one of its workers
/// is held at `gate`, and the pids of all its workers (every one is started
/// before any is given work).
fn start_held(root: &Path, gate: &Gate, jobs: usize, extra: &[&str]) -> (Child, Vec<u32>) {
    let (child, workers) = held_children(root, gate, jobs, extra);
    // None has died, so there is no replacement among them.
    assert_eq!(workers.len(), jobs, "workers: {workers:?}");
    (child, workers)
}

/// `hash-procs -j JOBS root` (plus `extra`) once one of its workers is held
/// at `gate`, and the pids of every child it has then.
fn held_children(root: &Path, gate: &Gate, jobs: usize, extra: &[&str]) -> (Child, Vec<u32>) {
    let child = Command::new(BIN)
        .args(["-j", &jobs.to_string()])
        .args(extra)
        .arg(root)
        .env("HASHRACE_TEST_WORKER_READY", gate.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    gate.wait_held();
    let workers = children_of(child.id());
    (child, workers)
}

/// `hash-procs -j 1` on a tree of 40 files, its worker sent `signal` while it holds
/// files and has answered none of them: every file is still hashed, exit 0, and
/// stderr is one line, `hash-procs: worker process PID <said>; N file(s) retried on
/// another worker`.
fn worker_signalled_loses_nothing(signal: rustix::process::Signal, said: &str) {
    let t = tree(40);
    let expected = reference("-H", &[t.root()]);
    let mut gate = Gate::new();
    let (child, workers) = start_held(t.root(), &gate, 1, &[]);
    let worker = workers[0];
    let pid = rustix::process::Pid::from_raw(worker as i32).expect("not pid 0");
    rustix::process::kill_process(pid, signal).unwrap();
    gate.release();
    let out = wait_output(child, &format!("hash-procs after its worker {said}"));
    assert_eq!(
        show(&out.stdout),
        show(&expected),
        "every file still hashed"
    );
    let err = show(&out.stderr);
    let notice = format!("hash-procs: worker process {worker} {said}; ");
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
fn a_killed_worker_loses_nothing() {
    worker_signalled_loses_nothing(
        rustix::process::Signal::KILL,
        "was killed by signal 9 (SIGKILL)",
    );
}

#[test]
fn a_stopped_worker_is_ended_and_its_files_hashed_by_another() {
    worker_signalled_loses_nothing(
        rustix::process::Signal::STOP,
        "was stopped for 5 s while it held files, so it was ended",
    );
}

/// Also with workers that read several files at once, on threads of their
/// own (`--max-in-flight` above `-j`, as on a network file system): a worker
/// that dies loses every file it held, and each is retried alone. There a
/// panic on one of a worker's threads ends the worker too: the file that
/// thread held would otherwise never be answered, and the run would wait
/// for it.
#[test]
fn a_file_that_kills_every_worker_is_reported_and_the_rest_hashed() {
    let t = tree(10);
    let poison = t.file(b"poison", b"boom");
    let expected = reference("-H", &[t.root()]);
    let poison_line = format!("  {}\n", poison.display());
    let expected: String = show(&expected)
        .lines()
        .map(|l| format!("{l}\n"))
        .filter(|l| !l.ends_with(&poison_line))
        .collect();
    let several = ["--max-in-flight", "6"];
    for (hook, depth, wait) in [
        ("HASHRACE_TEST_WORKER_ABORT", &[][..], "0"),
        ("HASHRACE_TEST_WORKER_ABORT", &several[..], "0"),
        ("HASHRACE_TEST_WORKER_PANIC", &several[..], "0"),
        // A local disk's worker that added readers: the abort comes as the
        // file is received (on its main thread) with readers holding others;
        // the panic on whichever thread reads the file.
        ("HASHRACE_TEST_WORKER_ABORT", &[][..], "1"),
        ("HASHRACE_TEST_WORKER_PANIC", &[][..], "1"),
    ] {
        let out = run(Command::new(BIN)
            .args(["-j", "2"])
            .args(depth)
            .arg(t.root())
            .env(hook, "poison")
            .env("HASHRACE_TEST_WORKER_WAIT", wait));
        let what = format!("{hook} {depth:?} wait {wait}");
        assert_eq!(show(&out.stdout), expected, "{what}");
        let err = show(&out.stderr);
        let verdict = format!(
            "hash-procs: {}: worker process died: was killed by signal 6 (SIGABRT)\n",
            poison.display()
        );
        assert!(err.contains(&verdict), "{what}: {err}");
        // Two attempts, each announced, then the verdict.
        let notices = err
            .lines()
            .filter(|l| l.starts_with("hash-procs: worker process "))
            .count();
        assert_eq!(notices, 2, "{what}: {err}");
        assert_eq!(out.status.code(), Some(1), "{what}");
    }
}

/// A local disk's worker whose reads wait for the disk adds readers,
/// threads of its own that share the files it holds: every file is still
/// answered once and printed in order, and `--stats` counts the readers.
#[test]
fn readers_added_while_files_wait_hash_every_file_once() {
    // Empty files too: an answer left unsent by one reader while another
    // read the last file queued was sent only by the progress reporter,
    // which says nothing (so sends nothing) when no byte was hashed; the
    // run then hung (`run` fails a test after a hang limit). That took a
    // race between readers: one run in five hung, so the empty tree is run
    // ten times.
    for (size, runs) in [(Some(100), 1), (None, 10)] {
        let t = Tree::new();
        for i in 0..600 {
            let data = size.map_or_else(Vec::new, |s| pattern(s + i));
            t.file(format!("d{}/f{i:03}", i % 7).as_bytes(), &data);
        }
        for _ in 0..runs {
            readers_answer_every_file_once(t.root());
        }
    }
}

fn readers_answer_every_file_once(root: &Path) {
    let expected = reference("-H", &[root]);
    let out = run(Command::new(BIN)
        .args(["-j", "2", "--stats"])
        .arg(root)
        .env("HASHRACE_TEST_WORKER_WAIT", "1"));
    let err = show(&out.stderr);
    assert_eq!(show(&out.stdout), show(&expected), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    // No worker was lost (an answer repeated, or to a file it did not
    // hold, ends a worker and retries its files: the output alone would
    // not show it).
    assert!(!err.contains("hash-procs: worker process"), "{err}");
    // "... up to 64: N at most", N counting both workers' readers.
    let (line, _) = in_flight(&err);
    let readers: usize = line
        .rsplit(": ")
        .next()
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no readers in {line}"));
    assert!(readers > 2, "{line}");
}

#[test]
fn workers_started_during_the_walk_that_the_run_does_not_need_are_ended() {
    // `-j 3` starts a worker per CPU (up to three) while the walk runs,
    // before the run knows it has one file; by the time a worker holds that
    // file, the others must be gone (killed and reaped: a zombie would still
    // be listed).
    let t = tree(1);
    let expected = reference("-H", &[t.root()]);
    let mut gate = Gate::new();
    let (child, workers) = held_children(t.root(), &gate, 3, &[]);
    gate.release();
    let out = wait_output(child, "hash-procs -j 3 on one file");
    assert_eq!(workers.len(), 1, "workers: {workers:?}");
    assert_eq!(show(&out.stdout), show(&expected));
    assert_eq!(show(&out.stderr), "");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn killing_the_parent_leaves_no_orphan_workers() {
    let t = tree(20);
    // A worker that outlived the parent would stay blocked at the gate, which
    // is only released when this test ends: only the parent-death signal can
    // end it in time.
    let gate = Gate::new();
    let (mut child, workers) = start_held(t.root(), &gate, 2, &[]);
    kill(child.id());
    wait_status(&mut child, "the killed hash-procs");
    for &w in &workers {
        wait_exit("a worker to die with its parent", w);
    }
}

#[test]
fn a_vanishing_file_is_reported_and_the_run_goes_on() {
    let t = tree(6);
    let doomed = t.path(b"f000");
    // Once the worker is held the walk is over and nothing has been opened:
    // f000 is planned, and goes before the worker reaches it.
    let mut gate = Gate::new();
    let (child, _) = start_held(t.root(), &gate, 1, &[]);
    std::fs::remove_file(&doomed).unwrap();
    gate.release();
    let out = wait_output(child, "hash-procs with a vanished file");
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

/// Both runs are held at their first file: the forced one until it has drawn
/// (a progress tick has passed), the default one from before the forced one
/// started until after, so a default that wrongly drew on a pipe had at least
/// as long to show it. The decision is shared code, so one binary covers all four.
#[test]
fn forced_progress_draws_on_a_pipe_and_the_default_does_not() {
    let t = tree(6);
    let mut default_gate = Gate::new();
    let (default, _) = start_held(t.root(), &default_gate, 1, &[]);
    let mut forced_gate = Gate::new();
    let (mut forced, _) = start_held(t.root(), &forced_gate, 1, &["--progress"]);
    // Read the forced run's stderr ourselves: its first line is a draw (no
    // file can finish while the worker is held), the rest comes at the end.
    let (drew_tx, drew_rx) = mpsc::channel();
    let (err_tx, err_rx) = mpsc::channel();
    let mut stderr = BufReader::new(forced.stderr.take().unwrap());
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = stderr.read_until(b'\n', &mut all);
        let _ = drew_tx.send(());
        let _ = stderr.read_to_end(&mut all);
        let _ = err_tx.send(all);
    });
    drew_rx
        .recv_timeout(hang_limit())
        .expect("timed out waiting for a forced progress line");
    forced_gate.release();
    default_gate.release();
    let forced = wait_output(forced, "hash-procs --progress");
    let err = show(
        &err_rx
            .recv_timeout(hang_limit())
            .expect("the forced run's stderr never closed"),
    );
    assert!(err.contains("B/s, ETA "), "{err}");
    assert!(err.contains("/6 files"), "{err}");
    assert_eq!(forced.stdout, reference("-H", &[t.root()]));
    let default = wait_output(default, "hash-procs without --progress");
    assert_eq!(show(&default.stderr), "");
    assert_eq!(default.stdout, forced.stdout);
}

#[test]
fn only_the_file_being_hashed_is_blamed_when_a_batch_dies() {
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
