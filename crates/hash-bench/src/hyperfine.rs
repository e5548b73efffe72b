//! Reading hyperfine's `--export-json` files, in both shapes that exist:
//!
//! - **1.x** (up to 1.19): `{"results": [{"command", "mean", "stddev", "median", "user",
//!   "system", "min", "max", "times": [s...], "exit_codes": [...],
//!   "memory_usage_byte": [...] (1.19+ only)}]}`.
//! - **2.x** (`"schema_version": 2`): `{"schema_version": 2, "metadata": {...},
//!   "results": [{"command", "measurements": [{"time_wall_clock": {"value", "unit"},
//!   "time_user", "time_system", "memory_peak_resident"?, "exit_code"}], "summary": {...}}]}`.
//!
//! Both are normalised into [`Timing`]: the per-run wall times and the statistics we
//! compute from them ourselves, so that results from either version are computed the
//! same way. Unknown fields are ignored on purpose: hyperfine adds fields over time.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::util::{mean, median, stddev};

/// One benchmark's numbers, independent of the hyperfine version that measured them.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// The command as hyperfine recorded it.
    pub command: String,
    /// Wall-clock time of each timed run, seconds.
    pub times_s: Vec<f64>,
    /// Mean user time per run, seconds.
    pub user_s: f64,
    /// Mean system time per run, seconds.
    pub system_s: f64,
    /// Exit code of each run (`None`: killed by a signal).
    pub exit_codes: Vec<Option<i32>>,
    /// Largest peak RSS over the runs, bytes, when hyperfine measured it.
    pub peak_rss_bytes: Option<u64>,
    /// Which JSON shape it came from: 1 or 2.
    pub json_schema: u32,
}

impl Timing {
    /// Median wall time, seconds.
    pub fn median(&self) -> f64 {
        median(&self.times_s).unwrap_or(f64::NAN)
    }
    /// Mean wall time, seconds.
    pub fn mean(&self) -> f64 {
        mean(&self.times_s).unwrap_or(f64::NAN)
    }
    /// Sample standard deviation of wall time, seconds (`None` below two runs).
    pub fn stddev(&self) -> Option<f64> {
        stddev(&self.times_s)
    }
    /// Fastest run, seconds.
    pub fn min(&self) -> f64 {
        self.times_s.iter().copied().fold(f64::INFINITY, f64::min)
    }
    /// Slowest run, seconds.
    pub fn max(&self) -> f64 {
        self.times_s
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

#[derive(Deserialize)]
struct V1Export {
    results: Vec<V1Result>,
}

#[derive(Deserialize)]
struct V1Result {
    command: String,
    mean: f64,
    user: f64,
    system: f64,
    #[serde(default)]
    times: Option<Vec<f64>>,
    #[serde(default)]
    exit_codes: Vec<Option<i32>>,
    #[serde(default)]
    memory_usage_byte: Option<Vec<u64>>,
}

#[derive(Deserialize)]
struct V2Export {
    schema_version: u32,
    results: Vec<V2Result>,
}

#[derive(Deserialize)]
struct V2Result {
    command: String,
    measurements: Vec<V2Measurement>,
}

#[derive(Deserialize)]
struct V2Measurement {
    time_wall_clock: Quantity,
    time_user: Quantity,
    time_system: Quantity,
    #[serde(default)]
    memory_peak_resident: Option<Quantity>,
    #[serde(default)]
    exit_code: Option<i32>,
}

#[derive(Deserialize)]
struct Quantity {
    value: f64,
    unit: String,
}

impl Quantity {
    fn seconds(&self) -> Result<f64> {
        let k = match self.unit.as_str() {
            "second" | "seconds" | "s" => 1.0,
            "millisecond" | "milliseconds" | "ms" => 1e-3,
            "microsecond" | "microseconds" | "us" | "µs" => 1e-6,
            "nanosecond" | "nanoseconds" | "ns" => 1e-9,
            u => bail!("unknown time unit {u:?}"),
        };
        Ok(self.value * k)
    }
    fn bytes(&self) -> Result<u64> {
        let k = match self.unit.as_str() {
            "byte" | "bytes" | "B" => 1.0,
            "kibibyte" | "kibibytes" | "KiB" => 1024.0,
            "mebibyte" | "mebibytes" | "MiB" => 1024.0 * 1024.0,
            "gibibyte" | "gibibytes" | "GiB" => 1024.0 * 1024.0 * 1024.0,
            u => bail!("unknown information unit {u:?}"),
        };
        Ok((self.value * k).round() as u64)
    }
}

/// Parse one export; every result it holds, in order.
pub fn parse(text: &str) -> Result<Vec<Timing>> {
    let value: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        None => {
            let e: V1Export =
                serde_json::from_value(value).context("not a hyperfine 1.x export")?;
            e.results
                .into_iter()
                .map(|r| {
                    // Very old exports lack `times`; a single mean is then all we know.
                    let times_s = r.times.unwrap_or_else(|| vec![r.mean]);
                    Ok(Timing {
                        command: r.command,
                        exit_codes: if r.exit_codes.is_empty() {
                            vec![Some(0); times_s.len()]
                        } else {
                            r.exit_codes
                        },
                        times_s,
                        user_s: r.user,
                        system_s: r.system,
                        peak_rss_bytes: r.memory_usage_byte.and_then(|v| v.into_iter().max()),
                        json_schema: 1,
                    })
                })
                .collect()
        }
        Some(2) => {
            let e: V2Export =
                serde_json::from_value(value).context("not a hyperfine schema 2 export")?;
            debug_assert_eq!(e.schema_version, 2);
            e.results
                .into_iter()
                .map(|r| {
                    if r.measurements.is_empty() {
                        bail!("{}: no measurements", r.command);
                    }
                    let times_s = r
                        .measurements
                        .iter()
                        .map(|m| m.time_wall_clock.seconds())
                        .collect::<Result<Vec<_>>>()?;
                    let user = r
                        .measurements
                        .iter()
                        .map(|m| m.time_user.seconds())
                        .collect::<Result<Vec<_>>>()?;
                    let system = r
                        .measurements
                        .iter()
                        .map(|m| m.time_system.seconds())
                        .collect::<Result<Vec<_>>>()?;
                    let rss = r
                        .measurements
                        .iter()
                        .filter_map(|m| m.memory_peak_resident.as_ref().map(Quantity::bytes))
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Timing {
                        command: r.command,
                        times_s,
                        user_s: mean(&user).unwrap_or(0.0),
                        system_s: mean(&system).unwrap_or(0.0),
                        exit_codes: r.measurements.iter().map(|m| m.exit_code).collect(),
                        peak_rss_bytes: rss.into_iter().max(),
                        json_schema: 2,
                    })
                })
                .collect()
        }
        Some(v) => bail!("hyperfine JSON schema_version {v} is not supported (1.x and 2 are)"),
    }
}

/// Parse an export file that must hold exactly one benchmark.
pub fn parse_single(path: &Path) -> Result<Timing> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut all = parse(&text).with_context(|| format!("parsing {}", path.display()))?;
    if all.len() != 1 {
        bail!(
            "{}: expected one benchmark, found {}",
            path.display(),
            all.len()
        );
    }
    Ok(all.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        std::fs::read_to_string(p).unwrap()
    }

    #[test]
    fn hyperfine_1_15() {
        let t = parse(&fixture("hyperfine-1.15.json")).unwrap();
        assert_eq!(t.len(), 1);
        let t = &t[0];
        assert_eq!(t.json_schema, 1);
        assert_eq!(t.command, "/b/hash-threads -j 2 shards");
        assert_eq!(t.times_s, vec![0.30, 0.25, 0.20, 0.26, 0.40]);
        assert!((t.median() - 0.26).abs() < 1e-12);
        assert!((t.mean() - 0.282).abs() < 1e-12);
        assert_eq!(t.min(), 0.20);
        assert_eq!(t.max(), 0.40);
        assert_eq!(t.user_s, 0.41);
        assert_eq!(t.system_s, 0.07);
        assert_eq!(t.exit_codes, vec![Some(0); 5]);
        assert_eq!(t.peak_rss_bytes, None);
    }

    #[test]
    fn hyperfine_1_19_memory() {
        let t = parse(&fixture("hyperfine-1.19.json")).unwrap();
        assert_eq!(t[0].peak_rss_bytes, Some(9_437_184));
        assert_eq!(t[0].exit_codes, vec![Some(0), Some(0), Some(1)]);
    }

    #[test]
    fn hyperfine_schema_2() {
        let t = parse(&fixture("hyperfine-2.json")).unwrap();
        assert_eq!(t.len(), 2);
        let a = &t[0];
        assert_eq!(a.json_schema, 2);
        assert_eq!(a.command, "/b/hash-serial shards");
        assert_eq!(a.times_s.len(), 3);
        assert!(
            (a.times_s[1] - 0.5).abs() < 1e-12,
            "milliseconds are converted"
        );
        assert!((a.median() - 0.5).abs() < 1e-12);
        assert!((a.user_s - 0.4).abs() < 1e-12);
        assert!((a.system_s - 0.05).abs() < 1e-12);
        assert_eq!(a.peak_rss_bytes, Some(5 * 1024 * 1024));
        assert_eq!(a.exit_codes, vec![Some(0), Some(0), None]);
        assert_eq!(t[1].peak_rss_bytes, None);
    }

    #[test]
    fn rejects_unknown_shapes() {
        assert!(parse(r#"{"schema_version": 3, "results": []}"#).is_err());
        assert!(parse(r#"{"nope": 1}"#).is_err());
        assert!(parse("not json").is_err());
    }
}
