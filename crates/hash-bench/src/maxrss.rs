//! Peak memory of a command: run it once, sample its whole process tree meanwhile, and
//! read `getrusage(RUSAGE_CHILDREN)` at the end.
//!
//! hyperfine 1.x (Debian ships 1.15) does not record memory, so the harness measures it
//! in one extra, untimed run. Two figures come out of it:
//!
//! - `max_rss_kib`: `ru_maxrss` of `RUSAGE_CHILDREN`, the largest peak RSS of any
//!   descendant that was waited for. For a pipeline or a multi-process program
//!   (`hash-procs`) this is the biggest single process, not the sum. hash-bench starts no
//!   other child before, so the value is this command's alone.
//! - `tree_sum_kib`: every [`SAMPLE_PERIOD`] the sampler lists the command's process and
//!   all its descendants (`/proc/<pid>/task/<tid>/children`, recursively; a scan of
//!   `/proc/*/stat` where that file does not exist) and reads each one's `VmHWM` (its own
//!   peak RSS so far) from `/proc/<pid>/status`, keeping the largest value seen per pid.
//!   The figure is the sum of those per-process peaks, and at least `max_rss_kib`. A sum
//!   of peaks is an upper bound of the tree's simultaneous peak (processes need not peak
//!   together) and is what "the parent plus all its workers" means. It can miss growth
//!   in a process's last sampling period, and processes that live shorter than one.
//!
//! Threads share their process's memory, so they are not counted separately.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// How often the process tree is sampled.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(2);

/// One peak-RSS measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RssSample {
    /// Largest peak resident set size of the command's processes, KiB.
    pub max_rss_kib: u64,
    /// Sum over the command's process tree of each process's peak RSS (`VmHWM`), KiB;
    /// at least `max_rss_kib`. Absent in records written before the tree sampler.
    #[serde(default)]
    pub tree_sum_kib: Option<u64>,
    /// Processes seen in the tree (the command and every descendant sampled).
    #[serde(default)]
    pub tree_processes: Option<u32>,
    /// Exit code (`None`: killed by a signal).
    pub exit_code: Option<i32>,
    /// Wall time of this (untimed, informational) run, seconds.
    pub wall_s: f64,
    /// What was done before the run: `evict` for cold benchmarks, `none` for warm.
    pub before: String,
}

/// Per-process peaks of a process tree, accumulated over samples.
#[derive(Debug, Clone, Default)]
pub struct TreeSampler {
    peaks: BTreeMap<u32, u64>,
}

impl TreeSampler {
    /// Sample `root` and its descendants once; returns how many were alive.
    pub fn sample(&mut self, root: u32) -> usize {
        let pids = tree(root);
        for &pid in &pids {
            if let Some(hwm) = vm_hwm_kib(pid) {
                let e = self.peaks.entry(pid).or_insert(0);
                *e = (*e).max(hwm);
            }
        }
        pids.len()
    }

    /// Sum of the per-process peaks, KiB.
    pub fn sum_kib(&self) -> u64 {
        self.peaks.values().sum()
    }

    /// Largest per-process peak, KiB.
    pub fn largest_kib(&self) -> u64 {
        self.peaks.values().copied().max().unwrap_or(0)
    }

    /// Processes seen.
    pub fn processes(&self) -> usize {
        self.peaks.len()
    }
}

/// `VmHWM` of a process, KiB (`None` once it has exited, or for a zombie).
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `root` and all its descendants alive now.
fn tree(root: u32) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    let mut scanned: Option<Vec<(u32, u32)>> = None;
    while i < out.len() {
        let pid = out[i];
        i += 1;
        match children(pid) {
            Some(kids) => out.extend(kids),
            None => {
                // No `children` file (kernel without CONFIG_PROC_CHILDREN): scan /proc once.
                let all = scanned.get_or_insert_with(parents);
                out.extend(all.iter().filter(|(_, pp)| *pp == pid).map(|(p, _)| *p));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Children of `pid` from `/proc/<pid>/task/*/children` (`None` if that file is not
/// supported; an exited process has none).
fn children(pid: u32) -> Option<Vec<u32>> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Some(Vec::new());
    };
    let mut out = Vec::new();
    for t in tasks.flatten() {
        match std::fs::read_to_string(t.path().join("children")) {
            Ok(s) => out.extend(s.split_whitespace().filter_map(|x| x.parse::<u32>().ok())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && t.path().exists() => return None,
            Err(_) => {}
        }
    }
    Some(out)
}

/// (pid, parent pid) of every process, from `/proc/*/stat`.
fn parents() -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // The command name is in parentheses and may contain anything: parse after it.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = rest
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u32>().ok())
        {
            out.push((pid, ppid));
        }
    }
    out
}

/// Run `argv` in `cwd` (stdout/stderr discarded, as under hyperfine) and measure it.
pub fn measure(argv: &[OsString], cwd: Option<&Path>, before: &str) -> Result<RssSample> {
    let Some((program, args)) = argv.split_first() else {
        bail!("maxrss: no command given");
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("running {}", program.to_string_lossy()))?;
    let mut sampler = TreeSampler::default();
    let status = loop {
        sampler.sample(child.id());
        if let Some(status) = child.try_wait().context("waiting for the command")? {
            break status;
        }
        // The sampling period (the command's end is noticed by try_wait above).
        std::thread::sleep(SAMPLE_PERIOD);
    };
    let wall_s = start.elapsed().as_secs_f64();
    let ru = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map_err(std::io::Error::from)
        .context("getrusage")?;
    // Linux reports ru_maxrss in KiB.
    let max_rss_kib = ru.max_rss().max(0) as u64;
    Ok(RssSample {
        max_rss_kib,
        tree_sum_kib: Some(sampler.sum_kib().max(max_rss_kib)),
        tree_processes: Some(sampler.processes().max(1) as u32),
        exit_code: status.code(),
        wall_s,
        before: before.to_string(),
    })
}
