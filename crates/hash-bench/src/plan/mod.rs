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
//!
//! The types of `plan.json` and the plan's settings are here; `build` picks the programs
//! and datasets and makes the plan, `benchmarks` turns them into benchmarks with run
//! counts and time estimates, and `work` names the work directory's files and writes
//! and reads `plan.json`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cache::EvictMethod;
use crate::location::{Location, LocationInfo};
use crate::python::Interpreter;
use crate::spec::Spec;

mod benchmarks;
mod build;
pub mod programs;
#[cfg(test)]
mod testing;
mod work;

pub use build::{build, git_commit, verified};
use programs::Group;
pub use work::{
    export_path, host_path, label, link_record, read, residency_record, rss_path, summary,
    work_dir, write,
};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
