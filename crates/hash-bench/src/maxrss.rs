//! Peak memory of a command: run it once and read `getrusage(RUSAGE_CHILDREN)`.
//!
//! hyperfine 1.x (Debian ships 1.15) does not record memory, so the harness measures it
//! in one extra, untimed run. `ru_maxrss` of `RUSAGE_CHILDREN` is the largest peak RSS
//! of any descendant that was waited for — for a pipeline or a multi-process program it
//! is the biggest single process, not the sum, which the results document says.
//! hash-bench starts no other child before, so the value is this command's alone.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// One peak-RSS measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RssSample {
    /// Largest peak resident set size of the command's processes, KiB.
    pub max_rss_kib: u64,
    /// Exit code (`None`: killed by a signal).
    pub exit_code: Option<i32>,
    /// Wall time of this (untimed, informational) run, seconds.
    pub wall_s: f64,
    /// What was done before the run: `evict` for cold benchmarks, `none` for warm.
    pub before: String,
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
    let status = cmd
        .status()
        .with_context(|| format!("running {}", program.to_string_lossy()))?;
    let wall_s = start.elapsed().as_secs_f64();
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_CHILDREN is a valid `who`.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return Err(std::io::Error::last_os_error()).context("getrusage");
    }
    Ok(RssSample {
        // Linux reports ru_maxrss in KiB.
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
        exit_code: status.code(),
        wall_s,
        before: before.to_string(),
    })
}
