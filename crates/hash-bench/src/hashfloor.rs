//! `hash-bench hash-floor` (the `ref-hash-floor-*` rows): the least a hasher can do on
//! a tree of small files, timed like any program.
//!
//! On one thread, for each regular file in path order: `openat` relative to its
//! directory's descriptor, `fstat` (unless left out), `pread` into a reused 64 KiB
//! buffer until a read comes back short, `close`, and SHA-256 of the bytes (unless
//! left out). Nothing is printed per file, nothing is allocated per file but the
//! name, and there is no error handling beyond counting. `hash-serial` makes the same
//! four system calls per small file (`openat`, `fstat`, `pread`, `close`), so this
//! program's time is about what `hash-serial` could reach with no code of its own,
//! and `rhash` divided by it about the largest ratio to `rhash` a hasher making those
//! calls can show on the machine (this is one way of making them, not a proof). Without `fstat` it is the floor of a hasher that trusts a short read
//! as the end of a file and checks no file type.
//!
//! With `-j N`, N threads take turns at the roots' files, 256 at a time, and at their
//! subdirectories, each whole (listed inside the thread that takes it), and each
//! thread first takes a descriptor table and credentials of its own, as `hash-threads`'
//! workers do:
//! the floor of a parallel hasher of such a tree, with no hand-off per file and no
//! output to put in order.
//!
//! A floor for small files: a file is read with `pread` into the 64 KiB buffer, as
//! the hashers read files under 1 MiB; larger ones they map, so the sweep plans
//! these rows only for datasets whose files are all under 1 MiB.
//!
//! It prints one line: files, bytes, errors, and the XOR of the files' digests (so
//! the hashing cannot be optimised away, and a test can check it against
//! `sha256sum`).

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use rustix::fs::{Mode, OFlags};
use sha2::{Digest, Sha256};

/// What the floor does to each file besides open, read and close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// `fstat` each opened file (as every hashrace hasher does).
    pub fstat: bool,
    /// SHA-256 each file's bytes.
    pub hash: bool,
}

/// What [`run`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Report {
    /// Regular files read to the end.
    pub files: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Files or directories that could not be read (reported on stderr).
    pub errors: u64,
    /// XOR of every file's SHA-256 (zero without hashing).
    pub xor: [u8; 32],
}

/// The buffer each file is read into: rhash's read size.
const BUFFER: usize = 64 * 1024;

/// Walk `roots` (directories, not following symbolic links below them) and do
/// `work` to every regular file: in path order on this thread, or on `threads`
/// threads taking turns at the roots' files ([`CHUNK`] at a time) and
/// subdirectories (each whole).
pub fn run(roots: &[PathBuf], work: Work, threads: usize) -> Report {
    let mut floor = Floor::new(work);
    if threads <= 1 {
        for root in roots {
            floor.dir(root);
        }
        return floor.report;
    }
    let mut units = Vec::new();
    for root in roots {
        let Some(listed) = floor.list(root) else {
            continue;
        };
        let fd = std::sync::Arc::new(listed.fd);
        for names in listed.files.chunks(CHUNK) {
            units.push(Unit::Files(
                root,
                std::sync::Arc::clone(&fd),
                names.to_vec(),
            ));
        }
        units.extend(listed.dirs.into_iter().map(Unit::Dir));
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let reports: Vec<Report> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    // A descriptor table of this thread's own: the descriptors
                    // stay open, only no longer shared.
                    let _ = nix::sched::unshare(nix::sched::CloneFlags::CLONE_FILES);
                    // A private copy of the same credentials, so that each
                    // open's reference on them stays in this core's cache.
                    if let Ok(caps) = rustix::thread::capabilities(None) {
                        let _ = rustix::thread::set_capabilities(None, caps);
                    }
                    let mut floor = Floor::new(work);
                    while let Some(unit) = units.get(next.fetch_add(1, Ordering::Relaxed)) {
                        match unit {
                            Unit::Files(dir, fd, names) => floor.files(dir, fd, names),
                            Unit::Dir(dir) => floor.dir(dir),
                        }
                    }
                    floor.report
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for r in reports {
        floor.report.files += r.files;
        floor.report.bytes += r.bytes;
        floor.report.errors += r.errors;
        for (x, d) in floor.report.xor.iter_mut().zip(r.xor) {
            *x ^= d;
        }
    }
    floor.report
}

/// Files of a root a thread takes at a time: a hand-off per 256 files is
/// nothing beside their reads, and a flat root of large files (one of a few
/// hundred files) still spreads over the threads.
const CHUNK: usize = 256;

/// What one thread takes at a time.
enum Unit<'a> {
    /// Files of a root, by name, with the root's path and descriptor.
    Files(&'a Path, std::sync::Arc<OwnedFd>, Vec<OsString>),
    /// A subdirectory of a root, with everything below it.
    Dir(PathBuf),
}

/// A directory, open, and its entries sorted.
struct Listed {
    fd: OwnedFd,
    files: Vec<OsString>,
    dirs: Vec<PathBuf>,
}

struct Floor {
    work: Work,
    buf: Vec<u8>,
    report: Report,
}

impl Floor {
    fn new(work: Work) -> Floor {
        Floor {
            work,
            buf: vec![0; BUFFER],
            report: Report::default(),
        }
    }

    fn fail(&mut self, path: &Path, e: impl std::fmt::Display) {
        eprintln!("hash-bench: {}: {e}", path.display());
        self.report.errors += 1;
    }

    /// Open `dir` and list it; `None` (counted, reported) if it cannot be.
    /// Listed through a duplicate of the descriptor its files are opened in,
    /// as hash-core's walk does: one open per directory.
    fn list(&mut self, dir: &Path) -> Option<Listed> {
        use rustix::fs::{Dir, FileType};
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let opened = rustix::fs::open(dir, flags, Mode::empty())
            .and_then(|fd| Ok((Dir::new(rustix::io::dup(&fd)?)?, fd)));
        let (mut reader, fd) = match opened {
            Ok(both) => both,
            Err(e) => {
                self.fail(dir, e);
                return None;
            }
        };
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        while let Some(entry) = reader.read() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    self.fail(dir, e);
                    break;
                }
            };
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            let mut kind = entry.file_type();
            if kind == FileType::Unknown {
                // Some file systems do not fill in the type.
                let st = rustix::fs::statat(&fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
                kind = st.map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode));
            }
            match kind {
                _ if name == "." || name == ".." => {}
                FileType::Directory => dirs.push(name.to_owned()),
                FileType::RegularFile => files.push(name.to_owned()),
                _ => {}
            }
        }
        files.sort();
        dirs.sort();
        let dirs = dirs.into_iter().map(|name| dir.join(name)).collect();
        Some(Listed { fd, files, dirs })
    }

    /// Do the files of `dir`, then everything below it.
    fn dir(&mut self, dir: &Path) {
        let Some(listed) = self.list(dir) else {
            return;
        };
        self.files(dir, &listed.fd, &listed.files);
        for sub in &listed.dirs {
            self.dir(sub);
        }
    }

    /// Do the files `names` of the directory `dir`, open as `fd`.
    fn files(&mut self, dir: &Path, fd: &OwnedFd, names: &[OsString]) {
        for name in names {
            if let Err(e) = self.file(fd, name) {
                self.fail(&dir.join(name), e);
            }
        }
    }

    fn file(&mut self, dir: &OwnedFd, name: &std::ffi::OsStr) -> rustix::io::Result<()> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let file = rustix::fs::openat(dir, name, flags, Mode::empty())?;
        if self.work.fstat {
            rustix::fs::fstat(&file)?;
        }
        let mut hasher = Sha256::new();
        let mut at = 0u64;
        loop {
            let n = rustix::io::pread(&file, &mut self.buf[..], at)?;
            if self.work.hash {
                hasher.update(&self.buf[..n]);
            }
            at += n as u64;
            if n < BUFFER {
                break;
            }
        }
        drop(file);
        if self.work.hash {
            for (x, d) in self.report.xor.iter_mut().zip(hasher.finalize()) {
                *x ^= d;
            }
        }
        self.report.files += 1;
        self.report.bytes += at;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_regular_files_only_and_reads_to_the_end() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("x"), [1u8; 10]).unwrap();
        // Exactly two buffers: the end is the third, empty, read.
        std::fs::write(d.join("a/y"), vec![2u8; BUFFER * 2]).unwrap();
        std::fs::write(d.join("a/b/empty"), b"").unwrap();
        std::os::unix::fs::symlink(d.join("x"), d.join("a/link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join("a/fifo"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        for (fstat, threads) in [(true, 1), (false, 1), (true, 3)] {
            let r = run(&[d.to_path_buf()], Work { fstat, hash: false }, threads);
            assert_eq!((r.files, r.bytes, r.errors), (3, 10 + 2 * BUFFER as u64, 0));
            assert_eq!(r.xor, [0; 32]);
        }
        for threads in [1, 2] {
            let work = Work {
                fstat: true,
                hash: false,
            };
            let r = run(&[d.join("nosuch"), d.join("a")], work, threads);
            assert_eq!((r.files, r.errors), (2, 1));
        }
    }

    /// Every file once, whatever the threads: files in the root (more than a
    /// chunk) and in several subdirectories, with and without each piece of work.
    #[test]
    fn threads_share_files_and_directories_and_do_each_file_once() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let mut bytes = 0;
        for i in 0..CHUNK + 3 {
            std::fs::write(d.join(format!("r{i}")), vec![i as u8; i % 7]).unwrap();
            bytes += (i % 7) as u64;
        }
        for sub in ["s0", "s1", "s2/deep"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
            for i in 0..5 {
                std::fs::write(d.join(sub).join(format!("f{i}")), vec![9u8; 100 + i]).unwrap();
                bytes += 100 + i as u64;
            }
        }
        let files = (CHUNK + 3 + 15) as u64;
        let one = run(
            &[d.to_path_buf()],
            Work {
                fstat: true,
                hash: true,
            },
            1,
        );
        assert_eq!((one.files, one.bytes, one.errors), (files, bytes, 0));
        assert_ne!(one.xor, [0; 32]);
        for threads in [2, 3, 8] {
            for (fstat, hash) in [(true, true), (false, true), (false, false)] {
                let r = run(&[d.to_path_buf()], Work { fstat, hash }, threads);
                assert_eq!((r.files, r.bytes, r.errors), (files, bytes, 0));
                assert_eq!(r.xor, if hash { one.xor } else { [0; 32] });
            }
        }
    }
}
