//! Each binary's short help (`-h`) against a committed snapshot, so that a change to
//! it is deliberate, and within a screen: at most 45 lines, grouped under the same
//! headings in all four. Run with `UPDATE_SNAPSHOTS=1` to rewrite the snapshots
//! after a change you meant.

use std::path::PathBuf;
use std::process::Command;

/// Every binary: one per strategy.
fn binaries() -> impl Iterator<Item = &'static str> {
    hash_core::Strategy::ALL.into_iter().map(|s| s.binary())
}

/// `-h` as a user sees it on a terminal 100 columns wide (clap's widest).
fn short_help(binary: &str) -> String {
    let out = Command::new(testenv::binary(binary))
        .arg("-h")
        .env("COLUMNS", "100")
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{binary} -h: {out:?}");
    assert!(out.stderr.is_empty(), "{binary} -h wrote to stderr");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

fn snapshot(binary: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/help/{binary}.txt"))
}

#[test]
fn short_help_matches_its_snapshot() {
    for binary in binaries() {
        let help = short_help(binary);
        let path = snapshot(binary);
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&path, &help).unwrap();
            continue;
        }
        let want =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            help == want,
            "{binary} -h differs from {}; if the change is meant, rerun with \
             UPDATE_SNAPSHOTS=1 and commit the file.\n--- snapshot\n{want}\n--- now\n{help}",
            path.display()
        );
    }
}

#[test]
fn short_help_fits_a_screen_under_the_same_headings() {
    let headings = ["Input:", "Output:", "Check:", "Cache:", "Scale-out:"];
    for binary in binaries() {
        let help = short_help(binary);
        let lines: Vec<&str> = help.lines().collect();
        assert!(lines.len() <= 45, "{binary} -h is {} lines", lines.len());
        let mut at = 0;
        for h in headings {
            let found = lines.iter().position(|l| *l == h);
            let found = found.unwrap_or_else(|| panic!("{binary} -h lacks {h}\n{help}"));
            assert!(found > at, "{binary}: {h} out of order");
            at = found;
        }
        // -j leads Performance where the strategy has workers, between Check and Cache.
        let perf = lines.iter().position(|l| *l == "Performance:");
        if binary == "hash-serial" {
            assert!(perf.is_none(), "hash-serial has no -j\n{help}");
        } else {
            let perf = perf.unwrap_or_else(|| panic!("{binary} lacks Performance\n{help}"));
            assert!(
                lines[perf + 1].trim_start().starts_with("-j, --jobs"),
                "{help}"
            );
        }
        // Tuning lives in --help only.
        for tuning in ["--data-path", "--read-order", "--max-in-flight", "--io "] {
            assert!(!help.contains(tuning), "{binary} -h shows {tuning}");
        }
        assert!(help.contains("--generate"), "{binary}");
    }
}

#[test]
fn long_help_describes_the_tuning_options_and_exit_status() {
    let out = Command::new(testenv::binary("hash-async"))
        .arg("--help")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for option in [
        "--data-path",
        "--read-order",
        "--max-in-flight",
        "--io",
        "Exit status",
    ] {
        assert!(help.contains(option), "--help lacks {option}");
    }
}
