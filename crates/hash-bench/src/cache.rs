//! Page-cache control and measurement: walk a dataset, evict it, read it in, measure how
//! much of it is resident, and check that a filesystem can be made cold at all.
//!
//! - Eviction is `posix_fadvise(POSIX_FADV_DONTNEED)` per file, which needs no root and
//!   touches nothing but the dataset (what `vmtouch -e` does). Dirty pages are not
//!   dropped by it, so files still resident afterwards get an `fdatasync` and a second
//!   fadvise; doing `fdatasync` on every file up front would cost a disk flush per file
//!   on ext4 (20,000 of them for `small`). `drop_caches` is offered as an alternative
//!   for root; it also drops dentries and inodes, i.e. the walk goes cold too.
//! - Residency is `mincore(2)` over a read-only shared mapping of each file, mapped in
//!   windows so that memory stays bounded on files larger than RAM.
//! - tmpfs (and ramfs) ignore eviction: [`fs_check`] refuses them by `statfs` magic and,
//!   with `probe`, by actually writing, evicting and measuring a scratch file, which also
//!   catches overlay filesystems stacked on memory.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// `statfs` magic numbers of memory-backed filesystems where eviction is a no-op.
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// How to evict a dataset from the page cache.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum EvictMethod {
    /// `posix_fadvise(POSIX_FADV_DONTNEED)` on each file (no root needed).
    Fadvise,
    /// `sync; echo 3 > /proc/sys/vm/drop_caches` (root; drops every cached file and inode).
    DropCaches,
}

/// Residency of a set of files, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Residency {
    /// Number of regular files measured.
    pub files: u64,
    /// Pages of those files present in the page cache.
    pub resident_pages: u64,
    /// Pages the files span (rounded up per file).
    pub total_pages: u64,
}

impl Residency {
    /// Resident share in percent (100 for an empty set: nothing is missing).
    pub fn percent(&self) -> f64 {
        if self.total_pages == 0 {
            100.0
        } else {
            self.resident_pages as f64 * 100.0 / self.total_pages as f64
        }
    }

    fn add(&mut self, other: Residency) {
        self.files += other.files;
        self.resident_pages += other.resident_pages;
        self.total_pages += other.total_pages;
    }
}

/// One residency measurement, as appended (one JSON object per line) to a `--record`
/// file before each timed run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResidencySample {
    /// When it was taken, seconds since the Unix epoch.
    pub unix_time_s: f64,
    /// What was done just before measuring: `evict` or `none`.
    pub action: String,
    /// Number of files measured.
    pub files: u64,
    /// Resident pages.
    pub resident_pages: u64,
    /// Total pages.
    pub total_pages: u64,
    /// Resident share in percent.
    pub percent: f64,
    /// Pages read back into the page cache before the sample (`top-up`), which the
    /// counts above include.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub topped_up_pages: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ResidencySample {
    /// A sample of `r` taken now, after `action`.
    pub fn now(action: &str, r: Residency) -> Self {
        Self {
            unix_time_s: crate::util::unix_now(),
            action: action.to_string(),
            files: r.files,
            resident_pages: r.resident_pages,
            total_pages: r.total_pages,
            percent: r.percent(),
            topped_up_pages: 0,
        }
    }

    /// Append this sample as one JSON line to `path`.
    pub fn append_to(&self, path: &Path) -> Result<()> {
        crate::util::append_json_line(path, self)
    }

    /// Read every sample of a `--record` file (missing file: none).
    pub fn read_all(path: &Path) -> Result<Vec<ResidencySample>> {
        crate::util::read_json_lines(path)
    }
}

/// Every regular file under `path` (or `path` itself if it is a file), sorted. Like
/// `find -H`: a symlink given as `path` is followed, symlinks below it are not.
pub fn walk_files(path: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(path)
        .follow_root_links(true)
        .follow_links(false)
    {
        let entry = entry.map_err(|e| walk_error(e, path))?;
        if entry.file_type().is_file() {
            out.push(entry.into_path());
        }
    }
    out.sort();
    Ok(out)
}

/// `path: reason`, naming the entry that failed (walkdir's own message repeats the path).
fn walk_error(e: walkdir::Error, root: &Path) -> anyhow::Error {
    let path = e.path().unwrap_or(root).display().to_string();
    match e.into_io_error() {
        Some(io) => anyhow::Error::new(io).context(path),
        // Loops are only found when following links, which this walk does not.
        None => anyhow::anyhow!("{path}: filesystem loop"),
    }
}

/// All regular files under each of `paths`.
pub fn walk_all(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        out.extend(walk_files(p)?);
    }
    Ok(out)
}

pub fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// Residency of one file.
pub fn file_residency(path: &Path) -> Result<Residency> {
    Ok(file_residency_topped(path, None)?.0)
}

/// Residency of one file, and the pages read back into the page cache because they
/// were not resident, when given a buffer to read them with (see [`top_up`]; it is
/// allocated at the first page missing, so a resident file costs no allocation).
fn file_residency_topped(path: &Path, buf: Option<&mut Vec<u8>>) -> Result<(Residency, u64)> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let len = file.metadata()?.len();
    let page = page_size();
    let total_pages = len.div_ceil(page);
    let mut resident = 0u64;
    let mut read_back = 0u64;
    let mut buf = buf;
    // Map in windows so that the mincore vector (one byte per page) stays small even
    // for files larger than memory.
    const WINDOW: u64 = 1 << 30;
    let mut off = 0u64;
    let mut vec = Vec::new();
    while off < len {
        let n = (len - off).min(WINDOW);
        vec.resize(n.div_ceil(page) as usize, 0u8);
        mincore_window(&file, path, off, n as usize, &mut vec)?;
        resident += vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
        if let Some(buf) = buf.as_deref_mut() {
            read_back += read_missing(&file, path, off, &vec, buf)?;
        }
        off += n;
    }
    let r = Residency {
        files: 1,
        resident_pages: resident,
        total_pages,
    };
    Ok((r, read_back))
}

/// Read the pages of `file` from `off` that `vec` (mincore's answer for them) says
/// are not resident, a run of them at a time; the number of pages read.
fn read_missing(file: &File, path: &Path, off: u64, vec: &[u8], buf: &mut Vec<u8>) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let page = page_size();
    let mut read = 0u64;
    let mut i = 0;
    while i < vec.len() {
        if vec[i] & 1 == 1 {
            i += 1;
            continue;
        }
        let run = vec[i..].iter().take_while(|&&b| b & 1 == 0).count();
        buf.resize(1 << 20, 0);
        let (mut at, end) = (off + i as u64 * page, off + (i + run) as u64 * page);
        while at < end {
            let want = buf.len().min((end - at) as usize);
            match file.read_at(&mut buf[..want], at) {
                Ok(0) => break, // the file shrank: nothing more to read
                Ok(n) => at += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            }
        }
        read += run as u64;
        i += run;
    }
    Ok(read)
}

/// Read back into the page cache whatever of `files` is not resident: a warm run's
/// data on a machine whose kernel pages out idle memory on its own (DAMON's
/// `pageout`, see [`crate::machine::ProactiveReclaim`]), where a few per cent of a
/// tree of small files gone cold slowed a warm run by 40 %. The residency now (the
/// pages read back counted resident), and the pages read back.
pub fn top_up(files: &[PathBuf]) -> Result<(Residency, u64)> {
    let mut total = Residency::default();
    let mut read_back = 0;
    let mut buf = Vec::new();
    for f in files {
        let (r, n) = file_residency_topped(f, Some(&mut buf))?;
        total.add(Residency {
            resident_pages: (r.resident_pages + n).min(r.total_pages),
            ..r
        });
        read_back += n;
    }
    Ok((total, read_back))
}

/// Residency of every file in `files`.
pub fn residency(files: &[PathBuf]) -> Result<Residency> {
    let mut total = Residency::default();
    for f in files {
        total.add(file_residency(f)?);
    }
    Ok(total)
}

/// `mincore(2)` over `len` bytes of `file` (at `path`) from the page-aligned offset
/// `off`: one byte per page into `vec`, which holds `len.div_ceil(page_size)` bytes.
fn mincore_window(file: &File, path: &Path, off: u64, len: usize, vec: &mut [u8]) -> Result<()> {
    hash_core::mapped::resident(file, off, len, vec)
        .with_context(|| format!("mincore {}", path.display()))
}

fn fadvise_dontneed(file: &File, path: &Path) -> Result<()> {
    rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(std::io::Error::from)
        .with_context(|| format!("posix_fadvise {}", path.display()))
}

/// Evict `files` from the page cache and return their residency afterwards.
pub fn evict(files: &[PathBuf], method: EvictMethod) -> Result<Residency> {
    match method {
        EvictMethod::Fadvise => {
            for f in files {
                let file = File::open(f).with_context(|| format!("opening {}", f.display()))?;
                fadvise_dontneed(&file, f)?;
            }
            // Pages still resident are most likely dirty (freshly written): write them
            // back, then drop them. Only those files pay for the flush.
            for f in files {
                if file_residency(f)?.resident_pages > 0 {
                    let file = File::open(f)?;
                    file.sync_data()
                        .with_context(|| format!("fdatasync {}", f.display()))?;
                    fadvise_dontneed(&file, f)?;
                }
            }
        }
        EvictMethod::DropCaches => drop_caches()?,
    }
    residency(files)
}

/// `sync`, then drop page cache, dentries and inodes (root only).
pub fn drop_caches() -> Result<()> {
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .context("writing /proc/sys/vm/drop_caches (needs root; use --evict fadvise otherwise)")
}

/// Read every file once (into a reused buffer) so that it is in the page cache, and
/// return the residency afterwards.
///
/// Read as the hashers read a large cold file (sequential hint, a first read of one
/// byte, then 256 KiB at a time; on small files the hint and the first byte change
/// nothing), because how a file enters the page cache sets its folio sizes, and those
/// move warm runs. The small first read is what lets readahead raise
/// the folio order as it goes: `shards` read 1 MiB or 256 KiB at a time from the start
/// ended up in folios of 4 to 256 KiB, read this way 75 % in folios of 1 and 2 MiB, as
/// after a hasher's own cold run; `hash-threads` had taken 7 % longer on it in the
/// first state (AMD EPYC family 25 model 17).
pub fn warm(files: &[PathBuf]) -> Result<Residency> {
    use rustix::fs::{fadvise, Advice};
    let mut buf = vec![0u8; 256 * 1024];
    for f in files {
        let mut file = File::open(f).with_context(|| format!("opening {}", f.display()))?;
        // Advice is a hint: a file system that refuses it is read all the same.
        let _ = fadvise(&file, 0, None, Advice::Sequential);
        std::os::unix::fs::FileExt::read_at(&file, &mut buf[..1], 0)
            .with_context(|| format!("reading {}", f.display()))?;
        while file
            .read(&mut buf)
            .with_context(|| format!("reading {}", f.display()))?
            > 0
        {}
    }
    residency(files)
}

/// What [`fs_check`] found out about a directory's filesystem.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FsCheck {
    /// `statfs` f_type, in hex.
    pub magic: String,
    /// Whether it is a memory filesystem (tmpfs/ramfs).
    pub memory_fs: bool,
    /// With a probe: residency (percent) of a freshly written, synced and evicted file.
    pub probe_resident_percent: Option<f64>,
}

/// Check that data under `dir` can be evicted: refuse tmpfs/ramfs, and with `probe`
/// write a 4 MiB scratch file there, evict it, and require that it really left.
pub fn fs_check(dir: &Path, probe: bool) -> Result<FsCheck> {
    let st = rustix::fs::statfs(dir)
        .map_err(std::io::Error::from)
        .with_context(|| format!("statfs {}", dir.display()))?;
    #[allow(clippy::unnecessary_cast)] // f_type's type differs between targets
    let magic = st.f_type as i64;
    let memory_fs = magic == TMPFS_MAGIC || magic == RAMFS_MAGIC;
    let mut out = FsCheck {
        magic: format!("{magic:#x}"),
        memory_fs,
        probe_resident_percent: None,
    };
    if memory_fs {
        bail!(
            "{} is on tmpfs/ramfs: eviction is a no-op there, so a \"cold\" run would be warm. \
             Put the datasets on a disk-backed filesystem (--data-dir) or run warm only (--warm-only).",
            dir.display()
        );
    }
    if probe {
        let path = dir.join(format!(".hash-bench-probe-{}", std::process::id()));
        let result = (|| -> Result<f64> {
            let mut f = File::create(&path)?;
            let chunk = vec![0x5au8; 1 << 20];
            for _ in 0..4 {
                f.write_all(&chunk)?;
            }
            f.sync_all()?;
            drop(f);
            let files = [path.clone()];
            Ok(evict(&files, EvictMethod::Fadvise)?.percent())
        })();
        let _ = std::fs::remove_file(&path);
        let pct = result.with_context(|| format!("probing eviction in {}", dir.display()))?;
        out.probe_resident_percent = Some(pct);
        if pct > 5.0 {
            bail!(
                "{}: a written, synced and evicted probe file is still {pct:.0} % resident; \
                 this filesystem does not support eviction (overlay on tmpfs?). \
                 Use --data-dir on a disk, or --warm-only.",
                dir.display()
            );
        }
    }
    Ok(out)
}
