//! The ranking flip, as a table: the four Python strategies under each interpreter, with
//! each kind of work, beside hashrace's four binaries, per results file, dataset and
//! cache state.
//!
//! The question it answers is not "which program is fastest" (the main tables) but "does
//! the ranking of serial / threads / processes / async depend on the work and the
//! interpreter". So each column is one (work, interpreter) and each cell is the time and
//! the speed against the serial row of the same column: with SHA-256 (hashlib releases
//! the GIL) threads should be about as fast as processes; with the byte sum in pure
//! Python under a GIL, threads should be no faster than serial while processes are.
//!
//! Free-threaded rows that the sweep could not race are columns marked absent, with the
//! results file's reason, never left out.

use std::fmt::Write as _;

use serde::Serialize;

use crate::plan::Cache;
use crate::python::{counterpart, Interpreter};
use crate::results::{BenchmarkResult, Results};

/// The rows' strategies, hashrace's in their order: each row's name (pyhash's,
/// where it has a counterpart), whether pyhash has it, and hashrace's binary.
fn strategies() -> Vec<(&'static str, bool, &'static str)> {
    hash_core::Strategy::ALL
        .iter()
        .map(|s| match counterpart(*s) {
            Some(py) => (py, true, s.binary()),
            None => (s.name(), false, s.binary()),
        })
        .collect()
}

/// One flip table: one results file, one dataset, one cache state.
#[derive(Debug, Clone, Serialize)]
pub struct Flip {
    /// Label of the results file.
    pub file: String,
    /// Dataset name.
    pub dataset: String,
    /// Cache state.
    pub cache: Cache,
    /// Work × interpreter, then hashrace.
    pub columns: Vec<FlipColumn>,
    /// One per strategy and job count.
    pub rows: Vec<FlipRow>,
}

/// A kind of work under one interpreter (or hashrace's binaries).
#[derive(Debug, Clone, Serialize)]
pub struct FlipColumn {
    /// `sha256 · python (CPython 3.11.7, GIL on)`.
    pub title: String,
    /// Why it has no numbers, when it is a placeholder.
    pub absent: Option<String>,
}

/// A strategy at one job count.
#[derive(Debug, Clone, Serialize)]
pub struct FlipRow {
    /// `threads -j2`, `threads (default -j)`, `serial`.
    pub label: String,
    /// One per column.
    pub cells: Vec<Option<FlipCell>>,
    /// Where it sorts: the strategy's place in [`strategies`], then `-jN` ascending and
    /// the default last.
    #[serde(skip)]
    order: (usize, u32),
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct FlipCell {
    /// Median wall time, seconds.
    pub median_s: f64,
    /// The same column's serial median / this one (valid measurements only).
    pub vs_serial: Option<f64>,
    /// Cores kept busy: mean CPU time (user + system, the whole process tree) / mean
    /// wall time. Unlike `vs_serial` it needs no second benchmark, so a CPU that ran
    /// one benchmark slower than another (a noisy host) does not move it: with the GIL
    /// held, threads stay near 1.0 whatever the clock.
    pub cores: f64,
    /// Whether the measurement is valid.
    pub valid: bool,
}

/// Where a benchmark's numbers go: which column, which strategy.
struct Source {
    title: String,
    /// `(program name, index into strategies())` pairs of this column.
    programs: Vec<(String, usize)>,
}

/// The columns of one results file: each interpreter's sha256 and pysum rows, then
/// hashrace's binaries.
fn sources(r: &Results) -> Vec<Source> {
    let mut interpreters: Vec<&Interpreter> = Vec::new();
    for p in &r.programs {
        if let Some(i) = &p.interpreter {
            if !interpreters.iter().any(|x| x.label == i.label) {
                interpreters.push(i);
            }
        }
    }
    let mut out = Vec::new();
    for i in interpreters {
        for work in ["sha256", "pysum"] {
            let suffix = if work == "sha256" {
                String::new()
            } else {
                format!("-{work}")
            };
            out.push(Source {
                title: format!("{work} · {} ({})", i.label, i.describe()),
                programs: strategies()
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, py, _))| *py)
                    .map(|(k, (s, _, _))| (format!("{}-{s}{suffix}", i.label), k))
                    .collect(),
            });
        }
    }
    if !out.is_empty() {
        out.push(Source {
            title: "sha256 · hashrace (Rust)".into(),
            programs: strategies()
                .iter()
                .enumerate()
                .map(|(k, (_, _, bin))| (bin.to_string(), k))
                .collect(),
        });
    }
    out
}

/// The label of a strategy at a job count (`None`: the program's own default).
fn row_label(strategy: &str, jobs: Option<u32>) -> String {
    match (strategy, jobs) {
        ("serial", _) => "serial".into(),
        (s, Some(j)) => format!("{s} -j{j}"),
        (s, None) => format!("{s} (default -j)"),
    }
}

/// The flip tables of one results file (none when it raced no Python).
pub fn build(label: &str, r: &Results) -> Vec<Flip> {
    let sources = sources(r);
    if sources.is_empty() {
        return Vec::new();
    }
    let mut flips = Vec::new();
    for d in &r.datasets {
        for cache in [Cache::Warm, Cache::Cold] {
            let benches: Vec<&BenchmarkResult> = r
                .benchmarks
                .iter()
                .filter(|b| b.dataset == d.name && b.cache == cache)
                .collect();
            if let Some(f) = table(label, &d.name, cache, &sources, &benches, r) {
                flips.push(f);
            }
        }
    }
    flips
}

/// One table, if any Python program ran on the dataset in this cache state.
fn table(
    label: &str,
    dataset: &str,
    cache: Cache,
    sources: &[Source],
    benches: &[&BenchmarkResult],
    r: &Results,
) -> Option<Flip> {
    fn find<'b>(
        benches: &'b [&'b BenchmarkResult],
        program: &'b str,
    ) -> impl Iterator<Item = &'b &'b BenchmarkResult> {
        benches.iter().filter(move |b| b.program == program)
    }
    let python_ran = sources[..sources.len() - 1].iter().any(|s| {
        s.programs
            .iter()
            .any(|(p, _)| find(benches, p).next().is_some())
    });
    if !python_ran {
        return None;
    }
    let mut columns: Vec<FlipColumn> = Vec::new();
    let mut rows: Vec<FlipRow> = Vec::new();
    for (ci, src) in sources.iter().enumerate() {
        columns.push(FlipColumn {
            title: src.title.clone(),
            absent: None,
        });
        let serial = find(benches, &src.programs[0].0)
            .find(|b| b.valid)
            .map(|b| b.median_s);
        let names = strategies();
        for (program, strategy) in &src.programs {
            for b in find(benches, program) {
                let label = row_label(names[*strategy].0, b.jobs);
                let i = rows
                    .iter()
                    .position(|r| r.label == label)
                    .unwrap_or_else(|| {
                        rows.push(FlipRow {
                            label,
                            cells: Vec::new(),
                            order: (*strategy, b.jobs.unwrap_or(u32::MAX)),
                        });
                        rows.len() - 1
                    });
                rows[i].cells.resize(ci + 1, None);
                rows[i].cells[ci] = Some(FlipCell {
                    median_s: b.median_s,
                    vs_serial: serial.filter(|_| b.valid).map(|s| s / b.median_s),
                    cores: (b.user_s + b.system_s) / b.mean_s.max(1e-9),
                    valid: b.valid,
                });
            }
        }
    }
    for row in &mut rows {
        row.cells.resize(columns.len(), None);
    }
    if let Some(why) = &r.python_free_threaded_absent {
        // Before hashrace's column, where a free-threaded interpreter's would be.
        let at = columns.len() - 1;
        for work in ["pysum", "sha256"] {
            columns.insert(
                at,
                FlipColumn {
                    title: format!("{work} · free-threaded Python"),
                    absent: Some(why.clone()),
                },
            );
            for row in &mut rows {
                row.cells.insert(at, None);
            }
        }
    }
    rows.sort_by_key(|r| r.order);
    Some(Flip {
        file: label.to_string(),
        dataset: dataset.to_string(),
        cache,
        columns,
        rows,
    })
}

/// The flip tables as Markdown (nothing when there are none).
pub fn markdown(flips: &[Flip]) -> String {
    let mut s = String::new();
    for f in flips {
        let _ = writeln!(
            s,
            "\n#### The flip: Python and hashrace, {}, {} ({})\n\n\
             Cells: median wall time · speed vs the serial row of the same column · cores \
             kept busy (CPU time / wall time, means).\n",
            f.dataset,
            f.cache.name(),
            f.file
        );
        let _ = write!(s, "| strategy |");
        for c in &f.columns {
            let _ = write!(s, " {} |", c.title.replace('|', "\\|"));
        }
        let _ = write!(s, "\n|---|");
        for _ in &f.columns {
            s.push_str("---:|");
        }
        s.push('\n');
        for r in &f.rows {
            let _ = write!(s, "| {} |", r.label);
            for (c, cell) in f.columns.iter().zip(&r.cells) {
                let text = match (cell, &c.absent) {
                    (_, Some(_)) => "absent".to_string(),
                    (None, None) => "–".to_string(),
                    (Some(x), None) => cell_text(x),
                };
                let _ = write!(s, " {text} |");
            }
            s.push('\n');
        }
        let mut notes: Vec<&str> = f
            .columns
            .iter()
            .filter_map(|c| c.absent.as_deref())
            .collect();
        notes.dedup();
        for n in notes {
            let _ = writeln!(s, "\nFree-threaded Python: {n}.");
        }
    }
    s
}

fn cell_text(c: &FlipCell) -> String {
    let t = if c.median_s < 1.0 {
        format!("{:.0} ms", c.median_s * 1000.0)
    } else {
        format!("{:.2} s", c.median_s)
    };
    let cores = c.cores;
    match (c.valid, c.vs_serial) {
        (false, _) => format!("{t} (flagged)"),
        (true, Some(v)) => format!("{t} · {v:.2}× · {cores:.2}"),
        (true, None) => format!("{t} · {cores:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Kind, ProgramInfo};
    use std::path::Path;

    /// The compare fixture `a.json` with Python rows added on `big`, warm: medians chosen
    /// so that every ratio below is worked out by hand.
    fn with_python(absent: bool) -> Results {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare/a.json");
        let mut r = crate::compare::load(&fixture).unwrap();
        let template = r
            .benchmarks
            .iter()
            .find(|b| b.program == "hash-serial" && b.dataset == "big" && b.cache == Cache::Warm)
            .unwrap()
            .clone();
        let interpreter = Interpreter {
            label: "python".into(),
            executable: "/usr/bin/python3.11".into(),
            version: "3.11.7".into(),
            implementation: "cpython".into(),
            gil_enabled: None,
            free_threaded_build: false,
        };
        let rows: [(&str, &str, Option<u32>, f64); 6] = [
            ("python-serial", "sha256", None, 2.0),
            ("python-threads", "sha256", Some(2), 1.0),
            ("python-serial-pysum", "pysum", None, 4.0),
            ("python-threads-pysum", "pysum", Some(2), 4.0),
            ("python-threads-pysum", "pysum", None, 5.0),
            ("python-procs-pysum", "pysum", Some(2), 2.0),
        ];
        for (name, work, jobs, median) in rows {
            if !r.programs.iter().any(|p| p.name == name) {
                r.programs.push(ProgramInfo {
                    name: name.into(),
                    kind: Kind::Reference,
                    algorithm: work.into(),
                    path: interpreter.executable.clone(),
                    version: Some(interpreter.describe()),
                    sha256: None,
                    interpreter: Some(interpreter.clone()),
                });
            }
            let mut b = template.clone();
            b.program = name.into();
            b.kind = Kind::Reference;
            b.jobs = jobs;
            b.median_s = median;
            // One core busy for pysum threads (the GIL), two for the rest but serial.
            b.mean_s = median;
            let cores = if name.contains("serial") || (name.contains("threads") && work == "pysum")
            {
                1.0
            } else {
                2.0
            };
            b.user_s = 0.75 * median * cores;
            b.system_s = 0.25 * median * cores;
            r.benchmarks.push(b);
        }
        if absent {
            r.python_free_threaded_absent = Some("absent: none here".into());
        }
        r
    }

    #[test]
    fn each_column_is_one_work_under_one_interpreter_against_its_own_serial() {
        let flips = build("a", &with_python(true));
        // Only `big`, warm, ran Python.
        assert_eq!(flips.len(), 1);
        let f = &flips[0];
        assert_eq!((f.dataset.as_str(), f.cache), ("big", Cache::Warm));
        let titles: Vec<&str> = f.columns.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "sha256 · python (CPython 3.11.7, GIL on)",
                "pysum · python (CPython 3.11.7, GIL on)",
                "sha256 · free-threaded Python",
                "pysum · free-threaded Python",
                "sha256 · hashrace (Rust)",
            ]
        );
        let md = markdown(&flips);
        let row = |label: &str| {
            md.lines()
                .find(|l| l.starts_with(&format!("| {label} |")))
                .unwrap_or_else(|| panic!("no row {label} in\n{md}"))
                .to_string()
        };
        // The fixture's hash-serial and hash-threads -j2 on big: 64 and 32 ms.
        assert_eq!(
            row("serial"),
            "| serial | 2.00 s · 1.00× · 1.00 | 4.00 s · 1.00× · 1.00 | absent | absent | 64 ms · 1.00× · 0.00 |"
        );
        assert_eq!(
            row("threads -j2"),
            "| threads -j2 | 1.00 s · 2.00× · 2.00 | 4.00 s · 1.00× · 1.00 | absent | absent | 32 ms · 2.00× · 0.00 |"
        );
        assert_eq!(
            row("threads (default -j)"),
            "| threads (default -j) | – | 5.00 s · 0.80× · 1.00 | absent | absent | – |"
        );
        assert_eq!(
            row("procs -j2"),
            "| procs -j2 | – | 2.00 s · 2.00× · 2.00 | absent | absent | – |"
        );
        // Strategy order, -jN before the default.
        let labels: Vec<&str> = f.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["serial", "threads -j2", "threads (default -j)", "procs -j2"]
        );
        assert!(
            md.contains("\nFree-threaded Python: absent: none here.\n"),
            "{md}"
        );
    }

    #[test]
    fn no_absent_columns_when_a_free_threaded_interpreter_ran_and_no_table_without_python() {
        let f = &build("a", &with_python(false))[0];
        assert_eq!(f.columns.len(), 3);
        assert!(f.columns.iter().all(|c| c.absent.is_none()));
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare/a.json");
        assert!(build("a", &crate::compare::load(&fixture).unwrap()).is_empty());
    }
}
