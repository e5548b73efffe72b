//! Turn command-line paths into a sorted plan of regular files.
//!
//! The plan is what `find -H PATH... -type f` would list, sorted by the raw
//! bytes of each path (as `LC_ALL=C sort -z` sorts), with each file's size so
//! that strategies can schedule the largest files first. Walking is done once,
//! up front, for every strategy: it is cheap next to hashing (a cold walk of
//! 20 k files takes ~50 ms here), it fixes the output order before any hashing
//! starts, and it gives progress reporting a total.
//!
//! Rules (matching `find -H`, or `find -L` with `-L/--follow`):
//! - A path given on the command line is followed if it is a symbolic link.
//! - Below it, symbolic links are neither followed nor hashed unless `follow`;
//!   with `follow`, a directory loop is reported and not entered, and a
//!   dangling link is skipped like any other non-regular entry.
//! - FIFOs, sockets and devices are counted as skipped, never opened.
//! - A directory or file that cannot be read is reported; the walk goes on.
//! - A root spelled exactly `-` is standard input, as in GNU `sha256sum`: it
//!   is planned as the job [`STDIN`] at its sorted place, never `stat`ed or
//!   walked (a file named `-` is reachable as `./-`).
//! - What a [`Filter`] excludes is not there: an excluded directory is never
//!   opened, and with `-x` a directory on another file system than its root
//!   is not listed (`find -xdev`).

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use walkdir::WalkDir;

use crate::error::{Error, ErrorKind};
use crate::escape::path_bytes;
pub use crate::filter::Filter;
pub(crate) use crate::strategy::{DirFd, Job};

/// An entry that is neither a regular file nor a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Its path, root joined with the path below it.
    pub path: PathBuf,
    /// What it is: `symlink`, `fifo`, `socket`, `block_device`, `char_device`.
    pub kind: &'static str,
}

/// The outcome of walking all roots.
#[derive(Debug, Default)]
pub struct Plan {
    /// Regular files, sorted by the raw bytes of their paths.
    pub files: Vec<Job>,
    /// Paths that could not be walked or examined, in walk order.
    pub errors: Vec<Error>,
    /// Entries that are not regular files or directories (links, FIFOs, ...),
    /// sorted as the files are.
    pub skipped: Vec<Skipped>,
    /// The roots walked as directories, as given (the cache prunes below
    /// them what the walk no longer finds).
    pub dirs: Vec<PathBuf>,
    /// Directory descriptors kept open for the files so far: one budget
    /// over every root of the walk (see [`DIR_FDS_KEPT`]).
    dir_fds_kept: usize,
}

impl Plan {
    /// Total bytes of the planned files, as seen by the walk.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// How to walk.
#[derive(Debug, Clone, Copy)]
pub struct Walk<'a> {
    /// `-L`: follow symbolic links below the roots.
    pub follow: bool,
    /// `stat` every file for its size, which largest-first scheduling and
    /// progress totals need. Without, sizes are 0 and the walk makes one
    /// system call less per file (a full path lookup, ~10 % of
    /// `hash-serial`'s time on 20 k warm 4 KiB files); a file's real size
    /// still comes from reading it.
    pub sizes: bool,
    /// What to leave out.
    pub filter: &'a Filter,
}

/// Walk `roots` and plan the files to hash (see the module doc for the rules).
pub fn plan(roots: &[PathBuf], how: &Walk<'_>) -> Plan {
    let mut plan = Plan::default();
    for root in roots {
        walk_root(root, how, &mut plan);
    }
    // Stable: a root given twice is listed twice, as `find` would.
    plan.files
        .sort_by(|a, b| path_bytes(&a.path).cmp(path_bytes(&b.path)));
    // Skipped entries are listed (JSON) in the files' order too.
    plan.skipped
        .sort_by(|a, b| path_bytes(&a.path).cmp(path_bytes(&b.path)));
    plan
}

/// Every file under `roots`, nothing filtered (for tests).
#[cfg(test)]
pub(crate) fn everything(roots: &[PathBuf], follow: bool, sizes: bool) -> Plan {
    let filter = Filter::default();
    plan(
        roots,
        &Walk {
            follow,
            sizes,
            filter: &filter,
        },
    )
}

/// The path of the job that stands for standard input. No walked path can
/// equal it: entries below a root always start with the root and a `/`.
pub const STDIN: &str = "-";

/// Whether `job` is standard input rather than a file.
pub fn is_stdin(job: &Job) -> bool {
    job.path.as_os_str() == STDIN
}

fn walk_root(root: &Path, how: &Walk<'_>, plan: &mut Plan) {
    let Walk {
        follow,
        sizes,
        filter,
    } = *how;
    if root.as_os_str() == STDIN {
        plan.files.push(Job::new(PathBuf::from(STDIN), 0, false));
        return;
    }
    let meta = match fs::metadata(root) {
        Ok(m) => m,
        Err(e) => return plan.errors.push(Error::new(root, e)),
    };
    if meta.is_file() {
        // Relative to its root, a file given by name is just its name.
        let name_len = root.file_name().map_or(0, |n| n.len());
        let rel = path_bytes(root).len() - name_len;
        plan.files.push(Job {
            rel,
            ..Job::new(root.to_path_buf(), meta.len(), true)
        });
        return;
    }
    if !meta.is_dir() {
        // Named explicitly but not hashable: say so rather than drop it.
        plan.errors.push(Error::new(root, ErrorKind::NotRegular));
        return;
    }
    plan.dirs.push(root.to_path_buf());
    // Entries below the root are `root.join(..)`: the relative part starts
    // after the root and the separator `join` adds (none if it ends in '/').
    let root_len = path_bytes(root).len();
    let rel = root_len + usize::from(!path_bytes(root).ends_with(b"/"));
    if !follow {
        return walk_physical(root, rel, how, plan);
    }
    let walker = WalkDir::new(root)
        .follow_links(follow)
        .follow_root_links(true)
        .same_file_system(filter.one_file_system)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0 || !filter.excludes(&path_bytes(e.path())[rel..], e.file_type().is_dir())
        });
    for entry in walker {
        match entry {
            Ok(entry) => {
                let ft = entry.file_type();
                if ft.is_dir() {
                    continue;
                }
                if !ft.is_file() {
                    plan.skipped.push(Skipped {
                        kind: kind_name(ft),
                        path: entry.into_path(),
                    });
                    continue;
                }
                if !sizes {
                    let job = Job::new(entry.into_path(), 0, follow);
                    plan.files.push(Job { rel, ..job });
                    continue;
                }
                // `metadata` follows links only when the walk does, like `find`.
                match entry.metadata() {
                    Ok(m) => plan.files.push(Job {
                        rel,
                        ..Job::new(entry.into_path(), m.len(), follow)
                    }),
                    Err(e) => plan.errors.push(walk_error(e, root)),
                }
            }
            Err(e) => {
                if let Some(path) = e.path().filter(|_| follow && is_dangling_link(&e)) {
                    let path = path.to_path_buf();
                    plan.skipped.push(Skipped {
                        path,
                        kind: "symlink",
                    });
                } else {
                    plan.errors.push(walk_error(e, root));
                }
            }
        }
    }
}

/// One entry of a directory being walked.
struct Entry {
    /// Its name, with a `/` appended for a directory: sorting by this key
    /// lists a directory's contents exactly where the whole paths sort.
    key: Vec<u8>,
    is_dir: bool,
}

/// A directory whose entries are being listed.
struct Frame {
    /// Its path (root joined with the path below it).
    path: Vec<u8>,
    fd: Option<DirFd>,
    raw: Arc<OwnedFd>,
    entries: std::vec::IntoIter<Entry>,
}

/// Open directories kept for opening files relative to them, at most: far
/// below the descriptor limit a binary raises at start-up (see
/// [`crate::limits`]; a tree with more directories opens the rest's files by
/// full path, which is only slower).
const DIR_FDS_KEPT: usize = 4096;

/// Descriptors left for everything else: files being hashed (up to 128 at
/// once), the directories being listed, pipes, the standard streams.
const FDS_SPARE: u64 = 512;

/// The walk of a directory root without following links (`find -H`), on
/// directory descriptors: `getdents` gives each entry's type, so only files
/// need a `stat` (relative to their directory, for their size), and the
/// sorted order comes out directly, directory by directory, with no sort of
/// the whole list. Each file keeps its directory open so that hashing opens
/// it with `openat` instead of looking up its full path again.
fn walk_physical(root: &Path, rel: usize, how: &Walk<'_>, plan: &mut Plan) {
    use rustix::fs::{fstat, open, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = match open(root, flags, Mode::empty()) {
        Ok(fd) => Arc::new(fd),
        Err(e) => return plan.errors.push(Error::new(root, io::Error::from(e))),
    };
    // `-x`: the device every directory listed must be on (one `fstat` per
    // directory, and only then).
    let device = |fd: &OwnedFd| fstat(fd).map(|st| st.st_dev);
    let root_dev = match how.filter.one_file_system.then(|| device(&fd)).transpose() {
        Ok(dev) => dev,
        Err(e) => return plan.errors.push(Error::new(root, io::Error::from(e))),
    };
    let budget = dir_fd_budget();
    let mut stack: Vec<Frame> = Vec::new();
    let push = |path: Vec<u8>, raw: Arc<OwnedFd>, plan: &mut Plan, stack: &mut Vec<Frame>| {
        let entries = match list(&raw, &path, (rel, how.filter), plan) {
            Ok(entries) => entries,
            Err(e) => return plan.errors.push(Error::new(os_path(&path), e)),
        };
        let keep = plan.dir_fds_kept < budget;
        plan.dir_fds_kept += usize::from(keep);
        let fd = keep.then(|| DirFd(Arc::clone(&raw)));
        stack.push(Frame {
            path,
            fd,
            raw,
            entries: entries.into_iter(),
        });
    };
    push(path_bytes(root).to_vec(), fd, plan, &mut stack);
    while let Some(frame) = stack.last_mut() {
        let Some(entry) = frame.entries.next() else {
            stack.pop();
            continue;
        };
        let name = if entry.is_dir {
            &entry.key[..entry.key.len() - 1]
        } else {
            &entry.key[..]
        };
        let mut path = Vec::with_capacity(frame.path.len() + 1 + name.len());
        path.extend_from_slice(&frame.path);
        if !path.ends_with(b"/") {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        let name = OsStr::from_bytes(name);
        if entry.is_dir {
            match rustix::fs::openat(&frame.raw, name, flags | OFlags::NOFOLLOW, Mode::empty()) {
                Ok(sub) => match root_dev.map(|dev| device(&sub).map(|d| d == dev)) {
                    // A mount point under -x: `find -xdev` lists nothing below it.
                    Some(Ok(false)) => {}
                    Some(Err(e)) => plan
                        .errors
                        .push(Error::new(os_path(&path), io::Error::from(e))),
                    Some(Ok(true)) | None => push(path, Arc::new(sub), plan, &mut stack),
                },
                Err(e) => plan
                    .errors
                    .push(Error::new(os_path(&path), io::Error::from(e))),
            }
            continue;
        }
        let size = if how.sizes {
            match rustix::fs::statat(&frame.raw, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st.st_size as u64,
                Err(e) => {
                    plan.errors
                        .push(Error::new(os_path(&path), io::Error::from(e)));
                    continue;
                }
            }
        } else {
            0
        };
        plan.files.push(Job {
            rel,
            dir: frame.fd.clone(),
            ..Job::new(PathBuf::from(OsString::from_vec(path)), size, false)
        });
    }
}

fn os_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// The entries of one directory, sorted by [`Entry::key`], less those the
/// filter excludes (`rel`: where the path below the root starts); entries
/// that are neither files nor directories go to `plan.skipped` on the way.
fn list(
    dir: &OwnedFd,
    path: &[u8],
    (rel, filter): (usize, &Filter),
    plan: &mut Plan,
) -> io::Result<Vec<Entry>> {
    use rustix::fs::{statat, AtFlags, Dir, FileType};
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    // A duplicate descriptor, read directly: `Dir::read_from` would reopen
    // ".", which needs search permission that listing does not.
    let mut reader = Dir::new(rustix::io::dup(dir)?)?;
    let join = |name: &[u8]| {
        let mut p = path.to_vec();
        if !p.ends_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(name);
        p
    };
    while let Some(entry) = reader.read() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                // What was listed so far is still walked; the rest is lost
                // and said so.
                plan.errors
                    .push(Error::new(os_path(path), io::Error::from(e)));
                break;
            }
        };
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let mut ft = entry.file_type();
        if ft == FileType::Unknown {
            // Some filesystems do not fill in d_type.
            match statat(dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => ft = FileType::from_raw_mode(st.st_mode),
                // Gone since it was listed: as if never there.
                Err(rustix::io::Errno::NOENT) => continue,
                Err(e) => {
                    plan.errors
                        .push(Error::new(os_path(&join(name)), io::Error::from(e)));
                    continue;
                }
            }
        }
        if filter.has_patterns() && filter.excludes(&join(name)[rel..], ft == FileType::Directory) {
            continue;
        }
        let mut key = name.to_vec();
        match ft {
            FileType::RegularFile => entries.push(Entry { key, is_dir: false }),
            FileType::Directory => {
                key.push(b'/');
                entries.push(Entry { key, is_dir: true });
            }
            other => skipped.push((key, other)),
        }
    }
    entries.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    skipped.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (name, ft) in skipped {
        plan.skipped.push(Skipped {
            path: os_path(&join(&name)),
            kind: match ft {
                rustix::fs::FileType::Symlink => "symlink",
                rustix::fs::FileType::Fifo => "fifo",
                rustix::fs::FileType::Socket => "socket",
                rustix::fs::FileType::BlockDevice => "block_device",
                rustix::fs::FileType::CharacterDevice => "char_device",
                _ => "other",
            },
        });
    }
    Ok(entries)
}

/// How many directory descriptors the walk may keep open: half of what the
/// soft limit on open files leaves after [`FDS_SPARE`]. The walk only reads
/// the limit; raising it is the binary's choice ([`crate::limits`]).
fn dir_fd_budget() -> usize {
    use rustix::process::{getrlimit, Resource};
    let cur = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    DIR_FDS_KEPT.min((cur.saturating_sub(FDS_SPARE) / 2) as usize)
}

fn kind_name(ft: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_symlink() {
        "symlink"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() {
        "block_device"
    } else if ft.is_char_device() {
        "char_device"
    } else {
        "other"
    }
}

/// With `-L`, `find` treats a link whose target is missing as a link, not an
/// error; walkdir reports it as NotFound when it tries to follow it.
fn is_dangling_link(e: &walkdir::Error) -> bool {
    let (Some(io), Some(path)) = (e.io_error(), e.path()) else {
        return false;
    };
    io.kind() == io::ErrorKind::NotFound
        && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

fn walk_error(e: walkdir::Error, root: &Path) -> Error {
    let path = e.path().unwrap_or(root).to_path_buf();
    if let Some(ancestor) = e.loop_ancestor() {
        let ancestor = ancestor.to_path_buf();
        return Error::new(path, ErrorKind::Loop { ancestor });
    }
    match e.into_io_error() {
        Some(io) => Error::new(path, io),
        None => Error::new(path, io::Error::other("walk failed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn names(plan: &Plan, root: &Path) -> Vec<String> {
        plan.files
            .iter()
            .map(|f| {
                f.path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    #[test]
    fn sorted_by_bytes_of_the_whole_path_not_per_directory() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir(r.join("a")).unwrap();
        fs::write(r.join("a/b"), b"1").unwrap();
        fs::write(r.join("a-c"), b"22").unwrap();
        fs::write(r.join("B"), b"").unwrap();
        let plan = everything(&[r.to_path_buf()], false, true);
        // '-' (0x2d) sorts before '/' (0x2f); 'B' before 'a'.
        assert_eq!(names(&plan, r), ["B", "a-c", "a/b"]);
        let rels: Vec<&[u8]> = plan.files.iter().map(|f| f.rel_path()).collect();
        assert_eq!(rels, [&b"B"[..], b"a-c", b"a/b"]);
        assert_eq!(plan.total_bytes(), 3);
        let no_sizes = everything(&[r.to_path_buf()], false, false);
        assert_eq!(no_sizes.total_bytes(), 0);
        let paths = |p: &Plan| p.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&no_sizes), paths(&plan));
        let slash = everything(&[r.join("a/")], false, false);
        assert_eq!(slash.files[0].rel_path(), b"b");
        assert!(plan.errors.is_empty());
    }

    #[test]
    fn skipped_entries_are_sorted_as_the_files_are() {
        // The walk meets an entry of a subdirectory ("s/real/up") after
        // those of its parent ("s/sock"), and a second root's after the
        // first's ("d-link" after the root "s"); sorted, neither order holds.
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join("s/real")).unwrap();
        symlink("..", r.join("s/real/up")).unwrap();
        symlink("x", r.join("s/sock")).unwrap();
        symlink("x", r.join("d-link")).unwrap();
        let p = everything(&[r.join("s"), r.to_path_buf()], false, false);
        let got: Vec<&Path> = p.skipped.iter().map(|s| s.path.as_path()).collect();
        let mut want = got.clone();
        want.sort_by(|a, b| path_bytes(a).cmp(path_bytes(b)));
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got, want);
    }

    #[test]
    fn links_are_skipped_unless_following() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::write(r.join("f"), b"x").unwrap();
        symlink("f", r.join("link")).unwrap();
        symlink("missing", r.join("dangling")).unwrap();
        let p = everything(&[r.to_path_buf()], false, true);
        assert_eq!(names(&p, r), ["f"]);
        assert_eq!(p.skipped.len(), 2);
        assert!(p.skipped.iter().all(|s| s.kind == "symlink"));
        let p = everything(&[r.to_path_buf()], true, true);
        assert_eq!(names(&p, r), ["f", "link"]);
        assert_eq!(
            p.skipped.len(),
            1,
            "the dangling link is skipped, not an error"
        );
        assert!(p.errors.is_empty());
    }

    #[test]
    fn a_directory_loop_is_reported_once_when_following() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir(r.join("d")).unwrap();
        fs::write(r.join("d/f"), b"x").unwrap();
        symlink("..", r.join("d/up")).unwrap();
        let p = everything(&[r.to_path_buf()], true, true);
        assert_eq!(names(&p, r), ["d/f"]);
        assert_eq!(p.errors.len(), 1);
        assert!(matches!(p.errors[0].kind, ErrorKind::Loop { .. }));
        assert_eq!(p.errors[0].path, r.join("d/up"));
    }

    #[test]
    fn a_dash_root_is_stdin_and_never_touches_the_file_system() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("b"), b"x").unwrap();
        // A file named "-" in the working directory must not be walked.
        let p = everything(&[PathBuf::from("-"), dir.path().join("b")], false, true);
        assert!(p.errors.is_empty());
        assert_eq!(p.files.len(), 2);
        assert!(is_stdin(&p.files[0]), "'-' sorts before '/'");
        assert!(!is_stdin(&p.files[1]));
        assert!(!is_stdin(&Job::new(PathBuf::from("./-"), 0, false)));
    }

    #[test]
    fn a_missing_root_is_an_error_and_the_others_still_walk() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::write(r.join("f"), b"x").unwrap();
        let p = everything(&[r.join("nope"), r.join("f")], false, true);
        assert_eq!(p.files.len(), 1);
        assert!(p.files[0].follow, "a file root is opened following links");
        assert_eq!(p.files[0].rel_path(), b"f");
        assert_eq!(p.errors.len(), 1);
        assert_eq!(
            p.errors[0].to_string(),
            format!("{}: No such file or directory", r.join("nope").display())
        );
    }

    /// Every file under `dir`, found by plain `read_dir` recursion (not the
    /// walk under test), as full paths sorted by their bytes: `find | sort`.
    fn find_sorted(dir: &Path) -> Vec<Vec<u8>> {
        use std::os::unix::ffi::OsStrExt;
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    out.push(e.path().as_os_str().as_bytes().to_vec());
                }
            }
        }
        out.sort();
        out
    }

    /// Names of one to three bytes from those that sort around `/` (0x2f):
    /// space, `!`, `-`, `.`, `0`, letters of both cases and bytes above ASCII.
    fn name() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::strategy::Strategy;
        let bytes = vec![b' ', b'!', b'-', b'.', b'0', b'B', b'a', 0xc3, 0xff];
        proptest::collection::vec(proptest::sample::select(bytes), 1..=3)
            .prop_filter("not . or ..", |n| n != b"." && n != b"..")
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// The walk of one root gives `LC_ALL=C sort` order of the whole paths
        /// by itself, directory by directory, before any sort of the plan: what a
        /// walk that hashes as it goes needs. Several roots are sorted together.
        #[test]
        fn one_roots_walk_is_already_in_sort_order_of_the_whole_paths(
            paths in proptest::collection::vec(proptest::collection::vec(name(), 1..=3), 1..24)
        ) {
            use proptest::prelude::*;
            use std::os::unix::ffi::{OsStrExt, OsStringExt};
            let dir = tempfile::tempdir().unwrap();
            for (i, parts) in paths.iter().enumerate() {
                let mut p = dir.path().join(["r1", "r2"][i % 2]);
                for part in parts {
                    p.push(std::ffi::OsString::from_vec(part.clone()));
                }
                // A name already taken by a file or a directory: not this one.
                if fs::create_dir_all(p.parent().unwrap()).is_ok() && !p.exists() {
                    fs::write(&p, b"").unwrap();
                }
            }
            let filter = Filter::default();
            let how = Walk { follow: false, sizes: false, filter: &filter };
            for root in ["r1", "r2"].map(|r| dir.path().join(r)) {
                if !root.exists() {
                    continue;
                }
                let mut walked = Plan::default();
                walk_root(&root, &how, &mut walked);
                let got: Vec<Vec<u8>> =
                    walked.files.iter().map(|f| f.path.as_os_str().as_bytes().to_vec()).collect();
                prop_assert_eq!(got, find_sorted(&root));
            }
            let roots = [dir.path().join("r2"), dir.path().join("r1")];
            let roots: Vec<PathBuf> = roots.into_iter().filter(|r| r.exists()).collect();
            let all = everything(&roots, false, false);
            let got: Vec<Vec<u8>> =
                all.files.iter().map(|f| f.path.as_os_str().as_bytes().to_vec()).collect();
            prop_assert_eq!(got, find_sorted(dir.path()));
        }
    }
}
