//! The plan of a sweep: which program runs on which dataset in which cache state, with
//! how many runs, the exact command lines, and a time estimate.
//!
//! `bench.sh` asks for a plan (`hash-bench plan`), which is written as `plan.json` and
//! read back by the steps that follow (`gen --work`, `verify`, `race`, `maxrss --id`,
//! `collect`): the shell script parses none of it. Keeping the commands here means they
//! are built, quoted and tested in one place. The programs themselves are a table in
//! [`crate::programs`].
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

use hash_core::Strategy;

use crate::cache::EvictMethod;
use crate::gen::read_marker;
use crate::location::{self, Location, LocationInfo};
use crate::manifest::Work;
use crate::python::Interpreter;
use crate::spec::{self, totals, Spec};
use crate::util::{hex, sh_join, version_line, which_in};
use hash_core::units;

pub mod programs;
use programs::{Def, Group, Invocation, Program, RunPolicy};

/// Version of `plan.json`'s layout (internal to one run, but checked on resume).
pub const PLAN_VERSION: u32 = 3;

/// Datasets with at least this many files are scale tests: only the hashrace programs
/// run on them, at their default `-j`, [`SCALE_RUNS`] times (peers, Python and
/// references would take minutes per run and say nothing about the target).
pub const SCALE_FILES: u64 = 500_000;
/// Timed runs on a scale dataset.
pub const SCALE_RUNS: u32 = 3;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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

impl Kind {
    /// Lower-case name, as serialized.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Hashrace => "hashrace",
            Kind::Peer => "peer",
            Kind::Reference => "reference",
        }
    }
}

/// A program taking part in the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// SHA-256 of the executable (hashrace binaries only: identifies the build), or of
    /// `scripts/pyhash.py` (the Python rows).
    pub sha256: Option<String>,
    /// The interpreter a Python row runs under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<Interpreter>,
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
    /// A warm benchmark, on a local disk without a memory limit, of a program that reads
    /// the dataset's bytes: the race runs its command once cold before it, unless the
    /// benchmark the race ran just before was the same program's on the same data (see
    /// `race::own_cold_run`). Set per entry here so that the plan's estimate and the
    /// race follow one rule.
    #[serde(default)]
    pub own_cold_run: bool,
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
    /// Directory holding the datasets as the programs see them; commands run there. On
    /// a network location, the mount point (the data itself is `location.source_root`).
    pub data_root: String,
    /// Where the data is read from.
    pub location: LocationInfo,
    /// Memory limit of the cgroup every timed command runs in, bytes (`None`: none).
    pub memory_limit_bytes: Option<u64>,
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
    /// When no interpreter of the sweep runs Python with the GIL off: why the
    /// free-threaded rows are absent, and how to get one ([`crate::python`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_free_threaded_absent: Option<String>,
    /// Benchmarks, in run order.
    pub benchmarks: Vec<PlanEntry>,
    /// Estimated time of verification, seconds.
    pub verify_estimate_s: f64,
    /// Estimated time of all benchmarks, seconds.
    pub estimate_s: f64,
}

impl Plan {
    /// Where the generated data is on disk (the data root, unless it is served over a
    /// network location's mount).
    pub fn source_root(&self) -> &Path {
        Path::new(&self.location.source_root)
    }

    /// The planned dataset called `name`.
    pub fn dataset(&self, name: &str) -> Result<&PlanDataset> {
        self.datasets
            .iter()
            .find(|d| d.spec.name == name)
            .with_context(|| format!("dataset {name} is not in the plan"))
    }

    /// The planned benchmark `id`.
    pub fn benchmark(&self, id: &str) -> Result<&PlanEntry> {
        self.benchmarks
            .iter()
            .find(|b| b.id == id)
            .with_context(|| format!("no benchmark {id} in the plan"))
    }
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
                let known: Vec<&str> = programs::group(Group::Peer).map(|d| d.name).collect();
                for p in &v {
                    if !known.contains(&p.as_str()) {
                        return Err(format!("unknown peer {p:?} (known: {})", known.join(", ")));
                    }
                }
                Ok(Self::List(v))
            }
        }
    }
}

/// The plan's settings: the options of `hash-bench plan`, and the input of [`build`].
/// Paths are taken as given; [`PlanOptions::resolve`] makes them absolute (and creates
/// the data and work directories) for a plan that will be written and run.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanOptions {
    /// The sweep.
    #[arg(long, value_enum, default_value = "default")]
    pub sweep: Sweep,
    /// Datasets instead of the sweep's (comma-separated names or spec paths).
    #[arg(long, value_delimiter = ',')]
    pub datasets: Option<Vec<String>>,
    /// Datasets to add to the sweep's (comma-separated), e.g. the optional `big`.
    #[arg(long, value_delimiter = ',')]
    pub extra_datasets: Vec<String>,
    /// Directory of the committed specs.
    #[arg(long, default_value = "datasets")]
    pub specs_dir: PathBuf,
    /// Data root (where the datasets are generated; commands run there).
    #[arg(long, default_value = "datasets/data")]
    pub data_root: PathBuf,
    /// Directory holding the hashrace binaries (`hash-bench strategies` lists them).
    #[arg(long)]
    pub bin_dir: PathBuf,
    /// This binary, as prepare commands should call it (default: this executable).
    #[arg(long)]
    pub hash_bench: Option<PathBuf>,
    /// Job counts to sweep, comma-separated (default: available CPUs).
    #[arg(long, value_delimiter = ',')]
    pub jobs: Option<Vec<u32>>,
    /// Peers: auto (sha256sum, plus rhash/hashdeep/b3sum if installed), none, or a list.
    #[arg(long, default_value = "auto")]
    pub peers: PeerSelection,
    /// Skip warm runs.
    #[arg(long = "no-warm", action = clap::ArgAction::SetFalse)]
    pub warm: bool,
    /// Skip cold runs.
    #[arg(long = "no-cold", action = clap::ArgAction::SetFalse)]
    pub cold: bool,
    /// Eviction method for cold runs.
    #[arg(long, value_enum, default_value = "fadvise")]
    pub eviction: EvictMethod,
    /// Harness repository (for the commit).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Parent of the work directory (where raw files will be, `<work>/raw`: prepare
    /// commands write there).
    #[arg(long, default_value = "results/tmp")]
    pub work_parent: PathBuf,
    /// Leave out the Python reference programs (raced when python3 is installed).
    #[arg(long = "no-python", action = clap::ArgAction::SetFalse)]
    pub python: bool,
    /// Race the Python rows under these interpreters instead of python3 (repeatable, or
    /// comma-separated). Free-threaded ones on PATH (python3.14t, python3.13t) are added
    /// either way.
    #[arg(
        long = "python",
        value_name = "PATH",
        value_delimiter = ',',
        conflicts_with = "python"
    )]
    pub pythons: Vec<String>,
    /// Where the programs read the data: local, or over an emulated network (lan, wan,
    /// raw: an sshfs mount of the data root).
    #[arg(long, value_enum, default_value = "local")]
    pub location: Location,
    /// Run every timed command in a memory cgroup of this size (e.g. 256M), smaller
    /// than the datasets, so that the page cache cannot hold them.
    #[arg(long, value_parser = parse_memory_limit)]
    pub memory_limit: Option<u64>,
    /// Where peers and interpreters are looked up (PATH-style); `None` is the process's
    /// PATH. Not an option: tests set it to a directory of fakes, so that a plan does
    /// not depend on what the machine has installed.
    #[arg(skip)]
    pub search_path: Option<std::ffi::OsString>,
    /// Plan for this many CPUs instead of this machine's (for tests, so that a plan is
    /// the same on every machine).
    #[arg(long, hide = true)]
    pub cores: Option<u32>,
}

fn parse_memory_limit(s: &str) -> Result<u64, String> {
    crate::cgroup::parse_size(s)
}

impl PlanOptions {
    /// Create the data root and work parent, and make every path absolute (commands run
    /// in the data root, so nothing in the plan may be relative).
    pub fn resolve(mut self) -> Result<PlanOptions> {
        if !self.warm && !self.cold {
            bail!("--no-warm and --no-cold leave nothing to measure");
        }
        let abs = |p: &Path| std::fs::canonicalize(p).with_context(|| format!("{}", p.display()));
        std::fs::create_dir_all(&self.data_root)?;
        std::fs::create_dir_all(&self.work_parent)?;
        self.hash_bench = Some(match &self.hash_bench {
            Some(p) => abs(p)?,
            None => std::env::current_exe()?,
        });
        self.data_root = abs(&self.data_root)?;
        self.bin_dir = abs(&self.bin_dir)?;
        self.repo = abs(&self.repo)?;
        self.work_parent = abs(&self.work_parent)?;
        Ok(self)
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

/// Whether the harness checks a program's output before timing it: the hashrace
/// programs and the Python references print exactly `sha256sum`'s lines.
pub fn verified(p: &ProgramInfo) -> bool {
    // Every Python row (any interpreter, either kind of work) prints checkable lines; its
    // name is made per interpreter and work, so it is not a table row to look up.
    p.kind == Kind::Hashrace
        || p.interpreter.is_some()
        || programs::lookup(&p.name).is_some_and(|d| d.verified)
}

/// The Python rows: each strategy of `scripts/pyhash.py` under each interpreter, with
/// each kind of work. Named `<label>-<strategy>` for SHA-256 (`python-threads`, as
/// before there were others) and `<label>-<strategy>-pysum` for the byte sum.
fn python_programs(interpreters: &[Interpreter], script: &Path) -> Result<Vec<Program>> {
    let sha256 = Some(sha256_of_file(script)?);
    let mut programs = Vec::new();
    for i in interpreters {
        for work in [Work::Sha256, Work::Pysum] {
            for d in programs::group(Group::Python) {
                let Invocation::Python(strategy) = d.invocation else {
                    continue;
                };
                let mut name = format!("{}-{strategy}", i.label);
                if work != Work::Sha256 {
                    name = format!("{name}-{}", work.name());
                }
                let info = ProgramInfo {
                    name,
                    kind: d.kind,
                    algorithm: work.name().into(),
                    path: i.executable.clone(),
                    version: Some(i.describe()),
                    sha256: sha256.clone(),
                    interpreter: Some(i.clone()),
                };
                let mut p = Program::from_def(d, info);
                if work == Work::Pysum {
                    p.cost = programs::pysum_cost(p.cost, strategy, i);
                    // The flip is about the CPU (who holds the GIL); a cold run would
                    // add the disk's time to both sides and minutes to the sweep.
                    p.warm_only = true;
                }
                programs.push(p);
            }
        }
    }
    Ok(programs)
}

/// The programs of a plan, in report order: the hashrace binaries (and their `--io`
/// modes), the selected peers, the limits, and the Python references under each of
/// `interpreters`.
fn programs(
    o: &PlanOptions,
    hash_bench: &Path,
    script: &Path,
    interpreters: &[Interpreter],
) -> Result<Vec<Program>> {
    let mut programs = Vec::new();
    for s in Strategy::ALL {
        let name = programs::hasher_binary(s);
        let path = o.bin_dir.join(&name);
        if !path.is_file() {
            bail!(
                "{} not found (build the workspace in release mode, or pass --bin-dir)",
                path.display()
            );
        }
        let info = ProgramInfo {
            name: name.clone(),
            kind: Kind::Hashrace,
            algorithm: "sha256".into(),
            path: path.display().to_string(),
            version: version_line(&path.to_string_lossy(), &["--version"]),
            sha256: Some(sha256_of_file(&path)?),
            interpreter: None,
        };
        programs.push(Program::hasher(s, info.clone(), None));
        // Asked of hash-core's strategy table, not of the binary's --help text.
        if Strategy::from_binary(&name).is_some_and(Strategy::has_io_option) {
            for mode in programs::io_modes() {
                let info = ProgramInfo {
                    name: format!("{name}-{mode}"),
                    ..info.clone()
                };
                programs.push(Program::hasher(s, info, Some(mode)));
            }
        }
    }
    let find = |name: &str| which_in(name, o.search_path.as_deref());
    let wanted = |d: &Def| match &o.peers {
        PeerSelection::None => false,
        PeerSelection::Auto => d.always || find(d.name).is_some(),
        PeerSelection::List(v) => v.iter().any(|w| w == d.name),
    };
    for d in programs::group(Group::Peer).filter(|d| wanted(d)) {
        let Some(path) = find(d.name) else {
            bail!("peer {} is not installed (install it, e.g. with --install-peers, or choose --peers)", d.name);
        };
        for tool in d.needs {
            if find(tool).is_none() {
                bail!("peer {} needs {tool} on PATH", d.name);
            }
        }
        let (flag, prefix) = d.version;
        let info = ProgramInfo {
            name: d.name.into(),
            kind: d.kind,
            algorithm: d.algorithm.into(),
            path: path.display().to_string(),
            version: version_line(&path.to_string_lossy(), &[flag]).map(|v| format!("{prefix}{v}")),
            sha256: None,
            interpreter: None,
        };
        programs.push(Program::from_def(d, info));
    }
    // References: the limits (measured by this binary) and the Python programs.
    let hb_sha = sha256_of_file(hash_bench).ok();
    for d in programs::group(Group::Limit) {
        let info = ProgramInfo {
            name: d.name.into(),
            kind: d.kind,
            algorithm: d.algorithm.into(),
            path: hash_bench.display().to_string(),
            version: None,
            sha256: hb_sha.clone(),
            interpreter: None,
        };
        programs.push(Program::from_def(d, info));
    }
    if o.python && script.is_file() {
        programs.extend(python_programs(interpreters, script)?);
    }
    Ok(programs)
}

/// The datasets of a plan, with the cache states each is measured in.
fn datasets(o: &PlanOptions) -> Result<Vec<PlanDataset>> {
    let mem_kib = crate::machine::collect(&o.data_root).mem_total_kib;
    let mut names: Vec<String> = match &o.datasets {
        Some(v) => v.clone(),
        None => o.sweep.datasets().iter().map(|s| s.to_string()).collect(),
    };
    names.extend(o.extra_datasets.iter().cloned());
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
                    units::bytes(t.bytes)
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
    Ok(datasets)
}

/// Timed runs of one benchmark: the sweep's minimum for the program's [`RunPolicy`],
/// scaled up for cheap runs and capped for expensive ones.
fn timed_runs(p: &Program, cache: Cache, scale: bool, runs: Runs, exec: f64) -> u32 {
    let is_peer = p.info.kind != Kind::Hashrace;
    let min_runs = match (p.runs, cache) {
        _ if scale => SCALE_RUNS,
        (RunPolicy::Python, Cache::Warm) => PYTHON_RUNS.0,
        (RunPolicy::Python, Cache::Cold) => PYTHON_RUNS.1,
        (RunPolicy::Hasher, Cache::Warm) => runs.warm,
        (RunPolicy::Hasher, Cache::Cold) => runs.cold,
        (RunPolicy::Peer | RunPolicy::Fixed, Cache::Warm) => runs.peer_warm,
        (RunPolicy::Peer | RunPolicy::Fixed, Cache::Cold) => runs.peer_cold,
    };
    let scaled = (TARGET_TIMED_S / exec).ceil() as u32;
    // Scale, Python and ceiling runs are not multiplied: few on purpose (minutes per run;
    // a reference, not a competitor; no I/O, no noise).
    let mut n = if scale || matches!(p.runs, RunPolicy::Python | RunPolicy::Fixed) {
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
    n
}

/// Build the plan (does not write it).
pub fn build(o: &PlanOptions) -> Result<Plan> {
    let cores = o
        .cores
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let jobs = job_counts(o.jobs.as_deref(), cores)?;
    let hash_bench = match &o.hash_bench {
        Some(p) => p.clone(),
        None => std::env::current_exe()?,
    };
    let script = o.repo.join("scripts/pyhash.py");
    let (interpreters, absent) = if o.python {
        crate::python::interpreters(&o.pythons, o.search_path.as_deref())?
    } else {
        (Vec::new(), None)
    };
    let programs = programs(o, &hash_bench, &script, &interpreters)?;
    let datasets = datasets(o)?;

    let runs = o.sweep.runs();
    let source_root = std::fs::canonicalize(&o.data_root)
        .with_context(|| format!("data directory {}", o.data_root.display()))?;
    let (location, data_root) = location::plan_location(o.location, &source_root, &o.work_parent);
    let hb = hash_bench.display().to_string();
    let mut plan = Plan {
        plan_version: PLAN_VERSION,
        id: String::new(),
        sweep: o.sweep.name().to_string(),
        repo: o.repo.display().to_string(),
        commit: git_commit(&o.bin_dir).or_else(|| git_commit(&o.repo)),
        harness_commit: None,
        data_root: data_root.display().to_string(),
        location,
        memory_limit_bytes: o.memory_limit,
        bin_dir: o.bin_dir.display().to_string(),
        hash_bench: hb.clone(),
        jobs: jobs.clone(),
        eviction: o.eviction,
        runs,
        cold_max_resident_percent: COLD_MAX_RESIDENT_PERCENT,
        warm_min_resident_percent: WARM_MIN_RESIDENT_PERCENT,
        datasets: Vec::new(),
        programs: programs.iter().map(|p| p.info.clone()).collect(),
        python_free_threaded_absent: absent,
        benchmarks: Vec::new(),
        verify_estimate_s: 0.0,
        estimate_s: 0.0,
    };
    let harness = git_commit(&o.repo);
    if harness != plan.commit {
        plan.harness_commit = harness;
    }
    let shape = Shape {
        jobs: &jobs,
        cores,
        runs,
        script: script.display().to_string(),
        link: plan.location.link.clone(),
        memory_limited: plan.memory_limit_bytes.is_some(),
    };
    let (benchmarks, verify_estimate) = entries(&datasets, &programs, &shape)?;
    plan.benchmarks = benchmarks;
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
        b.prepare = if plan.location.is_network() {
            net_prepare_command(&hb, &work, b, plan.memory_limit_bytes.is_none())
        } else {
            prepare_command(&hb, &work, b, o.eviction, plan.memory_limit_bytes.is_none())
        };
    }
    Ok(plan)
}

/// The job counts swept: the ones asked for, ascending and once each, or the CPU count.
fn job_counts(asked: Option<&[u32]>, cores: u32) -> Result<Vec<u32>> {
    let mut jobs = asked.map_or_else(|| vec![cores], <[u32]>::to_vec);
    jobs.sort_unstable();
    jobs.dedup();
    if jobs.is_empty() || jobs.contains(&0) {
        bail!("--jobs needs positive job counts");
    }
    Ok(jobs)
}

/// What every benchmark of a sweep shares: job counts, CPUs, run counts, the Python script.
struct Shape<'a> {
    jobs: &'a [u32],
    cores: u32,
    runs: Runs,
    script: String,
    /// The network link, on a network location.
    link: Option<crate::link::LinkFigures>,
    /// Whether the sweep runs under a memory limit.
    memory_limited: bool,
}

/// The benchmarks: per dataset, warm then cold, programs in report order, jobs
/// ascending; and the estimated time of the pre-timing verification. Prepare commands
/// are left empty (they name the work directory, which is named after the plan id).
fn entries(
    datasets: &[PlanDataset],
    programs: &[Program],
    shape: &Shape,
) -> Result<(Vec<PlanEntry>, f64)> {
    let mut benchmarks = Vec::new();
    let mut verify_estimate = 0.0;
    for d in datasets {
        let scale = d.files >= SCALE_FILES;
        let spec_path = std::fs::canonicalize(&d.spec_path)
            .unwrap_or_else(|_| PathBuf::from(&d.spec_path))
            .display()
            .to_string();
        for &cache in &d.caches {
            for p in programs {
                // Scale datasets: hashrace programs only, at their default -j.
                if scale && p.info.kind != Kind::Hashrace {
                    continue;
                }
                // The in-memory ceiling does no I/O: warm only.
                if p.warm_only && cache == Cache::Cold {
                    continue;
                }
                if shape.memory_limited && p.info.name.starts_with(programs::STREAM_LIMIT_PREFIX) {
                    continue;
                }
                // The hash floor is the floor of small files in the page cache: the
                // hashers map files of 1 MiB and more, which it does not, and on a
                // network the round trips decide (the read floor measures them).
                if matches!(p.invocation, Invocation::HashFloor { .. })
                    && (shape.link.is_some() || d.largest >= hash_core::hasher::MAP_MIN)
                {
                    continue;
                }
                // Fewer files than cores: a Python pool has nothing to share out, and its
                // rows would time serial work plus a pool's start-up (pysum on `huge`:
                // three minutes). The serial rows stay.
                if p.info.interpreter.is_some()
                    && d.files < u64::from(shape.cores)
                    && !matches!(p.invocation, Invocation::Python("serial"))
                {
                    continue;
                }
                let mut variants = p.variants(shape.jobs, shape.cores, scale);
                // On a network, the read floor with one request in flight is the
                // yardstick of every serial reader.
                if shape.link.is_some() && p.info.name == programs::READ_FLOOR {
                    variants.insert(0, (Some(1), false));
                    variants.dedup();
                }
                for (i, (j, default_jobs)) in variants.into_iter().enumerate() {
                    let argv = p.argv(j, d, &spec_path, &shape.script, shape.cores)?;
                    let mut b = entry(p, d, cache, (j, default_jobs), argv, shape);
                    if i == 0 && b.own_cold_run {
                        b.estimate_s += ESTIMATE_FACTOR
                            * (p.exec_estimate(j, Cache::Cold, d, shape.cores)
                                + prepare_estimate(Cache::Cold, d));
                    }
                    benchmarks.push(b);
                    if verified(&p.info) && cache == d.caches[0] {
                        verify_estimate +=
                            ESTIMATE_FACTOR * p.exec_estimate(j, Cache::Warm, d, shape.cores);
                    }
                }
            }
        }
    }
    Ok((benchmarks, verify_estimate))
}

/// One benchmark: its id, run count and time estimate.
fn entry(
    p: &Program,
    d: &PlanDataset,
    cache: Cache,
    (j, default_jobs): (Option<u32>, bool),
    argv: Vec<String>,
    shape: &Shape,
) -> PlanEntry {
    let (name, runs, cores) = (d.spec.name.as_str(), shape.runs, shape.cores);
    let scale = d.files >= SCALE_FILES;
    let id = match (j, default_jobs) {
        (Some(j), _) => format!("{name}.{}.{}-j{j}", cache.name(), p.info.name),
        (None, true) => format!("{name}.{}.{}-jdefault", cache.name(), p.info.name),
        (None, false) => format!("{name}.{}.{}", cache.name(), p.info.name),
    };
    let mut exec = p.exec_estimate(j, cache, d, cores);
    if let Some(link) = &shape.link {
        exec += network_estimate(
            link,
            cache,
            d,
            j.unwrap_or(if default_jobs { cores } else { 1 }),
        );
    }
    let n = timed_runs(p, cache, scale, runs, exec);
    let per_run = exec + prepare_estimate(cache, d);
    let warm_step = if cache == Cache::Warm {
        d.bytes as f64 / 5e9 + d.files as f64 * 10e-6
    } else {
        0.0
    };
    // Timed runs, hyperfine warm-ups, the untimed RSS run; fixed costs of starting
    // hyperfine and the helpers.
    let estimate = ESTIMATE_FACTOR * (f64::from(n + runs.warmup + 1) * per_run + warm_step + 0.5);
    PlanEntry {
        id,
        dataset: name.to_string(),
        cache,
        program: p.info.name.clone(),
        kind: p.info.kind,
        jobs: j,
        default_jobs,
        runs: n,
        warmup: runs.warmup,
        command: sh_join(&argv),
        argv,
        prepare: String::new(),
        estimate_s: estimate,
        // Folios are what the cold run shapes: none without data, and the ceilings
        // never read the dataset.
        own_cold_run: cache == Cache::Warm
            && shape.link.is_none()
            && !shape.memory_limited
            && d.bytes > 0
            && !matches!(p.invocation, Invocation::Ceiling { .. }),
    }
}

/// What a network adds to a run, seconds: the data at the link's rate and a few round
/// trips per file spread over the requests in flight (cold); FUSE's cost per file (warm).
fn network_estimate(
    link: &crate::link::LinkFigures,
    cache: Cache,
    d: &PlanDataset,
    inflight: u32,
) -> f64 {
    let files = d.files as f64;
    match cache {
        Cache::Warm => files * 60e-6,
        Cache::Cold => {
            let rate = link.rate_bytes_per_sec.map_or(300e6, |r| r as f64);
            let per_file = 3.0 * link.rtt_ms / 1000.0 + 300e-6;
            d.bytes as f64 / rate + files * per_file / f64::from(inflight.max(1)) + 0.3
        }
    }
}

/// hyperfine's `--prepare` for `b` on a network location: a fresh mount (cold) or the
/// link's counters (warm), appended to the benchmark's link record. With `top_up`, a
/// warm prepare first reads back through the mount what the client's page cache lost
/// (as [`prepare_command`]'s does locally): a warm run that fetched it over the link
/// would be flagged for moving too much.
fn net_prepare_command(hb: &str, work: &Path, b: &PlanEntry, top_up: bool) -> String {
    let mut prep = vec![
        hb.to_string(),
        "net-prepare".into(),
        "--work".into(),
        work.display().to_string(),
        "--id".into(),
        b.id.clone(),
    ];
    match b.cache {
        Cache::Cold => prep.push("--remount".into()),
        Cache::Warm if top_up => prep.push("--top-up".into()),
        Cache::Warm => {}
    }
    sh_join(&prep)
}

/// Path of a benchmark's link record (network locations).
pub fn link_record(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.link.jsonl"))
}

/// hyperfine's `--prepare` for `b`: evict (cold) or measure (warm) the dataset,
/// appending a residency sample to the benchmark's record in `work`. With `top_up`, a
/// warm prepare first reads back what is not resident: some guests page out idle page
/// cache on their own (DAMON), and a run of small files that starts a few per cent
/// cold is no warm run. Under a memory limit warm means what the cgroup kept: no top-up.
fn prepare_command(
    hb: &str,
    work: &Path,
    b: &PlanEntry,
    eviction: EvictMethod,
    top_up: bool,
) -> String {
    let record = residency_record(work, &b.id).display().to_string();
    let mut prep = vec![hb.to_string()];
    match b.cache {
        Cache::Cold => {
            prep.extend(["evict".into(), "--record".into(), record]);
            if eviction == EvictMethod::DropCaches {
                prep.extend(["--method".into(), "drop-caches".into()]);
            }
        }
        Cache::Warm => {
            prep.push("residency".into());
            if top_up {
                prep.push("--top-up".into());
            }
            prep.extend(["--record".into(), record]);
        }
    }
    prep.push(b.dataset.clone());
    sh_join(&prep)
}

/// How a benchmark is labelled in progress lines and tables: `hash-threads -j2`,
/// `hash-threads -j default`, `hash-serial`.
pub fn label(b: &PlanEntry) -> String {
    match (b.jobs, b.default_jobs) {
        (Some(j), _) => format!("{} -j{j}", b.program),
        (None, true) => format!("{} -j default", b.program),
        (None, false) => b.program.clone(),
    }
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

/// Path of a benchmark's record of the CPU time the host took meanwhile
/// ([`crate::machine::CpuTicks`] accrued over its hyperfine call).
pub fn host_path(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.host.json"))
}

/// Path of a benchmark's peak-RSS record.
pub fn rss_path(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.rss.json"))
}

/// Write `plan.json` into `work` (creating it and `work/raw`).
pub fn write(plan: &Plan, work: &Path) -> Result<()> {
    std::fs::create_dir_all(work.join("raw"))
        .with_context(|| format!("creating {}", work.display()))?;
    let mut json = serde_json::to_string_pretty(plan)?;
    json.push('\n');
    std::fs::write(work.join("plan.json"), json)?;
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
            units::bytes(d.bytes),
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
        units::seconds(plan.estimate_s)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_bins(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        for h in programs::hashers() {
            let p = dir.join(h);
            std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// The CPU count every plan here is made for, whatever this machine has.
    const CORES: u32 = 2;

    /// A directory that stands for PATH: every peer, the tools their pipelines need and
    /// a `python3`, each a script that only says who it is. Plans made with it are the
    /// same on every machine, whatever that machine has installed.
    fn fake_path(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = dir.join("path");
        std::fs::create_dir_all(&dir).unwrap();
        let python = dir.join("python3");
        let answer = format!(
            "{{\"executable\": \"{}\", \"version\": \"3.11.7\", \"major\": 3, \"minor\": 11, \
             \"implementation\": \"cpython\", \"gil_enabled\": null, \"free_threaded_build\": false}}",
            python.display()
        );
        let mut scripts = vec![(python, format!("#!/bin/sh\necho '{answer}'\n"))];
        for name in [
            "sha256sum",
            "rhash",
            "hashdeep",
            "b3sum",
            "find",
            "sort",
            "xargs",
            "sh",
        ] {
            scripts.push((dir.join(name), format!("#!/bin/sh\necho '{name} 1.0'\n")));
        }
        for (p, text) in scripts {
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    fn options(bins: &Path, data: &Path, work: &Path) -> PlanOptions {
        PlanOptions {
            sweep: Sweep::Default,
            datasets: None,
            extra_datasets: vec![],
            specs_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets"),
            data_root: data.to_path_buf(),
            bin_dir: bins.to_path_buf(),
            hash_bench: Some(PathBuf::from("/x/hash-bench")),
            jobs: Some(vec![2]),
            peers: PeerSelection::List(vec!["sha256sum".into()]),
            warm: true,
            cold: true,
            eviction: EvictMethod::Fadvise,
            repo: bins.to_path_buf(),
            work_parent: work.to_path_buf(),
            python: false,
            pythons: Vec::new(),
            location: crate::location::Location::Local,
            memory_limit: None,
            search_path: Some(fake_path(bins).into_os_string()),
            cores: Some(CORES),
        }
    }

    fn cores() -> u32 {
        CORES
    }

    #[test]
    fn a_network_plan_runs_in_its_mount_directory_and_remounts_before_cold_runs() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let mut o = options(t.path(), t.path(), Path::new("/w"));
        o.location = Location::Wan;
        let plan = build(&o).unwrap();
        assert_eq!(plan.data_root, "/w/mnt-wan");
        assert_eq!(plan.source_root(), t.path().canonicalize().unwrap());
        assert_eq!(plan.location.link.as_ref().unwrap().rtt_ms, 20.0);
        let find = |id: &str| {
            plan.benchmarks
                .iter()
                .find(|b| b.id == id)
                .unwrap_or_else(|| panic!("no {id}"))
        };
        let cold = find("shards.cold.hash-serial");
        assert!(
            cold.prepare.contains(" net-prepare ") && cold.prepare.ends_with("--remount"),
            "{}",
            cold.prepare
        );
        let warm = find("shards.warm.hash-serial");
        assert!(
            warm.prepare.contains(" net-prepare ")
                && !warm.prepare.contains("--remount")
                && warm.prepare.ends_with("--top-up"),
            "{}",
            warm.prepare
        );
        // The read floor with one request in flight, on a network only.
        find("small.cold.ref-read-floor-j1");
        let local = build(&options(t.path(), t.path(), Path::new("/w"))).unwrap();
        assert!(!local
            .benchmarks
            .iter()
            .any(|b| b.id == "small.cold.ref-read-floor-j1"));
        // Round trips make the same sweep slower on a network, and the plan says so.
        assert!(
            plan.estimate_s > local.estimate_s * 1.5,
            "{} vs {}",
            plan.estimate_s,
            local.estimate_s
        );
    }

    #[test]
    fn default_plan_commands_and_budget() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let plan = build(&options(t.path(), t.path(), Path::new("/w"))).unwrap();
        // Per dataset and cache state: hash-serial, 3 parallel hashers × (-j2, default),
        // hash-async's 2 non-default io modes, sha256sum, the read floor at the CPU count
        // and 64; warm also the 4 ceilings, and on the datasets of small files (`small`,
        // `empty`) the 2 hash floors. 4 datasets × 2 caches, plus `empty` warm only.
        let floors = if cores() == 64 { 1 } else { 2 };
        let per = 1 + 3 * 2 + 2 + 1 + floors;
        assert_eq!(plan.benchmarks.len(), 9 * per + 5 * 4 + 2 * 2);
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
        assert!(warm.prepare.contains(" residency --top-up --record "));
        // sha256sum: 64 files, 2 processes, 4 batches each → -n 8.
        let sum = find("shards.warm.sha256sum-j2");
        assert_eq!(
            sum.command,
            "sh -c 'find -H shards -type f -print0 | LC_ALL=C sort -z | xargs -0r -P 2 -n 8 sha256sum'"
        );

        // Default -j: no -j flag at all, jobs null, labelled as such.
        for h in ["hash-threads", "hash-procs", "hash-async"] {
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
        assert_eq!(
            c1.argv[1..7],
            ["ceiling", "sha256", "--threads", "1", "--limit", "compute"]
        );
        assert!(c1.argv[8].ends_with("datasets/mixed.json"), "{:?}", c1.argv);
        let call = find("mixed.warm.ref-sha256-allcores");
        assert_eq!(call.argv[4], cores().to_string());
        let s = find("mixed.warm.ref-sha256-stream-allcores");
        assert_eq!(
            s.argv[4..7],
            [&cores().to_string()[..], "--limit", "stream"]
        );
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
        let h1 = find("small.warm.ref-hash-floor-1core");
        assert_eq!(h1.argv[1..], ["hash-floor", "-j", "1", "small"]);
        let hall = find("small.warm.ref-hash-floor-allcores");
        assert_eq!(hall.argv[3], cores().to_string());
        assert!(!plan.benchmarks.iter().any(|b| {
            b.program.starts_with("ref-hash-floor")
                && (b.cache == Cache::Cold || ["shards", "huge", "mixed"].contains(&&b.dataset[..]))
        }));

        // `empty`: warm only, said why.
        let empty = plan
            .datasets
            .iter()
            .find(|d| d.spec.name == "empty")
            .unwrap();
        assert_eq!(empty.caches, vec![Cache::Warm]);
        assert!(empty.note.as_deref().unwrap().contains("no file data"));
        find("empty.warm.hash-procs-jdefault");

        // The default sweep with every peer (the fakes of `fake_path`, whatever this
        // machine has), Python (both kinds of work), and hash-async's two io modes: the
        // model says 36.4 minutes on 2 vCPUs (31.7 with sha256sum as the only peer),
        // each warm program's own cold run included; pysum's verification is ~1 minute.
        // The README and `bench.sh --help` quote these; a plan that grows past them
        // must say so there.
        let bins = tempfile::tempdir().unwrap();
        fake_bins(bins.path());
        let mut o = options(bins.path(), t.path(), Path::new("/w"));
        o.peers = PeerSelection::Auto;
        o.python = true;
        o.repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let all = build(&o).unwrap();
        let minutes = all.estimate_s / 60.0;
        assert!(
            (35.0..38.0).contains(&minutes),
            "every peer: {minutes:.1} min"
        );
        o.peers = PeerSelection::List(vec!["sha256sum".into()]);
        let minutes = build(&o).unwrap().estimate_s / 60.0;
        assert!(
            (30.0..34.0).contains(&minutes),
            "sha256sum only: {minutes:.1} min"
        );
        // Slow peers (sha256sum on `huge`, ~10 s a run) are capped.
        let slow = all
            .benchmarks
            .iter()
            .find(|b| b.id == "huge.warm.sha256sum-j2")
            .unwrap();
        assert_eq!(slow.runs, SLOW_PEER_RUNS);
    }

    #[test]
    fn a_plan_looks_programs_up_only_in_its_own_search_path() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let mut o = options(t.path(), t.path(), Path::new("/w"));
        o.peers = PeerSelection::Auto;
        o.python = true;
        o.repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let names = |o: &PlanOptions| -> Vec<String> {
            let plan = build(o).unwrap();
            plan.programs.into_iter().map(|p| p.name).collect()
        };
        // The fakes: every peer and one Python, on any machine.
        let all = names(&o);
        for want in ["sha256sum", "rhash", "hashdeep", "b3sum", "python-serial"] {
            assert!(all.iter().any(|n| n == want), "{want} in {all:?}");
        }
        // An empty search path: sha256sum, which every machine running these tests
        // has on its real PATH, is not found, so the real PATH is never read.
        let empty = tempfile::tempdir().unwrap();
        o.search_path = Some(empty.path().as_os_str().to_owned());
        let e = build(&o).unwrap_err().to_string();
        assert!(e.contains("peer sha256sum is not installed"), "{e}");
        o.peers = PeerSelection::None;
        assert!(!names(&o).iter().any(|n| n.starts_with("python")));
        // The same search path gives the same estimate, whatever else differs.
        o.search_path = Some(fake_path(t.path()).into_os_string());
        o.peers = PeerSelection::Auto;
        let copy = tempfile::tempdir().unwrap();
        let mut o2 = o.clone();
        o2.search_path = Some(fake_path(copy.path()).into_os_string());
        assert_eq!(
            build(&o).unwrap().estimate_s,
            build(&o2).unwrap().estimate_s
        );
    }

    #[test]
    fn io_modes_are_raced_for_the_strategy_hash_core_gives_io() {
        let t = tempfile::tempdir().unwrap();
        // The fake binaries' --help lists nothing: the modes come from hash-core.
        fake_bins(t.path());
        let o = options(t.path(), t.path(), Path::new("/w"));
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
        for s in &crate::python::PYHASH_STRATEGIES[1..] {
            let b = find(&format!("small.warm.python-{s}-j2"));
            assert_eq!(b.argv[2..], [s, "-j", "2", "small"]);
        }
        // The pools' own defaults, and the pure-Python work (warm only).
        let b = find("small.warm.python-threads-jdefault");
        assert_eq!(b.argv[2..], ["threads", "small"]);
        let b = find("small.warm.python-procs-pysum-j2");
        assert_eq!(
            b.argv[2..],
            ["procs", "--work", "pysum", "-j", "2", "small"]
        );
        assert!(!plan
            .benchmarks
            .iter()
            .any(|b| b.id == "small.cold.python-serial-pysum"));
        // Fewer files than cores (`huge` is one file): the serial rows only.
        assert!(plan
            .benchmarks
            .iter()
            .any(|b| b.id == "huge.warm.python-serial-pysum"));
        if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
            assert!(!plan
                .benchmarks
                .iter()
                .any(|b| b.id == "huge.warm.python-threads-j2"));
        }
        // Checked before timing, like the hashers: every Python row, whatever its work
        // (pysum rows against hash-bench's own byte sums).
        for name in [
            "python-procs",
            "python-threads-pysum",
            "python-serial-pysum",
        ] {
            let py = plan.programs.iter().find(|p| p.name == name).unwrap();
            assert!(verified(py), "{name}");
            assert!(py.interpreter.is_some(), "{name}");
        }
        // Any interpreter's rows, not only the table's names.
        let mut other = plan
            .programs
            .iter()
            .find(|p| p.name == "python-threads")
            .unwrap()
            .clone();
        other.name = "pypy3-threads".into();
        assert!(verified(&other));
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
                "scale.warm.hash-async-pool-jdefault",
                "scale.warm.hash-async-uring-jdefault",
                "scale2.warm.hash-serial",
                "scale2.warm.hash-threads-jdefault",
                "scale2.warm.hash-procs-jdefault",
                "scale2.warm.hash-async-jdefault",
                "scale2.warm.hash-async-pool-jdefault",
                "scale2.warm.hash-async-uring-jdefault",
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
        o2.jobs = Some(vec![1, 2]);
        assert_ne!(a.id, build(&o2).unwrap().id);
        std::fs::write(t.path().join("hash-async"), "#!/bin/sh\nexit 1\n").unwrap();
        assert_ne!(
            a.id,
            build(&o).unwrap().id,
            "a rebuilt binary is a new plan"
        );
    }

    #[test]
    fn options_parse_with_their_defaults() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: PlanOptions,
        }
        use clap::Parser;
        let c = Cli::try_parse_from(["x", "--bin-dir", "/b"]).unwrap();
        assert!(c.o.warm && c.o.cold && c.o.python);
        assert_eq!((c.o.jobs, c.o.hash_bench), (None, None));
        assert_eq!(c.o.sweep, Sweep::Default);
        assert_eq!(c.o.peers, PeerSelection::Auto);
        let c = Cli::try_parse_from([
            "x",
            "--bin-dir",
            "/b",
            "--no-warm",
            "--no-python",
            "--jobs",
            "1,4",
            "--extra-datasets",
            "big,scale",
        ])
        .unwrap();
        assert!(!c.o.warm && c.o.cold && !c.o.python);
        assert_eq!(c.o.jobs, Some(vec![1, 4]));
        assert_eq!(c.o.extra_datasets, ["big", "scale"]);
        assert!(Cli::try_parse_from(["x"]).is_err(), "--bin-dir is required");
    }

    #[test]
    fn labels() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let plan = build(&options(t.path(), t.path(), Path::new("/w"))).unwrap();
        let label_of = |id: &str| label(plan.benchmarks.iter().find(|b| b.id == id).unwrap());
        assert_eq!(label_of("small.cold.hash-threads-j2"), "hash-threads -j2");
        assert_eq!(
            label_of("small.cold.hash-threads-jdefault"),
            "hash-threads -j default"
        );
        assert_eq!(label_of("small.cold.hash-serial"), "hash-serial");
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
