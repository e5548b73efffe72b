//! The time left in a run, from a cost model fitted as the run goes.
//!
//! Hashing a tree costs time per byte (reading, SHA-256) and time per file
//! (open, stat, close, round trips to a disk or a server). Real trees put
//! their bytes in a few large files and their count in many small ones, and a
//! walk that hashes the large ones first has done most of the bytes and almost
//! none of the files when a bytes-only estimate already says "done". So the
//! model is `time ≈ a·files + b·bytes`, and the estimate is `a·files_left +
//! b·bytes_left`.
//!
//! `a` and `b` come from least squares over the increments between samples
//! (files done, bytes done, seconds taken). The sums of the 2×2 normal
//! equations decay exponentially with time (`FIT_MEMORY`), so the fit
//! follows a run whose costs change (a cold disk warming up) without forgetting
//! a phase it can no longer observe (the bytes' cost, once only small files are
//! left). Files and bytes are counted as fractions of their totals, which keeps
//! the two regressors on one scale. A small ridge, relative to the data
//! (`RIDGE`), does the fallbacks without a special case: a regressor that has
//! not varied (no file finished yet, or only empty files) gets no weight and
//! the other gets its one-variable fit; when the two have only moved together
//! (all files the same size) the time is split between them in proportion to
//! how far each moved; and while hardly any files have ended (none, or a few
//! large ones), the cost of a file is a prior (`PRIOR_FILE_SECS`) rather
//! than nothing. `a` and `b` stay non-negative: a
//! negative one is set to zero and the other refitted alone.
//!
//! The shown estimate counts down between samples and moves only part of the
//! way to each new fit (`SMOOTHING`), so one odd interval does not make the
//! display jump. Samples with no progress (a stall, or bytes that show only
//! in steps, as a `hash-procs` worker's do, a few times a second) are not
//! fitted on their own: their time is carried into the next interval that
//! moved, which is what it was spent on. The exception is the time before
//! the first progress, which is the run starting as much as hashing: the fit
//! starts from the first sample that shows progress.
//!
//! The model is pure — it is fed `(now, files_done, bytes_done)` and never
//! reads a clock — so tests drive it with a synthetic one.

use std::time::Duration;

/// Seconds after which an interval's weight in the fit has fallen to 1/e: long
/// enough to keep a phase of large files in view through the small ones that
/// follow, short enough to follow a change of pace.
const FIT_MEMORY: f64 = 8.0;

/// Time constant, in seconds, of the shown estimate's approach to the fit.
const SMOOTHING: f64 = 0.3;

/// The ridge, as a fraction of the normal matrix's trace: small enough to bias
/// a well-determined fit by about a thousandth, large enough to keep a
/// regressor that barely moved (one file finished during a large file) from
/// explaining the clock's noise with a huge coefficient.
const RIDGE: f64 = 1e-3;

/// What the ridge pulls the cost of a file towards, in seconds per file:
/// the cost of a file is unknown until files finish, and a run that hashes
/// its large files first would otherwise say "done" with every small file
/// still ahead. 5 µs is between a warm small file on one core here (~3.5 µs:
/// `openat`, `fstat`, `read`, `close`) and a cold one with many reads in
/// flight (~10–25 µs); once files end in numbers, the data outweighs it.
const PRIOR_FILE_SECS: f64 = 5e-6;

/// The prior for a file when the run reads from the disk one file at a
/// time ([`Eta::reading_from_disk`]): a 4 KiB file read cold costs a random
/// read of the disk (on the 2-vCPU guest's virtio disk 100,000 of them took
/// `hash-serial` 6.4 s, 64 µs each).
pub(crate) const PRIOR_COLD_FILE_SECS: f64 = 50e-6;

/// A point the counts were at: seconds since the start, files, bytes.
#[derive(Debug, Clone, Copy)]
struct Point {
    secs: f64,
    files: u64,
    bytes: u64,
}

/// Online estimate of the time left; see the module docs.
#[derive(Debug, Clone)]
pub struct Eta {
    files_total: u64,
    bytes_total: u64,
    /// The last sample that showed progress: increments are taken from it.
    anchor: Option<Point>,
    /// The time of the last sample, progress or not (for the countdown).
    last_secs: f64,
    /// Decayed sums of the normal equations, over increments in fractions of
    /// the totals: Σf², Σf·b, Σb², Σf·t, Σb·t.
    ff: f64,
    fb: f64,
    bb: f64,
    ft: f64,
    bt: f64,
    /// The estimate shown, in seconds from `last_secs`.
    shown: Option<f64>,
    /// What the ridge pulls the cost of a file towards while files have not
    /// ended in numbers ([`PRIOR_FILE_SECS`] unless told otherwise).
    prior: f64,
}

impl Eta {
    /// `files` more files holding `bytes` more bytes to go (a manifest read as
    /// it is checked). The fit so far stays: its fractions were of the smaller
    /// totals, so the time left is an estimate for what is known, not more.
    pub(crate) fn add_total(&mut self, files: u64, bytes: u64) {
        self.files_total += files;
        self.bytes_total += bytes;
    }

    /// A model of a run of `files_total` files holding `bytes_total` bytes.
    pub fn new(files_total: u64, bytes_total: u64) -> Eta {
        Eta {
            files_total,
            bytes_total,
            anchor: None,
            last_secs: 0.0,
            ff: 0.0,
            fb: 0.0,
            bb: 0.0,
            ft: 0.0,
            bt: 0.0,
            shown: None,
            prior: PRIOR_FILE_SECS,
        }
    }

    /// Say that the run reads from the disk (a large file's data was not in
    /// the page cache) one file at a time: until files end in numbers, a file
    /// is expected to cost a read of the disk ([`PRIOR_COLD_FILE_SECS`]).
    /// Not for a pool that adds readers while reads wait (threads, processes,
    /// rings): their reads overlap, and how many overlap is the in-flight
    /// policy's to find once small files are read (a cold disk read shared
    /// between the two readers such a pool starts with doubled the time left
    /// that `hash-threads` and `hash-async` showed at 40 % of a cold run).
    pub(crate) fn reading_from_disk(&mut self) {
        self.prior = PRIOR_COLD_FILE_SECS;
    }

    /// Feed the counts as they are at `now` (any fixed origin, never going
    /// back) and get the estimate of the time left, if there is one yet.
    pub fn sample(&mut self, now: Duration, files_done: u64, bytes_done: u64) -> Option<Duration> {
        let here = Point {
            secs: now.as_secs_f64(),
            files: files_done,
            bytes: bytes_done,
        };
        let Some(anchor) = self.anchor else {
            self.anchor = Some(here);
            self.last_secs = here.secs;
            return None;
        };
        let since = (here.secs - self.last_secs).max(0.0);
        self.last_secs = here.secs.max(self.last_secs);
        let moved = here.files > anchor.files || here.bytes > anchor.bytes;
        if moved && here.secs > anchor.secs {
            // The time up to the first progress is the run getting going
            // (threads or worker processes starting, the first opens; a
            // `hash-procs` worker's first byte count comes 200 ms in) as much
            // as hashing: fitted, it made a warm run's bytes look twice as
            // slow as they were. The fit starts from the first progress.
            if anchor.files > 0 || anchor.bytes > 0 {
                self.fit_interval(anchor, here);
            }
            self.anchor = Some(here);
        }
        let countdown = self.shown.map(|s| (s - since).max(0.0));
        self.shown = match (self.fitted(here), countdown) {
            (Some(fit), Some(c)) => Some(c + (1.0 - (-since / SMOOTHING).exp()) * (fit - c)),
            (fit, c) => fit.or(c),
        };
        self.remaining()
    }

    /// The estimate of the time left as of the last sample.
    pub fn remaining(&self) -> Option<Duration> {
        self.shown.map(Duration::from_secs_f64)
    }

    /// Add the increment from `from` to `to` to the decayed sums.
    fn fit_interval(&mut self, from: Point, to: Point) {
        let dt = to.secs - from.secs;
        let df = fraction(to.files.saturating_sub(from.files), self.files_total);
        let db = fraction(to.bytes.saturating_sub(from.bytes), self.bytes_total);
        let keep = (-dt / FIT_MEMORY).exp();
        self.ff = self.ff * keep + df * df;
        self.fb = self.fb * keep + df * db;
        self.bb = self.bb * keep + db * db;
        self.ft = self.ft * keep + df * dt;
        self.bt = self.bt * keep + db * dt;
    }

    /// The fit's time left from the counts at `here`.
    fn fitted(&self, here: Point) -> Option<f64> {
        let (a, b) = self.coefficients()?;
        let files_left = fraction(
            self.files_total.saturating_sub(here.files),
            self.files_total,
        );
        let bytes_left = fraction(
            self.bytes_total.saturating_sub(here.bytes),
            self.bytes_total,
        );
        Some(a * files_left + b * bytes_left)
    }

    /// `(a, b)`: seconds for all the files and for all the bytes.
    fn coefficients(&self) -> Option<(f64, f64)> {
        let trace = self.ff + self.bb;
        if trace <= 0.0 || !trace.is_finite() {
            return None;
        }
        let ridge = RIDGE * trace;
        let (ff, bb) = (self.ff + ridge, self.bb + ridge);
        // While the files' own variation is below the ridge (none ended, or
        // only a few large ones, a sliver of the count), the ridge pulls `a`
        // towards the prior (seconds for all the files): `ft` gains its
        // pseudo-observation. After, the data alone split the time (the
        // prior would only bias the split when files and bytes move together).
        let prior = if self.ff > ridge { 0.0 } else { self.prior };
        let ft = self.ft + ridge * prior * self.files_total as f64;
        // Positive: the ridge is, and Cauchy–Schwarz bounds fb² by ff·bb.
        let det = ff * bb - self.fb * self.fb;
        let a = (ft * bb - self.fb * self.bt) / det;
        let b = (ff * self.bt - self.fb * ft) / det;
        Some(if a < 0.0 {
            (0.0, self.bt / bb)
        } else if b < 0.0 {
            (ft / ff, 0.0)
        } else {
            (a, b)
        })
    }
}

/// `part` as a fraction of `total` (of 1 when the total is 0: then nothing of
/// it is ever left, and any part of it is all of it).
fn fraction(part: u64, total: u64) -> f64 {
    part as f64 / total.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    /// The display's tick.
    const TICK: f64 = 0.2;

    /// A synthetic run: files hashed one after another, each `(size, seconds)`,
    /// its bytes streamed evenly over its time (as the hashers count them) and
    /// the file counted when it ends.
    struct Run {
        files: Vec<(u64, f64)>,
        /// Where each file ends: seconds and bytes since the start.
        ends: Vec<(f64, u64)>,
    }

    impl Run {
        fn new(parts: &[(u64, u64, f64)]) -> Run {
            let mut files = Vec::new();
            for &(count, size, secs) in parts {
                files.extend(std::iter::repeat_n((size, secs), count as usize));
            }
            Run::of(files)
        }

        fn of(files: Vec<(u64, f64)>) -> Run {
            let (mut t, mut b) = (0.0, 0);
            let ends = files
                .iter()
                .map(|&(size, secs)| {
                    t += secs;
                    b += size;
                    (t, b)
                })
                .collect();
            Run { files, ends }
        }

        fn duration(&self) -> f64 {
            self.ends.last().map_or(0.0, |e| e.0)
        }

        fn totals(&self) -> (u64, u64) {
            (self.files.len() as u64, self.ends.last().map_or(0, |e| e.1))
        }

        /// Files and bytes done at `t` seconds.
        fn at(&self, t: f64) -> (u64, u64) {
            let done = self.ends.partition_point(|e| e.0 <= t);
            let (start_t, start_b) = if done == 0 {
                (0.0, 0)
            } else {
                self.ends[done - 1]
            };
            let streamed = match self.files.get(done) {
                Some(&(size, secs)) => (size as f64 * ((t - start_t) / secs).min(1.0)) as u64,
                None => 0,
            };
            (done as u64, start_b + streamed)
        }

        /// Drive a model tick by tick to the end: `(t, estimate)` per tick.
        fn estimates(&self) -> Vec<(f64, Option<f64>)> {
            let (files, bytes) = self.totals();
            self.estimates_of(Eta::new(files, bytes))
        }

        /// [`Run::estimates`] of `eta`, set up by the caller.
        fn estimates_of(&self, mut eta: Eta) -> Vec<(f64, Option<f64>)> {
            (0..)
                .map(|k| k as f64 * TICK)
                .take_while(|&t| t < self.duration())
                .map(|t| {
                    let (f, b) = self.at(t);
                    let left = eta.sample(Duration::from_secs_f64(t), f, b);
                    (t, left.map(|d| d.as_secs_f64()))
                })
                .collect()
        }

        /// The relative error of the estimate at the first tick at or after
        /// 30 %, 50 % and 80 % of the run, each printed (`--nocapture`).
        fn errors(&self, name: &str) -> [f64; 3] {
            let ticks = self.estimates();
            let total = self.duration();
            [0.3, 0.5, 0.8].map(|share| {
                let &(t, left) = ticks.iter().find(|(t, _)| *t >= share * total).unwrap();
                let truth = total - t;
                let err = (left.expect("an estimate by then") - truth) / truth;
                eprintln!(
                    "{name}: at {:.0} % ({t:.1} s of {total:.2}): ETA {:.2} s, truth {truth:.2} s, error {:+.1} %",
                    share * 100.0,
                    left.unwrap(),
                    err * 100.0
                );
                err
            })
        }
    }

    /// A cold run read one file at a time: three 1 GiB files at 1 GiB/s,
    /// then 100,000 files of 4 KiB at 60 µs each (a disk read each).
    #[test]
    fn reading_from_disk_prices_the_small_files_before_any_is_read() {
        let run = Run::new(&[(3, GIB, 1.0), (100_000, 4 * KIB, 60e-6)]);
        let (files, bytes) = run.totals();
        // At 2.5 s, every tick so far in the large files: 0.5 s of them and
        // 6 s of small files are left.
        let at = |eta: Eta| {
            let ticks = run.estimates_of(eta);
            let &(t, left) = ticks.iter().find(|(t, _)| *t >= 2.5).unwrap();
            left.unwrap() / (run.duration() - t)
        };
        let warm = at(Eta::new(files, bytes));
        let mut eta = Eta::new(files, bytes);
        eta.reading_from_disk();
        let cold = at(eta);
        eprintln!(
            "ETA ÷ time left at 2.5 s: {warm:.2} with the warm prior, {cold:.2} told of the disk"
        );
        assert!(
            warm < 0.5,
            "{warm}: without the hint, the small files look free"
        );
        assert!((0.7..=1.3).contains(&cold), "{cold}");
    }

    fn assert_within(errors: [f64; 3], bound: f64) {
        for e in errors {
            assert!(e.abs() <= bound, "{errors:?}");
        }
    }

    /// 3 files of 500 MiB at 1 GiB/s, 100,000 of 4 KiB at 20,000 files/s.
    const LARGE: (u64, u64, f64) = (3, 500 * MIB, 500.0 * MIB as f64 / GIB as f64);
    const SMALL: (u64, u64, f64) = (100_000, 4 * KIB, 1.0 / 20_000.0);

    #[test]
    fn large_files_first_then_many_small_ones() {
        assert_within(Run::new(&[LARGE, SMALL]).errors("large first"), 0.35);
    }

    #[test]
    fn before_any_small_file_ends_the_files_ahead_still_count() {
        // 1 s in, the large files are two-thirds done and not one small file
        // has ended: their 5 s cannot be known yet, but the line must not say
        // "done" in 0.5 s (the large files' rest) as a bytes-only fit would.
        let run = Run::new(&[LARGE, SMALL]);
        let ticks = run.estimates();
        let &(_, left) = ticks.iter().find(|(t, _)| *t >= 1.0).unwrap();
        let left = left.expect("an estimate by 1 s");
        // Without the prior it says 0.85 s; with it, the rest of the large
        // files and 100,000 × 5 µs.
        assert!(left >= 1.2, "ETA {left:.2} s with 100,000 files ahead");
    }

    #[test]
    fn small_files_first_then_large_ones() {
        assert_within(Run::new(&[SMALL, LARGE]).errors("small first"), 0.35);
    }

    #[test]
    fn uniform_files() {
        // 20,000 files of 256 KiB, 2 ms each: 4,000 files a second at 125 MiB/s.
        let run = Run::new(&[(20_000, 256 * KIB, 0.002)]);
        assert_within(run.errors("uniform"), 0.35);
    }

    /// A deterministic spread of sizes and times (no clock, no seed from it).
    fn noisy_run(files: usize) -> Run {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            // xorshift64: reproducible, and enough spread for a test.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        Run::of(
            (0..files)
                .map(|_| {
                    let size = 1 + next() % MIB;
                    // 100 µs per file and 1 ms per MiB, give or take half.
                    let cost = 1e-4 + size as f64 / MIB as f64 * 1e-3;
                    let jitter = 0.5 + (next() % 1000) as f64 / 1000.0;
                    // One file in 200 waits 50 ms more (a cold directory, a
                    // busy server): some ticks are much slower than others.
                    let hiccup = if next() % 200 == 0 { 0.05 } else { 0.0 };
                    (size, cost * jitter + hiccup)
                })
                .collect(),
        )
    }

    #[test]
    fn a_mixed_tree_in_random_order() {
        assert_within(noisy_run(20_000).errors("mixed"), 0.35);
    }

    #[test]
    fn steady_state_does_not_jump() {
        let run = noisy_run(20_000);
        let ticks = run.estimates();
        let total = run.duration();
        let steady = ticks
            .windows(2)
            .filter(|w| w[0].0 >= 0.1 * total && total - w[1].0 >= 1.0);
        let mut worst: f64 = 1.0;
        for w in steady {
            let (before, after) = (w[0].1.unwrap(), w[1].1.unwrap());
            // What the previous estimate predicts for this tick.
            let expected = before - (w[1].0 - w[0].0);
            worst = worst.max(after / expected).max(expected / after);
        }
        eprintln!("steady state: worst tick-to-tick factor {worst:.3}");
        assert!(worst <= 1.1, "{worst}");
    }

    #[test]
    fn stalls_count_towards_the_next_progress() {
        // Bytes only when a file completes (a source that reports in steps): 10 files of
        // 1 MiB, one a second, sampled five times a second. Between
        // completions nothing moves; the fit must still see one file a second.
        let mut eta = Eta::new(10, 10 * MIB);
        let mut last = None;
        for k in 0..=25u64 {
            let done = k / 5;
            last = eta.sample(Duration::from_millis(200 * k), done, done * MIB);
        }
        // At 5 s: 5 files done, 5 left at a second each (counted down 0 s
        // since the last completion).
        let left = last.unwrap().as_secs_f64();
        assert!((left - 5.0).abs() < 0.5, "{left}");
    }

    #[test]
    fn no_estimate_before_progress_and_none_left_at_the_end() {
        let mut eta = Eta::new(4, 4096);
        assert_eq!(eta.sample(Duration::ZERO, 0, 0), None);
        assert_eq!(eta.sample(Duration::from_secs(1), 0, 0), None);
        // The first progress only starts the fit: the time before it was
        // partly the run starting.
        assert_eq!(eta.sample(Duration::from_secs(2), 1, 1024), None);
        let left = eta.sample(Duration::from_secs(3), 2, 2048).unwrap();
        // A quarter of each a second: the other half takes 2 s, whatever
        // the split.
        assert!((left.as_secs_f64() - 2.0).abs() < 0.01, "{left:?}");
        let end = eta.sample(Duration::from_secs(5), 4, 4096).unwrap();
        assert!(end.as_secs_f64() < 0.01, "{end:?}");
    }

    #[test]
    fn empty_totals_do_not_divide_by_zero() {
        let mut eta = Eta::new(0, 0);
        eta.sample(Duration::ZERO, 0, 0);
        eta.sample(Duration::from_secs(1), 1, 0);
        let left = eta.sample(Duration::from_secs(2), 2, 0).unwrap();
        assert_eq!(left, Duration::ZERO);
    }
}
