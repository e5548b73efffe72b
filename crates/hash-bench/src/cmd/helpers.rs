//! Small subcommands the scripts and tests lean on: `strategies` and `machine`, and the
//! hidden `since` and `in-cgroup`.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;

use crate::machine;
use crate::plan::programs;
use hash_core::units;

pub fn strategies(parallel: bool) {
    let wanted = hash_core::Strategy::ALL
        .into_iter()
        .filter(|s| !parallel || s.is_parallel());
    for s in wanted {
        println!("{}", programs::hasher_binary(s));
    }
}

pub fn since(start: u64) -> Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let since = now.saturating_sub(std::time::Duration::from_secs(start));
    println!("{}", units::duration(since));
    Ok(())
}

pub fn in_cgroup(procs: &Path, command: &[OsString]) -> Result<()> {
    Err(crate::cgroup::exec_in(procs, &command[0], &command[1..]))
}

pub fn machine(data_dir: &Path) -> Result<()> {
    let m = serde_json::to_string_pretty(&machine::collect(data_dir))?;
    println!("{m}");
    Ok(())
}
