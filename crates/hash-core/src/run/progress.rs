//! A progress line on stderr: bytes and files, each of its total and as a
//! percentage, the rate, and the time left.
//!
//! `indicatif` draws it: it clears and redraws the line, estimates the byte
//! rate from recent progress, and gets out of the way of other messages
//! ([`Progress::print`]). The time left is not indicatif's (bytes only, so it
//! says "done" once the large files are, with the many small ones still to
//! go): it is [`Eta`]'s, a model of the run's cost per file and per byte. The
//! two percentages are shown apart for the same reason: neither alone says how
//! far the run is. A thread of ours moves the bar and feeds the model every
//! 200 ms from counters, so the hot path pays nothing but the counter updates
//! it makes anyway. Bytes come from two sources and the larger wins: the
//! in-process hashers' running byte count (so one huge file still moves the
//! bar) and the sizes of completed files (the only thing the parent of
//! `hash-procs` workers sees).
//!
//! On by default only when stderr is a terminal; never drawn unless asked for
//! otherwise, so pipes, CI and hyperfine see nothing. Forced onto a stderr
//! that is not a terminal (`--progress`), every tick is a line of its own
//! ([`Lines`]): a log keeps the history instead of control sequences.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};

use crate::eta::Eta;
use crate::hasher::Reading;
use crate::units;

const TICK: Duration = Duration::from_millis(200);

/// The line; `percent` (of bytes) is indicatif's, the other keys are [`style`]'s.
const TEMPLATE: &str = "{sizes} ({percent}%), {files} files ({files_percent}%), \
                        {rate}, ETA {left}";

/// What the hashers count, sampled by the ticker.
#[derive(Debug)]
struct Counts {
    /// Grown by [`Progress::add_total`] as a manifest is read.
    files_total: AtomicU64,
    bytes_total: AtomicU64,
    files_done: AtomicU64,
    bytes_done: AtomicU64,
    /// The run's hashers count the bytes they stream (`hash-procs`' workers
    /// report theirs a few times a second).
    reading: Arc<Reading>,
    /// The time-left model, fed by the ticker and read by the drawing.
    eta: Mutex<Eta>,
    /// Whether the run reads its files one at a time.
    one_reader: bool,
    stop: AtomicBool,
}

impl Counts {
    fn bytes(&self) -> u64 {
        let streamed = self.reading.bytes_read();
        streamed
            .max(self.bytes_done.load(Ordering::Relaxed))
            .min(self.bytes_total.load(Ordering::Relaxed).max(1))
    }

    fn eta(&self) -> std::sync::MutexGuard<'_, Eta> {
        self.eta.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the ticker does every [`TICK`]: feed the model the counts as they are
/// `now` (since the start) and move the bar, which draws the line.
fn tick(bar: &ProgressBar, counts: &Counts, now: Duration) {
    let bytes = counts.bytes();
    let files = counts.files_done.load(Ordering::Relaxed);
    let mut eta = counts.eta();
    if counts.one_reader && counts.reading.saw_uncached() {
        eta.reading_from_disk();
    }
    eta.sample(now, files, bytes);
    drop(eta);
    bar.set_position(bytes);
}

/// A running progress display.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    counts: Arc<Counts>,
    terminal: bool,
    ticker: Option<JoinHandle<()>>,
}

/// Whether to show progress: `--progress`/`--no-progress` force it, otherwise
/// only when stderr is a terminal.
pub fn wanted(forced: Option<bool>) -> bool {
    forced.unwrap_or_else(|| io::stderr().is_terminal())
}

impl Progress {
    /// Start drawing progress towards `files_total` files of `bytes_total`
    /// bytes, hashed by the run that shares `reading`; `one_reader`: its
    /// files are read one at a time (`hash-serial`).
    pub fn start(
        files_total: u64,
        bytes_total: u64,
        one_reader: bool,
        reading: Arc<Reading>,
    ) -> Progress {
        let terminal = io::stderr().is_terminal();
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::term_like(Box::new(Lines::new(Box::new(io::stderr()))))
        };
        let mut p = Progress::on(
            target,
            terminal,
            (files_total, bytes_total, one_reader),
            reading,
        );
        let (bar, counts) = (p.bar.clone(), Arc::clone(&p.counts));
        // Without a thread (none could start) the line is drawn at the end only.
        // The model's clock starts with it (its first sample, in `on`).
        let start = Instant::now();
        let ticker = std::thread::Builder::new().stack_size(256 * 1024);
        let spawned = ticker.spawn(move || {
            while !counts.stop.load(Ordering::Relaxed) {
                std::thread::park_timeout(TICK);
                if !counts.stop.load(Ordering::Relaxed) {
                    tick(&bar, &counts, start.elapsed());
                }
            }
        });
        p.ticker = spawned.ok();
        p
    }

    /// The display, not yet moving: [`Progress::start`] adds the ticker.
    fn on(
        target: ProgressDrawTarget,
        terminal: bool,
        (files_total, bytes_total, one_reader): (u64, u64, bool),
        reading: Arc<Reading>,
    ) -> Progress {
        let mut eta = Eta::new(files_total, bytes_total);
        // The start is a sample: the first tick then has an interval to fit.
        eta.sample(Duration::ZERO, 0, 0);
        let counts = Arc::new(Counts {
            files_total: AtomicU64::new(files_total),
            bytes_total: AtomicU64::new(bytes_total),
            files_done: AtomicU64::new(0),
            bytes_done: AtomicU64::new(0),
            reading,
            eta: Mutex::new(eta),
            one_reader,
            stop: AtomicBool::new(false),
        });
        let bar = ProgressBar::with_draw_target(Some(bytes_total), target)
            .with_style(style(Arc::clone(&counts)));
        Progress {
            bar,
            counts,
            terminal,
            ticker: None,
        }
    }

    /// `files` more files of `bytes` bytes to go: a manifest checked as it is
    /// read learns its length batch by batch.
    pub fn add_total(&self, files: u64, bytes: u64) {
        let c = &self.counts;
        c.files_total.fetch_add(files, Ordering::Relaxed);
        let total = c.bytes_total.fetch_add(bytes, Ordering::Relaxed) + bytes;
        c.eta().add_total(files, bytes);
        self.bar.set_length(total);
    }

    /// One more file finished (hashed or failed), of `size` bytes.
    pub fn file_done(&self, size: u64) {
        self.counts.files_done.fetch_add(1, Ordering::Relaxed);
        self.counts.bytes_done.fetch_add(size, Ordering::Relaxed);
    }

    /// Run `f` (which writes to stderr) with the progress line out of the way.
    /// Off a terminal the line is already out of the way: each is whole.
    pub fn print<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.terminal {
            self.bar.suspend(f)
        } else {
            f()
        }
    }

    /// Stop drawing and clear the line.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.counts.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The style of the line: [`TEMPLATE`] and its keys.
fn style(counts: Arc<Counts>) -> ProgressStyle {
    ProgressStyle::with_template(TEMPLATE)
        .expect("the template parses")
        .with_key("sizes", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&sizes(s.pos(), s.len().unwrap_or(0)));
        })
        .with_key("files", {
            let counts = Arc::clone(&counts);
            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let done = counts.files_done.load(Ordering::Relaxed);
                let total = counts.files_total.load(Ordering::Relaxed);
                let _ = write!(w, "{done}/{total}");
            }
        })
        .with_key("files_percent", {
            let counts = Arc::clone(&counts);
            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let done = counts.files_done.load(Ordering::Relaxed);
                let total = counts.files_total.load(Ordering::Relaxed);
                let _ = write!(w, "{}", percent(done, total));
            }
        })
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&units::rate(s.per_sec()));
        })
        .with_key(
            "left",
            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&units::eta(counts.eta().remaining()));
            },
        )
}

/// `done / total`, each in its own unit (`3.00 MiB / 3.38 GiB`).
fn sizes(bytes: u64, total: u64) -> String {
    format!("{} / {}", units::bytes(bytes), units::bytes(total))
}

/// `done` as a whole percentage of `total`, rounded down as indicatif's
/// `percent` is (so 100 means all done), and 100 of nothing.
fn percent(done: u64, total: u64) -> u64 {
    if total == 0 {
        100
    } else {
        (u128::from(done.min(total)) * 100 / u128::from(total)) as u64
    }
}

/// indicatif's terminal for a stderr that is not one: each frame it draws
/// becomes one line (no cursor movement, no padding, nothing for a clear).
struct Lines {
    frame: Mutex<String>,
    sink: Mutex<Box<dyn Write + Send>>,
}

impl Lines {
    fn new(sink: Box<dyn Write + Send>) -> Lines {
        Lines {
            frame: Mutex::new(String::new()),
            sink: Mutex::new(sink),
        }
    }

    fn frame(&self) -> std::sync::MutexGuard<'_, String> {
        self.frame.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines").finish_non_exhaustive()
    }
}

impl TermLike for Lines {
    fn width(&self) -> u16 {
        // Wide enough for the line; indicatif pads to it (trimmed in `flush`).
        240
    }

    fn move_cursor_up(&self, _: usize) -> io::Result<()> {
        Ok(())
    }

    fn move_cursor_down(&self, _: usize) -> io::Result<()> {
        Ok(())
    }

    fn move_cursor_right(&self, _: usize) -> io::Result<()> {
        Ok(())
    }

    fn move_cursor_left(&self, _: usize) -> io::Result<()> {
        Ok(())
    }

    fn write_line(&self, s: &str) -> io::Result<()> {
        self.frame().push_str(s);
        self.flush()
    }

    fn write_str(&self, s: &str) -> io::Result<()> {
        self.frame().push_str(s);
        Ok(())
    }

    fn clear_line(&self) -> io::Result<()> {
        self.frame().clear();
        Ok(())
    }

    /// Write the frame as one line, in one `write` (whole even when other
    /// threads print to stderr meanwhile).
    fn flush(&self) -> io::Result<()> {
        let line = std::mem::take(&mut *self.frame());
        let line = line.trim_end_matches(' ');
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        if !line.is_empty() {
            sink.write_all(format!("{line}\n").as_bytes())?;
        }
        sink.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_and_percent_keys() {
        assert_eq!(sizes(512 << 20, 1024 << 20), "512.00 MiB / 1.00 GiB");
        assert_eq!(sizes(0, 0), "0 B / 0 B");
        assert_eq!(percent(0, 10), 0);
        assert_eq!(percent(3, 10), 30);
        assert_eq!(percent(189, 117_769), 0);
        assert_eq!(percent(117_768, 117_769), 99);
        assert_eq!(percent(11, 10), 100);
        assert_eq!(percent(0, 0), 100);
        assert_eq!(percent(u64::MAX, u64::MAX), 100);
    }

    /// A sink the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn off_a_terminal_each_frame_is_one_line_and_finish_adds_none() {
        let sink = Shared::default();
        let target = ProgressDrawTarget::term_like(Box::new(Lines::new(Box::new(sink.clone()))));
        let p = Progress::on(target, false, (10, 1024 << 20, false), Default::default());
        // What the ticker does, on a clock of the test's (no ticker runs here):
        // nothing at the start, a tenth of the bytes and one file in 1 s (the
        // first progress, where the fit starts), then half the bytes and half
        // the files at 3 s.
        tick(&p.bar, &p.counts, Duration::ZERO);
        p.file_done(0);
        p.counts
            .bytes_done
            .store((1024 << 20) / 10, Ordering::Relaxed);
        tick(&p.bar, &p.counts, Duration::from_secs(1));
        for _ in 0..4 {
            p.file_done(0);
        }
        p.counts.bytes_done.store(512 << 20, Ordering::Relaxed);
        tick(&p.bar, &p.counts, Duration::from_secs(3));
        p.finish();
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(!lines.is_empty(), "{text:?}");
        let mut etas = Vec::new();
        for line in &lines {
            // The rate is indicatif's estimate on the real clock: only its shape is known.
            let (head, left) = line.rsplit_once(", ETA ").expect(line);
            let (counts, rate) = head.rsplit_once(", ").expect(line);
            let number = rate.split(' ').next().unwrap();
            assert!(
                rate.ends_with("B/s") && number.parse::<f64>().is_ok(),
                "{line:?}"
            );
            assert!(
                counts == "0 B / 1.00 GiB (0%), 0/10 files (0%)"
                    || counts == "102.40 MiB / 1.00 GiB (10%), 1/10 files (10%)"
                    || counts == "512.00 MiB / 1.00 GiB (50%), 5/10 files (50%)",
                "{line:?}"
            );
            etas.push(left);
        }
        // 40 % of everything took 2 s: the other half takes 2.5 s more,
        // however the time divides between files and bytes.
        assert_eq!(etas.last(), Some(&"2.5 s"), "{text:?}");
        assert!(etas.iter().all(|e| *e == "--" || *e == "2.5 s"), "{text:?}");
        assert!(text.ends_with('\n') && !text.contains('\r') && !text.contains('\x1b'));
    }

    #[test]
    fn forcing_wins_over_the_terminal_test() {
        assert!(wanted(Some(true)));
        assert!(!wanted(Some(false)));
    }
}
