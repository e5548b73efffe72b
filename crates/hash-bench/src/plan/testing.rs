//! What the plan's tests share: fake hashrace binaries and a fake PATH, so that a plan is
//! the same on every machine whatever it has installed, and the options they start from.

use std::path::{Path, PathBuf};

use super::programs;
use super::*;

pub(super) fn fake_bins(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for h in programs::hashers() {
        let p = dir.join(h);
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The CPU count every plan here is made for, whatever this machine has.
pub(super) const CORES: u32 = 2;

/// A directory that stands for PATH: every peer, the tools their pipelines need and
/// a `python3`, each a script that only says who it is. Plans made with it are the
/// same on every machine, whatever that machine has installed.
pub(super) fn fake_path(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = dir.join("path");
    std::fs::create_dir_all(&dir).unwrap();
    let python = dir.join("python3");
    let answer = format!(
        "{{\"executable\": \"{}\", \"version\": \"3.11.7\", \"major\": 3, \"minor\": 11, \
         \"implementation\": \"cpython\", \"gil_enabled\": null, \"free_threaded_build\": false}}",
        python.display()
    );
    let mut scripts = vec![(python, format!("#!/bin/sh\necho '{answer}'\n"))];
    for name in [
        "sha256sum",
        "rhash",
        "hashdeep",
        "b3sum",
        "find",
        "sort",
        "xargs",
        "sh",
    ] {
        scripts.push((dir.join(name), format!("#!/bin/sh\necho '{name} 1.0'\n")));
    }
    for (p, text) in scripts {
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

pub(super) fn options(bins: &Path, data: &Path, work: &Path) -> PlanOptions {
    PlanOptions {
        sweep: Sweep::Default,
        datasets: None,
        extra_datasets: vec![],
        specs_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets"),
        data_root: data.to_path_buf(),
        bin_dir: bins.to_path_buf(),
        hash_bench: Some(PathBuf::from("/x/hash-bench")),
        jobs: Some(vec![2]),
        peers: PeerSelection::List(vec!["sha256sum".into()]),
        warm: true,
        cold: true,
        eviction: EvictMethod::Fadvise,
        repo: bins.to_path_buf(),
        work_parent: work.to_path_buf(),
        python: false,
        pythons: Vec::new(),
        location: crate::location::Location::Local,
        memory_limit: None,
        search_path: Some(fake_path(bins).into_os_string()),
        cores: Some(CORES),
    }
}

pub(super) fn cores() -> u32 {
    CORES
}
