//! The predictions of `results/VERDICT.md`, as data, so that a sweep's report can
//! say of each workload whether the prediction held.
//!
//! They were written before the numbers (30 November for the datasets, 2 December for
//! the flip) and are kept as written: a wrong prediction is reported as missed, never
//! adjusted. Each names the strategies expected to win and the range of the winner's
//! speed-up over `hash-serial`; where the text gave one approximate figure ("~1.9×"),
//! the range is that figure ± 0.1. They were made for a local disk: over a network
//! link or under a memory limit there is none to check.

use crate::plan::Cache;

/// One written prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// The dataset it was written for (`shards`, `small`, `huge`, `mixed`).
    pub dataset: &'static str,
    pub cache: Cache,
    /// Program-name prefixes of the expected winners; empty for "a tie, anyone".
    pub winners: &'static [&'static str],
    /// The winner's speed-up over `hash-serial`, low and high.
    pub lo: f64,
    pub hi: f64,
}

const PARALLEL: &[&str] = &["hash-threads", "hash-procs", "hash-async"];

/// Section 1 of the verdict, "Per dataset and cache state".
pub const PREDICTIONS: &[Prediction] = &[
    Prediction {
        dataset: "shards",
        cache: Cache::Warm,
        winners: PARALLEL,
        lo: 1.8,
        hi: 2.0,
    },
    Prediction {
        dataset: "shards",
        cache: Cache::Cold,
        winners: PARALLEL,
        lo: 1.5,
        hi: 1.7,
    },
    Prediction {
        dataset: "small",
        cache: Cache::Warm,
        winners: &["hash-threads", "hash-procs"],
        lo: 1.3,
        hi: 1.6,
    },
    // 1.1–1.3× at the default `-j`, 2.5–3.5× with 32–128 reads in flight.
    Prediction {
        dataset: "small",
        cache: Cache::Cold,
        winners: &["hash-async", "hash-threads"],
        lo: 1.1,
        hi: 3.5,
    },
    // A tie within ± 5 %; a reader on the other core could add up to 15 %.
    Prediction {
        dataset: "huge",
        cache: Cache::Warm,
        winners: &[],
        lo: 0.95,
        hi: 1.15,
    },
    Prediction {
        dataset: "huge",
        cache: Cache::Cold,
        winners: &[],
        lo: 1.1,
        hi: 1.3,
    },
    Prediction {
        dataset: "mixed",
        cache: Cache::Warm,
        winners: PARALLEL,
        lo: 1.7,
        hi: 1.85,
    },
    Prediction {
        dataset: "mixed",
        cache: Cache::Cold,
        winners: PARALLEL,
        lo: 1.3,
        hi: 1.5,
    },
];

/// The dataset a prediction was written for that has the same shape as `dataset`:
/// `gib` is one large file like `huge`, `six` a few large files like `shards`,
/// `small3k` many small ones like `small`; a suffix (`-quick`, `-wan`) changes the
/// size or the place, not the shape.
pub fn shape_of(dataset: &str) -> Option<&'static str> {
    match dataset.split('-').next()? {
        "shards" | "six" => Some("shards"),
        "small" | "small3k" => Some("small"),
        "huge" | "gib" => Some("huge"),
        "mixed" => Some("mixed"),
        _ => None,
    }
}

/// The prediction written for `dataset`'s shape in `cache`.
pub fn find(dataset: &str, cache: Cache) -> Option<&'static Prediction> {
    let shape = shape_of(dataset)?;
    PREDICTIONS
        .iter()
        .find(|p| p.dataset == shape && p.cache == cache)
}

/// Whether a prediction held, in the words of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Held,
    /// Another strategy won.
    WrongWinner,
    /// The expected strategy won, by more or less than predicted.
    WrongRatio,
}

impl Prediction {
    /// The outcome for a winner `program` that is `speedup` times faster than
    /// `hash-serial` (1.0 when the winner is `hash-serial` itself).
    pub fn outcome(&self, program: &str, speedup: f64) -> Outcome {
        let winner_ok =
            self.winners.is_empty() || self.winners.iter().any(|w| program.starts_with(w));
        if !winner_ok {
            Outcome::WrongWinner
        } else if (self.lo..=self.hi).contains(&speedup) {
            Outcome::Held
        } else {
            Outcome::WrongRatio
        }
    }

    /// What was predicted, in a few words: `threads/procs, 1.30–1.60×`.
    pub fn describe(&self) -> String {
        let who = if self.winners.is_empty() {
            "any strategy".to_string()
        } else {
            self.winners
                .iter()
                .map(|w| w.trim_start_matches("hash-"))
                .collect::<Vec<_>>()
                .join("/")
        };
        format!("{who}, {:.2}–{:.2}×", self.lo, self.hi)
    }

    /// The report's cell: `held (threads/procs, 1.30–1.60×)` or `missed: …`.
    pub fn verdict(&self, program: &str, speedup: f64) -> String {
        match self.outcome(program, speedup) {
            Outcome::Held => format!("held ({})", self.describe()),
            Outcome::WrongWinner => format!("missed: {} was predicted", self.describe()),
            Outcome::WrongRatio => format!(
                "missed: {speedup:.2}× against {} predicted",
                self.describe()
            ),
        }
    }
}

/// The flip, predicted on 2 December: with pure-Python work Python's processes beat
/// its threads by 1.75–2.0× on large files; with SHA-256 (hashlib, which releases the
/// interpreter lock) threads tie with processes or beat them.
pub const FLIP_PYSUM: (f64, f64) = (1.75, 2.0);

/// Threads "tie or beat" processes: at least this fraction of their speed.
pub const FLIP_HASHLIB_TIE: f64 = 0.95;

/// The flip's verdict from the best processes-over-threads ratio of each work.
pub fn flip_verdict(pysum_procs_over_threads: f64, hashlib_threads_over_procs: f64) -> String {
    let (lo, hi) = FLIP_PYSUM;
    let pysum = (lo..=hi).contains(&pysum_procs_over_threads);
    let hashlib = hashlib_threads_over_procs >= FLIP_HASHLIB_TIE;
    let word = |ok: bool| if ok { "held" } else { "missed" };
    format!(
        "pure Python, processes × threads {pysum_procs_over_threads:.2}× \
         (predicted {lo:.2}–{hi:.2}×): {}; hashlib, threads × processes \
         {hashlib_threads_over_procs:.2}× (predicted ≥ {FLIP_HASHLIB_TIE:.2}×): {}",
        word(pysum),
        word(hashlib)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_has_a_prediction_warm_and_cold() {
        for d in [
            "shards",
            "six",
            "small",
            "small3k",
            "huge",
            "gib",
            "mixed",
            "shards-wan",
        ] {
            for c in [Cache::Warm, Cache::Cold] {
                assert!(find(d, c).is_some(), "{d} {c:?}");
            }
        }
        assert_eq!(find("empty", Cache::Warm), None);
        assert_eq!(find("tiny", Cache::Warm), None);
    }

    #[test]
    fn a_winner_outside_the_set_is_missed_whatever_its_ratio() {
        let p = find("small", Cache::Warm).unwrap();
        assert_eq!(p.outcome("hash-threads", 1.4), Outcome::Held);
        assert_eq!(p.outcome("hash-procs", 1.3), Outcome::Held);
        assert_eq!(p.outcome("hash-async", 1.4), Outcome::WrongWinner);
        assert_eq!(p.outcome("hash-threads", 1.7), Outcome::WrongRatio);
        assert_eq!(p.outcome("hash-threads", 1.2), Outcome::WrongRatio);
    }

    #[test]
    fn a_tie_accepts_any_winner_and_the_variants_count_as_their_strategy() {
        let huge = find("gib", Cache::Warm).unwrap();
        assert_eq!(huge.outcome("hash-serial", 1.0), Outcome::Held);
        let shards = find("shards", Cache::Cold).unwrap();
        assert_eq!(shards.outcome("hash-async-uring", 1.6), Outcome::Held);
        assert_eq!(shards.outcome("hash-serial", 1.0), Outcome::WrongWinner);
    }

    #[test]
    fn the_cells_say_what_was_predicted() {
        let p = find("small3k", Cache::Warm).unwrap();
        assert_eq!(
            p.verdict("hash-async", 1.58),
            "missed: threads/procs, 1.30–1.60× was predicted"
        );
        assert_eq!(
            p.verdict("hash-threads", 1.9),
            "missed: 1.90× against threads/procs, 1.30–1.60× predicted"
        );
        assert_eq!(
            p.verdict("hash-threads", 1.5),
            "held (threads/procs, 1.30–1.60×)"
        );
    }

    #[test]
    fn the_flip_needs_both_halves() {
        let v = flip_verdict(1.8, 1.02);
        assert_eq!(v.matches("held").count(), 2, "{v}");
        let v = flip_verdict(1.2, 1.02);
        assert!(v.contains("1.20×") && v.contains("missed"), "{v}");
        let v = flip_verdict(1.8, 0.9);
        assert!(v.ends_with("missed"), "{v}");
    }
}
