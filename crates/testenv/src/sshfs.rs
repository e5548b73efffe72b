//! A real network file system on one machine, for tests: OpenSSH's
//! `sftp-server` and the `sshfs` FUSE client joined by two pipes
//! (`sshfs -o passive` speaks SFTP on its standard streams), so no sshd, no
//! keys and no port are needed. What the client sees is a real FUSE mount
//! whose every read is an SFTP round trip, and killing the client leaves the
//! mount dead ("Transport endpoint is not connected"), as a crashed network
//! mount is.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// OpenSSH's SFTP server (Debian package `openssh-sftp-server`).
pub const SFTP_SERVER: &str = "/usr/lib/openssh/sftp-server";

/// A mounted directory (see the module doc); unmounted when dropped.
#[derive(Debug)]
pub struct Sshfs {
    mount: tempfile::TempDir,
    server: Child,
    client: Child,
}

impl Sshfs {
    /// Mount `source` (a directory) at a fresh mount point. `Err` says why
    /// this machine cannot (no `sshfs`, no `sftp-server`, no `/dev/fuse`, a
    /// mount refused), for the test's skip line.
    pub fn mount(source: &Path) -> Result<Sshfs, String> {
        if !Path::new(SFTP_SERVER).exists() {
            return Err(format!("{SFTP_SERVER} is missing (openssh-sftp-server)"));
        }
        if !Path::new("/dev/fuse").exists() {
            return Err("/dev/fuse is missing (no FUSE here)".into());
        }
        let mount = tempfile::Builder::new()
            .prefix("hashrace-sshfs")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let (to_client, from_server) = rustix::pipe::pipe().map_err(|e| e.to_string())?;
        let (to_server, from_client) = rustix::pipe::pipe().map_err(|e| e.to_string())?;
        let server = Command::new(SFTP_SERVER)
            .stdin(File::from(to_server))
            .stdout(File::from(from_server))
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{SFTP_SERVER}: {e}"))?;
        let source = source.canonicalize().map_err(|e| e.to_string())?;
        let client = Command::new("sshfs")
            .args(["-f", "-o", "passive"])
            .arg(format!(":{}", source.display()))
            .arg(mount.path())
            .stdin(File::from(to_client))
            .stdout(File::from(from_client))
            .stderr(Stdio::null())
            .spawn();
        let mut server = server;
        let client = match client {
            Ok(client) => client,
            Err(e) => {
                let _ = server.kill();
                let _ = server.wait();
                return Err(format!("sshfs: {e} (package sshfs)"));
            }
        };
        let mut fs = Sshfs {
            mount,
            server,
            client,
        };
        fs.wait_mounted()?;
        Ok(fs)
    }

    /// Wait until the mount shows in the mount table: on every change of it
    /// (`poll` on `/proc/self/mountinfo` wakes then), within 10 s.
    fn wait_mounted(&mut self) -> Result<(), String> {
        use rustix::event::{poll, PollFd, PollFlags};
        let deadline = Instant::now() + Duration::from_secs(10);
        let table = File::open("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        loop {
            if self.mounted() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.client.try_wait() {
                return Err(format!("sshfs ended ({status}) before mounting"));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("sshfs did not mount within 10 s".into());
            }
            // A change of the table, or at the latest 100 ms: sshfs may
            // also die without changing it.
            let wait = rustix::event::Timespec::try_from(left.min(Duration::from_millis(100)))
                .map_err(|e| e.to_string())?;
            let mut fds = [PollFd::new(&table, PollFlags::PRI)];
            let _ = poll(&mut fds, Some(&wait));
        }
    }

    /// Whether the mount point is in this process's mount table.
    fn mounted(&self) -> bool {
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let at = self.mount.path().to_string_lossy().into_owned();
        table
            .lines()
            .any(|l| l.split(' ').nth(4) == Some(at.as_str()))
    }

    /// The mount point.
    pub fn root(&self) -> &Path {
        self.mount.path()
    }

    /// `root` joined with `rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.mount.path().join(rel)
    }

    /// Stop the SFTP server (`SIGSTOP`): every request on the mount waits,
    /// as on a network that stalls, until [`Sshfs::resume`].
    pub fn pause(&self) {
        self.signal_server(rustix::process::Signal::STOP);
    }

    /// Let the server answer again after [`Sshfs::pause`].
    pub fn resume(&self) {
        self.signal_server(rustix::process::Signal::CONT);
    }

    fn signal_server(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.server.id() as i32).expect("a child's pid");
        rustix::process::kill_process(pid, signal).expect("signal the SFTP server");
    }

    /// Kill the FUSE client with `SIGKILL`: the mount stays, dead, and every
    /// request on it fails from now on.
    pub fn kill_client(&mut self) {
        let _ = self.client.kill();
        let _ = self.client.wait();
    }
}

impl Drop for Sshfs {
    fn drop(&mut self) {
        self.resume();
        self.kill_client();
        let _ = self.server.kill();
        let _ = self.server.wait();
        // Lazily: a dead mount may still be busy for a moment.
        let _ = crate::try_run(
            Command::new("fusermount3")
                .arg("-u")
                .arg("-z")
                .arg(self.root()),
        );
    }
}
