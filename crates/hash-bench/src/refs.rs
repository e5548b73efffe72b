//! Reference measurements: the limits the hashers are judged against, run in the same
//! sweep under hyperfine like any program (`hash-bench ceiling`, `hash-bench read-floor`).
//!
//! - [`ceiling`]: the in-memory SHA-256 rate. It hashes exactly the file sizes of a
//!   dataset (one digest per file) from one reused buffer of pseudo-random bytes, with
//!   no I/O at all, on N threads, using the same `sha2` crate (same build, same features)
//!   as hash-core. Files are handed out largest first, so the schedule is as good as it
//!   gets (one huge file still runs on one core: SHA-256 is sequential, and the ceiling
//!   must say so). Two buffers give two limits, because SHA-256 runs faster on data in
//!   the core's L1/L2 cache than on data streamed from memory (on a 2-vCPU Intel Xeon,
//!   ~1,750 against ~1,100 MiB/s):
//!   - [`Limit::Compute`] (`ref-sha256-1core`, `-allcores`): every file is the start of a
//!     [`COMPUTE_BUFFER`] of 64 KiB, repeated, so the data never leaves L1/L2. This is
//!     what a core can hash at all: a hasher's row divided by it says how close to the
//!     compute limit it is.
//!   - [`Limit::Stream`] (`ref-sha256-stream-*`): the files follow each other through a
//!     buffer of up to [`STREAM_BUFFER`] (256 MiB), so every byte comes from memory, as
//!     it does when a file is hashed where the page cache holds it (a mapping). The
//!     buffer is filled at start-up (~50 ms for 256 MiB), inside the timed run.
//! - [`read_floor`]: open + read (into a reused buffer) + close every regular file of
//!   some trees, walk included, on N threads, without hashing: what reading alone costs,
//!   warm or cold, at a given number of reads in flight. One thread walks and feeds the
//!   readers, so the walk overlaps the reading (as a streaming hasher's would). FIFOs,
//!   devices and symbolic links are never opened (the file type comes from the
//!   directory entry).
//!
//! Both print one summary line on stdout (files, bytes, and for the ceiling an XOR of
//! all digests, so no hashing can be optimised away), and exit 1 if anything failed.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use anyhow::{bail, Result};
use rand_chacha::rand_core::RngCore;
use sha2::{Digest, Sha256};

use crate::spec::{content_rng, PlannedFile};

/// Hash algorithm of the ceiling (the one hash-core computes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Algorithm {
    /// SHA-256, with the `sha2` crate as hash-core builds it.
    Sha256,
}

/// Size of the read floor's reused buffer.
pub const BUFFER: usize = 1 << 20;

/// Size of the compute limit's buffer: a small `read()` buffer's worth, which stays in
/// L1/L2 on any CPU.
pub const COMPUTE_BUFFER: usize = 64 << 10;

/// Largest buffer of the streaming limit: far beyond any L2, and beyond most L3s.
pub const STREAM_BUFFER: usize = 256 << 20;

/// Which limit a ceiling measures (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Limit {
    /// Data in the core's cache: what SHA-256 costs by itself.
    Compute,
    /// Data streamed from memory.
    Stream,
}

impl Limit {
    /// The buffer this limit hashes from, for files totalling `total` bytes: the
    /// streaming one never larger than the data (so a small dataset costs no 256 MiB
    /// fill), in whole 64 KiB blocks.
    pub fn buffer_len(self, total: u64) -> usize {
        match self {
            Limit::Compute => COMPUTE_BUFFER,
            Limit::Stream => (total.min(STREAM_BUFFER as u64) as usize)
                .next_multiple_of(COMPUTE_BUFFER)
                .max(COMPUTE_BUFFER),
        }
    }
}

/// Seed of the ceiling's buffer contents (ChaCha8 stream 0 of this seed).
pub const CEILING_SEED: u64 = 0x5eed;

/// The ceiling's buffer of `len` bytes (a multiple of [`COMPUTE_BUFFER`]): the first
/// [`COMPUTE_BUFFER`] bytes of ChaCha8 keystream (seed [`CEILING_SEED`], stream 0),
/// repeated. A file of size `s` starting at `start` is the `s` bytes of this buffer,
/// repeated end to end, from offset `start`.
///
/// The memory is an anonymous mapping advised `MADV_HUGEPAGE`: filling 256 MiB of
/// ordinary pages took ~180 ms of page faults inside the timed run, huge pages a
/// fraction of that.
pub fn ceiling_buffer(len: usize) -> memmap2::MmapMut {
    let mut block = [0u8; COMPUTE_BUFFER];
    content_rng(CEILING_SEED, 0).fill_bytes(&mut block);
    let mut buf = memmap2::MmapOptions::new()
        .len(len.max(1))
        .map_anon()
        .expect("the ceiling's buffer (up to 256 MiB of address space)");
    // Advice: a failure only costs set-up time.
    let _ = buf.advise(memmap2::Advice::HugePage);
    for chunk in buf[..len].chunks_mut(COMPUTE_BUFFER) {
        chunk.copy_from_slice(&block[..chunk.len()]);
    }
    buf
}

/// SHA-256 of the `size` bytes of `buf` repeated, from offset `start`.
pub fn ceiling_digest(buf: &[u8], start: usize, size: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    let (mut at, mut left) = (start % buf.len(), size);
    while left > 0 {
        let n = left.min((buf.len() - at) as u64) as usize;
        h.update(&buf[at..at + n]);
        left -= n as u64;
        at = (at + n) % buf.len();
    }
    h.finalize().into()
}

/// What [`ceiling`] computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CeilingReport {
    /// Files hashed.
    pub files: u64,
    /// Bytes hashed.
    pub bytes: u64,
    /// XOR of every file's digest (order-free, so any thread count gives the same).
    pub xor: [u8; 32],
    /// Each file's digest, in the order of `files` (only when asked for).
    pub digests: Option<Vec<[u8; 32]>>,
}

/// Hash the sizes of `files` in memory on `threads` threads, against `limit`'s buffer.
/// Files start where the one before them (in `files` order) ended, so the streaming
/// limit walks its whole buffer; the compute limit's files all start at 0.
pub fn ceiling(
    files: &[PlannedFile],
    threads: usize,
    limit: Limit,
    keep_digests: bool,
) -> CeilingReport {
    let total: u64 = files.iter().map(|f| f.size).sum();
    let buf = ceiling_buffer(limit.buffer_len(total));
    let starts: Vec<usize> = files
        .iter()
        .scan(0u64, |at, f| {
            let start = match limit {
                Limit::Compute => 0,
                Limit::Stream => (*at % buf.len() as u64) as usize,
            };
            *at += f.size;
            Some(start)
        })
        .collect();
    // Largest first: the best schedule for the threads, so the ceiling is one.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(files[i].size));
    let next = AtomicUsize::new(0);
    let digests: Mutex<Vec<[u8; 32]>> = Mutex::new(if keep_digests {
        vec![[0; 32]; files.len()]
    } else {
        Vec::new()
    });
    let xor = Mutex::new([0u8; 32]);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut mine = [0u8; 32];
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { break };
                    let d = ceiling_digest(&buf, starts[i], files[i].size);
                    mine.iter_mut().zip(d).for_each(|(a, b)| *a ^= b);
                    if keep_digests {
                        digests.lock().unwrap()[i] = d;
                    }
                }
                let mut x = xor.lock().unwrap();
                x.iter_mut().zip(mine).for_each(|(a, b)| *a ^= b);
            });
        }
    });
    CeilingReport {
        files: files.len() as u64,
        bytes: total,
        xor: xor.into_inner().unwrap(),
        digests: keep_digests.then(|| digests.into_inner().unwrap()),
    }
}

/// What [`read_floor`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FloorReport {
    /// Regular files read to the end.
    pub files: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Files or directories that could not be read (reported on stderr).
    pub errors: u64,
}

/// Walk `roots` (directories or files, not following symbolic links below them) and
/// open + read + close every regular file on `threads` reader threads.
pub fn read_floor(roots: &[PathBuf], threads: usize) -> FloorReport {
    let files = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let fail = |path: &Path, e: std::io::Error| {
        eprintln!("hash-bench: {}: {e}", path.display());
        errors.fetch_add(1, Ordering::Relaxed);
    };
    // A bounded queue: the walker stays a little ahead of the readers, memory stays flat.
    let (tx, rx) = mpsc::sync_channel::<PathBuf>(4096);
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut buf = vec![0u8; BUFFER];
                loop {
                    let next = rx.lock().unwrap().recv();
                    let Ok(path) = next else { break };
                    match read_all(&path, &mut buf) {
                        Ok(n) => {
                            files.fetch_add(1, Ordering::Relaxed);
                            bytes.fetch_add(n, Ordering::Relaxed);
                        }
                        Err(e) => fail(&path, e),
                    }
                }
            });
        }
        // The walk, on this thread.
        let mut stack: Vec<PathBuf> = Vec::new();
        for r in roots.iter().rev() {
            match std::fs::metadata(r) {
                Ok(m) if m.is_dir() => stack.push(r.clone()),
                Ok(m) if m.is_file() => {
                    let _ = tx.send(r.clone());
                }
                Ok(_) => {}
                Err(e) => fail(r, e),
            }
        }
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) => {
                    fail(&dir, e);
                    continue;
                }
            };
            for entry in entries {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        fail(&dir, e);
                        continue;
                    }
                };
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(entry.path()),
                    Ok(t) if t.is_file() => {
                        let _ = tx.send(entry.path());
                    }
                    Ok(_) => {}
                    Err(e) => fail(&entry.path(), e),
                }
            }
        }
        drop(tx);
    });
    FloorReport {
        files: files.into_inner(),
        bytes: bytes.into_inner(),
        errors: errors.into_inner(),
    }
}

fn read_all(path: &Path, buf: &mut [u8]) -> std::io::Result<u64> {
    let mut f = File::open(path)?;
    let mut n = 0u64;
    loop {
        match f.read(buf) {
            Ok(0) => return Ok(n),
            Ok(k) => n += k as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Hold `mib` MiB of touched memory until stdin reaches end of file, after printing
/// `ready` on stdout: a process of known size for the peak-RSS tests.
pub fn hold_memory(mib: u64) -> Result<()> {
    use std::io::Write;
    let Ok(len) = usize::try_from(mib << 20) else {
        bail!("{mib} MiB is too much");
    };
    let mut v = vec![0u8; len];
    // Touch every page, with values the optimiser cannot fold away.
    for (i, b) in v.iter_mut().enumerate().step_by(4096) {
        *b = i as u8 | 1;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    drop(out);
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink)?;
    // Use the memory after the wait, so it is live all along.
    let sum: u64 = v.iter().step_by(4096).map(|&b| u64::from(b)).sum();
    std::hint::black_box(sum);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(index: u64, size: u64) -> PlannedFile {
        PlannedFile {
            index,
            rel: format!("f{index}"),
            size,
        }
    }

    #[test]
    fn ceiling_is_independent_of_threads_and_hashes_every_size() {
        let files: Vec<PlannedFile> = [0, 1, 64, 4096, BUFFER as u64 + 3, 5]
            .iter()
            .enumerate()
            .map(|(i, &s)| file(i as u64, s))
            .collect();
        let a = ceiling(&files, 1, Limit::Compute, true);
        let b = ceiling(&files, 3, Limit::Compute, true);
        assert_eq!(a, b);
        assert_eq!(
            (a.files, a.bytes),
            (6, 4096 + 64 + 1 + 5 + 3 + BUFFER as u64)
        );
        let s1 = ceiling(&files, 1, Limit::Stream, true);
        assert_eq!(s1, ceiling(&files, 2, Limit::Stream, true));
        // Streamed files start where the previous one ended: the first is the
        // compute limit's file, the later ones differ.
        let (ad, sd) = (a.digests.as_ref().unwrap(), s1.digests.unwrap());
        assert_eq!(ad[1], sd[1]);
        assert_ne!(ad[2], sd[2]);
        // Against the sha2 crate over the bytes laid out by hand: the 64 KiB block
        // repeated; file 4 (BUFFER + 3 bytes) starts after 1 + 64 + 4096 bytes.
        let block = ceiling_buffer(COMPUTE_BUFFER);
        let bytes: Vec<u8> = block
            .iter()
            .cycle()
            .skip(1 + 64 + 4096)
            .take(BUFFER + 3)
            .copied()
            .collect();
        assert_eq!(sd[4], <[u8; 32]>::from(Sha256::digest(&bytes)));
        // The empty file's digest is the published SHA-256 of nothing.
        assert_eq!(
            crate::util::hex(&a.digests.as_ref().unwrap()[0]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let mut xor = [0u8; 32];
        for d in a.digests.unwrap() {
            xor.iter_mut().zip(d).for_each(|(x, y)| *x ^= y);
        }
        assert_eq!(xor, a.xor);
    }

    #[test]
    fn the_stream_buffer_fits_the_data_in_whole_blocks() {
        assert_eq!(Limit::Compute.buffer_len(1 << 40), COMPUTE_BUFFER);
        assert_eq!(Limit::Stream.buffer_len(1 << 40), STREAM_BUFFER);
        assert_eq!(Limit::Stream.buffer_len(0), COMPUTE_BUFFER);
        assert_eq!(Limit::Stream.buffer_len(100_000), 2 * COMPUTE_BUFFER);
        let b = ceiling_buffer(3 * COMPUTE_BUFFER);
        assert_eq!(b.len(), 3 * COMPUTE_BUFFER);
        assert_eq!(b[..COMPUTE_BUFFER], b[2 * COMPUTE_BUFFER..]);
    }

    #[test]
    fn read_floor_counts_regular_files_and_never_opens_a_fifo() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("x"), vec![1u8; 10]).unwrap();
        std::fs::write(d.join("a/y"), vec![2u8; BUFFER * 2 + 7]).unwrap();
        std::fs::write(d.join("a/b/empty"), b"").unwrap();
        std::os::unix::fs::symlink(d.join("x"), d.join("a/link")).unwrap();
        // A FIFO with no writer: opening it would block for ever.
        let fifo = d.join("a/fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        for threads in [1, 4] {
            let r = read_floor(&[d.to_path_buf()], threads);
            assert_eq!(
                r,
                FloorReport {
                    files: 3,
                    bytes: 10 + (BUFFER as u64 * 2 + 7),
                    errors: 0
                }
            );
        }
        // A missing root is an error, and the rest is still read.
        let r = read_floor(&[d.join("nosuch"), d.join("x")], 2);
        assert_eq!((r.files, r.bytes, r.errors), (1, 10, 1));
    }
}
