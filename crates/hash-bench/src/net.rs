//! The steps of a network location that need the plan: a fresh mount for each cold
//! run, the link samples that prove each run cold or warm, and the flags they raise.
//! (The mount daemon itself and the arithmetic of the samples are in
//! [`crate::location`].)

use std::path::Path;

use anyhow::{Context, Result};

use crate::cache::{self, Residency, ResidencySample};
use crate::location::{append_sample, percent, Bytes, Daemon, LinkSample};
use crate::plan::{self, Cache, Plan};

/// A cold network run must move at least this share of the dataset over the link.
pub const COLD_MIN_LINK_PERCENT: f64 = 95.0;
/// A warm network run may move at most this share of the dataset over the link.
pub const WARM_MAX_LINK_PERCENT: f64 = 5.0;

/// Replace the plan's mount with a fresh one of `dataset`; the old one's final
/// counters, if one ran.
///
/// Each dataset is its own mount, at `<data root>/<dataset>`: the commands run in the
/// data root, a plain directory, so a remount between runs changes nothing for
/// hyperfine, whose working directory would otherwise be the detached old mount.
pub fn remount(plan: &Plan, work: &Path, dataset: &str) -> Result<Option<Bytes>> {
    let link = plan
        .location
        .link
        .as_ref()
        .context("the plan's location is not a network")?;
    let daemon = Daemon::of(work);
    let end = daemon.stop()?;
    daemon.start(
        Path::new(&plan.hash_bench),
        &link.profile,
        &plan.source_root().join(dataset),
        &Path::new(&plan.data_root).join(dataset),
    )?;
    Ok(end)
}

/// Make sure `dataset` is mounted (keeping a mount of it that is already up).
pub fn serve(plan: &Plan, work: &Path, dataset: &str) -> Result<()> {
    let mountpoint = Path::new(&plan.data_root).join(dataset);
    if !Daemon::of(work).serves(&mountpoint) {
        remount(plan, work, dataset)?;
    }
    Ok(())
}

/// hyperfine's `--prepare` on a network location: remount (cold) and append a sample
/// of the counters to the benchmark's link record, and one of the residency to its
/// residency record. A fresh mount holds no page of the data, by construction: it is
/// recorded as 0 % resident without being measured, because measuring (mincore) would
/// open every file through the mount and fill sshfs's attribute caches. Its byte
/// counts are the proof. With `top_up` (warm), what the client's page cache lost is
/// first read back through the mount, between the counters that end the last run and
/// those that start this one.
pub fn prepare(work: &Path, id: &str, fresh: bool, top_up: bool) -> Result<()> {
    let plan = plan::read(work)?;
    let b = plan.benchmark(id)?;
    let daemon = Daemon::of(work);
    let mut topped_up = 0;
    let (action, previous_end, start, residency) = if fresh {
        let end = remount(&plan, work, &b.dataset)?;
        let files = plan.dataset(&b.dataset)?.spec.files();
        let empty = Residency {
            files: files.len() as u64,
            resident_pages: 0,
            total_pages: files
                .iter()
                .map(|f| f.size.div_ceil(cache::page_size()))
                .sum(),
        };
        ("remount", end, daemon.counters()?, empty)
    } else {
        let end = daemon.counters()?;
        let root = Path::new(&plan.data_root).join(&b.dataset);
        let files = cache::walk_files(&root)?;
        let (r, read_back) = if top_up {
            cache::top_up(&files)?
        } else {
            (cache::residency(&files)?, 0)
        };
        // Pages read back cross the link between the last run's end and this run's
        // start: counted for neither.
        let start = if read_back > 0 {
            daemon.counters()?
        } else {
            end
        };
        topped_up = read_back;
        let action = if read_back > 0 { "top-up" } else { "none" };
        (action, Some(end), start, r)
    };
    ResidencySample {
        topped_up_pages: topped_up,
        ..ResidencySample::now(action, residency)
    }
    .append_to(&plan::residency_record(work, id))?;
    record(work, id, action, previous_end, start)
}

/// Close a benchmark's link record after its last run (the mount stays up).
pub fn finish(work: &Path, id: &str) -> Result<()> {
    let now = Daemon::of(work).counters()?;
    record(work, id, "end", Some(now), now)
}

fn record(
    work: &Path,
    id: &str,
    action: &str,
    previous_end: Option<Bytes>,
    start: Bytes,
) -> Result<()> {
    let s = LinkSample {
        unix_time_s: crate::util::unix_now(),
        action: action.into(),
        previous_end,
        start,
    };
    append_sample(&plan::link_record(work, id), &s)
}

/// A flag for each run that moved too little (cold) or too much (warm) of a dataset of
/// `dataset_bytes` over the link. A dataset without data proves nothing either way.
pub fn link_flags(moved: &[Bytes], cache: Cache, dataset_bytes: u64) -> Vec<String> {
    if dataset_bytes == 0 {
        return Vec::new();
    }
    let mut flags = Vec::new();
    for (i, b) in moved.iter().enumerate() {
        let p = percent(b.proof(), dataset_bytes);
        match cache {
            Cache::Cold if p < COLD_MIN_LINK_PERCENT => flags.push(format!(
                "cold run {} moved only {p:.1} % of the data's bytes over the link (floor {COLD_MIN_LINK_PERCENT} %)",
                i + 1
            )),
            Cache::Warm if p > WARM_MAX_LINK_PERCENT => flags.push(format!(
                "warm run {} moved {p:.1} % of the data's bytes over the link (limit {WARM_MAX_LINK_PERCENT} %)",
                i + 1
            )),
            _ => {}
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::location::tests::b;

    #[test]
    fn cold_runs_must_move_the_data_and_warm_runs_must_not() {
        let moved = [b(96), b(94)];
        let flags = link_flags(&moved, Cache::Cold, 100);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert!(
            flags[0].starts_with("cold run 2 moved only 94.0 %"),
            "{flags:?}"
        );
        let moved = [b(5), b(6)];
        let flags = link_flags(&moved, Cache::Warm, 100);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert!(flags[0].starts_with("warm run 2 moved 6.0 %"), "{flags:?}");
        assert!(link_flags(&[b(0)], Cache::Cold, 0).is_empty());
        // Where the link tells file data from protocol, the data is the proof: a
        // warm run that moved 7 % in handles and attributes but no data is warm.
        let warm = Bytes {
            data: Some(0),
            ..b(7)
        };
        assert!(link_flags(&[warm], Cache::Warm, 100).is_empty());
        let cold = Bytes {
            data: Some(90),
            ..b(110)
        };
        assert_eq!(link_flags(&[cold], Cache::Cold, 100).len(), 1);
    }
}
