//! The results file: one self-contained JSON document per machine and sweep, the
//! `results.json` of its folder in `results/`. This module is its schema
//! ([`SCHEMA_VERSION`]); `docs/results-schema.md` describes it for readers, and [`validate`] checks a file against it (what `.ci/run`
//! calls).
//!
//! The file carries every timed run (`times_s`, exit codes, residency per run), so that
//! [`validate`] and `hash-bench compare` need nothing beside it: the raw hyperfine exports
//! `collect` leaves in a sibling directory are for local auditing and are not committed.
//!
//! Times are seconds, throughputs MiB/s (2^20 bytes) and files/s computed from the
//! median, memory KiB. Every number that can be recomputed from others (statistics from
//! `times_s`, throughput from the dataset size) is checked by [`validate`], so a hand-
//! edited or truncated file does not pass as a measurement.
//!
//! The types ignore unknown fields when deserializing, so that `compare` can read a file
//! written by a newer harness that added some; [`validate_file`] is the strict reader and
//! refuses them (it serializes what it read and names any input field that did not
//! survive the round trip).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cache::EvictMethod;
use crate::location::LocationInfo;
use crate::machine::Machine;
use crate::plan::{Cache, Kind, ProgramInfo, Runs};
use crate::spec::Spec;
use crate::util::{close, mean, median, stddev};

/// Version of this schema. Bump it on any incompatible change, and say what changed in
/// `docs/results-schema.md`. Version 2 added `default_jobs` and `peak_rss_tree_kib` to each
/// benchmark (and reference rows); version 3 dropped `raw_dir` and `raw_export`, the
/// pointers to raw files that are no longer committed. [`validate`] still reads versions
/// 1 and 2.
pub const SCHEMA_VERSION: u32 = 3;

/// The oldest schema version [`validate`] still reads.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// The first schema version without `raw_dir` / `raw_export`.
const SELF_CONTAINED_SCHEMA_VERSION: u32 = 3;

/// One sweep on one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// Why the free-threaded Python rows are absent, when no interpreter of the sweep ran
    /// with the GIL off (they are shown as absent, not dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_free_threaded_absent: Option<String>,
    /// Every dataset.
    pub datasets: Vec<DatasetResult>,
    /// Every benchmark: program × dataset × cache state (× job count).
    pub benchmarks: Vec<BenchmarkResult>,
    /// (v1, v2 only) Directory, relative to this file, that held the raw hyperfine
    /// exports, residency, RSS, plan and verification records. Absent since v3: the file
    /// is self-contained and the raw directory (`collect` still writes one, `raw/` in
    /// the sweep's folder) stays local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_dir: Option<String>,
}

/// Versions of the tools that built and measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// Where the data was read from (absent: the local `data_root`, as in files that
    /// predate network locations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<LocationInfo>,
    /// The memory cgroup limit every timed command ran under, bytes (absent: none). A
    /// warm run under a limit starts with what the cgroup's page cache kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
}

/// What crossed the emulated link in each timed run of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinkSummary {
    /// Bytes from server to client (the data, and replies), per timed run.
    pub per_run_to_client_bytes: Vec<u64>,
    /// Bytes from client to server (requests), per timed run.
    pub per_run_to_server_bytes: Vec<u64>,
    /// Of `per_run_to_client_bytes`, the file data (SFTP `SSH_FXP_DATA` payloads), per
    /// timed run; absent where the link could not tell (`raw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_run_data_bytes: Option<Vec<u64>>,
    /// The file data (else everything to the client) as a share of the dataset's
    /// bytes, percent: at least 95 for a valid cold run, at most 5 for a valid warm one.
    pub per_run_percent_of_dataset: Vec<f64>,
}

/// A dataset as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// SHA-256 of the output every pysum Python program printed, checked before timing
    /// against the harness's own byte sums (absent when none ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_pysum_output_sha256: Option<String>,
    /// Cache states measured.
    pub caches: Vec<Cache>,
    /// Why a cache state was skipped, if one was.
    pub note: Option<String>,
}

/// Residency of the data before each timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// What it computes: `sha256`, `blake3` (b3sum), `none` (the read floor) or `pysum`
    /// (Python's pure-Python work).
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
    /// Residency of the dataset measured just before each timed run (on a network
    /// location, a cold run's fresh mount is 0 % by construction; `link` proves it).
    pub residency: ResidencySummary,
    /// Bytes each timed run moved over the emulated link (network locations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkSummary>,
    /// Share of all CPUs' time that the hypervisor gave to something else while this
    /// guest wanted it (`steal` in `/proc/stat`), percent, from just before hyperfine
    /// started to just after it ended. A row the host slowed down this way says so
    /// here; a slow spell this leaves at 0 came from elsewhere (a neighbour on a shared
    /// core or memory bus shows in no counter of the guest). Absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal_percent: Option<f64>,
    /// Whether the numbers are trustworthy: exit codes all 0 and residency as required.
    pub valid: bool,
    /// Why not, when `valid` is false.
    pub flags: Vec<String>,
    /// (v1, v2 only) The raw hyperfine export, relative to `raw_dir`. Absent since v3;
    /// locally it is `<id>.hyperfine.json` in the raw directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_export: Option<String>,
}

/// Check a results document's invariants. It needs nothing but the document: the
/// statistics are checked against the per-run times it carries.
pub fn validate(r: &Results) -> Result<()> {
    check_header(r)?;
    check_datasets(&r.datasets)?;
    let programs: BTreeSet<&str> = r.programs.iter().map(|p| p.name.as_str()).collect();
    let mut ids = BTreeSet::new();
    for b in &r.benchmarks {
        let mut check = || -> Result<()> {
            ensure!(ids.insert(b.id.as_str()), "duplicate id");
            let d = r
                .datasets
                .iter()
                .find(|d| d.name == b.dataset)
                .with_context(|| format!("unknown dataset {}", b.dataset))?;
            ensure!(
                d.caches.contains(&b.cache),
                "cache state not listed for its dataset"
            );
            ensure!(
                programs.contains(b.program.as_str()),
                "unknown program {}",
                b.program
            );
            check_benchmark_fields(b, r.schema_version)?;
            check_statistics(b)?;
            check_throughput(b, d)?;
            check_validity(b, &r.settings)
        };
        check().with_context(|| format!("benchmark {}", b.id))?;
    }
    Ok(())
}

/// The document as a whole: version, non-empty, date, hyperfine shape, machine, and the
/// raw-directory pointer only where its version has one.
fn check_header(r: &Results) -> Result<()> {
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
    ensure!(
        r.raw_dir.is_some() == (r.schema_version < SELF_CONTAINED_SCHEMA_VERSION),
        "raw_dir is required before schema v{SELF_CONTAINED_SCHEMA_VERSION} and absent from it on"
    );
    Ok(())
}

/// Each dataset agrees with its embedded spec, and its verified output with the
/// committed digest.
fn check_datasets(datasets: &[DatasetResult]) -> Result<()> {
    let mut names = BTreeSet::new();
    for d in datasets {
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
    Ok(())
}

/// Fields that only some schema versions have, and the ones that constrain each other.
fn check_benchmark_fields(b: &BenchmarkResult, schema_version: u32) -> Result<()> {
    ensure!(
        !b.command.is_empty() && !b.prepare.is_empty(),
        "command missing"
    );
    if schema_version < 2 {
        ensure!(
            !b.default_jobs && b.peak_rss_tree_kib.is_none(),
            "default_jobs / peak_rss_tree_kib are schema v2 fields"
        );
    }
    ensure!(
        b.raw_export.is_some() == (schema_version < SELF_CONTAINED_SCHEMA_VERSION),
        "raw_export is required before schema v{SELF_CONTAINED_SCHEMA_VERSION} and absent from it on"
    );
    ensure!(
        !(b.default_jobs && b.jobs.is_some()),
        "a default -j run has no job count"
    );
    if let (Some(tree), Some(single)) = (b.peak_rss_tree_kib, b.peak_rss_kib) {
        ensure!(tree >= single, "tree RSS below the largest process's");
    }
    if let Some(p) = b.host_steal_percent {
        ensure!(
            (0.0..=100.0).contains(&p),
            "host steal time {p} % is no share"
        );
    }
    Ok(())
}

/// One time, exit code and residency sample per run, and the summary statistics
/// recomputed from the times.
fn check_statistics(b: &BenchmarkResult) -> Result<()> {
    ensure!(
        b.runs >= 1 && b.times_s.len() == b.runs as usize,
        "{} times for {} runs",
        b.times_s.len(),
        b.runs
    );
    ensure!(
        b.exit_codes.len() == b.times_s.len(),
        "exit codes do not match runs"
    );
    ensure!(
        b.residency.per_run_percent.len() == b.times_s.len(),
        "one residency sample per timed run is required"
    );
    ensure!(
        b.times_s.iter().all(|t| t.is_finite() && *t >= 0.0),
        "bad time"
    );
    ensure!(
        close(b.median_s, median(&b.times_s).unwrap_or(f64::NAN)),
        "median does not match times"
    );
    ensure!(
        close(b.mean_s, mean(&b.times_s).unwrap_or(f64::NAN)),
        "mean does not match times"
    );
    match (b.stddev_s, stddev(&b.times_s)) {
        (None, None) => {}
        (Some(a), Some(c)) => ensure!(close(a, c), "stddev does not match times"),
        _ => bail!("stddev present iff two or more runs"),
    }
    ensure!(
        b.min_s <= b.median_s
            && b.median_s <= b.max_s
            && b.min_s <= b.mean_s
            && b.mean_s <= b.max_s,
        "min/median/mean/max out of order"
    );
    ensure!(b.user_s >= 0.0 && b.system_s >= 0.0, "negative CPU time");
    Ok(())
}

/// MiB/s and files/s agree with the dataset's size and the median.
fn check_throughput(b: &BenchmarkResult, d: &DatasetResult) -> Result<()> {
    if b.median_s > 0.0 {
        ensure!(
            close(b.mib_per_s, d.bytes as f64 / b.median_s / 1048576.0),
            "mib_per_s does not match bytes / median"
        );
        ensure!(
            close(b.files_per_s, d.files as f64 / b.median_s),
            "files_per_s does not match"
        );
    }
    Ok(())
}

/// `valid` exactly when there are no flags, and never with a failed run or a run that
/// started with the wrong residency.
fn check_validity(b: &BenchmarkResult, settings: &Settings) -> Result<()> {
    let failed = b.exit_codes.iter().any(|c| *c != Some(0));
    let resident = &b.residency.per_run_percent;
    let wrong_residency = match b.cache {
        Cache::Cold => resident
            .iter()
            .any(|p| *p > settings.cold_max_resident_percent),
        // Under a memory limit, a warm run is whatever the cgroup kept.
        Cache::Warm => {
            settings.memory_limit_bytes.is_none()
                && resident
                    .iter()
                    .any(|p| *p < settings.warm_min_resident_percent)
        }
    };
    let moved = b.link.iter().flat_map(|l| &l.per_run_percent_of_dataset);
    let wrong_link = match b.cache {
        Cache::Cold => moved
            .clone()
            .any(|p| *p < crate::net::COLD_MIN_LINK_PERCENT),
        Cache::Warm => moved
            .clone()
            .any(|p| *p > crate::net::WARM_MAX_LINK_PERCENT),
    };
    ensure!(
        b.valid == b.flags.is_empty(),
        "valid must be true exactly when there are no flags"
    );
    ensure!(
        !(failed || wrong_residency || wrong_link) || !b.valid,
        "marked valid despite bad exit codes, residency or link bytes"
    );
    Ok(())
}

/// The JSON Schema of a results file, derived from [`Results`]; committed as
/// `docs/results-schema.json` (a test keeps the two the same), so that a reader or
/// another language's tool can check a file without this crate.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Results)).expect("a derived schema is JSON")
}

/// Where `input` breaks the JSON Schema: one line per problem, with its JSON pointer.
pub fn schema_errors(input: &serde_json::Value) -> Vec<String> {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        jsonschema::validator_for(&json_schema()).expect("the derived schema compiles")
    });
    validator
        .iter_errors(input)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Parse a results document strictly: it must match the JSON Schema, and every field
/// must be one the schema knows.
pub fn parse_strict(text: &str) -> Result<Results> {
    let input: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    let problems = schema_errors(&input);
    ensure!(
        problems.is_empty(),
        "does not match the JSON Schema: {}",
        problems.join("; ")
    );
    let r: Results = serde_json::from_value(input.clone()).context("does not match schema")?;
    let known = serde_json::to_value(&r).context("serializing")?;
    let mut unknown = Vec::new();
    unknown_fields(&input, &known, "", &mut unknown);
    ensure!(
        unknown.is_empty(),
        "does not match schema: unknown field {}",
        unknown.join(", ")
    );
    Ok(r)
}

/// Collect the paths (`.a.b[2].c`) of object keys in `input` that `known` lacks.
fn unknown_fields(
    input: &serde_json::Value,
    known: &serde_json::Value,
    at: &str,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (input, known) {
        (Value::Object(i), Value::Object(k)) => {
            for (key, v) in i {
                let path = format!("{at}.{key}");
                match k.get(key) {
                    Some(kv) => unknown_fields(v, kv, &path, out),
                    None => out.push(path),
                }
            }
        }
        (Value::Array(i), Value::Array(k)) => {
            for (n, (v, kv)) in i.iter().zip(k).enumerate() {
                unknown_fields(v, kv, &format!("{at}[{n}]"), out);
            }
        }
        _ => {}
    }
}

/// Read and validate a results file. It needs no other file: not even the raw
/// directory an old (v1, v2) file names.
pub fn validate_file(path: &Path) -> Result<Results> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        text.ends_with('\n'),
        "{}: must end with a newline",
        path.display()
    );
    let r = parse_strict(&text).with_context(|| path.display().to_string())?;
    validate(&r).with_context(|| format!("{}: invalid", path.display()))?;
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
        validate(&r).unwrap();
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

    #[test]
    fn v3_is_self_contained_and_older_versions_name_their_raw_directory() {
        let r: Results =
            serde_json::from_str(include_str!("../tests/fixtures/results-v3.json")).unwrap();
        assert_eq!(r.schema_version, 3);
        validate(&r).unwrap();

        let mut bad = r.clone();
        bad.raw_dir = Some("raw".into());
        fails(
            &bad,
            "raw_dir is required before schema v3 and absent from it on",
        );
        let mut bad = r.clone();
        bad.benchmarks[0].raw_export = Some("x.hyperfine.json".into());
        fails(&bad, "raw_export is required before schema v3");

        let mut old = fixture_v2();
        old.raw_dir = None;
        fails(&old, "raw_dir is required");
    }

    fn fails(r: &Results, what: &str) {
        let err = validate(r).expect_err(what);
        assert!(
            format!("{err:#}").contains(what),
            "{err:#} should mention {what}"
        );
    }

    #[test]
    fn fixture_is_valid_and_round_trips() {
        let r = fixture();
        validate(&r).unwrap();
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
        let err = parse_strict(&v.to_string()).unwrap_err();
        assert!(
            format!("{err:#}").contains("unknown field .surprise"),
            "{err:#}"
        );
        v["benchmarks"][1]["extra"] = serde_json::json!(null);
        let err = parse_strict(&v.to_string()).unwrap_err();
        assert!(
            format!("{err:#}").contains(".benchmarks[1].extra, .surprise"),
            "{err:#}"
        );
    }

    #[test]
    fn the_committed_json_schema_is_the_derived_one() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results-schema.json");
        let committed: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(
            committed == json_schema(),
            "docs/results-schema.json differs from the types; regenerate it with \
             `cargo run -p hash-bench -- schema > docs/results-schema.json`"
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused_by_the_schema_with_its_pointer() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../tests/fixtures/results-v3.json")).unwrap();
        assert!(schema_errors(&v).is_empty());
        v["datasets"][0]["files"] = serde_json::json!("ten");
        v["benchmarks"][1]["cache"] = serde_json::json!("lukewarm");
        let problems = schema_errors(&v);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("/datasets/0/files: ")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("/benchmarks/1/cache: ")),
            "{problems:?}"
        );
        let err = parse_strict(&v.to_string()).unwrap_err();
        assert!(
            format!("{err:#}").contains("does not match the JSON Schema"),
            "{err:#}"
        );
    }
}
