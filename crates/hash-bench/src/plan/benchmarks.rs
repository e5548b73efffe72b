//! The benchmarks of a plan: one per program, dataset, cache state and job count, each
//! with its timed runs and time estimate. The cost model is here, apart from who takes
//! part (`build`), so that the budget of a sweep is worked out in one place.

use std::path::PathBuf;

use anyhow::Result;

use super::programs::{self, Invocation, Program, RunPolicy};
use super::*;
use crate::util::sh_join;

fn prepare_estimate(cache: Cache, d: &PlanDataset) -> f64 {
    let per_file = match cache {
        Cache::Warm => 6e-6,
        Cache::Cold => 15e-6,
    };
    0.005 + d.files as f64 * per_file
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

/// What every benchmark of a sweep shares: job counts, CPUs, run counts, the Python script.
pub(super) struct Shape<'a> {
    pub(super) jobs: &'a [u32],
    pub(super) cores: u32,
    pub(super) runs: Runs,
    pub(super) script: String,
    /// The network link, on a network location.
    pub(super) link: Option<crate::link::LinkFigures>,
    /// Whether the sweep runs under a memory limit.
    pub(super) memory_limited: bool,
}

/// The benchmarks: per dataset, warm then cold, programs in report order, jobs
/// ascending; and the estimated time of the pre-timing verification. Prepare commands
/// are left empty (they name the work directory, which is named after the plan id).
pub(super) fn entries(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::*;

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
}
