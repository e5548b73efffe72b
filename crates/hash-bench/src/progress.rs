//! A byte-counting progress line on stderr for long steps (generation, hashing).
//!
//! Workers bump an atomic counter; one reporter thread prints. On a terminal the line is
//! redrawn in place (`\r`); otherwise (CI logs) a plain line is printed every few
//! seconds, so logs stay short but still show that work is moving.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shared progress counter; see [`Progress::run`].
#[derive(Debug)]
pub struct Progress {
    label: String,
    total: u64,
    done: AtomicU64,
    finished: AtomicBool,
    enabled: bool,
}

impl Progress {
    /// A counter of `total` bytes for the step called `label`; `enabled` false makes it silent.
    pub fn new(label: impl Into<String>, total: u64, enabled: bool) -> Self {
        Self {
            label: label.into(),
            total,
            done: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            enabled,
        }
    }

    /// Count `n` more bytes done.
    pub fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Stop the reporter loop.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::Relaxed);
    }

    /// Reporter loop: run it on its own (scoped) thread; it returns after [`finish`].
    ///
    /// [`finish`]: Progress::finish
    pub fn run(&self) {
        if !self.enabled {
            return;
        }
        let tty = std::io::stderr().is_terminal();
        let start = Instant::now();
        let mut last_print = Instant::now();
        let mut printed = false;
        while !self.finished.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            let every = if tty {
                Duration::from_millis(500)
            } else {
                Duration::from_secs(5)
            };
            if last_print.elapsed() < every {
                continue;
            }
            last_print = Instant::now();
            let line = self.line(start.elapsed());
            let mut err = std::io::stderr().lock();
            if tty {
                let _ = write!(err, "\r\x1b[2K{line}");
            } else {
                let _ = writeln!(err, "{line}");
            }
            let _ = err.flush();
            printed = true;
        }
        if printed && tty {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }

    fn line(&self, elapsed: Duration) -> String {
        let done = self.done.load(Ordering::Relaxed).min(self.total);
        let pct = if self.total == 0 {
            100.0
        } else {
            done as f64 * 100.0 / self.total as f64
        };
        let rate = done as f64 / elapsed.as_secs_f64().max(1e-3);
        format!(
            "  {}: {} / {} ({pct:.0} %), {}/s",
            self.label,
            human_bytes(done),
            human_bytes(self.total),
            human_bytes(rate as u64)
        )
    }
}
/// Human-readable byte count in binary units.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
