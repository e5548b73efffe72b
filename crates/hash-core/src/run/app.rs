//! The `main` of every `hash-*` binary: parse, plan, run, exit status.
//!
//! The binaries are a few lines each over [`main`], so the four cannot differ
//! in anything but the strategy they pass in. The command line is parsed once
//! into a `Config` whose `Engine` every mode (hashing, check, lists,
//! shards) runs with.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cache::{Cache, Cached, Counts};
use crate::check::{self, CheckRun};
use crate::cli::{self, Config, HashRun, Mode};
use crate::diag;
use crate::escape::path_bytes;
use crate::filelist;
use crate::hasher::Reading;
use crate::merge;
use crate::output::{OutputOptions, RunInfo, Summary, Writer};
use crate::progress::{self, Progress};
use crate::shard::{Shard, ShardRun};
use crate::strategy::{Engine, Job, Outcome, Ran, Runner, Strategy};
use crate::walk;

pub use crate::exit::Exit;

/// Run the binary called `tool` with `strategy`. The binary has made its
/// process-wide choices first ([`crate::limits::opt_in`]).
pub fn main(tool: &'static str, strategy: Strategy) -> ExitCode {
    if let Some(code) = (strategy.def().helper)() {
        return code;
    }
    diag::set_program(tool);
    let config = cli::parse(tool, strategy);
    run(&config).into()
}

/// Do what `config` says with its engine, printing to stdout/stderr.
pub(crate) fn run(config: &Config) -> Exit {
    let paths = &config.paths;
    let show_progress = progress::wanted(config.progress);
    let exit = match &config.mode {
        Mode::Check(opts) => {
            let manifests: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
            let run = CheckRun {
                engine: &config.engine,
                opts: *opts,
                progress: show_progress,
            };
            check::run(&run, &manifests)
        }
        Mode::Merge(out) => merge::run(paths, out),
        Mode::List { zero } => filelist::run(&plan(config, true), *zero),
        Mode::Hash(how) => hash(config, how, show_progress),
    };
    // A name `--files-from` refused was reported at once; the run fails at the end.
    if config.refused && exit == Exit::Success {
        Exit::Failure
    } else {
        exit
    }
}

/// Hash `files` with `engine` into `sink`; standard input (`-`) is read
/// here, first, and the engine gets the rest (see [`crate::stdio`]).
fn run_plan(
    engine: &dyn Runner,
    files: &[Job],
    reading: &Arc<Reading>,
    sink: &mut crate::strategy::Sink<'_>,
) -> Ran {
    if !files.iter().any(walk::is_stdin) {
        return engine.run(files, reading, sink);
    }
    let (stdin, rest): (Vec<usize>, Vec<usize>) =
        (0..files.len()).partition(|&i| walk::is_stdin(&files[i]));
    for i in stdin {
        if sink(i, crate::stdio::hash_stdin()).is_break() {
            return Ran::default();
        }
    }
    let others: Vec<Job> = rest.iter().map(|&i| files[i].clone()).collect();
    engine.run(&others, reading, &mut |i, outcome| sink(rest[i], outcome))
}

/// Walk the paths and add the jobs of a `--list` list, in the order a walk gives.
fn plan(config: &Config, sizes: bool) -> walk::Plan {
    let how = walk::Walk {
        follow: config.follow,
        sizes,
        filter: &config.filter,
    };
    let mut plan = walk::plan(&config.paths, &how);
    if let Some(jobs) = &config.listed {
        plan.files.extend(jobs.iter().cloned());
        plan.files
            .sort_by(|a, b| path_bytes(&a.path).cmp(path_bytes(&b.path)));
    }
    plan
}

fn hash(config: &Config, how: &HashRun, show_progress: bool) -> Exit {
    let (shard, out) = (how.shard, &how.output);
    let start = Instant::now();
    // A file that is not a cache stops the run before anything is printed.
    let opened = how.cache.as_deref().map(Cache::open_for_run);
    let Ok(cache) = opened.transpose().map(Option::flatten) else {
        return Exit::Usage;
    };
    // Sizes serve the progress total and sharding. Scheduling does without
    // them: a `stat` per file in the walk cost as much as 15 % of hashing a
    // tree of 4 KiB files, all of it before the first file was hashed, while
    // the largest-first order it bought only helps a tree whose largest files
    // come late in path order (then the largest of them finishes alone).
    let sizes = show_progress || shard.is_some();
    let engine = &config.engine;
    engine.start_early();
    let mut plan = plan(config, sizes);
    let (mut shard, out) = match select_shard(shard, &mut plan, out) {
        Ok(selected) => selected,
        Err(exit) => return exit,
    };
    let out = &out;
    let reading = engine.reading();
    let progress = show_progress.then(|| start_progress(engine, &plan, &reading));
    let mut writer = Writer::new(&plan.files, crate::stdio::stdout(), *out, progress.as_ref());
    for e in &plan.errors {
        writer.error(e);
    }
    // A shard hashes only its part of what it walked, and a filtered walk
    // leaves out files the cache may still serve: neither prunes.
    let prune = shard.is_none() && !config.filter.is_active();
    let mut deliver = |i: usize, outcome: Outcome| {
        if let (Some(s), Ok(d)) = (&mut shard, &outcome) {
            s.hashed(i, d);
        }
        writer.accept(i, outcome)
    };
    let cached = cache.map(|c| Cached::new(engine, c, &plan.dirs, prune, progress.as_ref()));
    let runner: &dyn Runner = match &cached {
        Some(c) => c,
        None => engine.runner(),
    };
    let ran = run_plan(runner, &plan.files, &reading, &mut deliver);
    let strategy = engine.strategy();
    let workers = ran
        .workers
        .unwrap_or_else(|| engine.workers(plan.files.len()));
    let info = RunInfo {
        strategy: strategy.name(),
        workers,
        elapsed: start.elapsed(),
    };
    let closed = writer.finish(&plan.skipped, info).is_break();
    let (summary, write_error) = (writer.summary, writer.write_error.take());
    drop(writer);
    let cache = cached.map(Cached::into_cache);
    if let Some(p) = progress {
        p.finish(); // before anything else goes to stderr
    }
    let succeeded = summary.errors == 0 && !closed && write_error.is_none();
    let counts = cache.map(|mut c| c.finish(succeeded));
    if let Some(e) = &write_error {
        return diag::write_failed(e);
    }
    if closed {
        // `| head`: the reader has what it wanted; the run ends quietly, and
        // the status says whether anything failed until then.
        return Exit::from_failed(summary.errors > 0);
    }
    if let Some(s) = &shard {
        let errors = summary.errors;
        let trailer = |o: &mut _| s.write_trailer(o, &plan.files, errors, out.zero);
        if let Err(exit) = shard_line(trailer, errors > 0) {
            return exit;
        }
    }
    if config.stats {
        let stats = Stats {
            summary: &summary,
            elapsed: start.elapsed(),
            workers,
            counts: counts.as_ref(),
        };
        show_stats(&stats, strategy, &ran, &reading);
    }
    let changed = how.strict && counts.is_some_and(|c| c.changed > 0);
    Exit::from_failed(summary.errors > 0 || changed)
}

/// The progress line of a run of `plan`, shown while the engine reads.
fn start_progress(engine: &Engine, plan: &walk::Plan, reading: &Arc<Reading>) -> Progress {
    let one_reader = engine.reads_one_at_a_time();
    let (files, bytes) = (plan.files.len() as u64, plan.total_bytes());
    Progress::start(files, bytes, one_reader, Arc::clone(reading))
}

/// What a hashing run tells `--stats`, besides the engine's own account.
struct Stats<'a> {
    summary: &'a Summary,
    elapsed: Duration,
    workers: usize,
    counts: Option<&'a Counts>,
}

/// Write the `--stats` lines to stderr: the summary, then each choice the
/// engine made at run time (I/O, depth, order, data path) and the cache's
/// counts, each only where it applies.
fn show_stats(stats: &Stats<'_>, strategy: Strategy, ran: &Ran, reading: &Reading) {
    let name = match &ran.io {
        Some(io) => format!("{} ({io})", strategy.name()),
        None => strategy.name().to_string(),
    };
    let summary = stats.summary.render(stats.elapsed, &name, stats.workers);
    crate::show!("{summary}");
    if let Some(depth) = &ran.in_flight {
        crate::show!("in flight: {depth}");
    }
    if let Some(order) = &ran.order {
        crate::show!("read order: {order}");
    }
    let (way, samples) = reading.data_path();
    if let Some(line) = crate::datapath::describe(reading.policy().path, way, &samples) {
        crate::show!("{line}");
    }
    if let Some(c) = stats.counts {
        crate::show!("{}", c.render());
    }
}

/// Keep `shard`'s part of `plan` and write its header line; the output
/// options of a shard (no tree digest: a shard's partial one would mislead,
/// the merge prints the whole one).
fn select_shard(
    shard: Option<Shard>,
    plan: &mut walk::Plan,
    out: &OutputOptions,
) -> Result<(Option<ShardRun>, OutputOptions), Exit> {
    let Some(shard) = shard else {
        return Ok((None, *out));
    };
    let s = ShardRun::select(&mut plan.files, shard);
    if s.shard.k != 0 {
        plan.errors.clear(); // every shard walked the same tree; shard 0 tells
    }
    let out = OutputOptions {
        tree: false,
        ..*out
    };
    let failed = !plan.errors.is_empty();
    shard_line(|o| s.write_header(o, out.tag, out.zero), failed)?;
    Ok((Some(s), out))
}

/// Write a shard's header or trailer line to stdout: `Err` with the exit
/// status when the run must end (a reader gone: quietly, with the status of
/// `failed`; any other failure: reported).
fn shard_line(
    write: impl FnOnce(&mut crate::stdio::Stdout) -> io::Result<()>,
    failed: bool,
) -> Result<(), Exit> {
    match write(&mut crate::stdio::stdout()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Exit::from_failed(failed)),
        Err(e) => Err(diag::write_failed(&e)),
    }
}
