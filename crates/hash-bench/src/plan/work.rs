//! A plan's work directory: the paths of each benchmark's raw files, the prepare
//! commands that write its records, and `plan.json` itself (written, read back,
//! summarised). Every step after `plan` finds its files through these, so that no two
//! spell a name differently.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::*;
use crate::gen::read_marker;
use crate::util::sh_join;
use hash_core::units;

/// hyperfine's `--prepare` for `b` on a network location: a fresh mount (cold) or the
/// link's counters (warm), appended to the benchmark's link record. With `top_up`, a
/// warm prepare first reads back through the mount what the client's page cache lost
/// (as [`prepare_command`]'s does locally): a warm run that fetched it over the link
/// would be flagged for moving too much.
pub(super) fn net_prepare_command(hb: &str, work: &Path, b: &PlanEntry, top_up: bool) -> String {
    let mut prep = vec![
        hb.to_string(),
        "net-prepare".into(),
        "--work".into(),
        work.display().to_string(),
        "--id".into(),
        b.id.clone(),
    ];
    match b.cache {
        Cache::Cold => prep.push("--remount".into()),
        Cache::Warm if top_up => prep.push("--top-up".into()),
        Cache::Warm => {}
    }
    sh_join(&prep)
}

/// Path of a benchmark's link record (network locations).
pub fn link_record(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.link.jsonl"))
}

/// hyperfine's `--prepare` for `b`: evict (cold) or measure (warm) the dataset,
/// appending a residency sample to the benchmark's record in `work`. With `top_up`, a
/// warm prepare first reads back what is not resident: some guests page out idle page
/// cache on their own (DAMON), and a run of small files that starts a few per cent
/// cold is no warm run. Under a memory limit warm means what the cgroup kept: no top-up.
pub(super) fn prepare_command(
    hb: &str,
    work: &Path,
    b: &PlanEntry,
    eviction: EvictMethod,
    top_up: bool,
) -> String {
    let record = residency_record(work, &b.id).display().to_string();
    let mut prep = vec![hb.to_string()];
    match b.cache {
        Cache::Cold => {
            prep.extend(["evict".into(), "--record".into(), record]);
            if eviction == EvictMethod::DropCaches {
                prep.extend(["--method".into(), "drop-caches".into()]);
            }
        }
        Cache::Warm => {
            prep.push("residency".into());
            if top_up {
                prep.push("--top-up".into());
            }
            prep.extend(["--record".into(), record]);
        }
    }
    prep.push(b.dataset.clone());
    sh_join(&prep)
}

/// How a benchmark is labelled in progress lines and tables: `hash-threads -j2`,
/// `hash-threads -j default`, `hash-serial`.
pub fn label(b: &PlanEntry) -> String {
    match (b.jobs, b.default_jobs) {
        (Some(j), _) => format!("{} -j{j}", b.program),
        (None, true) => format!("{} -j default", b.program),
        (None, false) => b.program.clone(),
    }
}

/// Work directory of a plan.
pub fn work_dir(parent: &Path, plan: &Plan) -> PathBuf {
    parent.join(format!("{}-{}", plan.sweep, plan.id))
}

/// Path of a benchmark's residency record.
pub fn residency_record(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.residency.jsonl"))
}

/// Path of a benchmark's hyperfine export.
pub fn export_path(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.hyperfine.json"))
}

/// Path of a benchmark's record of the CPU time the host took meanwhile
/// ([`crate::machine::CpuTicks`] accrued over its hyperfine call).
pub fn host_path(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.host.json"))
}

/// Path of a benchmark's peak-RSS record.
pub fn rss_path(work: &Path, id: &str) -> PathBuf {
    work.join("raw").join(format!("{id}.rss.json"))
}

/// Write `plan.json` into `work` (creating it and `work/raw`).
pub fn write(plan: &Plan, work: &Path) -> Result<()> {
    std::fs::create_dir_all(work.join("raw"))
        .with_context(|| format!("creating {}", work.display()))?;
    let mut json = serde_json::to_string_pretty(plan)?;
    json.push('\n');
    std::fs::write(work.join("plan.json"), json)?;
    Ok(())
}

/// Read `plan.json` from `work`.
pub fn read(work: &Path) -> Result<Plan> {
    let path = work.join("plan.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let plan: Plan =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if plan.plan_version != PLAN_VERSION {
        bail!(
            "{}: plan version {} (this hash-bench writes {PLAN_VERSION})",
            path.display(),
            plan.plan_version
        );
    }
    Ok(plan)
}

/// Human summary of a plan, for stderr.
pub fn summary(plan: &Plan, specs_missing: &[String]) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "plan {} ({} sweep): {} benchmarks, jobs {:?}, eviction {:?}\n",
        plan.id,
        plan.sweep,
        plan.benchmarks.len(),
        plan.jobs,
        plan.eviction
    ));
    for d in &plan.datasets {
        let caches: Vec<&str> = d.caches.iter().map(|c| c.name()).collect();
        let generated =
            read_marker(Path::new(&plan.data_root), &d.spec.name).is_some_and(|m| m.complete);
        s.push_str(&format!(
            "  {:<14} {:>7} files {:>10}  [{}]{}{}\n",
            d.spec.name,
            d.files,
            units::bytes(d.bytes),
            caches.join(", "),
            if generated {
                ""
            } else {
                "  (not generated yet)"
            },
            d.note
                .as_deref()
                .map(|n| format!("  {n}"))
                .unwrap_or_default()
        ));
    }
    let names: Vec<String> = plan
        .programs
        .iter()
        .map(|p| match p.kind {
            Kind::Hashrace => p.name.clone(),
            Kind::Peer => format!("{} (peer)", p.name),
            Kind::Reference => format!("{} (reference, {})", p.name, p.algorithm),
        })
        .collect();
    s.push_str(&format!("  programs: {}\n", names.join(", ")));
    for m in specs_missing {
        s.push_str(&format!("  note: {m}\n"));
    }
    s.push_str(&format!(
        "  estimated time: ~{} for verification and benchmarks (rough model; a noisy machine is slower)\n",
        units::seconds(plan.estimate_s)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::*;

    #[test]
    fn labels() {
        let t = tempfile::tempdir().unwrap();
        fake_bins(t.path());
        let plan = build(&options(t.path(), t.path(), Path::new("/w"))).unwrap();
        let label_of = |id: &str| label(plan.benchmarks.iter().find(|b| b.id == id).unwrap());
        assert_eq!(label_of("small.cold.hash-threads-j2"), "hash-threads -j2");
        assert_eq!(
            label_of("small.cold.hash-threads-jdefault"),
            "hash-threads -j default"
        );
        assert_eq!(label_of("small.cold.hash-serial"), "hash-serial");
    }
}
