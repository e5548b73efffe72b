//! What machine a result was measured on, so that results from two machines can be
//! compared knowingly: CPU, cores, memory, kernel, OS, and the storage under the data
//! (filesystem, device, rotational or not).
//!
//! Everything is read from `/proc` and `/sys` (no external tools, no `unsafe`), and
//! every field that cannot be found is `None`/"unknown" rather than an error: a results
//! file from an odd machine is still worth having.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The machine a sweep ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Machine {
    /// Host name (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// What tells CPUs of one model name apart: cloud guests name every
    /// generation "AMD EPYC" or "Intel(R) Xeon(R) Processor", and SHA-256's
    /// speed from memory against L2 differs between them. Absent in files
    /// collected before it was recorded, and where `/proc/cpuinfo` lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_id: Option<CpuId>,
    /// Whether the CPU has the SHA extensions (`sha_ni` flag): SHA-256 speed hinges on it.
    pub sha_ni: bool,
    /// Whether the kernel runs under a hypervisor (`hypervisor` flag).
    pub virtualized: bool,
    /// Online logical CPUs.
    pub logical_cpus: u32,
    /// CPUs this process may run on (affinity; what `nproc` prints).
    pub available_cpus: u32,
    /// Total memory, KiB (`MemTotal`).
    pub mem_total_kib: u64,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// OS name (`PRETTY_NAME` of `/etc/os-release`).
    pub os: String,
    /// CPU architecture.
    pub arch: String,
    /// Storage under the datasets.
    pub storage: Storage,
    /// SHA-256 rate of one core by `openssl speed` (16 KiB blocks, OpenSSL's own
    /// assembly), MiB/s: a third reference beside the compute and streaming limits,
    /// independent of the `sha2` crate. Absent where `openssl` is not installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openssl_sha256_mib_s: Option<f64>,
    /// Memory the kernel pages out on its own while the sweep runs: a running DAMON
    /// scheme whose action is `pageout`, as some cloud guests configure one. Page cache
    /// it may take goes cold after about `min_age_s` unread, and sooner in part (it
    /// samples one page per region), so there a warm run is warm only because its data
    /// is read just before it, which the harness does for every warm benchmark and
    /// checks before every run. Absent where no such scheme runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proactive_reclaim: Option<ProactiveReclaim>,
}

/// A CPU's family, model and stepping (`/proc/cpuinfo`), its L2 cache, and
/// whether it has AVX-512.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuId {
    /// `vendor_id`: `AuthenticAMD`, `GenuineIntel`, ...
    pub vendor: String,
    /// `cpu family`.
    pub family: u32,
    /// `model`.
    pub model: u32,
    /// `stepping`, where the CPU reports one.
    pub stepping: Option<u32>,
    /// L2 cache of CPU 0, KiB (`/sys/devices/system/cpu/cpu0/cache`), if known.
    pub l2_kib: Option<u64>,
    /// Whether the CPU has AVX-512 (the `avx512f` flag).
    pub avx512: bool,
}

impl CpuId {
    /// Read from the `field`s of `/proc/cpuinfo`'s first CPU; `None` without
    /// a family and model (not x86).
    fn read(
        field: impl Fn(&str) -> Option<String>,
        has_flag: impl Fn(&str) -> bool,
    ) -> Option<CpuId> {
        let number = |name: &str| field(name)?.parse().ok();
        Some(CpuId {
            vendor: field("vendor_id").unwrap_or_else(|| "unknown".into()),
            family: number("cpu family")?,
            model: number("model")?,
            stepping: number("stepping"),
            l2_kib: l2_kib(Path::new("/sys/devices/system/cpu/cpu0/cache")),
            avx512: has_flag("avx512f"),
        })
    }
}

/// The size of the level-2 cache among `cache`'s `indexN` directories, KiB.
fn l2_kib(cache: &Path) -> Option<u64> {
    (0..8).find_map(|i| {
        let dir = cache.join(format!("index{i}"));
        let level = std::fs::read_to_string(dir.join("level")).ok()?;
        if level.trim() != "2" {
            return None;
        }
        let size = std::fs::read_to_string(dir.join("size")).ok()?;
        size.trim().strip_suffix('K')?.parse().ok()
    })
}

/// How a results file names its CPU to people: the model name, and where
/// recorded its family, model, L2 and AVX-512 (`AMD EPYC (family 25 model 17,
/// L2 1024 KiB, AVX-512)`).
pub fn cpu_label(m: &Machine) -> String {
    match &m.cpu_id {
        None => m.cpu_model.clone(),
        Some(id) => {
            let mut label = format!("{} (family {} model {}", m.cpu_model, id.family, id.model);
            if let Some(l2) = id.l2_kib {
                label.push_str(&format!(", L2 {l2} KiB"));
            }
            if id.avx512 {
                label.push_str(", AVX-512");
            }
            label.push(')');
            label
        }
    }
}

/// Whether two results files' CPUs are known to differ: their model names
/// differ, or both record an id and the ids differ. (A file without an id
/// cannot tell two CPUs of one model name apart.)
pub fn same_cpu(a: &Machine, b: &Machine) -> bool {
    a.cpu_model == b.cpu_model
        && match (&a.cpu_id, &b.cpu_id) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
}

/// A kernel daemon paging memory out on its own (see [`Machine::proactive_reclaim`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProactiveReclaim {
    /// What does it: `damon` (`/sys/kernel/mm/damon/admin`).
    pub by: String,
    /// Least time, seconds, a region must have looked idle before it is paged out (the
    /// scheme's minimum age, in aggregation intervals, times the interval).
    pub min_age_s: f64,
    /// The scheme's filters, as `allow`/`reject` and the kind of memory they match
    /// (`reject anon` and `allow unmapped`: page cache not mapped by any process).
    pub filters: Vec<String>,
}

/// The filesystem and block device holding the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Storage {
    /// The data directory that was examined.
    pub path: String,
    /// Filesystem type (`ext4`, `xfs`, `tmpfs`, ...).
    pub fs_type: String,
    /// Mount point containing the path.
    pub mount_point: String,
    /// Mount source (`/dev/vda1`, ...).
    pub source: String,
    /// Whole block device name under `/sys/block` (`vda`, `nvme0n1`), if any.
    pub block_device: Option<String>,
    /// Whether that device is rotational (`queue/rotational`), if known.
    pub rotational: Option<bool>,
    /// Device model (`device/model`), if the driver exposes one.
    pub model: Option<String>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Collect machine facts; `data_dir` selects the storage to describe.
pub fn collect(data_dir: &Path) -> Machine {
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let flags = field("flags").unwrap_or_default();
    let has_flag = |f: &str| flags.split_whitespace().any(|x| x == f);
    let meminfo = read("/proc/meminfo").unwrap_or_default();
    let mem_total_kib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let os = read("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let online = read("/sys/devices/system/cpu/online")
        .and_then(|list| count_cpu_list(&list))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    Machine {
        hostname: read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
        cpu_model: field("model name").unwrap_or_else(|| "unknown".into()),
        cpu_id: CpuId::read(field, has_flag),
        sha_ni: has_flag("sha_ni"),
        virtualized: has_flag("hypervisor"),
        logical_cpus: online,
        available_cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        mem_total_kib,
        kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
        os,
        arch: std::env::consts::ARCH.to_string(),
        storage: storage(data_dir),
        openssl_sha256_mib_s: None,
        proactive_reclaim: damon_pageout(Path::new(DAMON_ADMIN)),
    }
}

/// Where DAMON's sysfs interface lives.
const DAMON_ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// The first `pageout` scheme of a running kdamond under `admin` (DAMON's sysfs
/// directory), if there is one.
fn damon_pageout(admin: &Path) -> Option<ProactiveReclaim> {
    let text = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    // DAMON lists things as `DIR/nr_THINGS` and `DIR/0`, `DIR/1`, ...
    let numbered = |dir: &Path, count: &str| {
        let n: usize = text(&dir.join(count))?.parse().ok()?;
        Some((0..n).map(|i| dir.join(i.to_string())).collect::<Vec<_>>())
    };
    for kdamond in numbered(&admin.join("kdamonds"), "nr_kdamonds")? {
        if text(&kdamond.join("state")).as_deref() != Some("on") {
            continue;
        }
        for context in numbered(&kdamond.join("contexts"), "nr_contexts").unwrap_or_default() {
            let intervals = context.join("monitoring_attrs/intervals");
            let aggr_us: f64 = text(&intervals.join("aggr_us"))?.parse().ok()?;
            for scheme in numbered(&context.join("schemes"), "nr_schemes").unwrap_or_default() {
                if text(&scheme.join("action")).as_deref() != Some("pageout") {
                    continue;
                }
                let age: f64 = text(&scheme.join("access_pattern/age/min"))?.parse().ok()?;
                let filters = ["filters", "core_filters", "ops_filters"]
                    .iter()
                    .flat_map(|kind| numbered(&scheme.join(kind), "nr_filters").unwrap_or_default())
                    .filter_map(|f| {
                        let allow = text(&f.join("allow")).as_deref() == Some("Y");
                        let matching = text(&f.join("matching")).as_deref() != Some("N");
                        let kind = text(&f.join("type"))?;
                        let not = if matching { "" } else { "not " };
                        let verb = if allow { "allow" } else { "reject" };
                        Some(format!("{verb} {not}{kind}"))
                    })
                    .collect();
                return Some(ProactiveReclaim {
                    by: "damon".into(),
                    min_age_s: age * aggr_us / 1e6,
                    filters,
                });
            }
        }
    }
    None
}

impl ProactiveReclaim {
    /// One line for tables: what pages out what, after how long idle.
    pub fn describe(&self) -> String {
        let filters = if self.filters.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.filters.join(", "))
        };
        format!(
            "{} pages out memory idle for {:.0} s or more{filters}",
            self.by.to_uppercase(),
            self.min_age_s
        )
    }
}

/// One second of `openssl speed -mr sha256` on 16 KiB blocks, in MiB/s; `None` if
/// `openssl` is missing or says something else.
pub fn openssl_sha256() -> Option<f64> {
    let out = std::process::Command::new("openssl")
        .args(["speed", "-seconds", "1", "-bytes", "16384", "-mr", "sha256"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_openssl_speed(&String::from_utf8_lossy(&out.stdout))
}

/// The rate in the `+F:N:sha256:BYTES_PER_SECOND` line of `openssl speed -mr`, MiB/s.
fn parse_openssl_speed(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("+F:"))?;
    let bytes_per_s: f64 = line.rsplit(':').next()?.trim().parse().ok()?;
    (bytes_per_s > 0.0).then(|| bytes_per_s / 1_048_576.0)
}

/// The `cpu` line of `/proc/stat`, summed over all CPUs, in clock ticks: the time the
/// hypervisor ran something else while this guest wanted its vCPUs (`steal`), and all
/// the time accounted (the first eight columns, idle included; the two after them, the
/// time this machine ran guests of its own, are already counted in the first two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTicks {
    /// The `steal` column (the eighth number).
    pub steal_ticks: u64,
    /// The sum of the first eight columns.
    pub total_ticks: u64,
}

impl CpuTicks {
    /// Now, from `/proc/stat`; `None` where it cannot be read.
    pub fn now() -> Option<CpuTicks> {
        parse_cpu_ticks(&read("/proc/stat")?)
    }

    /// What accrued from `before` to `self`.
    pub fn since(self, before: CpuTicks) -> CpuTicks {
        CpuTicks {
            steal_ticks: self.steal_ticks.saturating_sub(before.steal_ticks),
            total_ticks: self.total_ticks.saturating_sub(before.total_ticks),
        }
    }

    /// `steal_ticks` as a percent of `total_ticks` (`None` when no time passed).
    pub fn steal_percent(self) -> Option<f64> {
        (self.total_ticks > 0).then(|| 100.0 * self.steal_ticks as f64 / self.total_ticks as f64)
    }
}

/// The aggregate `cpu ` line of `/proc/stat` text. Kernels before 2.6.11 have no steal
/// column: `None`.
fn parse_cpu_ticks(stat: &str) -> Option<CpuTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let cols: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    Some(CpuTicks {
        steal_ticks: *cols.get(7)?,
        total_ticks: cols[..8].iter().sum(),
    })
}

/// The number of CPUs in a kernel CPU list (`0-1,4`, as in
/// `/sys/devices/system/cpu/online`: comma-separated numbers and inclusive ranges);
/// `None` if it is not one. This is where glibc's `sysconf(_SC_NPROCESSORS_ONLN)` looks
/// too, read here without `unsafe`.
fn count_cpu_list(list: &str) -> Option<u32> {
    let mut count = 0u32;
    for part in list.trim().split(',') {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let n = part.parse::<u32>().ok()?;
                (n, n)
            }
        };
        count = count.checked_add(last.checked_sub(first)?.checked_add(1)?)?;
    }
    (count > 0).then_some(count)
}

/// Undo the octal escapes (`\040` for a space) of `/proc/self/mountinfo`.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mountinfo entry (mount point, fs type, source) whose mount point is the longest
/// prefix of `path`.
fn mount_of(mountinfo: &str, path: &str) -> Option<(String, String, String)> {
    let mut best: Option<(String, String, String)> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.len() < dash + 3 || fields.len() < 5 {
            continue;
        }
        let mp = unescape_mount(fields[4]);
        let inside = path == mp || mp == "/" || path.starts_with(&format!("{mp}/"));
        if inside && best.as_ref().is_none_or(|b| mp.len() >= b.0.len()) {
            best = Some((
                mp,
                fields[dash + 1].to_string(),
                unescape_mount(fields[dash + 2]),
            ));
        }
    }
    best
}

fn storage(dir: &Path) -> Storage {
    let canon = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let path = canon.to_string_lossy().into_owned();
    let (mount_point, fs_type, source) = read("/proc/self/mountinfo")
        .and_then(|mi| mount_of(&mi, &path))
        .unwrap_or_else(|| ("unknown".into(), "unknown".into(), "unknown".into()));
    // The device number of the filesystem leads to /sys/dev/block/MAJ:MIN; a partition's
    // queue settings live on its parent disk.
    let mut block_device = None;
    let mut rotational = None;
    let mut model = None;
    if let Ok(meta) = std::fs::metadata(&canon) {
        let dev = meta.dev();
        let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
        if let Ok(mut sys) = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")) {
            if sys.join("partition").exists() {
                sys.pop();
            }
            block_device = sys.file_name().map(|n| n.to_string_lossy().into_owned());
            rotational = read(&sys.join("queue/rotational").to_string_lossy()).map(|r| r == "1");
            model = read(&sys.join("device/model").to_string_lossy()).filter(|m| !m.is_empty());
        }
    }
    Storage {
        path,
        fs_type,
        mount_point,
        source,
        block_device,
        rotational,
        model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_l2_cache_is_found_by_its_level_not_its_index() {
        let dir = tempfile::tempdir().unwrap();
        for (index, level, size) in [
            (0, "1", "32K"),
            (1, "1", "32K"),
            (2, "2", "1024K"),
            (3, "3", "32768K"),
        ] {
            let d = dir.path().join(format!("index{index}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        assert_eq!(l2_kib(dir.path()), Some(1024));
        assert_eq!(l2_kib(&dir.path().join("missing")), None);
    }

    #[test]
    fn cpus_of_one_name_differ_only_by_a_recorded_id() {
        let id = |family, model| CpuId {
            vendor: "AuthenticAMD".into(),
            family,
            model,
            stepping: Some(1),
            l2_kib: Some(1024),
            avx512: true,
        };
        let m = |name: &str, cpu_id: Option<CpuId>| Machine {
            cpu_model: name.into(),
            cpu_id,
            ..collect(Path::new("."))
        };
        let zen4 = m("AMD EPYC", Some(id(25, 17)));
        assert!(same_cpu(&zen4, &m("AMD EPYC", Some(id(25, 17)))));
        assert!(!same_cpu(&zen4, &m("AMD EPYC", Some(id(26, 2)))));
        assert!(
            same_cpu(&zen4, &m("AMD EPYC", None)),
            "unknown: not known to differ"
        );
        assert!(!same_cpu(&zen4, &m("Intel(R) Xeon(R) Processor", None)));
        assert_eq!(
            cpu_label(&zen4),
            "AMD EPYC (family 25 model 17, L2 1024 KiB, AVX-512)"
        );
        assert_eq!(cpu_label(&m("AMD EPYC", None)), "AMD EPYC");
    }

    #[test]
    fn steal_is_the_eighth_column_of_the_cpu_line() {
        // A guest's /proc/stat (cpu0/cpu1 lines must not be taken for the sum; the
        // guest columns after steal are part of user and nice already).
        let text = "cpu  1364565 0 389800 1601979 53123 0 4452 781 900 7\n\
                    cpu0 639585 0 183481 862921 21371 0 492 380 0 0\n\
                    intr 1 2 3\n";
        let t = parse_cpu_ticks(text).unwrap();
        assert_eq!(t.steal_ticks, 781);
        assert_eq!(
            t.total_ticks,
            1364565 + 389800 + 1601979 + 53123 + 4452 + 781
        );
        let later = CpuTicks {
            steal_ticks: 781 + 30,
            total_ticks: t.total_ticks + 1000,
        };
        let d = later.since(t);
        assert_eq!(d.steal_percent(), Some(3.0));
        assert_eq!(t.since(t).steal_percent(), None);
        // Too few columns (no steal), or not numbers: nothing rather than a guess.
        assert_eq!(parse_cpu_ticks("cpu  1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse_cpu_ticks("cpu  a b c d e f g h\n"), None);
        assert_eq!(parse_cpu_ticks("intr 1\n"), None);
    }

    #[test]
    fn openssl_speed_machine_readable_output_is_parsed() {
        let text =
            "+DT:sha256:1:16384\n+R:97300:sha256:1.000000\n+H:16384\n+F:6:sha256:1593917440.00\n";
        let mib = parse_openssl_speed(text).unwrap();
        assert!((mib - 1520.1).abs() < 0.1, "{mib}");
        assert_eq!(parse_openssl_speed("Error: unknown algorithm\n"), None);
        assert_eq!(parse_openssl_speed("+F:6:sha256:nan-ish\n"), None);
    }

    /// Write `files` (path relative to `root`, contents) under `root`.
    fn tree(root: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{text}\n")).unwrap();
        }
    }

    /// A DAMON sysfs tree as a 2-vCPU cloud guest had it: one kdamond, one context
    /// (aggregation every 5 s), one `pageout` scheme of regions 12 intervals old,
    /// rejecting anonymous memory and allowing unmapped pages.
    fn damon_tree(root: &Path, state: &str, action: &str) {
        let c = "kdamonds/0/contexts/0";
        let s = "kdamonds/0/contexts/0/schemes/0";
        tree(
            root,
            &[
                ("kdamonds/nr_kdamonds", "1"),
                ("kdamonds/0/state", state),
                ("kdamonds/0/contexts/nr_contexts", "1"),
                (
                    &format!("{c}/monitoring_attrs/intervals/aggr_us"),
                    "5000000",
                ),
                (&format!("{c}/schemes/nr_schemes"), "1"),
                (&format!("{s}/action"), action),
                (&format!("{s}/access_pattern/age/min"), "12"),
                (&format!("{s}/filters/nr_filters"), "0"),
                (&format!("{s}/ops_filters/nr_filters"), "2"),
                (&format!("{s}/ops_filters/0/type"), "anon"),
                (&format!("{s}/ops_filters/0/matching"), "Y"),
                (&format!("{s}/ops_filters/0/allow"), "N"),
                (&format!("{s}/ops_filters/1/type"), "unmapped"),
                (&format!("{s}/ops_filters/1/matching"), "Y"),
                (&format!("{s}/ops_filters/1/allow"), "Y"),
            ],
        );
    }

    #[test]
    fn a_running_damon_pageout_scheme_is_found() {
        let dir = tempfile::tempdir().unwrap();
        damon_tree(dir.path(), "on", "pageout");
        let r = damon_pageout(dir.path()).unwrap();
        assert_eq!(r.by, "damon");
        assert_eq!(r.min_age_s, 60.0);
        assert_eq!(r.filters, ["reject anon", "allow unmapped"]);
        assert_eq!(
            r.describe(),
            "DAMON pages out memory idle for 60 s or more (reject anon, allow unmapped)"
        );
    }

    #[test]
    fn damon_that_is_off_or_only_monitors_is_no_reclaim() {
        for (state, action) in [("off", "pageout"), ("on", "stat")] {
            let dir = tempfile::tempdir().unwrap();
            damon_tree(dir.path(), state, action);
            assert_eq!(damon_pageout(dir.path()), None, "{state} {action}");
        }
        assert_eq!(damon_pageout(Path::new("/nonexistent/damon")), None);
    }

    #[test]
    fn picks_the_deepest_mount() {
        let mi = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:25 / /tmp rw shared:2 - tmpfs tmpfs rw
31 22 0:26 / /mnt/my\\040disk rw - xfs /dev/sdb1 rw
";
        assert_eq!(
            mount_of(mi, "/work/x").unwrap(),
            ("/".into(), "ext4".into(), "/dev/vda".into())
        );
        assert_eq!(mount_of(mi, "/tmp/a").unwrap().1, "tmpfs");
        assert_eq!(mount_of(mi, "/tmpfoo").unwrap().1, "ext4");
        assert_eq!(mount_of(mi, "/mnt/my disk/d").unwrap().2, "/dev/sdb1");
    }

    #[test]
    fn cpu_lists_are_counted() {
        // Lists in the kernel's format (Documentation/admin-guide/cputopology.rst).
        assert_eq!(count_cpu_list("0\n"), Some(1));
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-1,4"), Some(3));
        assert_eq!(count_cpu_list("0-3,8-11,16"), Some(9));
        assert_eq!(count_cpu_list("2,5,7"), Some(3));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("0-"), None);
        assert_eq!(count_cpu_list("a,b"), None);
    }

    #[test]
    fn online_cpus_are_what_getconf_says() {
        // getconf asks glibc's sysconf(_SC_NPROCESSORS_ONLN), an independent reader.
        let Ok(out) = std::process::Command::new("getconf")
            .arg("_NPROCESSORS_ONLN")
            .output()
        else {
            eprintln!("skipped: getconf is not installed");
            return;
        };
        let n: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(collect(Path::new("/")).logical_cpus, n);
    }

    #[test]
    fn collects_something_sensible_here() {
        let m = collect(Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(m.logical_cpus >= 1 && m.available_cpus >= 1);
        assert!(m.mem_total_kib > 0);
        assert_ne!(m.kernel, "unknown");
        assert_ne!(m.storage.fs_type, "unknown");
    }
}
