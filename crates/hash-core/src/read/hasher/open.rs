//! Opening a file to hash it, where the safety rules of [`crate::hasher`] are kept,
//! and the count of files open that lets an open wait for a descriptor.

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use super::Request;
use crate::error::ErrorKind;
use crate::stamp::Stamp;
use crate::striped::Striped;

/// Files at least this large get `POSIX_FADV_SEQUENTIAL` (a larger readahead
/// window for cold data); for small files the extra syscall is not worth it.
const SEQUENTIAL_HINT_MIN: u64 = 4 * 1024 * 1024;

/// An open regular file and the size `fstat` gave it.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The file, open for reading.
    pub file: File,
    /// Its size when opened: lets the read loop stop without a last `read`
    /// that returns 0 (one system call of five per small file).
    pub size: u64,
    /// What `fstat` said of it when opened.
    pub stamp: Stamp,
    /// Counts it, while it lives, among the files [`open`] opened (those
    /// the io_uring rings open are not counted: they never wait in `open`).
    pub(crate) _counted: Option<Counted>,
}

/// Files the hashers hold open, over every thread of the process (see
/// [`open`]: an open that finds no descriptor left waits while any is).
/// Striped: counted twice per file, it is read only when descriptors run out.
static FILES_OPEN: Striped = Striped::new();

/// One of [`FILES_OPEN`], until dropped.
#[derive(Debug)]
pub(crate) struct Counted(());

impl Counted {
    /// Count one more file open.
    pub(crate) fn new() -> Counted {
        FILES_OPEN.add(1);
        Counted(())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        FILES_OPEN.sub(1);
    }
}

/// Open `path` for hashing: non-blocking, regular files only, following a
/// final symbolic link only when `follow` is set. A path longer than the
/// kernel resolves at once (`PATH_MAX`) is opened in its parent directory,
/// which is opened one component at a time ([`open_dir`]).
pub(super) fn open_path(path: &Path, follow: bool) -> Result<Opened, ErrorKind> {
    match open_path_at(rustix::fs::CWD, path, follow) {
        Err(ErrorKind::Io(e)) if e.raw_os_error() == Some(Errno::NAMETOOLONG.raw_os_error()) => {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                return Err(e.into());
            };
            // A bare name too long for the kernel stays too long in `.`.
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            let dir = open_dir(parent)?;
            open_path_at(dir.as_fd(), Path::new(name), follow)
        }
        res => res,
    }
}

/// [`open_path`] of `path` relative to `dir`.
fn open_path_at(dir: BorrowedFd<'_>, path: &Path, follow: bool) -> Result<Opened, ErrorKind> {
    use rustix::fs::{statat, AtFlags, FileType};
    if follow {
        // A path that may lead anywhere (a root, a manifest entry, `-L`) is
        // looked at before it is opened: opening some devices has side effects.
        // The fstat below still catches a swap between the two calls.
        let st = statat(dir, path, AtFlags::empty()).map_err(io::Error::from)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            // What `sha256sum` says of a directory.
            FileType::Directory => return Err(io::Error::from(Errno::ISDIR).into()),
            _ => return Err(ErrorKind::NotRegular),
        }
    }
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    match rustix::fs::openat(dir, path, flags, Mode::empty()) {
        Ok(fd) => checked_file(File::from(fd)),
        // O_NOFOLLOW reports a symbolic link as ELOOP; the walk saw a regular
        // file here, so the honest reason is that the entry changed type.
        Err(Errno::LOOP) if !follow => Err(ErrorKind::NotRegular),
        Err(e) => Err(io::Error::from(e).into()),
    }
}

/// Open the directory `path`, however long: a path the kernel refuses as
/// too long (`ENAMETOOLONG`, over `PATH_MAX`) is opened one component at a
/// time, each relative to the last, as the kernel would resolve it.
pub(crate) fn open_dir(path: &Path) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{open, openat, CWD};
    use std::path::Component;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    match open(path, flags, Mode::empty()) {
        Err(Errno::NAMETOOLONG) => {}
        res => return res.map_err(Into::into),
    }
    let mut dir: Option<std::os::fd::OwnedFd> = None;
    for part in path.components() {
        let name: &OsStr = match part {
            Component::RootDir => "/".as_ref(),
            Component::CurDir => continue,
            Component::ParentDir => "..".as_ref(),
            Component::Normal(name) => name,
            Component::Prefix(_) => unreachable!("no prefixes on Unix"),
        };
        let next = match &dir {
            Some(d) => openat(d, name, flags, Mode::empty()),
            None => openat(CWD, name, flags, Mode::empty()),
        };
        dir = Some(next?);
    }
    match dir {
        Some(dir) => Ok(dir),
        None => Ok(open(".", flags, Mode::empty())?),
    }
}

/// Open `name` in the directory `dir` (a walked entry: never following a final
/// link), with the same rules as `open_path`. Opening relative to the
/// parent's descriptor skips the lookup of every ancestor, which is most of
/// the cost of opening a small file by its full path.
pub(crate) fn open_in(dir: BorrowedFd<'_>, name: &OsStr) -> Result<Opened, ErrorKind> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => checked_file(File::from(fd)),
        Err(Errno::LOOP) => Err(ErrorKind::NotRegular),
        Err(e) => Err(io::Error::from(e).into()),
    }
}

/// Check an opened file as `open_path` does: a regular file (with the
/// sequential hint when large), its size and stamp.
pub(crate) fn checked_file(file: File) -> Result<Opened, ErrorKind> {
    use rustix::fs::FileType;
    // fstat, not std's statx(fd, "", AT_EMPTY_PATH): no empty-path lookup.
    let st = rustix::fs::fstat(&file).map_err(io::Error::from)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        // What `sha256sum` says of a directory.
        FileType::Directory => return Err(io::Error::from(Errno::ISDIR).into()),
        _ => return Err(ErrorKind::NotRegular),
    }
    let size = st.st_size as u64;
    if size >= SEQUENTIAL_HINT_MIN {
        // A failure is harmless: it is a hint.
        let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Sequential);
    }
    Ok(Opened {
        size,
        file,
        stamp: Stamp::of(&st),
        _counted: None,
    })
}

/// Open the file `req` names, with the checks [`hash`](super::hash) makes before it reads
/// (a caller may look at its size first: see `strategy::procs`).
///
/// An open that fails for want of descriptors (`EMFILE`, `ENFILE`: a low
/// `ulimit -n`, a depth the user set above it, a network file system that
/// holds every reader's file open for round trips) is tried again while
/// other files are open (or being opened) for hashing, since one of them
/// closes soon; a failure with none, or after `DESCRIPTORS_WAIT`, is the
/// file's error. Without this, on sshfs under `ulimit -n 20`, `hash-threads
/// --max-in-flight 17` reported most of 308 files as "Too many open files".
pub(crate) fn open(req: &Request<'_>) -> Result<Opened, ErrorKind> {
    let mut pause = std::time::Duration::from_micros(100);
    let mut waited = std::time::Duration::ZERO;
    loop {
        // Counted while it opens too: on a network file system an open and
        // its `fstat` take round trips, and a thread that found no
        // descriptor must see those opening as holding one.
        // Once open, the file keeps the same count.
        let opening = Counted::new();
        let res = match (req.dir, req.path.file_name()) {
            (Some(dir), Some(name)) if !req.follow => open_in(dir, name),
            _ => open_path(req.path, req.follow),
        };
        let e = match res {
            Ok(opened) => {
                return Ok(Opened {
                    _counted: Some(opening),
                    ..opened
                })
            }
            Err(ErrorKind::Io(e)) => e,
            Err(other) => return Err(other),
        };
        let out_of_descriptors = [Errno::MFILE, Errno::NFILE]
            .iter()
            .any(|n| e.raw_os_error() == Some(n.raw_os_error()));
        if !out_of_descriptors
            || FILES_OPEN.get() <= 1
            || waited >= DESCRIPTORS_WAIT
            || req.reading.stopped()
        {
            return Err(ErrorKind::Io(e));
        }
        drop(opening);
        std::thread::sleep(pause);
        waited += pause;
        pause = (pause * 2).min(std::time::Duration::from_millis(20));
    }
}

/// The longest an open waits for a descriptor (see [`open`]): long enough
/// for a file being read over a slow link to close, short enough that a run
/// whose descriptors never come back still ends.
const DESCRIPTORS_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hasher::new_buffer;
    use crate::hasher::tests::hash_file;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let mut buf = new_buffer();
        assert!(matches!(
            hash_file(&fifo, true, &mut buf),
            Err(ErrorKind::NotRegular)
        ));
    }

    #[test]
    fn a_symlink_is_refused_unless_following() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("target"), b"abc").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("target", &link).unwrap();
        let mut buf = new_buffer();
        assert!(matches!(
            hash_file(&link, false, &mut buf),
            Err(ErrorKind::NotRegular)
        ));
        assert_eq!(
            hash_file(&link, true, &mut buf).unwrap().hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
