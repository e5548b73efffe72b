//! Reading results files to compare: lenient about fields, strict about what matters
//! (see the parent module), and a refusal with its reason for each file that cannot be
//! compared, so that one bad file does not keep the others out.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::{Loaded, READABLE_SCHEMAS};
use crate::results::Results;
use crate::util::close;

/// Parse and check one results file's text. The error is the problem, without the path.
pub fn parse(text: &str) -> Result<Results> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            anyhow::anyhow!("truncated JSON ({e})")
        } else {
            anyhow::anyhow!("malformed JSON ({e})")
        }
    })?;
    let Some(obj) = value.as_object() else {
        bail!("not a hashrace results file (not a JSON object)");
    };
    let Some(version) = obj.get("schema_version") else {
        if obj.contains_key("results") {
            bail!("a hyperfine export, not a hashrace results file");
        }
        bail!("not a hashrace results file (no schema_version)");
    };
    if obj.contains_key("metadata") && obj.contains_key("results") {
        bail!("a hyperfine export, not a hashrace results file");
    }
    let version = version
        .as_u64()
        .context("not a hashrace results file (schema_version is not a number)")?;
    if !READABLE_SCHEMAS.contains(&u32::try_from(version).unwrap_or(u32::MAX)) {
        bail!(
            "results schema_version {version} (compare reads {} to {})",
            READABLE_SCHEMAS.start(),
            READABLE_SCHEMAS.end()
        );
    }
    let r: Results = serde_json::from_value(value)
        .map_err(|e| anyhow::anyhow!("does not match the results schema ({e})"))?;
    if !matches!(r.toolchain.hyperfine_json_schema, 1 | 2) {
        bail!(
            "hyperfine_json_schema {} (1 or 2 expected)",
            r.toolchain.hyperfine_json_schema
        );
    }
    if r.benchmarks.is_empty() {
        bail!("no benchmarks");
    }
    for b in &r.benchmarks {
        let id = format!("{}.{}.{}", b.dataset, b.cache.name(), b.program);
        let d = r
            .datasets
            .iter()
            .find(|d| d.name == b.dataset)
            .with_context(|| format!("benchmark {id}: unknown dataset"))?;
        if !(b.median_s.is_finite() && b.median_s > 0.0) {
            bail!("benchmark {id}: median {} is not a time", b.median_s);
        }
        if !close(b.mib_per_s, d.bytes as f64 / b.median_s / 1048576.0) {
            bail!("benchmark {id}: mib_per_s does not match bytes / median");
        }
    }
    Ok(r)
}

/// Read one file (see [`parse`]).
pub fn load(path: &Path) -> Result<Results> {
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| anyhow::anyhow!("not UTF-8 text"))?;
    if text.trim().is_empty() {
        bail!("empty file");
    }
    parse(text)
}

/// Expand the arguments: files as given; a sweep folder to its `results.json`; any
/// other directory to its `*.json` files and the `results.json` of its sweep folders
/// (no deeper: a sweep's raw directory holds hyperfine exports, not results).
pub fn expand(args: &[PathBuf]) -> (Vec<PathBuf>, Vec<Refused>) {
    let mut files = Vec::new();
    let mut refused = Vec::new();
    let sweep = |p: &Path| p.join(crate::layout::RESULTS_FILE);
    for a in args {
        if sweep(a).is_file() {
            files.push(sweep(a));
        } else if a.is_dir() {
            match std::fs::read_dir(a) {
                Ok(rd) => {
                    let mut found: Vec<PathBuf> = rd
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter_map(|p| {
                            if p.is_file() && p.extension().is_some_and(|x| x == "json") {
                                Some(p)
                            } else {
                                Some(sweep(&p)).filter(|f| f.is_file())
                            }
                        })
                        .collect();
                    found.sort();
                    if found.is_empty() {
                        refused.push(Refused::new(a, "no .json files in this directory"));
                    }
                    files.extend(found);
                }
                Err(e) => refused.push(Refused::new(a, &e.to_string())),
            }
        } else {
            files.push(a.clone());
        }
    }
    (files, refused)
}

/// A file that was not compared, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refused {
    /// The path as given.
    pub file: String,
    /// The problem.
    pub problem: String,
}

impl Refused {
    fn new(path: &Path, problem: &str) -> Refused {
        Refused {
            file: path.display().to_string(),
            problem: problem.to_string(),
        }
    }
}

/// Labels for the files: their names without `.json`, made unique.
fn labels(paths: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        // A sweep folder's data is named by its folder.
        let named = match p.parent() {
            Some(dir) if p.file_name() == Some(crate::layout::RESULTS_FILE.as_ref()) => dir,
            _ => p,
        };
        let stem = named
            .file_name()
            .filter(|_| named != p)
            .or_else(|| p.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string());
        let mut label = stem.clone();
        let mut n = 2;
        while out.contains(&label) {
            label = format!("{stem} ({n})");
            n += 1;
        }
        out.push(label);
    }
    out
}

/// Read the files and directories given, with their column labels; the refused ones
/// apart.
pub fn load_paths(args: &[PathBuf]) -> (Vec<Loaded>, Vec<Refused>) {
    let (paths, mut refused) = expand(args);
    let mut ok_paths = Vec::new();
    let mut views = Vec::new();
    for p in &paths {
        match load(p) {
            Ok(v) => {
                ok_paths.push(p.clone());
                views.push(v);
            }
            Err(e) => refused.push(Refused::new(p, &format!("{e:#}"))),
        }
    }
    let files: Vec<Loaded> = labels(&ok_paths)
        .into_iter()
        .zip(&ok_paths)
        .zip(views)
        .map(|((l, p), v)| (l, p.display().to_string(), v))
        .collect();
    (files, refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::testing::*;
    use crate::compare::{compare_paths, markdown};

    #[test]
    fn bad_files_are_refused_with_the_reason_and_the_rest_compared() {
        let c = compare_paths(&[fixtures()]);
        let names: Vec<&str> = c.columns.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let problem = |name: &str| {
            c.refused
                .iter()
                .find(|r| r.file.ends_with(name))
                .unwrap_or_else(|| panic!("{name} not refused: {:?}", c.refused))
                .problem
                .clone()
        };
        assert!(problem("truncated.json").starts_with("truncated JSON ("));
        assert!(problem("malformed.json").starts_with("malformed JSON ("));
        assert_eq!(
            problem("wrong-schema.json"),
            "results schema_version 9 (compare reads 1 to 3)"
        );
        assert_eq!(
            problem("hyperfine-export.json"),
            "a hyperfine export, not a hashrace results file"
        );
        assert_eq!(c.refused.len(), 4);
        assert!(markdown(&c).contains("Not compared:"));
    }

    #[test]
    fn parse_rejects_what_is_not_a_consistent_results_file() {
        let a = std::fs::read_to_string(fixtures().join("a.json")).unwrap();
        let err = |text: &str| format!("{:#}", parse(text).unwrap_err());
        assert_eq!(
            err("[1, 2]"),
            "not a hashrace results file (not a JSON object)"
        );
        assert_eq!(
            err(r#"{"name": "x"}"#),
            "not a hashrace results file (no schema_version)"
        );
        let mut v: serde_json::Value = serde_json::from_str(&a).unwrap();
        v.as_object_mut().unwrap().remove("benchmarks");
        assert!(err(&v.to_string())
            .starts_with("does not match the results schema (missing field `benchmarks`"));
        let mut v: serde_json::Value = serde_json::from_str(&a).unwrap();
        v["benchmarks"][0]["mib_per_s"] = serde_json::json!(1.0);
        assert_eq!(
            err(&v.to_string()),
            "benchmark small.warm.hash-serial: mib_per_s does not match bytes / median"
        );
        let mut v: serde_json::Value = serde_json::from_str(&a).unwrap();
        v["benchmarks"][0]["dataset"] = serde_json::json!("nope");
        assert_eq!(
            err(&v.to_string()),
            "benchmark nope.warm.hash-serial: unknown dataset"
        );
        let mut v: serde_json::Value = serde_json::from_str(&a).unwrap();
        v["toolchain"]["hyperfine_json_schema"] = serde_json::json!(3);
        assert_eq!(
            err(&v.to_string()),
            "hyperfine_json_schema 3 (1 or 2 expected)"
        );
        // Both hyperfine shapes are read.
        for hf in [1, 2] {
            v["toolchain"]["hyperfine_json_schema"] = serde_json::json!(hf);
            parse(&v.to_string()).unwrap();
        }
    }
}
