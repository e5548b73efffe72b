//! The dataset subcommands: `gen` and `manifest-digest`, and the page cache's `evict`,
//! `residency`, `warm` and `fs-check` (a sweep's prepare commands call `evict` and
//! `residency` before every timed run).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::cache::{self, EvictMethod, ResidencySample};
use crate::gen::{generate, GenOptions};
use crate::{manifest, plan, race, spec};
use hash_core::units;

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Specs: names looked up in --specs-dir, or paths to .json files.
    #[arg(required_unless_present = "work")]
    specs: Vec<String>,
    /// Generate the datasets of this plan's work directory (into its data root) instead.
    #[arg(long, conflicts_with_all = ["specs", "root", "specs_dir"])]
    work: Option<PathBuf>,
    /// Directory that receives one sub-directory per dataset.
    #[arg(long, default_value = "datasets/data")]
    root: PathBuf,
    /// Directory of the committed specs.
    #[arg(long, default_value = "datasets")]
    specs_dir: PathBuf,
    /// Worker threads (default: available CPUs).
    #[arg(long)]
    threads: Option<usize>,
    /// Regenerate even if complete.
    #[arg(long)]
    force: bool,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
}

pub fn gen(a: GenArgs) -> Result<()> {
    let mut opts = GenOptions {
        force: a.force,
        progress: !a.quiet,
        ..GenOptions::default()
    };
    if let Some(t) = a.threads {
        opts.threads = t.max(1);
    }
    let (specs, root) = match &a.work {
        Some(work) => {
            let plan = plan::read(work)?;
            let specs = plan.datasets.iter().map(|d| d.spec_path.clone()).collect();
            (specs, plan.source_root().to_owned())
        }
        None => (a.specs, a.root),
    };
    for s in &specs {
        let spec = spec::Spec::load(&spec::resolve(s, &a.specs_dir)?)?;
        let start = std::time::Instant::now();
        let r = generate(&spec, &root, &opts)?;
        let what = if r.generated_files == 0 {
            "reused".to_string()
        } else {
            format!(
                "generated {}, {}",
                units::count(r.generated_files, "file"),
                units::bytes(r.generated_bytes)
            )
        };
        let check = match r.matches_expected {
            Some(true) => "digest matches the committed one".to_string(),
            Some(false) => "DIGEST MISMATCH".to_string(),
            None => format!("no committed digest; manifest sha256 {}", r.manifest_sha256),
        };
        eprintln!(
            "  {}: {}, {}: {what} in {}; {check}",
            r.name,
            units::count(r.files, "file"),
            units::bytes(r.bytes),
            units::seconds(start.elapsed().as_secs_f64())
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct ManifestDigestArgs {
    /// Dataset name (a directory under --root).
    name: String,
    /// Data root.
    #[arg(long, default_value = "datasets/data")]
    root: PathBuf,
    /// Print the manifest itself too.
    #[arg(long)]
    print: bool,
    /// What each line carries: sha256 (`sha256sum`'s lines), or pysum (the byte sum mod
    /// 2^32 that `scripts/pyhash.py --work pysum` prints; its golden value).
    #[arg(long, value_enum, default_value = "sha256")]
    work: manifest::Work,
}

pub fn manifest_digest(a: ManifestDigestArgs) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let m = manifest::manifest_of(&a.root, &a.name, a.work, threads, false)?;
    if a.print {
        print!("{}", m.text);
    }
    println!("{}", m.digest);
    Ok(())
}

#[derive(Debug, Args)]
pub struct EvictArgs {
    /// Files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Append the residency measured after eviction to this JSON-lines file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Eviction method.
    #[arg(long, value_enum, default_value = "fadvise")]
    method: EvictMethod,
}

pub fn evict(a: EvictArgs) -> Result<()> {
    let files = cache::walk_all(&a.paths)?;
    let r = cache::evict(&files, a.method)?;
    if let Some(rec) = a.record {
        ResidencySample::now("evict", r).append_to(&rec)?;
    } else {
        print_residency("after eviction", r);
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct ResidencyArgs {
    /// Files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Append the measurement to this JSON-lines file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// First read back into the page cache what is not resident (a warm run's prepare,
    /// where the kernel pages out idle memory on its own); the sample then says what the
    /// run starts with, and how many pages were read back.
    #[arg(long)]
    top_up: bool,
}

pub fn residency(a: ResidencyArgs) -> Result<()> {
    let files = cache::walk_all(&a.paths)?;
    let (r, read_back) = if a.top_up {
        cache::top_up(&files)?
    } else {
        (cache::residency(&files)?, 0)
    };
    let action = if read_back > 0 { "top-up" } else { "none" };
    let sample = ResidencySample {
        topped_up_pages: read_back,
        ..ResidencySample::now(action, r)
    };
    if let Some(rec) = &a.record {
        sample.append_to(rec)?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&sample)?);
    } else if a.record.is_none() {
        print_residency("residency", r);
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct WarmArgs {
    /// Files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Fail unless at least this percentage ends up resident.
    #[arg(long, default_value_t = 0.0)]
    min_percent: f64,
}

pub fn warm(a: WarmArgs) -> Result<()> {
    let r = race::warm(&a.paths, a.min_percent)?;
    print_residency("after warming", r);
    Ok(())
}

#[derive(Debug, Args)]
pub struct FsCheckArgs {
    /// Directory to check.
    path: PathBuf,
    /// Write, sync, evict and measure a 4 MiB scratch file there.
    #[arg(long)]
    probe: bool,
}

pub fn fs_check(a: FsCheckArgs) -> Result<()> {
    let c = cache::fs_check(&a.path, a.probe)?;
    println!("{}", serde_json::to_string(&c)?);
    Ok(())
}

fn print_residency(label: &str, r: cache::Residency) {
    println!(
        "{label}: {:.1} % resident ({} of {} pages, {})",
        r.percent(),
        r.resident_pages,
        r.total_pages,
        units::count(r.files, "file")
    );
}
