//! Child processes with a deadline. Every wait in the tests goes through here,
//! so a hang fails the test with the command's name instead of stalling CI.
//!
//! The machines the tests run on are shared and often busy, so the deadline is
//! generous ([`hang_limit`]: 120 s, or `HASHRACE_TEST_TIMEOUT_SECS`) and is only
//! ever a verdict of "hung", never a measure of speed. The wait is an event, not
//! a poll: a thread blocks in `waitid(WNOWAIT)`, which sees the exit without
//! reaping it (so the `Child` stays ours to kill), and the test waits on a
//! channel with a timeout. Both output pipes are drained on their own threads,
//! so a chatty child cannot block on a full pipe while we wait for it to exit.

use std::io::{self, Read, Write};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// The environment variable that overrides [`hang_limit`], in seconds.
pub const TIMEOUT_ENV: &str = "HASHRACE_TEST_TIMEOUT_SECS";

/// How long any one child process may take before the test calls it a hang:
/// 120 s unless [`TIMEOUT_ENV`] says otherwise. Generous on purpose: a busy
/// machine must not turn a slow run into a failure.
pub fn hang_limit() -> Duration {
    std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(120), Duration::from_secs)
}

/// Run `cmd` (stdin from /dev/null) to completion, failing the test if it
/// takes longer than [`hang_limit`].
pub fn run(cmd: &mut Command) -> Output {
    run_with_stdin(cmd, Stdio::null())
}

/// [`run`] with `stdin` as the child's standard input.
pub fn run_with_stdin(cmd: &mut Command, stdin: Stdio) -> Output {
    run_full(cmd, stdin, hang_limit())
}

/// Run `cmd` to completion, failing the test if it takes longer than `limit`
/// (for commands that wait on something slower than a hasher, like a job queue).
pub fn run_within(cmd: &mut Command, limit: Duration) -> Output {
    run_full(cmd, Stdio::null(), limit)
}

/// [`run`] with `input` written to the child's standard input (from a thread,
/// so a child that writes before it reads cannot deadlock with us).
pub fn run_with_input(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = spawn(cmd, Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let input = input.to_vec();
    // A child that exits without reading everything closes the pipe: not our
    // concern here, the caller judges its output and status.
    std::thread::spawn(move || stdin.write_all(&input));
    wait_output_within(child, &format!("{cmd:?}"), hang_limit())
}

/// [`run`], but a program that cannot be started at all (not installed) is an
/// `Err` instead of a failed test: for probing whether a tool exists.
pub fn try_run(cmd: &mut Command) -> io::Result<Output> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    Ok(wait_output_within(child, &format!("{cmd:?}"), hang_limit()))
}

fn run_full(cmd: &mut Command, stdin: Stdio, limit: Duration) -> Output {
    let child = spawn(cmd, stdin);
    wait_output_within(child, &format!("{cmd:?}"), limit)
}

fn spawn(cmd: &mut Command, stdin: Stdio) -> Child {
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

/// Wait for a child the test started itself, collecting whatever of its stdout
/// and stderr is still piped (a pipe the test took is left to the test). Fails
/// the test, killing the child, after [`hang_limit`]; `what` names it then.
pub fn wait_output(child: Child, what: &str) -> Output {
    wait_output_within(child, what, hang_limit())
}

/// [`wait_output`] with an explicit `limit`.
pub fn wait_output_within(mut child: Child, what: &str, limit: Duration) -> Output {
    let stdout = child.stdout.take().map(drain);
    let stderr = child.stderr.take().map(drain);
    let status = wait_status_within(&mut child, what, limit);
    // The pipes close when the child exits, unless something it started still
    // holds them: that is a hang too, with its own message.
    let collect = |pipe: Option<Receiver<io::Result<Vec<u8>>>>, name: &str| match pipe {
        None => Vec::new(),
        Some(rx) => match rx.recv_timeout(limit) {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(e)) => panic!("{what}: reading its {name}: {e}"),
            Err(_) => panic!(
                "{what} exited ({status}), but its {name} was still open {limit:?} later: \
                 a process it started holds it"
            ),
        },
    };
    Output {
        status,
        stdout: collect(stdout, "stdout"),
        stderr: collect(stderr, "stderr"),
    }
}

/// Wait for `child` to exit, without touching its pipes. Fails the test,
/// killing the child, after [`hang_limit`]; `what` names it then.
pub fn wait_status(child: &mut Child, what: &str) -> ExitStatus {
    wait_status_within(child, what, hang_limit())
}

/// [`wait_status`] with an explicit `limit`.
pub fn wait_status_within(child: &mut Child, what: &str, limit: Duration) -> ExitStatus {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(exited(pid));
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{what}: waiting for pid {pid}: {e}"),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} (pid {pid}) was still running after {limit:?}, so it was killed \
                 (set {TIMEOUT_ENV} to allow longer)"
            );
        }
    }
    // It has exited, so this returns at once (and reaps it).
    child
        .wait()
        .unwrap_or_else(|e| panic!("{what}: reaping pid {pid}: {e}"))
}

/// Block until process `pid` (our child) has exited, leaving it unreaped
/// (WNOWAIT) for its `Child` to reap.
fn exited(pid: u32) -> io::Result<()> {
    use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
    let pid = Pid::from_raw(pid as i32).ok_or_else(|| io::Error::other("pid 0"))?;
    loop {
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Send SIGKILL to process `pid`, failing the test if there is no such process.
pub fn kill(pid: u32) {
    use rustix::process::{kill_process, Pid, Signal};
    let p = Pid::from_raw(pid as i32).expect("not pid 0");
    kill_process(p, Signal::KILL).unwrap_or_else(|e| panic!("kill -KILL {pid}: {e}"));
}

/// Waits for other processes to open one path (inotify `IN_OPEN`): an event a
/// test can wait on, with a deadline, instead of sleeping.
#[derive(Debug)]
pub struct OpenWatch {
    opens: Receiver<()>,
}

impl OpenWatch {
    /// Start watching `path`; opens from now on count.
    pub fn new(path: &std::path::Path) -> OpenWatch {
        OpenWatch::on(path, rustix::fs::inotify::WatchFlags::OPEN)
    }

    /// Start watching `path` for the events `what` (for a directory, its
    /// entries' events too, such as `MODIFY` of a file in it).
    pub fn on(path: &std::path::Path, what: rustix::fs::inotify::WatchFlags) -> OpenWatch {
        use rustix::fs::inotify;
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC).expect("inotify_init1");
        inotify::add_watch(&fd, path, what)
            .unwrap_or_else(|e| panic!("inotify_add_watch {}: {e}", path.display()));
        let (tx, opens) = mpsc::channel();
        // One message per read, which holds at least one event. The thread ends
        // when the watch is dropped and the next event (at the latest the
        // watch's removal when the file goes) finds no receiver.
        std::thread::spawn(move || {
            let mut f = std::fs::File::from(fd);
            let mut buf = [0u8; 4096];
            while f.read(&mut buf).is_ok_and(|n| n > 0) {
                if tx.send(()).is_err() {
                    return;
                }
            }
        });
        OpenWatch { opens }
    }

    /// Wait until the path has been opened (again), failing the test after
    /// [`hang_limit`]; `what` says what the test waits for. Opens close
    /// together may arrive as one event, so count on one per wait only.
    pub fn wait(&self, what: &str) {
        self.opens
            .recv_timeout(hang_limit())
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
    }
}

/// Read `r` to its end on a thread; the bytes arrive on the channel.
fn drain(mut r: impl Read + Send + 'static) -> Receiver<io::Result<Vec<u8>>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = tx.send(r.read_to_end(&mut v).map(|_| v));
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_of_both_pipes_is_collected_even_when_large() {
        // More than a pipe holds on each stream: a wait that did not drain
        // both while waiting would deadlock here.
        let out = run(Command::new("sh")
            .arg("-c")
            .arg("head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2; exit 3"));
        assert_eq!(out.stdout.len(), 300_000);
        assert_eq!(out.stderr.len(), 200_000);
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn input_is_fed_to_stdin() {
        let out = run_with_input(Command::new("cat").arg("-"), b"to and fro");
        assert_eq!(out.stdout, b"to and fro");
    }

    #[test]
    #[should_panic(expected = "was still running after")]
    fn a_hang_fails_with_the_command_named() {
        // `sleep` never ends on its own within the test's patience of 1 s; a
        // deadline is the only way this returns.
        run_within(Command::new("sleep").arg("3600"), Duration::from_secs(1));
    }

    #[test]
    fn a_missing_program_is_an_error_not_a_panic() {
        let e = try_run(&mut Command::new("/nonexistent/program")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
