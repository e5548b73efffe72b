//! The thread that maps a hashing thread's windows ahead of it and unmaps those
//! it hashed, kept from file to file, and the hashing of a mapped file's rest.

use std::io;
use std::os::fd::AsFd;

use super::large::{map_here, spare_core, take, AHEAD_WINDOW};
use super::{Opened, Reading, Running};

/// Hash the rest of a mapped file window by window (see [`crate::mapped`]),
/// as far as windows can be mapped.
///
/// Filling a window's page-table entries (`MAP_POPULATE`) costs ~10 % of
/// hashing it, and tearing its page table down again a few per cent more.
/// When a core is free and more than one [`SHORT_WINDOW`] is left, the hashing
/// thread's [`Mapper`] maps the windows ahead and unmaps those hashed, so the
/// hasher only hashes (the kernel still flushes its TLB when a window is
/// unmapped): windows of [`SHORT_WINDOW`] while at most two [`AHEAD_WINDOW`]s
/// are left, of [`WINDOW`](crate::mapped::WINDOW) when more are.
pub(super) fn map_rest(run: &mut Running, opened: &Opened, reading: &Reading) -> io::Result<()> {
    use crate::mapped::WINDOW;
    let left = opened.size.saturating_sub(run.size());
    // A thread whose mapper could not be started takes no spare core for it.
    if left > SHORT_WINDOW as u64 && !mapper_refused() {
        if let Some(_ahead) = spare_core(reading) {
            let window = if left <= 2 * AHEAD_WINDOW as u64 {
                SHORT_WINDOW
            } else {
                WINDOW
            };
            return map_ahead(run, opened, window, reading);
        }
    }
    map_here(run, opened, left, WINDOW, reading, true).map(drop)
}

/// Whether this thread's [`Mapper`] could not be started (one not tried yet is
/// not refused).
pub(super) fn mapper_refused() -> bool {
    MAPPER.with(|m| matches!(*m.borrow(), Some(None)))
}

/// Windows of a file of a few MiB mapped by the hashing thread's [`Mapper`],
/// and the first window of every file it maps, which the hasher maps itself.
pub(super) const SHORT_WINDOW: usize = 2 * 1024 * 1024;

/// One file's windows for a [`Mapper`] to map: a duplicate of its descriptor
/// (the hasher may close its own as soon as it stops waiting), where to start
/// and end, the windows' size, and where to send each window (`None`: it
/// could not be mapped).
struct MapJob {
    file: std::os::fd::OwnedFd,
    at: u64,
    end: u64,
    window: usize,
    out: std::sync::mpsc::SyncSender<Option<crate::mapped::Window>>,
}

/// A thread that maps the windows of a hashing thread's files ahead of it
/// and unmaps those it hashed, kept from file to file: for files of a few
/// MiB, a thread started and joined for each file cost what its page tables
/// saved. With the sending channel's room for one, at most three windows
/// are mapped at once: one hashed, one ready, one being mapped. On a
/// 2-vCPU AMD EPYC guest (family 25 model 17), `hash-serial` on warm 8 MiB
/// files (`shards`) took 341.7 ms without a helper and 341.3 ms with a
/// thread per file, 355.0 → 330.7 ms with this one; on 6 MiB files (`six`)
/// 167.2 → 157.3 ms (interleaved rounds). It waits on its channel between
/// files, and ends when the hashing thread does (its thread-local drops the
/// senders) or with the process. The last windows of a file come back after
/// its job has ended: they are unmapped when the next job starts, or when the
/// thread ends. Unmapping them as soon as the hasher is done with the file (a
/// return channel per job) cost `hash-serial` 0.7 % on `shards` and 1.4 % on
/// `six` (15 and 25 interleaved rounds): the unmap then meets the hasher
/// mapping the next file's first window.
struct Mapper {
    jobs: std::sync::mpsc::Sender<MapJob>,
    done: std::sync::mpsc::Sender<crate::mapped::Window>,
}

impl Mapper {
    fn start() -> Option<Mapper> {
        use crate::mapped::{will_need, Window};
        let (jobs, job_rx) = std::sync::mpsc::channel::<MapJob>();
        let (done, done_rx) = std::sync::mpsc::channel::<Window>();
        crate::limits::thread_builder()
            .spawn(move || {
                while let Ok(job) = job_rx.recv() {
                    let mut at = job.at;
                    while at < job.end {
                        done_rx.try_iter().for_each(drop);
                        // Windows end on a multiple of their size (where huge
                        // pages would map whole), wherever the job starts.
                        let len = (job.window - (at % job.window as u64) as usize)
                            .min((job.end - at) as usize);
                        will_need(&job.file, at + len as u64, job.window);
                        let window = Window::map(&job.file, at, len, true);
                        let failed = window.is_none();
                        if job.out.send(window).is_err() || failed {
                            break;
                        }
                        at += len as u64;
                    }
                    done_rx.try_iter().for_each(drop);
                }
            })
            .ok()?;
        Some(Mapper { jobs, done })
    }
}

thread_local! {
    /// This thread's [`Mapper`]: `None` until the first file it maps ahead,
    /// then the mapper, or `Some(None)` if the thread could not be started
    /// (not tried again: its files are mapped by the hasher alone).
    static MAPPER: std::cell::RefCell<Option<Option<Mapper>>> =
        const { std::cell::RefCell::new(None) };
}

/// Hash the rest of a file: this thread maps and hashes the first
/// [`SHORT_WINDOW`] while its [`Mapper`] maps the others, `window` bytes at a
/// time.
fn map_ahead(
    run: &mut Running,
    opened: &Opened,
    window: usize,
    reading: &Reading,
) -> io::Result<()> {
    use crate::mapped::WINDOW;
    let size = opened.size;
    let first = SHORT_WINDOW as u64;
    let at = run.size() + first;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let done = MAPPER.with(|m| {
        let mut m = m.borrow_mut();
        let mapper = m.get_or_insert_with(Mapper::start).as_ref()?;
        let file = opened.file.as_fd().try_clone_to_owned().ok()?;
        mapper
            .jobs
            .send(MapJob {
                file,
                at,
                end: size,
                window,
                out: tx,
            })
            .ok()?;
        Some(mapper.done.clone())
    });
    let Some(done) = done else {
        return map_here(run, opened, size - run.size(), WINDOW, reading, true).map(drop);
    };
    if !map_here(run, opened, first, SHORT_WINDOW, reading, true)? {
        return Ok(());
    }
    while run.size() < size {
        // A window that could not be mapped: the rest is read later.
        let Some(mapped) = rx.recv().ok().flatten() else {
            break;
        };
        let _ = done.send(take(run, mapped, opened, reading)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::DataPath;
    use crate::hasher::open::open_path;
    use crate::hasher::tests::noise;
    use crate::hasher::{new_buffer, read_on, ReadPolicy, PROBE};
    use sha2::{Digest, Sha256};

    #[test]
    fn files_mapped_ahead_by_one_mapper_give_the_in_memory_digest() {
        let dir = tempfile::tempdir().unwrap();
        crate::mapped::catch_sigbus();
        // Two cores for the run, whatever this machine has, so that a core is
        // spare for the mapper; several files on this thread, so that one
        // mapper serves them in turn.
        let reading = Reading::new(ReadPolicy {
            path: DataPath::Map,
            ..ReadPolicy::default()
        });
        reading.set_cores(2);
        let sizes = [
            SHORT_WINDOW + 1,
            2 * SHORT_WINDOW,
            5 * SHORT_WINDOW / 2 + 12_345,
            2 * AHEAD_WINDOW,
            // Beyond two windows ahead: windows of `WINDOW`.
            2 * AHEAD_WINDOW + PROBE + 7,
            3 * AHEAD_WINDOW + SHORT_WINDOW / 2,
        ];
        for (k, size) in sizes.into_iter().enumerate() {
            let data = noise(size, 40 + k as u64);
            let path = dir.path().join(format!("m{k}"));
            std::fs::write(&path, &data).unwrap();
            let opened = open_path(&path, false).unwrap();
            let mut run = Running::default();
            map_rest(&mut run, &opened, &reading).unwrap();
            let got = read_on(run, &opened, &mut new_buffer(), &reading, None).unwrap();
            let want: [u8; 32] = Sha256::digest(&data).into();
            assert_eq!(got.digest, want, "{size} bytes");
            assert_eq!(got.size, size as u64);
        }
        assert!(
            MAPPER.with(|m| matches!(*m.borrow(), Some(Some(_)))),
            "a mapper was started"
        );
    }
}
