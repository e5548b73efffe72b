//! The four binaries must agree byte for byte on the same tree, for every job
//! count. They are found next to this test's executable (`target/<profile>/`),
//! where `cargo test --workspace` builds them.

use std::ffi::OsStr;

use hash_core::Strategy;
use testenv::*;

#[test]
fn all_four_binaries_agree_for_every_job_count() {
    let t = Tree::nasty();
    for i in 0..200 {
        t.file(format!("many/{}/f{i}", i % 7).as_bytes(), &pattern(i * 37));
    }
    let serial = binary(Strategy::Serial.binary());
    let baseline = hash(serial.to_str().unwrap(), &[t.root().as_os_str()]);
    assert_eq!(baseline.status.code(), Some(0));
    assert_eq!(baseline.stdout, reference("-H", &[t.root()]));
    let parallel = Strategy::ALL.into_iter().filter(|s| s.is_parallel());
    assert!(
        parallel.clone().count() > 0,
        "no parallel strategy to compare"
    );
    for name in parallel.map(Strategy::binary) {
        let bin = binary(name);
        for jobs in ["1", "2", "3", "5", "32"] {
            for follow in [false, true] {
                let mut args = vec![OsStr::new("-j"), OsStr::new(jobs)];
                if follow {
                    args.push(OsStr::new("-L"));
                }
                args.push(t.root().as_os_str());
                let out = hash(bin.to_str().unwrap(), &args);
                let want = hash(serial.to_str().unwrap(), &args[2..]);
                let same_errors = show(&out.stderr).replace(name, "TOOL")
                    == show(&want.stderr).replace(Strategy::Serial.binary(), "TOOL");
                assert!(
                    out.stdout == want.stdout && same_errors,
                    "{name} -j {jobs} follow={follow} disagrees with hash-serial:\n{}\n---\n{}",
                    show(&out.stdout),
                    show(&want.stdout)
                );
                assert_eq!(out.status.code(), want.status.code());
            }
        }
    }
}

#[test]
fn all_four_binaries_give_the_same_tree_digest_and_json_files() {
    let t = Tree::nasty();
    let mut seen: Vec<(String, Vec<u8>)> = Vec::new();
    assert_eq!(
        Strategy::ALL[0],
        Strategy::Serial,
        "the baseline comes first"
    );
    for s in Strategy::ALL {
        let name = s.binary();
        let bin = binary(name);
        let jobs: &[&str] = if s.is_parallel() { &["-j", "3"] } else { &[] };
        let mut args: Vec<&OsStr> = jobs.iter().map(OsStr::new).collect();
        args.push(OsStr::new("--tree"));
        args.push(t.root().as_os_str());
        let out = hash(bin.to_str().unwrap(), &args);
        let text = show(&out.stdout);
        let tree = text.lines().last().unwrap().to_owned();
        assert!(tree.starts_with("# tree-sha256 "), "{name}: {tree}");
        args.insert(0, OsStr::new("--json"));
        let json = hash(bin.to_str().unwrap(), &args);
        let report: hash_core::report::Report = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(
            Some(&tree["# tree-sha256 ".len()..]),
            report.tree_sha256.as_deref()
        );
        let files = serde_json::to_vec(&report.files).unwrap();
        seen.push((tree, files));
    }
    for (i, s) in seen.iter().enumerate().skip(1) {
        assert_eq!(s, &seen[0], "binary #{i} disagrees with hash-serial");
    }
}

/// `hash-procs` writes its requests to a worker without blocking (so it
/// keeps reading the worker's answers), and a batch of requests may be more
/// than the pipe takes at once: here ~600 files under a path of ~2,900
/// bytes, so a worker's batch of requests is many times the 64 KiB a pipe
/// holds, and the parent must write the rest as the worker reads. Every
/// file must still be answered, in order, as `sha256sum` prints it.
#[test]
fn hash_procs_hands_over_batches_larger_than_a_pipe() {
    let t = Tree::new();
    let deep: String = (0..12)
        .map(|i| format!("{i}{}/", "d".repeat(240)))
        .collect();
    for i in 0..600 {
        t.file(format!("{deep}f{i}").as_bytes(), &pattern(100 + i));
    }
    let bin = binary(Strategy::Procs.binary());
    for jobs in ["1", "2"] {
        let args = [OsStr::new("-j"), OsStr::new(jobs), t.root().as_os_str()];
        let out = hash(bin.to_str().unwrap(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out.stderr));
        assert!(
            out.stdout == reference("-H", &[t.root()]),
            "-j {jobs}: not what sha256sum prints"
        );
    }
}

/// Under `--max-in-flight` (and on a network file system) `hash-procs`'
/// workers each read several files at once, on threads of their own; what
/// they print must not change, for any depth and worker count.
#[test]
fn hash_procs_workers_reading_several_files_at_once_agree_with_serial() {
    let t = Tree::nasty();
    for i in 0..150 {
        t.file(format!("many/{}/f{i}", i % 5).as_bytes(), &pattern(i * 53));
    }
    t.file(b"many/large", &pattern(3 << 20));
    let serial = binary(Strategy::Serial.binary());
    let procs = binary(Strategy::Procs.binary());
    for follow in [false, true] {
        let mut tail = Vec::new();
        if follow {
            tail.push(OsStr::new("-L"));
        }
        tail.push(t.root().as_os_str());
        let want = hash(serial.to_str().unwrap(), &tail);
        for (jobs, depth) in [("1", "4"), ("2", "3"), ("2", "64"), ("3", "7")] {
            let mut args = vec![
                OsStr::new("-j"),
                OsStr::new(jobs),
                OsStr::new("--max-in-flight"),
                OsStr::new(depth),
            ];
            args.extend(&tail);
            let out = hash(procs.to_str().unwrap(), &args);
            let what = format!("-j {jobs} --max-in-flight {depth} follow={follow}");
            assert!(
                out.stdout == want.stdout,
                "{what}:\n{}\n---\n{}",
                show(&out.stdout),
                show(&want.stdout)
            );
            let errors =
                |o: &std::process::Output, name: &str| show(&o.stderr).replace(name, "TOOL");
            assert_eq!(
                errors(&out, Strategy::Procs.binary()),
                errors(&want, Strategy::Serial.binary()),
                "{what}"
            );
            assert_eq!(out.status.code(), want.status.code(), "{what}");
        }
    }
}
