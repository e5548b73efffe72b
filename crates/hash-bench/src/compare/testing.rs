//! What the comparison's tests share: the fixtures they read and the lookups of a table
//! or a Markdown row in what those give.

use std::path::{Path, PathBuf};

use super::{compare_paths, Comparison, Table};
use crate::plan::Cache;

/// The fixtures: `a.json` (2 cores, SHA-NI, schema 1, one flagged cold run),
/// `b.json` (8 cores, no SHA-NI, schema 2 with unknown fields, hyperfine schema 2,
/// reference rows, a jobs sweep, and a `small` of different spec), and bad files.
/// The expected numbers below are worked out by hand from the medians in them
/// (e.g. 1000 files / 0.25 s = 4,000 files/s; 64 MiB / 0.064 s = 1,000 MiB/s).
pub(super) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare")
}

pub(super) fn two() -> Comparison {
    compare_paths(&[fixtures().join("a.json"), fixtures().join("b.json")])
}

pub(super) fn table<'a>(c: &'a Comparison, dataset: &str, spec: &str, cache: Cache) -> &'a Table {
    c.tables
        .iter()
        .find(|t| t.dataset == dataset && t.spec_hash.starts_with(spec) && t.cache == cache)
        .unwrap_or_else(|| panic!("no table {dataset} {spec} {cache:?}"))
}

/// The Markdown line of a row of the table whose heading is `heading`.
pub(super) fn md_row(md: &str, heading: &str, row: &str) -> String {
    let section = md
        .split("\n#### ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("no section {heading} in\n{md}"));
    section
        .lines()
        .find(|l| l.starts_with(&format!("| {row} |")))
        .unwrap_or_else(|| panic!("no row {row} in\n{section}"))
        .to_string()
}
