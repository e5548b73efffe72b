//! The baseline: one thread hashes one file after another, in planned order.

use std::ops::ControlFlow;
use std::sync::Arc;

use super::{no_args, no_helper, Def, Job, Ran, Runner, Sink, Strategy};
use crate::hasher::{hash, new_buffer, Reading};

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

    fn run(&self, files: &[Job], reading: &Arc<Reading>, sink: &mut Sink<'_>) -> Ran {
        hash_in_order(files, reading, sink);
        Ran::default()
    }
}

/// Hash `files` one after another on this thread, into `sink`: the serial
/// strategy, and what the others fall back to when they cannot start a
/// single thread or process of their own.
pub(super) fn hash_in_order(files: &[Job], reading: &Reading, sink: &mut Sink<'_>) {
    let _hashing = reading.hashing();
    let mut buf = new_buffer();
    for (i, job) in files.iter().enumerate() {
        if let ControlFlow::Break(()) = sink(i, hash(&job.request(reading, None), &mut buf)) {
            reading.stop();
            break;
        }
    }
}
