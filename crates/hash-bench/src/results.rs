//! The results file: one JSON document per machine and sweep, in `results/`, with the
//! raw hyperfine exports kept in a sibling directory. This module is its schema
//! ([`SCHEMA_VERSION`]); `results/README.md` describes it for readers, and
//! [`validate`] checks a file against it (what `.ci/run` calls).
//!
//! Times are seconds, throughputs MiB/s (2^20 bytes) and files/s computed from the
//! median, memory KiB. Every number that can be recomputed from others (statistics from
//! `times_s`, throughput from the dataset size) is checked by [`validate`], so a hand-
//! edited or truncated file does not pass as a measurement.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cache::EvictMethod;
use crate::machine::Machine;
use crate::plan::{Cache, Kind, ProgramInfo, Runs};
use crate::spec::Spec;
use crate::util::{mean, median, stddev};

/// Version of this schema. Bump it on any incompatible change, and say what changed in
/// `results/README.md`. Version 2 added `default_jobs` and `peak_rss_tree_kib` to each
/// benchmark (and reference rows); [`validate`] still reads version 1 files, in which
/// both are absent (`false`, `null`).
pub const SCHEMA_VERSION: u32 = 2;

/// The oldest schema version [`validate`] still reads.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// One sweep on one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Results {
    /// [`SCHEMA_VERSION`] of this file.
    pub schema_version: u32,
    /// Sweep name: `default`, `quick` or `smoke`.
    pub sweep: String,
    /// Id of the plan that produced it (hash of settings, binaries and specs).
    pub plan_id: String,
    /// When the results were collected, RFC 3339 UTC.
    pub date: String,
    /// Commit the hashrace binaries were built from (`-dirty`: uncommitted changes).
    pub commit: Option<String>,
    /// Commit of the harness, when it differs from `commit`.
    pub harness_commit: Option<String>,
    /// The machine.
    pub machine: Machine,
    /// Tool versions.
    pub toolchain: Toolchain,
    /// How the sweep was run.
    pub settings: Settings,
    /// Every program that took part.
    pub programs: Vec<ProgramInfo>,
    /// Every dataset.
    pub datasets: Vec<DatasetResult>,
    /// Every benchmark: program × dataset × cache state (× job count).
    pub benchmarks: Vec<BenchmarkResult>,
    /// Directory (relative to this file) holding the raw hyperfine exports, residency
    /// records, RSS records, plan and verification records.
    pub raw_dir: String,
}

/// Versions of the tools that built and measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// `rustc --version`.
    pub rustc: Option<String>,
    /// `cargo --version`.
    pub cargo: Option<String>,
    /// `hyperfine --version`.
    pub hyperfine: String,
    /// Shape of hyperfine's JSON exports: 1 (hyperfine 1.x) or 2 (`schema_version` 2).
    pub hyperfine_json_schema: u32,
}

/// Settings of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Job counts swept (passed as `-j N`; peers get the same N).
    pub jobs: Vec<u32>,
    /// Minimum run counts; cheap benchmarks get up to three times as many.
    pub runs: Runs,
    /// How cold runs were made cold.
    pub eviction: EvictMethod,
    /// A cold run with more than this share resident before it is invalid, percent.
    pub cold_max_resident_percent: f64,
    /// A warm run with less than this share resident before it is invalid, percent.
    pub warm_min_resident_percent: f64,
    /// Directory the commands ran in (holding the datasets).
    pub data_root: String,
    /// Directory of the hashrace binaries.
    pub bin_dir: String,
    /// How peak RSS was measured.
    pub rss_method: String,
}

/// A dataset as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetResult {
    /// Dataset name.
    pub name: String,
    /// The full spec (layout, sizes, seed, committed digest).
    pub spec: Spec,
    /// Hash identifying the bytes the spec describes.
    pub spec_hash: String,
    /// Number of files.
    pub files: u64,
    /// Total bytes.
    pub bytes: u64,
    /// Largest file, bytes.
    pub largest_file_bytes: u64,
    /// The committed manifest digest, if any.
    pub expected_manifest_sha256: Option<String>,
    /// SHA-256 of the output every hashrace program printed (checked before timing).
    pub verified_output_sha256: String,
    /// Cache states measured.
    pub caches: Vec<Cache>,
    /// Why a cache state was skipped, if one was.
    pub note: Option<String>,
}

/// Residency of the data before each timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResidencySummary {
    /// Resident percent before each timed run, in run order.
    pub per_run_percent: Vec<f64>,
    /// Smallest of them.
    pub min_percent: f64,
    /// Median of them.
    pub median_percent: f64,
    /// Largest of them.
    pub max_percent: f64,
}

/// One program on one dataset in one cache state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkResult {
    /// Unique id, `<dataset>.<cache>.<program>[-j<N>]`.
    pub id: String,
    /// Dataset name.
    pub dataset: String,
    /// Cache state.
    pub cache: Cache,
    /// Program name.
    pub program: String,
    /// Hashrace binary, peer, or reference.
    pub kind: Kind,
    /// `sha256` or `blake3`.
    pub algorithm: String,
    /// Job count passed as `-j N` (or the reference's thread count), if any.
    pub jobs: Option<u32>,
    /// (v2) A parallel program run with no `-j` at all, choosing its own count: `jobs`
    /// is then `null`. `false` in v1 files (which had no such runs).
    #[serde(default)]
    pub default_jobs: bool,
    /// The exact command hyperfine timed (run in `settings.data_root`, `hyperfine -N`).
    pub command: String,
    /// The exact `--prepare` command run before each run (eviction / residency record).
    pub prepare: String,
    /// Timed runs.
    pub runs: u32,
    /// hyperfine warm-up runs. Each benchmark's first run is the untimed peak-RSS run
    /// (evicted first when cold), right before hyperfine: it is the warm-up in any case.
    pub warmup: u32,
    /// Wall time of each timed run, seconds.
    pub times_s: Vec<f64>,
    /// Median wall time, seconds.
    pub median_s: f64,
    /// Mean wall time, seconds.
    pub mean_s: f64,
    /// Sample standard deviation of wall time, seconds (`null` for one run).
    pub stddev_s: Option<f64>,
    /// Fastest run, seconds.
    pub min_s: f64,
    /// Slowest run, seconds.
    pub max_s: f64,
    /// Mean user CPU time per run, seconds.
    pub user_s: f64,
    /// Mean system CPU time per run, seconds.
    pub system_s: f64,
    /// Exit code of each timed run (`null`: killed by a signal).
    pub exit_codes: Vec<Option<i32>>,
    /// Dataset bytes / median, MiB/s.
    pub mib_per_s: f64,
    /// Dataset files / median.
    pub files_per_s: f64,
    /// hash-serial's median / this median, same dataset and cache state (>1: faster).
    pub speedup_vs_serial: Option<f64>,
    /// Peak RSS, KiB: the largest single process (see `settings.rss_method`).
    pub peak_rss_kib: Option<u64>,
    /// (v2) Peak RSS of the whole process tree, KiB: the sum of every process's own peak
    /// (the parent and all its workers, sampled), at least `peak_rss_kib` (see
    /// `settings.rss_method`). `null` in v1 files.
    #[serde(default)]
    pub peak_rss_tree_kib: Option<u64>,
    /// Residency of the dataset measured just before each timed run.
    pub residency: ResidencySummary,
    /// Whether the numbers are trustworthy: exit codes all 0 and residency as required.
    pub valid: bool,
    /// Why not, when `valid` is false.
    pub flags: Vec<String>,
    /// The raw hyperfine export, relative to `raw_dir`.
    pub raw_export: String,
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Check a results document's invariants. `raw_base`, if given, is the directory the
/// file is in; the raw exports are then required to exist.
pub fn validate(r: &Results, raw_base: Option<&Path>) -> Result<()> {
    ensure!(
        (OLDEST_SCHEMA_VERSION..=SCHEMA_VERSION).contains(&r.schema_version),
        "schema_version {} (this hash-bench reads {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION})",
        r.schema_version
    );
    ensure!(!r.datasets.is_empty(), "no datasets");
    ensure!(!r.benchmarks.is_empty(), "no benchmarks");
    ensure!(
        !r.date.is_empty() && r.date.ends_with('Z'),
        "date must be RFC 3339 UTC"
    );
    ensure!(
        matches!(r.toolchain.hyperfine_json_schema, 1 | 2),
        "hyperfine_json_schema must be 1 or 2"
    );
    ensure!(
        r.machine.logical_cpus > 0 && r.machine.mem_total_kib > 0,
        "machine facts missing"
    );
    let mut names = BTreeSet::new();
    for d in &r.datasets {
        ensure!(
            names.insert(d.name.as_str()),
            "dataset {} listed twice",
            d.name
        );
        ensure!(
            d.spec.name == d.name,
            "dataset {}: spec is for {}",
            d.name,
            d.spec.name
        );
        ensure!(
            d.spec_hash == d.spec.spec_hash(),
            "dataset {}: spec_hash does not match its spec",
            d.name
        );
        let t = crate::spec::totals(&d.spec.files());
        ensure!(
            (t.files, t.bytes, t.largest) == (d.files, d.bytes, d.largest_file_bytes),
            "dataset {}: files/bytes do not match its spec",
            d.name
        );
        ensure!(
            d.expected_manifest_sha256 == d.spec.expected_manifest_sha256,
            "dataset {}: expected digest differs from its spec",
            d.name
        );
        if let Some(e) = &d.expected_manifest_sha256 {
            ensure!(
                *e == d.verified_output_sha256,
                "dataset {}: verified output {} is not the expected {e}",
                d.name,
                d.verified_output_sha256
            );
        }
        ensure!(
            d.verified_output_sha256.len() == 64,
            "dataset {}: bad verified digest",
            d.name
        );
    }
    let programs: BTreeSet<&str> = r.programs.iter().map(|p| p.name.as_str()).collect();
    let mut ids = BTreeSet::new();
    for b in &r.benchmarks {
        let ctx = || format!("benchmark {}", b.id);
        ensure!(ids.insert(b.id.as_str()), "{}: duplicate id", ctx());
        let d = r
            .datasets
            .iter()
            .find(|d| d.name == b.dataset)
            .with_context(|| format!("{}: unknown dataset {}", ctx(), b.dataset))?;
        ensure!(
            d.caches.contains(&b.cache),
            "{}: cache state not listed for its dataset",
            ctx()
        );
        ensure!(
            programs.contains(b.program.as_str()),
            "{}: unknown program {}",
            ctx(),
            b.program
        );
        ensure!(
            !b.command.is_empty() && !b.prepare.is_empty(),
            "{}: command missing",
            ctx()
        );
        if r.schema_version < 2 {
            ensure!(
                !b.default_jobs && b.peak_rss_tree_kib.is_none(),
                "{}: default_jobs / peak_rss_tree_kib are schema v2 fields",
                ctx()
            );
        }
        ensure!(
            !(b.default_jobs && b.jobs.is_some()),
            "{}: a default -j run has no job count",
            ctx()
        );
        if let (Some(tree), Some(single)) = (b.peak_rss_tree_kib, b.peak_rss_kib) {
            ensure!(
                tree >= single,
                "{}: tree RSS below the largest process's",
                ctx()
            );
        }
        ensure!(
            b.runs >= 1 && b.times_s.len() == b.runs as usize,
            "{}: {} times for {} runs",
            ctx(),
            b.times_s.len(),
            b.runs
        );
        ensure!(
            b.exit_codes.len() == b.times_s.len(),
            "{}: exit codes do not match runs",
            ctx()
        );
        ensure!(
            b.times_s.iter().all(|t| t.is_finite() && *t >= 0.0),
            "{}: bad time",
            ctx()
        );
        ensure!(
            close(b.median_s, median(&b.times_s).unwrap_or(f64::NAN)),
            "{}: median does not match times",
            ctx()
        );
        ensure!(
            close(b.mean_s, mean(&b.times_s).unwrap_or(f64::NAN)),
            "{}: mean does not match times",
            ctx()
        );
        match (b.stddev_s, stddev(&b.times_s)) {
            (None, None) => {}
            (Some(a), Some(c)) => ensure!(close(a, c), "{}: stddev does not match times", ctx()),
            _ => bail!("{}: stddev present iff two or more runs", ctx()),
        }
        ensure!(
            b.min_s <= b.median_s
                && b.median_s <= b.max_s
                && b.min_s <= b.mean_s
                && b.mean_s <= b.max_s,
            "{}: min/median/mean/max out of order",
            ctx()
        );
        ensure!(
            b.user_s >= 0.0 && b.system_s >= 0.0,
            "{}: negative CPU time",
            ctx()
        );
        if b.median_s > 0.0 {
            ensure!(
                close(b.mib_per_s, d.bytes as f64 / b.median_s / 1048576.0),
                "{}: mib_per_s does not match bytes / median",
                ctx()
            );
            ensure!(
                close(b.files_per_s, d.files as f64 / b.median_s),
                "{}: files_per_s does not match",
                ctx()
            );
        }
        ensure!(
            b.residency.per_run_percent.len() == b.times_s.len(),
            "{}: one residency sample per timed run is required",
            ctx()
        );
        let mut flags_needed = false;
        if b.exit_codes.iter().any(|c| *c != Some(0)) {
            flags_needed = true;
        }
        match b.cache {
            Cache::Cold => {
                if b.residency
                    .per_run_percent
                    .iter()
                    .any(|p| *p > r.settings.cold_max_resident_percent)
                {
                    flags_needed = true;
                }
            }
            Cache::Warm => {
                if b.residency
                    .per_run_percent
                    .iter()
                    .any(|p| *p < r.settings.warm_min_resident_percent)
                {
                    flags_needed = true;
                }
            }
        }
        ensure!(
            b.valid == b.flags.is_empty(),
            "{}: valid must be true exactly when there are no flags",
            ctx()
        );
        ensure!(
            !flags_needed || !b.valid,
            "{}: marked valid despite bad exit codes or residency",
            ctx()
        );
        if let Some(base) = raw_base {
            let p = base.join(&r.raw_dir).join(&b.raw_export);
            ensure!(p.is_file(), "{}: raw export {} missing", ctx(), p.display());
        }
    }
    Ok(())
}

/// Read and validate a results file.
pub fn validate_file(path: &Path) -> Result<Results> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        text.ends_with('\n'),
        "{}: must end with a newline",
        path.display()
    );
    let r: Results = serde_json::from_str(&text)
        .with_context(|| format!("{}: does not match schema", path.display()))?;
    validate(&r, path.parent()).with_context(|| format!("{}: invalid", path.display()))?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Results {
        serde_json::from_str(include_str!("../tests/fixtures/results-v1.json")).unwrap()
    }

    fn fixture_v2() -> Results {
        serde_json::from_str(include_str!("../tests/fixtures/results-v2.json")).unwrap()
    }

    #[test]
    fn v2_fixture_is_valid_and_v2_fields_are_checked() {
        let r = fixture_v2();
        assert_eq!(r.schema_version, 2);
        validate(&r, None).unwrap();
        let d = r.benchmarks.iter().find(|b| b.default_jobs).unwrap();
        assert_eq!(d.jobs, None);
        assert!(r.benchmarks.iter().any(|b| b.peak_rss_tree_kib.is_some()));

        let mut bad = r.clone();
        bad.benchmarks
            .iter_mut()
            .find(|b| b.default_jobs)
            .unwrap()
            .jobs = Some(2);
        fails(&bad, "a default -j run has no job count");

        let mut bad = r.clone();
        let b = &mut bad.benchmarks[0];
        b.peak_rss_tree_kib = Some(b.peak_rss_kib.unwrap() - 1);
        fails(&bad, "tree RSS below");

        // v2 fields in a file that says v1.
        let mut bad = r;
        bad.schema_version = 1;
        fails(&bad, "schema v2 fields");
    }

    fn fails(r: &Results, what: &str) {
        let err = validate(r, None).expect_err(what);
        assert!(
            format!("{err:#}").contains(what),
            "{err:#} should mention {what}"
        );
    }

    #[test]
    fn fixture_is_valid_and_round_trips() {
        let r = fixture();
        validate(&r, None).unwrap();
        let text = serde_json::to_string_pretty(&r).unwrap();
        assert_eq!(serde_json::from_str::<Results>(&text).unwrap(), r);
    }

    #[test]
    fn invariants_are_enforced() {
        let mut r = fixture();
        r.schema_version = 99;
        fails(&r, "schema_version");

        let mut r = fixture();
        r.benchmarks[0].median_s *= 1.5;
        fails(&r, "median does not match");

        let mut r = fixture();
        r.benchmarks[0].mib_per_s *= 2.0;
        fails(&r, "mib_per_s");

        let mut r = fixture();
        r.benchmarks[0].times_s.pop();
        fails(&r, "times for");

        let mut r = fixture();
        let cold = r
            .benchmarks
            .iter_mut()
            .find(|b| b.cache == Cache::Cold)
            .unwrap();
        cold.valid = true;
        cold.flags.clear();
        fails(&r, "marked valid despite");

        let mut r = fixture();
        r.benchmarks[0].exit_codes[0] = Some(1);
        fails(&r, "marked valid despite");

        let mut r = fixture();
        r.benchmarks[0].residency.per_run_percent.pop();
        fails(&r, "one residency sample per timed run");

        let mut r = fixture();
        r.datasets[0].verified_output_sha256 = "0".repeat(64);
        fails(&r, "is not the expected");

        let mut r = fixture();
        r.datasets[0].files += 1;
        fails(&r, "do not match its spec");

        let mut r = fixture();
        r.benchmarks[1].id = r.benchmarks[0].id.clone();
        fails(&r, "duplicate id");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../tests/fixtures/results-v1.json")).unwrap();
        v["surprise"] = serde_json::json!(1);
        assert!(serde_json::from_value::<Results>(v).is_err());
    }
}
