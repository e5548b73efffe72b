//! The measuring subcommands: peak RSS (`maxrss`), the reference rows (`ceiling`,
//! `read-floor`, `hash-floor`), and the experiments and checks run beside a sweep
//! (`datapath`, `cache-floor`, `eta-check`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::cache;
use crate::plan::{self, Cache};
use crate::{maxrss, net, refs, spec};
use hash_core::units;

#[derive(Debug, Args)]
pub struct MaxrssArgs {
    /// Write the sample as JSON here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Work directory of a plan (with --id).
    #[arg(long, requires = "id")]
    work: Option<PathBuf>,
    /// Benchmark id in that plan: runs its command in the data root, evicting first if cold.
    #[arg(long, requires = "work")]
    id: Option<String>,
    /// The command, after `--`.
    #[arg(last = true)]
    command: Vec<OsString>,
}

pub fn maxrss(a: MaxrssArgs) -> Result<()> {
    let sample = match (a.work, a.id) {
        (Some(work), Some(id)) => {
            let plan = plan::read(&work)?;
            let b = plan.benchmark(&id)?;
            let root = Path::new(&plan.data_root);
            let before = if b.cache == Cache::Cold && plan.location.is_network() {
                net::remount(&plan, &work, &b.dataset)?;
                "remount"
            } else if b.cache == Cache::Cold {
                let files = cache::walk_files(&root.join(&b.dataset))?;
                cache::evict(&files, plan.eviction)?;
                "evict"
            } else {
                "none"
            };
            let argv: Vec<OsString> = b.argv.iter().map(OsString::from).collect();
            let s = maxrss::measure(&argv, Some(root), before)?;
            let out = a.out.unwrap_or_else(|| plan::rss_path(&work, &id));
            write_json(&out, &s)?;
            s
        }
        _ => {
            let s = maxrss::measure(&a.command, None, "none")?;
            if let Some(out) = &a.out {
                write_json(out, &s)?;
            }
            s
        }
    };
    println!(
        "max RSS {} KiB (exit {:?}, {:.3} s)",
        sample.max_rss_kib, sample.exit_code, sample.wall_s
    );
    if sample.exit_code != Some(0) {
        bail!("the command failed");
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct CeilingArgs {
    /// Hash algorithm (the one hash-core uses).
    #[arg(value_enum)]
    algorithm: refs::Algorithm,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Data in the core's cache (compute) or streamed from memory (stream).
    #[arg(long, value_enum, default_value_t = refs::Limit::Compute)]
    limit: refs::Limit,
    /// Dataset whose file sizes to hash (name in --specs-dir, or a spec path).
    #[arg(long)]
    spec: String,
    /// Directory of the committed specs.
    #[arg(long, default_value = "datasets")]
    specs_dir: PathBuf,
    /// Print every file's digest (`sha256sum` format, spec order) instead of a summary.
    #[arg(long)]
    digests: bool,
}

#[derive(Debug, Args)]
pub struct DatapathArgs {
    /// How the bytes reach SHA-256.
    #[arg(long, value_enum)]
    way: crate::datapath::Way,
    /// Buffer size (e.g. 64K, 256K, 1M): the read or copy buffer.
    #[arg(long, default_value = "256K", value_parser = parse_buffer)]
    buffer: u64,
    /// Threads hashing files (largest first).
    #[arg(short = 'j', long, default_value_t = 1)]
    jobs: usize,
    /// Files and directories (recursively, symbolic links not followed).
    #[arg(required = true)]
    roots: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CacheFloorArgs {
    /// Threads for the `stat` step.
    #[arg(short = 'j', long, default_value_t = 2)]
    jobs: usize,
    /// Where the scratch SQLite file goes (removed after).
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    scratch: PathBuf,
    /// The tree.
    root: PathBuf,
}

pub fn cache_floor(a: CacheFloorArgs) -> Result<()> {
    // Every directory is kept open while the files are stat-ed.
    hash_core::limits::raise_open_file_limit();
    let f = crate::cachefloor::measure(&a.root, a.jobs, &a.scratch)?;
    let per = |c: crate::cachefloor::Cost| c.cpu / f.files.max(1) as f64 * 1e6;
    println!("cache-floor: {}", units::count(f.files as u64, "file"));
    println!(
        "  walk (readdir, one thread): {:.3} s wall, {:.3} s CPU",
        f.walk.wall, f.walk.cpu
    );
    println!(
        "  stat per file (-j {}): {:.3} s wall, {:.3} s CPU ({:.3} µs CPU a file)",
        a.jobs,
        f.stat.wall,
        f.stat.cpu,
        per(f.stat)
    );
    println!("  fstat of an open file: {:.3} µs CPU", f.fstat_each * 1e6);
    println!(
        "  record (the cache's store, key order): {:.3} s wall, {:.3} s CPU ({:.3} µs CPU a file)",
        f.insert.wall,
        f.insert.cpu,
        per(f.insert)
    );
    Ok(())
}

#[derive(Debug, Args)]
pub struct EtaCheckArgs {
    /// Where the hash-* binaries are [default: beside this one].
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The point of the run whose line is read back, as a fraction of the run.
    #[arg(long, default_value_t = 0.4)]
    at: f64,
    /// Runs of each binary in each cache state.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// The tree (e.g. made by `hash-bench gen datasets/eta.json`).
    root: PathBuf,
}

pub fn eta_check(a: EtaCheckArgs) -> Result<()> {
    let bin_dir = match a.bin_dir {
        Some(d) => d,
        None => std::env::current_exe()?
            .parent()
            .context("the directory of hash-bench")?
            .to_path_buf(),
    };
    let mut outside = 0;
    println!("| cache | binary | run | line at | left | ETA shown | shown ÷ left |");
    println!("|---|---|---|---|---|---|---|");
    for cold in [false, true] {
        for binary in crate::plan::programs::hashers() {
            let binary = binary.as_str();
            for _ in 0..a.runs {
                let r = crate::etacheck::check(&bin_dir, binary, &a.root, cold, a.at)?;
                let ratio = r.ratio();
                outside += usize::from(!ratio.is_some_and(|x| (0.5..=2.0).contains(&x)));
                println!(
                    "| {} | {binary} | {:.2} s | {:.2} s | {:.2} s | {} | {} |",
                    if cold { "cold" } else { "warm" },
                    r.total.as_secs_f64(),
                    r.at.as_secs_f64(),
                    (r.total - r.at).as_secs_f64(),
                    r.shown.map_or("--:--".into(), |s| format!("{s:.1} s")),
                    ratio.map_or("—".into(), |x| format!("{x:.2}")),
                );
            }
        }
    }
    if outside > 0 {
        anyhow::bail!("{outside} readings outside a factor of 2");
    }
    Ok(())
}

fn parse_buffer(s: &str) -> Result<u64, String> {
    match crate::cgroup::parse_size(s)? {
        n @ 4096..=1_073_741_824 => Ok(n),
        _ => Err(format!("buffer {s:?}: between 4K and 1G")),
    }
}

pub fn datapath(a: DatapathArgs) -> Result<()> {
    use std::io::Write;
    let files = crate::datapath::files(&a.roots)?;
    let digests = crate::datapath::hash_all(&files, a.way, a.buffer as usize, a.jobs)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for ((path, _), d) in files.iter().zip(digests) {
        writeln!(out, "{}  {}", crate::util::hex(&d), path.display())?;
    }
    out.flush()?;
    Ok(())
}

pub fn ceiling(a: CeilingArgs) -> Result<()> {
    let refs::Algorithm::Sha256 = a.algorithm;
    let spec = spec::Spec::load(&spec::resolve(&a.spec, &a.specs_dir)?)?;
    let files = spec.files();
    let r = refs::ceiling(&files, a.threads, a.limit, a.digests);
    match &r.digests {
        Some(d) => d
            .iter()
            .zip(&files)
            .for_each(|(d, f)| println!("{}  {}/{}", crate::util::hex(d), spec.name, f.rel)),
        None => println!(
            "ceiling sha256: {}, {} bytes, {}, xor {}",
            units::count(r.files as u64, "file"),
            r.bytes,
            units::count(a.threads.max(1) as u64, "thread"),
            crate::util::hex(&r.xor)
        ),
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct ReadFloorArgs {
    /// Reader threads.
    #[arg(short, long, default_value_t = 1)]
    jobs: usize,
    /// Directories or files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HashFloorArgs {
    /// Leave out the fstat of each opened file.
    #[arg(long)]
    no_fstat: bool,
    /// Leave out SHA-256: open, read and close only.
    #[arg(long)]
    no_hash: bool,
    /// Threads, taking turns at the roots' files (256 at a time) and subdirectories.
    #[arg(short, long, default_value_t = 1)]
    jobs: usize,
    /// Directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn hash_floor(a: HashFloorArgs) -> Result<()> {
    let work = crate::hashfloor::Work {
        fstat: !a.no_fstat,
        hash: !a.no_hash,
    };
    let r = crate::hashfloor::run(&a.paths, work, a.jobs);
    println!(
        "hash-floor: {}, {} bytes, {}, xor {}",
        units::count(r.files, "file"),
        r.bytes,
        units::count(r.errors, "error"),
        crate::util::hex(&r.xor)
    );
    if r.errors > 0 {
        bail!("{} files or directories could not be read", r.errors);
    }
    Ok(())
}

pub fn read_floor(a: ReadFloorArgs) -> Result<()> {
    let r = refs::read_floor(&a.paths, a.jobs);
    println!(
        "read-floor: {}, {} bytes, {}",
        units::count(r.files, "file"),
        r.bytes,
        units::count(r.errors, "error")
    );
    if r.errors > 0 {
        bail!("{} files or directories could not be read", r.errors);
    }
    Ok(())
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
