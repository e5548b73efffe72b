//! Sharded hashing under real engines: a Slurm job array (started on this machine
//! with `scripts/slurm-local.sh` when Slurm is installed and we are root) and GNU
//! `parallel`. Each hashes a generated tree in 4 shards from one `--list`, merges,
//! and must give byte for byte what one `hash-threads --tree` run gives. The Slurm
//! test ends with the fault drill: one array task is killed mid-run, the merge must
//! refuse and name it, and rerunning that shard alone must make the merge whole.
//!
//! A test whose engine is not installed prints why and returns.
//!
//! The drill is deterministic without sleeping: the killed task's output file is
//! a FIFO this test reads. The test reads the shard's header (so the task is
//! running and has started writing), then stops reading; the shard's lines are
//! several times what the pipe and the writer's buffers hold, so the task cannot
//! reach its end line. Only then is it cancelled, and the FIFO's end of file says
//! it is gone.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::Duration;

use testenv::*;

const SHARDS: usize = 4;

/// How long a job may wait in the queue and run: Slurm's backfill scheduler
/// alone may take 30 s to start a task on a busy machine.
const QUEUE: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn installed(program: &str) -> bool {
    try_run(Command::new(program).arg("--version")).is_ok_and(|o| o.status.success())
}

fn ok(out: Output, what: &str) -> Vec<u8> {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {}{}",
        show(&out.stdout),
        show(&out.stderr)
    );
    out.stdout
}

/// A tree whose every shard prints far more than a pipe (64 KiB) and the
/// writer's buffers hold, with sizes that vary so the split is by bytes.
fn big_tree() -> Tree {
    let t = Tree::new();
    let long = "n".repeat(140);
    for i in 0..8000usize {
        let name = format!("d{}/{long}-{i:05}", i % 20);
        t.file(name.as_bytes(), &pattern(i % 97 * 13));
    }
    t
}

/// The whole-tree answer, the list, and a directory for the shards.
struct Setup {
    tree: Tree,
    single: Vec<u8>,
    list: PathBuf,
    out: Tree,
}

fn setup() -> Setup {
    let tree = big_tree();
    let threads = binary("hash-threads");
    let root = tree.root().as_os_str();
    let single = ok(
        hash(threads.to_str().unwrap(), &[OsStr::new("--tree"), root]),
        "single run",
    );
    let out = Tree::new();
    let listed = hash(threads.to_str().unwrap(), &[OsStr::new("--list"), root]);
    let list = out.file(b"list", &ok(listed, "--list"));
    Setup {
        tree,
        single,
        list,
        out,
    }
}

impl Setup {
    fn shard(&self, k: usize) -> PathBuf {
        self.out.path(format!("shard-{k}.sha256").as_bytes())
    }

    fn merge(&self) -> Output {
        let mut cmd = Command::new(binary("hash-threads"));
        cmd.args(["--merge", "--tree"]);
        cmd.args((0..SHARDS).map(|k| self.shard(k)));
        run(&mut cmd)
    }

    fn assert_merge_is_single(&self, what: &str) {
        let merged = ok(self.merge(), what);
        assert!(
            merged == self.single,
            "{what}: the merge differs from the single run"
        );
        assert!(show(&self.single)
            .lines()
            .last()
            .unwrap()
            .starts_with("# tree-sha256 "));
        let _ = &self.tree;
    }
}

#[test]
fn gnu_parallel_shards_merge_to_the_single_machine_output() {
    if !installed("parallel") {
        eprintln!("skipped: GNU parallel is not installed (apt-get install parallel)");
        return;
    }
    let s = setup();
    let cmd = format!(
        "'{}' --shard auto/{SHARDS} --tree --files-from '{}' > '{}/shard-{{}}.sha256'",
        binary("hash-threads").display(),
        s.list.display(),
        s.out.root().display()
    );
    let out = run(Command::new("parallel")
        .args(["--will-cite", "-j", "4", &cmd, ":::"])
        .args((0..SHARDS).map(|k| k.to_string())));
    ok(out, "parallel");
    s.assert_merge_is_single("parallel");
}

/// Where test runs sharing one machine (several checkouts, CI jobs) queue for
/// the local Slurm cluster: the run that started the cluster stops it when its
/// test ends, which must not happen under another run's jobs (it did: a
/// concurrent run's stop left this test's `sbatch --wait` waiting on a
/// controller that was gone).
const SLURM_LOCK: &str = "/tmp/hashrace-slurm-test.lock";

/// The exclusive lock on [`SLURM_LOCK`], waited for with a deadline: another
/// run's whole Slurm test may be ahead of us.
fn lock_slurm() -> File {
    use rustix::fs::{flock, FlockOperation};
    // flock needs only a read descriptor: another user may own the file.
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(SLURM_LOCK)
        .or_else(|_| File::open(SLURM_LOCK))
        .unwrap_or_else(|e| panic!("{SLURM_LOCK}: {e}"));
    if flock(&f, FlockOperation::NonBlockingLockExclusive).is_ok() {
        return f;
    }
    eprintln!("note: waiting for another test run to finish with Slurm ({SLURM_LOCK})");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Sent too late (the test gave up), the file is dropped and unlocked.
        let _ = tx.send(flock(&f, FlockOperation::LockExclusive).map(|()| f));
    });
    let wait = QUEUE * 2;
    match rx.recv_timeout(wait) {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => panic!("locking {SLURM_LOCK}: {e}"),
        Err(_) => panic!("another test run held {SLURM_LOCK} for {wait:?}"),
    }
}

/// A running Slurm cluster, ours alone while this lives; stopped again if
/// this test started it.
struct Slurm {
    started: bool,
    /// Released after `drop` has stopped the cluster.
    _lock: File,
}

impl Slurm {
    fn get() -> Option<Slurm> {
        if !installed("sbatch") {
            eprintln!("skipped: Slurm is not installed (scripts/slurm-local.sh start installs it)");
            return None;
        }
        let lock = lock_slurm();
        if try_run(Command::new("sinfo").args(["-h", "-o", "%t"]))
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
        {
            return Some(Slurm {
                started: false,
                _lock: lock,
            });
        }
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: Slurm is installed but not running, and only root can start it");
            return None;
        }
        let script = repo().join("scripts/slurm-local.sh");
        ok(
            run(Command::new(&script).arg("start")),
            "slurm-local.sh start",
        );
        Some(Slurm {
            started: true,
            _lock: lock,
        })
    }
}

/// The name this test run gives its Slurm jobs, so that a failed run can
/// cancel what it left queued (a `sbatch --wait` killed at its deadline leaves
/// its job behind, and a stopped cluster runs it again when restarted).
fn job_name() -> String {
    format!("hashrace-test-{}", std::process::id())
}

impl Drop for Slurm {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = try_run(Command::new("scancel").arg("--name").arg(job_name()));
        }
        if self.started {
            let _ = run(Command::new(repo().join("scripts/slurm-local.sh")).arg("stop"));
        }
    }
}

/// Processes other than this one with `fifo` open (found through /proc/*/fd).
fn writers_of(fifo: &Path) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.filter_map(Result::ok)
                    .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t == fifo))
            })
        })
        .collect()
}

/// `sbatch` of the documented script over `s`, with `extra` options first.
fn sbatch(s: &Setup, extra: &[&str], env: &str) -> Output {
    let logs = s.out.root().join("slurm-%A_%a.log");
    let export = format!(
        "ALL,HASHER={},HASH_ARGS=--tree{env}",
        binary("hash-threads").display()
    );
    run_within(
        Command::new("sbatch")
            .args(extra)
            .arg("--job-name")
            .arg(job_name())
            .arg("--parsable")
            .arg(format!("--export={export}"))
            .arg("-o")
            .arg(&logs)
            .arg(repo().join("scripts/hash-shards.sbatch"))
            .arg(&s.list)
            .arg(s.out.root()),
        QUEUE,
    )
}

fn job_id(out: Output) -> String {
    let text = show(&ok(out, "sbatch"));
    text.trim().split(';').next().unwrap().to_owned()
}

#[test]
fn slurm_array_shards_merge_and_survive_a_killed_task() {
    let Some(_slurm) = Slurm::get() else { return };
    let s = setup();
    let array = format!("--array=0-{}", SHARDS - 1);

    // 1. A whole array: --wait returns when every task has ended.
    ok(sbatch(&s, &["--wait", &array], ""), "sbatch --wait");
    s.assert_merge_is_single("slurm array");
    let drilled = 2;
    let shard_len = fs::metadata(s.shard(drilled)).unwrap().len();
    assert!(
        shard_len > 300_000,
        "the drill needs a shard much larger than a pipe: {shard_len} bytes"
    );

    // 2. The fault drill: shard 2 writes into a FIFO we hold.
    for k in 0..SHARDS {
        fs::remove_file(s.shard(k)).unwrap();
    }
    let fifo = s.shard(drilled);
    mkfifo(&fifo, 0o600);
    let job = job_id(sbatch(&s, &[&array], ""));
    let cancel_all = || {
        let _ = try_run(Command::new("scancel").arg(&job));
    };
    let (data_tx, data_rx) = mpsc::channel::<Vec<u8>>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let reader_fifo = fifo.clone();
    std::thread::spawn(move || {
        // Opening blocks until the task opens its output for writing.
        let mut f = File::open(&reader_fifo).unwrap();
        let mut head = Vec::new();
        let mut buf = [0; 4096];
        while !head.contains(&b'\n') {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let _ = data_tx.send(head);
        if go_rx.recv().is_ok() {
            let mut rest = Vec::new();
            f.read_to_end(&mut rest).unwrap();
            let _ = data_tx.send(rest);
        }
    });
    let wait = QUEUE;
    let Ok(head) = data_rx.recv_timeout(wait) else {
        cancel_all();
        panic!("array task {drilled} never started writing its shard");
    };
    assert!(
        head.starts_with(format!("# hashrace-shard v2 {drilled}/{SHARDS} ").as_bytes()),
        "{}",
        show(&head)
    );
    // The task is now blocked writing its lines: cancel it.
    ok(
        run(Command::new("scancel").arg(format!("{job}_{drilled}"))),
        "scancel",
    );
    // Wait for the whole array to end: a job that may start only after it did.
    let after = format!("--dependency=afterany:{job}");
    let out = run_within(
        Command::new("sbatch")
            .args(["--wait", &after, "-o", "/dev/null", "--wrap", "true"])
            .arg("--job-name")
            .arg(job_name()),
        QUEUE,
    );
    ok(out, "waiting for the array");
    // Slurm has ended the task. Once in several runs here, proctrack/linuxproc
    // missed the process of a task cancelled within ~0.2 s of its start, and it
    // lived on, blocked on the FIFO; finish Slurm's job so the drill stays a drill.
    for pid in writers_of(&fifo) {
        eprintln!("note: Slurm left pid {pid} of the cancelled task running; killing it");
        // It may have ended meanwhile: then there is nothing to do.
        let _ = rustix::process::Pid::from_raw(pid)
            .map(|p| rustix::process::kill_process(p, rustix::process::Signal::KILL));
    }
    go_tx.send(()).unwrap();
    let Ok(rest) = data_rx.recv_timeout(wait) else {
        cancel_all();
        panic!("the cancelled task still holds its output open");
    };
    let partial = [head, rest].concat();
    if show(&partial).contains("# hashrace-shard-end") {
        let log = s.out.root().join(format!("slurm-{job}_{drilled}.log"));
        panic!(
            "the task was not cut short ({} bytes read); its Slurm log:\n{}",
            partial.len(),
            fs::read_to_string(log).unwrap_or_default()
        );
    }
    fs::remove_file(&fifo).unwrap();
    fs::write(&fifo, &partial).unwrap();
    for k in (0..SHARDS).filter(|&k| k != drilled) {
        assert!(s.shard(k).exists(), "shard {k} was not written");
    }
    let refused = s.merge();
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty());
    assert_eq!(
        show(&refused.stderr),
        format!(
            "hash-threads: {}: shard {drilled}/{SHARDS} is incomplete (no end line: killed, \
             still running or cut short); rerun it\n",
            fifo.display()
        )
    );

    // 3. Rerun that one shard, as docs/scale-out.md says, and merge again.
    let one = format!("--array={drilled}");
    let env = format!(",SHARD={drilled}/{SHARDS}");
    ok(sbatch(&s, &["--wait", &one], &env), "sbatch rerun");
    s.assert_merge_is_single("after rerunning the killed shard");
}
