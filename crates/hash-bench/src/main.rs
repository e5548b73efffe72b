//! `hash-bench`: the helper binary of `scripts/bench.sh`. One subcommand per step, so
//! the shell script stays readable and each step can be run and tested on its own; one
//! function per subcommand, taking its own `Args` struct, in [`hash_bench::cmd`]. This
//! file only parses and dispatches. Run `hash-bench --help` for the list.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use hash_bench::cmd::{data, helpers, measure, network, sweep};
use hash_bench::{chart, mount, net, refs};

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
    Gen(data::GenArgs),
    /// Print the manifest digest of a generated dataset (SHA-256 of its sha256sum manifest,
    /// or with --work pysum of the byte-sum manifest the Python rows are checked against).
    ManifestDigest(data::ManifestDigestArgs),
    /// Evict files (recursively) from the page cache; print the residency left.
    Evict(data::EvictArgs),
    /// Measure how much of the files (recursively) is in the page cache (mincore).
    Residency(data::ResidencyArgs),
    /// Read files (recursively) into the page cache; print the residency reached.
    Warm(data::WarmArgs),
    /// Check that a directory can be made cold: refuse tmpfs/ramfs; --probe also tests eviction.
    FsCheck(data::FsCheckArgs),
    /// Run a command once and report its peak RSS (KiB), or the RSS run of a planned benchmark.
    Maxrss(measure::MaxrssArgs),
    /// Reference: hash a dataset's file sizes in memory (no I/O), one digest per file.
    Ceiling(measure::CeilingArgs),
    /// Reference: open + read + close every regular file (walk included), no hashing.
    ReadFloor(measure::ReadFloorArgs),
    /// Reference: one thread (or -j N) opens, fstats, reads, closes and hashes each
    /// regular file, and does nothing else: the floor of a hasher of small files.
    HashFloor(measure::HashFloorArgs),
    /// Reference: the least work a --cache run does on a tree (walk, stat per file,
    /// fstat, recording a file in the cache), each piece timed alone.
    CacheFloor(measure::CacheFloorArgs),
    /// Check the progress line's time left: each binary hashes a tree with --progress,
    /// cold and warm; the line drawn at 40 % of the run against the time really left.
    EtaCheck(measure::EtaCheckArgs),
    /// Experiment: hash files one way of getting their bytes to SHA-256 (mapped, mapped
    /// and copied, read, read by a second thread); prints sha256sum lines.
    Datapath(measure::DatapathArgs),
    /// Print the time since a Unix time as every line writes durations (`3m05s`).
    #[command(hide = true)]
    Since {
        /// Seconds since 1970 (`date +%s`).
        start: u64,
    },
    // The benchmark sweep of `scripts/bench.sh`, which builds this binary and hands it
    // every argument; its help is the script's (`BenchArgs`' about), so no doc here.
    #[command(hide = true)]
    Bench(Box<hash_bench::cmd::bench::BenchArgs>),
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
    Plan(Box<sweep::PlanArgs>),
    /// Check that every hashrace command of a plan prints the same, expected output.
    Verify(sweep::VerifyArgs),
    /// Run a plan's benchmarks under hyperfine (skipping finished ones: a rerun resumes).
    Race(sweep::RaceArgs),
    /// Merge a finished work directory into a results file; print the table.
    Collect(sweep::CollectArgs),
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
    Compare(sweep::CompareArgs),
    /// Mount a directory over sshfs with an emulated network link between client and
    /// server (no sshd: OpenSSH's sftp-server on pipes); runs until SIGINT/SIGTERM.
    Mount(network::MountArgs),
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

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Cmd::Gen(a) => data::gen(a),
        Cmd::ManifestDigest(a) => data::manifest_digest(a),
        Cmd::Evict(a) => data::evict(a),
        Cmd::Residency(a) => data::residency(a),
        Cmd::Warm(a) => data::warm(a),
        Cmd::FsCheck(a) => data::fs_check(a),
        Cmd::Maxrss(a) => measure::maxrss(a),
        Cmd::NetPrepare {
            work,
            id,
            remount,
            top_up,
        } => net::prepare(&work, &id, remount, top_up),
        Cmd::NetCheck => mount::preflight().map(drop),
        Cmd::NetStop { work } => hash_bench::location::Daemon::of(&work).stop().map(drop),
        Cmd::Ceiling(a) => measure::ceiling(a),
        Cmd::ReadFloor(a) => measure::read_floor(a),
        Cmd::HashFloor(a) => measure::hash_floor(a),
        Cmd::Datapath(a) => measure::datapath(a),
        Cmd::CacheFloor(a) => measure::cache_floor(a),
        Cmd::EtaCheck(a) => measure::eta_check(a),
        Cmd::HoldMemory { mib } => refs::hold_memory(mib),
        Cmd::Bench(_) => unreachable!("main runs the sweep"),
        Cmd::InCgroup { procs, command } => helpers::in_cgroup(&procs, &command),
        Cmd::Since { start } => helpers::since(start),
        Cmd::Machine { data_dir } => helpers::machine(&data_dir),
        Cmd::Strategies { parallel } => {
            helpers::strategies(parallel);
            Ok(())
        }
        Cmd::Plan(a) => sweep::plan(*a),
        Cmd::Verify(a) => sweep::verify(a),
        Cmd::Race(a) => sweep::race(a),
        Cmd::Collect(a) => sweep::collect(a),
        Cmd::Validate { files } => sweep::validate(&files),
        Cmd::Schema => sweep::schema(),
        Cmd::Report { dirs, update_doc } => sweep::report(&dirs, update_doc.as_deref()),
        Cmd::Upgrade { files } => sweep::upgrade(&files),
        Cmd::Table { file } => sweep::table(&file),
        Cmd::Compare(a) => sweep::compare(a),
        Cmd::Mount(a) => network::mount(a),
        Cmd::Chart { files, out } => chart::run_chart(&files, &out),
    }
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
fn bench(a: hash_bench::cmd::bench::BenchArgs) -> ExitCode {
    use std::sync::{atomic::AtomicBool, Arc};
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&flag)) {
            eprintln!("bench.sh: {e}");
            return ExitCode::FAILURE;
        }
    }
    let stop = hash_bench::cmd::bench::Interrupt(Arc::clone(&flag));
    match hash_bench::cmd::bench::run(a, stop) {
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
