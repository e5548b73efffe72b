//! A progress display on stderr for long steps (generation, hashing): bytes, files, rate
//! and the time left.
//!
//! Workers count bytes and files into an `indicatif` bar, which draws only when stderr is
//! a terminal, and is cleared at the end. In CI logs indicatif draws nothing, so there the
//! reporter thread prints a plain line every few seconds instead: logs stay short but
//! still show that work is moving. The time left is not indicatif's, which counts bytes
//! only and so is far too early on a dataset of a few large files and many small ones: it
//! is hash-core's [`Eta`], fitted to the step's cost per file and per byte, sampled
//! whenever a line is drawn.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hash_core::eta::Eta;
use hash_core::units;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often the plain (not a terminal) line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The line on a terminal: the plain line's figures, and a bar in whatever width is left
/// (so that the line never wraps). `left` is [`Progress::new`]'s key.
const TEMPLATE: &str = "  {prefix}: {binary_bytes} / {binary_total_bytes} ({percent}%), \
                        {binary_bytes_per_sec}, ETA {left} [{wide_bar}]";

/// What the drawing needs besides the bar's byte count.
#[derive(Debug)]
struct Counts {
    files_total: u64,
    files_done: AtomicU64,
    eta: Mutex<Eta>,
}

impl Counts {
    /// Feed the model the counts at `elapsed` since the start; its time left.
    fn left(&self, elapsed: Duration, bytes: u64) -> String {
        let files = self.files_done.load(Ordering::Relaxed);
        let mut eta = self.eta.lock().unwrap_or_else(PoisonError::into_inner);
        units::eta(eta.sample(elapsed, files, bytes))
    }
}

/// Shared progress counter; see [`Progress::run`].
#[derive(Debug)]
pub struct Progress {
    label: String,
    total: u64,
    counts: Arc<Counts>,
    /// The counter; drawn only on a terminal and when enabled.
    bar: ProgressBar,
    /// Print plain lines from [`Progress::run`] (enabled, and stderr is not a terminal).
    plain: bool,
    finished: Mutex<bool>,
    wake: Condvar,
}

impl Progress {
    /// A counter of `files` files of `total` bytes for the step called `label`; `enabled`
    /// false makes it silent.
    pub fn new(label: impl Into<String>, files: u64, total: u64, enabled: bool) -> Self {
        let label = label.into();
        let target = if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let mut eta = Eta::new(files, total);
        // The start is a sample: the first drawn one then has a whole interval.
        eta.sample(Duration::ZERO, 0, 0);
        let counts = Arc::new(Counts {
            files_total: files,
            files_done: AtomicU64::new(0),
            eta: Mutex::new(eta),
        });
        let bar = ProgressBar::with_draw_target(Some(total), target)
            .with_style(style(Arc::clone(&counts)))
            .with_prefix(label.clone());
        Self {
            label,
            total,
            counts,
            bar,
            plain: enabled && !std::io::stderr().is_terminal(),
            finished: Mutex::new(false),
            wake: Condvar::new(),
        }
    }

    /// Count `n` more bytes done.
    pub fn add(&self, n: u64) {
        self.bar.inc(n);
    }

    /// Count one more file done (its bytes are counted by [`Progress::add`]).
    pub fn file_done(&self) {
        self.counts.files_done.fetch_add(1, Ordering::Relaxed);
    }

    /// Stop the reporter loop and clear the bar.
    pub fn finish(&self) {
        *self.finished.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
        self.bar.finish_and_clear();
    }

    /// Reporter loop for logs: run it on its own (scoped) thread; it returns after
    /// [`finish`] (at once on a terminal, where the bar draws itself).
    ///
    /// [`finish`]: Progress::finish
    pub fn run(&self) {
        if !self.plain {
            return;
        }
        let start = Instant::now();
        let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let (guard, wait) = self
                .wake
                .wait_timeout_while(finished, PLAIN_EVERY, |done| !*done)
                .unwrap_or_else(PoisonError::into_inner);
            finished = guard;
            if !wait.timed_out() {
                return;
            }
            eprintln!("{}", self.line(start.elapsed()));
        }
    }

    fn line(&self, elapsed: Duration) -> String {
        let done = self.bar.position().min(self.total);
        let pct = if self.total == 0 {
            100.0
        } else {
            done as f64 * 100.0 / self.total as f64
        };
        let rate = done as f64 / elapsed.as_secs_f64().max(1e-3);
        let files = self.counts.files_done.load(Ordering::Relaxed);
        format!(
            "  {}: {} / {} ({pct:.0}%), {files}/{} files, {}, ETA {}",
            self.label,
            units::bytes(done),
            units::bytes(self.total),
            self.counts.files_total,
            units::rate(rate),
            self.counts.left(elapsed, done),
        )
    }
}

/// [`TEMPLATE`] with its `left` key: the model is sampled at each draw.
fn style(counts: Arc<Counts>) -> ProgressStyle {
    let Ok(style) = ProgressStyle::with_template(TEMPLATE) else {
        return ProgressStyle::default_bar();
    };
    style.with_key(
        "left",
        move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let done = s.pos().min(s.len().unwrap_or(u64::MAX));
            let _ = w.write_str(&counts.left(s.elapsed(), done));
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_line_counts_bytes() {
        let p = Progress::new("gen x", 10, 10 << 20, false);
        p.add(1 << 20);
        p.file_done();
        // The first progress starts the time-left fit.
        assert_eq!(
            p.line(Duration::from_secs(1)),
            "  gen x: 1.00 MiB / 10.00 MiB (10%), 1/10 files, 1.00 MiB/s, ETA --"
        );
        p.add(4 << 20);
        for _ in 0..4 {
            p.file_done();
        }
        // 40 % of the files and of the bytes in 2 s: the other half takes 2.5 s,
        // however the time divides between files and bytes.
        assert_eq!(
            p.line(Duration::from_secs(3)),
            "  gen x: 5.00 MiB / 10.00 MiB (50%), 5/10 files, 1.67 MiB/s, ETA 2.5 s"
        );
        // More than the total (a file grew) shows the total.
        p.add(8 << 20);
        assert!(p
            .line(Duration::from_secs(4))
            .contains("10.00 MiB / 10.00 MiB (100%)"));
    }

    #[test]
    fn terminal_template_is_valid() {
        assert!(ProgressStyle::with_template(TEMPLATE).is_ok());
    }

    #[test]
    fn run_returns_after_finish() {
        let p = Progress::new("x", 1, 1, true);
        std::thread::scope(|s| {
            let reporter = s.spawn(|| p.run());
            p.finish();
            reporter.join().unwrap();
        });
        // A finished counter's reporter returns at once too.
        p.run();
    }
}
