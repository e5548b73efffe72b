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
