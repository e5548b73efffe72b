//! `hash-bench upgrade`: turn a results file of schema v1 or v2, which leans on the raw
//! directory beside it, into a self-contained file of the current schema.
//!
//! Every number `collect` derives from the raw records (per-run times and exit codes,
//! statistics, CPU times, residency per run, peak RSS, throughput, speed against
//! `hash-serial`) is recomputed from them with the same code `collect` uses, and must
//! agree with what the old file says: an upgrade that changed a measurement would be a
//! new measurement in disguise. The one thing the records may add is a field the old
//! schema had no room for (`peak_rss_tree_kib` in a v1 file whose RSS record has it).
//! Facts collected once at the time (machine, toolchain, date, commit) are kept as they
//! are. The output is validated before it replaces the file.

use std::path::Path;

use anyhow::{bail, ensure, Context, Result};

use crate::collect::{measure, set_speedups, throughput, Limits, Measured};
use crate::results::{validate, BenchmarkResult, Results, SCHEMA_VERSION};
use crate::util::close;

/// Upgrade the results file at `path` in place; returns the upgraded results.
pub fn upgrade_file(path: &Path) -> Result<Results> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let old: Results = serde_json::from_str(&text)
        .with_context(|| format!("{}: does not match schema", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let new = upgrade(&old, base).with_context(|| path.display().to_string())?;
    let mut out = serde_json::to_string_pretty(&new)?;
    out.push('\n');
    let tmp = path.with_extension("json.part");
    std::fs::write(&tmp, out)?;
    std::fs::rename(&tmp, path)?;
    Ok(new)
}

/// The current-schema form of `old`, recomputed from its raw directory under `base`.
pub fn upgrade(old: &Results, base: &Path) -> Result<Results> {
    ensure!(
        old.schema_version < SCHEMA_VERSION,
        "already schema v{}",
        old.schema_version
    );
    let raw_dir = old
        .raw_dir
        .as_deref()
        .context("no raw_dir to recompute from")?;
    let raw = base.join(raw_dir);
    let limits = Limits {
        cold_max_resident_percent: old.settings.cold_max_resident_percent,
        warm_min_resident_percent: old.settings.warm_min_resident_percent,
        warm_max_resident_percent: None,
    };
    let mut new = old.clone();
    new.schema_version = SCHEMA_VERSION;
    new.raw_dir = None;
    for b in &mut new.benchmarks {
        let d = old
            .datasets
            .iter()
            .find(|d| d.name == b.dataset)
            .with_context(|| format!("benchmark {}: unknown dataset", b.id))?;
        let m = measure(&raw, &b.id, b.cache, b.runs, limits)
            .with_context(|| format!("benchmark {}", b.id))?;
        recompute(b, m, d.bytes, d.files).with_context(|| format!("benchmark {}", b.id))?;
    }
    set_speedups(&mut new.benchmarks);
    for (a, b) in old.benchmarks.iter().zip(&new.benchmarks) {
        ensure!(
            agree(a.speedup_vs_serial, b.speedup_vs_serial),
            "benchmark {}: speedup_vs_serial {:?}, recomputed {:?}",
            a.id,
            a.speedup_vs_serial,
            b.speedup_vs_serial
        );
    }
    validate(&new).context("upgraded results fail validation")?;
    Ok(new)
}

fn agree(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => close(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// Replace `b`'s derived numbers by the ones recomputed from its records, failing where
/// they disagree.
fn recompute(b: &mut BenchmarkResult, m: Measured, bytes: u64, files: u64) -> Result<()> {
    let t = &m.timing;
    ensure!(t.times_s == b.times_s, "times_s differ from the raw export");
    ensure!(
        t.exit_codes == b.exit_codes,
        "exit codes differ from the raw export"
    );
    ensure!(
        m.residency == b.residency,
        "residency differs from the residency record"
    );
    ensure!(
        m.peak_rss_kib == b.peak_rss_kib,
        "peak RSS differs from the RSS record"
    );
    if b.peak_rss_tree_kib.is_some() {
        ensure!(
            m.peak_rss_tree_kib == b.peak_rss_tree_kib,
            "tree RSS differs from the RSS record"
        );
    }
    for f in &m.flags {
        if !b.flags.contains(f) {
            bail!("the records raise a flag the file lacks: {f}");
        }
    }
    let median_s = t.median();
    let pairs = [
        ("median_s", b.median_s, median_s),
        ("mean_s", b.mean_s, t.mean()),
        ("min_s", b.min_s, t.min()),
        ("max_s", b.max_s, t.max()),
        ("user_s", b.user_s, t.user_s),
        ("system_s", b.system_s, t.system_s),
        (
            "mib_per_s",
            b.mib_per_s,
            throughput(bytes as f64, median_s) / 1048576.0,
        ),
        (
            "files_per_s",
            b.files_per_s,
            throughput(files as f64, median_s),
        ),
    ];
    for (name, stored, fresh) in pairs {
        ensure!(close(stored, fresh), "{name} {stored}, recomputed {fresh}");
    }
    ensure!(agree(b.stddev_s, t.stddev()), "stddev_s differs");
    b.median_s = median_s;
    b.mean_s = t.mean();
    b.stddev_s = t.stddev();
    b.min_s = t.min();
    b.max_s = t.max();
    b.peak_rss_tree_kib = m.peak_rss_tree_kib;
    b.raw_export = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v2 file with its raw directory, written by hand: one benchmark, three runs.
    fn old_with_raw(dir: &Path) -> Results {
        let mut r: Results =
            serde_json::from_str(include_str!("../tests/fixtures/results-v2.json")).unwrap();
        r.benchmarks.truncate(1);
        let b = &mut r.benchmarks[0];
        let raw = dir.join(r.raw_dir.as_deref().unwrap());
        std::fs::create_dir_all(&raw).unwrap();
        let export = serde_json::json!({"results": [{
            "command": b.command, "mean": b.mean_s, "stddev": b.stddev_s, "median": b.median_s,
            "user": b.user_s, "system": b.system_s, "min": b.min_s, "max": b.max_s,
            "times": b.times_s, "exit_codes": b.exit_codes}]});
        std::fs::write(
            raw.join(format!("{}.hyperfine.json", b.id)),
            export.to_string(),
        )
        .unwrap();
        let mut lines = String::new();
        for p in &b.residency.per_run_percent {
            lines.push_str(
                &serde_json::json!({"unix_time_s": 1.0, "action": "measure", "files": 1,
                    "resident_pages": 1, "total_pages": 1, "percent": p})
                .to_string(),
            );
            lines.push('\n');
        }
        std::fs::write(raw.join(format!("{}.residency.jsonl", b.id)), lines).unwrap();
        let rss = serde_json::json!({"max_rss_kib": b.peak_rss_kib, "tree_sum_kib":
            b.peak_rss_tree_kib, "tree_processes": 1, "exit_code": 0, "wall_s": 0.1,
            "before": "measure"});
        std::fs::write(raw.join(format!("{}.rss.json", b.id)), rss.to_string()).unwrap();
        r
    }

    #[test]
    fn upgrade_recomputes_from_the_raw_records_and_drops_the_pointers() {
        let dir = tempfile::tempdir().unwrap();
        let old = old_with_raw(dir.path());
        let new = upgrade(&old, dir.path()).unwrap();
        assert_eq!(new.schema_version, 3);
        assert_eq!(new.raw_dir, None);
        assert_eq!(new.benchmarks[0].raw_export, None);
        assert_eq!(new.benchmarks[0].times_s, old.benchmarks[0].times_s);
        let text = serde_json::to_string(&new).unwrap();
        assert!(!text.contains("raw_dir") && !text.contains("raw_export"));
    }

    #[test]
    fn upgrade_refuses_a_file_its_records_contradict() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = old_with_raw(dir.path());
        old.benchmarks[0].times_s[0] += 0.5;
        let err = upgrade(&old, dir.path()).unwrap_err();
        assert!(format!("{err:#}").contains("times_s differ"), "{err:#}");

        let empty = tempfile::tempdir().unwrap();
        let old = old_with_raw(dir.path());
        assert!(upgrade(&old, empty.path()).is_err());
    }
}
