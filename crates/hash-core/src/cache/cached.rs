//! The cache as a [`Runner`] around the engine: a run hashes through it like
//! through any strategy, so the app reads plan → runner → writer whether or not
//! `--cache` was given.
//!
//! [`Cached::run`] looks every file up first: the unchanged ones go to the sink
//! with their recorded digest, and only the misses reach the engine, whose
//! outcomes are judged and recorded on their way to the sink.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use super::Cache;
use crate::hasher::Reading;
use crate::progress::Progress;
use crate::strategy::{Engine, Job, Ran, Runner, Sink, Strategy};

/// `engine`'s runs, served from and recorded in `cache`.
#[derive(Debug)]
pub(crate) struct Cached<'a> {
    engine: &'a Engine,
    // `Runner::run` takes `&self`; the run is the only user while it lasts.
    cache: Mutex<Cache>,
    dirs: &'a [PathBuf],
    prune: bool,
    progress: Option<&'a Progress>,
}

impl<'a> Cached<'a> {
    /// Serve runs of `engine` from `cache`. `dirs` are the walk's directories
    /// (the keys' prefixes); `prune`: whether entries the walk did not see may be
    /// deleted at the end (not for a shard or a filtered walk, which see part).
    pub(crate) fn new(
        engine: &'a Engine,
        cache: Cache,
        dirs: &'a [PathBuf],
        prune: bool,
        progress: Option<&'a Progress>,
    ) -> Self {
        Cached {
            engine,
            cache: Mutex::new(cache),
            dirs,
            prune,
            progress,
        }
    }

    /// The cache back, for [`Cache::finish`] once the run's output is done
    /// (the progress line it was drawing on is gone by then).
    pub(crate) fn into_cache(self) -> Cache {
        self.cache
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Runner for Cached<'_> {
    fn strategy(&self) -> Strategy {
        self.engine.strategy()
    }

    fn workers(&self, files: usize) -> usize {
        self.engine.workers(files)
    }

    fn reads_one_at_a_time(&self) -> bool {
        self.engine.reads_one_at_a_time()
    }

    fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let cache = &mut *cache;
        let misses = match cache.lookup(files, self.dirs, self.prune, sink) {
            std::ops::ControlFlow::Continue(misses) => misses,
            std::ops::ControlFlow::Break(()) => return Ran::default(),
        };
        if misses == 0 {
            return Ran::default();
        }
        let (engine, progress) = (self.engine, self.progress);
        let ran = if misses == files.len() {
            // Nothing answered (a first run): the plan itself, no copy.
            engine.run(files, reading, &mut |i, outcome| {
                cache.hashed(i, files, &outcome, progress);
                sink(i, outcome)
            })
        } else {
            let jobs: Vec<Job> = (0..misses).map(|k| files[cache.miss(k)].clone()).collect();
            engine.run(&jobs, reading, &mut |k, outcome| {
                let i = cache.miss(k);
                cache.hashed(k, files, &outcome, progress);
                sink(i, outcome)
            })
        };
        cache.settle(files);
        ran
    }
}
