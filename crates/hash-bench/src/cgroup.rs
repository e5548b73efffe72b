//! A memory cgroup for timed commands, so that a cold benchmark stays cold.
//!
//! Evicting a dataset before each run only makes the first read miss; a dataset that
//! fits in RAM is cached by that read, and a program that reads a file twice, or a run
//! that is repeated without eviction, then measures memory, not the disk. The kernel
//! charges page cache to the memory cgroup of the process that first reads the page
//! into memory, so running the command in a group whose limit is smaller than the
//! dataset makes the kernel reclaim the group's own cache as it reads: re-reads miss.
//! Pages cached *before* the command started stay charged to whoever read them, which
//! is why eviction is still needed first.
//!
//! - cgroup v2 (one `cgroup2` mount): the limit is `memory.max`. A group holding
//!   processes cannot give controllers to children ("no internal processes"), so the
//!   new group is a sibling of this process's group (a child of the root when this
//!   process sits in the root), and `memory` must be in that parent's
//!   `cgroup.subtree_control`; [`MemoryCgroup::create`] enables it if it can.
//!   `memory.swap.max` is set to 0: with swap, the kernel could push the command's own
//!   memory out to make room for more cache, and the runs would time swap I/O.
//! - cgroup v1 (one mount per controller, e.g. `/sys/fs/cgroup/memory`): the limit is
//!   `memory.limit_in_bytes`, and the group is a child of this process's group. Swap is
//!   left alone: `memory.memsw.limit_in_bytes` (memory plus swap) would be the knob, but
//!   page cache is never swapped, only dropped, so the cap on the cache holds either way.
//!
//! Where both exist (a "hybrid" machine), the memory controller belongs to exactly one
//! hierarchy; a v1 `memory` mount wins, and a v2 hierarchy is used only if its
//! `cgroup.controllers` offers `memory`. The group is found from `/proc/self/cgroup`
//! and `/proc/self/mountinfo`, parsed by pure functions tested on sample texts.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{bail, Context, Result};

/// Which cgroup interface the group lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// Legacy hierarchies, one per controller (`memory.limit_in_bytes`).
    V1,
    /// The unified hierarchy (`memory.max`).
    V2,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        })
    }
}

/// A memory cgroup made by this process; removed again on drop.
#[derive(Debug)]
pub struct MemoryCgroup {
    path: PathBuf,
    /// This process's own group, where processes left behind are moved on drop.
    home: PathBuf,
    version: Version,
    limit: u64,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl MemoryCgroup {
    /// Create a fresh group `hashrace-<pid>-<n>` in the memory hierarchy this process is
    /// in, limited to `limit` bytes. On v2 this may add `memory` to the parent's
    /// `cgroup.subtree_control`, which is left so. Needs root or a delegated subtree.
    pub fn create(limit: u64) -> Result<MemoryCgroup> {
        let cgroup = fs::read("/proc/self/cgroup").context("reading /proc/self/cgroup")?;
        let mountinfo = fs::read("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
        let mut refusals = Vec::new();
        for h in find_hierarchies(&cgroup, &mountinfo) {
            match parent_for(&h) {
                Ok(parent) => return Self::create_in(&parent, h, limit),
                Err(e) => refusals.push(format!("{e:#}")),
            }
        }
        if refusals.is_empty() {
            bail!(
                "no cgroup filesystem with a memory controller is mounted (neither a v1 \
                 `cgroup` mount with `memory` nor a `cgroup2` mount in /proc/self/mountinfo)"
            );
        }
        bail!("no usable memory cgroup: {}", refusals.join("; "))
    }

    fn create_in(parent: &Path, h: Hierarchy, limit: u64) -> Result<MemoryCgroup> {
        let path = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = parent.join(format!("hashrace-{}-{n}", std::process::id()));
            match fs::create_dir(&dir) {
                Ok(()) => break dir,
                // Left behind by an earlier process that had our pid: take the next name.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    let hint = match e.raw_os_error() {
                        Some(libc::EACCES | libc::EPERM) => {
                            ": creating cgroups needs root or a delegated subtree"
                        }
                        Some(libc::EROFS) => {
                            ": the cgroup filesystem is read-only (containers mount it so \
                             unless run privileged)"
                        }
                        _ => "",
                    };
                    return Err(e).with_context(|| format!("creating {}{hint}", dir.display()));
                }
            }
        };
        // From here on, dropping `group` removes the directory again on any error.
        let mut group = MemoryCgroup {
            path,
            home: h.group,
            version: h.version,
            limit,
        };
        let knob = group.path.join(group.limit_file());
        write_file(&knob, &limit.to_string())?;
        if group.version == Version::V2 {
            let swap = group.path.join("memory.swap.max");
            if swap.exists() {
                write_file(&swap, "0")?;
            }
        }
        // The kernel keeps whole pages: report the limit it actually enforces.
        group.limit = read_u64(&knob)?;
        Ok(group)
    }

    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which cgroup interface it is in.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The limit in bytes, as the kernel holds it (rounded down to whole pages).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn limit_file(&self) -> &'static str {
        match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }

    /// A command that runs `program` inside the group: `hash-bench in-cgroup`
    /// ([`exec_in`]) moves itself in, then becomes `program`, so nothing the
    /// command does is charged elsewhere, and if the move fails `program` never
    /// runs unconfined.
    pub fn command(&self, hash_bench: &Path, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(hash_bench);
        cmd.arg("in-cgroup")
            .arg(self.path.join("cgroup.procs"))
            .arg("--")
            .arg(program);
        cmd
    }

    /// Bytes charged to the group now (`memory.current`; v1's `memory.usage_in_bytes`
    /// is approximate by per-CPU batches).
    pub fn usage(&self) -> Result<u64> {
        read_u64(&self.path.join(match self.version {
            Version::V1 => "memory.usage_in_bytes",
            Version::V2 => "memory.current",
        }))
    }

    /// The most ever charged to the group, where the kernel records it (v2
    /// `memory.peak` since Linux 5.19; v1 `memory.max_usage_in_bytes`).
    pub fn peak(&self) -> Result<Option<u64>> {
        let file = self.path.join(match self.version {
            Version::V1 => "memory.max_usage_in_bytes",
            Version::V2 => "memory.peak",
        });
        file.exists().then(|| read_u64(&file)).transpose()
    }

    /// One line for results and logs, e.g. `cgroup v1 memory.limit_in_bytes = 256.00 MiB
    /// at /sys/fs/cgroup/memory/x/hashrace-123-0`.
    pub fn describe(&self) -> String {
        format!(
            "cgroup {} {} = {} at {}",
            self.version,
            self.limit_file(),
            hash_core::units::bytes(self.limit),
            self.path.display()
        )
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let mut result = fs::remove_dir(&self.path);
        if matches!(&result, Err(e) if e.raw_os_error() == Some(libc::EBUSY)) {
            // Processes are still inside: send them home, then try once more.
            let pids = fs::read_to_string(self.path.join("cgroup.procs")).unwrap_or_default();
            for pid in pids.split_whitespace() {
                let _ = fs::write(self.home.join("cgroup.procs"), pid);
            }
            result = fs::remove_dir(&self.path);
        }
        match result {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                eprintln!(
                    "hash-bench: warning: leaving cgroup {}: {e}",
                    self.path.display()
                );
            }
            _ => {}
        }
    }
}

/// The directory to create the group in, checking (and on v2 enabling) the controller.
fn parent_for(h: &Hierarchy) -> Result<PathBuf> {
    if h.version == Version::V1 {
        return Ok(h.group.clone());
    }
    // The new group is a sibling of ours, unless ours is the root (see the module doc).
    let parent = match h.group.parent() {
        Some(up) if h.group != h.mount => up.to_path_buf(),
        _ => h.group.clone(),
    };
    let controllers = fs::read_to_string(parent.join("cgroup.controllers"))
        .with_context(|| format!("reading {}/cgroup.controllers", parent.display()))?;
    if !controllers.split_whitespace().any(|c| c == "memory") {
        bail!(
            "cgroup v2 at {} has no memory controller (cgroup.controllers: {:?}); it is bound \
             to a v1 hierarchy, disabled (cgroup_disable=memory) or not delegated here",
            parent.display(),
            controllers.trim()
        );
    }
    let subtree = parent.join("cgroup.subtree_control");
    let enabled =
        fs::read_to_string(&subtree).with_context(|| format!("reading {}", subtree.display()))?;
    if !enabled.split_whitespace().any(|c| c == "memory") {
        fs::write(&subtree, "+memory").with_context(|| {
            format!(
                "the memory controller is not enabled for children of {} and writing \
                 \"+memory\" to its cgroup.subtree_control was refused (EBUSY: the group \
                 holds processes; EACCES: needs root or delegation)",
                parent.display()
            )
        })?;
    }
    Ok(parent)
}

fn write_file(path: &Path, value: &str) -> Result<()> {
    fs::write(path, value).with_context(|| format!("writing {value} to {}", path.display()))
}

fn read_u64(path: &Path) -> Result<u64> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    match text.trim() {
        "max" => Ok(u64::MAX),
        t => t
            .parse()
            .with_context(|| format!("{}: not a number: {t:?}", path.display())),
    }
}

/// A memory hierarchy this process is in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hierarchy {
    version: Version,
    /// Where the hierarchy is mounted.
    mount: PathBuf,
    /// This process's group in it, as a directory.
    group: PathBuf,
}

/// The memory-capable hierarchies of `/proc/self/cgroup` that `mountinfo` shows mounted:
/// a v1 one (controller list with `memory`) first, then the v2 one (`0::`).
fn find_hierarchies(proc_cgroup: &[u8], mountinfo: &[u8]) -> Vec<Hierarchy> {
    let mut out = Vec::new();
    for line in proc_cgroup.split(|&b| b == b'\n') {
        let mut f = line.splitn(3, |&b| b == b':');
        let (Some(id), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let version = if controllers.split(|&b| b == b',').any(|c| c == b"memory") {
            Version::V1
        } else if id == b"0" && controllers.is_empty() {
            Version::V2
        } else {
            continue;
        };
        if let Some((root, mount)) = find_mount(mountinfo, version) {
            // Outside a cgroup namespace the mount may show only a subtree (its root
            // field); the process's path is then relative to the hierarchy's root.
            let rel = match path.strip_prefix(root.as_slice()) {
                Some(rest) if root != b"/" && (rest.is_empty() || rest[0] == b'/') => rest,
                _ => path,
            };
            let rel = PathBuf::from(OsString::from_vec(rel.to_vec()));
            // Collecting the components drops the trailing slash a join of "" leaves.
            let group = mount
                .join(rel.strip_prefix("/").unwrap_or(&rel))
                .components()
                .collect();
            out.push(Hierarchy {
                version,
                mount,
                group,
            });
        }
    }
    out.sort_by_key(|h| h.version);
    out
}

/// (root, mount point) of the first mount of the hierarchy: fields 4 and 5 of a
/// mountinfo line; after the `-` separator come fstype, source and super options.
fn find_mount(mountinfo: &[u8], version: Version) -> Option<(Vec<u8>, PathBuf)> {
    mountinfo.split(|&b| b == b'\n').find_map(|line| {
        let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let dash = 6 + fields.get(6..)?.iter().position(|f| *f == b"-")?;
        let (fstype, opts) = (*fields.get(dash + 1)?, *fields.get(dash + 3)?);
        let wanted = match version {
            Version::V1 => {
                fstype == b"cgroup" && opts.split(|&b| b == b',').any(|o| o == b"memory")
            }
            Version::V2 => fstype == b"cgroup2",
        };
        let mount = PathBuf::from(OsString::from_vec(unescape(fields[4])));
        wanted.then(|| (unescape(fields[3]), mount))
    })
}

/// Undo mountinfo's octal escapes (`\040` for a space).
fn unescape(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) if b[i] == b'\\' => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// Parse a size: a byte count (`300000000`) or a number with a binary unit, `K`, `M`,
/// `G` or `T` (any case), optionally followed by `B` or `iB`: `256M`, `512MiB`, `1.5G`.
/// A fraction is rounded down to whole bytes; a bare byte count must be whole.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = |why: &str| format!("invalid size {s:?}: {why} (e.g. 256M, 1.5G, 512MiB, 1000000)");
    let t = s.trim();
    let (num, unit) = t.split_at(
        t.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(t.len()),
    );
    let unit = unit.to_ascii_lowercase();
    let unknown = || Err(bad("unknown unit"));
    let shift = match unit.split_at(unit.chars().next().map_or(0, char::len_utf8)) {
        ("" | "b", "") => 0,
        (u, "" | "b" | "ib") => match u {
            "k" => 10,
            "m" => 20,
            "g" => 30,
            "t" => 40,
            _ => return unknown(),
        },
        _ => return unknown(),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit());
    if !digits(int) || (num.contains('.') && !digits(frac)) {
        return Err(bad("expected a number"));
    }
    if !frac.is_empty() && shift == 0 {
        return Err(bad("a byte count must be whole"));
    }
    if int.len() > 20 || frac.len() > 18 {
        return Err(bad("too many digits"));
    }
    let int: u128 = int.parse().map_err(|_| bad("expected a number"))?;
    let frac_bytes = match frac {
        "" => 0,
        f => {
            (f.parse::<u128>().map_err(|_| bad("expected a number"))? << shift)
                / 10u128.pow(f.len() as u32)
        }
    };
    u64::try_from((int << shift) + frac_bytes).map_err(|_| bad("too large"))
}

/// `hash-bench in-cgroup PROCS -- PROGRAM ARGS...`: move this process into the
/// group whose `cgroup.procs` file is `procs`, then replace it with `program`
/// (exec, so no process of ours waits beside it). Returns only on failure.
pub fn exec_in(procs: &Path, program: &OsStr, args: &[OsString]) -> anyhow::Error {
    use std::os::unix::process::CommandExt;
    if let Err(e) = fs::write(procs, "0\n") {
        return anyhow::Error::new(e).context(format!("moving into {}", procs.display()));
    }
    let e = Command::new(program).args(args).exec();
    anyhow::Error::new(e).context(format!("running {}", program.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn sizes() {
        for (s, want) in [
            ("256M", 256 * MIB),
            ("1G", 1 << 30),
            ("512MiB", 512 * MIB),
            ("512MB", 512 * MIB),
            ("300000000", 300_000_000),
            ("1.5G", 3 << 29),
            ("1.1K", 1126),
            ("0.5k", 512),
            ("4kib", 4096),
            ("2T", 2 << 40),
            ("100B", 100),
            (" 64M\n", 64 * MIB),
            ("0", 0),
            ("16777215T", (16_777_215u64) << 40),
        ] {
            assert_eq!(parse_size(s), Ok(want), "{s:?}");
        }
    }

    #[test]
    fn bad_sizes_name_the_input() {
        for s in [
            "",
            "M",
            "G1",
            "12X",
            "1.5.5G",
            "-1G",
            "1e9",
            "1.G",
            ".5G",
            "1 G",
            "1Mi",
            "1MiBs",
            "1.5",
            "16777216T",
            "99999999999999999999999G",
        ] {
            let err = parse_size(s).expect_err(s);
            assert!(err.starts_with(&format!("invalid size {s:?}: ")), "{err}");
        }
    }

    fn h(version: Version, mount: &str, group: &str) -> Hierarchy {
        Hierarchy {
            version,
            mount: mount.into(),
            group: group.into(),
        }
    }

    /// This machine: v1 hierarchies on a tmpfs plus a cgroup2 at .../unified that has
    /// no controllers.
    #[test]
    fn hybrid_v1_memory_comes_first() {
        let cgroup = b"9:name=systemd:/\n5:devices:/\n4:memory:/process_api/90ad\n\
            3:cpuset:/\n0::/\n";
        let mountinfo = b"23 1 253:1 / / rw,relatime - ext4 /dev/vda rw\n\
            31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
            35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
            40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n\
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let found = find_hierarchies(cgroup, mountinfo);
        // PathBuf equality ignores a trailing slash; the text (shown in errors) must not.
        assert_eq!(found[1].group.as_os_str(), "/sys/fs/cgroup/unified");
        assert_eq!(
            found,
            [
                h(
                    Version::V1,
                    "/sys/fs/cgroup/memory",
                    "/sys/fs/cgroup/memory/process_api/90ad"
                ),
                h(
                    Version::V2,
                    "/sys/fs/cgroup/unified",
                    "/sys/fs/cgroup/unified"
                ),
            ]
        );
    }

    #[test]
    fn pure_v2_systemd() {
        let cgroup = b"0::/user.slice/user-1000.slice/session-3.scope\n";
        let mountinfo = b"22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
            25 30 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 \
            cgroup2 rw,nsdelegate,memory_recursiveprot\n";
        assert_eq!(
            find_hierarchies(cgroup, mountinfo),
            [h(
                Version::V2,
                "/sys/fs/cgroup",
                "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"
            )]
        );
    }

    /// A v1 container without a cgroup namespace: the mount shows only the container's
    /// subtree, so its root is cut off the process's path. Controllers may share a mount.
    #[test]
    fn v1_container_subtree_and_comounted_controllers() {
        let cgroup = b"6:blkio,memory:/docker/abc\n1:name=systemd:/docker/abc\n";
        let mountinfo = b"700 690 0:40 /docker/abc /sys/fs/cgroup/blk\\040mem ro,nosuid \
            master:19 - cgroup cgroup rw,blkio,memory\n";
        assert_eq!(
            find_hierarchies(cgroup, mountinfo),
            [h(
                Version::V1,
                "/sys/fs/cgroup/blk mem",
                "/sys/fs/cgroup/blk mem"
            )]
        );
        let deeper = b"6:blkio,memory:/docker/abc/inner\n";
        assert_eq!(
            find_hierarchies(deeper, mountinfo)[0].group,
            Path::new("/sys/fs/cgroup/blk mem/inner")
        );
    }

    #[test]
    fn nothing_with_memory() {
        // Memory listed but its hierarchy not mounted, and no cgroup2: nothing to use.
        let cgroup = b"4:memory:/a\n3:cpu:/\n";
        let mountinfo = b"32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
            33 31 0:30 / /sys/fs/cgroup/nomem rw - cgroup cgroup rw,memory_x\n";
        assert_eq!(find_hierarchies(cgroup, mountinfo), []);
        assert_eq!(find_hierarchies(b"", b""), []);
    }

    #[test]
    fn describe_names_knob_limit_and_path() {
        let g = MemoryCgroup {
            path: "/nonexistent/hashrace-1-0".into(),
            home: "/nonexistent".into(),
            version: Version::V1,
            limit: 256 * MIB,
        };
        assert_eq!(
            g.describe(),
            "cgroup v1 memory.limit_in_bytes = 256.00 MiB at /nonexistent/hashrace-1-0"
        );
    }
}
