//! Which way a large file that is already in the page cache reaches SHA-256:
//! hashed in place through memory-mapped windows ([`crate::mapped`]), or copied
//! by `read()` into a buffer that stays in the core's L2 cache first. The
//! choice is measured on the machine, per run, because neither way wins
//! everywhere.
//!
//! SHA-256 (with SHA-NI) runs faster on data already in L1/L2 than on data it
//! streams from memory, by a factor that depends on the machine. On a 2-vCPU
//! Intel Xeon guest (SHA-NI, AVX-512) one core hashed a 64 KiB buffer at
//! ~1,750 MiB/s and a 256 MiB one at ~1,100 MiB/s, so hashing a mapped window
//! (memory speed, no copy) lost to copying 256 KiB at a time (one copy at
//! ~5 GiB/s, then L2 speed): warm 8 MiB shards took 278 ms mapped and 209 ms
//! read with `hash-threads`. On a 2-vCPU AMD EPYC guest (family 26) SHA-256
//! ran as fast from memory as from L2 (1 GiB: 638 ms from a 64 KiB buffer,
//! ~646 ms streamed), so the copy was pure cost: `hash-serial` took 632 ms
//! mapped and 702 ms read. Since a mapped window is hashed a page at a time
//! with the page four ahead requested ([`crate::mapped::in_pieces`]), the map way
//! wins on an Intel Xeon guest too (1 GiB: 0.70 against 0.85 ms per MiB in
//! the trial below), and the trial still decides per run.
//!
//! A mapping's page tables can be filled in one call (`MAP_POPULATE`, which
//! walks the window a 4 KiB page at a time) or by the page faults of hashing
//! it (each fault maps the 64 KiB around it, a large folio's pages in one
//! batch). Which costs less depends on the folios the files sit in, so on how
//! they entered the page cache. On the AMD EPYC guest of family 25 model 17,
//! warm 8 MiB files (`shards`), 8 or 12 interleaved rounds: after a hasher's
//! own cold run (three quarters in 1-2 MiB folios) two threads took 161.5 ms
//! by faults against 166.0 populated, and one thread 316.6 ms by faults
//! against 325.8 populated (`hash-serial` with its mapper thread: 320.3); read
//! back 1 MiB at a time (4-64 KiB folios) one thread took 367.9 ms by faults
//! against 357.9 populated. So `map-fault` is a third way, timed like the two.
//!
//! So with `--data-path auto` (the default) a run measures: the first large
//! cached files are hashed in [`SEGMENT`]s taking turns between the three ways,
//! each segment timed on the thread that hashes it, as the run's files of that
//! size would run: when a core is spare, the hasher maps a file's first 2 MiB
//! and a mapper thread the rest, so a map segment is charged that share of
//! its mapping and unmapping: 2 MiB over the file's size (counting all of the
//! page-table fill chose `read` on that AMD guest, 7 % slower there); a map-fault segment's
//! faults are all the hasher's. Once each way has [`SAMPLES`] segments, the
//! way with the lowest median time per byte is used for the rest of the run
//! (and named by `--stats`). The cost is bounded: about `SAMPLES` segments
//! went each slower way (a few more while several hashers measure at once;
//! each `hash-procs` worker measures for itself). `--data-path map`,
//! `map-fault` or `read` skips the measurement; `--no-mmap` is `read`.
//!
//! A file that is not in the page cache is always read (the disk, not the
//! copy, is the limit there, and `read()` with the sequential hint reads
//! ahead in larger pieces than the faults of a mapping).

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How large cached files are hashed, as the command line asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DataPath {
    /// Measure the three ways on the run's first large files, keep the fastest.
    #[default]
    Auto,
    /// Hash memory-mapped windows in place, their page tables filled in one call.
    Map,
    /// Hash memory-mapped windows in place, their page tables filled by page faults.
    MapFault,
    /// Copy with read() into an L2-sized buffer, hash from there.
    Read,
}

impl DataPath {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DataPath::Auto => "auto",
            DataPath::Map => "map",
            DataPath::MapFault => "map-fault",
            DataPath::Read => "read",
        }
    }

    /// The data path of that name (`None` for any other string).
    pub fn named(name: &str) -> Option<DataPath> {
        [
            DataPath::Auto,
            DataPath::Map,
            DataPath::MapFault,
            DataPath::Read,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }
}

/// One of the three ways a measured run can pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Memory-mapped windows filled with `MAP_POPULATE`, hashed in place.
    Map,
    /// Memory-mapped windows filled by page faults as they are hashed.
    MapFault,
    /// `read()` into a reused buffer.
    Read,
}

impl Way {
    /// The name `--data-path` and `--stats` use.
    pub fn name(self) -> &'static str {
        match self {
            Way::Map => "map",
            Way::MapFault => "map-fault",
            Way::Read => "read",
        }
    }
}

/// CPU time this thread has used so far (user and system: the copy of
/// `read()` and the page-table work of a mapping are both system time). Unlike
/// the wall clock, it does not count time the thread spent waiting for its
/// core while another process ran.
pub fn thread_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Bytes of one timed segment: long enough (~3 ms of hashing) that the
/// clock and a window's set-up are small next to it, short enough that the
/// measurement is over within the first few large files.
pub const SEGMENT: u64 = 4 * 1024 * 1024;

/// The shortest segment that counts: the end of a file can be a few pages,
/// timed mostly by the clock's own cost.
pub const MIN_SEGMENT: u64 = 1024 * 1024;

/// Timed segments per way before the run decides: the median of three
/// shrugs off one segment that lost its core to another process.
pub const SAMPLES: usize = 3;

const UNDECIDED: u8 = 0;
const MAP: u8 = 1;
const READ: u8 = 2;
const MAP_FAULT: u8 = 3;

/// A run's choice of [`Way`]: fixed by the command line, or measured.
#[derive(Debug)]
pub struct Chooser {
    decided: AtomicU8,
    /// Segments handed out while measuring (in turn: map, map-fault, read).
    turn: AtomicUsize,
    /// Nanoseconds per byte of each timed segment, by way.
    samples: Mutex<Samples>,
}

/// Timed segments so far.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    /// Nanoseconds per byte of the mapped segments.
    pub map: Vec<f64>,
    /// Nanoseconds per byte of the mapped segments filled by faults.
    pub fault: Vec<f64>,
    /// Nanoseconds per byte of the read segments.
    pub read: Vec<f64>,
}

impl Samples {
    /// The segments timed `way`.
    fn of(&mut self, way: Way) -> &mut Vec<f64> {
        match way {
            Way::Map => &mut self.map,
            Way::MapFault => &mut self.fault,
            Way::Read => &mut self.read,
        }
    }
}

impl Default for Chooser {
    fn default() -> Self {
        Chooser::new(DataPath::Auto)
    }
}

impl Chooser {
    /// The choice of a run that asked for `path`.
    pub fn new(path: DataPath) -> Chooser {
        let decided = match path {
            DataPath::Auto => UNDECIDED,
            DataPath::Map => MAP,
            DataPath::MapFault => MAP_FAULT,
            DataPath::Read => READ,
        };
        Chooser {
            decided: AtomicU8::new(decided),
            turn: AtomicUsize::new(0),
            samples: Mutex::new(Samples::default()),
        }
    }

    /// The way every large cached file now takes, once known.
    pub fn decided(&self) -> Option<Way> {
        match self.decided.load(Ordering::Relaxed) {
            MAP => Some(Way::Map),
            MAP_FAULT => Some(Way::MapFault),
            READ => Some(Way::Read),
            _ => None,
        }
    }

    /// The way of the next segment to time, while undecided: the three take
    /// turns, so all see the same mix of files and of other load.
    pub fn next_sample(&self) -> Way {
        match self.turn.fetch_add(1, Ordering::Relaxed) % 3 {
            0 => Way::Map,
            1 => Way::MapFault,
            _ => Way::Read,
        }
    }

    /// Record that `bytes` went `way` in `took`; decides once every way
    /// has [`SAMPLES`] segments. Segments under [`MIN_SEGMENT`] (the end of
    /// a file) say little and are not counted.
    pub fn record(&self, way: Way, bytes: u64, took: Duration) {
        if bytes < MIN_SEGMENT || self.decided().is_some() {
            return;
        }
        let per_byte = took.as_nanos() as f64 / bytes as f64;
        let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        // Another thread may have decided while this one waited for the lock.
        if self.decided().is_some() {
            return;
        }
        s.of(way).push(per_byte);
        if let Some(way) = decide(&s) {
            let code = match way {
                Way::Map => MAP,
                Way::MapFault => MAP_FAULT,
                Way::Read => READ,
            };
            self.decided.store(code, Ordering::Relaxed);
        }
    }

    /// The timed segments (what `--stats` reports).
    pub fn samples(&self) -> Samples {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The `--stats` line about the data path of a run that asked for `path`:
/// what was used and, when measured, the timings that chose it, or that too
/// few were timed to choose. `None` when no large cached file took a data
/// path in this process (or the one that did could not be mapped).
pub fn describe(path: DataPath, decided: Option<Way>, samples: &Samples) -> Option<String> {
    let Some(way) = decided else {
        // Only a segment of a large cached file is timed, so a sample says
        // one took the data path, though too few did to decide.
        let (map, fault, read) = (samples.map.len(), samples.fault.len(), samples.read.len());
        return (map + fault + read > 0).then(|| {
            format!(
                "data path: not decided (timed {map} map, {fault} map-fault and {read} read \
                 segments; it takes {SAMPLES} of each); they took turns"
            )
        });
    };
    if path != DataPath::Auto {
        return Some(format!(
            "data path: {} (--data-path {})",
            way.name(),
            path.name()
        ));
    }
    // Nanoseconds per byte are milliseconds per MiB, near enough (×1.05).
    let per_mib = |xs: &[f64]| median(xs) * 1_048_576.0 / 1e6;
    Some(format!(
        "data path: {} (measured, per MiB: map {:.2} ms, map-fault {:.2} ms, read {:.2} ms; \
         median of {} segments each)",
        way.name(),
        per_mib(&samples.map),
        per_mib(&samples.fault),
        per_mib(&samples.read),
        samples
            .map
            .len()
            .min(samples.fault.len())
            .min(samples.read.len()),
    ))
}

/// The fastest way by median time per byte, once every way has [`SAMPLES`]
/// segments; a tie goes to `read` (it needs no `SIGBUS` handler and no
/// page-table work), then to `map`.
pub fn decide(s: &Samples) -> Option<Way> {
    let ways = [
        (Way::Read, &s.read),
        (Way::Map, &s.map),
        (Way::MapFault, &s.fault),
    ];
    if ways.iter().any(|(_, xs)| xs.len() < SAMPLES) {
        return None;
    }
    let mut best = (Way::Read, median(&s.read));
    for (way, xs) in &ways[1..] {
        let m = median(xs);
        if m < best.1 {
            best = (*way, m);
        }
    }
    Some(best.0)
}

/// The median of `xs` (the upper one of an even count); 0 when empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn a_fixed_path_is_decided_from_the_start_and_ignores_samples() {
        let c = Chooser::new(DataPath::Read);
        assert_eq!(c.decided(), Some(Way::Read));
        for _ in 0..10 {
            c.record(Way::Map, 4 * MIB, ms(1));
        }
        assert_eq!(c.decided(), Some(Way::Read));
        assert_eq!(Chooser::new(DataPath::Map).decided(), Some(Way::Map));
        assert_eq!(
            Chooser::new(DataPath::MapFault).decided(),
            Some(Way::MapFault)
        );
    }

    #[test]
    fn auto_takes_turns_then_keeps_the_lower_median() {
        let c = Chooser::new(DataPath::Auto);
        let turns: Vec<Way> = (0..4).map(|_| c.next_sample()).collect();
        assert_eq!(turns, [Way::Map, Way::MapFault, Way::Read, Way::Map]);
        // Map is faster in two of three segments, read once by a lot (a
        // preempted map segment): the medians decide, not the means.
        for (map, fault, read) in [(3, 5, 4), (3, 5, 4), (40, 2, 4)] {
            assert_eq!(c.decided(), None);
            c.record(Way::Map, 4 * MIB, ms(map));
            c.record(Way::MapFault, 4 * MIB, ms(fault));
            c.record(Way::Read, 4 * MIB, ms(read));
        }
        assert_eq!(c.decided(), Some(Way::Map));
        // Later samples change nothing.
        for _ in 0..5 {
            c.record(Way::Read, 4 * MIB, ms(1));
        }
        assert_eq!(c.decided(), Some(Way::Map));
        assert_eq!(c.samples().read.len(), 3);
    }

    #[test]
    fn read_wins_ties_and_waits_for_both_ways() {
        let c = Chooser::new(DataPath::Auto);
        for _ in 0..5 {
            c.record(Way::Read, 4 * MIB, ms(3));
        }
        assert_eq!(c.decided(), None, "map has no sample yet");
        for _ in 0..3 {
            c.record(Way::Map, 4 * MIB, ms(3));
        }
        assert_eq!(c.decided(), None, "map-fault has no sample yet");
        for _ in 0..3 {
            c.record(Way::MapFault, 4 * MIB, ms(3));
        }
        assert_eq!(c.decided(), Some(Way::Read));
        // Between the two mapped ways, a tie goes to map; a faster map-fault wins.
        let mut s = Samples {
            map: vec![2.0; 3],
            fault: vec![2.0; 3],
            read: vec![3.0; 3],
        };
        assert_eq!(decide(&s), Some(Way::Map));
        s.fault = vec![1.9; 3];
        assert_eq!(decide(&s), Some(Way::MapFault));
    }

    #[test]
    fn short_segments_are_not_counted() {
        let c = Chooser::new(DataPath::Auto);
        for _ in 0..3 {
            c.record(Way::Map, MIB - 1, ms(1));
            c.record(Way::Read, 4 * MIB, ms(3));
        }
        assert_eq!(c.decided(), None);
        assert!(c.samples().map.is_empty());
    }

    #[test]
    fn names_round_trip_and_match_the_command_line() {
        use clap::ValueEnum;
        for p in DataPath::value_variants() {
            assert_eq!(DataPath::named(p.name()), Some(*p));
            assert_eq!(p.to_possible_value().unwrap().get_name(), p.name());
        }
        assert_eq!(DataPath::named("mmap"), None);
    }

    #[test]
    fn the_stats_line_says_what_was_used_and_why() {
        let none = Samples::default();
        assert_eq!(describe(DataPath::Auto, None, &none), None);
        let few = Samples {
            map: vec![1.0, 1.0],
            fault: vec![1.0],
            read: vec![1.0],
        };
        assert_eq!(
            describe(DataPath::Auto, None, &few).unwrap(),
            "data path: not decided (timed 2 map, 1 map-fault and 1 read segments; it takes 3 \
             of each); they took turns"
        );
        assert_eq!(
            describe(DataPath::Read, Some(Way::Read), &none).unwrap(),
            "data path: read (--data-path read)"
        );
        let c = Chooser::new(DataPath::Auto);
        for _ in 0..3 {
            // 1 ns/B = 1.05 ms per MiB; 2 ns/B = 2.10 ms; 3 ns/B = 3.15 ms.
            c.record(Way::Map, MIB, Duration::from_nanos(2 * MIB));
            c.record(Way::MapFault, MIB, Duration::from_nanos(3 * MIB));
            c.record(Way::Read, MIB, Duration::from_nanos(MIB));
        }
        let line = describe(DataPath::Auto, c.decided(), &c.samples()).unwrap();
        assert_eq!(
            line,
            "data path: read (measured, per MiB: map 2.10 ms, map-fault 3.15 ms, read 1.05 ms; \
             median of 3 segments each)"
        );
    }

    #[test]
    fn median_is_robust_to_one_outlier() {
        assert_eq!(median(&[1.0, 100.0, 2.0]), 2.0);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[5.0, 1.0]), 5.0);
    }
}
