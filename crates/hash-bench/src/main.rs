//! `hash-bench`: the helper binary of `scripts/bench.sh`. One subcommand per step, so
//! the shell script stays readable and each step can be run and tested on its own; one
//! function per subcommand, taking its own `Args` struct. Run `hash-bench --help` for
//! the list.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use hash_bench::cache::{self, EvictMethod, ResidencySample};
use hash_bench::gen::{generate, GenOptions};
use hash_bench::plan::{self, Cache, PlanOptions};
use hash_bench::{
    chart, collect, compare, link, machine, manifest, maxrss, mount, net, plan::programs, race,
    refs, results, spec, verify,
};
use hash_core::units;

/// Helpers for hashrace's benchmark harness (scripts/bench.sh): datasets, page cache,
/// peak memory, machine facts, plans and results.
#[derive(Debug, Parser)]
#[command(name = "hash-bench", version, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Generate datasets from specs (idempotent: complete ones are reused, partial ones repaired).
    Gen(GenArgs),
    /// Print the manifest digest of a generated dataset (SHA-256 of its sha256sum manifest,
    /// or with --work pysum of the byte-sum manifest the Python rows are checked against).
    ManifestDigest(ManifestDigestArgs),
    /// Evict files (recursively) from the page cache; print the residency left.
    Evict(EvictArgs),
    /// Measure how much of the files (recursively) is in the page cache (mincore).
    Residency(ResidencyArgs),
    /// Read files (recursively) into the page cache; print the residency reached.
    Warm(WarmArgs),
    /// Check that a directory can be made cold: refuse tmpfs/ramfs; --probe also tests eviction.
    FsCheck(FsCheckArgs),
    /// Run a command once and report its peak RSS (KiB), or the RSS run of a planned benchmark.
    Maxrss(MaxrssArgs),
    /// Reference: hash a dataset's file sizes in memory (no I/O), one digest per file.
    Ceiling(CeilingArgs),
    /// Reference: open + read + close every regular file (walk included), no hashing.
    ReadFloor(ReadFloorArgs),
    /// Reference: one thread (or -j N) opens, fstats, reads, closes and hashes each
    /// regular file, and does nothing else: the floor of a hasher of small files.
    HashFloor(HashFloorArgs),
    /// Reference: the least work a --cache run does on a tree (walk, stat per file,
    /// fstat, recording a file in the cache), each piece timed alone.
    CacheFloor(CacheFloorArgs),
    /// Check the progress line's time left: each binary hashes a tree with --progress,
    /// cold and warm; the line drawn at 40 % of the run against the time really left.
    EtaCheck(EtaCheckArgs),
    /// Experiment: hash files one way of getting their bytes to SHA-256 (mapped, mapped
    /// and copied, read, read by a second thread); prints sha256sum lines.
    Datapath(DatapathArgs),
    /// Print the time since a Unix time as every line writes durations (`3m05s`).
    #[command(hide = true)]
    Since {
        /// Seconds since 1970 (`date +%s`).
        start: u64,
    },
    // The benchmark sweep of `scripts/bench.sh`, which builds this binary and hands it
    // every argument; its help is the script's (`BenchArgs`' about), so no doc here.
    #[command(hide = true)]
    Bench(Box<hash_bench::sweep::BenchArgs>),
    /// Run a command inside a memory cgroup, given its `cgroup.procs` file (how a
    /// sweep confines a run without code between fork and exec).
    #[command(hide = true)]
    InCgroup {
        procs: PathBuf,
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Hold N MiB of touched memory until stdin closes (for the peak-RSS tests).
    #[command(hide = true)]
    HoldMemory {
        /// MiB to hold.
        mib: u64,
    },
    /// Print machine facts as JSON.
    Machine {
        /// Directory whose filesystem and device to describe.
        #[arg(long, default_value = ".")]
        data_dir: PathBuf,
    },
    /// Print the hashrace binaries, one per line (one per strategy of hash-core).
    Strategies {
        /// Only those that take -j (every one but the serial baseline).
        #[arg(long)]
        parallel: bool,
    },
    /// Plan a sweep; print its work directory on stdout and a summary with an estimate on stderr.
    Plan(Box<PlanArgs>),
    /// Check that every hashrace command of a plan prints the same, expected output.
    Verify(VerifyArgs),
    /// Run a plan's benchmarks under hyperfine (skipping finished ones: a rerun resumes).
    Race(RaceArgs),
    /// Merge a finished work directory into a results file; print the table.
    Collect(CollectArgs),
    /// Validate results files against the schema and its invariants. A directory is
    /// a sweep folder (its `results.json`), or a results tree such as `results/`:
    /// then every path in it outside the layout (an index, the verdict, and sweep
    /// folders of `results.json`, `report.md` and `charts/*.svg`) is refused too.
    Validate {
        /// Results files, sweep folders or results trees.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the JSON Schema of a results file, derived from the types that write it
    /// (`docs/results-schema.json` is this output).
    Schema,
    /// Write a sweep folder's `report.md` and `charts/` from its `results.json`, and
    /// print the winner line of each workload.
    Report {
        /// Sweep folders.
        #[arg(required_unless_present = "update_doc")]
        dirs: Vec<PathBuf>,
        /// Instead, rewrite the `<!-- answer:begin DIR -->` sections of this Markdown
        /// file (DIR relative to the file's folder) from those sweeps' results.
        #[arg(long, conflicts_with = "dirs")]
        update_doc: Option<PathBuf>,
    },
    /// Rewrite v1/v2 results files as self-contained current-schema files, recomputing
    /// every derived number from the raw directory beside each (which must agree).
    Upgrade {
        /// Results files (rewritten in place).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the table of an existing results file.
    Table {
        /// Results file.
        file: PathBuf,
    },
    /// Compare results files (or directories of them) side by side, per dataset and cache state.
    Compare(CompareArgs),
    /// Mount a directory over sshfs with an emulated network link between client and
    /// server (no sshd: OpenSSH's sftp-server on pipes); runs until SIGINT/SIGTERM.
    Mount(MountArgs),
    /// Prepare a run of a planned benchmark on a network location: a fresh mount if
    /// --remount (cold), and a sample of the link's byte counters in its link record.
    NetPrepare {
        /// Work directory of the plan.
        #[arg(long)]
        work: PathBuf,
        /// Benchmark id.
        #[arg(long)]
        id: String,
        /// Replace the mount with a fresh one (a cold run).
        #[arg(long)]
        remount: bool,
        /// Without --remount: first read back through the mount what the client's page
        /// cache no longer holds (the kernel may page out idle cache on its own).
        #[arg(long, conflicts_with = "remount")]
        top_up: bool,
    },
    /// Check that a network location can be mounted here (sshfs, sftp-server, FUSE).
    NetCheck,
    /// Stop the mount of a network plan's work directory, if one runs.
    NetStop {
        /// Work directory of the plan.
        #[arg(long)]
        work: PathBuf,
    },
    /// Draw SVG charts of results files: throughput per dataset and cache state, -j scaling.
    Chart {
        /// Results files or directories of them.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Directory receiving the .svg files.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Debug, Args)]
struct GenArgs {
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

fn gen(a: GenArgs) -> Result<()> {
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
struct ManifestDigestArgs {
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

fn manifest_digest(a: ManifestDigestArgs) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let m = manifest::manifest_of(&a.root, &a.name, a.work, threads, false)?;
    if a.print {
        print!("{}", m.text);
    }
    println!("{}", m.digest);
    Ok(())
}

#[derive(Debug, Args)]
struct EvictArgs {
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

fn evict(a: EvictArgs) -> Result<()> {
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
struct ResidencyArgs {
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

fn residency(a: ResidencyArgs) -> Result<()> {
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
struct WarmArgs {
    /// Files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Fail unless at least this percentage ends up resident.
    #[arg(long, default_value_t = 0.0)]
    min_percent: f64,
}

fn warm(a: WarmArgs) -> Result<()> {
    let r = race::warm(&a.paths, a.min_percent)?;
    print_residency("after warming", r);
    Ok(())
}

#[derive(Debug, Args)]
struct FsCheckArgs {
    /// Directory to check.
    path: PathBuf,
    /// Write, sync, evict and measure a 4 MiB scratch file there.
    #[arg(long)]
    probe: bool,
}

fn fs_check(a: FsCheckArgs) -> Result<()> {
    let c = cache::fs_check(&a.path, a.probe)?;
    println!("{}", serde_json::to_string(&c)?);
    Ok(())
}

#[derive(Debug, Args)]
struct MaxrssArgs {
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

fn maxrss(a: MaxrssArgs) -> Result<()> {
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
struct CeilingArgs {
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
struct DatapathArgs {
    /// How the bytes reach SHA-256.
    #[arg(long, value_enum)]
    way: hash_bench::datapath::Way,
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
struct CacheFloorArgs {
    /// Threads for the `stat` step.
    #[arg(short = 'j', long, default_value_t = 2)]
    jobs: usize,
    /// Where the scratch SQLite file goes (removed after).
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    scratch: PathBuf,
    /// The tree.
    root: PathBuf,
}

fn cache_floor(a: CacheFloorArgs) -> Result<()> {
    // Every directory is kept open while the files are stat-ed.
    hash_core::limits::raise_open_file_limit();
    let f = hash_bench::cachefloor::measure(&a.root, a.jobs, &a.scratch)?;
    let per = |c: hash_bench::cachefloor::Cost| c.cpu / f.files.max(1) as f64 * 1e6;
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
struct EtaCheckArgs {
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

fn eta_check(a: EtaCheckArgs) -> Result<()> {
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
        for binary in hash_bench::plan::programs::hashers() {
            let binary = binary.as_str();
            for _ in 0..a.runs {
                let r = hash_bench::etacheck::check(&bin_dir, binary, &a.root, cold, a.at)?;
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
    match hash_bench::cgroup::parse_size(s)? {
        n @ 4096..=1_073_741_824 => Ok(n),
        _ => Err(format!("buffer {s:?}: between 4K and 1G")),
    }
}

fn datapath(a: DatapathArgs) -> Result<()> {
    use std::io::Write;
    let files = hash_bench::datapath::files(&a.roots)?;
    let digests = hash_bench::datapath::hash_all(&files, a.way, a.buffer as usize, a.jobs)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for ((path, _), d) in files.iter().zip(digests) {
        writeln!(out, "{}  {}", hash_bench::util::hex(&d), path.display())?;
    }
    out.flush()?;
    Ok(())
}

fn ceiling(a: CeilingArgs) -> Result<()> {
    let refs::Algorithm::Sha256 = a.algorithm;
    let spec = spec::Spec::load(&spec::resolve(&a.spec, &a.specs_dir)?)?;
    let files = spec.files();
    let r = refs::ceiling(&files, a.threads, a.limit, a.digests);
    match &r.digests {
        Some(d) => d
            .iter()
            .zip(&files)
            .for_each(|(d, f)| println!("{}  {}/{}", hash_bench::util::hex(d), spec.name, f.rel)),
        None => println!(
            "ceiling sha256: {}, {} bytes, {}, xor {}",
            units::count(r.files as u64, "file"),
            r.bytes,
            units::count(a.threads.max(1) as u64, "thread"),
            hash_bench::util::hex(&r.xor)
        ),
    }
    Ok(())
}

#[derive(Debug, Args)]
struct ReadFloorArgs {
    /// Reader threads.
    #[arg(short, long, default_value_t = 1)]
    jobs: usize,
    /// Directories or files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct HashFloorArgs {
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

fn hash_floor(a: HashFloorArgs) -> Result<()> {
    let work = hash_bench::hashfloor::Work {
        fstat: !a.no_fstat,
        hash: !a.no_hash,
    };
    let r = hash_bench::hashfloor::run(&a.paths, work, a.jobs);
    println!(
        "hash-floor: {}, {} bytes, {}, xor {}",
        units::count(r.files as u64, "file"),
        r.bytes,
        units::count(r.errors as u64, "error"),
        hash_bench::util::hex(&r.xor)
    );
    if r.errors > 0 {
        bail!("{} files or directories could not be read", r.errors);
    }
    Ok(())
}

fn read_floor(a: ReadFloorArgs) -> Result<()> {
    let r = refs::read_floor(&a.paths, a.jobs);
    println!(
        "read-floor: {}, {} bytes, {}",
        units::count(r.files as u64, "file"),
        r.bytes,
        units::count(r.errors as u64, "error")
    );
    if r.errors > 0 {
        bail!("{} files or directories could not be read", r.errors);
    }
    Ok(())
}

fn strategies(parallel: bool) {
    let wanted = hash_core::Strategy::ALL
        .into_iter()
        .filter(|s| !parallel || s.is_parallel());
    for s in wanted {
        println!("{}", programs::hasher_binary(s));
    }
}

#[derive(Debug, Args)]
struct PlanArgs {
    #[command(flatten)]
    options: PlanOptions,
    /// Discard finished benchmarks of an earlier, interrupted run of the same plan.
    #[arg(long)]
    fresh: bool,
}

fn plan(a: PlanArgs) -> Result<()> {
    let opts = a.options.resolve()?;
    let plan = plan::build(&opts)?;
    let work = plan::work_dir(&opts.work_parent, &plan);
    if a.fresh && work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    let done = plan
        .benchmarks
        .iter()
        .filter(|b| race::is_done(&work, &b.id))
        .count();
    plan::write(&plan, &work)?;
    eprint!("{}", plan::summary(&plan, &[]));
    if done > 0 {
        eprintln!(
            "  resuming: {done} of {} benchmarks already done in {} (pass --fresh to start over)",
            plan.benchmarks.len(),
            work.display()
        );
    }
    println!("{}", work.display());
    Ok(())
}

#[derive(Debug, Args)]
struct VerifyArgs {
    /// Work directory of the plan.
    #[arg(long)]
    work: PathBuf,
    /// Datasets to verify (default: all of the plan's).
    datasets: Vec<String>,
}

fn verify(a: VerifyArgs) -> Result<()> {
    let plan = plan::read(&a.work)?;
    let names: Vec<String> = if a.datasets.is_empty() {
        plan.datasets.iter().map(|d| d.spec.name.clone()).collect()
    } else {
        a.datasets
    };
    for n in &names {
        let v = verify::verify(&plan, &a.work, n)?;
        let against = if v.expected_manifest_sha256.is_some() {
            "the committed digest"
        } else {
            "each other (no committed digest)"
        };
        let pysum = if v.pysum_output_sha256.is_some() {
            "; the pysum rows agree with hash-bench's own byte sums"
        } else {
            ""
        };
        eprintln!(
            "  {n}: {} commands agree ({} lines) and match {against}{pysum}",
            v.commands.len(),
            v.lines
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
struct RaceArgs {
    /// Work directory of the plan.
    #[arg(long)]
    work: PathBuf,
    /// hyperfine executable.
    #[arg(long, default_value = "hyperfine")]
    hyperfine: OsString,
}

fn race(a: RaceArgs) -> Result<()> {
    let work = std::fs::canonicalize(&a.work).with_context(|| a.work.display().to_string())?;
    race::race(&work, &std::env::current_exe()?, &a.hyperfine)
}

#[derive(Debug, Args)]
struct CollectArgs {
    /// Work directory of the plan.
    #[arg(long)]
    work: PathBuf,
    /// Directory receiving the results file and its raw directory.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// hyperfine executable (for its version).
    #[arg(long, default_value = "hyperfine")]
    hyperfine: String,
    /// Then validate the results file, as `hash-bench validate` does.
    #[arg(long)]
    validate: bool,
    /// Then write its report and charts into its folder, as `hash-bench report` does (a
    /// drawing failure is a warning: it does not lose a sweep).
    #[arg(long)]
    charts: bool,
}

fn collect(a: CollectArgs) -> Result<()> {
    let (file, r) = collect::collect(&a.work, &a.out, &a.hyperfine)?;
    print!("{}", collect::table(&r));
    println!("\nresults: {}", file.display());
    if a.validate {
        validate(std::slice::from_ref(&file))?;
    }
    if a.charts {
        let dir = file.parent().expect("a sweep folder");
        // A drawing failure is a warning: it does not lose a sweep.
        match hash_bench::report::write_for(&r, dir) {
            Ok(report) => report_lines(dir, &report)?,
            Err(e) => {
                eprintln!("hash-bench: {e:#}");
                println!("warning: no report (hash-bench report {})", dir.display());
            }
        }
    }
    Ok(())
}

/// The winner lines of the sweep in `dir`, and where its report is.
fn report_lines(dir: &Path, report: &Path) -> Result<()> {
    let r = results::validate_file(&dir.join(hash_bench::layout::RESULTS_FILE))?;
    println!("\nThe answer ({}):", hash_bench::report::machine_line(&r));
    for line in hash_bench::report::winner_lines(&r) {
        println!("  {line}");
    }
    println!("report: {}", report.display());
    Ok(())
}

fn validate(paths: &[PathBuf]) -> Result<()> {
    let mut files = Vec::new();
    for p in paths {
        if !p.is_dir() {
            files.push(p.clone());
        } else if p.join(hash_bench::layout::RESULTS_FILE).is_file() {
            files.push(p.join(hash_bench::layout::RESULTS_FILE));
        } else {
            let (sweeps, stray) = hash_bench::layout::check(p)?;
            if !stray.is_empty() {
                let list: Vec<String> =
                    stray.iter().map(|s| format!("  {}", s.display())).collect();
                bail!(
                    "{}: outside the layout (README.md, VERDICT.md, and sweep folders of \
                     results.json, report.md and charts/*.svg):\n{}",
                    p.display(),
                    list.join("\n")
                );
            }
            files.extend(
                sweeps
                    .iter()
                    .map(|d| d.join(hash_bench::layout::RESULTS_FILE)),
            );
        }
    }
    for f in &files {
        let r = results::validate_file(f)?;
        let invalid = r.benchmarks.iter().filter(|b| !b.valid).count();
        println!(
            "{}: valid schema v{} ({} benchmarks, {} datasets, {invalid} flagged invalid)",
            f.display(),
            r.schema_version,
            r.benchmarks.len(),
            r.datasets.len()
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
struct CompareArgs {
    /// Results files or directories of them; one column each.
    #[arg(required_unless_present = "update_doc")]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "markdown")]
    format: compare::Format,
    /// Write the page to this file instead of standard output.
    #[arg(short, long, conflicts_with = "update_doc")]
    output: Option<PathBuf>,
    /// Regenerate the `<!-- compare:begin FILES -->` sections of this Markdown file.
    #[arg(long, conflicts_with_all = ["files", "format"])]
    update_doc: Option<PathBuf>,
    /// With --update-doc: change nothing, fail if the sections are out of date.
    #[arg(long, requires = "update_doc")]
    check: bool,
}

fn compare(a: CompareArgs) -> Result<()> {
    match a.update_doc {
        Some(doc) => compare::run_update_doc(&doc, a.check),
        None => compare::run_compare(&a.files, a.format, a.output.as_deref()),
    }
}

#[derive(Debug, Args)]
struct MountArgs {
    /// The link: raw (no shaping), lan (1 GbE: 0.2 ms RTT, 117 MiB/s), wan (office to
    /// cloud: 20 ms RTT, 100 Mbit/s).
    #[arg(long, value_enum)]
    profile: link::Profile,
    /// One-way delay in milliseconds, added in each direction (replaces the profile's).
    #[arg(long)]
    delay_ms: Option<f64>,
    /// Bandwidth cap in MiB/s in each direction, 0 for none (replaces the profile's).
    #[arg(long)]
    rate_mibps: Option<f64>,
    /// Keep this JSON file up to date with the bytes that crossed each way.
    #[arg(long)]
    counters: Option<PathBuf>,
    /// Join client and server pipes directly, with no relay (to measure the relay's cost).
    #[arg(long, hide = true, conflicts_with_all = ["counters", "delay_ms", "rate_mibps"])]
    direct: bool,
    /// The directory to serve.
    source: PathBuf,
    /// An empty directory to mount it on.
    mountpoint: PathBuf,
}

/// Mount until SIGINT or SIGTERM, which reach the mount's loop as a readable socket.
fn mount(a: MountArgs) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    if a.delay_ms.is_some_and(|d| !(d >= 0.0 && d.is_finite())) {
        bail!("--delay-ms must be a finite number of milliseconds, 0 or more");
    }
    if a.rate_mibps.is_some_and(|r| !(r >= 0.0 && r.is_finite())) {
        bail!("--rate-mibps must be a finite rate, 0 (no cap) or more");
    }
    let (stop, signalled) = std::os::unix::net::UnixStream::pair()?;
    signal_hook::low_level::pipe::register(SIGINT, signalled.try_clone()?)?;
    signal_hook::low_level::pipe::register(SIGTERM, signalled)?;
    let opts = mount::MountOptions {
        shape: a.profile.shape().with_overrides(a.delay_ms, a.rate_mibps),
        profile: a.profile,
        source: a.source,
        mountpoint: a.mountpoint,
        counters: a.counters,
        direct: a.direct,
    };
    use std::os::fd::AsFd;
    mount::run(&opts, stop.as_fd())
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

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Cmd::Gen(a) => gen(a),
        Cmd::ManifestDigest(a) => manifest_digest(a),
        Cmd::Evict(a) => evict(a),
        Cmd::Residency(a) => residency(a),
        Cmd::Warm(a) => warm(a),
        Cmd::FsCheck(a) => fs_check(a),
        Cmd::Maxrss(a) => maxrss(a),
        Cmd::NetPrepare {
            work,
            id,
            remount,
            top_up,
        } => net::prepare(&work, &id, remount, top_up),
        Cmd::NetCheck => mount::preflight().map(drop),
        Cmd::NetStop { work } => hash_bench::location::Daemon::of(&work).stop().map(drop),
        Cmd::Ceiling(a) => ceiling(a),
        Cmd::ReadFloor(a) => read_floor(a),
        Cmd::HashFloor(a) => hash_floor(a),
        Cmd::Datapath(a) => datapath(a),
        Cmd::CacheFloor(a) => cache_floor(a),
        Cmd::EtaCheck(a) => eta_check(a),
        Cmd::HoldMemory { mib } => refs::hold_memory(mib),
        Cmd::Bench(_) => unreachable!("main runs the sweep"),
        Cmd::InCgroup { procs, command } => Err(hash_bench::cgroup::exec_in(
            &procs,
            &command[0],
            &command[1..],
        )),
        Cmd::Since { start } => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let since = now.saturating_sub(std::time::Duration::from_secs(start));
            println!("{}", units::duration(since));
            Ok(())
        }
        Cmd::Machine { data_dir } => {
            let m = serde_json::to_string_pretty(&machine::collect(&data_dir))?;
            println!("{m}");
            Ok(())
        }
        Cmd::Strategies { parallel } => {
            strategies(parallel);
            Ok(())
        }
        Cmd::Plan(a) => plan(*a),
        Cmd::Verify(a) => verify(a),
        Cmd::Race(a) => race(a),
        Cmd::Collect(a) => collect(a),
        Cmd::Validate { files } => validate(&files),
        Cmd::Schema => {
            let schema = hash_bench::results::json_schema();
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(())
        }
        Cmd::Report { dirs, update_doc } => {
            if let Some(doc) = update_doc {
                let text = std::fs::read_to_string(&doc)
                    .with_context(|| format!("reading {}", doc.display()))?;
                let root = doc.parent().unwrap_or(Path::new("."));
                std::fs::write(&doc, hash_bench::report::update_doc(&text, root)?)?;
                println!("{}: answer tables regenerated", doc.display());
            }
            for d in &dirs {
                let report = hash_bench::report::write(d)?;
                report_lines(d, &report)?;
            }
            Ok(())
        }
        Cmd::Upgrade { files } => {
            for f in &files {
                let r = hash_bench::upgrade::upgrade_file(f)?;
                println!(
                    "{}: upgraded to schema v{} ({} benchmarks recomputed)",
                    f.display(),
                    r.schema_version,
                    r.benchmarks.len()
                );
            }
            Ok(())
        }
        Cmd::Table { file } => {
            let r = results::validate_file(&file)?;
            print!("{}", collect::table(&r));
            Ok(())
        }
        Cmd::Compare(a) => compare(a),
        Cmd::Mount(a) => mount(a),
        Cmd::Chart { files, out } => chart::run_chart(&files, &out),
    }
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Cmd::Bench(a) = cli.command {
        return bench(*a);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hash-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `scripts/bench.sh`'s sweep, its errors named as the script's: exit 130 when a
/// signal stopped it (as a shell's would), 1 when a step or a location failed.
fn bench(a: hash_bench::sweep::BenchArgs) -> ExitCode {
    use std::sync::{atomic::AtomicBool, Arc};
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&flag)) {
            eprintln!("bench.sh: {e}");
            return ExitCode::FAILURE;
        }
    }
    let stop = hash_bench::sweep::Interrupt(Arc::clone(&flag));
    match hash_bench::sweep::run(a, stop) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench.sh: {e:#}");
            if flag.load(std::sync::atomic::Ordering::Relaxed) {
                ExitCode::from(130)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
