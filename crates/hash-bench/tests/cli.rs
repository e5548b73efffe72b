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
    let r: serde_json::Value = serde_json::from_str(fixture).unwrap();
    let file = dir.path().join("r.json");
    std::fs::write(&file, fixture).unwrap();

    // Raw exports must exist beside it.
    let out = run(Command::new(HB).arg("validate").arg(&file));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"));

    let raw = dir.path().join(r["raw_dir"].as_str().unwrap());
    std::fs::create_dir(&raw).unwrap();
    for b in r["benchmarks"].as_array().unwrap() {
        std::fs::write(raw.join(b["raw_export"].as_str().unwrap()), "{}").unwrap();
    }
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
}
