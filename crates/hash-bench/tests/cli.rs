//! The hash-bench binary as bench.sh and .ci/run use it: exit statuses, maxrss, validate.

use std::process::Command;

use testenv::run;

const HB: &str = env!("CARGO_BIN_EXE_hash-bench");

#[test]
fn usage_errors_exit_2() {
    let out = run(Command::new(HB).arg("no-such-subcommand"));
    assert_eq!(out.status.code(), Some(2));
    let out = run(Command::new(HB).arg("evict"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn maxrss_measures_the_child_and_passes_failure_on() {
    // dd fills one 16 MiB buffer, so its peak RSS is at least that.
    let out = run(Command::new(HB).args([
        "maxrss",
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=16M",
        "count=1",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let kib: u64 = text
        .strip_prefix("max RSS ")
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output {text:?}"));
    assert!(kib >= 16 * 1024, "{kib} KiB");

    let out = run(Command::new(HB).args(["maxrss", "--", "sh", "-c", "exit 3"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("exit Some(3)"));
}

#[test]
fn validate_accepts_a_complete_results_file_and_rejects_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = include_str!("fixtures/results-v1.json");
    let file = dir.path().join("r.json");
    std::fs::write(&file, fixture).unwrap();

    // The raw directory a v1 file names is not needed: the file carries every run.
    let out = run(Command::new(HB).arg("validate").arg(&file));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 flagged invalid"));

    std::fs::write(
        &file,
        fixture.replace("\"schema_version\": 1", "\"schema_version\": 7"),
    )
    .unwrap();
    let out = run(Command::new(HB).arg("validate").arg(&file));
    assert_eq!(out.status.code(), Some(1));

    // An unknown field is refused by validate (compare would ignore it).
    std::fs::write(
        &file,
        fixture.replacen("\"sweep\"", "\"sweeep\": 1, \"sweep\"", 1),
    )
    .unwrap();
    let out = run(Command::new(HB).arg("validate").arg(&file));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown field .sweeep"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A committed results file is self-contained: copied alone into an empty directory, it
/// validates and compares, and compare reports the median hyperfine itself computed for
/// that run (the `median` of the raw export `shards.warm.hash-procs-j2.hyperfine.json`,
/// which stays out of the repository).
#[test]
fn committed_results_validate_and_compare_from_the_json_alone() {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results");
    let name = "vm-20261207T012901Z-default";
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("results.json");
    std::fs::copy(results.join(name).join("results.json"), &copy).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let out = run(Command::new(HB).arg("validate").arg(&copy));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("valid schema v3"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let out = run(Command::new(HB)
        .args(["compare", "--format", "json"])
        .arg(&copy));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let table = c["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["dataset"] == "shards" && t["cache"] == "warm")
        .expect("a shards warm table");
    let row = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "hash-procs -j2")
        .expect("a hash-procs -j2 row");
    // Within an ulp or two: serde_json's default float parser is not always exact.
    let median_s = row["cells"][0]["median_s"].as_f64().unwrap();
    assert!((median_s - 0.21062096200000002).abs() < 1e-15, "{median_s}");
    // 512 MiB in that median.
    let mib_s = row["cells"][0]["value"].as_f64().unwrap();
    assert!(
        (mib_s - 512.0 / 0.21062096200000002).abs() < 1e-9,
        "{mib_s}"
    );
}
