//! The programs a sweep can race, as data: one table row per program says how its command
//! line is built, which `-j` values it runs at, how many runs it gets and what one run
//! roughly costs. [`crate::plan::build`] walks the rows; it matches no program names.
//!
//! The hashrace binaries are not in the table: they come from
//! [`hash_core::Strategy::ALL`] (binary `hash-<name>`), so a new strategy is raced
//! without an edit here. `scripts/bench.sh` asks `hash-bench strategies` for the same
//! list. A hasher that hash-core gives an `--io` option ([`Strategy::has_io_option`]) is
//! also raced once per non-default [`IoMode`] (`hash-async-pool`, `hash-async-uring`), at
//! its default `-j` only.

use anyhow::{bail, Result};
use clap::ValueEnum;
use hash_core::strategy::IoMode;
use hash_core::Strategy;

use super::{Cache, Kind, PlanDataset, ProgramInfo};
use crate::util::sh_quote;

/// Reads in flight of the read-floor reference rows besides the number of CPUs (the
/// hashers' default): about what `hash-threads`/`hash-async` keep in flight on cold
/// small files. The one place to change it.
pub const READ_FLOOR_EXTRA_JOBS: [u32; 1] = [64];

/// Name of the read-floor reference rows.
pub const READ_FLOOR: &str = "ref-read-floor";

/// Name prefix of the streaming-limit rows. They hold up to 256 MiB of buffer, so they
/// are not raced under a memory limit (they would measure the limit).
pub const STREAM_LIMIT_PREFIX: &str = "ref-sha256-stream-";

/// The hashrace binaries, one per [`Strategy`], in the order they are reported.
pub fn hashers() -> Vec<String> {
    Strategy::ALL.iter().map(|s| hasher_binary(*s)).collect()
}

/// The binary of a strategy (the workspace's crate names), from hash-core's table.
pub fn hasher_binary(s: Strategy) -> String {
    s.binary().to_owned()
}

/// The `--io` modes raced as programs of their own: every mode but the default one (the
/// binary run without `--io` is that).
pub fn io_modes() -> Vec<String> {
    IoMode::value_variants()
        .iter()
        .filter(|m| **m != IoMode::default())
        .filter_map(|m| m.to_possible_value())
        .map(|v| v.get_name().to_string())
        .collect()
}

/// How a program's command line is made (run in the data root, the dataset last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// A hashrace binary: `BIN [--io MODE] [-j N] DATASET`.
    Hasher {
        /// `--io` mode, if not the default.
        io: Option<String>,
    },
    /// `python3 scripts/pyhash.py STRATEGY [--work pysum] [-j N] DATASET` (the work is the
    /// program's algorithm; no `-j`: the pools' standard-library defaults).
    Python(&'static str),
    /// `hash-bench ceiling sha256 --threads 1|CPUs --limit compute|stream --spec SPEC`
    /// (no I/O).
    Ceiling {
        /// All CPUs rather than one.
        all_cores: bool,
        /// Data streamed from memory rather than in the core's cache.
        stream: bool,
    },
    /// `hash-bench read-floor -j N DATASET`.
    ReadFloor,
    /// `hash-bench hash-floor -j 1|CPUs DATASET`.
    HashFloor {
        /// All CPUs rather than one.
        all_cores: bool,
    },
    /// `sh -c 'find | sort | xargs -P N -n PER sha256sum'`.
    Sha256sum,
    /// `sh -c 'find | sort | xargs b3sum --num-threads N'`.
    B3sum,
    /// `hashdeep -c sha256 -r -j N DATASET`.
    Hashdeep,
    /// `rhash --sha256 -r DATASET`.
    Rhash,
}

/// Which `-j` values a program is raced at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobsRule {
    /// Never given `-j`: one benchmark.
    Single,
    /// Each swept `-j`.
    Swept,
    /// Each swept `-j` and once with no `-j` at all (the parallel hashers).
    SweptAndDefault,
    /// Only with no `-j` (the `--io` modes).
    DefaultOnly,
    /// The number of CPUs and [`READ_FLOOR_EXTRA_JOBS`] (the read floor).
    ReadFloor,
}

/// How many timed runs a program gets (see [`crate::plan::Runs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPolicy {
    /// A hashrace binary: the sweep's hasher minimum, scaled to the timed budget, capped
    /// for expensive runs.
    Hasher,
    /// A peer or measured reference: the peer minimum, scaled, capped when slow.
    Peer,
    /// A Python reference: [`crate::plan::PYTHON_RUNS`], not scaled.
    Python,
    /// The in-memory ceilings: the peer minimum, not scaled (no I/O, no noise).
    Fixed,
}

/// Rough cost of one run: see [`Program::exec_estimate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Bytes per second per worker.
    pub rate: f64,
    /// Seconds per file per worker.
    pub per_file: f64,
    /// Uses several cores.
    pub parallel: bool,
    /// Start-up, seconds (an interpreter, a pool of them, costs more).
    pub start: f64,
    /// Reads in flight are not capped by the cores when cold (the read floor).
    pub io_uncapped: bool,
}

const fn cost(rate: f64, per_file: f64, parallel: bool, start: f64) -> Cost {
    Cost {
        rate,
        per_file,
        parallel,
        start,
        io_uncapped: false,
    }
}

/// Which group a table row belongs to, i.e. when it is raced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// An installed tool, raced when selected (`--peers`).
    Peer,
    /// A limit measured by hash-bench itself: always raced.
    Limit,
    /// A Python reference (`scripts/pyhash.py`), raced when python3 is installed.
    Python,
}

/// One row of [`TABLE`].
#[derive(Debug, Clone)]
pub struct Def {
    /// Name as reported.
    pub name: &'static str,
    /// When it is raced.
    pub group: Group,
    /// Kind, for the reader of the results.
    pub kind: Kind,
    /// Hash computed (`sha256`, `blake3`, `none`).
    pub algorithm: &'static str,
    /// Its command line.
    pub invocation: Invocation,
    /// Its `-j` values.
    pub jobs: JobsRule,
    /// Its run counts.
    pub runs: RunPolicy,
    /// Its cost model.
    pub cost: Cost,
    /// Raced warm only (no I/O to make cold).
    pub warm_only: bool,
    /// Prints exactly `sha256sum`'s lines, so checked before timing.
    pub verified: bool,
    /// Version flag and the prefix its first line needs (peers).
    pub version: (&'static str, &'static str),
    /// Other tools it needs on PATH (the `sh -c` pipelines).
    pub needs: &'static [&'static str],
    /// A peer `--peers auto` races even when it is not found (and then says so): the
    /// baseline every system the harness supports has (coreutils).
    pub always: bool,
}

const PIPELINE: &[&str] = &["find", "sort", "xargs", "sh"];

// Rows are built by const fns (not `..base` struct updates: `Invocation` owns a
// `String`, and a const cannot drop the rest of a base value).
impl Def {
    /// An installed tool that prints `sha256sum`-like lines; its `--version` names it.
    const fn peer(name: &'static str, invocation: Invocation, jobs: JobsRule, cost: Cost) -> Def {
        Def {
            name,
            group: Group::Peer,
            kind: Kind::Peer,
            algorithm: "sha256",
            invocation,
            jobs,
            runs: RunPolicy::Peer,
            cost,
            warm_only: false,
            verified: false,
            version: ("--version", ""),
            needs: &[],
            always: false,
        }
    }

    /// A limit hash-bench measures itself: one benchmark, fixed runs, warm only.
    const fn limit(name: &'static str, invocation: Invocation, cost: Cost) -> Def {
        let mut d = Def::peer(name, invocation, JobsRule::Single, cost);
        d.group = Group::Limit;
        d.kind = Kind::Reference;
        d.runs = RunPolicy::Fixed;
        d.warm_only = true;
        d.version = ("", "");
        d
    }

    /// A `scripts/pyhash.py` strategy: prints exactly `sha256sum`'s lines.
    const fn python(strategy: &'static str, name: &'static str, jobs: JobsRule, cost: Cost) -> Def {
        let mut d = Def::peer(name, Invocation::Python(strategy), jobs, cost);
        d.group = Group::Python;
        d.kind = Kind::Reference;
        d.runs = RunPolicy::Python;
        d.verified = true;
        d
    }

    /// Run through an `sh -c` pipeline of these tools.
    const fn piped(mut self) -> Def {
        self.needs = PIPELINE;
        self
    }

    /// A reference computing `algorithm`, not a peer.
    const fn reference(mut self, algorithm: &'static str) -> Def {
        self.kind = Kind::Reference;
        self.algorithm = algorithm;
        self
    }
}

/// Every program but the hashrace binaries, in report order within each group. The
/// figures of the cost model are measurements of the 2-vCPU reference machine (the
/// limits table in section 1 of `results/VERDICT.md`), between the idle ones and those
/// with the other core busy; they only need to be right within a factor of two.
pub const TABLE: &[Def] = &[
    {
        let mut d = Def::peer(
            "sha256sum",
            Invocation::Sha256sum,
            JobsRule::Swept,
            cost(0.2e9, 20e-6, true, 0.005),
        )
        .piped();
        d.always = true;
        d
    },
    Def::peer(
        "rhash",
        Invocation::Rhash,
        JobsRule::Single,
        cost(1.0e9, 20e-6, false, 0.005),
    ),
    {
        let mut d = Def::peer(
            "hashdeep",
            Invocation::Hashdeep,
            JobsRule::Swept,
            cost(0.2e9, 30e-6, true, 0.005),
        );
        d.version = ("-V", "hashdeep ");
        d
    },
    Def::peer(
        "b3sum",
        Invocation::B3sum,
        JobsRule::Swept,
        cost(4.0e9, 20e-6, true, 0.005),
    )
    .piped()
    .reference("blake3"),
    Def::limit(
        "ref-sha256-1core",
        Invocation::Ceiling {
            all_cores: false,
            stream: false,
        },
        cost(1.7e9, 1e-6, false, 0.005),
    ),
    Def::limit(
        "ref-sha256-allcores",
        Invocation::Ceiling {
            all_cores: true,
            stream: false,
        },
        cost(1.7e9, 1e-6, true, 0.005),
    ),
    Def::limit(
        "ref-sha256-stream-1core",
        Invocation::Ceiling {
            all_cores: false,
            stream: true,
        },
        cost(1.1e9, 1e-6, false, 0.05),
    ),
    Def::limit(
        "ref-sha256-stream-allcores",
        Invocation::Ceiling {
            all_cores: true,
            stream: true,
        },
        cost(1.1e9, 1e-6, true, 0.05),
    ),
    {
        // Warm and cold, at its own -j values, with a peer's run counts.
        let floor = Cost {
            io_uncapped: true,
            ..cost(5.0e9, 8e-6, true, 0.005)
        };
        let mut d = Def::limit(READ_FLOOR, Invocation::ReadFloor, floor).reference("none");
        d.jobs = JobsRule::ReadFloor;
        d.runs = RunPolicy::Peer;
        d.warm_only = false;
        d
    },
    {
        // What a hasher of small files could reach with nothing of its own: I/O,
        // so a peer's run counts; warm only, like the ceilings it sits beside.
        let mut d = Def::limit(
            "ref-hash-floor-1core",
            Invocation::HashFloor { all_cores: false },
            cost(1.5e9, 5e-6, false, 0.005),
        );
        d.runs = RunPolicy::Peer;
        d
    },
    {
        let mut d = Def::limit(
            "ref-hash-floor-allcores",
            Invocation::HashFloor { all_cores: true },
            cost(1.5e9, 5e-6, true, 0.005),
        );
        d.runs = RunPolicy::Peer;
        d
    },
    Def::python(
        "serial",
        "python-serial",
        JobsRule::Single,
        cost(1.0e9, 40e-6, false, 0.05),
    ),
    Def::python(
        "threads",
        "python-threads",
        JobsRule::SweptAndDefault,
        cost(1.0e9, 60e-6, true, 0.05),
    ),
    Def::python(
        "procs",
        "python-procs",
        JobsRule::SweptAndDefault,
        cost(1.0e9, 80e-6, true, 0.15),
    ),
    Def::python(
        "asyncio",
        "python-asyncio",
        JobsRule::SweptAndDefault,
        cost(1.0e9, 60e-6, true, 0.05),
    ),
];

/// The cost of a Python row doing pure-Python work (`--work pysum`) instead of SHA-256:
/// CPython sums ~215 MiB/s of bytes on one core of the 2-vCPU reference machine, and
/// with the GIL on only processes spread it over the cores.
pub fn pysum_cost(mut c: Cost, strategy: &str, i: &crate::python::Interpreter) -> Cost {
    c.rate = 0.2e9;
    if strategy != "procs" && !i.gil_off() {
        c.parallel = false;
    }
    c
}

/// The rows of one group, in report order.
pub fn group(g: Group) -> impl Iterator<Item = &'static Def> {
    TABLE.iter().filter(move |d| d.group == g)
}

/// The table row of a program name, if it has one (the hashrace binaries do not).
pub fn lookup(name: &str) -> Option<&'static Def> {
    TABLE.iter().find(|d| d.name == name)
}

/// A program of one plan: what the results record about it, and how it is raced.
#[derive(Debug, Clone)]
pub struct Program {
    /// As recorded in the plan and the results.
    pub info: ProgramInfo,
    /// Its command line.
    pub invocation: Invocation,
    /// Its `-j` values.
    pub jobs: JobsRule,
    /// Its run counts.
    pub runs: RunPolicy,
    /// Its cost model.
    pub cost: Cost,
    /// Raced warm only.
    pub warm_only: bool,
}

impl Program {
    /// A hashrace binary (`io`: one of its non-default `--io` modes).
    pub fn hasher(s: Strategy, info: ProgramInfo, io: Option<String>) -> Program {
        let jobs = match (s.is_parallel(), &io) {
            (false, _) => JobsRule::Single,
            (true, None) => JobsRule::SweptAndDefault,
            (true, Some(_)) => JobsRule::DefaultOnly,
        };
        Program {
            info,
            invocation: Invocation::Hasher { io },
            jobs,
            runs: RunPolicy::Hasher,
            // Fitted to the committed default sweep (its hashers ran ~0.74x the old model).
            cost: cost(1.3e9, 15e-6, s.is_parallel(), 0.005),
            warm_only: false,
        }
    }

    /// A row of [`TABLE`].
    pub fn from_def(d: &Def, info: ProgramInfo) -> Program {
        Program {
            info,
            invocation: d.invocation.clone(),
            jobs: d.jobs,
            runs: d.runs,
            cost: d.cost,
            warm_only: d.warm_only,
        }
    }

    /// The `(jobs, run with no -j at all)` variants raced; `scale`: a scale dataset, where
    /// only the default `-j` is.
    pub fn variants(&self, jobs: &[u32], cores: u32, scale: bool) -> Vec<(Option<u32>, bool)> {
        let swept = || -> Vec<(Option<u32>, bool)> {
            if scale {
                vec![]
            } else {
                jobs.iter().map(|&j| (Some(j), false)).collect()
            }
        };
        match self.jobs {
            JobsRule::Single => vec![(None, false)],
            JobsRule::Swept => swept(),
            JobsRule::SweptAndDefault => {
                let mut v = swept();
                v.push((None, true));
                v
            }
            JobsRule::DefaultOnly => vec![(None, true)],
            JobsRule::ReadFloor => {
                let mut v: Vec<u32> = std::iter::once(cores)
                    .chain(READ_FLOOR_EXTRA_JOBS)
                    .collect();
                v.sort_unstable();
                v.dedup();
                v.into_iter().map(|j| (Some(j), false)).collect()
            }
        }
    }

    /// The command as an argv, run in the data root. `spec_path`: the dataset's spec
    /// (absolute); `script`: `scripts/pyhash.py`.
    pub fn argv(
        &self,
        j: Option<u32>,
        d: &PlanDataset,
        spec_path: &str,
        script: &str,
        cores: u32,
    ) -> Result<Vec<String>> {
        let name = d.spec.name.as_str();
        let q = sh_quote(name);
        let jflag = |argv: &mut Vec<String>| {
            if let Some(j) = j {
                argv.extend(["-j".into(), j.to_string()]);
            }
        };
        let mut argv: Vec<String> = vec![self.info.path.clone()];
        let pname = &self.info.name;
        let argv = match (&self.invocation, j) {
            (Invocation::Hasher { io }, _) => {
                if let Some(mode) = io {
                    argv.extend(["--io".into(), mode.clone()]);
                }
                jflag(&mut argv);
                argv.push(name.into());
                argv
            }
            (Invocation::Python(strategy), _) => {
                argv.push(script.into());
                argv.push((*strategy).into());
                if self.info.algorithm != "sha256" {
                    argv.extend(["--work".into(), self.info.algorithm.clone()]);
                }
                jflag(&mut argv);
                argv.push(name.into());
                argv
            }
            (Invocation::Ceiling { all_cores, stream }, _) => {
                let threads = if *all_cores { cores } else { 1 };
                argv.extend([
                    "ceiling".into(),
                    "sha256".into(),
                    "--threads".into(),
                    threads.to_string(),
                    "--limit".into(),
                    if *stream { "stream" } else { "compute" }.into(),
                    "--spec".into(),
                    spec_path.into(),
                ]);
                argv
            }
            (Invocation::HashFloor { all_cores }, _) => {
                let threads = if *all_cores { cores } else { 1 };
                argv.extend(["hash-floor".into(), "-j".into(), threads.to_string()]);
                argv.push(name.into());
                argv
            }
            (Invocation::ReadFloor, Some(j)) => {
                argv.extend(["read-floor".into(), "-j".into(), j.to_string()]);
                argv.push(name.into());
                argv
            }
            (Invocation::Sha256sum, Some(j)) => {
                // Several batches per process, so -P really runs in parallel
                // (-n 64 over 64 files would be one batch).
                let per = d.files.div_ceil(u64::from(j) * 4).max(1);
                vec![
                    "sh".into(),
                    "-c".into(),
                    format!("find -H {q} -type f -print0 | LC_ALL=C sort -z | xargs -0r -P {j} -n {per} sha256sum"),
                ]
            }
            (Invocation::B3sum, Some(j)) => vec![
                "sh".into(),
                "-c".into(),
                format!("find -H {q} -type f -print0 | LC_ALL=C sort -z | xargs -0r b3sum --num-threads {j}"),
            ],
            (Invocation::Hashdeep, Some(j)) => vec![
                "hashdeep".into(),
                "-c".into(),
                "sha256".into(),
                "-r".into(),
                "-j".into(),
                j.to_string(),
                name.into(),
            ],
            (Invocation::Rhash, _) => {
                vec!["rhash".into(), "--sha256".into(), "-r".into(), name.into()]
            }
            (_, None) => bail!("no command for {pname} without -j"),
        };
        Ok(argv)
    }

    /// Rough cost model of one run, seconds, for the estimate and for scaling run counts.
    pub fn exec_estimate(
        &self,
        jobs: Option<u32>,
        cache: Cache,
        d: &PlanDataset,
        cores: u32,
    ) -> f64 {
        let Cost {
            rate,
            per_file,
            parallel,
            start,
            io_uncapped,
        } = self.cost;
        let par = if parallel {
            f64::from(jobs.unwrap_or(cores).clamp(1, cores.max(1)))
        } else {
            1.0
        };
        let (bytes, files, largest) = (d.bytes as f64, d.files as f64, d.largest as f64);
        let warm = (bytes / (rate * par)).max(largest / rate) + files * per_file / par + start;
        let par = if io_uncapped {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn hashers_follow_the_strategies() {
        // The four binary crates of the workspace, named independently of Strategy.
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let names = hashers();
        assert_eq!(names.len(), Strategy::ALL.len());
        for n in &names {
            assert!(crates.join(n).join("Cargo.toml").is_file(), "no crate {n}");
        }
        assert_eq!(names[0], "hash-serial");
    }

    #[test]
    fn io_modes_leave_out_the_default() {
        assert_eq!(io_modes(), ["pool", "uring"]);
    }

    #[test]
    fn table_names_are_unique() {
        for (i, d) in TABLE.iter().enumerate() {
            assert!(!TABLE[..i].iter().any(|e| e.name == d.name), "{}", d.name);
            assert!(!d.name.starts_with("hash-"), "{}", d.name);
        }
    }
}
