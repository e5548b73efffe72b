//! The [`Comparison`]: one table per dataset (spec) and cache state, its rows labelled
//! and ranked, and the warnings a reader needs first. It is built once, so that the
//! Markdown, the JSON and the charts show the same numbers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::read::{load_paths, Refused};
use super::render::short_hash;
use super::{BASELINE, SMALL_FILE_MEAN_BYTES};
use crate::flip::{self, Flip};
use crate::machine::Machine;
use crate::plan::{Cache, Kind};
use crate::results::{BenchmarkResult, Results};

/// Everything `compare` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// One per results file compared, in argument order.
    pub columns: Vec<Column>,
    /// One per dataset (spec) × cache state.
    pub tables: Vec<Table>,
    /// Files that were refused.
    pub refused: Vec<Refused>,
    /// The Python flip tables of each file ([`crate::flip`]).
    pub flips: Vec<Flip>,
    /// What a reader must know before reading the tables side by side (different CPUs,
    /// one dataset name on different data); also printed on stderr.
    pub warnings: Vec<String>,
}

/// A results file: a machine and a sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// Short label (the file name without `.json`).
    pub label: String,
    /// The path as given.
    pub file: String,
    /// Sweep name.
    pub sweep: String,
    /// When collected.
    pub date: String,
    /// Commit of the hashers.
    pub commit: Option<String>,
    /// Results schema version of the file.
    pub schema_version: u32,
    /// hyperfine version line and export shape.
    pub hyperfine: String,
    /// The machine.
    pub machine: Machine,
}

/// Unit of a table's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Unit {
    /// MiB (2^20 bytes) per second.
    #[serde(rename = "MiB/s")]
    MibPerS,
    /// Files per second.
    #[serde(rename = "files/s")]
    FilesPerS,
}

impl Unit {
    /// How it is written.
    pub fn name(self) -> &'static str {
        match self {
            Unit::MibPerS => "MiB/s",
            Unit::FilesPerS => "files/s",
        }
    }
}

/// One dataset (spec) in one cache state.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// Dataset name.
    pub dataset: String,
    /// Its spec hash.
    pub spec_hash: String,
    /// Cache state.
    pub cache: Cache,
    /// Files in the dataset.
    pub files: u64,
    /// Bytes in the dataset.
    pub bytes: u64,
    /// Unit of `value`.
    pub unit: Unit,
    /// Indexes into [`Comparison::columns`] of the files measuring this dataset; other
    /// columns' cells are `null`.
    pub present: Vec<usize>,
    /// Why this dataset is shown apart from others of the same name, if it is.
    pub note: Option<String>,
    /// When the columns shown come from different CPUs: the line saying so.
    pub machines_note: Option<String>,
    /// Ranked kinds first, references last.
    pub rows: Vec<Row>,
}

/// One program (at one job count).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Label: program, and `-jN` or `(default -j)`.
    pub label: String,
    /// Program name.
    pub program: String,
    /// Kind (`hashrace`, `peer`, `reference`, ...).
    pub kind: String,
    /// Algorithm.
    pub algorithm: String,
    /// Job count.
    pub jobs: Option<u32>,
    /// Whether this row is a ceiling rather than a contestant (kind `reference`).
    pub reference: bool,
    /// One per column; `None` where that file has no such benchmark.
    pub cells: Vec<Option<Cell>>,
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Median throughput in the table's unit.
    pub value: f64,
    /// Median wall time, seconds.
    pub median_s: f64,
    /// `hash-serial`'s median / this median, same column (only against a valid baseline).
    pub vs_serial: Option<f64>,
    /// Rank in the column among valid, non-reference rows (1: fastest).
    pub rank: Option<u32>,
    /// Whether the measurement is trustworthy.
    pub valid: bool,
    /// Why not.
    pub flags: Vec<String>,
}

/// The label of a program at a job count. `None` means the program ran without `-j`:
/// for a hashrace binary (other than the serial one) that is its default job count.
fn row_label(program: &str, kind: &str, jobs: Option<u32>, swept: bool) -> String {
    match jobs {
        Some(j) => format!("{program} -j{j}"),
        None if swept || (kind == "hashrace" && program != BASELINE) => {
            format!("{program} (default -j)")
        }
        None => program.to_string(),
    }
}

fn kind_order(kind: &str) -> u8 {
    match kind {
        "hashrace" => 0,
        "reference" => 2,
        _ => 1,
    }
}

/// A loaded results file: its label, the path as given, its contents.
pub type Loaded = (String, String, Results);

/// Build the comparison of already loaded files.
pub fn build(files: &[Loaded], refused: Vec<Refused>) -> Comparison {
    let mut tables = Vec::new();
    let groups = dataset_groups(files);
    for g in &groups {
        let note = spec_clash_note(g, &groups, files);
        let unit = if g.files > 0 && g.bytes / g.files < SMALL_FILE_MEAN_BYTES {
            Unit::FilesPerS
        } else {
            Unit::MibPerS
        };
        for cache in [Cache::Warm, Cache::Cold] {
            let (present, mut rows) = collect_rows(files, g, cache, unit);
            if present.is_empty() {
                continue;
            }
            label_rows(&mut rows);
            // Stable: appearance order within kind.
            rows.sort_by_key(|r| kind_order(&r.kind));
            rank_rows(&mut rows, &present);
            let machines_note = cpu_clash_note(&present, files);
            tables.push(Table {
                dataset: g.name.clone(),
                spec_hash: g.spec_hash.clone(),
                cache,
                files: g.files,
                bytes: g.bytes,
                unit,
                present,
                note: note.clone(),
                machines_note,
                rows,
            });
        }
    }
    Comparison {
        columns: files.iter().map(column).collect(),
        warnings: warnings(files, &groups),
        tables,
        refused,
        flips: files
            .iter()
            .flat_map(|(l, _, r)| flip::build(l, r))
            .collect(),
    }
}

/// The CPUs of the files at `present` known to differ (see
/// [`crate::machine::same_cpu`]), in order, as [`crate::machine::cpu_label`]
/// names them.
fn cpus(present: impl Iterator<Item = usize>, files: &[Loaded]) -> Vec<String> {
    let mut seen: Vec<&crate::machine::Machine> = Vec::new();
    for ci in present {
        let m = &files[ci].2.machine;
        if !seen.iter().any(|s| crate::machine::same_cpu(s, m)) {
            seen.push(m);
        }
    }
    seen.into_iter().map(crate::machine::cpu_label).collect()
}

/// The line under a table whose columns come from different CPUs.
fn cpu_clash_note(present: &[usize], files: &[Loaded]) -> Option<String> {
    let cpus = cpus(present.iter().copied(), files);
    (cpus.len() > 1).then(|| {
        format!(
            "Across machines: these columns come from different CPUs ({}). A ratio \
             between columns compares the machines as well as the programs.",
            cpus.join("; ")
        )
    })
}

/// Warnings about the files as a whole: different CPUs, one dataset name on different
/// data.
fn warnings(files: &[Loaded], groups: &[DatasetGroup]) -> Vec<String> {
    let mut out = Vec::new();
    let cpus = cpus(0..files.len(), files);
    if cpus.len() > 1 {
        out.push(format!(
            "the files come from different CPUs ({}): a comparison across machines",
            cpus.join("; ")
        ));
    }
    for (i, g) in groups.iter().enumerate() {
        // Groups are distinct (name, spec) pairs: warn at the second spec of a name.
        if groups[..i].iter().filter(|o| o.name == g.name).count() == 1 {
            out.push(format!(
                "dataset `{}` is measured on different specs in different files: shown as \
                 separate tables, not compared",
                g.name
            ));
        }
    }
    out
}

/// The column of one file: its label and the facts of its machine and sweep.
fn column((label, file, r): &Loaded) -> Column {
    Column {
        label: label.clone(),
        file: file.clone(),
        sweep: r.sweep.clone(),
        date: r.date.clone(),
        commit: r.commit.clone(),
        schema_version: r.schema_version,
        hyperfine: format!(
            "{} (JSON schema {})",
            r.toolchain.hyperfine, r.toolchain.hyperfine_json_schema
        ),
        machine: r.machine.clone(),
    }
}

/// A dataset as the tables group it: a name measured on one spec.
struct DatasetGroup {
    name: String,
    spec_hash: String,
    files: u64,
    bytes: u64,
}

/// The distinct (dataset name, spec hash) pairs of all files, in order of first
/// appearance.
fn dataset_groups(files: &[Loaded]) -> Vec<DatasetGroup> {
    let mut groups: Vec<DatasetGroup> = Vec::new();
    for (_, _, r) in files {
        for d in &r.datasets {
            if !groups
                .iter()
                .any(|g| g.name == d.name && g.spec_hash == d.spec_hash)
            {
                groups.push(DatasetGroup {
                    name: d.name.clone(),
                    spec_hash: d.spec_hash.clone(),
                    files: d.files,
                    bytes: d.bytes,
                });
            }
        }
    }
    groups
}

/// Why `g` is shown apart, when other files use its name for different data.
fn spec_clash_note(g: &DatasetGroup, groups: &[DatasetGroup], files: &[Loaded]) -> Option<String> {
    let same_name: Vec<&str> = groups
        .iter()
        .filter(|o| o.name == g.name)
        .map(|o| o.spec_hash.as_str())
        .collect();
    if same_name.len() < 2 {
        return None;
    }
    let where_: Vec<String> = same_name
        .iter()
        .map(|h| {
            let in_: Vec<&str> = files
                .iter()
                .filter(|(_, _, r)| {
                    r.datasets
                        .iter()
                        .any(|d| d.name == g.name && d.spec_hash == *h)
                })
                .map(|(l, _, _)| l.as_str())
                .collect();
            format!("spec {} in {}", short_hash(h), in_.join(", "))
        })
        .collect();
    Some(format!(
        "`{}` names different data in different files ({}): not the same \
         dataset, so these are shown apart and not compared.",
        g.name,
        where_.join("; ")
    ))
}

/// One row per (program, jobs) measured on `g` in `cache` by any file, with a cell per
/// file (unlabelled, unranked), and the indexes of the files that measured it.
fn collect_rows(
    files: &[Loaded],
    g: &DatasetGroup,
    cache: Cache,
    unit: Unit,
) -> (Vec<usize>, Vec<Row>) {
    let mut present = Vec::new();
    // (program, jobs) -> row, in order of first appearance.
    let mut rows: Vec<Row> = Vec::new();
    for (ci, (_, _, r)) in files.iter().enumerate() {
        let Some(d) = r
            .datasets
            .iter()
            .find(|d| d.name == g.name && d.spec_hash == g.spec_hash)
        else {
            continue;
        };
        let benches: Vec<&BenchmarkResult> = r
            .benchmarks
            .iter()
            .filter(|b| b.dataset == d.name && b.cache == cache)
            .collect();
        if benches.is_empty() {
            continue;
        }
        present.push(ci);
        let baseline = benches
            .iter()
            .find(|b| b.program == BASELINE && b.valid)
            .map(|b| b.median_s);
        for b in benches {
            let value = match unit {
                Unit::MibPerS => d.bytes as f64 / b.median_s / 1048576.0,
                Unit::FilesPerS => d.files as f64 / b.median_s,
            };
            let cell = Cell {
                value,
                median_s: b.median_s,
                vs_serial: baseline.map(|s| s / b.median_s),
                rank: None,
                valid: b.valid,
                flags: b.flags.clone(),
            };
            let i = match rows
                .iter()
                .position(|row| row.program == b.program && row.jobs == b.jobs)
            {
                Some(i) => i,
                None => {
                    rows.push(Row {
                        label: String::new(),
                        program: b.program.clone(),
                        kind: b.kind.name().to_string(),
                        algorithm: b.algorithm.clone(),
                        jobs: b.jobs,
                        reference: b.kind == Kind::Reference,
                        cells: vec![None; files.len()],
                    });
                    rows.len() - 1
                }
            };
            // A duplicate benchmark (same program, jobs) in one file: keep the first.
            if rows[i].cells[ci].is_none() {
                rows[i].cells[ci] = Some(cell);
            }
        }
    }
    (present, rows)
}

/// Label each row; a program measured at some `-j` labels its run without one as its
/// default.
fn label_rows(rows: &mut [Row]) {
    for i in 0..rows.len() {
        let swept = rows
            .iter()
            .any(|r| r.program == rows[i].program && r.jobs.is_some());
        rows[i].label = row_label(&rows[i].program, &rows[i].kind, rows[i].jobs, swept);
    }
}

/// Rank the valid, non-reference cells of each present column by median (1: fastest).
fn rank_rows(rows: &mut [Row], present: &[usize]) {
    for &ci in present {
        let mut times: Vec<f64> = rows
            .iter()
            .filter(|r| !r.reference)
            .filter_map(|r| r.cells[ci].as_ref())
            .filter(|c| c.valid)
            .map(|c| c.median_s)
            .collect();
        times.sort_by(f64::total_cmp);
        for row in rows.iter_mut().filter(|r| !r.reference) {
            if let Some(c) = row.cells[ci].as_mut().filter(|c| c.valid) {
                // Ties share a rank: 1 + the number of strictly faster runs.
                c.rank = Some(1 + times.iter().filter(|t| **t < c.median_s).count() as u32);
            }
        }
    }
}

/// Read the files and directories given and compare them; refused files are listed in
/// the result (and not fatal).
pub fn compare_paths(args: &[PathBuf]) -> Comparison {
    let (files, refused) = load_paths(args);
    build(&files, refused)
}

/// Group a table's rows by program, for the scaling chart: program -> (jobs, cell) per
/// column, for programs measured at two or more job counts.
pub fn jobs_sweeps(t: &Table, column: usize) -> BTreeMap<String, Vec<(u32, Cell)>> {
    let mut m: BTreeMap<String, Vec<(u32, Cell)>> = BTreeMap::new();
    for row in &t.rows {
        if let (Some(j), Some(c)) = (row.jobs, row.cells[column].as_ref()) {
            m.entry(row.program.clone())
                .or_default()
                .push((j, c.clone()));
        }
    }
    m.retain(|_, v| v.len() >= 2);
    for v in m.values_mut() {
        v.sort_by_key(|(j, _)| *j);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::markdown;
    use crate::compare::testing::*;

    #[test]
    fn two_machines_side_by_side() {
        let c = two();
        assert!(c.refused.is_empty(), "{:?}", c.refused);
        let md = markdown(&c);
        assert!(md.contains("| | a | b |"), "{md}");
        assert!(md.contains("| CPU | Test CPU A | Test CPU B |"), "{md}");
        assert!(md.contains("| cores | 2 | 8 |"));
        assert!(md.contains("| SHA-NI | yes | no |"));
        assert!(md.contains("| storage | ext4 on vda, non-rotational | ext4 on vda, rotational |"));
        let h = "big, warm";
        assert_eq!(
            md_row(&md, h, "hash-serial"),
            "| hash-serial | 1,000 · 1.00× · #2 | 500 · 1.00× · #3 |"
        );
        assert_eq!(
            md_row(&md, h, "hash-threads -j2"),
            "| hash-threads -j2 | 2,000 · 2.00× · #1 | – |"
        );
        // jobs null next to a jobs sweep of the same program: the default job count.
        assert_eq!(
            md_row(&md, h, "hash-threads (default -j)"),
            "| hash-threads (default -j) | – | 2,000 · 4.00× · #1 |"
        );
        // A tie with hash-serial shares its rank.
        assert_eq!(
            md_row(&md, h, "hash-threads -j1"),
            "| hash-threads -j1 | – | 500 · 1.00× · #3 |"
        );
        assert_eq!(
            md_row(&md, h, "hash-threads -j8"),
            "| hash-threads -j8 | – | 1,600 · 3.20× · #2 |"
        );
        // References are ceilings: listed last, never ranked.
        assert_eq!(
            md_row(&md, h, "b3sum -j2 *(reference, blake3)*"),
            "| b3sum -j2 *(reference, blake3)* | 4,000 · 4.00× · ref | – |"
        );
        assert_eq!(
            md_row(&md, h, "ref-sha256-1core *(reference, sha256)*"),
            "| ref-sha256-1core *(reference, sha256)* | – | 1,250 · 2.50× · ref |"
        );
        let t = table(&c, "big", "bb", Cache::Warm);
        assert_eq!(t.unit, Unit::MibPerS);
        let labels: Vec<&str> = t.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "hash-serial",
                "hash-threads -j2",
                "hash-threads (default -j)",
                "hash-threads -j1",
                "hash-threads -j8",
                "b3sum -j2",
                "ref-sha256-1core"
            ]
        );
        // A dataset only one file measured cold gets a one-column table.
        let md_cold = md.split("\n#### big, cold").nth(1).unwrap();
        assert!(md_cold.contains("| program | b |"));
        assert_eq!(
            md_row(&md, "big, cold", "hash-async-uring -j8"),
            "| hash-async-uring -j8 | 500 · 2.00× · #1 |"
        );
    }

    #[test]
    fn different_cpus_are_said_in_the_heading_under_the_table_and_as_a_warning() {
        let c = two();
        assert!(
            c.warnings.iter().any(|w| w
                == "the files come from different CPUs (Test CPU A; Test CPU B): a comparison \
                    across machines"),
            "{:?}",
            c.warnings
        );
        assert!(
            c.warnings
                .iter()
                .any(|w| w.starts_with("dataset `small` is measured on different specs")),
            "{:?}",
            c.warnings
        );
        let both = table(&c, "big", "bb", Cache::Warm);
        assert!(both
            .machines_note
            .as_deref()
            .unwrap()
            .contains("(Test CPU A; Test CPU B)"));
        // One column: one machine, nothing to say.
        assert!(table(&c, "big", "bb", Cache::Cold).machines_note.is_none());
        let md = markdown(&c);
        let section = md
            .split("\n#### big, warm (across machines)\n")
            .nth(1)
            .unwrap();
        let section = section.split("\n#### ").next().unwrap();
        assert!(
            section.trim_end().ends_with(
                "> Across machines: these columns come from different CPUs (Test CPU A; Test CPU B). \
                 A ratio between columns compares the machines as well as the programs."
            ),
            "{section}"
        );
        assert!(md.contains("\n#### big, cold\n"), "{md}");
        let one = compare_paths(&[fixtures().join("a.json")]);
        assert!(one.warnings.is_empty(), "{:?}", one.warnings);
    }

    #[test]
    fn one_model_name_of_two_cpu_generations_is_two_machines() {
        // a.json three times over, as written on CPUs of one model name.
        let dir = tempfile::tempdir().unwrap();
        let a: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures().join("a.json")).unwrap()).unwrap();
        let write = |name: &str, id: Option<(u32, u32)>| {
            let mut v = a.clone();
            v["machine"]["cpu_model"] = "AMD EPYC".into();
            if let Some((family, model)) = id {
                v["machine"]["cpu_id"] = serde_json::json!({
                    "vendor": "AuthenticAMD", "family": family, "model": model,
                    "stepping": 1, "l2_kib": 1024, "avx512": true
                });
            }
            let path = dir.path().join(name);
            std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
            path
        };
        let zen4 = write("zen4.json", Some((25, 17)));
        let zen5 = write("zen5.json", Some((26, 2)));
        let unknown = write("unknown.json", None);
        let across = |c: &Comparison| c.warnings.iter().any(|w| w.contains("different CPUs"));
        let c = compare_paths(&[zen4.clone(), zen5]);
        assert!(across(&c), "{:?}", c.warnings);
        let md = markdown(&c);
        assert!(
            md.contains(
                "| CPU | AMD EPYC (family 25 model 17, L2 1024 KiB, AVX-512) \
                 | AMD EPYC (family 26 model 2, L2 1024 KiB, AVX-512) |"
            ),
            "{md}"
        );
        // The same id twice, or a file that recorded none: nothing known to differ.
        let again = write("again.json", Some((25, 17)));
        assert!(!across(&compare_paths(&[zen4.clone(), again])));
        assert!(!across(&compare_paths(&[zen4, unknown])));
    }

    #[test]
    fn small_files_are_counted_in_files_per_second() {
        let c = two();
        let md = markdown(&c);
        let t = table(&c, "small", "aa", Cache::Warm);
        assert_eq!(t.unit, Unit::FilesPerS);
        let h = "small, warm\n\n1,000 files, 3.91 MiB (mean 4.00 KiB per file), spec aaaaaaaa";
        assert!(md.contains(h), "{md}");
        assert_eq!(
            md_row(&md, h, "hash-threads -j2"),
            "| hash-threads -j2 | 4,000 · 2.00× · #1 |"
        );
        assert_eq!(
            md_row(&md, h, "rhash *(peer)*"),
            "| rhash *(peer)* | 1,000 · 0.50× · #4 |"
        );
    }

    #[test]
    fn different_specs_are_shown_apart_with_the_reason() {
        let c = two();
        let a = table(&c, "small", "aa", Cache::Warm);
        let b = table(&c, "small", "cc", Cache::Warm);
        assert_eq!(a.present, [0]);
        assert_eq!(b.present, [1]);
        let why = "`small` names different data in different files \
                   (spec aaaaaaaa in a; spec cccccccc in b): not the same dataset";
        for t in [a, b] {
            assert!(t.note.as_deref().unwrap().starts_with(why), "{:?}", t.note);
        }
        // The same name with the same spec is one table with both columns.
        assert_eq!(table(&c, "big", "bb", Cache::Warm).present, [0, 1]);
        assert!(table(&c, "big", "bb", Cache::Warm).note.is_none());
    }

    #[test]
    fn flagged_runs_are_shown_and_never_ranked() {
        let c = two();
        let md = markdown(&c);
        let h = "small, cold";
        assert_eq!(
            md_row(&md, h, "hash-threads -j2"),
            "| hash-threads -j2 | 1,000 · 2.00× · **flagged**: cold run 1 was 40 % resident |"
        );
        // The fastest valid run is first, although the flagged one was faster.
        assert_eq!(
            md_row(&md, h, "hash-procs -j2"),
            "| hash-procs -j2 | 625 · 1.25× · #1 |"
        );
        assert_eq!(
            md_row(&md, h, "hash-serial"),
            "| hash-serial | 500 · 1.00× · #2 |"
        );
    }
}
