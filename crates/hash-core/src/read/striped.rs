//! A counter that every hashing thread updates once or twice per file and
//! that is read only now and then (the progress line's bytes, the count of
//! open files an open consults when descriptors run out).
//!
//! One atomic would be one cache line that every update on one core takes
//! away from the others: two threads hashing small files on two cores each
//! wait for the line a few times per file. The counter is split into slots
//! on lines of their own, a thread updates the slot it was given when it
//! first counted, and a read adds up the slots. Slots wrap (an `add` on one
//! thread and the matching `sub` on another are both fine): the sum, taken
//! with wrapping, is the count.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Slots per counter: more than the cores a run usually has, so that two
/// threads rarely share one (sharing only costs speed).
const SLOTS: usize = 16;

/// A slot on a cache line of its own (128 bytes: some processors fetch
/// lines in adjacent pairs).
#[repr(align(128))]
struct Slot(AtomicU64);

/// A counter of many writers and few readers.
pub(crate) struct Striped([Slot; SLOTS]);

/// The slot the next thread to count is given.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The calling thread's slot, the same in every counter.
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
}

impl Striped {
    /// A counter at zero.
    pub(crate) const fn new() -> Striped {
        Striped([const { Slot(AtomicU64::new(0)) }; SLOTS])
    }

    fn slot(&self) -> &AtomicU64 {
        &self.0[SLOT.with(|s| *s)].0
    }

    /// Add `n`.
    pub(crate) fn add(&self, n: u64) {
        self.slot().fetch_add(n, Ordering::Relaxed);
    }

    /// Take `n` away (from a count that holds it, on any thread).
    pub(crate) fn sub(&self, n: u64) {
        self.slot().fetch_sub(n, Ordering::Relaxed);
    }

    /// The count: the sum of the slots, each read at a slightly different
    /// moment while others count (exact once they have stopped).
    pub(crate) fn get(&self) -> u64 {
        self.0
            .iter()
            .fold(0u64, |sum, s| sum.wrapping_add(s.0.load(Ordering::Relaxed)))
    }
}

impl Default for Striped {
    fn default() -> Striped {
        Striped::new()
    }
}

impl std::fmt::Debug for Striped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Striped").field(&self.get()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_across_threads_including_subtracting_elsewhere() {
        let c = Striped::new();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.add(3);
                    }
                });
            }
        });
        assert_eq!(c.get(), 24_000);
        // A count added on this thread and taken away on others, slot by
        // slot below zero: the wrapping sum is still the count.
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| c.sub(6_000));
            }
        });
        assert_eq!(c.get(), 0);
        c.add(1);
        assert_eq!(c.get(), 1);
    }

    #[test]
    fn slots_are_cache_lines_apart() {
        let c = Striped::new();
        let a = &c.0[0] as *const Slot as usize;
        let b = &c.0[1] as *const Slot as usize;
        assert!(b - a >= 128);
    }
}
