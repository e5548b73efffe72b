//! A progress line on stderr: bytes of the total, files, rate, ETA.
//!
//! Drawn by its own thread every 200 ms from counters, so the hot path pays
//! nothing but the counter updates it makes anyway. Bytes come from two
//! sources and the larger wins: the in-process hashers' running byte count
//! (so one huge file still moves the bar) and the sizes of completed files (the
//! only thing the parent of `hash-procs` workers sees). On by default only when
//! stderr is a terminal; never drawn unless asked for otherwise, so pipes, CI
//! and hyperfine see nothing. Messages printed while it is shown go through
//! [`Progress::print`], which clears the line first.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::hasher::bytes_read;

const TICK: Duration = Duration::from_millis(200);

#[derive(Debug)]
struct State {
    files_total: u64,
    bytes_total: u64,
    files_done: AtomicU64,
    bytes_done: AtomicU64,
    base_read: u64,
    start: Instant,
    stop: AtomicBool,
    /// Serialises drawing and other stderr output.
    lock: Mutex<()>,
    terminal: bool,
}

/// A running progress display.
#[derive(Debug)]
pub struct Progress {
    state: Arc<State>,
    ticker: Option<JoinHandle<()>>,
}

/// Whether to show progress: `--progress`/`--no-progress` force it, otherwise
/// only when stderr is a terminal.
pub fn wanted(forced: Option<bool>) -> bool {
    forced.unwrap_or_else(|| std::io::stderr().is_terminal())
}

impl Progress {
    /// Start drawing progress towards `files_total` files of `bytes_total` bytes.
    pub fn start(files_total: u64, bytes_total: u64) -> Progress {
        let state = Arc::new(State {
            files_total,
            bytes_total,
            files_done: AtomicU64::new(0),
            bytes_done: AtomicU64::new(0),
            base_read: bytes_read(),
            start: Instant::now(),
            stop: AtomicBool::new(false),
            lock: Mutex::new(()),
            terminal: std::io::stderr().is_terminal(),
        });
        let ticker = {
            let state = Arc::clone(&state);
            std::thread::spawn(move || {
                while !state.stop.load(Ordering::Relaxed) {
                    std::thread::park_timeout(TICK);
                    if !state.stop.load(Ordering::Relaxed) {
                        state.draw();
                    }
                }
            })
        };
        Progress {
            state,
            ticker: Some(ticker),
        }
    }

    /// One more file finished (hashed or failed), of `size` bytes.
    pub fn file_done(&self, size: u64) {
        self.state.files_done.fetch_add(1, Ordering::Relaxed);
        self.state.bytes_done.fetch_add(size, Ordering::Relaxed);
    }

    /// Run `f` (which writes to stderr) with the progress line out of the way.
    pub fn print<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.state.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.state.clear();
        f()
    }

    /// Stop drawing and clear the line.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
            let _guard = self.state.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.state.clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

impl State {
    fn bytes(&self) -> u64 {
        let streamed = bytes_read() - self.base_read;
        streamed
            .max(self.bytes_done.load(Ordering::Relaxed))
            .min(self.bytes_total.max(1))
    }

    fn draw(&self) {
        let line = render(
            self.bytes(),
            self.bytes_total,
            self.files_done.load(Ordering::Relaxed),
            self.files_total,
            self.start.elapsed(),
        );
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal {
            write!(err, "\r\x1b[K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    fn clear(&self) {
        if self.terminal {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
        }
    }
}

/// The progress line's text.
pub fn render(
    bytes: u64,
    bytes_total: u64,
    files: u64,
    files_total: u64,
    elapsed: Duration,
) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let secs = elapsed.as_secs_f64().max(1e-3);
    let rate = bytes as f64 / secs;
    let pct = if bytes_total == 0 {
        100.0
    } else {
        100.0 * bytes as f64 / bytes_total as f64
    };
    let eta = if rate > 0.0 {
        let left = bytes_total.saturating_sub(bytes) as f64 / rate;
        format!("{}:{:02}", (left as u64) / 60, (left as u64) % 60)
    } else {
        "--:--".to_owned()
    };
    format!(
        "{:.1}/{:.1} MiB ({pct:.0}%), {files}/{files_total} files, {:.1} MiB/s, ETA {eta}",
        bytes as f64 / MIB,
        bytes_total as f64 / MIB,
        rate / MIB,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_shows_share_rate_and_eta() {
        let line = render(512 << 20, 1024 << 20, 3, 10, Duration::from_secs(2));
        assert_eq!(
            line,
            "512.0/1024.0 MiB (50%), 3/10 files, 256.0 MiB/s, ETA 0:02"
        );
    }

    #[test]
    fn render_survives_empty_totals_and_no_progress() {
        let line = render(0, 0, 0, 0, Duration::ZERO);
        assert_eq!(line, "0.0/0.0 MiB (100%), 0/0 files, 0.0 MiB/s, ETA --:--");
    }

    #[test]
    fn forcing_wins_over_the_terminal_test() {
        assert!(wanted(Some(true)));
        assert!(!wanted(Some(false)));
    }
}
