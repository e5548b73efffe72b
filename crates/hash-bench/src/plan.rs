//! The plan of a sweep: which program runs on which dataset in which cache state, with
//! how many runs, the exact command lines, and a time estimate.
//!
//! `bench.sh` asks for a plan (`hash-bench plan`), which is written as `plan.json` (read
//! back by `verify`, `maxrss --id` and `collect`) and `plan.tsv` (one benchmark per line,
//! for the shell loop). Keeping the commands here means they are built, quoted and tested
//! in one place, and the shell loop only passes them on to hyperfine.
//!
//! The plan has an id (a hash of everything that affects the numbers: settings, binary
//! digests, dataset specs); its work directory is `<work-parent>/<sweep>-<id>`. A rerun
//! with the same id resumes there, skipping benchmarks whose exports exist; a rebuilt
//! binary or a changed setting gives a new id, so stale numbers are never mixed in.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cache::EvictMethod;
use crate::gen::read_marker;
use crate::spec::{self, totals, Spec};
use crate::util::{hex, human_bytes, human_secs, sh_join, sh_quote, version_line, which};

/// Version of `plan.json`'s layout (internal to one run, but checked on resume).
pub const PLAN_VERSION: u32 = 2;

/// The four hashrace binaries, in the order they are reported.
pub const HASHERS: [&str; 4] = ["hash-serial", "hash-threads", "hash-procs", "hash-async"];

/// The parallel hashers: raced at each swept `-j` and once with no `-j` at all.
pub const PARALLEL_HASHERS: [&str; 3] = ["hash-threads", "hash-procs", "hash-async"];

/// `hash-async --io` modes raced as programs of their own (`hash-async-<mode>`) when
/// `hash-async --help` lists `--io`; plain `hash-async` is its default mode.
pub const ASYNC_IO_MODES: [&str; 2] = ["pool", "uring"];

/// Reads in flight of the read-floor reference rows besides the number of CPUs (the
/// hashers' default): about what `hash-threads`/`hash-async` keep in flight on cold
/// small files. The one place to change it.
pub const READ_FLOOR_EXTRA_JOBS: [u32; 1] = [64];

/// The Python reference programs (`scripts/pyhash.py <strategy>`), raced when
/// `python3` is installed.
pub const PYTHON_PROGRAMS: [&str; 4] = [
    "python-serial",
    "python-threads",
    "python-procs",
    "python-asyncio",
];

/// Datasets with at least this many files are scale tests: only the hashrace programs
/// run on them, at their default `-j`, [`SCALE_RUNS`] times (peers, Python and
/// references would take minutes per run and say nothing about the target).
pub const SCALE_FILES: u64 = 500_000;
/// Timed runs on a scale dataset.
pub const SCALE_RUNS: u32 = 3;

/// Peers raced when installed, in the order they are reported.
pub const PEERS: [&str; 4] = ["sha256sum", "rhash", "hashdeep", "b3sum"];

/// A cold run is invalid if more than this share of its data was resident before it.
pub const COLD_MAX_RESIDENT_PERCENT: f64 = 5.0;
/// A warm run is invalid if less than this share of its data was resident before it.
pub const WARM_MIN_RESIDENT_PERCENT: f64 = 95.0;

/// A predefined sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Sweep {
    /// The full default sweep: shards, small, huge, mixed, empty.
    Default,
    /// Smaller versions of the defaults, fewer runs (a few minutes).
    Quick,
    /// One tiny dataset, minimal runs (seconds; what CI runs).
    Smoke,
}

impl Sweep {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Sweep::Default => "default",
            Sweep::Quick => "quick",
            Sweep::Smoke => "smoke",
        }
    }

    /// Datasets of this sweep.
    pub fn datasets(self) -> &'static [&'static str] {
        match self {
            Sweep::Default => &["shards", "small", "huge", "mixed", "empty"],
            Sweep::Quick => &[
                "shards-quick",
                "small-quick",
                "huge-quick",
                "mixed-quick",
                "empty",
            ],
            Sweep::Smoke => &["smoke", "empty"],
        }
    }

    /// Minimum timed runs and warm-up runs per benchmark.
    pub fn runs(self) -> Runs {
        match self {
            Sweep::Default => Runs {
                warm: 10,
                cold: 5,
                peer_warm: 5,
                peer_cold: 3,
                warmup: 0,
            },
            Sweep::Quick => Runs {
                warm: 5,
                cold: 3,
                peer_warm: 3,
                peer_cold: 3,
                warmup: 0,
            },
            Sweep::Smoke => Runs {
                warm: 3,
                cold: 2,
                peer_warm: 2,
                peer_cold: 2,
                warmup: 0,
            },
        }
    }
}

/// Minimum run counts of a sweep. Cheap benchmarks get more runs, up to three times the
/// minimum, so that each takes about [`TARGET_TIMED_S`] of timed work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runs {
    /// Timed runs of a hashrace program, warm.
    pub warm: u32,
    /// Timed runs of a hashrace program, cold.
    pub cold: u32,
    /// Timed runs of a peer, warm (peers are a reference, and the slow ones are slow).
    pub peer_warm: u32,
    /// Timed runs of a peer, cold.
    pub peer_cold: u32,
    /// hyperfine warm-up runs. Every benchmark already starts with one untimed run, the
    /// peak-RSS run (evicted first when cold), right before hyperfine; that is its
    /// warm-up, so the sweeps add none.
    pub warmup: u32,
}

/// Timed work a cheap benchmark is scaled up to, seconds.
pub const TARGET_TIMED_S: f64 = 3.0;

/// Timed work an expensive hashrace benchmark (`huge`, `mixed`) is scaled down to,
/// seconds, but never below 5 runs (or the minimum, if smaller): a 2 s run needs fewer
/// samples for the same precision of its median than a 20 ms one.
pub const MAX_TIMED_S: f64 = 12.0;

/// A peer estimated slower than this per run (sha256sum and hashdeep on `huge`: ~10-13 s,
/// on `mixed`: ~5 s) gets at most [`SLOW_PEER_RUNS`] timed runs: it is a reference
/// several times slower than the hashers, and its ratio to them needs no 2 % precision,
/// while more runs of it would cost minutes of the sweep's budget.
pub const SLOW_PEER_S: f64 = 4.0;
/// Timed runs of a slow peer (after its untimed peak-RSS run, its warm-up).
pub const SLOW_PEER_RUNS: u32 = 1;

/// Timed runs of a Python reference program, warm and cold: a reference several times
/// slower than the hashers on small files, with a start-up of its own.
pub const PYTHON_RUNS: (u32, u32) = (3, 2);

/// The cost model below is calibrated on idle-machine figures; the committed default
/// sweep took ~15 minutes where the model said 12.4 (hyperfine, process start-up, a
/// busy neighbour). Estimates are scaled by this factor so that they are honest.
pub const ESTIMATE_FACTOR: f64 = 1.2;

/// Page-cache state of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cache {
    /// Data fully in the page cache.
    Warm,
    /// Data evicted immediately before each run.
    Cold,
}

impl Cache {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Cache::Warm => "warm",
            Cache::Cold => "cold",
        }
    }
}

/// What a program is, for the reader of the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// One of the four hashrace binaries.
    Hashrace,
    /// An installed SHA-256 tool raced for comparison.
    Peer,
    /// A reference, not a competitor: b3sum (BLAKE3, a speed reference), the limits
    /// measured by hash-bench (`ref-sha256-*`: in-memory SHA-256; `ref-read-floor`:
    /// reading without hashing) and the Python programs (`python-*`).
    Reference,
}

/// A program taking part in the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramInfo {
    /// Name as reported (`hash-threads`, `sha256sum`, ...).
    pub name: String,
    /// Hashrace binary, peer, or reference.
    pub kind: Kind,
    /// Hash computed: `sha256`, `blake3`, or `none` (the read floor).
    pub algorithm: String,
    /// Path of the executable.
    pub path: String,
    /// First line of its `--version` output, if it has one.
    pub version: Option<String>,
    /// SHA-256 of the executable (hashrace binaries only: identifies the build).
    pub sha256: Option<String>,
}

/// A dataset as planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanDataset {
    /// The spec, as loaded.
    pub spec: Spec,
    /// Spec file it came from.
    pub spec_path: String,
    /// [`Spec::spec_hash`].
    pub spec_hash: String,
    /// Number of files.
    pub files: u64,
    /// Total bytes.
    pub bytes: u64,
    /// Largest file, bytes.
    pub largest: u64,
    /// Cache states it is measured in.
    pub caches: Vec<Cache>,
    /// Why a cache state was left out, if one was.
    pub note: Option<String>,
}

/// One benchmark: a program on a dataset in a cache state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    /// Unique id, `<dataset>.<cache>.<program>[-j<N>]`; names its raw files.
    pub id: String,
    /// Dataset name.
    pub dataset: String,
    /// Cache state.
    pub cache: Cache,
    /// Program name.
    pub program: String,
    /// Program kind.
    pub kind: Kind,
    /// Job count passed to it, if it takes one.
    pub jobs: Option<u32>,
    /// A parallel program run with no `-j` at all (`jobs` is then `None`).
    #[serde(default)]
    pub default_jobs: bool,
    /// Timed runs.
    pub runs: u32,
    /// hyperfine warm-up runs (after the untimed peak-RSS run, which always comes first).
    pub warmup: u32,
    /// The command as an argv (run in the data root).
    pub argv: Vec<String>,
    /// The same, as the shell-quoted line given to hyperfine.
    pub command: String,
    /// hyperfine `--prepare` command: evict (cold) or just measure residency (warm),
    /// appending a residency sample to the benchmark's record file.
    pub prepare: String,
    /// Estimated wall time of this benchmark (all runs, prepares, RSS run), seconds.
    pub estimate_s: f64,
}

/// A whole sweep's plan (`plan.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// [`PLAN_VERSION`].
    pub plan_version: u32,
    /// Hash of everything below (first 12 hex digits).
    pub id: String,
    /// Sweep name (`default`, `quick`, `smoke`).
    pub sweep: String,
    /// Repository holding the harness.
    pub repo: String,
    /// Commit of the tree the hashrace binaries were built from (with `-dirty` if the
    /// work tree had changes), if it is a git tree.
    pub commit: Option<String>,
    /// Commit of the harness repository, if different from `commit`.
    pub harness_commit: Option<String>,
    /// Directory holding the datasets; commands run there.
    pub data_root: String,
    /// Directory holding the hashrace binaries.
    pub bin_dir: String,
    /// The hash-bench binary used in prepare commands.
    pub hash_bench: String,
    /// Job counts swept.
    pub jobs: Vec<u32>,
    /// Eviction method for cold runs.
    pub eviction: EvictMethod,
    /// Run counts of the sweep.
    pub runs: Runs,
    /// Cold-run residency limit, percent.
    pub cold_max_resident_percent: f64,
    /// Warm-run residency floor, percent.
    pub warm_min_resident_percent: f64,
    /// Datasets.
    pub datasets: Vec<PlanDataset>,
    /// Programs.
    pub programs: Vec<ProgramInfo>,
    /// Benchmarks, in run order.
    pub benchmarks: Vec<PlanEntry>,
    /// Estimated time of verification, seconds.
    pub verify_estimate_s: f64,
    /// Estimated time of all benchmarks, seconds.
    pub estimate_s: f64,
}

/// Which peers to race.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerSelection {
    /// sha256sum always; the others when installed.
    Auto,
    /// None at all.
    None,
    /// Exactly these (each must be installed).
    List(Vec<String>),
}

impl std::str::FromStr for PeerSelection {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "none" | "" => Ok(Self::None),
            list => {
                let v: Vec<String> = list.split(',').map(|x| x.trim().to_string()).collect();
                for p in &v {
                    if !PEERS.contains(&p.as_str()) {
                        return Err(format!("unknown peer {p:?} (known: {})", PEERS.join(", ")));
                    }
                }
                Ok(Self::List(v))
            }
        }
    }
}

/// Inputs of [`build`].
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// The sweep.
    pub sweep: Sweep,
    /// Datasets to use instead of the sweep's (names or spec paths).
    pub datasets: Option<Vec<String>>,
    /// Directory of the committed specs.
    pub specs_dir: PathBuf,
    /// Data root.
    pub data_root: PathBuf,
    /// Hashrace binaries.
    pub bin_dir: PathBuf,
    /// hash-bench binary for prepare commands.
    pub hash_bench: PathBuf,
    /// Job counts.
    pub jobs: Vec<u32>,
    /// Peers.
    pub peers: PeerSelection,
    /// Measure warm.
    pub warm: bool,
    /// Measure cold.
    pub cold: bool,
    /// Eviction method.
    pub eviction: EvictMethod,
    /// Harness repository.
    pub repo: PathBuf,
    /// Where raw files will be (`<work>/raw`): prepare commands write there.
    pub work_parent: PathBuf,
    /// Race the Python reference programs (`<repo>/scripts/pyhash.py`) if `python3` is
    /// installed.
    pub python: bool,
}

/// Rough cost model of one program run, for the estimate and for scaling run counts.
/// Numbers are from docs/BENCHMARKING.md's measurements of the 2-vCPU reference machine;
/// they only need to be right within a factor of two.
fn exec_estimate(
    program: &str,
    jobs: Option<u32>,
    cache: Cache,
    d: &PlanDataset,
    cores: u32,
) -> f64 {
    // (bytes/s per worker, seconds per file per worker, uses several cores). Between the
    // idle numbers of BENCHMARKING.md and those measured with the other core busy.
    let (rate, per_file, parallel) = match program {
        "hash-serial" => (1.3e9, 15e-6, false),
        "ref-sha256-1core" => (1.2e9, 1e-6, false),
        "ref-sha256-allcores" => (1.2e9, 1e-6, true),
        "ref-read-floor" => (5.0e9, 8e-6, true),
        "python-serial" => (1.0e9, 40e-6, false),
        "python-procs" => (1.0e9, 80e-6, true),
        p if p.starts_with("python-") => (1.0e9, 60e-6, true),
        // Fitted to the committed default sweep (its hashers ran ~0.74x the old model).
        p if p.starts_with("hash-") => (1.3e9, 15e-6, true),
        "sha256sum" => (0.2e9, 20e-6, true),
        "hashdeep" => (0.2e9, 30e-6, true),
        "rhash" => (1.0e9, 20e-6, false),
        "b3sum" => (4.0e9, 20e-6, true),
        _ => (1.0e9, 20e-6, false),
    };
    let par = if parallel {
        f64::from(jobs.unwrap_or(cores).clamp(1, cores.max(1)))
    } else {
        1.0
    };
    let (bytes, files, largest) = (d.bytes as f64, d.files as f64, d.largest as f64);
    // Start-up: an interpreter (and, for python-procs, a pool of them) costs more.
    let start = match program {
        "python-procs" => 0.15,
        p if p.starts_with("python-") => 0.05,
        _ => 0.005,
    };
    let warm = (bytes / (rate * par)).max(largest / rate) + files * per_file / par + start;
    // Reads in flight of the read floor are not capped by the cores.
    let par = if program == "ref-read-floor" {
        f64::from(jobs.unwrap_or(cores).max(1))
    } else {
        par
    };
    match cache {
        Cache::Warm => warm,
        Cache::Cold => {
            // ~1 GB/s sequential; cold small files cost ~75 us each with one read in
            // flight, and more reads in flight help only partly on this disk.
            let io = bytes / 1.0e9 + files * 75e-6 / par.sqrt();
            warm.max(io) + 0.1 * warm.min(io)
        }
    }
}

fn prepare_estimate(cache: Cache, d: &PlanDataset) -> f64 {
    let per_file = match cache {
        Cache::Warm => 6e-6,
        Cache::Cold => 15e-6,
    };
    0.005 + d.files as f64 * per_file
}

fn sha256_of_file(path: &Path) -> Result<String> {
    let mut buf = vec![0u8; 1 << 20];
    let (d, _) = crate::manifest::sha256_file(path, &mut buf)?;
    Ok(hex(&d))
}

/// `HEAD` of the git work tree containing `dir` (`-dirty` when it has changes). Uses
/// `GIT_OPTIONAL_LOCKS=0` so that it never takes the index lock of a tree someone is
/// working in.
pub fn git_commit(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}

fn peer_version(name: &str) -> Option<String> {
    match name {
        "hashdeep" => version_line(name, &["-V"]).map(|v| format!("hashdeep {v}")),
        _ => version_line(name, &["--version"]),
    }
}

/// Whether the harness checks a program's output before timing it: the hashrace
/// programs and the Python references print exactly `sha256sum`'s lines.
pub fn verified(p: &ProgramInfo) -> bool {
    p.kind == Kind::Hashrace || p.name.starts_with("python-")
}

/// Whether `hash-async --help` lists `--io` (the binaries before it have one mode).
fn lists_io_flag(path: &Path) -> bool {
    Command::new(path)
        .arg("--help")
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--io"))
}

/// The real `python3` executable (not a version manager's shim, whose start-up would be
/// timed too), if one is installed.
fn python_interpreter() -> Option<String> {
    which("python3")?;
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let exe = String::from_utf8(out.stdout).ok()?.trim().to_string();
    Path::new(&exe).is_file().then_some(exe)
}

/// Build the plan (does not write it).
pub fn build(o: &PlanOptions) -> Result<Plan> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let mem_kib = crate::machine::collect(&o.data_root).mem_total_kib;
    let mut jobs = o.jobs.clone();
    jobs.sort_unstable();
    jobs.dedup();
    if jobs.is_empty() || jobs.contains(&0) {
        bail!("--jobs needs positive job counts");
    }

    // Programs.
    let mut programs = Vec::new();
    for name in HASHERS {
        let path = o.bin_dir.join(name);
        if !path.is_file() {
            bail!(
                "{} not found (build the workspace in release mode, or pass --bin-dir)",
                path.display()
            );
        }
        let info = ProgramInfo {
            name: name.to_string(),
            kind: Kind::Hashrace,
            algorithm: "sha256".into(),
            path: path.display().to_string(),
            version: version_line(&path.to_string_lossy(), &["--version"]),
            sha256: Some(sha256_of_file(&path)?),
        };
        programs.push(info.clone());
        if name == "hash-async" && lists_io_flag(&path) {
            for mode in ASYNC_IO_MODES {
                programs.push(ProgramInfo {
                    name: format!("hash-async-{mode}"),
                    ..info.clone()
                });
            }
        }
    }
    let wanted: Vec<String> = match &o.peers {
        PeerSelection::None => vec![],
        PeerSelection::Auto => PEERS
            .iter()
            .filter(|p| **p == "sha256sum" || which(p).is_some())
            .map(|p| p.to_string())
            .collect(),
        PeerSelection::List(v) => v.clone(),
    };
    for name in PEERS.iter().filter(|p| wanted.iter().any(|w| w == *p)) {
        let Some(path) = which(name) else {
            bail!("peer {name} is not installed (install it, e.g. with --install-peers, or choose --peers)");
        };
        if matches!(*name, "sha256sum" | "b3sum") {
            for tool in ["find", "sort", "xargs", "sh"] {
                if which(tool).is_none() {
                    bail!("peer {name} needs {tool} on PATH");
                }
            }
        }
        programs.push(ProgramInfo {
            name: name.to_string(),
            kind: if *name == "b3sum" {
                Kind::Reference
            } else {
                Kind::Peer
            },
            algorithm: if *name == "b3sum" { "blake3" } else { "sha256" }.into(),
            path: path.display().to_string(),
            version: peer_version(name),
            sha256: None,
        });
    }

    // References: the limits (measured by this binary) and the Python programs.
    let hb_sha = sha256_of_file(&o.hash_bench).ok();
    for (name, algorithm) in [
        ("ref-sha256-1core", "sha256"),
        ("ref-sha256-allcores", "sha256"),
        ("ref-read-floor", "none"),
    ] {
        programs.push(ProgramInfo {
            name: name.into(),
            kind: Kind::Reference,
            algorithm: algorithm.into(),
            path: o.hash_bench.display().to_string(),
            version: None,
            sha256: hb_sha.clone(),
        });
    }
    let script = o.repo.join("scripts/pyhash.py");
    if o.python && script.is_file() {
        if let Some(python) = python_interpreter() {
            for name in PYTHON_PROGRAMS {
                programs.push(ProgramInfo {
                    name: name.into(),
                    kind: Kind::Reference,
                    algorithm: "sha256".into(),
                    path: python.clone(),
                    version: version_line(&python, &["--version"]),
                    sha256: Some(sha256_of_file(&script)?),
                });
            }
        }
    }

    // Datasets.
    let names: Vec<String> = match &o.datasets {
        Some(v) => v.clone(),
        None => o.sweep.datasets().iter().map(|s| s.to_string()).collect(),
    };
    let mut datasets = Vec::new();
    for n in &names {
        let path = spec::resolve(n, &o.specs_dir)?;
        let spec = Spec::load(&path)?;
        let t = totals(&spec.files());
        let mut caches = Vec::new();
        let mut note = None;
        if o.warm {
            // A dataset that does not fit comfortably in memory cannot be warm.
            if t.bytes > mem_kib.saturating_mul(1024) / 10 * 8 {
                note = Some(format!(
                    "warm skipped: {} is more than 80 % of memory",
                    human_bytes(t.bytes)
                ));
            } else {
                caches.push(Cache::Warm);
            }
        }
        if o.cold && t.bytes == 0 && o.warm {
            // Nothing to evict: only metadata, which fadvise cannot drop; a cold run would
            // be a warm one mislabelled (and its residency check is meaningless).
            note = Some("cold skipped: no file data to evict".into());
        } else if o.cold {
            caches.push(Cache::Cold);
        }
        if caches.is_empty() {
            bail!(
                "{}: nothing to measure ({})",
                spec.name,
                note.as_deref().unwrap_or("no cache state selected")
            );
        }
        datasets.push(PlanDataset {
            spec_hash: spec.spec_hash(),
            spec_path: path.display().to_string(),
            files: t.files,
            bytes: t.bytes,
            largest: t.largest,
            caches,
            note,
            spec,
        });
    }

    let runs = o.sweep.runs();
    let data_root = std::fs::canonicalize(&o.data_root)
        .with_context(|| format!("data directory {}", o.data_root.display()))?;
    let hb = o.hash_bench.display().to_string();
    let mut plan = Plan {
        plan_version: PLAN_VERSION,
        id: String::new(),
        sweep: o.sweep.name().to_string(),
        repo: o.repo.display().to_string(),
        commit: git_commit(&o.bin_dir).or_else(|| git_commit(&o.repo)),
        harness_commit: None,
        data_root: data_root.display().to_string(),
        bin_dir: o.bin_dir.display().to_string(),
        hash_bench: hb.clone(),
        jobs: jobs.clone(),
        eviction: o.eviction,
        runs,
        cold_max_resident_percent: COLD_MAX_RESIDENT_PERCENT,
        warm_min_resident_percent: WARM_MIN_RESIDENT_PERCENT,
        datasets: Vec::new(),
        programs: programs.clone(),
        benchmarks: Vec::new(),
        verify_estimate_s: 0.0,
        estimate_s: 0.0,
    };
    let harness = git_commit(&o.repo);
    if harness != plan.commit {
        plan.harness_commit = harness;
    }

    // Benchmarks: per dataset, warm then cold, programs in report order, jobs ascending.
    let mut verify_estimate = 0.0;
    for d in &datasets {
        let name = d.spec.name.as_str();
        let q = sh_quote(name);
        let scale = d.files >= SCALE_FILES;
        let spec_path = std::fs::canonicalize(&d.spec_path)
            .unwrap_or_else(|_| PathBuf::from(&d.spec_path))
            .display()
            .to_string();
        for &cache in &d.caches {
            for p in &programs {
                let pname = p.name.as_str();
                let parallel_hasher = PARALLEL_HASHERS.iter().any(|h| pname.starts_with(h));
                let python = pname.starts_with("python-");
                // Scale datasets: hashrace programs only, at their default -j.
                if scale && p.kind != Kind::Hashrace {
                    continue;
                }
                // The in-memory ceiling does no I/O: warm only.
                if pname.starts_with("ref-sha256-") && cache == Cache::Cold {
                    continue;
                }
                // (jobs, run with no -j at all)
                let mut variants: Vec<(Option<u32>, bool)> = match pname {
                    "hash-serial"
                    | "rhash"
                    | "python-serial"
                    | "ref-sha256-1core"
                    | "ref-sha256-allcores" => vec![(None, false)],
                    "ref-read-floor" => {
                        let mut v: Vec<u32> = std::iter::once(cores)
                            .chain(READ_FLOOR_EXTRA_JOBS)
                            .collect();
                        v.sort_unstable();
                        v.dedup();
                        v.into_iter().map(|j| (Some(j), false)).collect()
                    }
                    _ if scale => vec![],
                    _ => jobs.iter().map(|&j| (Some(j), false)).collect(),
                };
                // hash-async's io modes: at the default -j only (plain hash-async, its
                // default mode, is also raced at each -j).
                if pname.starts_with("hash-async-") {
                    variants.clear();
                }
                if parallel_hasher {
                    variants.push((None, true));
                }
                for (j, default_jobs) in variants {
                    let mut argv: Vec<String> = vec![p.path.clone()];
                    if let Some(mode) = pname.strip_prefix("hash-async-") {
                        argv.extend(["--io".into(), mode.into()]);
                    }
                    let jflag = |argv: &mut Vec<String>| {
                        if let Some(j) = j {
                            argv.extend(["-j".into(), j.to_string()]);
                        }
                    };
                    let argv: Vec<String> = match (pname, j) {
                        (h, _) if h.starts_with("hash-") => {
                            jflag(&mut argv);
                            argv.push(name.into());
                            argv
                        }
                        (py, _) if python => {
                            argv.push(script.display().to_string());
                            argv.push(py.trim_start_matches("python-").into());
                            jflag(&mut argv);
                            argv.push(name.into());
                            argv
                        }
                        ("ref-sha256-1core" | "ref-sha256-allcores", _) => {
                            let threads = if pname.ends_with("1core") { 1 } else { cores };
                            argv.extend([
                                "ceiling".into(),
                                "sha256".into(),
                                "--threads".into(),
                                threads.to_string(),
                                "--spec".into(),
                                spec_path.clone(),
                            ]);
                            argv
                        }
                        ("ref-read-floor", Some(j)) => {
                            argv.extend(["read-floor".into(), "-j".into(), j.to_string()]);
                            argv.push(name.into());
                            argv
                        }
                        ("sha256sum", Some(j)) => {
                            // Several batches per process, so -P really runs in parallel
                            // (-n 64 over 64 files would be one batch).
                            let per = d.files.div_ceil(u64::from(j) * 4).max(1);
                            vec![
                                "sh".into(),
                                "-c".into(),
                                format!("find -H {q} -type f -print0 | LC_ALL=C sort -z | xargs -0r -P {j} -n {per} sha256sum"),
                            ]
                        }
                        ("b3sum", Some(j)) => vec![
                            "sh".into(),
                            "-c".into(),
                            format!("find -H {q} -type f -print0 | LC_ALL=C sort -z | xargs -0r b3sum --num-threads {j}"),
                        ],
                        ("hashdeep", Some(j)) => vec![
                            "hashdeep".into(),
                            "-c".into(),
                            "sha256".into(),
                            "-r".into(),
                            "-j".into(),
                            j.to_string(),
                            name.into(),
                        ],
                        ("rhash", _) => vec!["rhash".into(), "--sha256".into(), "-r".into(), name.into()],
                        (other, _) => bail!("no command for {other}"),
                    };
                    let id = match (j, default_jobs) {
                        (Some(j), _) => format!("{name}.{}.{}-j{j}", cache.name(), p.name),
                        (None, true) => format!("{name}.{}.{}-jdefault", cache.name(), p.name),
                        (None, false) => format!("{name}.{}.{}", cache.name(), p.name),
                    };
                    let is_peer = p.kind != Kind::Hashrace;
                    let min_runs = match (cache, is_peer) {
                        _ if scale => SCALE_RUNS,
                        (Cache::Warm, _) if python => PYTHON_RUNS.0,
                        (Cache::Cold, _) if python => PYTHON_RUNS.1,
                        (Cache::Warm, false) => runs.warm,
                        (Cache::Cold, false) => runs.cold,
                        (Cache::Warm, true) => runs.peer_warm,
                        (Cache::Cold, true) => runs.peer_cold,
                    };
                    let exec = exec_estimate(&p.name, j, cache, d, cores);
                    let scaled = (TARGET_TIMED_S / exec).ceil() as u32;
                    // Scale, Python and ceiling runs are not multiplied: few on purpose
                    // (minutes per run; a reference, not a competitor; no I/O, no noise).
                    let mut n = if scale || python || pname.starts_with("ref-sha256-") {
                        min_runs
                    } else {
                        scaled.clamp(min_runs, min_runs * 3)
                    };
                    if is_peer && exec > SLOW_PEER_S {
                        n = n.min(SLOW_PEER_RUNS);
                    }
                    if !is_peer && !scale {
                        let cap = ((MAX_TIMED_S / exec).ceil() as u32).max(min_runs.min(5));
                        n = n.min(cap);
                    }
                    let per_run = exec + prepare_estimate(cache, d);
                    let warm_step = if cache == Cache::Warm {
                        d.bytes as f64 / 5e9 + d.files as f64 * 10e-6
                    } else {
                        0.0
                    };
                    // Timed runs, hyperfine warm-ups, the untimed RSS run; fixed costs of
                    // starting hyperfine and the helpers.
                    let estimate = ESTIMATE_FACTOR
                        * (f64::from(n + runs.warmup + 1) * per_run + warm_step + 0.5);
                    if verified(p) && cache == d.caches[0] {
                        verify_estimate +=
                            ESTIMATE_FACTOR * exec_estimate(&p.name, j, Cache::Warm, d, cores);
                    }
                    plan.benchmarks.push(PlanEntry {
                        id,
                        dataset: name.to_string(),
                        cache,
                        program: p.name.clone(),
                        kind: p.kind,
                        jobs: j,
                        default_jobs,
                        runs: n,
                        warmup: runs.warmup,
                        command: sh_join(&argv),
                        argv,
                        // Filled in below, once the work directory is known.
                        prepare: String::new(),
                        estimate_s: estimate,
                    });
                }
            }
        }
    }
    plan.datasets = datasets;
    plan.verify_estimate_s = verify_estimate;
    plan.estimate_s = plan.benchmarks.iter().map(|b| b.estimate_s).sum::<f64>() + verify_estimate;

    // The id covers everything that changes the numbers.
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(&plan)?);
    plan.id = hex(&h.finalize())[..12].to_string();
    // Prepare commands name files in the work directory, which is named after the id;
    // they follow from the fields hashed above, so they need not be part of the id.
    let work = work_dir(&o.work_parent, &plan);
    for b in &mut plan.benchmarks {
        let record = residency_record(&work, &b.id).display().to_string();
        let mut prep = vec![hb.clone()];
        match b.cache {
            Cache::Cold => {
                prep.extend(["evict".into(), "--record".into(), record]);
                if o.eviction == EvictMethod::DropCaches {
                    prep.extend(["--method".into(), "drop-caches".into()]);
                }
            }
            Cache::Warm => prep.extend(["residency".into(), "--record".into(), record]),
        }
        prep.push(b.dataset.clone());
        b.prepare = sh_join(&prep);
    }
    Ok(plan)
}

/// Work directory of a plan.
pub fn work_dir(parent: &Path, plan: &Plan) -> PathBuf {
    parent.join(format!("{}-{}", plan.sweep, plan.id))
}

/// Path of a benchmark's residency record.
pub fn residency_record(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.residency.jsonl"))
}

/// Path of a benchmark's hyperfine export.
pub fn export_path(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.hyperfine.json"))
}

/// Path of a benchmark's peak-RSS record.
pub fn rss_path(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.rss.json"))
}

/// Write `plan.json` and `plan.tsv` into `work` (creating it and `work/raw`).
pub fn write(plan: &Plan, work: &Path) -> Result<()> {
    std::fs::create_dir_all(work.join("raw"))
        .with_context(|| format!("creating {}", work.display()))?;
    let mut json = serde_json::to_string_pretty(plan)?;
    json.push('\n');
    std::fs::write(work.join("plan.json"), json)?;
    let mut tsv = String::new();
    let total = plan.benchmarks.len();
    for (i, b) in plan.benchmarks.iter().enumerate() {
        let label = match (b.jobs, b.default_jobs) {
            (Some(j), _) => format!("{} -j{j}", b.program),
            (None, true) => format!("{} -j default", b.program),
            (None, false) => b.program.clone(),
        };
        let fields = [
            (i + 1).to_string(),
            total.to_string(),
            b.id.clone(),
            b.dataset.clone(),
            b.cache.name().to_string(),
            label,
            b.runs.to_string(),
            b.warmup.to_string(),
            format!("{:.0}", b.estimate_s.ceil()),
            b.command.clone(),
            b.prepare.clone(),
        ];
        if fields.iter().any(|f| f.contains('\t') || f.contains('\n')) {
            bail!("benchmark {} has a tab or newline in a field", b.id);
        }
        tsv.push_str(&fields.join("\t"));
        tsv.push('\n');
    }
    std::fs::write(work.join("plan.tsv"), tsv)?;
    let names: String = plan
        .datasets
        .iter()
        .map(|d| format!("{}\n", d.spec_path))
        .collect();
    std::fs::write(work.join("datasets.txt"), names)?;
    Ok(())
}

/// Read `plan.json` from `work`.
pub fn read(work: &Path) -> Result<Plan> {
    let path = work.join("plan.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let plan: Plan =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if plan.plan_version != PLAN_VERSION {
        bail!(
            "{}: plan version {} (this hash-bench writes {PLAN_VERSION})",
            path.display(),
            plan.plan_version
        );
    }
    Ok(plan)
}

/// Human summary of a plan, for stderr.
pub fn summary(plan: &Plan, specs_missing: &[String]) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "plan {} ({} sweep): {} benchmarks, jobs {:?}, eviction {:?}\n",
        plan.id,
        plan.sweep,
        plan.benchmarks.len(),
        plan.jobs,
        plan.eviction
    ));
    for d in &plan.datasets {
        let caches: Vec<&str> = d.caches.iter().map(|c| c.name()).collect();
        let generated =
            read_marker(Path::new(&plan.data_root), &d.spec.name).is_some_and(|m| m.complete);
        s.push_str(&format!(
            "  {:<14} {:>7} files {:>10}  [{}]{}{}\n",
            d.spec.name,
            d.files,
            human_bytes(d.bytes),
            caches.join(", "),
            if generated {
                ""
            } else {
                "  (not generated yet)"
            },
            d.note
                .as_deref()
                .map(|n| format!("  {n}"))
                .unwrap_or_default()
        ));
    }
    let names: Vec<String> = plan
        .programs
        .iter()
        .map(|p| match p.kind {
            Kind::Hashrace => p.name.clone(),
            Kind::Peer => format!("{} (peer)", p.name),
            Kind::Reference => format!("{} (reference, {})", p.name, p.algorithm),
        })
        .collect();
    s.push_str(&format!("  programs: {}\n", names.join(", ")));
    for m in specs_missing {
        s.push_str(&format!("  note: {m}\n"));
    }
    s.push_str(&format!(
        "  estimated time: ~{} for verification and benchmarks (rough model; a noisy machine is slower)\n",
        human_secs(plan.estimate_s)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_bins(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        for h in HASHERS {
            let p = dir.join(h);
            std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    fn options(bins: &Path, data: &Path, work: &Path) -> PlanOptions {
        PlanOptions {
            sweep: Sweep::Default,
            datasets: None,
            specs_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets"),
            data_root: data.to_path_buf(),
            bin_dir: bins.to_path_buf(),
            hash_bench: PathBuf::from("/x/hash-bench"),
            jobs: vec![2],
            peers: PeerSelection::List(vec!["sha256sum".into()]),
            warm: true,
            cold: true,
            eviction: EvictMethod::Fadvise,
            repo: bins.to_path_buf(),
            work_parent: work.to_path_buf(),
            python: false,
        }
    }

    fn cores() -> u32 {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    }

    #[test]
    fn default_plan_commands_and_budget() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let plan = build(&options(t.path(), t.path(), Path::new("/w"))).unwrap();
        // Per dataset and cache state: hash-serial, 3 parallel hashers × (-j2, default),
        // sha256sum, the read floor at the CPU count and 64; warm also the 2 ceilings.
        // 4 datasets × 2 caches, plus `empty` warm only.
        let floors = if cores() == 64 { 1 } else { 2 };
        let per = 1 + 3 * 2 + 1 + floors;
        assert_eq!(plan.benchmarks.len(), 9 * per + 5 * 2);
        let find = |id: &str| {
            plan.benchmarks
                .iter()
                .find(|b| b.id == id)
                .unwrap_or_else(|| panic!("no {id}"))
        };
        let serial = find("shards.warm.hash-serial");
        assert_eq!(
            serial.argv,
            vec![
                format!("{}/hash-serial", t.path().display()),
                "shards".into()
            ]
        );
        assert!(serial.runs >= 10 && serial.warmup == 0);
        let threads = find("small.cold.hash-threads-j2");
        assert_eq!(threads.argv[1..], ["-j", "2", "small"]);
        assert!(threads.runs >= 5);
        let work = work_dir(Path::new("/w"), &plan).display().to_string();
        assert_eq!(
            threads.prepare,
            format!("/x/hash-bench evict --record {work}/raw/small.cold.hash-threads-j2.residency.jsonl small")
        );
        let warm = find("small.warm.hash-threads-j2");
        assert!(warm.prepare.contains(" residency --record "));
        // sha256sum: 64 files, 2 processes, 4 batches each → -n 8.
        let sum = find("shards.warm.sha256sum-j2");
        assert_eq!(
            sum.command,
            "sh -c 'find -H shards -type f -print0 | LC_ALL=C sort -z | xargs -0r -P 2 -n 8 sha256sum'"
        );

        // Default -j: no -j flag at all, jobs null, labelled as such.
        for h in PARALLEL_HASHERS {
            let d = find(&format!("small.cold.{h}-jdefault"));
            assert_eq!(d.argv[1..], ["small"]);
            assert_eq!((d.jobs, d.default_jobs), (None, true));
        }
        assert!(!find("small.cold.hash-serial").default_jobs);

        // References: the ceilings warm only, on the dataset's spec; the read floor warm
        // and cold, at the CPU count and at 64 reads in flight.
        let c1 = find("mixed.warm.ref-sha256-1core");
        assert_eq!(c1.kind, Kind::Reference);
        assert_eq!(c1.argv[0], "/x/hash-bench");
        assert_eq!(c1.argv[1..5], ["ceiling", "sha256", "--threads", "1"]);
        assert!(c1.argv[6].ends_with("datasets/mixed.json"), "{:?}", c1.argv);
        let call = find("mixed.warm.ref-sha256-allcores");
        assert_eq!(call.argv[4], cores().to_string());
        assert!(!plan
            .benchmarks
            .iter()
            .any(|b| b.program.starts_with("ref-sha256") && b.cache == Cache::Cold));
        for cache in ["warm", "cold"] {
            let f = find(&format!("small.{cache}.ref-read-floor-j64"));
            assert_eq!(f.argv[1..], ["read-floor", "-j", "64", "small"]);
            assert_eq!(f.jobs, Some(64));
            find(&format!("small.{cache}.ref-read-floor-j{}", cores()));
        }

        // `empty`: warm only, said why.
        let empty = plan
            .datasets
            .iter()
            .find(|d| d.spec.name == "empty")
            .unwrap();
        assert_eq!(empty.caches, vec![Cache::Warm]);
        assert!(empty.note.as_deref().unwrap().contains("no file data"));
        find("empty.warm.hash-procs-jdefault");

        // The default sweep with every peer, Python, and hash-async's two io modes: the
        // model says ~26 minutes on 2 vCPUs (today's binaries, without io modes: ~23).
        let bins = tempfile::tempdir().unwrap();
        fake_bins(bins.path());
        fake_async_with_io(bins.path());
        let mut o = options(bins.path(), t.path(), Path::new("/w"));
        o.peers = PeerSelection::Auto;
        o.python = true;
        o.repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let all = build(&o).unwrap();
        assert!(
            all.estimate_s < 27.0 * 60.0,
            "estimate {:.0} s",
            all.estimate_s
        );
        // Slow peers (sha256sum on `huge`, ~10 s a run) are capped.
        let slow = all
            .benchmarks
            .iter()
            .find(|b| b.id == "huge.warm.sha256sum-j2")
            .unwrap();
        assert_eq!(slow.runs, SLOW_PEER_RUNS);
    }

    fn fake_async_with_io(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("hash-async");
        std::fs::write(&p, "#!/bin/sh\necho '  --io <IO>  pool or uring'\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn async_io_modes_are_raced_only_when_listed() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let o = options(t.path(), t.path(), Path::new("/w"));
        let today = build(&o).unwrap();
        assert!(!today.programs.iter().any(|p| p.name == "hash-async-pool"));
        fake_async_with_io(t.path());
        let plan = build(&o).unwrap();
        let names: Vec<&str> = plan.programs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names[..6],
            [
                "hash-serial",
                "hash-threads",
                "hash-procs",
                "hash-async",
                "hash-async-pool",
                "hash-async-uring"
            ]
        );
        let find = |id: &str| plan.benchmarks.iter().find(|b| b.id == id).unwrap();
        let bin = format!("{}/hash-async", t.path().display());
        assert_eq!(
            find("small.cold.hash-async-uring-jdefault").argv,
            [bin.as_str(), "--io", "uring", "small"]
        );
        // The modes at the default -j only; plain hash-async at each -j too.
        assert!(!plan
            .benchmarks
            .iter()
            .any(|b| b.id == "small.cold.hash-async-uring-j2"));
        find("small.cold.hash-async-j2");
        assert_eq!(
            find("small.warm.hash-async-pool-jdefault").argv,
            [bin.as_str(), "--io", "pool", "small"]
        );
        assert_eq!(
            find("small.warm.hash-async-jdefault").argv,
            [bin.as_str(), "small"]
        );
    }

    #[test]
    fn python_references_when_installed() {
        if which("python3").is_none() {
            eprintln!("skipped: python3 is not installed");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let mut o = options(t.path(), t.path(), Path::new("/w"));
        o.python = true;
        o.repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let plan = build(&o).unwrap();
        let find = |id: &str| plan.benchmarks.iter().find(|b| b.id == id).unwrap();
        let serial = find("small.cold.python-serial");
        assert_eq!(serial.kind, Kind::Reference);
        assert!(serial.argv[1].ends_with("scripts/pyhash.py"));
        assert_eq!(serial.argv[2..], ["serial", "small"]);
        for s in ["threads", "procs", "asyncio"] {
            let b = find(&format!("small.warm.python-{s}-j2"));
            assert_eq!(b.argv[2..], [s, "-j", "2", "small"]);
        }
        // Checked before timing, like the hashers.
        let py = plan
            .programs
            .iter()
            .find(|p| p.name == "python-procs")
            .unwrap();
        assert!(verified(py));
        o.python = false;
        assert!(!build(&o)
            .unwrap()
            .programs
            .iter()
            .any(|p| p.name.starts_with("python")));
    }

    #[test]
    fn scale_datasets_race_only_the_hashers_at_default_jobs() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let mut o = options(t.path(), t.path(), Path::new("/w"));
        o.peers = PeerSelection::Auto;
        o.datasets = Some(vec!["scale".into(), "scale2".into()]);
        let plan = build(&o).unwrap();
        let ids: Vec<&str> = plan.benchmarks.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "scale.warm.hash-serial",
                "scale.warm.hash-threads-jdefault",
                "scale.warm.hash-procs-jdefault",
                "scale.warm.hash-async-jdefault",
                "scale2.warm.hash-serial",
                "scale2.warm.hash-threads-jdefault",
                "scale2.warm.hash-procs-jdefault",
                "scale2.warm.hash-async-jdefault",
            ]
        );
        assert!(plan.benchmarks.iter().all(|b| b.runs == SCALE_RUNS));
        assert_eq!(plan.datasets[1].files, 2_000_000);
    }

    #[test]
    fn plan_id_tracks_settings() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let o = options(t.path(), t.path(), Path::new("/w"));
        let a = build(&o).unwrap();
        assert_eq!(a.id, build(&o).unwrap().id);
        let mut o2 = o.clone();
        o2.jobs = vec![1, 2];
        assert_ne!(a.id, build(&o2).unwrap().id);
        std::fs::write(t.path().join("hash-async"), "#!/bin/sh\nexit 1\n").unwrap();
        assert_ne!(
            a.id,
            build(&o).unwrap().id,
            "a rebuilt binary is a new plan"
        );
    }

    #[test]
    fn missing_binaries_and_peers_are_errors() {
        let t = tempfile::tempdir().unwrap();
        let err = build(&options(t.path(), t.path(), Path::new("/w"))).unwrap_err();
        assert!(err.to_string().contains("hash-serial not found"));
        assert!("nosuch".parse::<PeerSelection>().is_err());
        assert_eq!("none".parse::<PeerSelection>(), Ok(PeerSelection::None));
    }
}
