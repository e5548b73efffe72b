//! Eviction and residency on real files: evict, and residency is near 0 %; read, and it
//! is near 100 %. Also the CLI forms that bench.sh uses as hyperfine --prepare commands.

mod common;

use std::io::Write;
use std::process::Command;

use testenv::{run, show};

use hash_bench::cache::{self, EvictMethod, ResidencySample};

fn write_file(path: &std::path::Path, mib: usize) {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 7 % 251) as u8).collect();
    for _ in 0..mib {
        f.write_all(&chunk).unwrap();
    }
    f.sync_all().unwrap();
}

#[test]
fn evict_then_warm() {
    let dir = common::disk_tempdir();
    let a = dir.path().join("a.bin");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    write_file(&a, 8);
    write_file(&sub.join("b.bin"), 3);
    std::fs::write(sub.join("empty"), b"").unwrap();
    std::fs::write(sub.join("tiny"), b"x").unwrap();

    let files = cache::walk_files(dir.path()).unwrap();
    assert_eq!(files.len(), 4);

    let after = cache::evict(&files, EvictMethod::Fadvise).unwrap();
    assert_eq!(after.files, 4);
    assert_eq!(after.total_pages, (11 << 20) / 4096 + 1);
    assert!(
        after.percent() < 5.0,
        "after eviction {:.1} % resident",
        after.percent()
    );

    let warmed = cache::warm(&files).unwrap();
    assert!(
        warmed.percent() > 95.0,
        "after reading {:.1} % resident",
        warmed.percent()
    );
    assert!(cache::residency(&files).unwrap().percent() > 95.0);

    // Dirty pages (written, not synced) are evicted too: evict() writes them back first.
    let dirty = dir.path().join("dirty.bin");
    std::fs::write(&dirty, vec![1u8; 2 << 20]).unwrap();
    let r = cache::evict(std::slice::from_ref(&dirty), EvictMethod::Fadvise).unwrap();
    assert!(
        r.percent() < 5.0,
        "dirty file still {:.1} % resident",
        r.percent()
    );
}

#[test]
fn cli_evict_and_residency_record_samples() {
    let dir = common::disk_tempdir();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    write_file(&data.join("f.bin"), 4);
    let record = dir.path().join("rec.jsonl");
    let hb = env!("CARGO_BIN_EXE_hash-bench");

    let ok = |cmd: &mut Command| {
        let out = run(cmd);
        assert!(out.status.success(), "{cmd:?}: {}", show(&out.stderr));
    };
    ok(Command::new(hb).arg("warm").arg(&data));
    ok(Command::new(hb)
        .args(["residency", "--record"])
        .arg(&record)
        .arg(&data));
    ok(Command::new(hb)
        .args(["evict", "--record"])
        .arg(&record)
        .arg(&data));
    // A warm run's prepare reads back what is gone, and says how much.
    ok(Command::new(hb)
        .args(["residency", "--top-up", "--record"])
        .arg(&record)
        .arg(&data));

    let samples = ResidencySample::read_all(&record).unwrap();
    assert_eq!(samples.len(), 3);
    assert_eq!(samples[0].action, "none");
    assert!(samples[0].percent > 95.0);
    assert_eq!(samples[0].topped_up_pages, 0);
    assert_eq!(samples[1].action, "evict");
    assert!(samples[1].percent < 5.0);
    assert_eq!(samples[1].total_pages, 1024);
    assert_eq!(samples[2].action, "top-up");
    assert!(samples[2].topped_up_pages >= 1024 - samples[1].resident_pages);
    assert_eq!(samples[2].resident_pages, 1024);
    assert_eq!(
        cache::residency(&cache::walk_files(&data).unwrap())
            .unwrap()
            .resident_pages,
        1024,
        "read back into the page cache"
    );

    let out = run(Command::new(hb).args(["residency", "--json"]).arg(&data));
    let s: ResidencySample = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s.files, 1);
}

#[test]
fn fs_check_accepts_disk_and_probes_eviction() {
    let dir = common::disk_tempdir();
    let c = cache::fs_check(dir.path(), true).unwrap();
    assert!(!c.memory_fs);
    assert!(c.probe_resident_percent.unwrap() < 5.0);
    // The probe cleans up after itself.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn fs_check_refuses_tmpfs_when_there_is_one() {
    // A tmpfs is found in /proc/self/mountinfo (the kernel's mount table, not
    // the statfs that fs_check uses); mounting one needs privileges CI may not
    // have, so where there is none the test says so and returns.
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    // Each mount point's filesystem type, the last mount there winning (it
    // hides the ones below it). Octal escapes (\040 for a space) are left
    // undecoded: such points simply never match the names below.
    let mut top: Vec<(&str, &str)> = Vec::new();
    for line in mountinfo.lines() {
        let Some((fields, fs)) = line.split_once(" - ") else {
            continue;
        };
        let (Some(point), Some(kind)) = (fields.split(' ').nth(4), fs.split(' ').next()) else {
            continue;
        };
        top.retain(|&(p, _)| p != point);
        top.push((point, kind));
    }
    // /dev/shm first: it is where a user would put a "fast" scratch tree.
    let Some(point) = ["/dev/shm", "/run", "/tmp", "/run/shm"]
        .into_iter()
        .find(|want| top.contains(&(*want, "tmpfs")))
    else {
        eprintln!("skipped: no tmpfs is mounted at /dev/shm, /run or /tmp to be refused");
        return;
    };
    let err = cache::fs_check(std::path::Path::new(point), false).unwrap_err();
    assert!(err.to_string().contains("tmpfs"), "{point}: {err}");
}
