//! Large files whose start is in the page cache: the timed segments that choose
//! between mapping and reading them, and a thread that reads ahead of the hasher.

use rustix::io::Errno;
use std::io;
use std::sync::atomic::Ordering;

use super::mapper::{map_rest, mapper_refused, SHORT_WINDOW};
use super::{new_buffer, read_on, Buffer, FileDigest, Opened, Reading, Running};

/// Half of what a file must have left for the read-ahead thread to be worth
/// starting, and for the `Mapper` to map it in windows of
/// [`WINDOW`](crate::mapped::WINDOW) rather than [`SHORT_WINDOW`].
pub(super) const AHEAD_WINDOW: usize = 8 * 1024 * 1024;

/// A helper of a large file (mapping or reading ahead of the hasher),
/// counted while it works on the file; see [`Hashing`](super::Hashing).
pub(super) struct Ahead<'r>(&'r Reading);

impl Drop for Ahead<'_> {
    fn drop(&mut self) {
        self.0.ahead.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A helper thread's place, when hashers and helpers together leave a core
/// free: with every core hashing already, it would just take turns with them.
/// Whether [`spare_core`] would give a helper now, without taking one.
fn core_to_spare(reading: &Reading) -> bool {
    let ahead = reading.ahead.load(Ordering::Relaxed);
    reading.hashers.load(Ordering::Relaxed).max(1) + ahead < reading.cores()
}

pub(super) fn spare_core(reading: &Reading) -> Option<Ahead<'_>> {
    let ahead = reading.ahead.fetch_add(1, Ordering::Relaxed);
    let guard = Ahead(reading);
    (reading.hashers.load(Ordering::Relaxed).max(1) + ahead < reading.cores()).then_some(guard)
}

/// Hash one mapped window, unless pages were lost under it, and hand it
/// back to be unmapped where that costs least.
pub(super) fn take(
    run: &mut Running,
    window: crate::mapped::Window,
    opened: &Opened,
    reading: &Reading,
) -> io::Result<crate::mapped::Window> {
    run.feed_mapped(window.bytes(), reading)?;
    if !window.intact() {
        return Err(crate::mapped::fault_error(&opened.file, opened.size));
    }
    Ok(window)
}

/// Map and hash the next `len` bytes of `opened` on this thread, in windows
/// of at most `window` (populated at once or filled by faults: see
/// [`crate::mapped::Window::map`]); `Ok(false)` as soon as one cannot be
/// mapped (the rest is then read).
pub(super) fn map_here(
    run: &mut Running,
    opened: &Opened,
    len: u64,
    window: usize,
    reading: &Reading,
    populate: bool,
) -> io::Result<bool> {
    use crate::mapped::{will_need, Window};
    let end = run.size() + len;
    while run.size() < end {
        let offset = run.size();
        let n = window.min((end - offset) as usize);
        let Some(w) = Window::map(&opened.file, offset, n, populate) else {
            return Ok(false);
        };
        will_need(&opened.file, offset + n as u64, window);
        drop(take(run, w, opened, reading)?);
    }
    Ok(true)
}

/// Map and hash the next `len` bytes of `opened` on this thread, as [`map_here`], and
/// return the thread's CPU time it took: the hashing (with the faults of a window not
/// populated), and `share` (0 to 1) of the mapping and unmapping. `None` as soon as a
/// window cannot be mapped.
fn map_timed(
    run: &mut Running,
    opened: &Opened,
    len: u64,
    reading: &Reading,
    share: f64,
    populate: bool,
) -> io::Result<Option<std::time::Duration>> {
    use crate::datapath::{thread_time, SEGMENT};
    use crate::mapped::{will_need, Window};
    let end = run.size() + len;
    let mut took = std::time::Duration::ZERO;
    while run.size() < end {
        let offset = run.size();
        let n = (SEGMENT as usize).min((end - offset) as usize);
        let mapping = thread_time();
        let Some(w) = Window::map(&opened.file, offset, n, populate) else {
            return Ok(None);
        };
        will_need(&opened.file, offset + n as u64, SEGMENT as usize);
        let hashing = thread_time();
        let w = take(run, w, opened, reading)?;
        let hashed = thread_time();
        drop(w);
        let mapped = hashing.saturating_sub(mapping) + thread_time().saturating_sub(hashed);
        took += hashed.saturating_sub(hashing) + mapped.mul_f64(share);
    }
    Ok(Some(took))
}

/// Read and hash the next `len` bytes of `opened` into `buf` (fewer if the
/// file ends first).
fn read_here(
    run: &mut Running,
    opened: &Opened,
    buf: &mut [u8],
    len: u64,
    reading: &Reading,
) -> io::Result<()> {
    let end = run.size() + len;
    while run.size() < end {
        let want = buf.len().min((end - run.size()) as usize);
        match rustix::io::pread(&opened.file, &mut buf[..want], run.size()) {
            Ok(0) => break,
            Ok(n) => run.feed(&buf[..n], reading)?,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Hash a large, mappable file whose start is in the page cache, the way the run's
/// [`crate::datapath::Chooser`] says; while it is still measuring, in timed
/// segments that take turns. A file that grew is read on to a read of 0.
pub(super) fn hash_cached(
    opened: &Opened,
    buf: &mut [u8],
    reading: &Reading,
) -> io::Result<FileDigest> {
    use crate::datapath::{Way, SEGMENT};
    reading.took_data_path.store(true, Ordering::Relaxed);
    let size = opened.size;
    let mut run = Running::default();
    let way = loop {
        let decided = reading.chooser.decided();
        if decided == Some(Way::Read) || run.size() >= size {
            break Way::Read;
        }
        if let Some(way) = decided {
            break way;
        }
        let way = reading.chooser.next_sample();
        let len = SEGMENT.min(size - run.size());
        let before = run.size();
        let took = if way != Way::Read {
            // Timed as the run's next files of this size would run (`map_rest` from
            // their start): with a core to spare, more than a `SHORT_WINDOW` in the
            // file and a mapper not refused, the hasher maps and unmaps the first
            // `SHORT_WINDOW` and its mapper the rest, so the hasher is charged that
            // share of the page-table work, wherever in the file the segment lies.
            // Charging all of it to 8 MiB files made the way a coin toss for
            // `hash-serial` on them (0.65 against 0.66 ms per MiB), though reading
            // them took 8 % longer (AMD EPYC family 25 model 17). Faults are taken
            // by the hasher itself (a mapper would only move them), so they are all
            // charged.
            let populate = way == Way::Map;
            let helper = populate
                && core_to_spare(reading)
                && size > SHORT_WINDOW as u64
                && !mapper_refused();
            let share = if helper {
                SHORT_WINDOW as f64 / size as f64
            } else {
                1.0
            };
            match map_timed(&mut run, opened, len, reading, share, populate)? {
                Some(took) => took,
                None => break Way::Read,
            }
        } else {
            // The read way's copy stays on the hasher: it is what puts the bytes in this
            // core's L2 (a read-ahead helper saves the copy but hands over bytes another
            // core wrote, which is no cheaper to hash).
            let start = crate::datapath::thread_time();
            read_here(&mut run, opened, buf, len, reading)?;
            crate::datapath::thread_time().saturating_sub(start)
        };
        reading.chooser.record(way, run.size() - before, took);
        if run.size() - before < len {
            // The file ended early (it shrank): read on to the end, as
            // `sha256sum` would; mapping past the end would fault.
            break Way::Read;
        }
    };
    match way {
        Way::Map => map_rest(&mut run, opened, reading)?,
        // A window that cannot be mapped leaves the rest to `read_on`.
        Way::MapFault => {
            let left = size.saturating_sub(run.size());
            map_here(
                &mut run,
                opened,
                left,
                crate::mapped::WINDOW,
                reading,
                false,
            )?;
        }
        Way::Read => read_rest(&mut run, opened, reading)?,
    }
    read_on(run, opened, buf, reading, None)
}

/// Buffers a read-ahead thread fills while the hasher hashes: one being
/// read, one being hashed (measured best: more of them, or larger ones, fell
/// out of the caches before they were hashed).
const READ_AHEAD_BUFFERS: usize = 2;

/// Hash the rest of a cached file read into L2-sized buffers. When a core is
/// free, a thread beside the hasher does the reading (the copy out of the
/// page cache), so the hasher only hashes; otherwise the caller reads on.
fn read_rest(run: &mut Running, opened: &Opened, reading: &Reading) -> io::Result<()> {
    let size = opened.size;
    let left = size.saturating_sub(run.size());
    let Some(_ahead) = spare_core(reading).filter(|_| left > 2 * AHEAD_WINDOW as u64) else {
        return Ok(());
    };
    type Filled = io::Result<(Buffer, usize)>;
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Filled>(READ_AHEAD_BUFFERS);
        let (free_tx, free_rx) = std::sync::mpsc::channel::<Buffer>();
        for _ in 0..READ_AHEAD_BUFFERS {
            let _ = free_tx.send(new_buffer());
        }
        let file = &opened.file;
        let mut at = run.size();
        let reader = crate::limits::thread_builder().spawn_scoped(scope, move || {
            while let Ok(mut buf) = free_rx.recv() {
                let want = buf.len().min(size.saturating_sub(at) as usize);
                let res = loop {
                    match rustix::io::pread(file, &mut buf[..want], at) {
                        Err(Errno::INTR) => continue,
                        r => break r,
                    }
                };
                let end = matches!(res, Ok(0) | Err(_));
                if let Ok(n) = res {
                    at += n as u64;
                }
                if full_tx
                    .send(res.map(|n| (buf, n)).map_err(io::Error::from))
                    .is_err()
                    || end
                {
                    return;
                }
            }
        });
        if reader.is_err() {
            return Ok(());
        }
        while run.size() < size {
            let Ok(filled) = full_rx.recv() else { break };
            let (buf, n) = filled?;
            if n == 0 {
                break;
            }
            run.feed(&buf[..n], reading)?;
            let _ = free_tx.send(buf);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hasher::open::open_path;
    use crate::hasher::tests::{hash_file, noise};

    #[test]
    fn a_file_that_shrinks_under_its_mapping_is_an_error_not_a_crash() {
        // Populated at once, or filled by faults as it is hashed.
        for populate in [true, false] {
            shrinks_under_its_mapping(populate);
        }
    }

    fn shrinks_under_its_mapping(populate: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, noise(2 * 1024 * 1024, 3)).unwrap();
        let opened = open_path(&path, false).unwrap();
        crate::mapped::catch_sigbus();
        let window =
            crate::mapped::Window::map(&opened.file, 0, 2 * 1024 * 1024, populate).unwrap();
        assert!(window.intact());
        // Another writer truncates the file while it is mapped: touching the
        // lost pages raises SIGBUS, which must not kill us.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        // Hashed as every mapped window is (in pages, pages ahead requested):
        // the lost pages are noticed and reported, not hashed as zeros.
        let err = take(
            &mut Running::default(),
            window,
            &opened,
            &Reading::default(),
        )
        .expect_err("the lost pages were noticed");
        assert!(
            err.to_string().contains("shrank"),
            "{err} (populate: {populate})"
        );
        // Hashing it now sees the new size; a fresh mapping is intact.
        let d = hash_file(&path, false, &mut new_buffer()).unwrap();
        assert_eq!(d.size, 4096);
    }
}
