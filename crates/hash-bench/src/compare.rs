//! `hash-bench compare`: results files from several machines or sweeps, side by side.
//!
//! For each dataset × cache state there is one table: programs as rows, one column per
//! results file. A cell holds the median throughput (files/s for small-file datasets,
//! MiB/s otherwise), the speed relative to `hash-serial` in the same column, and the rank
//! in that column. Above the tables sits the machine block (CPU, cores, SHA-NI, storage),
//! because absolute numbers from two machines mean little without it.
//!
//! Like is compared with like only:
//! - a dataset name measured on different bytes (different `spec_hash`) gives separate
//!   tables, with a note saying why;
//! - flagged benchmarks (`valid: false`) are shown with their flags and never ranked, and
//!   never serve as the `hash-serial` baseline;
//! - programs of kind `reference` (in-memory SHA-256 rates, the read floor, BLAKE3) are
//!   ceilings, not contestants: shown below the ranked rows, never ranked.
//!
//! Files are read into the schema's own [`Results`] type without
//! [`crate::results::validate_file`]'s strictness: unknown fields are ignored, so that
//! every readable schema version, and files from a harness that added fields, can be
//! compared. Nothing beside the file is needed (results files are self-contained). The
//! checks that matter here are still made: JSON well-formed and complete, a results file
//! and not something else, a known schema and hyperfine schema, benchmarks naming known
//! datasets, and throughputs agreeing with the median. A refused file is reported as
//! `FILE: problem` and the others are still compared.
//!
//! The comparison is built once as a [`Comparison`] value, then rendered as Markdown
//! ([`markdown`]) or serialized as JSON for scripts; the charts ([`crate::chart`]) draw
//! from the same value.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::flip::{self, Flip};
use crate::machine::{Machine, Storage};
use crate::plan::{Cache, Kind};
use crate::report;
use crate::results::{BenchmarkResult, Results};
use crate::util::close;
use hash_core::units;

/// Results schema versions this module reads: the ones `results` validates.
pub const READABLE_SCHEMAS: std::ops::RangeInclusive<u32> =
    crate::results::OLDEST_SCHEMA_VERSION..=crate::results::SCHEMA_VERSION;

/// Datasets whose mean file size is below this are measured in files/s, others in MiB/s:
/// per-file costs dominate small files, bytes dominate big ones.
pub const SMALL_FILE_MEAN_BYTES: u64 = 64 * 1024;

/// The program every speed ratio is relative to.
pub const BASELINE: &str = "hash-serial";

// ---------------------------------------------------------------------------------------
// Reading results files.

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

// ---------------------------------------------------------------------------------------
// The comparison.

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

/// Read the files and directories given and compare them; refused files are listed in
/// the result (and not fatal).
pub fn compare_paths(args: &[PathBuf]) -> Comparison {
    let (files, refused) = load_paths(args);
    build(&files, refused)
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

// ---------------------------------------------------------------------------------------
// Rendering.

fn short_hash(h: &str) -> &str {
    h.get(..8).unwrap_or(h)
}

/// A number as people read it: thousands separated, fewer decimals as it grows.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    if x.abs() >= 100.0 {
        let n = x.round() as i64;
        let digits = n.unsigned_abs().to_string();
        let mut s = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                s.push(',');
            }
            s.push(ch);
        }
        if n < 0 {
            s.insert(0, '-');
        }
        s
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A count with thousands separators.
pub fn fmt_count(n: u64) -> String {
    if n < 100 {
        n.to_string()
    } else {
        fmt_num(n as f64)
    }
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn cell_text(c: &Cell, reference: bool) -> String {
    let mut s = fmt_num(c.value);
    if let Some(v) = c.vs_serial {
        let _ = write!(s, " · {v:.2}×");
    }
    if !c.valid {
        let _ = write!(s, " · **flagged**: {}", md_escape(&c.flags.join("; ")));
    } else if reference {
        s.push_str(" · ref");
    } else if let Some(r) = c.rank {
        let _ = write!(s, " · #{r}");
    }
    s
}

fn storage_text(s: &Storage) -> String {
    let mut t = if s.fs_type.is_empty() {
        "?".to_string()
    } else {
        s.fs_type.clone()
    };
    if let Some(dev) = &s.block_device {
        let _ = write!(t, " on {dev}");
    }
    if let Some(m) = &s.model {
        let _ = write!(t, " ({m})");
    }
    match s.rotational {
        Some(true) => t.push_str(", rotational"),
        Some(false) => t.push_str(", non-rotational"),
        None => {}
    }
    t
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// How one line of the machine block is drawn from a column.
type Fact = dyn Fn(&Column) -> String;

/// The Markdown table of the compared files' machines (nothing without files).
fn machines(c: &Comparison) -> String {
    let mut s = String::new();
    if c.columns.is_empty() {
        return s;
    }
    let _ = writeln!(s, "#### Machines\n");
    let _ = write!(s, "| |");
    for col in &c.columns {
        let _ = write!(s, " {} |", md_escape(&col.label));
    }
    let _ = write!(s, "\n|---|");
    for _ in &c.columns {
        s.push_str("---|");
    }
    s.push('\n');
    // Older results files do not record reclaim: its row only where some file does.
    let reclaim = c
        .columns
        .iter()
        .any(|r| r.machine.proactive_reclaim.is_some());
    // (name, how, shown)
    let facts: [(&str, &Fact, bool); 12] = [
        ("host", &|c| c.machine.hostname.clone(), true),
        ("CPU", &|c| crate::machine::cpu_label(&c.machine), true),
        (
            "cores",
            &|c| match (c.machine.available_cpus, c.machine.logical_cpus) {
                (a, l) if a != l => format!("{a} of {l}"),
                (a, _) => a.to_string(),
            },
            true,
        ),
        ("SHA-NI", &|c| yes_no(c.machine.sha_ni).to_string(), true),
        (
            "openssl sha256",
            &|c| {
                c.machine
                    .openssl_sha256_mib_s
                    .map_or("–".into(), |m| format!("{m:.0} MiB/s"))
            },
            true,
        ),
        (
            "virtualized",
            &|c| yes_no(c.machine.virtualized).to_string(),
            true,
        ),
        (
            "memory",
            &|c| units::bytes(c.machine.mem_total_kib * 1024),
            true,
        ),
        (
            "proactive reclaim",
            &|c| {
                c.machine
                    .proactive_reclaim
                    .as_ref()
                    .map_or("–".into(), |r| r.describe())
            },
            reclaim,
        ),
        ("storage", &|c| storage_text(&c.machine.storage), true),
        ("kernel", &|c| c.machine.kernel.clone(), true),
        (
            "sweep",
            &|c| {
                let commit = c.commit.as_deref().map(|x| x.get(..12).unwrap_or(x));
                format!(
                    "{} {}, commit {}, schema v{}",
                    c.sweep,
                    c.date,
                    commit.unwrap_or("?"),
                    c.schema_version
                )
            },
            true,
        ),
        ("hyperfine", &|c| c.hyperfine.clone(), true),
    ];
    for (name, f, _) in facts.into_iter().filter(|&(_, _, shown)| shown) {
        let _ = write!(s, "| {name} |");
        for col in &c.columns {
            let _ = write!(s, " {} |", md_escape(&f(col)));
        }
        s.push('\n');
    }
    s
}

/// The page `hash-bench compare` writes: like a sweep's report, the answer first
/// (each workload's winner on each machine, with the same ratios), each machine named
/// with its CPU's family and model and a warning where they differ, then the tables
/// of every program.
pub fn page(c: &Comparison, files: &[Loaded]) -> String {
    let mut s = String::new();
    let names: Vec<String> = files
        .iter()
        .map(|(_, _, r)| report::machine_line(r))
        .collect();
    let _ = writeln!(
        s,
        "# The race on {} sweeps
",
        files.len()
    );
    for ((label, _, r), name) in files.iter().zip(&names) {
        let _ = writeln!(
            s,
            "- `{}`: {name}; sweep `{}` of {}",
            md_escape(label),
            r.sweep,
            r.date
        );
    }
    s.push('\n');
    for w in &c.warnings {
        let _ = writeln!(s, "> **Warning:** {}\n", md_escape(w));
    }
    let _ = writeln!(s, "## The answer on each machine\n");
    s.push_str(&answers_side_by_side(files));
    let _ = writeln!(s, "\n## Every program\n");
    s.push_str(&markdown(c));
    s
}

/// One row per workload any sweep ran (in the order the sweeps list them), one column
/// per sweep: the winner, × `hash-serial`, × the fastest SHA-256 peer.
fn answers_side_by_side(files: &[Loaded]) -> String {
    let mut keys: Vec<(String, String)> = Vec::new();
    for (_, _, r) in files {
        for w in report::workloads(r) {
            let key = (w.name.clone(), w.dataset.clone());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let mut s = String::from("| workload |");
    for (label, _, _) in files {
        let _ = write!(s, " `{}` |", md_escape(label));
    }
    s.push_str("\n|---|");
    for _ in files {
        s.push_str("---|");
    }
    s.push('\n');
    for (name, dataset) in &keys {
        let _ = write!(s, "| {name} (`{dataset}`) |");
        for (_, _, r) in files {
            let cell = report::workloads(r)
                .into_iter()
                .find(|w| &w.name == name && &w.dataset == dataset)
                .and_then(|w| report::answer(r, &w))
                .map_or_else(|| "not raced".to_string(), |a| answer_cell(&a));
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    s
}

fn answer_cell(a: &report::Answer) -> String {
    let mut cell = format!("`{}`", a.winner);
    if let Some(x) = a.vs_serial {
        let _ = write!(cell, ", {x} serial");
    }
    if let Some((p, x)) = &a.vs_peer {
        let _ = write!(cell, ", {x} `{p}`");
    }
    cell
}

/// The comparison as Markdown, ready to paste.
pub fn markdown(c: &Comparison) -> String {
    let mut s = machines(c);
    for t in &c.tables {
        let across = if t.machines_note.is_some() {
            " (across machines)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "\n#### {}, {}{across}\n\n{} files, {} (mean {} per file), spec {}. Cells: median {} · \
             speed vs {BASELINE} of the same column · rank among valid non-reference rows.\n",
            t.dataset,
            t.cache.name(),
            fmt_count(t.files),
            units::bytes(t.bytes),
            units::bytes(t.bytes / t.files.max(1)),
            short_hash(&t.spec_hash),
            t.unit.name(),
        );
        if let Some(n) = &t.note {
            let _ = writeln!(s, "> {n}\n");
        }
        let _ = write!(s, "| program |");
        for &ci in &t.present {
            let _ = write!(s, " {} |", md_escape(&c.columns[ci].label));
        }
        let _ = write!(s, "\n|---|");
        for _ in &t.present {
            s.push_str("---:|");
        }
        s.push('\n');
        for row in &t.rows {
            let mut label = md_escape(&row.label);
            if row.reference {
                let _ = write!(label, " *(reference, {})*", md_escape(&row.algorithm));
            } else if row.kind != "hashrace" && !row.kind.is_empty() {
                let _ = write!(label, " *({})*", md_escape(&row.kind));
            }
            let _ = write!(s, "| {label} |");
            for &ci in &t.present {
                let text = row.cells[ci]
                    .as_ref()
                    .map(|cell| cell_text(cell, row.reference))
                    .unwrap_or_else(|| "–".into());
                let _ = write!(s, " {text} |");
            }
            s.push('\n');
        }
        if let Some(n) = &t.machines_note {
            let _ = writeln!(s, "\n> {n}");
        }
    }
    s.push_str(&flip::markdown(&c.flips));
    if !c.refused.is_empty() {
        let _ = writeln!(s, "\nNot compared:\n");
        for r in &c.refused {
            let _ = writeln!(s, "- `{}`: {}", r.file, md_escape(&r.problem));
        }
    }
    s
}

/// The comparison as pretty JSON with a trailing newline.
pub fn json(c: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(c).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

// ---------------------------------------------------------------------------------------
// Generated sections of a document.

/// Start of a generated section; the rest of the line (up to `-->`) lists the results
/// files, relative to the document's directory.
pub const BEGIN: &str = "<!-- compare:begin";
/// End of a generated section.
pub const END: &str = "<!-- compare:end -->";

/// Regenerate every `compare` section of a Markdown document: the text between each
/// begin marker and the next end marker becomes the comparison of the files the begin
/// marker names (paths relative to `base`). Fails on unbalanced markers or a refused file
/// (a document must not silently lose a column).
pub fn update_doc(doc: &str, base: &Path) -> Result<String> {
    let mut out = String::new();
    let mut rest = doc;
    while let Some(b) = rest.find(BEGIN) {
        let line_end = rest[b..]
            .find('\n')
            .map(|i| b + i + 1)
            .context("begin marker without a line end")?;
        let marker = &rest[b..line_end];
        let names = marker
            .trim_start_matches(BEGIN)
            .trim_end()
            .strip_suffix("-->")
            .context("begin marker must end with -->")?;
        let files: Vec<PathBuf> = names.split_whitespace().map(|n| base.join(n)).collect();
        if files.is_empty() {
            bail!("begin marker names no results files");
        }
        let e = rest[line_end..]
            .find(END)
            .map(|i| line_end + i)
            .context("begin marker without an end marker")?;
        if rest[line_end..e].contains(BEGIN) {
            bail!("nested begin marker");
        }
        let c = compare_paths(&files);
        if let Some(r) = c.refused.first() {
            bail!("{}: {}", r.file, r.problem);
        }
        // Labels are file names, so the text does not depend on where we run from.
        out.push_str(&rest[..line_end]);
        out.push('\n');
        out.push_str(&markdown(&c));
        out.push('\n');
        rest = &rest[e..];
        out.push_str(END);
        rest = &rest[END.len()..];
    }
    if rest.contains(END) {
        bail!("end marker without a begin marker");
    }
    out.push_str(rest);
    Ok(out)
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

// ---------------------------------------------------------------------------------------
// The commands.

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown tables, ready to paste.
    Markdown,
    /// JSON, for scripts.
    Json,
}

pub fn report_refused(c: &Comparison) -> Result<()> {
    for r in &c.refused {
        eprintln!("hash-bench: {}: {}", r.file, r.problem);
    }
    if !c.refused.is_empty() {
        bail!(
            "{} of {} files refused",
            c.refused.len(),
            c.refused.len() + c.columns.len()
        );
    }
    Ok(())
}

/// `hash-bench compare FILE|DIR...`: print the comparison; refused files are reported on
/// stderr, the rest still compared, and the result is an error if any was refused.
pub fn run_compare(args: &[PathBuf], format: Format, output: Option<&Path>) -> Result<()> {
    let (files, refused) = load_paths(args);
    let c = build(&files, refused);
    for w in &c.warnings {
        eprintln!("hash-bench compare: warning: {w}");
    }
    if !c.columns.is_empty() {
        let text = match format {
            Format::Markdown => page(&c, &files),
            Format::Json => json(&c),
        };
        match output {
            Some(path) => {
                std::fs::write(path, &text)
                    .with_context(|| format!("writing {}", path.display()))?;
                eprintln!("hash-bench compare: wrote {}", path.display());
            }
            None => print!("{text}"),
        }
    }
    report_refused(&c)
}

/// `hash-bench compare --update-doc DOC [--check]`: regenerate a document's generated
/// sections; with `check`, fail (changing nothing) if they are out of date.
pub fn run_update_doc(doc: &Path, check: bool) -> Result<()> {
    let text = std::fs::read_to_string(doc).with_context(|| format!("{}", doc.display()))?;
    let base = doc.parent().unwrap_or(Path::new("."));
    let new = update_doc(&text, base).with_context(|| format!("{}", doc.display()))?;
    if new == text {
        eprintln!("{}: generated tables are up to date", doc.display());
    } else if check {
        bail!(
            "{}: generated tables differ from what the results give; run `hash-bench compare --update-doc {}`",
            doc.display(),
            doc.display()
        );
    } else {
        std::fs::write(doc, &new).with_context(|| format!("writing {}", doc.display()))?;
        eprintln!("{}: generated tables rewritten", doc.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixtures: `a.json` (2 cores, SHA-NI, schema 1, one flagged cold run),
    /// `b.json` (8 cores, no SHA-NI, schema 2 with unknown fields, hyperfine schema 2,
    /// reference rows, a jobs sweep, and a `small` of different spec), and bad files.
    /// The expected numbers below are worked out by hand from the medians in them
    /// (e.g. 1000 files / 0.25 s = 4,000 files/s; 64 MiB / 0.064 s = 1,000 MiB/s).
    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare")
    }

    fn two() -> Comparison {
        compare_paths(&[fixtures().join("a.json"), fixtures().join("b.json")])
    }

    fn table<'a>(c: &'a Comparison, dataset: &str, spec: &str, cache: Cache) -> &'a Table {
        c.tables
            .iter()
            .find(|t| t.dataset == dataset && t.spec_hash.starts_with(spec) && t.cache == cache)
            .unwrap_or_else(|| panic!("no table {dataset} {spec} {cache:?}"))
    }

    /// The Markdown line of a row of the table whose heading is `heading`.
    fn md_row(md: &str, heading: &str, row: &str) -> String {
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

    #[test]
    fn proactive_reclaim_gets_a_row_only_where_a_file_records_it() {
        let mut c = two();
        assert!(!markdown(&c).contains("proactive reclaim"));
        c.columns[1].machine.proactive_reclaim = Some(crate::machine::ProactiveReclaim {
            by: "damon".into(),
            min_age_s: 60.0,
            filters: vec!["reject anon".into()],
        });
        assert!(markdown(&c).contains(
            "| proactive reclaim | – | DAMON pages out memory idle for 60 s or more (reject anon) |"
        ));
    }

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

    #[test]
    fn json_carries_the_same_comparison() {
        let c = two();
        let v: serde_json::Value = serde_json::from_str(&json(&c)).unwrap();
        assert_eq!(v["columns"][1]["machine"]["cpu_model"], "Test CPU B");
        let t = v["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["dataset"] == "big" && t["cache"] == "warm")
            .unwrap();
        assert_eq!(t["unit"], "MiB/s");
        let row = &t["rows"][1];
        assert_eq!(row["label"], "hash-threads -j2");
        assert_eq!(row["cells"][0]["rank"], 1);
        assert!((row["cells"][0]["value"].as_f64().unwrap() - 2000.0).abs() < 1e-6);
        assert!(row["cells"][1].is_null());
    }

    #[test]
    fn update_doc_rewrites_only_the_marked_sections() {
        let doc = "# Title\n\nby hand\n<!-- compare:begin a.json b.json -->\nstale\n<!-- compare:end -->\nafter\n";
        let new = update_doc(doc, &fixtures()).unwrap();
        assert!(new.starts_with("# Title\n\nby hand\n<!-- compare:begin a.json b.json -->\n"));
        assert!(new.ends_with("<!-- compare:end -->\nafter\n"));
        assert!(!new.contains("stale"));
        assert!(new.contains(&markdown(&two())));
        // Idempotent: a second run changes nothing.
        assert_eq!(update_doc(&new, &fixtures()).unwrap(), new);
        let e = |d: &str| format!("{:#}", update_doc(d, &fixtures()).unwrap_err());
        assert!(e("<!-- compare:begin a.json -->\nx\n").contains("without an end marker"));
        assert!(e("x\n<!-- compare:end -->\n").contains("end marker without a begin"));
        assert!(
            e("<!-- compare:begin truncated.json -->\n<!-- compare:end -->\n")
                .contains("truncated JSON")
        );
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(fmt_num(1234567.4), "1,234,567");
        assert_eq!(fmt_num(100.0), "100");
        assert_eq!(fmt_num(12.345), "12.3");
        assert_eq!(fmt_num(0.456), "0.46");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_count(64), "64");
        assert_eq!(fmt_count(20000), "20,000");
    }
}
