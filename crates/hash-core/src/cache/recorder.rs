//! The run's records written on a thread of their own.
//!
//! A first run over many small files records a row per file, and an SQLite
//! insert (with its share of the write-ahead log) costs about as much as
//! hashing a 64-byte file. Made on the thread that also orders and prints
//! the results, the inserts held the hashers back; here the writer hands
//! over full batches and goes on. The channel holds two batches, so a
//! recorder that falls behind slows the run rather than growing memory.
//! A write that fails ends the writing: the rest of the batches are
//! dropped, and the caller learns why when it takes the store back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::store::{Batch, Store};

/// Batches waiting for the recorder at most.
const QUEUED: usize = 2;

/// What the recorder did, with the store given back.
pub(super) struct Written {
    pub store: Store,
    /// Rows written.
    pub recorded: u64,
    /// The write that failed, after which nothing more was written.
    pub error: Option<rusqlite::Error>,
}

/// A thread writing batches of records into a store it owns meanwhile.
pub(super) struct Recorder {
    tx: SyncSender<Batch>,
    thread: JoinHandle<Written>,
    /// Set when a write failed: nothing more will be written.
    failed: Arc<AtomicBool>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl Recorder {
    /// Start writing into `store` on a new thread; `Err` gives the store
    /// back when no thread could be started.
    pub fn start(store: Store) -> Result<Recorder, Box<Store>> {
        let (store_tx, store_rx) = mpsc::channel::<Store>();
        let (tx, rx) = mpsc::sync_channel(QUEUED);
        let failed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&failed);
        let spawned = crate::limits::thread_builder()
            .name("cache-recorder".into())
            .spawn(move || record(store_rx, rx, &flag));
        match spawned {
            Ok(thread) => {
                // The thread waits for it: a send to a live receiver.
                let _ = store_tx.send(store);
                Ok(Recorder { tx, thread, failed })
            }
            Err(_) => Err(Box::new(store)),
        }
    }

    /// Whether a write failed (then the rest are dropped: no use making them).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Queue `batch` (waits while the recorder is [`QUEUED`] batches behind).
    pub fn send(&self, batch: Batch) {
        // A recorder that ended early says why in `finish`.
        let _ = self.tx.send(batch);
    }

    /// Wait for every queued batch to be written; the store comes back.
    pub fn finish(self) -> Written {
        drop(self.tx);
        self.thread
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    }
}

/// The recorder's body: take the store, then write each batch until the
/// channel closes.
fn record(store: Receiver<Store>, batches: Receiver<Batch>, failed: &AtomicBool) -> Written {
    let mut store = store
        .recv()
        .expect("the store is sent once the thread runs");
    let (mut recorded, mut error) = (0, None);
    for batch in batches {
        if error.is_some() {
            continue; // drain, so the sender never waits on a dead recorder
        }
        match store.insert(&batch) {
            Ok(()) => recorded += batch.len() as u64,
            Err(e) => {
                error = Some(e);
                failed.store(true, Ordering::Relaxed);
            }
        }
    }
    Written {
        store,
        recorded,
        error,
    }
}
