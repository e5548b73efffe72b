//! `hash-bench compare` and `hash-bench chart` as a user runs them: refused files named on
//! stderr with their problem, the others still compared, exit status 1 when any was refused.

use std::path::PathBuf;
use std::process::{Command, Output};

const HB: &str = env!("CARGO_BIN_EXE_hash-bench");

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare")
}

/// Run hash-bench with a deadline, so a hang fails the test instead of the suite.
fn hb(args: &[&std::ffi::OsStr]) -> Output {
    testenv::run(Command::new(HB).args(args))
}

#[test]
fn compare_reports_refused_files_and_compares_the_rest() {
    let a = fixtures().join("a.json");
    let bad = fixtures().join("wrong-schema.json");
    let out = hb(&["compare".as_ref(), a.as_os_str(), bad.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("| hash-threads -j2 | 4,000 · 2.00× · #1 |"),
        "{stdout}"
    );
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "hash-bench: {}: results schema_version 9 (compare reads 1 to 3)\n\
             hash-bench: 1 of 2 files refused\n",
            bad.display()
        )
    );

    let b = fixtures().join("b.json");
    let out = hb(&[
        "compare".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["columns"].as_array().unwrap().len(), 2);
}

#[test]
fn chart_writes_svg_files_and_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = hb(&[
        "chart".as_ref(),
        fixtures().join("b.json").as_os_str(),
        "--out".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8(out.stdout).unwrap();
    let big = dir.path().join("big-warm-scaling.svg");
    assert!(listed.contains(&*big.to_string_lossy()), "{listed}");
    let svg = std::fs::read_to_string(&big).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
}

#[test]
fn update_doc_check_fails_on_stale_tables_and_write_fixes_them() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["a.json", "b.json"] {
        std::fs::copy(fixtures().join(f), dir.path().join(f)).unwrap();
    }
    let doc = dir.path().join("DOC.md");
    std::fs::write(
        &doc,
        "x\n<!-- compare:begin a.json b.json -->\nold\n<!-- compare:end -->\n",
    )
    .unwrap();
    let check = || {
        hb(&[
            "compare".as_ref(),
            "--update-doc".as_ref(),
            doc.as_os_str(),
            "--check".as_ref(),
        ])
    };
    assert_eq!(check().status.code(), Some(1));
    let out = hb(&["compare".as_ref(), "--update-doc".as_ref(), doc.as_os_str()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&doc)
        .unwrap()
        .contains("| cores | 2 | 8 |"));
    assert_eq!(check().status.code(), Some(0));
}

#[test]
fn compare_writes_a_page_that_answers_first_and_names_both_machines() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    let (a, b) = (fixtures().join("a.json"), fixtures().join("b.json"));
    let out = hb(&[
        "compare".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "-o".as_ref(),
        page.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty(), "the page goes to the file only");
    let text = std::fs::read_to_string(&page).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "# The race on 2 sweeps");
    assert!(lines[2].starts_with("- `a`: Test CPU A, 2 CPUs"), "{text}");
    assert!(lines[3].starts_with("- `b`: Test CPU B, 8 CPUs"), "{text}");
    assert!(
        text.contains("> **Warning:** the files come from different CPUs (Test CPU A; Test CPU B)"),
        "{text}"
    );
    // The answer comes before the tables of every program.
    let answer = text.find("## The answer on each machine").unwrap();
    assert!(answer < text.find("#### Machines").unwrap());
    // a.json's small warm rows: 1000 files in 0.25 s (threads -j2) and 0.5 s (serial),
    // 1.0 s for rhash; cold, hash-threads' row is flagged invalid, so hash-procs
    // (1.6 s) wins over serial (2.0 s); b.json raced no cold `small`.
    assert!(
        text.contains(
            "| small files, warm (`small`) | `hash-threads -j 2`, 2.00× [2.00–2.00] serial, \
             4.00× [4.00–4.00] `rhash` |"
        ),
        "{text}"
    );
    assert!(text.contains("| small files, cold (`small`) | `hash-procs -j 2`, 1.25× [1.25–1.25] serial | not raced |"), "{text}");
}
