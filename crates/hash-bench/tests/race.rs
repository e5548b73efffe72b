//! The steps bench.sh hands to hash-bench: `strategies`, `plan`, `gen --work` and `race`,
//! run as bench.sh runs them, with stand-in hashers and a stand-in hyperfine that
//! records how it was called. What `race` must pass on comes from `plan.json`, the
//! interface between the steps.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const HB: &str = env!("CARGO_BIN_EXE_hash-bench");

fn ok(cmd: &mut Command) -> String {
    let out = testenv::run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A stand-in hyperfine at `path` that writes an empty 1.x export, and logs its working
/// directory and arguments to `log` when given.
fn fake_hyperfine(path: &Path, log: Option<&Path>) {
    let log = log
        .map(|l| format!("echo \"$(pwd) $*\" >> '{}'\n", l.display()))
        .unwrap_or_default();
    script(
        path,
        &format!(
            "#!/bin/sh\n{log}while [ \"$1\" != --export-json ]; do shift; done\n\
             echo '{{\"results\": []}}' > \"$2\"\n"
        ),
    );
}

/// `hash-bench plan` of the smoke sweep with `args` (datasets, cache states), the hashers
/// in `bins`, no peers or Python, `-j 2`, the data under `root/data`; then `gen`. The work
/// directory and the data root.
fn smoke_plan(root: &Path, bins: &Path, args: &[&str]) -> (PathBuf, PathBuf) {
    let data = root.join("data");
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let work = ok(Command::new(HB)
        .args(["plan", "--sweep", "smoke"])
        .args(args)
        .args([
            "--peers",
            "none",
            "--no-python",
            "--jobs",
            "2",
            "--cores",
            "2",
        ])
        .arg("--specs-dir")
        .arg(&specs)
        .arg("--data-root")
        .arg(&data)
        .arg("--bin-dir")
        .arg(bins)
        .arg("--work-parent")
        .arg(root.join("w")));
    let work = PathBuf::from(work.trim_end());
    ok(Command::new(HB).arg("gen").arg("--work").arg(&work));
    (work, data)
}

/// `hash-bench race` of the plan in `work` with the given hyperfine; its output.
fn race(work: &Path, hyperfine: &Path) -> String {
    ok(Command::new(HB)
        .arg("race")
        .arg("--work")
        .arg(work)
        .arg("--hyperfine")
        .arg(hyperfine))
}

#[test]
fn strategies_are_the_workspace_binaries() {
    let names = ok(Command::new(HB).arg("strategies"));
    let names: Vec<&str> = names.lines().collect();
    // Every hashrace binary crate of the workspace, found on disk: crates/hash-*/ with a
    // main.rs, less this harness.
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut on_disk: Vec<String> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hash-") && n != "hash-bench")
        .filter(|n| crates.join(n).join("src/main.rs").is_file())
        .collect();
    on_disk.sort();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, on_disk);
    assert_eq!(
        names[0], "hash-serial",
        "report order starts with the baseline"
    );
}

#[test]
fn race_runs_each_benchmark_once_and_resumes() {
    let t = common::disk_tempdir();
    let bins = t.path().join("bin");
    std::fs::create_dir(&bins).unwrap();
    let names = ok(Command::new(HB).arg("strategies"));
    for h in names.lines() {
        script(&bins.join(h), "#!/bin/sh\nexit 0\n");
    }
    // hyperfine: log the working directory and arguments, write a 1.x export.
    let log = t.path().join("hyperfine.log");
    let hyperfine = t.path().join("hyperfine");
    fake_hyperfine(&hyperfine, Some(&log));
    let (work, data) = smoke_plan(t.path(), &bins, &["--datasets", "empty"]);
    let work = work.as_path();
    assert!(data.join("empty").is_dir());

    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("plan.json")).unwrap()).unwrap();
    let benchmarks = plan["benchmarks"].as_array().unwrap();
    assert!(benchmarks.len() > 4, "{}", benchmarks.len());
    let race = || race(work, &hyperfine);
    let out = race();
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), benchmarks.len());
    let data = std::fs::canonicalize(&data).unwrap();
    for (i, (b, call)) in benchmarks.iter().zip(&calls).enumerate() {
        let id = b["id"].as_str().unwrap();
        let export = work.join("raw").join(format!("{id}.hyperfine.json"));
        let expected = format!(
            "{} -N --runs {} --warmup {} --prepare {} --export-json {}.part {}",
            data.display(),
            b["runs"],
            b["warmup"],
            b["prepare"].as_str().unwrap(),
            export.display(),
            b["command"].as_str().unwrap()
        );
        assert_eq!(*call, expected);
        assert!(export.is_file(), "{id}: no export");
        // The untimed peak-RSS run came first.
        assert!(work.join("raw").join(format!("{id}.rss.json")).is_file());
        // The host's time over the call: steal is a part of the time accounted.
        let host = std::fs::read_to_string(work.join("raw").join(format!("{id}.host.json")));
        let host: serde_json::Value = serde_json::from_str(&host.unwrap()).unwrap();
        let (steal, total) = (host["steal_ticks"].as_u64(), host["total_ticks"].as_u64());
        assert!(steal.unwrap() <= total.unwrap(), "{id}: {host}");
        let progress = format!("\n[{}/{}] warm empty: ", i + 1, benchmarks.len());
        assert!(out.contains(&progress), "{progress:?} not in {out}");
    }

    // Finished benchmarks are skipped: a rerun calls hyperfine only for the missing one.
    let last = benchmarks.last().unwrap()["id"].as_str().unwrap();
    std::fs::remove_file(work.join("raw").join(format!("{last}.hyperfine.json"))).unwrap();
    let out = race();
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().count(), benchmarks.len() + 1);
    assert_eq!(out.matches("\n[").count(), 1, "{out}");
}

/// A program's first warm benchmark of a dataset evicts it and runs its own command once,
/// so its warm runs find the page cache as the program's own first run left it; then what
/// is missing is read back before the untimed peak-RSS run. Its next job counts follow on
/// that state.
#[test]
fn a_warm_benchmark_starts_with_its_own_cold_run() {
    let t = common::disk_tempdir();
    let bins = t.path().join("bin");
    std::fs::create_dir(&bins).unwrap();
    // Stand-in hashers that read nothing and log what was resident when they started.
    let log = t.path().join("calls.log");
    let names = ok(Command::new(HB).arg("strategies"));
    for h in names.lines() {
        script(
            &bins.join(h),
            &format!(
                "#!/bin/sh\necho \"{h} $* $('{HB}' residency smoke)\" >> '{}'\n",
                log.display()
            ),
        );
    }
    let hyperfine = t.path().join("hyperfine");
    fake_hyperfine(&hyperfine, None);
    let (work, _) = smoke_plan(t.path(), &bins, &["--datasets", "smoke", "--no-cold"]);
    let work = work.as_path();
    let race = || race(work, &hyperfine);
    race();

    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("plan.json")).unwrap()).unwrap();
    let benchmarks = plan["benchmarks"].as_array().unwrap();
    let stand_in = |c: &str| {
        names
            .lines()
            .any(|h| c.ends_with(&format!("/{h}")) || c.contains(&format!("/{h} ")))
    };
    // Per stand-in benchmark in plan order: its own cold run on evicted data when the
    // benchmark before it was another program's, then the peak-RSS run on data read
    // back.
    let mut expected = Vec::new();
    let mut own_runs = 0;
    for (i, b) in benchmarks.iter().enumerate() {
        let command = b["command"].as_str().unwrap();
        if !stand_in(command) {
            continue;
        }
        let command = command.rsplit('/').next().unwrap().to_string();
        if i == 0 || benchmarks[i - 1]["program"] != b["program"] {
            expected.push((command.clone(), ": 0.0 % resident"));
            own_runs += 1;
        }
        expected.push((command, ": 100.0 % resident"));
    }
    assert!(own_runs >= 4 && expected.len() > own_runs, "{expected:?}");
    let calls = std::fs::read_to_string(&log).unwrap();
    // (The plan asked each for its version first.)
    let calls: Vec<&str> = calls.lines().filter(|c| !c.contains("--version")).collect();
    assert_eq!(calls.len(), expected.len(), "{calls:#?}");
    for (call, (command, resident)) in calls.iter().zip(&expected) {
        assert!(
            call.starts_with(command.as_str()),
            "{call:?} is not {command:?}"
        );
        assert!(call.contains(resident), "{call:?}: expected {resident}");
    }

    // Resumed at a second job count: the race's first benchmark makes its own cold run,
    // even though an uninterrupted race follows on the first job count's state.
    let (_, second) = benchmarks
        .iter()
        .enumerate()
        .find(|(i, b)| {
            *i > 0
                && stand_in(b["command"].as_str().unwrap())
                && benchmarks[i - 1]["program"] == b["program"]
        })
        .expect("a program with two job counts");
    let id = second["id"].as_str().unwrap();
    std::fs::remove_file(work.join("raw").join(format!("{id}.hyperfine.json"))).unwrap();
    std::fs::remove_file(&log).unwrap();
    race();
    let command = second["command"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    for (call, resident) in calls.iter().zip([": 0.0 % resident", ": 100.0 % resident"]) {
        assert!(call.starts_with(command), "{call:?} is not {command:?}");
        assert!(call.contains(resident), "{call:?}: expected {resident}");
    }
}
