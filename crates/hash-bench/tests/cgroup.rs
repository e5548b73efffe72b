//! A real memory cgroup: a command started through it (`hash-bench in-cgroup`) is inside it, the page cache its reads
//! make is charged to it and capped by its limit, and dropping it removes it. Where no
//! cgroup can be made (not root, no memory controller, read-only), each test says why it
//! skips and passes.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use hash_bench::cache::{self, EvictMethod};
use hash_bench::cgroup::{MemoryCgroup, Version};

const MIB: u64 = 1 << 20;

fn group(limit: u64) -> Option<MemoryCgroup> {
    match MemoryCgroup::create(limit) {
        Ok(g) => {
            eprintln!("{}", g.describe());
            Some(g)
        }
        Err(e) => {
            eprintln!("skipping: cannot make a memory cgroup: {e:#}");
            None
        }
    }
}

/// `hash-bench in-cgroup` is what moves a command into a group.
fn hash_bench() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_hash-bench"))
}

fn write_file(path: &Path, mib: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk: Vec<u8> = (0..MIB).map(|i| (i * 7 % 251) as u8).collect();
    for _ in 0..mib {
        f.write_all(&chunk).unwrap();
    }
    f.sync_all().unwrap();
}

/// `dd` reads with read(2) and writes to /dev/null: every page of the file goes
/// through the page cache of the process that reads it.
fn read_with_dd(file: &Path, group: Option<&MemoryCgroup>) {
    let mut cmd = match group {
        Some(g) => g.command(hash_bench(), "dd"),
        None => Command::new("dd"),
    };
    cmd.arg(format!("if={}", file.display()))
        .args(["of=/dev/null", "bs=1M", "status=none"]);
    let status = cmd.status().unwrap();
    assert!(status.success(), "dd: {status}");
}

#[test]
fn cgroup_holds_the_attached_child() {
    let Some(g) = group(64 * MIB) else { return };
    let mut cmd = g.command(hash_bench(), "cat");
    cmd.arg("/proc/self/cgroup");
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    // The line of the hierarchy the group is in: "N:...memory...:/path" on v1, "0::/path"
    // on v2. Its path is the group's, relative to where the hierarchy is mounted.
    let line = text
        .lines()
        .find(|l| {
            let mut f = l.splitn(3, ':');
            let (id, ctrl) = (f.next().unwrap(), f.next().unwrap_or(""));
            match g.version() {
                Version::V1 => ctrl.split(',').any(|c| c == "memory"),
                Version::V2 => id == "0" && ctrl.is_empty(),
            }
        })
        .unwrap_or_else(|| panic!("no memory line in\n{text}"));
    let path = line.splitn(3, ':').nth(2).unwrap();
    assert!(
        path.ends_with(&format!(
            "/{}",
            g.path().file_name().unwrap().to_str().unwrap()
        )) && g.path().ends_with(path.trim_start_matches('/')),
        "child's cgroup line {line:?} is not {}",
        g.path().display()
    );
}

#[test]
fn cgroup_charges_and_caps_page_cache() {
    let Some(g) = group(64 * MIB) else { return };
    let dir = common::disk_tempdir();
    let file = dir.path().join("data.bin");
    write_file(&file, 256);
    let files = [file.clone()];
    let cold = cache::evict(&files, EvictMethod::Fadvise).unwrap();
    assert!(
        cold.percent() < 5.0,
        "eviction left {:.1} %",
        cold.percent()
    );

    read_with_dd(&file, Some(&g));
    let after = cache::file_residency(&file).unwrap();
    let (usage, peak) = (g.usage().unwrap(), g.peak().unwrap());
    eprintln!(
        "after reading 256 MiB in the group: {:.1} % resident, usage {usage}, peak {peak:?}",
        after.percent()
    );
    assert!(
        after.percent() < 50.0,
        "{:.1} % of the file stayed cached",
        after.percent()
    );
    // The kernel reclaims or refuses a charge past the limit, so the peak can only
    // touch it; the MiB of slack is caution, not something seen.
    let peak = peak.unwrap_or(usage);
    assert!(
        peak <= g.limit() + MIB,
        "peak {peak} over limit {}",
        g.limit()
    );
    assert!(
        usage <= g.limit() + MIB,
        "usage {usage} over limit {}",
        g.limit()
    );
    // And the group was charged at all: the cache it kept is its own.
    assert!(
        peak >= g.limit() / 2,
        "peak {peak}: the reads were not charged to the group"
    );

    // The control: the same read outside the group leaves the file cached, so the low
    // residency above is the group's doing and not the measure's.
    read_with_dd(&file, None);
    let free = cache::file_residency(&file).unwrap();
    assert!(
        free.percent() > 90.0,
        "outside the group only {:.1} % stayed cached",
        free.percent()
    );
}

#[test]
fn cgroup_drop_removes_it() {
    let Some(g) = group(64 * MIB) else { return };
    let path = g.path().to_path_buf();
    assert!(path.join("cgroup.procs").is_file());
    drop(g);
    assert!(!path.exists(), "{} left behind", path.display());
}

/// A process still inside is moved out first, so the directory still goes.
#[test]
fn cgroup_drop_removes_it_while_in_use() {
    let Some(g) = group(64 * MIB) else { return };
    let path = g.path().to_path_buf();
    // sh says so once in-cgroup has moved it in and exec'd it; exec keeps the pid.
    let mut cmd = g.command(hash_bench(), "sh");
    cmd.args(["-c", "echo started; exec sleep 60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "started\n");
    let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap();
    assert_eq!(procs.trim(), child.id().to_string());
    drop(g);
    let gone = !path.exists();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(gone, "{} left behind", path.display());
}
