//! The comparison as people and scripts read it: the Markdown page and tables, the JSON,
//! and the number formats the charts share.

use std::fmt::Write as _;

use super::{Cell, Column, Comparison, Loaded, BASELINE};
use crate::flip;
use crate::machine::Storage;
use crate::report;
use hash_core::units;

pub(super) fn short_hash(h: &str) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::testing::*;

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
