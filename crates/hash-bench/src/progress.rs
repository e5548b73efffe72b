//! A byte-counting progress display on stderr for long steps (generation, hashing).
//!
//! Workers count bytes into an `indicatif` bar, which draws (rate and ETA included) only
//! when stderr is a terminal, and is cleared at the end. In CI logs indicatif draws
//! nothing, so there the reporter thread prints a plain line every few seconds instead:
//! logs stay short but still show that work is moving.

use std::io::IsTerminal;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the plain (not a terminal) line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The line on a terminal: the plain line's figures plus an ETA, and a bar in whatever
/// width is left (so that the line never wraps).
const TEMPLATE: &str = "  {prefix}: {binary_bytes} / {binary_total_bytes} ({percent} %), \
                        {binary_bytes_per_sec}, ETA {eta} [{wide_bar}]";

/// Shared progress counter; see [`Progress::run`].
#[derive(Debug)]
pub struct Progress {
    label: String,
    total: u64,
    /// The counter; drawn only on a terminal and when enabled.
    bar: ProgressBar,
    /// Print plain lines from [`Progress::run`] (enabled, and stderr is not a terminal).
    plain: bool,
    finished: Mutex<bool>,
    wake: Condvar,
}

impl Progress {
    /// A counter of `total` bytes for the step called `label`; `enabled` false makes it silent.
    pub fn new(label: impl Into<String>, total: u64, enabled: bool) -> Self {
        let label = label.into();
        let target = if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target)
            .with_style(
                ProgressStyle::with_template(TEMPLATE)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            )
            .with_prefix(label.clone());
        Self {
            label,
            total,
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
        format!(
            "  {}: {} / {} ({pct:.0} %), {}/s",
            self.label,
            HumanBytes(done),
            HumanBytes(self.total),
            HumanBytes(rate as u64)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_line_counts_bytes() {
        let p = Progress::new("gen x", 8 << 20, false);
        p.add(2 << 20);
        p.add(2 << 20);
        assert_eq!(
            p.line(Duration::from_secs(2)),
            "  gen x: 4.00 MiB / 8.00 MiB (50 %), 2.00 MiB/s"
        );
        // More than the total (a file grew) shows the total.
        p.add(8 << 20);
        assert!(p
            .line(Duration::from_secs(1))
            .contains("8.00 MiB / 8.00 MiB (100 %)"));
    }

    #[test]
    fn terminal_template_is_valid() {
        assert!(ProgressStyle::with_template(TEMPLATE).is_ok());
    }

    #[test]
    fn run_returns_after_finish() {
        let p = Progress::new("x", 1, true);
        std::thread::scope(|s| {
            let reporter = s.spawn(|| p.run());
            p.finish();
            reporter.join().unwrap();
        });
        // A finished counter's reporter returns at once too.
        p.run();
    }
}
