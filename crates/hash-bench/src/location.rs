//! Where a sweep's data is read from: the local disk, or a network file system served
//! over an emulated link (`lan`, `wan`, `raw`), and how a network run is made cold or
//! warm and proved so.
//!
//! A network location serves the generated datasets with `hash-bench mount` (sshfs to
//! OpenSSH's sftp-server through the [`link`](crate::link) emulator), run as a daemon of
//! its own so that it outlives the hyperfine `--prepare` command that starts it. Its
//! files live in `<work>/net/`: the pid, the log and the link's byte counters.
//!
//! - **Cold** means a fresh mount before every run: the old one is stopped (its final
//!   counters read) and a new one started, so neither the kernel's page cache of the
//!   mount nor sshfs's attribute and directory caches hold anything.
//! - **Warm** means one mount for all warm runs, the data read through it beforehand;
//!   sshfs runs with `auto_cache`, so pages stay cached across opens as with NFS.
//!
//! Residency (mincore) cannot prove a network run cold without opening every file
//! through the fresh mount, which would warm sshfs's caches; the emulator's byte
//! counter is the proof instead. Each prepare appends a [`LinkSample`] to
//! `<id>.link.jsonl`; [`per_run`] turns them into the bytes each run moved, and
//! [`crate::net::link_flags`] flags a cold run that moved under 95 % of the dataset or
//! a warm one that moved over 5 %.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::link::{LinkFigures, Profile};
use crate::mount::{self, CountersFile};

/// How long a mount may take to come up.
const START_WAIT: Duration = Duration::from_secs(30);
/// How long a stopped mount may take to go away before it is killed.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// Longer than the mount's counters refresh, so that a read after it sees every byte.
const COUNTERS_SETTLE: Duration = Duration::from_millis(250);

/// A location, as given to `--location`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Location {
    /// The data directory itself.
    Local,
    /// sshfs over an emulated 1 GbE link.
    Lan,
    /// sshfs over an emulated office-to-cloud link.
    Wan,
    /// sshfs over an unshaped relay (the emulator's own cost).
    Raw,
}

impl Location {
    /// The name, as given on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Location::Local => "local",
            Location::Lan => "lan",
            Location::Wan => "wan",
            Location::Raw => "raw",
        }
    }

    /// The link profile of a network location.
    pub fn profile(self) -> Option<Profile> {
        match self {
            Location::Local => None,
            Location::Lan => Some(Profile::Lan),
            Location::Wan => Some(Profile::Wan),
            Location::Raw => Some(Profile::Raw),
        }
    }
}

/// A location as a plan and its results record it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LocationInfo {
    /// `local`, `lan`, `wan` or `raw`.
    pub name: String,
    /// The link's figures (network locations only).
    pub link: Option<LinkFigures>,
    /// How the data is reached: the file system and client, for people.
    pub access: String,
    /// Where the generated data lives (served from here when on a network).
    pub source_root: String,
}

impl LocationInfo {
    /// The local data root.
    pub fn local(root: &Path) -> LocationInfo {
        LocationInfo {
            name: "local".into(),
            link: None,
            access: "the data directory itself".into(),
            source_root: root.display().to_string(),
        }
    }

    /// Whether the data is reached over the emulated network.
    pub fn is_network(&self) -> bool {
        self.link.is_some()
    }
}

/// The plan's location, and the directory its commands run in (the mount point on a
/// network, which lives beside the work directories).
pub fn plan_location(
    loc: Location,
    data_root: &Path,
    work_parent: &Path,
) -> (LocationInfo, PathBuf) {
    let Some(profile) = loc.profile() else {
        return (LocationInfo::local(data_root), data_root.to_owned());
    };
    let link = LinkFigures::new(profile, profile.shape());
    let info = LocationInfo {
        name: loc.name().into(),
        access: format!(
            "sshfs -o passive,auto_cache to OpenSSH's sftp-server over the '{}' link emulator ({})",
            loc.name(),
            link.models
        ),
        link: Some(link),
        source_root: data_root.display().to_string(),
    };
    (info, work_parent.join(format!("mnt-{}", loc.name())))
}

/// Bytes across the link, each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bytes {
    /// Server to client: replies and read data.
    pub to_client: u64,
    /// Client to server: requests.
    pub to_server: u64,
    /// Of `to_client`, file data (`None` where the link cannot tell).
    #[serde(default)]
    pub data: Option<u64>,
}

impl Bytes {
    fn since(self, start: Bytes) -> Bytes {
        Bytes {
            to_client: self.to_client.saturating_sub(start.to_client),
            to_server: self.to_server.saturating_sub(start.to_server),
            data: self.data.zip(start.data).map(|(e, s)| e.saturating_sub(s)),
        }
    }

    /// The bytes that prove a run cold or warm: file data where the link could tell
    /// it from the protocol (a warm mount still moves handles and attributes: for
    /// 4 KiB files, 4 to 7 % of the data's size), else everything to the client.
    pub fn proof(&self) -> u64 {
        self.data.unwrap_or(self.to_client)
    }
}

/// One line of `<id>.link.jsonl`, appended before each run and once after the last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkSample {
    /// When, seconds since the Unix epoch.
    pub unix_time_s: f64,
    /// `remount` (cold), `none` (warm) or `end` (after the last run).
    pub action: String,
    /// The counters of the mount the previous run used, at its end (`None`: no
    /// previous run on this mount's record).
    pub previous_end: Option<Bytes>,
    /// The counters when this run starts (after the remount, if any).
    pub start: Bytes,
}

/// Bytes each of the last `runs` runs moved: from a sample's `start` to the next one's
/// `previous_end`. hyperfine prepares every warm-up and timed run, so the last `runs`
/// intervals are the timed ones.
pub fn per_run(samples: &[LinkSample], runs: usize) -> Result<Vec<Bytes>> {
    if samples.len() < runs + 1 {
        bail!("{} link samples for {runs} runs", samples.len());
    }
    let first = samples.len() - 1 - runs;
    samples[first..]
        .windows(2)
        .map(|w| match w[1].previous_end {
            Some(end) => Ok(end.since(w[0].start)),
            None => bail!("a link sample at {} has no previous end", w[1].unix_time_s),
        })
        .collect()
}

/// `part` as a percentage of `whole`.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The mount daemon of a work directory: its files in `<work>/net/`.
#[derive(Debug)]
pub struct Daemon {
    dir: PathBuf,
}

impl Daemon {
    /// The daemon of `work`.
    pub fn of(work: &Path) -> Daemon {
        Daemon {
            dir: work.join("net"),
        }
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.join("mount.pid")
    }

    fn counters_file(&self) -> PathBuf {
        self.dir.join("counters.json")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.join("mount.log")
    }

    /// Whether a daemon runs with a live mount at `mountpoint`.
    pub fn serves(&self, mountpoint: &Path) -> bool {
        self.running().is_some()
            && fs::read_to_string(self.mountpoint_file()).is_ok_and(|m| Path::new(&m) == mountpoint)
            && mountpoint
                .canonicalize()
                .is_ok_and(|p| mount::is_mounted(&p))
    }

    fn mountpoint_file(&self) -> PathBuf {
        self.dir.join("mountpoint")
    }

    /// The pid of a running daemon, if there is one.
    fn running(&self) -> Option<i32> {
        let pid: i32 = fs::read_to_string(self.pid_file())
            .ok()?
            .trim()
            .parse()
            .ok()?;
        alive(pid).then_some(pid)
    }

    /// Start `hash-bench mount` serving `source` at `mountpoint` over `profile`, in a
    /// session of its own (a Ctrl-C in the terminal is not its to see: `stop` ends it),
    /// and wait until it is mounted.
    pub fn start(
        &self,
        hash_bench: &Path,
        profile: &str,
        source: &Path,
        mountpoint: &Path,
    ) -> Result<()> {
        self.stop()?;
        fs::create_dir_all(&self.dir)?;
        fs::create_dir_all(mountpoint)?;
        let _ = fs::remove_file(self.counters_file());
        let log = fs::File::create(self.log_file())?;
        let mut cmd = Command::new(hash_bench);
        cmd.args(["mount", "--profile", profile, "--counters"])
            .arg(self.counters_file())
            .arg(source)
            .arg(mountpoint)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", hash_bench.display()))?;
        fs::write(self.pid_file(), format!("{}\n", child.id()))?;
        fs::write(
            self.mountpoint_file(),
            mountpoint.as_os_str().as_encoded_bytes(),
        )?;
        let deadline = Instant::now() + START_WAIT;
        let mp = mountpoint.canonicalize()?;
        while !(mount::is_mounted(&mp) && self.counters_file().exists()) {
            if let Some(status) = child.try_wait()? {
                let log = fs::read_to_string(self.log_file()).unwrap_or_default();
                bail!("the mount ended ({status}): {}", log.trim());
            }
            if Instant::now() > deadline {
                self.stop()?;
                bail!("the mount did not come up within {START_WAIT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stop the daemon, if one runs, and wait for it to unmount; its final counters.
    pub fn stop(&self) -> Result<Option<Bytes>> {
        let _ = fs::remove_file(self.mountpoint_file());
        let Some(pid) = self.running() else {
            let _ = fs::remove_file(self.pid_file());
            return Ok(None);
        };
        let pid_t = rustix::process::Pid::from_raw(pid).context("pid")?;
        let _ = rustix::process::kill_process(pid_t, rustix::process::Signal::TERM);
        let deadline = Instant::now() + STOP_WAIT;
        while alive(pid) {
            if Instant::now() > deadline {
                let _ = rustix::process::kill_process(pid_t, rustix::process::Signal::KILL);
                eprintln!("hash-bench: the mount (pid {pid}) did not stop; killed it");
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Reap it if it is our child (the process that started it stops it
        // too, when a race ends); a prepare command's daemon is not ours.
        let _ = rustix::process::waitpid(Some(pid_t), rustix::process::WaitOptions::NOHANG);
        let _ = fs::remove_file(self.pid_file());
        Ok(read_counters(&self.counters_file()).ok())
    }

    /// The counters now, once every byte of the run that just ended is in them.
    pub fn counters(&self) -> Result<Bytes> {
        if self.running().is_none() {
            bail!(
                "the mount is not running (see {})",
                self.log_file().display()
            );
        }
        std::thread::sleep(COUNTERS_SETTLE);
        read_counters(&self.counters_file())
    }
}

fn read_counters(path: &Path) -> Result<Bytes> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let c: CountersFile =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(Bytes {
        to_client: c.to_client_bytes,
        to_server: c.to_server_bytes,
        data: c.to_client_data_bytes,
    })
}

/// Whether process `pid` exists and is not a zombie (an orphaned daemon's zombie may
/// wait for a reaper that never comes).
fn alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may hold spaces.
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Append `s` to `path` as one JSON line.
pub fn append_sample(path: &Path, s: &LinkSample) -> Result<()> {
    crate::util::append_json_line(path, s)
}

/// Every sample of a link record (missing file: none).
pub fn read_samples(path: &Path) -> Result<Vec<LinkSample>> {
    crate::util::read_json_lines(path)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn b(c: u64) -> Bytes {
        Bytes {
            to_client: c,
            to_server: c / 100,
            data: None,
        }
    }

    fn sample(prev: Option<u64>, start: u64) -> LinkSample {
        LinkSample {
            unix_time_s: 0.0,
            action: "x".into(),
            previous_end: prev.map(b),
            start: b(start),
        }
    }

    #[test]
    fn each_run_moves_what_crossed_between_its_start_and_the_next_sample() {
        // Cold: every prepare remounts, so counters restart near zero (the mount's own
        // handshake) and the previous mount's end is read before it goes.
        let s = [
            sample(None, 400),
            sample(Some(1_000_400), 390),
            sample(Some(990_390), 410),
            sample(Some(1_100_410), 1_100_410),
        ];
        let runs = per_run(&s, 3).unwrap();
        assert_eq!(
            runs.iter().map(|r| r.to_client).collect::<Vec<_>>(),
            [1_000_000, 990_000, 1_100_000]
        );
        // With a warm-up run first, the last three intervals are the timed ones.
        let runs = per_run(&s, 2).unwrap();
        assert_eq!(runs[0].to_client, 990_000);
        assert!(per_run(&s, 4).is_err());
        let broken = [sample(None, 0), sample(None, 0)];
        assert!(per_run(&broken, 1).is_err());
    }

    #[test]
    fn this_process_is_alive_and_a_free_pid_is_not() {
        assert!(alive(std::process::id() as i32));
        assert!(!alive(i32::MAX));
    }

    #[test]
    fn network_locations_mount_beside_the_work_directories() {
        let (info, root) = plan_location(Location::Wan, Path::new("/d"), Path::new("/w"));
        assert_eq!(root, Path::new("/w/mnt-wan"));
        assert_eq!(info.link.as_ref().unwrap().rtt_ms, 20.0);
        assert!(info.is_network());
        let (info, root) = plan_location(Location::Local, Path::new("/d"), Path::new("/w"));
        assert_eq!(root, Path::new("/d"));
        assert!(!info.is_network());
    }
}
