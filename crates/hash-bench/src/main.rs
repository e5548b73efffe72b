//! `hash-bench`: the helper binary of `scripts/bench.sh`. One subcommand per step, so
//! the shell script stays readable and each step can be run and tested on its own.
//! Run `hash-bench --help` for the list.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use hash_bench::cache::{self, EvictMethod, ResidencySample};
use hash_bench::gen::{generate, GenOptions};
use hash_bench::plan::{self, Cache, PeerSelection, PlanOptions, Sweep};
use hash_bench::util::{human_bytes, human_secs};
use hash_bench::{chart, collect, compare, machine, manifest, maxrss, refs, results, spec, verify};

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
    Gen {
        /// Specs: names looked up in --specs-dir, or paths to .json files.
        #[arg(required = true)]
        specs: Vec<String>,
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
    },
    /// Print the manifest digest of a generated dataset (SHA-256 of its sha256sum manifest).
    ManifestDigest {
        /// Dataset name (a directory under --root).
        name: String,
        /// Data root.
        #[arg(long, default_value = "datasets/data")]
        root: PathBuf,
        /// Print the manifest itself too.
        #[arg(long)]
        print: bool,
    },
    /// Evict files (recursively) from the page cache; print the residency left.
    Evict {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Append the residency measured after eviction to this JSON-lines file.
        #[arg(long)]
        record: Option<PathBuf>,
        /// Eviction method.
        #[arg(long, value_enum, default_value = "fadvise")]
        method: EvictMethod,
    },
    /// Measure how much of the files (recursively) is in the page cache (mincore).
    Residency {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Append the measurement to this JSON-lines file.
        #[arg(long)]
        record: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Read files (recursively) into the page cache; print the residency reached.
    Warm {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Fail unless at least this percentage ends up resident.
        #[arg(long, default_value_t = 0.0)]
        min_percent: f64,
    },
    /// Check that a directory can be made cold: refuse tmpfs/ramfs; --probe also tests eviction.
    FsCheck {
        /// Directory to check.
        path: PathBuf,
        /// Write, sync, evict and measure a 4 MiB scratch file there.
        #[arg(long)]
        probe: bool,
    },
    /// Run a command once and report its peak RSS (KiB), or the RSS run of a planned benchmark.
    Maxrss {
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
    },
    /// Reference: hash a dataset's file sizes in memory (no I/O), one digest per file.
    Ceiling {
        /// Hash algorithm (the one hash-core uses).
        #[arg(value_enum)]
        algorithm: refs::Algorithm,
        /// Worker threads.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Dataset whose file sizes to hash (name in --specs-dir, or a spec path).
        #[arg(long)]
        spec: String,
        /// Directory of the committed specs.
        #[arg(long, default_value = "datasets")]
        specs_dir: PathBuf,
        /// Print every file's digest (`sha256sum` format, spec order) instead of a summary.
        #[arg(long)]
        digests: bool,
    },
    /// Reference: open + read + close every regular file (walk included), no hashing.
    ReadFloor {
        /// Reader threads.
        #[arg(short, long, default_value_t = 1)]
        jobs: usize,
        /// Directories or files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
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
    /// Plan a sweep; print its work directory on stdout and a summary with an estimate on stderr.
    Plan {
        /// The sweep.
        #[arg(long, value_enum, default_value = "default")]
        sweep: Sweep,
        /// Datasets instead of the sweep's (comma-separated names or spec paths).
        #[arg(long, value_delimiter = ',')]
        datasets: Option<Vec<String>>,
        /// Datasets to add to the sweep's (comma-separated), e.g. the optional `big`.
        #[arg(long, value_delimiter = ',')]
        extra_datasets: Vec<String>,
        /// Directory of the committed specs.
        #[arg(long, default_value = "datasets")]
        specs_dir: PathBuf,
        /// Data root (where the datasets are generated; commands run there).
        #[arg(long, default_value = "datasets/data")]
        data_root: PathBuf,
        /// Directory holding hash-serial, hash-threads, hash-procs, hash-async.
        #[arg(long)]
        bin_dir: PathBuf,
        /// This binary, as prepare commands should call it (default: this executable).
        #[arg(long)]
        hash_bench: Option<PathBuf>,
        /// Job counts to sweep, comma-separated (default: available CPUs).
        #[arg(long, value_delimiter = ',')]
        jobs: Option<Vec<u32>>,
        /// Peers: auto (sha256sum, plus rhash/hashdeep/b3sum if installed), none, or a list.
        #[arg(long, default_value = "auto")]
        peers: PeerSelection,
        /// Skip warm runs.
        #[arg(long)]
        no_warm: bool,
        /// Skip cold runs.
        #[arg(long)]
        no_cold: bool,
        /// Eviction method for cold runs.
        #[arg(long, value_enum, default_value = "fadvise")]
        eviction: EvictMethod,
        /// Harness repository (for the commit).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// Parent of the work directory.
        #[arg(long, default_value = "results/tmp")]
        work_parent: PathBuf,
        /// Discard finished benchmarks of an earlier, interrupted run of the same plan.
        #[arg(long)]
        fresh: bool,
        /// Leave out the Python reference programs (raced when python3 is installed).
        #[arg(long)]
        no_python: bool,
    },
    /// Check that every hashrace command of a plan prints the same, expected output.
    Verify {
        /// Work directory of the plan.
        #[arg(long)]
        work: PathBuf,
        /// Datasets to verify (default: all of the plan's).
        datasets: Vec<String>,
    },
    /// Merge a finished work directory into a results file; print the table.
    Collect {
        /// Work directory of the plan.
        #[arg(long)]
        work: PathBuf,
        /// Directory receiving the results file and its raw directory.
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// hyperfine executable (for its version).
        #[arg(long, default_value = "hyperfine")]
        hyperfine: String,
    },
    /// Validate results files against the schema and its invariants.
    Validate {
        /// Results files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the table of an existing results file.
    Table {
        /// Results file.
        file: PathBuf,
    },
    /// Compare results files (or directories of them) side by side, per dataset and cache state.
    Compare {
        /// Results files or directories of them; one column each.
        #[arg(required_unless_present = "update_doc")]
        files: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "markdown")]
        format: compare::Format,
        /// Regenerate the `<!-- compare:begin FILES -->` sections of this Markdown file.
        #[arg(long, conflicts_with_all = ["files", "format"])]
        update_doc: Option<PathBuf>,
        /// With --update-doc: change nothing, fail if the sections are out of date.
        #[arg(long, requires = "update_doc")]
        check: bool,
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

fn print_residency(label: &str, r: cache::Residency) {
    println!(
        "{label}: {:.1} % resident ({} of {} pages, {} files)",
        r.percent(),
        r.resident_pages,
        r.total_pages,
        r.files
    );
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Cmd::Gen {
            specs,
            root,
            specs_dir,
            threads,
            force,
            quiet,
        } => {
            let mut opts = GenOptions {
                force,
                progress: !quiet,
                ..GenOptions::default()
            };
            if let Some(t) = threads {
                opts.threads = t.max(1);
            }
            for s in &specs {
                let spec = spec::Spec::load(&spec::resolve(s, &specs_dir)?)?;
                let start = std::time::Instant::now();
                let r = generate(&spec, &root, &opts)?;
                let what = if r.generated_files == 0 {
                    "reused".to_string()
                } else {
                    format!(
                        "generated {} files, {}",
                        r.generated_files,
                        human_bytes(r.generated_bytes)
                    )
                };
                let check = match r.matches_expected {
                    Some(true) => "digest matches the committed one".to_string(),
                    Some(false) => "DIGEST MISMATCH".to_string(),
                    None => format!("no committed digest; manifest sha256 {}", r.manifest_sha256),
                };
                eprintln!(
                    "  {}: {} files, {}: {what} in {}; {check}",
                    r.name,
                    r.files,
                    human_bytes(r.bytes),
                    human_secs(start.elapsed().as_secs_f64())
                );
            }
        }
        Cmd::ManifestDigest { name, root, print } => {
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
            let m = manifest::manifest(&root, &name, threads, false)?;
            if print {
                print!("{}", m.text);
            }
            println!("{}", m.digest);
        }
        Cmd::Evict {
            paths,
            record,
            method,
        } => {
            let files = cache::walk_all(&paths)?;
            let r = cache::evict(&files, method)?;
            if let Some(rec) = record {
                ResidencySample::now("evict", r).append_to(&rec)?;
            } else {
                print_residency("after eviction", r);
            }
        }
        Cmd::Residency {
            paths,
            record,
            json,
        } => {
            let files = cache::walk_all(&paths)?;
            let r = cache::residency(&files)?;
            let sample = ResidencySample::now("none", r);
            if let Some(rec) = &record {
                sample.append_to(rec)?;
            }
            if json {
                println!("{}", serde_json::to_string(&sample)?);
            } else if record.is_none() {
                print_residency("residency", r);
            }
        }
        Cmd::Warm { paths, min_percent } => {
            let files = cache::walk_all(&paths)?;
            let r = cache::warm(&files)?;
            print_residency("after warming", r);
            if r.percent() < min_percent {
                bail!(
                    "only {:.1} % resident after reading everything (need {min_percent} %): not enough memory for a warm run?",
                    r.percent()
                );
            }
        }
        Cmd::FsCheck { path, probe } => {
            let c = cache::fs_check(&path, probe)?;
            println!("{}", serde_json::to_string(&c)?);
        }
        Cmd::Maxrss {
            out,
            work,
            id,
            command,
        } => {
            let sample = match (work, id) {
                (Some(work), Some(id)) => {
                    let plan = plan::read(&work)?;
                    let b = plan
                        .benchmarks
                        .iter()
                        .find(|b| b.id == id)
                        .with_context(|| format!("no benchmark {id} in the plan"))?;
                    let root = Path::new(&plan.data_root);
                    let before = if b.cache == Cache::Cold {
                        let files = cache::walk_files(&root.join(&b.dataset))?;
                        cache::evict(&files, plan.eviction)?;
                        "evict"
                    } else {
                        "none"
                    };
                    let argv: Vec<OsString> = b.argv.iter().map(OsString::from).collect();
                    let s = maxrss::measure(&argv, Some(root), before)?;
                    let out = out.unwrap_or_else(|| plan::rss_path(&work, &id));
                    write_json(&out, &s)?;
                    s
                }
                _ => {
                    let s = maxrss::measure(&command, None, "none")?;
                    if let Some(out) = &out {
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
        }
        Cmd::Ceiling {
            algorithm: refs::Algorithm::Sha256,
            threads,
            spec,
            specs_dir,
            digests,
        } => {
            let spec = spec::Spec::load(&spec::resolve(&spec, &specs_dir)?)?;
            let files = spec.files();
            let r = refs::ceiling(&files, threads, digests);
            match &r.digests {
                Some(d) => d.iter().zip(&files).for_each(|(d, f)| {
                    println!("{}  {}/{}", hash_bench::util::hex(d), spec.name, f.rel)
                }),
                None => println!(
                    "ceiling sha256: {} files, {} bytes, {} threads, xor {}",
                    r.files,
                    r.bytes,
                    threads.max(1),
                    hash_bench::util::hex(&r.xor)
                ),
            }
        }
        Cmd::ReadFloor { jobs, paths } => {
            let r = refs::read_floor(&paths, jobs);
            println!(
                "read-floor: {} files, {} bytes, {} errors",
                r.files, r.bytes, r.errors
            );
            if r.errors > 0 {
                bail!("{} files or directories could not be read", r.errors);
            }
        }
        Cmd::HoldMemory { mib } => refs::hold_memory(mib)?,
        Cmd::Machine { data_dir } => {
            println!(
                "{}",
                serde_json::to_string_pretty(&machine::collect(&data_dir))?
            );
        }
        Cmd::Plan {
            sweep,
            datasets,
            extra_datasets,
            specs_dir,
            data_root,
            bin_dir,
            hash_bench,
            jobs,
            peers,
            no_warm,
            no_cold,
            eviction,
            repo,
            work_parent,
            fresh,
            no_python,
        } => {
            if no_warm && no_cold {
                bail!("--no-warm and --no-cold leave nothing to measure");
            }
            let abs =
                |p: PathBuf| std::fs::canonicalize(&p).with_context(|| format!("{}", p.display()));
            std::fs::create_dir_all(&data_root)?;
            std::fs::create_dir_all(&work_parent)?;
            let hash_bench = match hash_bench {
                Some(p) => abs(p)?,
                None => std::env::current_exe()?,
            };
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            let mut datasets = datasets
                .unwrap_or_else(|| sweep.datasets().iter().map(|s| s.to_string()).collect());
            datasets.extend(extra_datasets);
            let opts = PlanOptions {
                sweep,
                datasets: Some(datasets),
                specs_dir,
                data_root: abs(data_root)?,
                bin_dir: abs(bin_dir)?,
                hash_bench,
                jobs: jobs.unwrap_or_else(|| vec![cores]),
                peers,
                warm: !no_warm,
                cold: !no_cold,
                eviction,
                repo: abs(repo)?,
                work_parent: abs(work_parent)?,
                python: !no_python,
            };
            let plan = plan::build(&opts)?;
            let work = plan::work_dir(&opts.work_parent, &plan);
            if fresh && work.exists() {
                std::fs::remove_dir_all(&work)?;
            }
            let done = plan
                .benchmarks
                .iter()
                .filter(|b| plan::export_path(&work, &b.id).is_file())
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
        }
        Cmd::Verify { work, datasets } => {
            let plan = plan::read(&work)?;
            let names: Vec<String> = if datasets.is_empty() {
                plan.datasets.iter().map(|d| d.spec.name.clone()).collect()
            } else {
                datasets
            };
            for n in &names {
                let v = verify::verify(&plan, &work, n)?;
                let against = if v.expected_manifest_sha256.is_some() {
                    "the committed digest"
                } else {
                    "each other (no committed digest)"
                };
                eprintln!(
                    "  {n}: {} commands agree ({} lines) and match {against}",
                    v.commands.len(),
                    v.lines
                );
            }
        }
        Cmd::Collect {
            work,
            out,
            hyperfine,
        } => {
            let (file, r) = collect::collect(&work, &out, &hyperfine)?;
            print!("{}", collect::table(&r));
            println!("\nresults: {}", file.display());
        }
        Cmd::Validate { files } => {
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
        }
        Cmd::Table { file } => {
            let r = results::validate_file(&file)?;
            print!("{}", collect::table(&r));
        }
        Cmd::Compare {
            files,
            format,
            update_doc,
            check,
        } => match update_doc {
            Some(doc) => compare::run_update_doc(&doc, check)?,
            None => compare::run_compare(&files, format)?,
        },
        Cmd::Chart { files, out } => chart::run_chart(&files, &out)?,
    }
    Ok(())
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hash-bench: {e:#}");
            ExitCode::FAILURE
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
