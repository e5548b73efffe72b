//! The data-path experiment (`hash-bench datapath`): the same files hashed by one of
//! several ways of getting their bytes to SHA-256, so that `scripts/bench-datapath.sh`
//! can race the ways under hyperfine, warm and cold, and hash-core's default
//! (`--data-path`) is chosen from measurements rather than habit.
//!
//! The ways, each with a buffer size where it has one:
//! - `map`: 8 MiB memory-mapped windows (filled with `MAP_POPULATE`) hashed in place:
//!   no copy, but SHA-256 reads from memory;
//! - `map-copy`: the same windows copied a buffer at a time into a buffer that stays in
//!   L2, hashed from there;
//! - `map-prefetch`: the windows hashed in place a page at a time, the first cache
//!   line of the page four ahead requested first (a hardware prefetcher stops at each
//!   4 KiB page, and the page cache's pages are scattered in memory): hash-core's own
//!   `map` way, through `hash_core::mapped::in_pieces`; the buffer size does not apply.
//!   Results files written before commit 05207b2 (the last of them
//!   `datapath-vm-20261203T151458Z.md`) name by it a different way: every line of the
//!   next buffer requested while the buffer before was hashed;
//! - `map-fault`: `map` without `MAP_POPULATE`: the pages are mapped by faults as the
//!   hasher reaches them (the kernel maps a few around each fault) rather than all at
//!   once by the mapping call;
//! - `map-fault-prefetch`: `map-fault`'s windows hashed a page at a time as
//!   `map-prefetch` hashes them (a request for an unmapped page is dropped, not
//!   faulted: the fault comes when the page is hashed);
//! - `read`: `pread` into the buffer, hashed from there (one copy, by the kernel);
//! - `read-thread`: a second thread `pread`s into two buffers while the first hashes.
//!
//! Files are shared out to `-j` threads largest first. Every file's digest is printed
//! in `sha256sum` format (the script checks them against `sha256sum`), so a way that
//! skipped bytes could not win.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// Bytes mapped at once (hash-core's window).
const WINDOW: usize = 8 << 20;

/// One way of getting a file's bytes to SHA-256 (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Way {
    /// Mapped windows hashed in place.
    Map,
    /// Mapped windows copied through the buffer.
    MapCopy,
    /// Mapped windows hashed in place a page at a time, the page four ahead requested first
    /// (hash-core's way).
    MapPrefetch,
    /// Mapped windows hashed in place, filled by page faults, not `MAP_POPULATE`.
    MapFault,
    /// `MapFault`'s windows hashed as `MapPrefetch` hashes: by page faults, a page at
    /// a time, the page four ahead requested first.
    MapFaultPrefetch,
    /// `pread` into the buffer.
    Read,
    /// A reader thread fills two buffers while this one hashes.
    ReadThread,
}

/// Every regular file under `roots` (as [`crate::cache::walk_all`] finds them), with
/// its size, largest first.
pub fn files(roots: &[PathBuf]) -> Result<Vec<(PathBuf, u64)>> {
    let mut out = crate::cache::walk_all(roots)?
        .into_iter()
        .map(|p| {
            let len = std::fs::metadata(&p)
                .with_context(|| p.display().to_string())?
                .len();
            Ok((p, len))
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

/// Hash `files` on `threads` threads the given way with `buffer`-byte buffers; the
/// digests, in the order of `files`.
pub fn hash_all(
    files: &[(PathBuf, u64)],
    way: Way,
    buffer: usize,
    threads: usize,
) -> Result<Vec<[u8; 32]>> {
    let next = AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<[u8; 32]>>>> =
        files.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut buf = vec![0u8; buffer.max(4096)];
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((path, _)) = files.get(i) else { break };
                    let r = hash_file(path, way, &mut buf);
                    *results[i].lock().unwrap() = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().unwrap().expect("every file was taken"))
        .collect()
}

/// Hash one file the given way, with `buf` as the buffer.
pub fn hash_file(path: &Path, way: Way, buf: &mut [u8]) -> Result<[u8; 32]> {
    let file = File::open(path).with_context(|| path.display().to_string())?;
    let size = file.metadata()?.len();
    let mut h = Sha256::new();
    match way {
        Way::Map | Way::MapCopy | Way::MapPrefetch | Way::MapFault | Way::MapFaultPrefetch => {
            // The handler that makes a mapping safe against truncation; this
            // binary opts in here (installed once).
            anyhow::ensure!(
                hash_core::mapped::catch_sigbus(),
                "the SIGBUS handler could not be installed"
            );
            let mut at = 0u64;
            while at < size {
                let len = WINDOW.min((size - at) as usize);
                let populate = !matches!(way, Way::MapFault | Way::MapFaultPrefetch);
                let window = hash_core::mapped::Window::map(&file, at, len, populate)
                    .with_context(|| format!("{}: could not be mapped", path.display()))?;
                let map = window.bytes();
                match way {
                    Way::MapCopy => {
                        for chunk in map.chunks(buf.len()) {
                            buf[..chunk.len()].copy_from_slice(chunk);
                            h.update(&buf[..chunk.len()]);
                        }
                    }
                    Way::MapPrefetch | Way::MapFaultPrefetch => {
                        hash_core::mapped::in_pieces(map, |p| h.update(p))
                    }
                    _ => h.update(map),
                }
                at += len as u64;
            }
        }
        Way::Read => {
            let mut at = 0u64;
            loop {
                let n = rustix::io::pread(&file, &mut *buf, at)?;
                if n == 0 {
                    break;
                }
                h.update(&buf[..n]);
                at += n as u64;
            }
        }
        Way::ReadThread => read_thread(&file, buf.len(), &mut h)?,
    }
    Ok(h.finalize().into())
}

/// A reader thread `pread`s into two buffers of `len` bytes; this thread hashes them.
fn read_thread(file: &File, len: usize, h: &mut Sha256) -> Result<()> {
    std::thread::scope(|s| {
        let (full_tx, full_rx) = sync_channel::<std::io::Result<(Vec<u8>, usize)>>(2);
        let (free_tx, free_rx) = sync_channel::<Vec<u8>>(2);
        for _ in 0..2 {
            free_tx.send(vec![0u8; len]).expect("room for two");
        }
        s.spawn(move || {
            let mut at = 0u64;
            while let Ok(mut b) = free_rx.recv() {
                let r = rustix::io::pread(file, &mut b[..], at).map_err(std::io::Error::from);
                let end = !matches!(r, Ok(n) if n > 0);
                if let Ok(n) = r {
                    at += n as u64;
                }
                if full_tx.send(r.map(|n| (b, n))).is_err() || end {
                    return;
                }
            }
        });
        while let Ok(r) = full_rx.recv() {
            let (b, n) = r?;
            if n == 0 {
                break;
            }
            h.update(&b[..n]);
            let _ = free_tx.send(b);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_gives_the_sha2_digest_of_the_bytes() {
        let t = tempfile::tempdir().unwrap();
        let sizes = [0usize, 1, 4095, 65_536, WINDOW + 12_345, 2 * WINDOW];
        let mut want = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let bytes: Vec<u8> = (0..n).map(|k| (k * 31 + i * 7 + k / 4099) as u8).collect();
            std::fs::write(t.path().join(format!("f{i}")), &bytes).unwrap();
            want.push((
                t.path().join(format!("f{i}")),
                <[u8; 32]>::from(Sha256::digest(&bytes)),
            ));
        }
        let list = files(&[t.path().to_path_buf()]).unwrap();
        assert_eq!(list.len(), sizes.len());
        assert!(list.windows(2).all(|w| w[0].1 >= w[1].1), "largest first");
        for way in [
            Way::Map,
            Way::MapCopy,
            Way::MapPrefetch,
            Way::MapFault,
            Way::MapFaultPrefetch,
            Way::Read,
            Way::ReadThread,
        ] {
            for buffer in [4096, 65_536, 1 << 20] {
                let got = hash_all(&list, way, buffer, 2).unwrap();
                for ((path, _), d) in list.iter().zip(got) {
                    let w = want.iter().find(|(p, _)| p == path).unwrap().1;
                    assert_eq!(d, w, "{way:?} {buffer} {}", path.display());
                }
            }
        }
    }
}
