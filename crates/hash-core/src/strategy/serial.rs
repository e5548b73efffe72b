//! The baseline: one thread hashes one file after another, in planned order.

use std::ops::ControlFlow;

use super::{Job, Sink};
use crate::hasher::{hash, new_buffer, Hashing, NEVER};

pub(super) fn run(files: &[Job], sink: &mut Sink<'_>) {
    let _hashing = Hashing::start(1);
    let mut buf = new_buffer();
    for (i, job) in files.iter().enumerate() {
        if let ControlFlow::Break(()) = sink(i, hash(&job.request(&NEVER, None), &mut buf)) {
            return;
        }
    }
}
