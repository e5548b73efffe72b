//! `hash-bench mount`: a real network file system on one machine, with a link between
//! client and server that the benchmark controls.
//!
//! `sshfs -o passive` speaks SFTP on its standard streams and OpenSSH's `sftp-server`
//! does the same, so two pairs of pipes make a FUSE mount whose every read is an SFTP
//! round trip, with no sshd, no keys and no port. The [`link`](crate::link) emulator sits
//! on those pipes and adds the delay and the bandwidth cap of a profile. (With `direct`
//! the pipes are joined with nothing between: the yardstick of the relay's own cost.)
//!
//! The mount lives as long as the command: it ends on the `stop` descriptor given to
//! [`run`] (the binary turns SIGINT/SIGTERM into it), or when the mount goes away or the
//! client dies; every way out unmounts, kills and reaps both children. Waits are events:
//! `poll` on `/proc/self/mountinfo` wakes on every change of the mount table.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::link::{self, Counters, Link, LinkFigures, Profile, Shape, Side};

/// OpenSSH's SFTP server (Debian package `openssh-sftp-server`).
pub const SFTP_SERVER: &str = "/usr/lib/openssh/sftp-server";

/// Capacity asked of every pipe between client and server: the default 64 KiB would
/// cost a wake-up per 64 KiB in each of them.
const PIPE_SIZE: usize = 1 << 20;

/// How long the mount may take to appear.
const MOUNT_WAIT: Duration = Duration::from_secs(20);

/// How often the counters file may be rewritten.
const COUNTERS_EVERY: Duration = Duration::from_millis(100);

/// What to mount, where, and over which link.
#[derive(Debug, Clone)]
pub struct MountOptions {
    /// The directory served.
    pub source: PathBuf,
    /// An empty directory to mount it on.
    pub mountpoint: PathBuf,
    /// The profile the link's shape comes from (recorded in the counters).
    pub profile: Profile,
    /// The link's shape: the profile's, with any overrides.
    pub shape: Shape,
    /// A JSON file kept up to date with the bytes that crossed each way.
    pub counters: Option<PathBuf>,
    /// No relay at all: the client's and the server's pipes joined directly.
    pub direct: bool,
}

/// The counters file: bytes across the link so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountersFile {
    /// Version of this layout.
    pub version: u32,
    /// Bytes delivered from the client (sshfs) to the server: requests and written data.
    pub to_server_bytes: u64,
    /// Bytes delivered from the server to the client: replies and read data.
    pub to_client_bytes: u64,
    /// Of those, file data (SFTP `SSH_FXP_DATA` payloads); `null` where the relay does
    /// not see the bytes (`raw`, `--direct`).
    #[serde(default)]
    pub to_client_data_bytes: Option<u64>,
    /// Whether the mount was still up when the file was written (`false`: final).
    pub running: bool,
    /// The link the bytes crossed.
    pub link: LinkFigures,
}

/// Why the mount ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// Asked to stop.
    Stopped,
    /// The mount went away (someone else unmounted it).
    Unmounted,
    /// sshfs exited on its own.
    ClientExited(ExitStatus),
}

/// Mount, announce it on stdout, serve until told to stop or until the mount ends, and
/// clean up. `stop` becomes readable when the caller wants the mount gone.
pub fn run(opts: &MountOptions, stop: BorrowedFd<'_>) -> Result<()> {
    let sshfs = preflight()?;
    let source = opts
        .source
        .canonicalize()
        .with_context(|| format!("source {}", opts.source.display()))?;
    if !source.is_dir() {
        bail!("source {} is not a directory", source.display());
    }
    let mountpoint = prepare_mountpoint(&opts.mountpoint)?;
    let mut m = Mounted::start(&sshfs, &source, &mountpoint, opts)?;
    if !m.wait_mounted(stop)? {
        return Ok(());
    }
    let how = if opts.direct {
        "with the pipes joined directly".to_string()
    } else {
        describe(&m.figures)
    };
    println!(
        "hash-bench: mounted {} at {} {how}",
        source.display(),
        mountpoint.display()
    );
    io::stdout().flush()?;
    let ended = m.serve(stop)?;
    m.finish()?;
    match ended {
        Ended::Stopped | Ended::Unmounted => Ok(()),
        Ended::ClientExited(status) => bail!("sshfs ended on its own ({status})"),
    }
}

fn describe(f: &LinkFigures) -> String {
    let rate = f
        .rate_mibps
        .map_or("no rate cap".to_string(), |r| format!("{r:.1} MiB/s"));
    format!(
        "over a {} link ({}: {} ms RTT, {rate})",
        f.profile, f.models, f.rtt_ms
    )
}

/// The tools and the device a mount needs; `sshfs`'s path.
pub fn preflight() -> Result<PathBuf> {
    let sshfs = which::which("sshfs")
        .map_err(|_| anyhow::anyhow!("sshfs is not installed (install the package sshfs)"))?;
    if !Path::new(SFTP_SERVER).exists() {
        bail!("{SFTP_SERVER} is missing (install the package openssh-sftp-server)");
    }
    if which::which("fusermount3").is_err() {
        bail!("fusermount3 is not installed (install the package fuse3)");
    }
    if !Path::new("/dev/fuse").exists() {
        bail!(
            "/dev/fuse is absent: FUSE is not available here (load the fuse module; \
             in a container, give it the device /dev/fuse)"
        );
    }
    Ok(sshfs)
}

/// Check the mount point (clearing a dead mount left by a killed run); its absolute path.
fn prepare_mountpoint(p: &Path) -> Result<PathBuf> {
    // Listing it asks the file system itself (a dead mount's cached attributes would let
    // a mere stat succeed).
    if let Err(e) = fs::read_dir(p) {
        if e.raw_os_error() != Some(libc::ENOTCONN) {
            return Err(e).with_context(|| format!("mount point {}", p.display()));
        }
        // "Transport endpoint is not connected": the FUSE client of an earlier mount died.
        unmount(p, true)?;
        eprintln!("hash-bench: cleared a dead mount at {}", p.display());
    }
    let p = p
        .canonicalize()
        .with_context(|| format!("mount point {}", p.display()))?;
    if !p.is_dir() {
        bail!("mount point {} is not a directory", p.display());
    }
    if is_mounted(&p) {
        bail!(
            "mount point {} is busy: something is mounted there (fusermount3 -u {0})",
            p.display()
        );
    }
    if fs::read_dir(&p)
        .with_context(|| format!("mount point {}", p.display()))?
        .next()
        .is_some()
    {
        bail!(
            "mount point {} is not empty: mount on an empty directory",
            p.display()
        );
    }
    Ok(p)
}

/// `fusermount3 -u` (`-z`: lazily, even while busy).
fn unmount(p: &Path, lazy: bool) -> Result<()> {
    let mut cmd = Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd
        .arg(p)
        .stdin(Stdio::null())
        .output()
        .context("running fusermount3")?;
    if !out.status.success() {
        bail!(
            "fusermount3 -u{} {}: {}",
            if lazy { " -z" } else { "" },
            p.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Whether `p` (absolute, canonical) is a mount point in this process's mount table.
pub fn is_mounted(p: &Path) -> bool {
    let table = fs::read("/proc/self/mountinfo").unwrap_or_default();
    let want = mountinfo_escape(p.as_os_str().as_bytes());
    table
        .split(|&b| b == b'\n')
        .any(|l| l.split(|&b| b == b' ').nth(4) == Some(&want[..]))
}

/// A path as the mount table spells it: space, tab, newline and backslash in octal.
fn mountinfo_escape(p: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(p.len());
    for &b in p {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\\') {
            v.extend_from_slice(format!("\\{b:03o}").as_bytes());
        } else {
            v.push(b);
        }
    }
    v
}

/// The two children, the link between them, and the mount they make.
struct Mounted {
    mountpoint: PathBuf,
    client: Child,
    server: Child,
    link: Option<Link>,
    /// The link's counters (zero when direct), still readable once the link is joined.
    bytes: Arc<Counters>,
    figures: LinkFigures,
    /// Whether the link is unshaped (it splices, so it cannot count file data).
    figures_raw: bool,
    counters: Option<PathBuf>,
    /// Whether the mount was seen in the table (so it is ours to unmount).
    seen: bool,
}

impl Mounted {
    /// Start the server, the client and the link between them.
    fn start(sshfs: &Path, source: &Path, mountpoint: &Path, o: &MountOptions) -> Result<Mounted> {
        let (server_in, to_server) = link::pipe(PIPE_SIZE)?;
        let (from_server, server_out) = link::pipe(PIPE_SIZE)?;
        // The client's ends: the server's own pipes when direct, two more otherwise.
        let (client_in, client_out, relay) = if o.direct {
            (from_server, to_server, None)
        } else {
            let (client_in, to_client) = link::pipe(PIPE_SIZE)?;
            let (from_client, client_out) = link::pipe(PIPE_SIZE)?;
            let client = Side {
                from: from_client,
                to: to_client,
            };
            let server = Side {
                from: from_server,
                to: to_server,
            };
            (client_in, client_out, Some((client, server)))
        };
        let mut server = spawn(Command::new(SFTP_SERVER), server_in, server_out)
            .with_context(|| format!("starting {SFTP_SERVER}"))?;
        let mut cmd = Command::new(sshfs);
        // auto_cache keeps a file's pages across opens while its size and mtime are
        // unchanged, as NFS's close-to-open caching does; sshfs's default drops them at
        // every open, so no run over it could ever be warm.
        cmd.args(["-f", "-o", "passive,auto_cache"])
            .arg(format!(":{}", source.display()))
            .arg(mountpoint);
        let client = match spawn(cmd, client_in, client_out) {
            Ok(c) => c,
            Err(e) => {
                let _ = server.kill();
                let _ = server.wait();
                return Err(e).context("starting sshfs");
            }
        };
        let mut m = Mounted {
            mountpoint: mountpoint.to_owned(),
            client,
            server,
            link: None,
            bytes: Arc::default(),
            figures: LinkFigures::new(o.profile, o.shape),
            figures_raw: o.shape.is_raw(),
            counters: o.counters.clone(),
            seen: false,
        };
        if let Some((client, server)) = relay {
            let link = Link::start(o.shape, client, server).context("starting the link")?;
            m.bytes = link.counters().clone();
            m.link = Some(link);
        }
        Ok(m)
    }

    /// Wait for the mount to appear; `false` if asked to stop first.
    fn wait_mounted(&mut self, stop: BorrowedFd<'_>) -> Result<bool> {
        let deadline = Instant::now() + MOUNT_WAIT;
        let table = File::open("/proc/self/mountinfo")?;
        loop {
            if is_mounted(&self.mountpoint) {
                self.seen = true;
                return Ok(true);
            }
            if let Some(status) = self.client.try_wait()? {
                bail!("sshfs ended ({status}) before mounting");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("sshfs did not mount within {MOUNT_WAIT:?}");
            }
            if wait_event(&table, stop, left)? {
                return Ok(false);
            }
        }
    }

    /// Run until asked to stop or until the mount ends, keeping the counters file.
    fn serve(&mut self, stop: BorrowedFd<'_>) -> Result<Ended> {
        let table = File::open("/proc/self/mountinfo")?;
        let mut written: Option<(Instant, (u64, u64))> = None;
        loop {
            if wait_event(&table, stop, COUNTERS_EVERY)? {
                return Ok(Ended::Stopped);
            }
            if let Some(status) = self.client.try_wait()? {
                return Ok(Ended::ClientExited(status));
            }
            if !is_mounted(&self.mountpoint) {
                self.seen = false;
                return Ok(Ended::Unmounted);
            }
            let now = Instant::now();
            let counts = self.counts();
            let due = written.is_none_or(|(at, last)| {
                last != counts && now.duration_since(at) >= COUNTERS_EVERY
            });
            if due {
                self.write_counters(true)?;
                written = Some((now, counts));
            }
        }
    }

    fn counts(&self) -> (u64, u64) {
        self.bytes.snapshot()
    }

    /// Replace the counters file (if asked for) with the counts now.
    fn write_counters(&self, running: bool) -> Result<()> {
        let Some(path) = &self.counters else {
            return Ok(());
        };
        let (to_server_bytes, to_client_bytes) = self.counts();
        let shaped = self.link.is_some() && !self.figures_raw;
        let c = CountersFile {
            version: 1,
            to_server_bytes,
            to_client_bytes,
            to_client_data_bytes: shaped.then(|| {
                self.bytes
                    .to_client_data
                    .load(std::sync::atomic::Ordering::Relaxed)
            }),
            running,
            link: self.figures.clone(),
        };
        let mut text = serde_json::to_string_pretty(&c)?;
        text.push('\n');
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        fs::write(&tmp, text).with_context(|| format!("writing {}", path.display()))?;
        fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
    }

    /// Unmount, end both children and the link, write the final counts.
    fn finish(mut self) -> Result<()> {
        let unmounted = self.teardown();
        if let Some(link) = self.link.take() {
            link.join().context("the link")?;
        }
        self.write_counters(false)?;
        unmounted
    }

    /// Unmount (lazily if busy), kill and reap both children. Idempotent.
    fn teardown(&mut self) -> Result<()> {
        let mut result = Ok(());
        if self.seen && is_mounted(&self.mountpoint) {
            if let Err(busy) = unmount(&self.mountpoint, false) {
                eprintln!("hash-bench: {busy:#}; detaching it lazily");
                result = unmount(&self.mountpoint, true);
            }
        }
        self.seen = false;
        for child in [&mut self.client, &mut self.server] {
            let _ = child.kill();
            let _ = child.wait();
        }
        result
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // On an error path: leave no mount and no child behind.
        let _ = self.teardown();
    }
}

/// Start `cmd` on the two pipe ends, stderr shared with ours (its complaints are the
/// user's clues), in a process group of its own: a Ctrl-C in the terminal is ours to
/// handle, not sshfs's, which would unmount behind our back. The command, and with it
/// our copies of the ends, is dropped here.
fn spawn(mut cmd: Command, stdin: OwnedFd, stdout: OwnedFd) -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(stdin).stdout(stdout).process_group(0).spawn()
}

/// Wait up to `limit` for a change of the mount table or for `stop`; whether `stop` is
/// readable.
fn wait_event(table: &File, stop: BorrowedFd<'_>, limit: Duration) -> Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let wait = Timespec::try_from(limit).context("poll timeout")?;
    let mut fds = [
        PollFd::new(table, PollFlags::PRI),
        PollFd::new(&stop, PollFlags::IN),
    ];
    match poll(&mut fds, Some(&wait)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(e) => return Err(e).context("poll"),
    }
    Ok(fds[1].revents().intersects(PollFlags::IN | PollFlags::HUP))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_escaped_as_the_mount_table_does() {
        assert_eq!(mountinfo_escape(b"/tmp/a b"), b"/tmp/a\\040b");
        assert_eq!(mountinfo_escape(b"/t\tn\n\\"), b"/t\\011n\\012\\134");
        assert_eq!(mountinfo_escape(b"/plain"), b"/plain");
    }

    #[test]
    fn the_root_is_mounted_and_a_fresh_directory_is_not() {
        assert!(is_mounted(Path::new("/")));
        let d = tempfile::tempdir().unwrap();
        assert!(!is_mounted(&d.path().canonicalize().unwrap()));
    }

    #[test]
    fn a_mount_point_that_is_not_empty_is_refused() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("f"), b"x").unwrap();
        let e = prepare_mountpoint(d.path()).unwrap_err();
        assert!(format!("{e:#}").contains("is not empty"), "{e:#}");
    }

    #[test]
    fn the_counters_file_names_its_link() {
        let c = CountersFile {
            version: 1,
            to_server_bytes: 10,
            to_client_bytes: 20,
            to_client_data_bytes: Some(12),
            running: false,
            link: LinkFigures::new(Profile::Lan, Profile::Lan.shape()),
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["link"]["profile"], "lan");
        assert_eq!(v["to_client_bytes"], 20);
    }
}
