//! Merge a finished sweep's work directory (plan, hyperfine exports, residency records,
//! RSS records, verification records) into one results file, and print the table.
//!
//! Validity is decided here, from the records, not by the shell: a cold run whose data
//! was more than `cold_max_resident_percent` resident, a warm run below
//! `warm_min_resident_percent`, or any non-zero exit is kept but flagged `valid: false`
//! with the reason, and shown as such in the table.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{bail, Context, Result};

use crate::cache::ResidencySample;
use crate::hyperfine::{parse_single, Timing};
use crate::maxrss::RssSample;
use crate::plan::{self, Cache, Kind, Plan, PlanDataset, PlanEntry};
use crate::results::{
    validate, BenchmarkResult, DatasetResult, LinkSummary, ResidencySummary, Results, Settings,
    Toolchain, SCHEMA_VERSION,
};
use crate::util::{median, utc_stamps, version_line};
use crate::verify::{record_path, Verified};

/// How peak RSS is measured, as recorded in `settings.rss_method`.
const RSS_METHOD: &str = "one extra untimed run per benchmark (cold: evicted first) under \
    `hash-bench maxrss`. peak_rss_kib: getrusage(RUSAGE_CHILDREN).ru_maxrss, the largest \
    single process. peak_rss_tree_kib: the command's process tree sampled every 2 ms \
    (/proc/<pid>/task/*/children, recursively), the sum over every process seen of its \
    largest VmHWM, and at least peak_rss_kib";

/// Build the results from `work` (does not write anything).
pub fn build(work: &Path, hyperfine: &str) -> Result<Results> {
    let plan = plan::read(work)?;
    let (date, _) = utc_stamps(SystemTime::now());
    let datasets = verified_datasets(work, &plan)?;
    let limits = Limits {
        cold_max_resident_percent: plan.cold_max_resident_percent,
        warm_min_resident_percent: plan.warm_min_resident_percent,
        warm_max_resident_percent: None,
    };
    let mut benchmarks = Vec::new();
    let mut json_schema = None;
    for b in &plan.benchmarks {
        if !plan::export_path(work, &b.id).is_file() {
            bail!(
                "benchmark {} has not run ({} missing); rerun bench.sh to resume",
                b.id,
                plan::export_path(work, &b.id).display()
            );
        }
        let d = plan.dataset(&b.dataset)?;
        let limits = Limits {
            warm_max_resident_percent: plan
                .memory_limit_bytes
                .map(|l| crate::location::percent(l, d.bytes) + 5.0),
            ..limits
        };
        let mut m = measure(&work.join("raw"), &b.id, b.cache, b.runs, limits)?;
        if plan.location.is_network() {
            let (link, flags) = link_summary(work, b, d.bytes, m.timing.times_s.len())?;
            m.flags.extend(flags);
            m.link = Some(link);
        }
        if json_schema.is_some_and(|s| s != m.timing.json_schema) {
            bail!("exports of different hyperfine JSON schemas in one sweep");
        }
        json_schema = Some(m.timing.json_schema);
        benchmarks.push(planned_benchmark(&plan, b, m));
    }
    set_speedups(&mut benchmarks);
    Ok(Results {
        schema_version: SCHEMA_VERSION,
        sweep: plan.sweep.clone(),
        plan_id: plan.id.clone(),
        date,
        commit: plan.commit.clone(),
        harness_commit: plan.harness_commit.clone(),
        // The disk under the data (a network location's mount is gone by now).
        machine: crate::machine::Machine {
            openssl_sha256_mib_s: crate::machine::openssl_sha256(),
            ..crate::machine::collect(plan.source_root())
        },
        toolchain: Toolchain {
            rustc: version_line("rustc", &["--version"]),
            cargo: version_line("cargo", &["--version"]),
            hyperfine: version_line(hyperfine, &["--version"]).unwrap_or_else(|| "unknown".into()),
            hyperfine_json_schema: json_schema.unwrap_or(1),
        },
        settings: Settings {
            jobs: plan.jobs.clone(),
            runs: plan.runs,
            eviction: plan.eviction,
            cold_max_resident_percent: plan.cold_max_resident_percent,
            warm_min_resident_percent: plan.warm_min_resident_percent,
            data_root: plan.data_root.clone(),
            bin_dir: plan.bin_dir.clone(),
            rss_method: RSS_METHOD.into(),
            location: Some(plan.location.clone()),
            memory_limit_bytes: plan.memory_limit_bytes,
        },
        programs: plan.programs.clone(),
        python_free_threaded_absent: plan.python_free_threaded_absent.clone(),
        datasets,
        benchmarks,
        raw_dir: None,
    })
}

/// Every planned dataset with the output digest its verification recorded; a dataset
/// without a record was never checked, and its timings would not be worth keeping.
fn verified_datasets(work: &Path, plan: &Plan) -> Result<Vec<DatasetResult>> {
    plan.datasets
        .iter()
        .map(|d| {
            let rec = record_path(work, &d.spec.name);
            let text = std::fs::read_to_string(&rec).with_context(|| {
                format!(
                    "{} was not verified ({} missing)",
                    d.spec.name,
                    rec.display()
                )
            })?;
            let v: Verified = serde_json::from_str(&text)?;
            Ok(DatasetResult {
                name: d.spec.name.clone(),
                spec: d.spec.clone(),
                spec_hash: d.spec_hash.clone(),
                files: d.files,
                bytes: d.bytes,
                largest_file_bytes: d.largest,
                expected_manifest_sha256: d.spec.expected_manifest_sha256.clone(),
                verified_output_sha256: v.output_sha256,
                verified_pysum_output_sha256: v.pysum_output_sha256,
                caches: d.caches.clone(),
                note: d.note.clone(),
            })
        })
        .collect()
}

/// The residency limits a run must meet to be valid.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A cold run may start with at most this share resident, percent.
    pub cold_max_resident_percent: f64,
    /// A warm run must start with at least this share resident, percent.
    pub warm_min_resident_percent: f64,
    /// Under a memory limit: a warm run may start with at most this share resident,
    /// percent (the limit's share of the dataset, plus 5), and the floor does not apply.
    pub warm_max_resident_percent: Option<f64>,
}

/// The bytes each timed run of `b` moved over the link, and the runs that moved too
/// much or too little.
fn link_summary(
    work: &Path,
    b: &PlanEntry,
    dataset_bytes: u64,
    runs: usize,
) -> Result<(LinkSummary, Vec<String>)> {
    let samples = crate::location::read_samples(&plan::link_record(work, &b.id))?;
    let moved =
        crate::location::per_run(&samples, runs).with_context(|| format!("benchmark {}", b.id))?;
    let flags = crate::net::link_flags(&moved, b.cache, dataset_bytes);
    let summary = LinkSummary {
        per_run_to_client_bytes: moved.iter().map(|m| m.to_client).collect(),
        per_run_to_server_bytes: moved.iter().map(|m| m.to_server).collect(),
        per_run_data_bytes: moved.iter().map(|m| m.data).collect(),
        per_run_percent_of_dataset: moved
            .iter()
            .map(|m| crate::location::percent(m.proof(), dataset_bytes))
            .collect(),
    };
    Ok((summary, flags))
}

/// What one benchmark's raw records say: hyperfine's timing, the residency before each
/// timed run, the peak RSS, and the flags they raise.
#[derive(Debug, Clone)]
pub struct Measured {
    /// hyperfine's export.
    pub timing: Timing,
    /// Residency before each timed run.
    pub residency: ResidencySummary,
    /// Largest single process's peak RSS, KiB.
    pub peak_rss_kib: Option<u64>,
    /// Sum of the process tree's peaks, KiB.
    pub peak_rss_tree_kib: Option<u64>,
    /// Bytes over the link per timed run (network locations; set by the caller).
    pub link: Option<LinkSummary>,
    /// The host's steal time over the hyperfine call, percent of all CPU time.
    pub host_steal_percent: Option<f64>,
    /// Why the numbers are not trustworthy (empty: they are).
    pub flags: Vec<String>,
}

/// Read benchmark `id`'s raw records from `raw` (`<id>.hyperfine.json`,
/// `<id>.residency.jsonl`, `<id>.rss.json`), as planned for `runs` timed runs.
pub fn measure(raw: &Path, id: &str, cache: Cache, runs: u32, limits: Limits) -> Result<Measured> {
    let timing = parse_single(&raw.join(format!("{id}.hyperfine.json")))?;
    let mut flags = Vec::new();
    if timing.times_s.len() != runs as usize {
        flags.push(format!(
            "{} timed runs recorded, {runs} planned",
            timing.times_s.len()
        ));
    }
    let samples = ResidencySample::read_all(&raw.join(format!("{id}.residency.jsonl")))?;
    let timed = timed_residency(&samples, timing.times_s.len())
        .with_context(|| format!("benchmark {id}"))?;
    flags.extend(residency_flags(&timed, cache, limits));
    for (i, c) in timing.exit_codes.iter().enumerate() {
        if *c != Some(0) {
            flags.push(format!("run {} exited with {c:?}", i + 1));
        }
    }
    // Older sweeps took the peak RSS from hyperfine, and recorded no host time.
    let rss: Option<RssSample> = read_record(&raw.join(format!("{id}.rss.json")))?;
    let host: Option<crate::machine::CpuTicks> = read_record(&raw.join(format!("{id}.host.json")))?;
    let host_steal_percent = host.and_then(crate::machine::CpuTicks::steal_percent);
    let peak_rss_tree_kib = rss.as_ref().and_then(|r| r.tree_sum_kib);
    let peak_rss_kib = match (&rss, timing.peak_rss_bytes) {
        (Some(r), _) => Some(r.max_rss_kib),
        (None, Some(bytes)) => Some(bytes / 1024),
        (None, None) => None,
    };
    Ok(Measured {
        residency: ResidencySummary {
            min_percent: timed.iter().copied().fold(f64::INFINITY, f64::min),
            max_percent: timed.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            median_percent: median(&timed).unwrap_or(0.0),
            per_run_percent: timed,
        },
        timing,
        peak_rss_kib,
        peak_rss_tree_kib,
        link: None,
        host_steal_percent,
        flags,
    })
}

/// The residency percent before each of the `runs` timed runs. hyperfine runs
/// `--prepare` before every warm-up and timed run, in order: the last `runs` samples
/// belong to the timed runs.
fn timed_residency(samples: &[ResidencySample], runs: usize) -> Result<Vec<f64>> {
    if samples.len() < runs {
        bail!("{} residency samples for {runs} runs", samples.len());
    }
    Ok(samples[samples.len() - runs..]
        .iter()
        .map(|s| s.percent)
        .collect())
}

/// A flag for each timed run that started too warm (cold) or too cold (warm).
fn residency_flags(timed: &[f64], cache: Cache, limits: Limits) -> Vec<String> {
    let mut flags = Vec::new();
    for (i, p) in timed.iter().enumerate() {
        match cache {
            Cache::Cold if *p > limits.cold_max_resident_percent => flags.push(format!(
                "cold run {} started with {p:.1} % of the data resident (limit {} %)",
                i + 1,
                limits.cold_max_resident_percent
            )),
            Cache::Warm => match limits.warm_max_resident_percent {
                Some(max) if *p > max => flags.push(format!(
                    "warm run {} under the memory limit started with {p:.1} % of the data resident (the limit holds at most {max:.1} %)",
                    i + 1
                )),
                None if *p < limits.warm_min_resident_percent => flags.push(format!(
                    "warm run {} started with only {p:.1} % of the data resident (floor {} %)",
                    i + 1,
                    limits.warm_min_resident_percent
                )),
                _ => {}
            },
            _ => {}
        }
    }
    flags
}

/// A JSON record of the raw directory (the peak-RSS run's, the host's time); `None`
/// if there is none.
fn read_record<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?,
        )),
        Err(_) => Ok(None),
    }
}

/// A planned benchmark with what its records say. `speedup_vs_serial` is left for
/// [`set_speedups`], which sees every benchmark.
fn planned_benchmark(plan: &Plan, b: &PlanEntry, m: Measured) -> BenchmarkResult {
    let d: &PlanDataset = plan.dataset(&b.dataset).expect("planned dataset");
    let algorithm = plan
        .programs
        .iter()
        .find(|p| p.name == b.program)
        .map(|p| p.algorithm.clone())
        .unwrap_or_default();
    let t = &m.timing;
    let median_s = t.median();
    BenchmarkResult {
        id: b.id.clone(),
        dataset: b.dataset.clone(),
        cache: b.cache,
        program: b.program.clone(),
        kind: b.kind,
        algorithm,
        jobs: b.jobs,
        default_jobs: b.default_jobs,
        command: b.command.clone(),
        prepare: b.prepare.clone(),
        runs: t.times_s.len() as u32,
        warmup: b.warmup,
        times_s: t.times_s.clone(),
        median_s,
        mean_s: t.mean(),
        stddev_s: t.stddev(),
        min_s: t.min(),
        max_s: t.max(),
        user_s: t.user_s,
        system_s: t.system_s,
        exit_codes: t.exit_codes.clone(),
        mib_per_s: throughput(d.bytes as f64, median_s) / 1048576.0,
        files_per_s: throughput(d.files as f64, median_s),
        speedup_vs_serial: None,
        peak_rss_kib: m.peak_rss_kib,
        peak_rss_tree_kib: m.peak_rss_tree_kib,
        residency: m.residency,
        link: m.link,
        host_steal_percent: m.host_steal_percent,
        valid: m.flags.is_empty(),
        flags: m.flags,
        raw_export: None,
    }
}

/// `amount` per second at `median_s` seconds (0 for a zero median).
pub fn throughput(amount: f64, median_s: f64) -> f64 {
    if median_s > 0.0 {
        amount / median_s
    } else {
        0.0
    }
}

/// Speed relative to hash-serial on the same dataset and cache state.
pub fn set_speedups(benchmarks: &mut [BenchmarkResult]) {
    let serial: Vec<(String, Cache, f64)> = benchmarks
        .iter()
        .filter(|b| b.program == crate::compare::BASELINE)
        .map(|b| (b.dataset.clone(), b.cache, b.median_s))
        .collect();
    for b in benchmarks {
        b.speedup_vs_serial = serial
            .iter()
            .find(|(d, c, _)| *d == b.dataset && *c == b.cache)
            .filter(|(_, _, s)| b.median_s > 0.0 && *s > 0.0)
            .map(|(_, _, s)| s / b.median_s);
    }
}

/// The folder of a sweep: `<out>/<host>-<stamp>-<sweep>[-<location>][-mem<N>M]/`. It
/// holds `results.json` (the data), what is generated from it alone (`report.md`,
/// `charts/`), and, on the machine that ran it, `raw/` (git-ignored).
pub fn destination(out: &Path, results: &Results) -> PathBuf {
    let host: String = results
        .machine
        .hostname
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let stamp: String = results
        .date
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let mut name = format!("{host}-{stamp}-{}", results.sweep);
    if let Some(l) = results
        .settings
        .location
        .as_ref()
        .filter(|l| l.is_network())
    {
        name = format!("{name}-{}", l.name);
    }
    if let Some(m) = results.settings.memory_limit_bytes {
        name = format!("{name}-mem{}M", m >> 20);
    }
    out.join(name)
}

/// Build, validate and write the results; move the raw files beside them and remove
/// the work directory. Returns the results file's path.
pub fn collect(work: &Path, out: &Path, hyperfine: &str) -> Result<(PathBuf, Results)> {
    let results = build(work, hyperfine)?;
    let dir = destination(out, &results);
    let file = dir.join(crate::layout::RESULTS_FILE);
    validate(&results).context("collected results fail validation (a bug in hash-bench)")?;
    if dir.exists() {
        bail!("{} already exists", dir.display());
    }
    std::fs::create_dir_all(&dir)?;
    let raw = dir.join("raw");
    // Keep everything needed to audit or recompute locally: exports, residency and RSS
    // records, the plan and the verification records. The results file does not need them
    // (it carries every run), and `.gitignore` keeps them out of the repository.
    std::fs::rename(work.join("raw"), &raw)
        .or_else(|_| copy_dir(&work.join("raw"), &raw))
        .with_context(|| format!("moving raw files to {}", raw.display()))?;
    for extra in ["plan.json", "verified"] {
        let from = work.join(extra);
        if from.exists() {
            let to = raw.join(extra);
            std::fs::rename(&from, &to).or_else(|_| copy_dir(&from, &to))?;
        }
    }
    let mut text = serde_json::to_string_pretty(&results)?;
    text.push('\n');
    let tmp = file.with_extension("json.part");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &file)?;
    let _ = std::fs::remove_dir_all(work);
    Ok((file, results))
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.is_file() {
        std::fs::copy(from, to)?;
        return Ok(());
    }
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        copy_dir(&e.path(), &to.join(e.file_name()))?;
    }
    Ok(())
}

/// The lines under a table's heading that say where the data was read from and
/// under which memory limit (none for a local sweep without a limit).
fn conditions(r: &Results) -> String {
    let mut s = String::new();
    let link = r.settings.location.as_ref().and_then(|l| l.link.as_ref());
    if let Some(l) = r.settings.location.as_ref() {
        let _ = writeln!(s, "location: {} ({})", l.name, l.access);
    }
    if let Some(l) = link {
        let cap = l
            .rate_mibps
            .map_or("no cap".to_string(), |m| format!("{m:.1} MiB/s cap"));
        let _ = writeln!(
            s,
            "link: {} ms RTT, {cap}; 'link%': the share of the data that crossed it",
            l.rtt_ms
        );
    }
    if let Some(m) = r.settings.memory_limit_bytes {
        let _ = writeln!(
            s,
            "memory limit: {} (a cgroup around every timed command; warm = what it kept)",
            hash_core::units::bytes(m)
        );
    }
    s
}

/// The line under the table's first one naming `openssl speed`'s SHA-256 rate, if
/// it was measured.
fn openssl_line(r: &Results) -> String {
    r.machine
        .openssl_sha256_mib_s
        .map_or_else(String::new, |mib| {
            format!(
                "openssl speed sha256, one core, 16 KiB blocks: {mib:.0} MiB/s \
             (beside ref-sha256-1core, the compute limit)\n"
            )
        })
}

/// The table's first lines: the sweep and its machine, `openssl speed`'s rate where it
/// was measured, and the kernel's own page-cache reclaim where there is one.
fn machine_lines(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} sweep on {} ({}, {} CPUs, {} GiB, {} on {}{}), {}",
        r.sweep,
        r.machine.hostname,
        crate::machine::cpu_label(&r.machine),
        r.machine.available_cpus,
        r.machine.mem_total_kib / 1024 / 1024,
        r.machine.storage.fs_type,
        r.machine.storage.block_device.as_deref().unwrap_or("?"),
        match r.machine.storage.rotational {
            Some(true) => ", rotational",
            Some(false) => ", non-rotational",
            None => "",
        },
        r.toolchain.hyperfine
    );
    s.push_str(&openssl_line(r));
    if let Some(reclaim) = &r.machine.proactive_reclaim {
        let _ = writeln!(
            s,
            "page cache: {}; each warm benchmark reads its data just before it",
            reclaim.describe()
        );
    }
    s
}

/// The line under the table saying how much CPU time the host took from this guest
/// during the benchmarks (the most in any one), where that was recorded.
fn steal_line(r: &Results) -> String {
    let most = r
        .benchmarks
        .iter()
        .filter_map(|b| Some((b.host_steal_percent?, b.id.as_str())))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let what = "host steal time (the hypervisor running something else on this guest's CPUs)";
    match most {
        Some((p, _)) if p < 0.05 => format!("{what}: under 0.05 % in every benchmark\n"),
        Some((p, id)) => {
            format!("{what}: at most {p:.1} % of the CPU time in any benchmark ({id})\n")
        }
        None => String::new(),
    }
}

/// The terminal table: each dataset × cache state, each program's median, MiB/s,
/// files/s, speed relative to hash-serial, peak RSS and residency.
pub fn table(r: &Results) -> String {
    let mut s = machine_lines(r);
    let link = r.settings.location.as_ref().and_then(|l| l.link.as_ref());
    s.push_str(&conditions(r));
    for d in &r.datasets {
        for &cache in &d.caches {
            let _ = writeln!(
                s,
                "\n{} ({} files, {}), {}:",
                d.name,
                d.files,
                hash_core::units::bytes(d.bytes),
                cache.name()
            );
            if let Some(rate) = link.and_then(|l| l.rate_bytes_per_sec) {
                let _ = writeln!(
                    s,
                    "  (the link's cap alone: {:.3} s for the data)",
                    d.bytes as f64 / rate as f64
                );
            }
            let _ = writeln!(
                s,
                "  {:<30} {:>10} {:>9} {:>10} {:>9} {:>9} {:>8}  ±σ",
                "program",
                "median",
                "MiB/s",
                "files/s",
                "vs serial",
                "RSS MiB*",
                if link.is_some() { "link%" } else { "resid." }
            );
            for b in r
                .benchmarks
                .iter()
                .filter(|b| b.dataset == d.name && b.cache == cache)
            {
                let mut label = match (b.jobs, b.default_jobs) {
                    (Some(j), _) => format!("{} -j{j}", b.program),
                    (None, true) => format!("{} -j default", b.program),
                    (None, false) => b.program.clone(),
                };
                match b.kind {
                    Kind::Hashrace => {}
                    Kind::Peer => label.push_str(" (peer)"),
                    Kind::Reference if b.algorithm == "blake3" => label.push_str(" (blake3)"),
                    Kind::Reference => label.push_str(" (ref)"),
                }
                // The tree sum, when it differs from the largest process (hash-procs).
                let rss_kib = b.peak_rss_tree_kib.or(b.peak_rss_kib);
                let rel = b
                    .speedup_vs_serial
                    .map(|x| format!("{x:.2}x"))
                    .unwrap_or_else(|| "-".into());
                let rss = rss_kib
                    .map(|k| format!("{:.1}", k as f64 / 1024.0))
                    .unwrap_or_else(|| "-".into());
                let sd = b
                    .stddev_s
                    .map(|sd| format!("{:.0} %", 100.0 * sd / b.mean_s.max(1e-12)))
                    .unwrap_or_default();
                let _ = writeln!(
                    s,
                    "  {:<30} {:>8.3} s {:>9.0} {:>10.0} {:>9} {:>9} {:>7.1}%  {}{}",
                    label,
                    b.median_s,
                    b.mib_per_s,
                    b.files_per_s,
                    rel,
                    rss,
                    match &b.link {
                        Some(l) => median(&l.per_run_percent_of_dataset).unwrap_or(0.0),
                        None => b.residency.median_percent,
                    },
                    sd,
                    if b.valid {
                        String::new()
                    } else {
                        format!("  INVALID: {}", b.flags.join("; "))
                    }
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "\n* peak RSS of the whole process tree (sum of each process's peak) where recorded."
    );
    s.push_str(&steal_line(r));
    let invalid = r.benchmarks.iter().filter(|b| !b.valid).count();
    if invalid > 0 {
        let _ = writeln!(
            s,
            "\n{invalid} benchmark(s) INVALID: see `flags` in the results file."
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PeerSelection, PlanOptions, Sweep};
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn destination_and_table() {
        let r: Results =
            serde_json::from_str(include_str!("../tests/fixtures/results-v1.json")).unwrap();
        let p = destination(Path::new("/out"), &r);
        assert_eq!(p, Path::new("/out/bench-host-20260102T030405Z-smoke"));
        let t = table(&r);
        assert!(t.contains("hash-threads -j2"));
        assert!(t.contains("sha256sum -j2 (peer)"));
        assert!(t.contains("INVALID"));
    }

    /// A complete work directory as bench.sh leaves it, with one cold run that started
    /// 37.5 % resident: collect must keep it, flag it, and produce a valid file.
    #[test]
    fn collect_flags_a_cold_run_that_was_not_cold() {
        let t = tempfile::tempdir().unwrap();
        let bins = t.path().join("bin");
        std::fs::create_dir(&bins).unwrap();
        for h in crate::plan::programs::hashers() {
            let p = bins.join(h);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::create_dir(t.path().join("data")).unwrap();
        std::fs::create_dir(t.path().join("w")).unwrap();
        let o = PlanOptions {
            sweep: Sweep::Smoke,
            datasets: None,
            extra_datasets: vec![],
            specs_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets"),
            data_root: t.path().join("data"),
            bin_dir: bins.clone(),
            hash_bench: Some(PathBuf::from("/x/hash-bench")),
            jobs: Some(vec![2]),
            peers: PeerSelection::None,
            warm: true,
            cold: true,
            eviction: crate::cache::EvictMethod::Fadvise,
            repo: bins,
            work_parent: t.path().join("w"),
            python: false,
            pythons: Vec::new(),
            location: crate::location::Location::Local,
            memory_limit: None,
            // No peer and no Python are looked up; the CPU count is fixed.
            search_path: None,
            cores: Some(2),
        };
        let plan = plan::build(&o).unwrap();
        let work = plan::work_dir(&o.work_parent, &plan);
        plan::write(&plan, &work).unwrap();
        std::fs::create_dir_all(work.join("verified")).unwrap();
        for d in &plan.datasets {
            let v = Verified {
                dataset: d.spec.name.clone(),
                output_sha256: d.spec.expected_manifest_sha256.clone().unwrap(),
                lines: d.files,
                expected_manifest_sha256: d.spec.expected_manifest_sha256.clone(),
                commands: vec![],
                pysum_output_sha256: None,
            };
            std::fs::write(
                record_path(&work, &d.spec.name),
                serde_json::to_string(&v).unwrap(),
            )
            .unwrap();
        }
        let bad = "smoke.cold.hash-threads-j2";
        for b in &plan.benchmarks {
            let n = b.runs as usize;
            let times: Vec<f64> = (0..n).map(|i| 0.1 + 0.01 * i as f64).collect();
            let export = serde_json::json!({"results": [{
                "command": b.command, "mean": 0.1, "stddev": 0.0, "median": 0.1,
                "user": 0.05, "system": 0.01, "min": 0.1, "max": 0.1,
                "times": times, "exit_codes": vec![0; n]}]});
            std::fs::write(plan::export_path(&work, &b.id), export.to_string()).unwrap();
            // A leftover sample from a warm-up comes first; only the last `runs` count.
            for i in 0..=n {
                let pct = match b.cache {
                    Cache::Warm => 100.0,
                    Cache::Cold if b.id == bad && i == 2 => 37.5,
                    Cache::Cold if i == 0 => 80.0,
                    Cache::Cold => 0.0,
                };
                let r = crate::cache::Residency {
                    files: 1,
                    resident_pages: (pct * 10.0) as u64,
                    total_pages: 1000,
                };
                ResidencySample::now("x", r)
                    .append_to(&plan::residency_record(&work, &b.id))
                    .unwrap();
            }
            let rss = RssSample {
                max_rss_kib: 3000,
                tree_sum_kib: Some(5000),
                tree_processes: Some(2),
                exit_code: Some(0),
                wall_s: 0.1,
                before: "none".into(),
            };
            std::fs::write(
                plan::rss_path(&work, &b.id),
                serde_json::to_string(&rss).unwrap(),
            )
            .unwrap();
        }
        // The race's record of the host's time over one benchmark's hyperfine call.
        let stolen = plan.benchmarks[1].id.clone();
        let ticks = crate::machine::CpuTicks {
            steal_ticks: 3,
            total_ticks: 200,
        };
        std::fs::write(
            plan::host_path(&work, &stolen),
            serde_json::to_string(&ticks).unwrap(),
        )
        .unwrap();
        let r = build(&work, "hyperfine").unwrap();
        validate(&r).unwrap();
        // smoke: 2 caches × (serial, 3 parallel × (-j2, default), hash-async's 2
        // non-default io modes, read floor × 2) plus 4 warm ceilings (compute and
        // streaming, one core and all); empty: the warm half of that, and the 2 hash floors
        // (smoke has files of 1 MiB and more: none there).
        // The plan is made for 2 CPUs: the read floor at 2 and at 64.
        let per = 9 + 2;
        assert_eq!(r.benchmarks.len(), 3 * per + 2 * 4 + 2);
        for b in &r.benchmarks {
            assert_eq!(b.valid, b.id != bad, "{}: {:?}", b.id, b.flags);
            assert_eq!(b.peak_rss_kib, Some(3000));
            assert_eq!(b.residency.per_run_percent.len(), b.runs as usize);
            assert!(b.speedup_vs_serial.is_some());
            assert_eq!(b.peak_rss_tree_kib, Some(5000));
        }
        let flagged = r.benchmarks.iter().find(|b| b.id == bad).unwrap();
        assert_eq!(
            flagged.flags,
            vec!["cold run 2 started with 37.5 % of the data resident (limit 5 %)"]
        );
        assert!(table(&r).contains("INVALID"));
        for b in &r.benchmarks {
            let want = (b.id == stolen).then_some(1.5);
            assert_eq!(b.host_steal_percent, want, "{}", b.id);
        }
        assert!(table(&r).contains(&format!(
            "at most 1.5 % of the CPU time in any benchmark ({stolen})"
        )));
        let mut wrong = r.clone();
        wrong.benchmarks[1].host_steal_percent = Some(150.0);
        assert!(validate(&wrong).is_err());

        // A missing export is an error that says how to continue.
        std::fs::remove_file(plan::export_path(&work, bad)).unwrap();
        let err = build(&work, "hyperfine").unwrap_err();
        assert!(err.to_string().contains("rerun bench.sh to resume"));
    }
}
