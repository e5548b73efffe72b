//! How many reads to keep in flight: a starting point from what the storage
//! says it is, then what throughput measures.
//!
//! The best number of files being read at once differs by two orders of
//! magnitude between storages: one on a spinning disk (seeks), a few dozen on
//! an SSD, and on a network file system as many as it takes to cover the
//! round trips (each file costs a lookup, an open and a close before its first
//! byte, each a round trip). A fixed number is wrong somewhere, and a hint is
//! wrong often: the virtio disk of a VM says `rotational` and behaves like an
//! SSD, device-mapper hides the flag, and nothing says how far away a server
//! is. So the hint only picks where to start ([`Hint::start`]), and a
//! [`Controller`] climbs from there on measured throughput: it doubles the
//! depth while each doubling buys at least [`GAIN`], halves it while halving
//! costs less than [`KEEP`] (fewer readers doing the same work is better),
//! settles on the best depth it saw, and probes again when throughput falls.
//! Growth needs a measured gain, so a stall (no completions) never grows the
//! depth, and the depth never exceeds the caller's maximum.
//!
//! The controller is a pure function of the completions and clock readings
//! it is given, so its unit tests drive it with simulated storages (an SSD,
//! a spinning disk, a network link) and no sleeps.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the storage under the files says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// A network or user-space file system (`statfs`: NFS, SMB, FUSE, 9p, Ceph, ...).
    Network,
    /// A block device whose `queue/rotational` is 1.
    Rotational,
    /// A block device whose `queue/rotational` is 0.
    SolidState,
    /// Nothing could be learnt (no sysfs entry, a `statfs` failure).
    Unknown,
}

/// The storage of a run's files, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// What the storage claims to be.
    pub storage: Storage,
    /// Where that came from, for `--stats`.
    pub source: String,
}

/// Depth to start from on a network file system: enough to cover a few
/// round trips per file while the measurement decides the rest.
const NETWORK_START: usize = 16;

impl Hint {
    /// The depth to start from, for `workers` hashing workers.
    pub fn start(&self, workers: usize) -> usize {
        match self.storage {
            Storage::Network => NETWORK_START.max(workers),
            Storage::Rotational => 1,
            Storage::SolidState | Storage::Unknown => workers,
        }
        .max(1)
    }

    /// The storage under `path` (a file or directory): its file system type,
    /// then its block device's `rotational` flag. Never an error: what cannot
    /// be learnt is [`Storage::Unknown`].
    pub fn of(path: &Path) -> Hint {
        match rustix::fs::statfs(path) {
            Ok(st) => {
                if let Some(name) = crate::mapped::network_fs(st.f_type as u32) {
                    return Hint {
                        storage: Storage::Network,
                        source: format!("statfs: {name}"),
                    };
                }
            }
            Err(e) => {
                return Hint {
                    storage: Storage::Unknown,
                    source: format!("statfs failed: {e}"),
                }
            }
        }
        match rotational(path) {
            Some((true, dev)) => Hint {
                storage: Storage::Rotational,
                source: format!("{dev}: rotational=1"),
            },
            Some((false, dev)) => Hint {
                storage: Storage::SolidState,
                source: format!("{dev}: rotational=0"),
            },
            None => Hint {
                storage: Storage::Unknown,
                source: "no block device in sysfs".into(),
            },
        }
    }
}

/// The `queue/rotational` flag of the block device holding `path` (or of
/// the disk a partition belongs to), and the sysfs path it was read from.
fn rotational(path: &Path) -> Option<(bool, String)> {
    let st = rustix::fs::stat(path).ok()?;
    let (major, minor) = (rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev));
    let dev = format!("/sys/dev/block/{major}:{minor}");
    // A partition has no queue of its own; its disk is the parent directory.
    for queue in ["queue/rotational", "../queue/rotational"] {
        let p = format!("{dev}/{queue}");
        if let Ok(s) = std::fs::read_to_string(&p) {
            return Some((s.trim() == "1", p));
        }
    }
    None
}

/// A doubling must raise throughput by this factor to be kept.
pub const GAIN: f64 = 1.10;
/// A halving is kept while throughput stays above this share of the best.
pub const KEEP: f64 = 0.95;
/// While settled, throughput below this share of the settled rate starts a
/// new probe (the storage changed, or the files did).
const FALL: f64 = 0.70;
/// While settled, probe one doubling every this many windows anyway...
const RECHECK: u32 = 16;
/// ...and no sooner than this after settling (so a run shorter than this
/// never rechecks, on any storage): a probe costs a window or two
/// at the wrong depth, and on a spinning disk read in offset order, where
/// windows are a few files, probing every 16 windows made the run 12 %
/// longer (46 s against 41 s in the simulation of `strategy::order`'s
/// tests).
const RECHECK_AFTER: Duration = Duration::from_secs(1);
/// A window is at least this long (shorter ones measure the clock's noise).
const MIN_WINDOW: Duration = Duration::from_millis(5);
/// A window shorter than this needs two files a reader (see
/// [`Controller::record`]).
const SHORT_WINDOW: Duration = Duration::from_millis(50);
/// Bytes that count as much as one file in the throughput score: reading a
/// file costs a few round trips or a seek, worth about this much transfer.
const FILE_BYTES: f64 = 256.0 * 1024.0;

/// Where the controller is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Doubling while it pays.
    Up,
    /// Halving while it costs nothing.
    Down,
    /// On the best depth found; `rate` is its throughput, `windows` the
    /// windows since settling.
    Settled { rate: f64, windows: u32 },
}

/// The depth policy: hill climbing on throughput, one depth per window of
/// completions.
#[derive(Debug, Clone)]
pub struct Controller {
    depth: usize,
    min: usize,
    max: usize,
    start: usize,
    phase: Phase,
    /// Best (depth, throughput) measured in the current probe.
    best: Option<(usize, f64)>,
    /// The current window: when it opened, and its completions.
    opened: Duration,
    files: u64,
    bytes: u64,
    /// Windows measured, and the last reason the depth changed.
    windows: u64,
    why: String,
    /// The depth it last settled on (a recheck probes around it for a while).
    settled_on: Option<usize>,
    /// When it last settled.
    settled_at: Duration,
    /// Completions still due from reads started before the last change of
    /// depth (or before the run's first window), which no window counts
    /// (see [`Controller::record`]).
    lag: u64,
}

impl Controller {
    /// A controller starting at `start`, kept within `min..=max`.
    pub fn new(start: usize, min: usize, max: usize) -> Controller {
        let max = max.max(1);
        let min = min.clamp(1, max);
        let start = start.clamp(min, max);
        Controller {
            depth: start,
            min,
            max,
            start,
            phase: Phase::Up,
            best: None,
            opened: Duration::ZERO,
            files: 0,
            bytes: 0,
            windows: 0,
            why: format!("started at {start}"),
            settled_on: None,
            settled_at: Duration::ZERO,
            lag: start as u64,
        }
    }

    /// The depth to keep in flight now.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Whether the depth has settled (for `--stats`).
    pub fn settled(&self) -> bool {
        matches!(self.phase, Phase::Settled { .. })
    }

    /// The depth it last settled on, if it has.
    pub fn settled_on(&self) -> Option<usize> {
        self.settled_on
    }

    /// Why the depth is what it is, for `--stats`.
    pub fn why(&self) -> &str {
        &self.why
    }

    /// Count `files` completed files of `bytes` bytes at time `now` (since
    /// the run started); the depth to use from now on.
    pub fn record(&mut self, now: Duration, files: u64, bytes: u64) -> usize {
        self.files += files;
        self.bytes += bytes;
        // Right after a change of depth, the reads started at the old depth
        // are still completing, at its pace: after a halving, the new depth
        // would look as good as the old one (on sshfs at 20 ms a run went
        // 32 -> 8 -> 4, each "did as well", and settled at 4, a third of
        // the throughput of 16). The window opens once as many files as
        // were in flight, at either depth, have completed.
        if self.lag > 0 {
            if self.files >= self.lag {
                self.lag = 0;
                self.opened = now;
                self.files = 0;
                self.bytes = 0;
            }
            return self.depth;
        }
        let span = now.saturating_sub(self.opened);
        // A window needs time and enough completions that every reader
        // finished about one file in it; a window shorter than
        // SHORT_WINDOW, two, and 16 files at least. On sshfs over the
        // emulated `lan` (4,000 files/s) windows of one file per reader, a
        // few milliseconds, doubled the depth on noise up to 128 (slower
        // there than 16–64) and the default ran at 0.88–0.94 of
        // `--max-in-flight 16`/`32`; with two, 0.94–0.99 (medians of 12
        // interleaved cold runs of 2,000 files, AMD EPYC guest). Two files a
        // reader everywhere cost `wan` (20 ms round trips, windows of
        // 60 ms and more anyway) 0.86 of `--max-in-flight 16`, against 0.96.
        // The spinning disk of `strategy::order`'s model settles at 0.88 of
        // its best (0.90 with one file a reader).
        let need = if span >= SHORT_WINDOW {
            self.depth.max(4)
        } else {
            2 * self.depth.max(8)
        };
        if span < MIN_WINDOW || self.files < need as u64 {
            return self.depth;
        }
        let rate = (self.files as f64 + self.bytes as f64 / FILE_BYTES) / span.as_secs_f64();
        self.opened = now;
        self.files = 0;
        self.bytes = 0;
        self.windows += 1;
        let before = self.depth;
        self.step(rate);
        if self.depth != before {
            self.lag = before.max(self.depth) as u64;
        }
        self.depth
    }

    /// One window's verdict at throughput `rate`.
    fn step(&mut self, rate: f64) {
        let d = self.depth;
        match self.phase {
            Phase::Up => {
                let better = self.best.is_none_or(|(_, b)| rate > b * GAIN);
                if better {
                    self.best = Some((d, rate));
                }
                if better && d < self.max {
                    self.depth = (d * 2).min(self.max);
                    self.why = format!("{d} -> {}: throughput still rising", self.depth);
                } else if self.best.is_some_and(|(bd, _)| bd == self.start) && d > self.min {
                    // Doubling the start did not pay: perhaps fewer do as well.
                    self.phase = Phase::Down;
                    self.depth = (self.start / 2).max(self.min);
                    self.why = format!(
                        "{d} gained nothing over {}: trying {}",
                        self.start, self.depth
                    );
                } else {
                    self.settle();
                }
            }
            Phase::Down => {
                let best = self.best.map_or(0.0, |(_, b)| b);
                if rate >= best * KEEP {
                    self.best = Some((d, rate.max(best)));
                    if d > self.min {
                        self.depth = (d / 2).max(self.min);
                        self.why = format!("{d} did as well: trying {}", self.depth);
                        return;
                    }
                }
                self.settle();
            }
            Phase::Settled {
                rate: settled,
                windows,
            } => {
                if rate < settled * FALL {
                    self.probe(format!(
                        "throughput fell to {:.0} % at {d}",
                        100.0 * rate / settled
                    ));
                } else if windows + 1 >= RECHECK
                    && self.opened.saturating_sub(self.settled_at) >= RECHECK_AFTER
                    && d < self.max
                {
                    self.probe(format!("rechecking above {d}"));
                } else {
                    // Follow slow drift, so that only a sudden fall re-probes.
                    let drift = 0.8 * settled + 0.2 * rate;
                    self.phase = Phase::Settled {
                        rate: drift,
                        windows: windows + 1,
                    };
                }
            }
        }
    }

    /// Settle on the best depth measured.
    fn settle(&mut self) {
        let (d, rate) = self.best.unwrap_or((self.depth, 0.0));
        self.settled_at = self.opened;
        self.depth = d;
        self.settled_on = Some(d);
        self.phase = Phase::Settled { rate, windows: 0 };
        self.why = format!("settled at {d}: the best throughput measured");
    }

    /// Start climbing again from the current depth.
    fn probe(&mut self, why: String) {
        self.start = self.depth;
        self.best = None;
        self.phase = Phase::Up;
        self.why = why;
    }
}

/// A [`Controller`] shared by a pool's threads, or a fixed depth
/// (`--max-in-flight`). Completions are counted with atomics; whichever
/// thread finds a window due (and the controller free) feeds it, so no
/// thread ever waits on it.
#[derive(Debug)]
pub struct Shared {
    controller: Option<Mutex<Controller>>,
    target: AtomicUsize,
    files: AtomicU64,
    bytes: AtomicU64,
    /// Reads that waited for the disk (see [`Shared::waited`]).
    waits: AtomicU64,
    start: Instant,
    /// What the storage says it is.
    storage: Storage,
    /// Where the depth only caps the readers that reads waiting for a
    /// local disk add (see [`Shared::is_cap`]): whether that disk seeks,
    /// from its first waits; the controller runs only once it says yes.
    seek: Option<Mutex<SeekTest>>,
    /// Set once the seek test says the disk seeks.
    seeking: AtomicBool,
    /// Where the depth came from, for `--stats`.
    origin: String,
}

/// Completions between two looks at the clock.
const LOOK_EVERY: u64 = 8;

/// Reads whose waits decide whether a disk seeks...
const SEEK_SAMPLE: usize = 16;
/// ...by their lower quartile: a seek and a rotation's wait take
/// milliseconds (on a 7,200 rpm disk a quarter of random reads wait less
/// than a seek of 1 ms and a quarter turn, ~3 ms), a flash or virtio read a
/// fraction of one. The lower quartile, not the median: a shared host's
/// virtio disk sometimes stalls a few early reads (one cold run of 20,000
/// files here saw a median of 2.61 ms and was taken for a spinning disk;
/// others 0.22 and 0.60 ms). A large file's first read would also wait for
/// its readahead, so `hash-threads` times a one-page read alone at the start
/// of such a file while the test wants waits ([`Shared::seek_pending`],
/// [`crate::hasher::OnBlock::probe`]).
const SEEK_WAIT: Duration = Duration::from_millis(2);

/// Whether a disk that says it spins does seek, from how long its first
/// [`SEEK_SAMPLE`] waiting reads waited (their lower quartile). Hints lie:
/// this project's virtio disks say they spin and read 4 KiB in a fraction
/// of a millisecond. Measuring throughput instead (a controller capping the
/// readers, climbing from the hashing workers) settled anywhere from 8 to
/// 128 there and ran cold `small` at 0.70 of the best fixed depth; asking by
/// throughput stops readers that must then start again. The waits are
/// timed anyway, so the test costs nothing.
#[derive(Debug, Default, Clone)]
pub struct SeekTest {
    waits: Vec<Duration>,
    quartile: Option<Duration>,
}

impl SeekTest {
    /// Count one read that waited `wait`; whether the disk seeks, once
    /// known.
    pub fn add(&mut self, wait: Duration) -> Option<bool> {
        if self.quartile.is_none() {
            self.waits.push(wait);
            if self.waits.len() == SEEK_SAMPLE {
                self.waits.sort();
                self.quartile = Some(self.waits[SEEK_SAMPLE / 4]);
            }
        }
        self.seeks()
    }

    /// Whether the disk seeks, once known.
    pub fn seeks(&self) -> Option<bool> {
        self.quartile.map(|q| q >= SEEK_WAIT)
    }

    /// The verdict for `--stats`.
    fn describe(&self) -> String {
        match self.quartile {
            None => format!(
                "{} of the first {SEEK_SAMPLE} reads waited: no verdict",
                self.waits.len()
            ),
            Some(m) => format!(
                "a quarter of the first {SEEK_SAMPLE} reads waited {:.2} ms or less (a wait shared by the reads queued with it): {}",
                m.as_secs_f64() * 1e3,
                if m >= SEEK_WAIT {
                    "the disk seeks"
                } else {
                    "the disk does not seek"
                }
            ),
        }
    }
}

/// What a depth policy tells the rest of a run: the depth to keep, and how
/// many reads have waited for the storage (see `strategy::order`).
pub trait Policy: std::fmt::Debug + Sync {
    /// The depth to keep in flight now.
    fn target(&self) -> usize;
    /// The depth it settled on, if it has (a fixed depth is settled).
    fn settled(&self) -> Option<usize>;
    /// Reads that waited for the storage so far.
    fn waits(&self) -> u64;
}

impl Policy for Shared {
    fn target(&self) -> usize {
        self.target.load(Ordering::Relaxed)
    }

    fn settled(&self) -> Option<usize> {
        match &self.controller {
            None => Some(self.target()),
            Some(_) if self.is_cap() && !self.seeking.load(Ordering::Relaxed) => None,
            Some(c) => c.lock().unwrap_or_else(|e| e.into_inner()).settled_on(),
        }
    }

    fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }
}

/// Where a measured depth on a network file system starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Climb {
    /// From the hint's depth, up or down: each reader is a thread with its
    /// stack and buffer (or a task of the blocking pool), so readers start
    /// few.
    FromHint,
    /// From the most allowed, down while fewer do as well: a request in an
    /// io_uring costs only its slot and a kernel worker, and on the emulated
    /// `lan` and `wan` links no shallower depth was faster for it.
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    FromMost,
}

impl Shared {
    /// The depth for a run of `files` with `workers` workers and at most
    /// `max` in flight: `fixed` if the user chose one; measured from the
    /// storage's hint on a network file system (starting where `climb`
    /// says), and on a disk that says it spins (as a cap: see
    /// [`Shared::is_cap`]); `None` elsewhere (a local disk that does not
    /// spin, where a blocked read adding a reader measured faster than any
    /// fixed depth).
    pub fn for_run(
        fixed: Option<usize>,
        first: Option<&Path>,
        limits: (usize, usize),
        climb: Climb,
    ) -> Option<Shared> {
        // A fixed depth asks nothing of the storage (on a network file
        // system `statfs` is a round trip).
        let hint = fixed.is_none().then(|| first.map(Hint::of)).flatten();
        Shared::for_hint(fixed, hint.as_ref(), limits, climb)
    }

    /// [`Shared::for_run`] from the storage's hint, where the caller needs
    /// it too.
    pub fn for_hint(
        fixed: Option<usize>,
        hint: Option<&Hint>,
        (workers, max): (usize, usize),
        climb: Climb,
    ) -> Option<Shared> {
        if let Some(n) = fixed {
            let origin = format!("--max-in-flight {n}");
            return Some(Shared::new(None, n.max(1), Storage::Unknown, origin));
        }
        let hint = hint?;
        match hint.storage {
            Storage::Network => {
                let start = match climb {
                    Climb::FromHint => hint.start(workers),
                    Climb::FromMost => max,
                }
                .min(max);
                let c = Controller::new(start, workers.min(max).max(1), max);
                let origin = format!("network ({})", hint.source);
                Some(Shared::new(Some(c), start, hint.storage, origin))
            }
            Storage::Rotational => Some(Shared::cap(max, hint.source.clone())),
            Storage::SolidState | Storage::Unknown => None,
        }
    }

    /// A cap of `max` on the readers waiting reads add, on a disk that says
    /// it spins (`source`: where it says so). It stays at `max` (the rule
    /// of any other local disk) unless the [`SeekTest`] finds that the disk
    /// seeks; then a controller climbs from one read at a time.
    pub fn cap(max: usize, source: String) -> Shared {
        let origin = format!("a disk that says it spins ({source})");
        // Dormant until the seek test says the disk seeks.
        let c = Controller::new(1, 1, max);
        let mut shared = Shared::new(Some(c), max, Storage::Rotational, origin);
        shared.seek = Some(Mutex::new(SeekTest::default()));
        shared
    }

    fn new(
        controller: Option<Controller>,
        depth: usize,
        storage: Storage,
        origin: String,
    ) -> Shared {
        Shared {
            controller: controller.map(Mutex::new),
            target: AtomicUsize::new(depth),
            files: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            start: Instant::now(),
            storage,
            seek: None,
            seeking: AtomicBool::new(false),
            origin,
        }
    }

    /// What the storage says it is.
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// Whether the depth is a cap on the readers that waiting reads add (a
    /// local disk: the pool never grows to it unasked, so cached files
    /// never start readers that would only compete for the cores), rather
    /// than the number of readers to keep (a network file system, where
    /// every open is a round trip and waiting is the rule).
    pub fn is_cap(&self) -> bool {
        self.seek.is_some()
    }

    /// Whether one of `running` readers should leave: the depth wants fewer
    /// (one always stays). Takes it off the count if so, by compare-and-swap,
    /// so readers racing for one step down do not all leave.
    pub fn leave(&self, running: &AtomicUsize) -> bool {
        let target = self.target().max(1);
        let fewer = |n: usize| (n > target).then(|| n - 1);
        running
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, fewer)
            .is_ok()
    }

    /// Count a read that waited `wait` for the disk, with `readers` reading
    /// now. On a disk that says it spins, the first few decide whether it
    /// seeks; if it does, the depth drops to one read at a time and the
    /// controller climbs from there.
    pub fn waited(&self, wait: Duration, readers: usize) {
        let n = self.waits.fetch_add(1, Ordering::Relaxed);
        let Some(seek) = &self.seek else {
            return;
        };
        // Only the first waits go to the test: a cold run's readers must not
        // queue on its lock for the rest of the run.
        if n >= SEEK_SAMPLE as u64 {
            return;
        }
        let mut test = seek.lock().unwrap_or_else(|e| e.into_inner());
        if test.seeks().is_none() && test.add(wait) == Some(true) {
            if let Some(c) = &self.controller {
                let mut c = c.lock().unwrap_or_else(|e| e.into_inner());
                // Afresh: its first window opens once the reads started at
                // the old depth are done.
                let max = self.target.load(Ordering::Relaxed);
                *c = Controller::new(1, 1, max);
                c.lag = readers.clamp(1, max) as u64;
                c.opened = self.start.elapsed();
                self.target.store(1, Ordering::Relaxed);
            }
            self.seeking.store(true, Ordering::Relaxed);
        }
    }

    /// [`Shared::waited`] for a read made while `readers` threads read: reads
    /// queue behind each other at the disk, so the wait is shared among them
    /// (io_uring's rings divide by the reads served meanwhile). Otherwise the
    /// readahead of large files, in flight beside a probe, made a virtio disk
    /// whose 4 KiB reads take 0.1–0.6 ms look like one that seeks: lower
    /// quartiles of 2.0–3.3 ms in 4 of 16 cold runs of `shards` and `six`
    /// (2-vCPU AMD EPYC guest), 0.11–0.29 ms once shared.
    pub fn waited_among(&self, wait: Duration, readers: usize) {
        let readers = readers.max(1);
        self.waited(wait / readers.min(u32::MAX as usize) as u32, readers);
    }

    /// Whether the seek test still wants waits: a caller that must do
    /// extra work to time its reads (io_uring's rings) does it only then.
    pub fn seek_pending(&self) -> bool {
        self.seek.is_some() && self.waits.load(Ordering::Relaxed) < SEEK_SAMPLE as u64
    }

    /// Whether the seek test found that the disk seeks (io_uring asks).
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    pub fn seeking(&self) -> bool {
        self.seeking.load(Ordering::Relaxed)
    }

    /// Whether the depth is the user's (no measurement).
    pub fn is_fixed(&self) -> bool {
        self.controller.is_none()
    }

    /// Count `files` completed files of `bytes` bytes in all.
    pub fn completed(&self, files: u64, bytes: u64) {
        self.count(files, bytes, || self.start.elapsed());
    }

    /// [`Shared::completed`] at `now` since the run started.
    #[cfg(test)]
    pub(crate) fn completed_at(&self, now: Duration, files: u64, bytes: u64) {
        self.count(files, bytes, || now);
    }

    /// Called for every file: a fixed depth or a dormant cap (cached files,
    /// or a disk that does not seek) costs a load, and the clock is read
    /// only when the controller looks.
    fn count(&self, files: u64, bytes: u64, now: impl FnOnce() -> Duration) {
        let Some(controller) = &self.controller else {
            return;
        };
        // A cap measures nothing unless its disk seeks.
        if self.is_cap() && !self.seeking.load(Ordering::Relaxed) {
            return;
        }
        let before = self.files.fetch_add(files, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if before / LOOK_EVERY == (before + files) / LOOK_EVERY {
            return;
        }
        if let Ok(mut c) = controller.try_lock() {
            let files = self.files.swap(0, Ordering::Relaxed);
            let bytes = self.bytes.swap(0, Ordering::Relaxed);
            let depth = c.record(now(), files, bytes);
            self.target.store(depth, Ordering::Relaxed);
        }
    }

    /// One line for `--stats`: where the depth started and where it is.
    pub fn describe(&self) -> String {
        let mut origin = self.origin.clone();
        if let Some(seek) = &self.seek {
            let test = seek.lock().unwrap_or_else(|e| e.into_inner()).describe();
            if !self.seeking.load(Ordering::Relaxed) {
                return format!("at most {} (hint: {origin}; {test})", self.target(),);
            }
            origin = format!("{origin}; {test}");
        }
        match &self.controller {
            None => format!("{} in flight ({origin})", self.target()),
            Some(c) => {
                let c = c.lock().unwrap_or_else(|e| e.into_inner());
                let state = if c.settled() {
                    "settled"
                } else {
                    "still measuring"
                };
                format!(
                    "{} in flight, {state} (hint: {origin}; {})",
                    c.depth(),
                    c.why()
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A storage model: files per second at a depth, for files of `size` bytes.
    type Model = dyn Fn(usize) -> f64;

    #[test]
    fn a_short_window_needs_two_files_per_reader_a_long_one_one() {
        let ms = Duration::from_millis;
        // 16 in flight: the first 16 completions are the start's lag.
        let fresh = || {
            let mut c = Controller::new(16, 1, 128);
            c.record(ms(0), 16, 0);
            c
        };
        let mut c = fresh();
        assert_eq!(c.record(ms(10), 20, 0), 16, "20 files in 10 ms: no window");
        assert_eq!(c.record(ms(49), 0, 0), 16, "20 files in 49 ms: no window");
        assert_ne!(c.record(ms(50), 0, 0), 16, "20 files in 50 ms: a window");
        let mut c = fresh();
        assert_eq!(c.record(ms(10), 31, 0), 16, "31 files in 10 ms: no window");
        assert_ne!(c.record(ms(10), 1, 0), 16, "32 files in 10 ms: a window");
        let mut c = fresh();
        assert_eq!(c.record(ms(60), 15, 0), 16, "15 files in 60 ms: no window");
        assert_ne!(c.record(ms(61), 1, 0), 16, "16 files in 61 ms: a window");
    }

    /// Run `files` files of `size` bytes through the controller against
    /// `model`, completing them in groups as a pool would; the depth at the
    /// end and the files and simulated time it took to settle (if it did).
    fn simulate(
        c: &mut Controller,
        model: &Model,
        files: u64,
        size: u64,
    ) -> (usize, Option<(u64, Duration)>) {
        let mut now = Duration::ZERO;
        let mut settled_at = None;
        let mut done = 0;
        // A small deterministic jitter (±4 %), as a real clock would give.
        let mut jitter = 0x2545_f491_u64;
        // After a change of depth, the reads already in flight complete at
        // the old depth's pace: `lag` files of the `old` depth are still due.
        let (mut old, mut lag, mut last) = (c.depth(), 0u64, c.depth());
        while done < files {
            let d = c.depth();
            if d != last {
                (old, lag, last) = (last, last as u64, d);
            }
            let batch = (d as u64).min(files - done);
            jitter = jitter
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let noise = 1.0 + ((jitter >> 33) % 81) as f64 / 1000.0 - 0.04;
            let pace = if lag > 0 { old } else { d };
            lag = lag.saturating_sub(batch);
            now += Duration::from_secs_f64(batch as f64 / (model(pace) * noise));
            c.record(now, batch, batch * size);
            done += batch;
            if c.settled() && settled_at.is_none() {
                settled_at = Some((done, now));
            }
        }
        (c.depth(), settled_at)
    }

    /// The best fixed depth of `model` among 1, 2, 4, ..., 128, and its rate.
    fn best_fixed(model: &Model) -> (usize, f64) {
        (0..8)
            .map(|k| 1usize << k)
            .map(|d| (d, model(d)))
            .fold((1, 0.0), |a, b| if b.1 > a.1 { b } else { a })
    }

    fn ssd(d: usize) -> f64 {
        // Rises to a depth of 32, then flat.
        20_000.0 * (d.min(32) as f64).sqrt()
    }

    fn hdd(d: usize) -> f64 {
        // Seeks between readers: more in flight is slower.
        150.0 / (1.0 + 0.4 * (d as f64 - 1.0))
    }

    fn network(rtt_s: f64, bandwidth: f64, size: f64) -> impl Fn(usize) -> f64 {
        // Four round trips and the transfer per file, `d` at once, capped
        // by the link.
        move |d| (d as f64 / (4.0 * rtt_s + size / bandwidth)).min(bandwidth / size)
    }

    fn assert_converges(name: &str, model: &Model, hint_start: usize, size: u64) {
        let (best_d, best_rate) = best_fixed(model);
        let mut c = Controller::new(hint_start, 1, 128);
        let (_, settled) = simulate(&mut c, model, 5_000, size);
        let d = c
            .settled_on()
            .unwrap_or_else(|| panic!("{name}: never settled ({})", c.why()));
        assert!(
            model(d) >= 0.8 * best_rate,
            "{name}: settled at {d} ({:.0}/s), best fixed {best_d} ({best_rate:.0}/s); {}",
            model(d),
            c.why()
        );
        // Bounded: a few thousand files, or a second of the storage's time
        // where files are slow (a long window needs a file per reader) or
        // fast (a window needs 5 ms and two files per reader).
        let (files, time) =
            settled.unwrap_or_else(|| panic!("{name}: never settled ({})", c.why()));
        assert!(
            files <= 2_000 || time <= Duration::from_secs(1),
            "{name}: settled only after {files} files, {time:?}"
        );
    }

    #[test]
    fn converges_near_the_best_fixed_depth_on_every_simulated_storage() {
        // Started where the hint says, and where a wrong hint would.
        // Rings start at the most they keep (`Climb::FromMost`).
        for start in [1, 2, 16, 128] {
            assert_converges("ssd", &ssd, start, 4096);
            assert_converges("hdd", &hdd, start, 4096);
            assert_converges(
                "lan",
                &network(0.2e-3, 117.0 * 1048576.0, 4096.0),
                start,
                4096,
            );
            assert_converges("wan", &network(20e-3, 12.5e6, 4096.0), start, 4096);
            let big = 16.0 * 1048576.0;
            assert_converges("wan large", &network(20e-3, 12.5e6, big), start, 16 << 20);
        }
    }

    #[test]
    fn a_spinning_disk_settles_at_one_or_two() {
        let mut c = Controller::new(2, 1, 128);
        simulate(&mut c, &hdd, 2_000, 4096);
        let d = c.settled_on().unwrap();
        assert!(d <= 2, "settled at {d}: {}", c.why());
    }

    #[test]
    fn the_seek_test_goes_by_the_lower_quartile_of_the_first_waits() {
        let ms = |m: f64| Duration::from_secs_f64(m / 1e3);
        // A spinning disk: a few reads find their data in its cache.
        let mut t = SeekTest::default();
        for k in 1..SEEK_SAMPLE {
            let wait = if k % 5 == 0 { 0.1 } else { 6.0 };
            assert_eq!(t.add(ms(wait)), None);
        }
        assert_eq!(t.add(ms(0.1)), Some(true));
        // Decided once: later waits change nothing.
        assert_eq!(t.add(ms(0.1)), Some(true));
        assert!(t.describe().contains("the disk seeks"), "{}", t.describe());
        // A virtio disk on a busy host: half its first reads stall.
        let mut t = SeekTest::default();
        for k in 1..SEEK_SAMPLE {
            t.add(ms(if k % 2 == 0 { 3.0 } else { 0.3 }));
        }
        assert_eq!(t.add(ms(40.0)), Some(false));
        assert!(t.describe().contains("does not seek"), "{}", t.describe());
    }

    #[test]
    fn a_cap_stays_open_unless_the_disk_seeks() {
        let fast = Shared::cap(128, "test".into());
        for k in 0..1_000 {
            fast.waited(Duration::from_micros(300), 2);
            fast.completed_at(Duration::from_millis(k), 8, 8 * 4096);
        }
        assert_eq!(fast.target(), 128);
        assert_eq!(fast.settled(), None);
        assert!(!fast.is_fixed() && fast.is_cap());
        assert!(
            fast.describe().contains("does not seek"),
            "{}",
            fast.describe()
        );

        // Waits that only queued behind three other readers' reads.
        let queued = Shared::cap(128, "test".into());
        for _ in 0..SEEK_SAMPLE {
            queued.waited_among(Duration::from_millis(3), 4);
        }
        assert_eq!(queued.target(), 128);
        assert!(queued.describe().contains("does not seek"));

        // A seek each, even shared among the readers queued with it.
        let seeking = Shared::cap(128, "test".into());
        for k in 0..SEEK_SAMPLE {
            if k % 2 == 0 {
                seeking.waited(Duration::from_millis(9), 2);
            } else {
                seeking.waited_among(Duration::from_millis(24), 4);
            }
        }
        assert_eq!(seeking.target(), 1);
        assert!(
            seeking.describe().contains("the disk seeks"),
            "{}",
            seeking.describe()
        );
    }

    #[test]
    fn a_stall_never_grows_the_depth() {
        let mut c = Controller::new(16, 1, 128);
        let start = c.depth();
        // Nothing completes for 2 s, polled often.
        for ms in 1..=2_000 {
            assert_eq!(c.record(Duration::from_millis(ms), 0, 0), start);
        }
        // Then completions resume at the same rate at every depth.
        let flat = |_d: usize| 1_000.0;
        let (d, _) = simulate(&mut c, &flat, 2_000, 4096);
        assert!(
            d <= 2 * start,
            "grew to {d} with nothing to gain: {}",
            c.why()
        );
    }

    #[test]
    fn the_depth_stays_within_its_bounds() {
        let mut c = Controller::new(500, 3, 64);
        assert_eq!(c.depth(), 64);
        let endless = |d: usize| 1_000.0 * d as f64;
        simulate(&mut c, &endless, 10_000, 0);
        assert_eq!(c.settled_on(), Some(64), "{}", c.why());
        let mut c = Controller::new(0, 3, 64);
        assert_eq!(c.depth(), 3);
        simulate(&mut c, &hdd, 2_000, 4096);
        assert_eq!(c.settled_on(), Some(3), "{}", c.why());
    }

    #[test]
    fn a_fall_in_throughput_probes_again() {
        let mut c = Controller::new(1, 1, 128);
        let fast_ssd = |d: usize| ssd(d);
        simulate(&mut c, &fast_ssd, 3_000, 4096);
        assert!(c.settled_on().is_some_and(|d| d >= 16), "{}", c.why());
        // The storage turns into a slow network: more depth pays again.
        let far = network(20e-3, 12.5e6, 4096.0);
        simulate(&mut c, &far, 3_000, 4096);
        let d = c.settled_on().unwrap();
        assert!(far(d) >= 0.8 * best_fixed(&far).1, "{d}: {}", c.why());
    }

    #[test]
    fn hints_start_where_the_storage_suggests() {
        let h = |storage| Hint {
            storage,
            source: String::new(),
        };
        assert_eq!(h(Storage::Network).start(2), 16);
        assert_eq!(h(Storage::Network).start(32), 32);
        assert_eq!(h(Storage::Rotational).start(8), 1);
        assert_eq!(h(Storage::SolidState).start(8), 8);
        assert_eq!(h(Storage::Unknown).start(0), 1);
        // This machine's own files have some hint, and never an error.
        let here = Hint::of(Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(!here.source.is_empty());
        let gone = Hint::of(Path::new("/nonexistent/hashrace"));
        assert_eq!(gone.storage, Storage::Unknown);
    }
}
