//! A pool of OS threads pulling files from one shared queue.
//!
//! The queue is just an atomic cursor over the largest-first order: taking the
//! next file is one `fetch_add`, with no lock to contend on even for 20 k tiny
//! files. Each thread owns one read buffer for the whole run. Results go over a
//! channel to the calling thread, the single writer.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use super::{largest_first, Job, Sink};
use crate::hasher::{hash_file_until, new_buffer};

pub(super) fn run(jobs: &[Job], workers: usize, sink: &mut Sink<'_>) {
    let order = largest_first(jobs);
    let cursor = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (order, cursor, stop) = (&order, &cursor, &stop);
            scope.spawn(move || {
                let mut buf = new_buffer();
                while !stop.load(Ordering::Relaxed) {
                    let Some(&i) = order.get(cursor.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let job = &jobs[i];
                    if tx
                        .send((i, hash_file_until(&job.path, job.follow, &mut buf, stop)))
                        .is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, outcome) in rx {
            if let ControlFlow::Break(()) = sink(i, outcome) {
                // Dropping the receiver (leaving the loop) makes every send
                // fail; the flag stops threads between two files and in the
                // middle of one, so a huge file is not finished for nobody.
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    });
}
