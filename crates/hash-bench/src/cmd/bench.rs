//! `hash-bench bench`: the options of `scripts/bench.sh`, checked in one place by clap,
//! and the sweep they ask for.
//!
//! The script builds this binary and hands it every argument; everything after that
//! is here: the hashers' build, hyperfine (installed if missing), the peers, the
//! probe that cold runs are possible, then per location the steps `plan`, `gen`,
//! `verify`, `race` and `collect`. Each step runs as a child `hash-bench` process, as
//! it would by hand, so a step's output and exit status are the same whoever runs it.
//! A location that fails is reported and the others still run. An interrupt (Ctrl-C,
//! `SIGTERM`) stops the step running, stops a network mount, removes the partial
//! hyperfine export and says how to resume.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::ValueEnum;

use crate::cache::EvictMethod;
use crate::location::Location;
use crate::plan::{PeerSelection, Sweep};

/// hyperfine version `cargo install` builds when neither PATH nor apt has a usable one.
const HYPERFINE_CRATE_VERSION: &str = "1.19.0";

/// The oldest hyperfine with `-N` (no intermediate shell), which every timed run uses.
const HYPERFINE_MIN: (u32, u32) = (1, 13);

const ABOUT: &str = "Benchmarks the hashrace binaries, one per strategy (release builds), \
against each other and against installed peers, on generated datasets, with the data warm \
(in the page cache) and cold (evicted right before every timed run), and writes the sweep's \
folder results/<host>-<date>-<sweep>/: results.json (self-contained: every timed run is in \
it), report.md (the winner of each workload, by how much, and what bounds it; also printed \
at the end) and charts/, generated from results.json alone; and raw/, the hyperfine \
exports, which stay local (git-ignored).";

const AFTER_LONG_HELP: &str = "\
Sweeps:
  (default)  shards (64 x 8 MiB), small (20,000 x 4 KiB), huge (1 x 2 GiB), mixed
             (model-like tree, ~1 GiB), empty (an empty directory, warm only). Hashers:
             10 warm / 5 cold timed runs (up to 3x more for cheap ones, fewer for runs
             over ~1.5 s), peers 5 / 3 (1 when a run takes over 4 s), Python 3 / 2
             (pure-Python work: warm only). About 32 minutes on 2 vCPUs by the plan's
             estimate (36 with rhash, hashdeep and b3sum installed), plus ~30 s to
             generate the data the first time (3.6 GiB on disk). The plan step prints
             its estimate, and --dry-run prints it and times nothing.
  --quick    smaller versions of the four datasets, fewer runs: ~10 minutes by the
             plan's estimate with sha256sum as the only peer and one Python.
  --smoke    one ~8 MiB dataset, minimal runs: ~20 s once built on a 2-vCPU AMD EPYC
             guest; what CI runs. If the data directory cannot be made cold (tmpfs),
             the smoke sweep runs warm only and says so.

How it measures:
  * Before timing, every hasher command runs once per dataset; all outputs must be
    byte-identical and hash to the dataset's committed digest, or nothing is timed.
  * hyperfine -N (no shell) times each program on each dataset and cache state. Its
    --prepare runs before every run: 'hash-bench evict --record' for cold (eviction,
    then mincore residency), 'hash-bench residency --top-up --record' for warm (pages
    the kernel dropped since the last run are read back first). A cold run that
    started more than 5 % resident, or a warm one below 95 % (under --memory-limit:
    above the limit's share of the data plus 5 points), is kept but flagged invalid.
  * Peak RSS comes from one untimed run right before hyperfine (hash-bench maxrss;
    evicted first when cold), which is also the warm-up run. Locally, a program's
    first warm benchmark of a dataset is preceded by one more untimed run on the
    dataset evicted: how a file entered the page cache sets its folio sizes, which
    moved warm runs by 5-12 %, so each program is timed warm in the state its own
    first run left.
  * Peers run through 'sh -c' pipelines (find | sort | xargs -P N ... sha256sum), so
    their times include find and sort; b3sum (BLAKE3) is a speed reference only.
  * Besides the hashers and peers: each hasher at each --jobs value and with no -j,
    each non-default --io mode, the reference rows (the compute, streaming, read and
    hash floors) and the Python programs (scripts/pyhash.py) under each interpreter,
    with hashlib and with pure-Python work. docs/results-schema.md names every row.
  * Peak RSS is recorded twice: the largest single process, and the sum over the
    whole process tree (hash-procs' parent plus workers).

Interrupting (Ctrl-C) is safe: rerun the same command and it resumes where it stopped
(same binaries and settings), reusing generated data. See docs/benchmark.md.";

/// What `scripts/bench.sh` takes. Paths relative to where the script was started.
#[derive(Debug, clap::Args)]
#[command(
    about = ABOUT,
    override_usage = "scripts/bench.sh [--quick | --smoke] [OPTIONS]",
    after_long_help = AFTER_LONG_HELP
)]
pub struct BenchArgs {
    /// Smaller versions of the default datasets, fewer runs (~10 minutes).
    #[arg(long, conflicts_with = "smoke")]
    quick: bool,
    /// One ~8 MiB dataset, minimal runs (what CI runs).
    #[arg(long)]
    smoke: bool,
    /// Where the programs read the data, comma-separated: local (the data directory), or
    /// an sshfs mount of it over an emulated link: lan (0.2 ms RTT, ~117 MiB/s), wan (20
    /// ms RTT, 100 Mbit/s), raw (no shaping). One sweep folder per location. Cold on a
    /// network is a fresh mount before every run, proved by the bytes over the link.
    /// Needs sshfs, openssh-sftp-server, fuse3 and /dev/fuse; a location that cannot be
    /// mounted is reported and skipped.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "local")]
    location: Vec<Location>,
    /// Run every timed command in a memory cgroup of SIZE (e.g. 256M), so that a dataset
    /// larger than SIZE cannot stay in the page cache; "warm" then means what the cgroup
    /// kept from the run before (root; cgroup v1 or v2 with the memory controller).
    #[arg(long, value_name = "SIZE", value_parser = memory_limit)]
    memory_limit: Option<String>,
    /// Job counts to sweep, comma-separated, e.g. 1,2,4 (default: the CPUs). Passed as
    /// -j N to the parallel hashers and as the parallelism of the peers.
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Vec<u32>,
    /// Race these datasets (names in datasets/ or spec paths, comma-separated) instead.
    #[arg(long, value_name = "LIST")]
    datasets: Option<String>,
    /// Add the optional 32 GiB 'big' dataset (cold only when it does not fit in memory).
    #[arg(long)]
    big: bool,
    /// Add the scale datasets: 1,000,000 and 2,000,000 empty files (warm only; the
    /// hashers alone, at their default -j, 3 runs each).
    #[arg(long)]
    scale: bool,
    /// Leave out the Python reference programs (scripts/pyhash.py).
    #[arg(long, conflicts_with = "python")]
    no_python: bool,
    /// Race the Python rows under this interpreter instead of python3; repeat it, or give
    /// a comma-separated list. A free-threaded python3.14t or python3.13t on PATH is
    /// raced either way.
    #[arg(long, value_name = "PATH", value_delimiter = ',')]
    python: Vec<OsString>,
    /// Take the hashers from DIR instead of building them here.
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Where datasets are generated (default: datasets/data). Must be on a disk-backed
    /// filesystem for cold runs.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Where results go (default: results).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// auto (sha256sum, plus rhash, hashdeep, b3sum if installed), none, or a
    /// comma-separated list of those.
    #[arg(long, value_name = "LIST", default_value = "auto", value_parser = peers)]
    peers: String,
    /// apt-get install rhash, hashdeep and b3sum first (root with apt only).
    #[arg(long)]
    install_peers: bool,
    /// Skip cold runs.
    #[arg(long, conflicts_with = "cold_only")]
    warm_only: bool,
    /// Skip warm runs.
    #[arg(long)]
    cold_only: bool,
    /// fadvise (per file, no root) or drop-caches (root; also drops dentries and inodes,
    /// so the directory walk is cold too).
    #[arg(long, value_enum, value_name = "METHOD", default_value = "fadvise")]
    evict: EvictMethod,
    /// Discard an interrupted run of the same plan instead of resuming it.
    #[arg(long)]
    fresh: bool,
    /// Do everything up to the plan, then stop: build, install hyperfine if missing,
    /// probe the data directory, write the plan and print its summary and estimate.
    #[arg(long)]
    dry_run: bool,
    /// The repository (set by bench.sh).
    #[arg(long, hide = true)]
    repo: PathBuf,
    /// Cargo's target directory (set by bench.sh).
    #[arg(long, hide = true)]
    target_dir: PathBuf,
}

/// Checked as `hash-bench plan` will check it, but kept as given for the plan.
fn memory_limit(s: &str) -> Result<String, String> {
    crate::cgroup::parse_size(s).map(|_| s.to_string())
}

/// Checked as `hash-bench plan` will check it, but kept as given for the plan.
fn peers(s: &str) -> Result<String, String> {
    s.parse::<PeerSelection>().map(|_| s.to_string())
}

/// The name a value of a clap enum is given by on the command line.
fn arg_name(v: &impl ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// Raised by the binary's `SIGINT` and `SIGTERM` handlers: the sweep then ends the
/// step running, cleans up and returns.
#[derive(Debug, Clone)]
pub struct Interrupt(pub Arc<AtomicBool>);

impl Interrupt {
    fn raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The sweep's settings, resolved: absolute paths, the sweep, the cache states.
struct Sweeper {
    a: BenchArgs,
    hash_bench: PathBuf,
    data_dir: PathBuf,
    out: PathBuf,
    bin_dir: PathBuf,
    sweep: Sweep,
    warm: bool,
    cold: bool,
    pythons: Vec<OsString>,
    hyperfine: PathBuf,
    stop: Interrupt,
}

/// Run `scripts/bench.sh`'s sweep; `stop` is raised by the binary's signal handlers.
pub fn run(a: BenchArgs, stop: Interrupt) -> Result<()> {
    let start = Instant::now();
    let mut s = Sweeper::resolve(a, stop)?;
    s.build()?;
    step("tools");
    s.hyperfine = ensure_hyperfine()?;
    if s.a.install_peers {
        install_peers();
    }
    for dir in [&s.data_dir, &s.out.join("tmp")] {
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    s.probe_cold()?;
    let mut failed = Vec::new();
    for &loc in &s.a.location {
        if let Err(e) = s.location(loc) {
            if s.stop.raised() {
                bail!("interrupted");
            }
            eprintln!("bench.sh: the {} sweep failed: {e:#}", loc.name());
            failed.push(loc.name());
        }
    }
    println!("done in {}", hash_core::units::duration(start.elapsed()));
    match failed.len() {
        0 => Ok(()),
        n if n == s.a.location.len() => bail!("failed: {}", failed.join(" ")),
        _ => bail!(
            "failed: {} (the other locations' results are written)",
            failed.join(" ")
        ),
    }
}

fn step(what: &str) {
    println!("\n== {what}");
}

impl Sweeper {
    fn resolve(a: BenchArgs, stop: Interrupt) -> Result<Sweeper> {
        let abs = |p: &Path| std::path::absolute(p).with_context(|| p.display().to_string());
        let data_dir = abs(&a.data_dir.clone().unwrap_or(a.repo.join("datasets/data")))?;
        let out = abs(&a.out.clone().unwrap_or(a.repo.join("results")))?;
        let bin_dir = match &a.bin_dir {
            Some(d) => abs(d)?,
            None => a.target_dir.join("release"),
        };
        let sweep = match (a.quick, a.smoke) {
            (true, _) => Sweep::Quick,
            (_, true) => Sweep::Smoke,
            _ => Sweep::Default,
        };
        // A wrong --python stops here, before a build or a sweep starts (hash-bench
        // plan asks each interpreter the details again and records them).
        let mut pythons = Vec::new();
        for py in &a.python {
            ensure!(!py.is_empty(), "--python needs a path or a command name");
            let py = if Path::new(py).components().count() > 1 {
                abs(Path::new(py))?.into_os_string()
            } else {
                py.clone()
            };
            let works = Command::new(&py)
                .args(["-c", "import sys; sys.exit(sys.version_info < (3, 9))"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            ensure!(
                works,
                "--python {}: not a working Python 3.9 or later",
                py.to_string_lossy()
            );
            pythons.push(py);
        }
        // drop_caches is written before every cold run: say now, not minutes into the
        // sweep, that this user cannot write it.
        if a.evict == EvictMethod::DropCaches
            && !a.dry_run
            && rustix::fs::access("/proc/sys/vm/drop_caches", rustix::fs::Access::WRITE_OK).is_err()
        {
            bail!("--evict drop-caches: /proc/sys/vm/drop_caches is not writable here (needs root); use --evict fadvise");
        }
        Ok(Sweeper {
            hash_bench: std::env::current_exe()?,
            warm: !a.cold_only,
            cold: !a.warm_only,
            data_dir,
            out,
            bin_dir,
            sweep,
            pythons,
            hyperfine: PathBuf::from("hyperfine"),
            stop,
            a,
        })
    }

    /// One cargo call per hasher, so that each links only the hash-core features it
    /// asks for (hash-async alone takes tokio and io_uring): built together, cargo
    /// would give them all one hash-core. With `--bin-dir`, only check they are there.
    fn build(&self) -> Result<()> {
        let hashers: Vec<String> = hash_core::Strategy::ALL
            .into_iter()
            .map(crate::plan::programs::hasher_binary)
            .collect();
        if self.a.bin_dir.is_none() {
            step("build (the hashers)");
            println!("cargo build --release --locked -p each hasher");
            for h in &hashers {
                let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
                cargo.current_dir(&self.a.repo).args(["build", "--release"]);
                if self.a.repo.join("Cargo.lock").is_file() {
                    cargo.arg("--locked");
                }
                cargo.args(["-p", h]);
                cargo.env("CARGO_TARGET_DIR", &self.a.target_dir);
                self.wait(&mut cargo)
                    .with_context(|| format!("building {h}"))?;
            }
        } else {
            println!("hashers from {}", self.bin_dir.display());
        }
        for h in &hashers {
            let exe = self.bin_dir.join(h);
            ensure!(exe.is_file(), "{} is missing", exe.display());
        }
        Ok(())
    }

    /// Cold runs need a data directory whose pages can be evicted (not tmpfs).
    fn probe_cold(&mut self) -> Result<()> {
        if !self.cold || !self.a.location.contains(&Location::Local) {
            return Ok(());
        }
        let mut probe = self.hb();
        probe
            .arg("fs-check")
            .arg("--probe")
            .arg(&self.data_dir)
            .stdout(Stdio::null());
        if self.wait(&mut probe).is_ok() {
            return Ok(());
        }
        ensure!(!self.stop.raised(), "interrupted");
        ensure!(
            self.sweep == Sweep::Smoke,
            "cold runs need a disk-backed data directory: use --data-dir DIR or --warm-only"
        );
        println!(
            "cold runs are impossible in {} (see above); the smoke sweep runs warm only",
            self.data_dir.display()
        );
        self.cold = false;
        self.warm = true;
        Ok(())
    }

    /// `hash-bench plan`'s arguments for `loc`.
    fn plan_args(&self, loc: Location) -> Vec<OsString> {
        let mut v: Vec<OsString> = Vec::new();
        let mut add = |k: &str, val: &OsStr| {
            v.push(k.into());
            v.push(val.to_owned());
        };
        add("--sweep", arg_name(&self.sweep).as_ref());
        add("--specs-dir", self.a.repo.join("datasets").as_os_str());
        add("--data-root", self.data_dir.as_os_str());
        add("--bin-dir", self.bin_dir.as_os_str());
        add("--hash-bench", self.hash_bench.as_os_str());
        add("--peers", self.a.peers.as_ref());
        add("--eviction", arg_name(&self.a.evict).as_ref());
        add("--repo", self.a.repo.as_os_str());
        add("--work-parent", self.out.join("tmp").as_os_str());
        add("--location", loc.name().as_ref());
        if !self.a.jobs.is_empty() {
            let jobs: Vec<String> = self.a.jobs.iter().map(u32::to_string).collect();
            add("--jobs", jobs.join(",").as_ref());
        }
        if let Some(d) = &self.a.datasets {
            add("--datasets", d.as_ref());
        }
        let mut extra = Vec::new();
        if self.a.big {
            extra.push("big");
        }
        if self.a.scale {
            extra.extend(["scale", "scale2"]);
        }
        if !extra.is_empty() {
            add("--extra-datasets", extra.join(",").as_ref());
        }
        for py in &self.pythons {
            add("--python", py);
        }
        if let Some(m) = &self.a.memory_limit {
            add("--memory-limit", m.as_ref());
        }
        for (on, flag) in [
            (self.a.no_python, "--no-python"),
            (!self.warm, "--no-warm"),
            (!self.cold, "--no-cold"),
            (self.a.fresh, "--fresh"),
        ] {
            if on {
                v.push(flag.into());
            }
        }
        v
    }

    /// One location's sweep: plan, data, verification, race, results.
    fn location(&self, loc: Location) -> Result<()> {
        step(&format!("plan ({})", loc.name()));
        if loc != Location::Local {
            self.wait(&mut self.hb_with(["net-check"]))?;
        }
        let mut plan = self.hb();
        plan.arg("plan").args(self.plan_args(loc));
        // stdout: the work directory; every later step reads the plan from there.
        let work = PathBuf::from(OsString::from(
            String::from_utf8(self.output(&mut plan)?)?.trim_end(),
        ));
        if self.a.dry_run {
            println!(
                "dry run: plan in {}; nothing run",
                work.join("plan.json").display()
            );
            return Ok(());
        }
        let run = || -> Result<()> {
            let w = work.as_os_str();
            step("datasets (generated once, then reused)");
            self.wait(&mut self.hb_with([OsStr::new("gen"), "--work".as_ref(), w]))?;
            step(&format!(
                "verify ({}): every hasher must print the same, expected output",
                loc.name()
            ));
            self.wait(&mut self.hb_with([OsStr::new("verify"), "--work".as_ref(), w]))?;
            step(&format!("race ({})", loc.name()));
            let h = self.hyperfine.as_os_str();
            let race = [OsStr::new("race"), "--work".as_ref(), w];
            self.wait(self.hb_with(race).arg("--hyperfine").arg(h))?;
            step(&format!("results ({})", loc.name()));
            let mut collect = self.hb_with([OsStr::new("collect"), "--work".as_ref(), w]);
            collect
                .arg("--out")
                .arg(&self.out)
                .arg("--hyperfine")
                .arg(h);
            self.wait(collect.args(["--validate", "--charts"]))
        };
        let result = run();
        if result.is_err() {
            self.left_off(&work);
        }
        result
    }

    /// After a failed or interrupted location: stop its mount, drop the partial
    /// hyperfine exports, and say where it resumes.
    fn left_off(&self, work: &Path) {
        if work.join("net").is_dir() {
            let mut stop = self.hb_with([OsStr::new("net-stop"), "--work".as_ref()]);
            let _ = stop.arg(work).stderr(Stdio::null()).status();
        }
        if let Ok(dir) = std::fs::read_dir(work.join("raw")) {
            for e in dir.flatten() {
                if e.path().extension() == Some(OsStr::new("part")) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        eprintln!(
            "bench.sh: rerun the same command to resume from {}",
            work.display()
        );
    }

    fn hb(&self) -> Command {
        let mut c = Command::new(&self.hash_bench);
        c.current_dir(&self.a.repo);
        c
    }

    fn hb_with<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&self, args: I) -> Command {
        let mut c = self.hb();
        c.args(args);
        c
    }

    /// Run `cmd` to its end (ending it if the sweep is interrupted); fail unless it
    /// succeeded.
    fn wait(&self, cmd: &mut Command) -> Result<()> {
        let status = self.watch(cmd.stdin(Stdio::null()).spawn().context("spawn")?)?;
        check(cmd, status)
    }

    /// Run `cmd` and return its stdout (stderr goes to the terminal).
    fn output(&self, cmd: &mut Command) -> Result<Vec<u8>> {
        use std::io::Read;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .context("spawn")?;
        let mut out = Vec::new();
        child.stdout.take().expect("piped").read_to_end(&mut out)?;
        check(cmd, self.watch(child)?)?;
        Ok(out)
    }

    /// Wait for `child`; on an interrupt, pass `SIGTERM` on (a terminal's Ctrl-C
    /// reaches it already) and wait for it to end.
    fn watch(&self, mut child: std::process::Child) -> Result<ExitStatus> {
        let mut told = false;
        loop {
            if let Some(status) = child.try_wait()? {
                ensure!(!self.stop.raised(), "interrupted");
                return Ok(status);
            }
            if self.stop.raised() && !told {
                if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                }
                told = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn check(cmd: &Command, status: ExitStatus) -> Result<()> {
    let args: Vec<_> = cmd.get_args().map(OsStr::to_string_lossy).collect();
    let what = format!(
        "{} {}",
        Path::new(cmd.get_program()).display(),
        args.first().map(|a| a.as_ref()).unwrap_or("")
    );
    ensure!(status.success(), "{} ({status})", what.trim_end());
    Ok(())
}

/// `hyperfine --version`'s (major, minor), if it runs.
fn hyperfine_version(exe: &Path) -> Option<(u32, u32)> {
    let out = Command::new(exe).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    parse_version(&text)
}

/// "hyperfine 1.19.0" → (1, 19).
fn parse_version(text: &str) -> Option<(u32, u32)> {
    let v = text.split_whitespace().nth(1)?;
    let mut parts = v.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn usable_hyperfine() -> Option<PathBuf> {
    let exe = which::which("hyperfine").ok()?;
    (hyperfine_version(&exe)? >= HYPERFINE_MIN).then_some(exe)
}

/// A hyperfine with `-N`: on PATH, else from apt (as root), else `cargo install`.
fn ensure_hyperfine() -> Result<PathBuf> {
    if let Some(exe) = usable_hyperfine() {
        println!("  using hyperfine at {}", exe.display());
        return Ok(exe);
    }
    println!("hyperfine 1.13 or later is not on PATH; installing it");
    if rustix::process::geteuid().is_root() && which::which("apt-get").is_ok() {
        println!("  apt-get install hyperfine");
        if !apt_install(&["hyperfine"]) {
            println!("  apt-get could not install hyperfine");
        }
        if let Some(exe) = usable_hyperfine() {
            return Ok(exe);
        }
    }
    println!("  cargo install --locked hyperfine --version {HYPERFINE_CRATE_VERSION} (takes a few minutes)");
    let status = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args(["install", "--quiet", "--locked", "hyperfine", "--version"])
        .arg(HYPERFINE_CRATE_VERSION)
        .status()
        .context("cargo install hyperfine")?;
    ensure!(status.success(), "cargo install hyperfine: {status}");
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let exe = home.join("bin/hyperfine");
    match hyperfine_version(&exe) {
        Some(v) if v >= HYPERFINE_MIN => {
            println!("  using hyperfine at {}", exe.display());
            Ok(exe)
        }
        _ => bail!("could not install a usable hyperfine (>= 1.13)"),
    }
}

/// `apt-get install`, with the current package lists first, refreshed only if that fails.
fn apt_install(packages: &[&str]) -> bool {
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    install() || {
        let updated = Command::new("apt-get")
            .args(["update", "-q"])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        updated && install()
    }
}

fn install_peers() {
    if rustix::process::geteuid().is_root() && which::which("apt-get").is_ok() {
        println!("installing peers: apt-get install rhash hashdeep b3sum");
        if !apt_install(&["rhash", "hashdeep", "b3sum"]) {
            println!("  some peers could not be installed; racing those present");
        }
    } else {
        println!("--install-peers: needs root and apt-get; racing the peers already installed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        a: BenchArgs,
    }

    fn parse(args: &[&str]) -> Result<BenchArgs, clap::Error> {
        let base = ["bench.sh", "--repo", "/r", "--target-dir", "/r/target"];
        Cli::try_parse_from(base.iter().chain(args)).map(|c| c.a)
    }

    #[test]
    fn jobs_take_an_equals_sign_and_a_list() {
        assert_eq!(parse(&["--jobs=1,2", "--smoke"]).unwrap().jobs, [1, 2]);
        assert_eq!(parse(&["--jobs", "4"]).unwrap().jobs, [4]);
    }

    #[test]
    fn bad_values_are_refused_as_usage_errors() {
        for bad in [
            &["--jobs", "0"][..],
            &["--jobs", "1,x"],
            &["--jobs"],
            &["--memory-limit", "lots"],
            &["--location", "moon"],
            &["--evict", "prayer"],
            &["--peers", "md5sum"],
            &["--quick", "--smoke"],
            &["--warm-only", "--cold-only"],
            &["--no-python", "--python", "python3"],
            &["--frobnicate"],
        ] {
            let e = parse(bad).expect_err(&format!("{bad:?} was accepted"));
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_plan_gets_what_was_given() {
        let a = parse(&[
            "--smoke",
            "--jobs=1,2",
            "--location=local,lan",
            "--memory-limit=256M",
            "--big",
            "--scale",
            "--warm-only",
            "--evict=fadvise",
            "--data-dir=/d",
            "--out=/o",
            "--peers=none",
            "--fresh",
        ])
        .unwrap();
        assert_eq!(a.location, [Location::Local, Location::Lan]);
        let s = Sweeper::resolve(a, Interrupt(Arc::new(AtomicBool::new(false)))).unwrap();
        let args: Vec<String> = s
            .plan_args(Location::Lan)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = args.join(" ");
        for want in [
            "--sweep smoke",
            "--specs-dir /r/datasets",
            "--data-root /d",
            "--bin-dir /r/target/release",
            "--peers none",
            "--eviction fadvise",
            "--work-parent /o/tmp",
            "--location lan",
            "--jobs 1,2",
            "--extra-datasets big,scale,scale2",
            "--memory-limit 256M",
            "--no-cold",
            "--fresh",
        ] {
            assert!(line.contains(want), "{want:?} not in {line}");
        }
        assert!(!line.contains("--no-warm"), "{line}");
    }

    #[test]
    fn hyperfine_versions_are_read_from_its_banner() {
        assert_eq!(parse_version("hyperfine 1.19.0\n"), Some((1, 19)));
        assert_eq!(parse_version("hyperfine 1.12.0"), Some((1, 12)));
        assert!(parse_version("hyperfine 1.12.0").unwrap() < HYPERFINE_MIN);
        assert_eq!(parse_version("garbage"), None);
    }
}
