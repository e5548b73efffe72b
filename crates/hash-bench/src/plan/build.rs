//! [`build`]: a plan from its settings. Who takes part (the hashrace binaries and their
//! `--io` modes, the peers on the search path, the limits, the Python rows under each
//! interpreter) and on which datasets in which cache states; the benchmarks come from
//! `benchmarks`, and the id is a hash of all of it, so that a changed input is a new plan.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use hash_core::Strategy;

use super::benchmarks::{entries, Shape};
use super::programs::{self, Def, Group, Invocation, Program};
use super::work::{net_prepare_command, prepare_command, work_dir};
use super::*;
use crate::location;
use crate::manifest::Work;
use crate::python::Interpreter;
use crate::spec::{self, totals, Spec};
use crate::util::{hex, version_line, which_in};
use hash_core::units;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::*;

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
    fn missing_binaries_and_peers_are_errors() {
        let t = tempfile::tempdir().unwrap();
        let err = build(&options(t.path(), t.path(), Path::new("/w"))).unwrap_err();
        assert!(err.to_string().contains("hash-serial not found"));
        assert!("nosuch".parse::<PeerSelection>().is_err());
        assert_eq!("none".parse::<PeerSelection>(), Ok(PeerSelection::None));
    }
}
