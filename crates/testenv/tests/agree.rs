//! The four binaries must agree byte for byte on the same tree, for every job
//! count. They are found next to this test's executable (`target/<profile>/`),
//! where `cargo test --workspace` builds them.

use std::ffi::OsStr;
use std::path::PathBuf;

use testenv::*;

fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap(); // target/<profile>/deps/..
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test --workspace` so every binary is built",
        bin.display()
    );
    bin
}

#[test]
fn all_four_binaries_agree_for_every_job_count() {
    let t = Tree::nasty();
    for i in 0..200 {
        t.file(format!("many/{}/f{i}", i % 7).as_bytes(), &pattern(i * 37));
    }
    let serial = binary("hash-serial");
    let baseline = hash(serial.to_str().unwrap(), &[t.root().as_os_str()]);
    assert_eq!(baseline.status.code(), Some(0));
    assert_eq!(baseline.stdout, reference("-H", &[t.root()]));
    for name in ["hash-threads", "hash-procs", "hash-async"] {
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
                    == show(&want.stderr).replace("hash-serial", "TOOL");
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
