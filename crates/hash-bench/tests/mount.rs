//! `hash-bench mount` end to end: a real sshfs mount over the emulated link, hashed by
//! every hasher binary, stopped by SIGTERM, and killed mid-read.
//!
//! Each test skips, saying why, on a machine without sshfs, OpenSSH's sftp-server,
//! fusermount3 or /dev/fuse. Waits are events with the hang limit of `testenv` as a
//! verdict of "hung", never a measure of speed.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use hash_bench::mount::{is_mounted, SFTP_SERVER};
use testenv::{each_binary, hang_limit, pattern, show, wait_output, wait_status, OpenWatch, Tree};

const HB: &str = env!("CARGO_BIN_EXE_hash-bench");

/// Why this machine cannot mount sshfs, if it cannot.
fn unable() -> Option<String> {
    if which::which("sshfs").is_err() {
        return Some("sshfs is not installed".into());
    }
    if !Path::new(SFTP_SERVER).exists() {
        return Some(format!("{SFTP_SERVER} is missing"));
    }
    if which::which("fusermount3").is_err() {
        return Some("fusermount3 is not installed".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is absent".into());
    }
    None
}

/// A running `hash-bench mount`, mounted.
struct Mount {
    child: Child,
    dir: tempfile::TempDir,
}

impl Mount {
    /// Start `hash-bench mount ARGS SOURCE MOUNTPOINT` on a fresh mount point.
    fn start(args: &[&str], source: &Path) -> Mount {
        let dir = tempfile::Builder::new()
            .prefix("hashrace-mount")
            .tempdir()
            .unwrap();
        std::fs::create_dir(dir.path().join("mnt")).unwrap();
        let child = launch(
            args,
            source,
            &dir.path().join("mnt"),
            &dir.path().join("stderr"),
        );
        Mount { child, dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default()
    }

    /// The processes `hash-bench mount` started.
    fn children(&self) -> Vec<u32> {
        children(self.child.id())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // A failed test must not leave a mount behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
        unmount(&self.root());
    }
}

/// Start `hash-bench mount ARGS SOURCE MOUNTPOINT` and wait for its "mounted" line.
/// Its stderr goes to the file `stderr`: the children share it, and a pipe would stay
/// open as long as any of them lives.
fn launch(args: &[&str], source: &Path, mountpoint: &Path, stderr: &Path) -> Child {
    let mut child = Command::new(HB)
        .arg("mount")
        .args(args)
        .arg(source)
        .arg(mountpoint)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(stderr).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let err = || std::fs::read_to_string(stderr).unwrap_or_default();
    let line = rx
        .recv_timeout(hang_limit())
        .unwrap_or_else(|_| panic!("no 'mounted' line: {}", err()));
    assert!(
        line.starts_with("hash-bench: mounted "),
        "{line:?}; stderr: {}",
        err()
    );
    assert!(is_mounted(mountpoint), "announced but not mounted");
    child
}

/// The processes `pid` started.
fn children(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let list = std::fs::read_to_string(task.unwrap().path().join("children"));
        v.extend(
            list.unwrap_or_default()
                .split_whitespace()
                .map(|p| p.parse::<u32>().unwrap()),
        );
    }
    v
}

/// Lazily unmount `mountpoint` if anything is mounted there.
fn unmount(mountpoint: &Path) {
    if is_mounted(mountpoint) {
        let _ = Command::new("fusermount3")
            .args(["-u", "-z"])
            .arg(mountpoint)
            .status();
    }
}

/// Kill process `pid` (not our child: an orphan of a killed run) and wait until it has
/// gone, on its pidfd.
fn end(pid: u32) {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    let Ok(fd) = pidfd_open(Pid::from_raw(pid as i32).unwrap(), PidfdFlags::empty()) else {
        return; // gone already
    };
    let _ = rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
    let limit = Timespec::try_from(hang_limit()).unwrap();
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let n = poll(&mut fds, Some(&limit)).unwrap();
    assert_eq!(n, 1, "process {pid} still there after SIGKILL");
}

fn comm(pid: u32) -> String {
    let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    c.trim_end().to_string()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    let p = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(p, sig).unwrap();
}

#[test]
fn hashing_through_the_mount_matches_local_and_sigterm_cleans_up() {
    if let Some(why) = unable() {
        eprintln!("skipped: {why}");
        return;
    }
    let t = Tree::new();
    t.file(b"a", b"small\n");
    t.file(b"with space", b"space\n");
    t.file(b"dir/b", &pattern(100_000));
    t.file(b"dir/big", &pattern(2 << 20));
    let dir = tempfile::tempdir().unwrap();
    let counters = dir.path().join("counters.json");
    let mut m = Mount::start(
        &["--profile", "lan", "--counters", counters.to_str().unwrap()],
        t.root(),
    );
    let (local_root, mount_root) = (
        t.root().display().to_string(),
        m.root().display().to_string(),
    );
    each_binary(|env| {
        let local = env.run(&[], &[t.root()]);
        assert_eq!(local.status.code(), Some(0), "{}", show(&local.stderr));
        let remote = env.run(&[], &[&m.root()]);
        assert_eq!(remote.status.code(), Some(0), "{}", show(&remote.stderr));
        let want = show(&local.stdout).replace(&local_root, &mount_root);
        assert_eq!(show(&remote.stdout), want);
        assert_eq!(show(&remote.stdout).lines().count(), 4);
    });
    let children = m.children();
    assert_eq!(children.len(), 2, "sshfs and sftp-server: {children:?}");
    let status = stop(&mut m.child);
    assert!(status.success(), "{status}: {}", m.stderr());
    assert!(!is_mounted(&m.root()), "still mounted after SIGTERM");
    for pid in children {
        assert!(!alive(pid), "child {pid} left running");
    }
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&counters).unwrap()).unwrap();
    assert_eq!(c["running"], false);
    assert_eq!(c["link"]["profile"], "lan");
    // The tree came down once: the mount keeps pages across opens (auto_cache, like
    // NFS's close-to-open caching), so the other three binaries read the page cache.
    let down = c["to_client_bytes"].as_u64().unwrap();
    let tree = (2 << 20) + 100_000;
    assert!(down >= tree && down < 2 * tree, "{c}");
    assert!(c["to_server_bytes"].as_u64().unwrap() > 0, "{c}");
}

#[test]
fn killing_the_mount_mid_read_fails_the_file_being_read() {
    if let Some(why) = unable() {
        eprintln!("skipped: {why}");
        return;
    }
    let t = Tree::new();
    t.file(b"a", b"small\n");
    // 32 MiB over 100 Mbit/s take seconds: the mount is killed long before the end.
    t.file(b"dir/big", &pattern(32 << 20));
    let local = show(&testenv::reference("-H", &[t.root()]));
    each_binary(|env| {
        let mut m = Mount::start(&["--profile", "wan"], t.root());
        let children = m.children();
        let opened = OpenWatch::new(&t.path(b"dir/big"));
        let hasher = env
            .command()
            .arg(m.root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The server opens the file when the hasher does: then the mount dies.
        opened.wait("the hasher to open dir/big");
        testenv::kill(m.child.id());
        wait_status(&mut m.child, "hash-bench mount");
        let out = wait_output(hasher, env.name());
        let err = show(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let big = m.root().join("dir/big").display().to_string();
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("{}: {big}: ", env.name()))),
            "stderr names {big}: {err}"
        );
        let (root, local_root) = (
            m.root().display().to_string(),
            t.root().display().to_string(),
        );
        for line in show(&out.stdout).lines() {
            assert!(!line.ends_with("/dir/big"), "a digest for dir/big: {line}");
            let local_line = line.replace(&root, &local_root);
            assert!(local.lines().any(|l| l == local_line), "wrong: {line}");
        }
        // The orphaned children lose their link with the relay; end any that lingers.
        for pid in children {
            end(pid);
        }
    });
}

/// Clears the mount point whatever happens to the test.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        unmount(&self.0);
    }
}

fn stop(child: &mut Child) -> ExitStatus {
    signal(child.id(), rustix::process::Signal::TERM);
    wait_status(child, "hash-bench mount")
}

#[test]
fn a_dead_mount_left_by_a_killed_run_is_cleared_and_a_live_one_is_refused() {
    if let Some(why) = unable() {
        eprintln!("skipped: {why}");
        return;
    }
    let t = Tree::new();
    t.file(b"a", b"small\n");
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _clear = Unmount(mnt.clone());
    let (err1, err2) = (dir.path().join("stderr1"), dir.path().join("stderr2"));
    let mut first = launch(&["--profile", "raw"], t.root(), &mnt, &err1);
    let started = children(first.id());
    // A second mount on a live one is refused, naming the mount point.
    let busy = testenv::run(
        Command::new(HB)
            .args(["mount", "--profile", "raw"])
            .arg(t.root())
            .arg(&mnt),
    );
    assert_eq!(busy.status.code(), Some(1));
    let want = format!("hash-bench: mount point {} is busy", mnt.display());
    assert!(
        show(&busy.stderr).starts_with(&want),
        "{}",
        show(&busy.stderr)
    );
    // A run killed outright with its client (as a killed process group is): the client
    // dies first, while hash-bench is stopped and cannot tidy up, so the mount is left
    // dead behind them.
    signal(first.id(), rustix::process::Signal::STOP);
    let sshfs = started.iter().copied().filter(|&p| comm(p) == "sshfs");
    let others = started.iter().copied().filter(|&p| comm(p) != "sshfs");
    for pid in sshfs.collect::<Vec<_>>() {
        end(pid);
    }
    testenv::kill(first.id());
    wait_status(&mut first, "hash-bench mount");
    for pid in others.collect::<Vec<_>>() {
        end(pid);
    }
    assert!(is_mounted(&mnt));
    let dead = std::fs::read_dir(&mnt).map(drop).unwrap_err();
    assert_eq!(dead.raw_os_error(), Some(libc::ENOTCONN), "{dead}");
    // The next run clears it, mounts, and leaves nothing when stopped.
    let mut second = launch(&["--profile", "raw"], t.root(), &mnt, &err2);
    let said = std::fs::read_to_string(&err2).unwrap();
    assert!(
        said.contains(&format!(
            "hash-bench: cleared a dead mount at {}",
            mnt.display()
        )),
        "{said}"
    );
    assert_eq!(std::fs::read(mnt.join("a")).unwrap(), b"small\n");
    assert!(stop(&mut second).success());
    assert!(!is_mounted(&mnt));
}

#[test]
fn missing_tools_are_named_with_their_package() {
    let t = Tree::new();
    let mnt = tempfile::tempdir().unwrap();
    let out = testenv::run(
        Command::new(HB)
            .args(["mount", "--profile", "lan"])
            .arg(t.root())
            .arg(mnt.path())
            .env("PATH", "/nonexistent"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        show(&out.stderr),
        "hash-bench: sshfs is not installed (install the package sshfs)\n"
    );
}

#[test]
fn a_warm_prepare_reads_back_through_the_mount_what_the_client_lost() {
    // The kernel may drop a mount's cached pages between warm runs (DAMON's
    // pageout on some guests); `residency --top-up`, a warm network run's
    // prepare, must fetch them again over the link, so that the hashers that
    // follow find them in the page cache and move next to nothing.
    if let Some(why) = unable() {
        eprintln!("skipped: {why}");
        return;
    }
    const SIZE: u64 = 3 << 20;
    let t = Tree::new();
    t.file(b"f", &pattern(SIZE as usize));
    let dir = tempfile::tempdir().unwrap();
    let counters = dir.path().join("counters.json");
    let mut m = Mount::start(
        &["--profile", "lan", "--counters", counters.to_str().unwrap()],
        t.root(),
    );
    let residency = |args: &[&str]| -> hash_bench::cache::ResidencySample {
        let out = testenv::run(Command::new(HB).arg("residency").args(args).arg(m.root()));
        assert!(out.status.success(), "{}", show(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(
        std::fs::read(m.root().join("f")).unwrap().len() as u64,
        SIZE
    );
    let out = testenv::run(Command::new(HB).arg("evict").arg(m.root()));
    assert!(out.status.success(), "{}", show(&out.stderr));
    let lost = residency(&["--json"]);
    assert!(
        lost.percent < 5.0,
        "after eviction {:.1} % resident",
        lost.percent
    );
    let topped = residency(&["--top-up", "--json"]);
    assert_eq!(topped.action, "top-up");
    assert_eq!(
        topped.topped_up_pages,
        lost.total_pages - lost.resident_pages
    );
    assert_eq!(topped.resident_pages, topped.total_pages);
    assert_eq!(residency(&["--json"]).percent, 100.0);
    each_binary(|env| {
        let out = env.run(&[], &[&m.root()]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
    });
    let status = stop(&mut m.child);
    assert!(status.success(), "{status}: {}", m.stderr());
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&counters).unwrap()).unwrap();
    let down = c["to_client_bytes"].as_u64().unwrap();
    // Once for the first read, once for the top-up; the four hashers after it
    // read the page cache (a fetch of the file by any of them would add SIZE).
    assert!((2 * SIZE..2 * SIZE + SIZE / 5).contains(&down), "{c}");
}
