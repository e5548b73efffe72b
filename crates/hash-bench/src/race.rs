//! `hash-bench race`: run a written plan's benchmarks under hyperfine, in plan order,
//! skipping those whose export already exists, so that an interrupted sweep resumes.
//!
//! Per benchmark, as docs/benchmark.md describes:
//!
//! 1. warm runs: for a program's first warm benchmark of a dataset, evict the dataset and
//!    run the command once, untimed, so that the page cache holds the data as the
//!    program's own first run left it (locally, without a memory limit, for programs
//!    that read the data: [`PlanEntry::own_cold_run`]); then read in what is still
//!    missing and require the plan's residency floor
//!    ([`crate::plan::WARM_MIN_RESIDENT_PERCENT`], recorded in the plan);
//! 2. one untimed peak-RSS run, which is also the warm-up: `hash-bench maxrss --work
//!    --id` in a process of its own, because it reads `getrusage(RUSAGE_CHILDREN)`, which
//!    must not include this process's earlier children (hyperfine);
//! 3. `hyperfine -N` in the data root with the plan's runs, warm-ups, command and
//!    `--prepare` command, exporting to `<id>.hyperfine.json.part`, renamed once complete
//!    (an export that exists is a finished benchmark).
//!
//! On a network location ([`crate::location`]), warm runs share one mount, read through
//! it first; every cold run, the peak-RSS run included, gets a fresh mount; after the
//! last run the link record is closed, and the mount is stopped when the race ends
//! (by error too). With a memory limit, the peak-RSS run and hyperfine (with its
//! prepares and runs) start in a memory cgroup of that size; a "warm" run is then the
//! page cache the cgroup kept from the run before, so the data is evicted instead of
//! read in first.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cache::{self, Residency};
use crate::cgroup::MemoryCgroup;
use crate::location::Daemon;
use crate::plan::{self, Cache, Plan, PlanEntry};
use hash_core::units;

/// Read `paths` (recursively) into the page cache; fail unless at least `min_percent`
/// of their pages end up resident.
pub fn warm(paths: &[PathBuf], min_percent: f64) -> Result<Residency> {
    let files = cache::walk_all(paths)?;
    let r = cache::warm(&files)?;
    if r.percent() < min_percent {
        bail!(
            "only {:.1} % resident after reading everything (need {min_percent} %): not enough memory for a warm run?",
            r.percent()
        );
    }
    Ok(r)
}

/// Whether a benchmark has finished: its export exists and is not empty.
pub fn is_done(work: &Path, id: &str) -> bool {
    plan::export_path(work, id)
        .metadata()
        .is_ok_and(|m| m.len() > 0)
}

/// A benchmark's estimate in whole seconds, as the progress lines count.
fn estimate(b: &PlanEntry) -> u64 {
    b.estimate_s.ceil() as u64
}

/// Run every unfinished benchmark of the plan in `work` (an absolute path: hyperfine
/// runs in the data root). `hash_bench` is this binary (for the peak-RSS runs);
/// `hyperfine` the hyperfine executable.
pub fn race(work: &Path, hash_bench: &Path, hyperfine: &OsStr) -> Result<()> {
    let plan = plan::read(work)?;
    let cgroup = match plan.memory_limit_bytes {
        Some(limit) => Some(MemoryCgroup::create(limit).context("--memory-limit")?),
        None => None,
    };
    if let Some(g) = &cgroup {
        println!("timed commands run in {}", g.describe());
    }
    let result = race_plan(&plan, work, hash_bench, hyperfine, cgroup.as_ref());
    if plan.location.is_network() {
        // Whatever happened: no mount outlives the race.
        Daemon::of(work).stop()?;
    }
    result
}

/// Ready the data for the untimed run of `b`: warm it in (through the mount on a
/// network), or evict it when a memory limit makes warm mean "what the cgroup kept".
/// Where the plan asks for it (`own_cold_run`), the program's own cold run comes first,
/// unless the benchmark this race ran just before was the same program's on the same warm
/// data (another job count, whose runs read the cache without reshaping it). A resumed
/// race starts with one.
fn ready(plan: &Plan, work: &Path, b: &PlanEntry, before: Option<&PlanEntry>) -> Result<()> {
    let data = Path::new(&plan.data_root).join(&b.dataset);
    if plan.location.is_network() && b.cache == Cache::Warm {
        crate::net::serve(plan, work, &b.dataset)?;
    }
    match (b.cache, plan.memory_limit_bytes) {
        (Cache::Warm, None) => {
            let same = before.is_some_and(|a| {
                (a.cache, &a.dataset, &a.program) == (b.cache, &b.dataset, &b.program)
            });
            if b.own_cold_run && !same {
                own_cold_run(plan, b, &data)?;
            }
            warm(std::slice::from_ref(&data), plan.warm_min_resident_percent)
                .with_context(|| data.display().to_string())?;
        }
        (Cache::Warm, Some(_)) => {
            cache::evict(&cache::walk_files(&data)?, plan.eviction)?;
        }
        (Cache::Cold, _) => {}
    }
    Ok(())
}

/// Write what the host took of the CPUs since `before` (`None`: `/proc/stat` could not
/// be read, and nothing is recorded) as benchmark `id`'s host record.
fn record_host(work: &Path, id: &str, before: Option<crate::machine::CpuTicks>) -> Result<()> {
    if let (Some(before), Some(after)) = (before, crate::machine::CpuTicks::now()) {
        let host = plan::host_path(work, id);
        std::fs::write(&host, serde_json::to_vec(&after.since(before))?)
            .with_context(|| format!("writing {}", host.display()))?;
    }
    Ok(())
}

/// Evict `data` and run `b`'s command once, untimed, its output discarded: a warm run
/// then finds the page cache as the program's own first run left it, the state a
/// user's second run meets, whatever ran before it in the sweep.
///
/// How a file entered the cache decides the size of its folios, and a mapped window's
/// page-table work is per folio: on the AMD EPYC guest of family 25 model 17,
/// `hash-threads` took 178 ms on warm `shards` after 1 MiB reads had read it back
/// (4-64 KiB folios) and 167 ms after its own cold run (mostly 1-2 MiB folios); `rhash`
/// took 376 and 357 ms. `hash-bench warm` now reads as the hashers do, but a peer's
/// own reads may leave other folios, so each program still makes its own state.
fn own_cold_run(plan: &Plan, b: &PlanEntry, data: &Path) -> Result<()> {
    let left = cache::evict(&cache::walk_files(data)?, plan.eviction)?;
    if left.percent() > plan.cold_max_resident_percent {
        println!(
            "note: {:.1} % of {} stayed resident after eviction: {}'s first run is not cold",
            left.percent(),
            b.dataset,
            b.program
        );
    }
    let (program, args) = b
        .argv
        .split_first()
        .with_context(|| format!("{}: an empty command", b.id))?;
    let out = Command::new(program)
        .args(args)
        .current_dir(&plan.data_root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        // The last lines the program wrote say why.
        let err = String::from_utf8_lossy(&out.stderr);
        let mut tail: Vec<&str> = err.lines().rev().take(5).collect();
        tail.reverse();
        bail!(
            "{}: the cold run before the warm runs failed ({}){}",
            b.id,
            out.status,
            tail.iter().map(|l| format!("\n  {l}")).collect::<String>()
        );
    }
    Ok(())
}

/// The untimed run of `b` under `hash-bench maxrss`, which records its peak
/// RSS (and, cold, evicts the data first).
fn rss_run(
    hash_bench: &Path,
    work: &Path,
    b: &PlanEntry,
    cgroup: Option<&MemoryCgroup>,
) -> Result<()> {
    let mut rss_run = match cgroup {
        Some(g) => g.command(hash_bench, hash_bench),
        None => Command::new(hash_bench),
    };
    let status = rss_run
        .arg("maxrss")
        .arg("--work")
        .arg(work)
        .args(["--id", &b.id])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("running {}", hash_bench.display()))?;
    if !status.success() {
        bail!("{}: the peak-RSS run failed ({status})", b.id);
    }
    Ok(())
}

/// Remove the records a timed run of `id` writes (residency, link, host),
/// so that a rerun never keeps an earlier run's.
fn clear_records(work: &Path, id: &str) -> Result<()> {
    for record in [
        plan::residency_record(work, id),
        plan::link_record(work, id),
        plan::host_path(work, id),
    ] {
        match std::fs::remove_file(&record) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", record.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

fn race_plan(
    plan: &Plan,
    work: &Path,
    hash_bench: &Path,
    hyperfine: &OsStr,
    cgroup: Option<&MemoryCgroup>,
) -> Result<()> {
    let root = Path::new(&plan.data_root);
    let total = plan.benchmarks.len();
    let mut left: u64 = plan
        .benchmarks
        .iter()
        .filter(|b| !is_done(work, &b.id))
        .map(estimate)
        .sum();
    let start = Instant::now();
    // The benchmark this race ran last.
    let mut ran: Option<&PlanEntry> = None;
    for (i, b) in plan.benchmarks.iter().enumerate() {
        if is_done(work, &b.id) {
            continue;
        }
        println!(
            "\n[{}/{total}] {} {}: {}  (1 untimed + {} timed runs; est. {}; {} elapsed, ~{} left)",
            i + 1,
            b.cache.name(),
            b.dataset,
            plan::label(b),
            b.runs,
            units::duration(Duration::from_secs(estimate(b))),
            units::duration(start.elapsed()),
            units::duration(Duration::from_secs(left))
        );
        ready(plan, work, b, ran)?;
        ran = Some(b);
        // The untimed peak-RSS run (evicted first when cold) doubles as the warm-up run.
        rss_run(hash_bench, work, b, cgroup)?;
        clear_records(work, &b.id)?;
        let export = plan::export_path(work, &b.id);
        let mut part = OsString::from(export.as_os_str());
        part.push(".part");
        let part = PathBuf::from(part);
        // stdin from /dev/null: hyperfine and the programs must not read the terminal.
        let mut timed = match cgroup {
            Some(g) => g.command(hash_bench, hyperfine),
            None => Command::new(hyperfine),
        };
        let ticks = crate::machine::CpuTicks::now();
        let status = timed
            .current_dir(root)
            .stdin(Stdio::null())
            .arg("-N")
            .args(["--runs", &b.runs.to_string()])
            .args(["--warmup", &b.warmup.to_string()])
            .args(["--prepare", &b.prepare])
            .arg("--export-json")
            .arg(&part)
            .arg(&b.command)
            .status()
            .with_context(|| format!("running {}", hyperfine.to_string_lossy()))?;
        if !status.success() {
            let hint = match cgroup {
                Some(g) => format!(
                    "; under {}, a program killed by a signal most likely ran out of memory: raise --memory-limit",
                    g.describe()
                ),
                None => String::new(),
            };
            bail!("{}: hyperfine failed ({status}){hint}", b.id);
        }
        if plan.location.is_network() {
            crate::net::finish(work, &b.id)?;
        }
        record_host(work, &b.id, ticks)?;
        std::fs::rename(&part, &export)
            .with_context(|| format!("renaming {} to {}", part.display(), export.display()))?;
        left = left.saturating_sub(estimate(b));
    }
    Ok(())
}
