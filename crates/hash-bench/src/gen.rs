//! Dataset generation: parallel, streaming, bounded in memory, deterministic and
//! idempotent.
//!
//! - **Parallel and deterministic**: work is split into chunks of at most
//!   [`GenOptions::chunk`] bytes; each chunk seeks its file's ChaCha8 stream to its own
//!   offset (`set_word_pos`) and is written with `pwrite`, so any thread count and any
//!   chunk size produce the same bytes (tested).
//! - **Streaming, bounded memory**: each worker fills one 1 MiB buffer at a time.
//! - **Idempotent**: a marker `ROOT/.NAME.hashrace.json` (outside the dataset, so the
//!   hashers never see it) records the spec hash and whether generation completed. A
//!   complete dataset with the right files and sizes is reused as is; an incomplete one
//!   keeps its files of the right size, regenerates the rest and deletes strays; a
//!   dataset made from another spec is wiped. Files are written as `*.part` and renamed
//!   when complete, so an interrupted run leaves no short file under a final name.
//! - **Checked**: after generating, every file is read back and the manifest digest is
//!   compared with the spec's committed one.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context, Result};
use rand_chacha::rand_core::RngCore;
use serde::{Deserialize, Serialize};

use crate::manifest::manifest;
use crate::progress::Progress;
use crate::spec::{content_rng, totals, PlannedFile, Spec, GENERATOR_VERSION};
use crate::util::parallel_for;
use hash_core::units;

/// Knobs of [`generate`].
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Worker threads.
    pub threads: usize,
    /// Largest unit of work in bytes (a multiple of 64, the ChaCha block size).
    pub chunk: u64,
    /// Print progress on stderr.
    pub progress: bool,
    /// Regenerate everything even if the dataset looks complete.
    pub force: bool,
}

impl Default for GenOptions {
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            chunk: 64 << 20,
            progress: true,
            force: false,
        }
    }
}

/// What [`generate`] did.
#[derive(Debug, Clone, Serialize)]
pub struct GenReport {
    /// Dataset name.
    pub name: String,
    /// Files in the dataset.
    pub files: u64,
    /// Bytes in the dataset.
    pub bytes: u64,
    /// Files written by this call.
    pub generated_files: u64,
    /// Bytes written by this call.
    pub generated_bytes: u64,
    /// Manifest digest (from this call, or recorded by the call that completed it).
    pub manifest_sha256: String,
    /// Whether it equals the spec's committed digest (`None`: no digest committed).
    pub matches_expected: Option<bool>,
}

/// The completion marker kept beside each dataset directory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Marker {
    /// Generator version that wrote the data.
    pub generator: String,
    /// [`Spec::spec_hash`] of the spec the data was made from.
    pub spec_hash: String,
    /// Whether generation finished (files written, synced and hashed).
    pub complete: bool,
    /// Number of files.
    pub files: u64,
    /// Total bytes.
    pub bytes: u64,
    /// Manifest digest measured when it completed.
    pub manifest_sha256: Option<String>,
}

/// Path of the marker of dataset `name` under `root`.
pub fn marker_path(root: &Path, name: &str) -> PathBuf {
    root.join(format!(".{name}.hashrace.json"))
}

/// Read the marker, if there is a readable one.
pub fn read_marker(root: &Path, name: &str) -> Option<Marker> {
    let text = std::fs::read_to_string(marker_path(root, name)).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_marker(root: &Path, name: &str, m: &Marker) -> Result<()> {
    let path = marker_path(root, name);
    let tmp = path.with_extension("json.part");
    let mut text = serde_json::to_string_pretty(m)?;
    text.push('\n');
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

/// Fill `buf` with the ChaCha8 bytes of file `f` starting at byte `offset` (a multiple
/// of 64). The buffer length must be a multiple of 4 unless it ends the file: the RNG
/// hands out whole 32-bit words and drops the rest of a partly used one.
fn fill_at(seed: u64, f: &PlannedFile, offset: u64, buf: &mut [u8]) {
    debug_assert_eq!(offset % 64, 0);
    let mut rng = content_rng(seed, f.index);
    rng.set_word_pos(u128::from(offset / 4));
    rng.fill_bytes(buf);
}

/// One unit of generation work: bytes `[offset, offset+len)` of file `file`.
struct Task {
    file: usize,
    offset: u64,
    len: u64,
}

fn part_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

/// Write `files` (all of them, each from scratch) under `dir`.
fn write_files(
    seed: u64,
    dir: &Path,
    files: &[&PlannedFile],
    opts: &GenOptions,
    label: &str,
) -> Result<()> {
    let chunk = (opts.chunk.max(64) / 64) * 64;
    let mut tasks = Vec::new();
    let remaining: Vec<AtomicU64> = files
        .iter()
        .map(|f| AtomicU64::new(f.size.div_ceil(chunk).max(1)))
        .collect();
    // Each directory once (a tree of a million files has a thousand directories).
    let parents: std::collections::BTreeSet<&str> = files
        .iter()
        .map(|f| f.rel.rsplit_once('/').map_or("", |(d, _)| d))
        .collect();
    for p in parents {
        let parent = dir.join(p);
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    for (i, f) in files.iter().enumerate() {
        // Create (and truncate) the part file of a file written in several chunks up
        // front, so its chunk writers only open it; a one-chunk file is created by its
        // task, in parallel.
        if f.size > chunk {
            let path = dir.join(&f.rel);
            File::create(part_path(&path))
                .with_context(|| format!("creating {}", path.display()))?;
        }
        let mut off = 0;
        loop {
            let len = (f.size - off).min(chunk);
            tasks.push(Task {
                file: i,
                offset: off,
                len,
            });
            off += len;
            if off >= f.size {
                break;
            }
        }
    }
    // Big chunks first: the tail of the run is then made of small tasks that balance.
    tasks.sort_by_key(|t| std::cmp::Reverse(t.len));
    let total: u64 = files.iter().map(|f| f.size).sum();
    let progress = Progress::new(
        format!("gen {label}"),
        files.len() as u64,
        total,
        opts.progress,
    );
    parallel_for(tasks.len(), opts.threads, &progress, |t, buf| {
        let task = &tasks[t];
        let f = files[task.file];
        let final_path = dir.join(&f.rel);
        if f.size == 0 {
            // Complete as soon as it exists: no part file, no rename.
            File::create(&final_path)
                .with_context(|| format!("creating {}", final_path.display()))?;
            progress.file_done();
            return Ok(());
        }
        let part = part_path(&final_path);
        let out = OpenOptions::new()
            .write(true)
            .create(f.size <= chunk)
            .truncate(f.size <= chunk)
            .open(&part)
            .with_context(|| format!("opening {}", part.display()))?;
        let mut done = 0;
        while done < task.len {
            let n = (task.len - done).min(buf.len() as u64) as usize;
            fill_at(seed, f, task.offset + done, &mut buf[..n]);
            out.write_all_at(&buf[..n], task.offset + done)
                .with_context(|| format!("writing {}", part.display()))?;
            done += n as u64;
            progress.add(n as u64);
        }
        drop(out);
        // The last chunk of a file to finish makes it complete.
        if remaining[task.file].fetch_sub(1, Ordering::AcqRel) == 1 {
            std::fs::rename(&part, &final_path)
                .with_context(|| format!("renaming {}", part.display()))?;
            progress.file_done();
        }
        Ok(())
    })?;
    Ok(())
}

/// Flush everything written on `dir`'s filesystem, so that the pages are clean and
/// `POSIX_FADV_DONTNEED` can drop them (one `syncfs` instead of a flush per file).
fn syncfs(dir: &Path) -> Result<()> {
    let d = File::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    rustix::fs::syncfs(&d)
        .map_err(std::io::Error::from)
        .with_context(|| format!("syncfs {}", dir.display()))
}

/// Walk `dir` and return every entry that is not one of `planned` (by relative path),
/// plus the sizes of the regular files that are.
fn survey(
    dir: &Path,
    planned: &BTreeMap<&str, u64>,
) -> Result<(Vec<PathBuf>, BTreeMap<String, u64>)> {
    let mut strays = Vec::new();
    let mut sizes = BTreeMap::new();
    if !dir.exists() {
        return Ok((strays, sizes));
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let entry = entry?;
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .expect("under dir")
                .to_string_lossy()
                .into_owned();
            let ft = entry.file_type()?;
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file() && planned.contains_key(rel.as_str()) {
                sizes.insert(rel, entry.metadata()?.len());
            } else {
                strays.push(path);
            }
        }
    }
    Ok((strays, sizes))
}

/// Make `root/<spec.name>` hold exactly the spec's files, reusing what is already right.
pub fn generate(spec: &Spec, root: &Path, opts: &GenOptions) -> Result<GenReport> {
    let name = &spec.name;
    let dir = root.join(name);
    let files = spec.files();
    let t = totals(&files);
    let spec_hash = spec.spec_hash();
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;

    let marker = read_marker(root, name);
    let ours = marker
        .as_ref()
        .is_some_and(|m| m.spec_hash == spec_hash && m.generator == GENERATOR_VERSION);
    clear_unless_ours(root, name, marker.is_some(), ours, opts.force)?;

    let planned: BTreeMap<&str, u64> = files.iter().map(|f| (f.rel.as_str(), f.size)).collect();
    let (strays, sizes) = survey(&dir, &planned)?;
    let missing: Vec<&PlannedFile> = files
        .iter()
        .filter(|f| sizes.get(&f.rel) != Some(&f.size))
        .collect();
    let complete = marker.as_ref().is_some_and(|m| m.complete) && ours && !opts.force;
    if complete && missing.is_empty() && strays.is_empty() {
        let digest = marker.and_then(|m| m.manifest_sha256).unwrap_or_default();
        return Ok(GenReport {
            name: name.clone(),
            files: t.files,
            bytes: t.bytes,
            generated_files: 0,
            generated_bytes: 0,
            matches_expected: spec.expected_manifest_sha256.as_ref().map(|e| *e == digest),
            manifest_sha256: digest,
        });
    }

    let mut m = Marker {
        generator: GENERATOR_VERSION.to_string(),
        spec_hash,
        complete: false,
        files: t.files,
        bytes: t.bytes,
        manifest_sha256: None,
    };
    write_marker(root, name, &m)?;
    for s in &strays {
        if s.is_dir() && !s.is_symlink() {
            std::fs::remove_dir_all(s)
        } else {
            std::fs::remove_file(s)
        }
        .with_context(|| format!("removing stray {}", s.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let report = write_checked(spec, root, (&files, &missing), opts)?;
    m.complete = true;
    m.manifest_sha256 = Some(report.manifest_sha256.clone());
    write_marker(root, name, &m)?;
    Ok(report)
}

/// Remove `root/name` when it holds another spec's dataset (`ours` false,
/// a marker found), or when `force`; refuse to touch a non-empty directory
/// without a marker, which hash-bench did not make.
fn clear_unless_ours(root: &Path, name: &str, marked: bool, ours: bool, force: bool) -> Result<()> {
    let dir = root.join(name);
    if dir.exists() && !ours {
        if !marked && std::fs::read_dir(&dir)?.next().is_some() {
            bail!(
                "{} exists but has no hash-bench marker ({}); not touching it. \
                 Remove it or choose another data directory.",
                dir.display(),
                marker_path(root, name).display()
            );
        }
        eprintln!("  {name}: made from another spec; regenerating");
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    if force && dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(())
}

/// Write the `missing` of the spec's `files`, flush them, and check the whole
/// dataset's manifest against the spec's: a mismatch after a repair
/// regenerates every file once (kept files may be damaged in ways a size
/// check cannot see); a mismatch then is an error.
fn write_checked(
    spec: &Spec,
    root: &Path,
    (files, missing): (&[PlannedFile], &[&PlannedFile]),
    opts: &GenOptions,
) -> Result<GenReport> {
    let name = &spec.name;
    let dir = root.join(name);
    let gen_bytes: u64 = missing.iter().map(|f| f.size).sum();
    if !missing.is_empty() {
        if missing.len() < files.len() {
            eprintln!(
                "  {name}: repairing {} of {} files ({})",
                missing.len(),
                files.len(),
                units::bytes(gen_bytes)
            );
        }
        write_files(spec.seed, &dir, missing, opts, name)?;
    }
    syncfs(&dir)?;
    let mut man = manifest(root, name, opts.threads, opts.progress)?;
    let (mut generated_files, mut generated_bytes) = (missing.len() as u64, gen_bytes);
    let expected = spec.expected_manifest_sha256.as_deref();
    if expected.is_some_and(|e| e != man.digest) && missing.len() < files.len() {
        eprintln!("  {name}: digest mismatch after repair; regenerating every file");
        let all: Vec<&PlannedFile> = files.iter().collect();
        write_files(spec.seed, &dir, &all, opts, name)?;
        syncfs(&dir)?;
        man = manifest(root, name, opts.threads, opts.progress)?;
        let t = totals(files);
        (generated_files, generated_bytes) = (t.files, t.bytes);
    }
    let matches = expected.map(|e| e == man.digest);
    if matches == Some(false) {
        bail!(
            "{name}: generated data has manifest digest {} but the spec commits {}: \
             the generator or the spec changed; the same spec must give the same bytes everywhere",
            man.digest,
            expected.unwrap_or_default()
        );
    }
    Ok(GenReport {
        name: name.clone(),
        files: man.files,
        bytes: man.bytes,
        generated_files,
        generated_bytes,
        manifest_sha256: man.digest,
        matches_expected: matches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Group;

    fn small_spec() -> Spec {
        Spec {
            name: "unit".into(),
            description: String::new(),
            seed: 42,
            groups: vec![
                Group {
                    dir: String::new(),
                    stem: "big-".into(),
                    ext: ".bin".into(),
                    count: 2,
                    dirs: 1,
                    size: 300_001,
                    size_max: Some(400_003),
                },
                Group {
                    dir: "s".into(),
                    stem: "f".into(),
                    ext: String::new(),
                    count: 30,
                    dirs: 3,
                    size: 0,
                    size_max: Some(5000),
                },
            ],
            expected_manifest_sha256: None,
            expected_pysum_manifest_sha256: None,
        }
    }

    fn quiet(threads: usize, chunk: u64) -> GenOptions {
        GenOptions {
            threads,
            chunk,
            progress: false,
            force: false,
        }
    }

    #[test]
    fn chunked_fill_equals_one_stream() {
        let f = PlannedFile {
            index: 3,
            rel: "x".into(),
            size: 10_000,
        };
        let mut whole = vec![0u8; 10_000];
        fill_at(9, &f, 0, &mut whole);
        let mut pieces = vec![0u8; 10_000];
        for (i, c) in pieces.chunks_mut(1024).enumerate() {
            fill_at(9, &f, i as u64 * 1024, c);
        }
        assert_eq!(whole, pieces);
        // Another stream gives other bytes.
        let g = PlannedFile { index: 4, ..f };
        let mut other = vec![0u8; 64];
        fill_at(9, &g, 0, &mut other);
        assert_ne!(&whole[..64], &other[..]);
    }

    #[test]
    fn same_bytes_for_any_threads_and_chunks_then_reuse_and_repair() {
        let spec = small_spec();
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let ra = generate(&spec, a.path(), &quiet(1, 1 << 20)).unwrap();
        let rb = generate(&spec, b.path(), &quiet(4, 64 * 3)).unwrap();
        assert_eq!(ra.manifest_sha256, rb.manifest_sha256);
        assert_eq!(ra.generated_files, 32);

        // Complete: reused without writing.
        let again = generate(&spec, a.path(), &quiet(2, 1 << 20)).unwrap();
        assert_eq!(again.generated_files, 0);
        assert_eq!(again.manifest_sha256, ra.manifest_sha256);

        // Damage it: delete one file, truncate one, add a stray and a leftover part file.
        let dir = a.path().join("unit");
        std::fs::remove_file(dir.join("s/d1/f01")).unwrap();
        let f = OpenOptions::new()
            .write(true)
            .open(dir.join("big-0.bin"))
            .unwrap();
        f.set_len(10).unwrap();
        std::fs::write(dir.join("s/stray"), b"x").unwrap();
        std::fs::write(dir.join("big-1.bin.part"), b"x").unwrap();
        let repaired = generate(&spec, a.path(), &quiet(2, 1 << 20)).unwrap();
        assert_eq!(repaired.generated_files, 2);
        assert_eq!(repaired.manifest_sha256, ra.manifest_sha256);
        assert!(!dir.join("s/stray").exists());
        assert!(!dir.join("big-1.bin.part").exists());

        // An interrupted run (marker says incomplete) keeps right-sized files.
        let mut m = read_marker(a.path(), "unit").unwrap();
        m.complete = false;
        write_marker(a.path(), "unit", &m).unwrap();
        let resumed = generate(&spec, a.path(), &quiet(2, 1 << 20)).unwrap();
        assert_eq!(resumed.generated_files, 0);
        assert_eq!(resumed.manifest_sha256, ra.manifest_sha256);

        // Same-size corruption is caught by the digest, given a committed digest.
        let mut pinned = spec.clone();
        pinned.expected_manifest_sha256 = Some(ra.manifest_sha256.clone());
        let mut m = read_marker(a.path(), "unit").unwrap();
        m.complete = false;
        write_marker(a.path(), "unit", &m).unwrap();
        std::fs::write(
            dir.join("s/d0/f00"),
            vec![0u8; std::fs::metadata(dir.join("s/d0/f00")).unwrap().len() as usize],
        )
        .unwrap();
        let fixed = generate(&pinned, a.path(), &quiet(2, 1 << 20)).unwrap();
        assert_eq!(fixed.matches_expected, Some(true));
        assert_eq!(fixed.generated_files, 32);
    }

    #[test]
    fn refuses_foreign_directories_and_rejects_wrong_digests() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("unit")).unwrap();
        std::fs::write(root.path().join("unit/precious"), b"mine").unwrap();
        let err = generate(&small_spec(), root.path(), &quiet(1, 1 << 20)).unwrap_err();
        assert!(format!("{err:#}").contains("no hash-bench marker"));
        assert!(root.path().join("unit/precious").exists());

        let other = tempfile::tempdir().unwrap();
        let mut spec = small_spec();
        spec.expected_manifest_sha256 = Some("0".repeat(64));
        let err = generate(&spec, other.path(), &quiet(1, 1 << 20)).unwrap_err();
        assert!(format!("{err:#}").contains("the spec commits"));
    }
}
