//! Is the progress line's time left right on a real tree? (`hash-bench eta-check`)
//!
//! Each binary hashes the tree with `--progress` (cold: the tree evicted from the
//! page cache first; warm: read into it first). Every line it draws on stderr is
//! stamped with the time it arrived; after the run, the first line drawn at or after
//! a fraction of the run (40 % by default) is read back, and the time left it showed
//! is compared with the time that really was left. A ratio between 0.5 and 2 is
//! within a factor of two.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// One run's reading.
#[derive(Debug, Clone)]
pub struct Reading {
    pub binary: String,
    pub cold: bool,
    /// The whole run, from spawn to exit.
    pub total: Duration,
    /// When the line read back was drawn.
    pub at: Duration,
    /// The time left it showed (`None`: `--:--`).
    pub shown: Option<f64>,
    /// The line itself.
    pub line: String,
}

impl Reading {
    /// Shown ÷ really left (`None` without an estimate).
    pub fn ratio(&self) -> Option<f64> {
        let left = self.total.saturating_sub(self.at).as_secs_f64();
        self.shown.map(|s| s / left.max(1e-3))
    }
}

/// The time left in a progress line, as [`hash_core::units::eta`] writes it
/// (`ETA 4.2 s`, `ETA 1m05s`; `ETA --` is no estimate), seconds.
pub fn shown_left(line: &str) -> Option<f64> {
    let tail = line.rsplit_once("ETA ")?.1;
    // The harness's own line ends in a bar.
    let left = tail.split(" [").next()?.trim_end();
    hash_core::units::parse_duration(left).map(|d| d.as_secs_f64())
}

/// Run `exe --progress root`; every stderr line with the time it arrived.
fn run_stamped(exe: &Path, root: &Path) -> Result<(Duration, Vec<(Duration, String)>)> {
    let start = Instant::now();
    let mut child = Command::new(exe)
        .arg("--progress")
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let mut err = child.stderr.take().expect("piped");
    let mut lines = Vec::new();
    let (mut line, mut byte) = (Vec::new(), [0u8; 1]);
    // A byte at a time: lines end in `\n` off a terminal, and each must be
    // stamped when it arrives, not when a buffer fills.
    while err.read(&mut byte)? == 1 {
        if matches!(byte[0], b'\n' | b'\r') {
            if !line.is_empty() {
                lines.push((start.elapsed(), String::from_utf8_lossy(&line).into_owned()));
            }
            line.clear();
        } else {
            line.push(byte[0]);
        }
    }
    let status = child.wait()?;
    let total = start.elapsed();
    if !status.success() {
        bail!("{} failed: {status}", exe.display());
    }
    Ok((total, lines))
}

/// Run `binary` from `bin_dir` on `root` once, cold (evicted first) or warm (read
/// first), and read back the line drawn at `fraction` of the run.
pub fn check(
    bin_dir: &Path,
    binary: &str,
    root: &Path,
    cold: bool,
    fraction: f64,
) -> Result<Reading> {
    let files = crate::cache::walk_all(&[root.to_path_buf()])?;
    if cold {
        crate::cache::evict(&files, crate::cache::EvictMethod::Fadvise)?;
    } else {
        crate::cache::warm(&files)?;
    }
    let exe: PathBuf = bin_dir.join(binary);
    let (total, lines) = run_stamped(&exe, root)?;
    let due = total.mul_f64(fraction);
    let (at, line) = lines
        .into_iter()
        .find(|(t, _)| *t >= due)
        .with_context(|| format!("{binary}: no progress line after {due:?} of {total:?}"))?;
    Ok(Reading {
        binary: binary.to_owned(),
        cold,
        total,
        at,
        shown: shown_left(&line),
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_form_of_the_time_left() {
        let line = "3.00 MiB / 3.38 GiB (0%), 0/100003 files (0%), 727.30 MiB/s, ETA ";
        assert_eq!(shown_left(&format!("{line}5.0 s")), Some(5.0));
        assert_eq!(shown_left(&format!("{line}61m05s")), Some(3665.0));
        assert_eq!(shown_left(&format!("{line}1h02m")), Some(3720.0));
        assert_eq!(shown_left(&format!("{line}4.2 s")), Some(4.2));
        assert_eq!(shown_left(&format!("{line}--")), None);
        // The harness's own line ends in a bar.
        assert_eq!(
            shown_left("  gen x: 1.00 KiB / 2.00 KiB (50%), ETA 2.0 s [====>   ]"),
            Some(2.0)
        );
        assert_eq!(shown_left("no estimate here"), None);
    }

    #[test]
    fn the_ratio_is_shown_over_really_left() {
        let r = Reading {
            binary: "x".into(),
            cold: false,
            total: Duration::from_secs(10),
            at: Duration::from_secs(4),
            shown: Some(3.0),
            line: String::new(),
        };
        assert_eq!(r.ratio(), Some(0.5));
        assert_eq!(Reading { shown: None, ..r }.ratio(), None);
    }
}
