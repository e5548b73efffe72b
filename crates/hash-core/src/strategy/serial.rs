//! The baseline: one thread hashes one file after another, in planned order.

use std::ops::ControlFlow;
use std::sync::Arc;

use super::order::{DiskOrder, CHUNK};
use super::{no_args, no_helper, Def, Job, Ran, Runner, Sink, Strategy};
use crate::hasher::{hash, new_buffer, Reading};
use crate::inflight::Storage;

/// `hash-serial`: no options of its own.
pub(super) const DEF: Def = Def {
    name: "serial",
    binary: "hash-serial",
    how: "one file after another",
    args: no_args,
    runner: |_| Ok(Box::new(Serial)),
    helper: no_helper,
};

/// The serial strategy (it has no settings).
#[derive(Debug, Clone, Copy)]
pub struct Serial;

impl Runner for Serial {
    fn strategy(&self) -> Strategy {
        Strategy::Serial
    }

    fn workers(&self, _files: usize) -> usize {
        1
    }

    fn reads_one_at_a_time(&self) -> bool {
        true
    }

    /// In planned order, or with `--read-order disk` a chunk at a time in
    /// the disk's order (`auto` has no depth policy to look at here: one
    /// file at a time is all this strategy does).
    fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran {
        let Some(disk) = DiskOrder::new(reading.policy().order, Storage::Unknown, None) else {
            hash_in_order(files, reading, sink);
            return Ran::default();
        };
        let mut ids: Vec<usize> = (0..files.len()).collect();
        for chunk in ids.chunks_mut(CHUNK) {
            disk.sort(files, chunk, reading);
            if hash_these(files, chunk.iter().copied(), reading, sink).is_break() {
                break;
            }
        }
        Ran {
            order: Some(disk.describe()),
            ..Ran::default()
        }
    }
}

/// Hash `files` one after another on this thread, into `sink`: the serial
/// strategy, and what the others fall back to when they cannot start a
/// single thread or process of their own.
pub(super) fn hash_in_order(files: &[Job], reading: &Reading, sink: &mut Sink<'_>) {
    let _ = hash_these(files, 0..files.len(), reading, sink);
}

/// Hash the files of `files` that `ids` names, in that order; `Break` once
/// the sink stopped the run.
fn hash_these(
    files: &[Job],
    ids: impl Iterator<Item = usize>,
    reading: &Reading,
    sink: &mut Sink<'_>,
) -> ControlFlow<()> {
    let _hashing = reading.hashing();
    let mut buf = new_buffer();
    for i in ids {
        if let ControlFlow::Break(()) = sink(i, hash(&files[i].request(reading, None), &mut buf)) {
            reading.stop();
            return ControlFlow::Break(());
        }
    }
    ControlFlow::Continue(())
}
