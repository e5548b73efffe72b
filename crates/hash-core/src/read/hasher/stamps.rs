//! What a file's metadata said while it was read: the stamps a digest carries
//! when the policy asks, and the test hook that holds a read between open and first byte.

use std::os::fd::AsFd;
#[cfg(any(test, feature = "test-hooks"))]
use std::{fs::File, path::Path};

use super::{FileDigest, Opened, Reading};
use crate::stamp::Held;

/// With the `test-hooks` feature only: with `HASHRACE_TEST_STAMP_DELAY_MS` set, wait that
/// long between a file's open (and first stamp) and its first byte, so
/// that a test can change it while it is being read, however fast it reads;
/// with `HASHRACE_TEST_STAMPED_DIR` too, first say so there (an empty file
/// named `stamped-SIZE`), so that the test waits on an event, not a clock,
/// and go on as soon as the test removes that file again.
pub(super) fn stamp_delay_hook(size: u64) {
    #[cfg(any(test, feature = "test-hooks"))]
    {
        static DELAY: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
        let delay = DELAY.get_or_init(|| {
            let ms = std::env::var("HASHRACE_TEST_STAMP_DELAY_MS").ok()?;
            ms.parse().ok()
        });
        if let Some(ms) = delay {
            let limit = std::time::Duration::from_millis(*ms);
            let Some(dir) = std::env::var_os("HASHRACE_TEST_STAMPED_DIR") else {
                std::thread::sleep(limit);
                return;
            };
            // Until the test removes the file (it has done what it wanted to do
            // meanwhile), or the delay is over.
            let said = Path::new(&dir).join(format!("stamped-{size}"));
            let _ = File::create(&said);
            let start = std::time::Instant::now();
            while said.exists() && start.elapsed() < limit {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
    #[cfg(not(any(test, feature = "test-hooks")))]
    let _ = size;
}

/// `digest`, of `opened`, with the file's stamps when the policy asks for
/// them (see [`ReadPolicy::stamps`](super::ReadPolicy::stamps)).
pub(crate) fn stamped(digest: FileDigest, opened: &Opened, reading: &Reading) -> FileDigest {
    if !reading.policy.stamps {
        return digest;
    }
    FileDigest {
        held: Held::after(opened.stamp, opened.file.as_fd()),
        ..digest
    }
}
