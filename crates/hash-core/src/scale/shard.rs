//! `--shard K/N`: hash one of N deterministic parts of the plan, for cluster engines.
//!
//! Slurm job arrays, Kubernetes Indexed Jobs and GNU `parallel` already spread
//! work over hosts; hashrace only has to make every task pick a disjoint part of
//! the same plan and write what [`crate::merge`] needs to rebuild the
//! single-machine output. So a shard is a pure function of (plan, K, N):
//!
//! - **Partition.** Files are taken largest first (ties by path bytes, then plan
//!   position, so it never depends on walk order) and each goes to the shard
//!   with the fewest bytes so far (ties: fewest files, then lowest K). Greedy
//!   largest-first keeps the byte loads within one file's size of each other,
//!   and any shard can be rerun alone and gives the same lines.
//! - **Identity.** The plan id is the SHA-256 of every planned file's path,
//!   size, root offset and open mode, in plan order. Two tasks that walked a
//!   tree that changed in between get different ids, and the merge refuses to
//!   combine them instead of silently missing or doubling files.
//! - **Output.** The shard's ordinary lines (GNU or `--tag`, `-z` honoured), then
//!   `#` comment lines, which `sha256sum -c` skips:
//!
//! ```text
//! # hashrace-shard v2 K/N plan=<64 hex> files=<files in the plan> style=gnu|tag
//! <the shard's lines, in plan order>
//! # f <plan index> <size> <root offset>      one per line above, same order
//! # hashrace-shard-end K/N hashed=<lines> assigned=<files> errors=<errors> sha256=<64 hex>
//! ```
//!
//!   The end line is written last, so a task killed mid-run leaves a shard the
//!   merge recognises as incomplete. It proves the rest: `assigned` is how
//!   many plan files the shard was given (the merge checks that the shards'
//!   add up to the plan's, and that every one not hashed was reported as an
//!   error), and `sha256` is the [`entries_digest`] of what its lines say
//!   (plan index, size, root offset, path, digest of each file), so a line
//!   changed, swapped or deleted after the run is refused by name. A shard's own tree digest would describe
//!   only part of the tree, so `--tree` prints none; the merge computes the
//!   whole tree's digest from the `# f` lines.
//! - **Walk errors** are the same in every shard (they all walk the same tree),
//!   so only shard 0 reports them, once, as the single machine would.
//!
//! `--shard auto` and `auto/N` read K (and N) from the engine's environment; see
//! [`ShardArg::resolve`].

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use clap::Args;
use sha2::{Digest, Sha256};

use crate::escape::path_bytes;
use crate::hasher::hex;
use crate::strategy::Job;

/// First words of a shard's header line.
pub const HEADER: &str = "# hashrace-shard v2 ";
/// The header of the first format, which had no proof of completeness.
pub const HEADER_V1: &str = "# hashrace-shard v1 ";
/// First words of a shard's end line.
pub const END: &str = "# hashrace-shard-end ";
/// First words of a per-file line.
pub const FILE: &str = "# f ";

/// The scale-out options (file lists, shards, merge), flattened into
/// [`crate::cli::CommonArgs`] so every binary has them.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Print the file list instead of hashing (for --files-from).
    ///
    /// Walk the PATHs once and print the file list (sizes, exact path bytes; NUL-terminated
    /// with -z) instead of hashing; hash it later with --files-from LIST [-0].
    #[arg(help_heading = "Scale-out", long, conflicts_with_all = ["check", "json", "json_lines", "tag", "tree", "shard", "merge"])]
    pub list: bool,

    /// Hash only shard K of N (from 0), balanced by bytes.
    ///
    /// Hash only shard K of N (K from 0), balanced by bytes; 'auto' takes K and N from a Slurm
    /// array, 'auto/N' takes K from Kubernetes, a Slurm array or GNU parallel.
    #[arg(help_heading = "Scale-out", long, value_name = "K/N", conflicts_with_all = ["check", "json", "json_lines", "merge"])]
    pub shard: Option<ShardArg>,

    /// Combine shard outputs (the PATHs) into the single-run output.
    #[arg(help_heading = "Scale-out", long, conflicts_with_all = ["check", "json", "json_lines", "files_from"])]
    pub merge: bool,
}

/// Shard `k` of `n`, `k < n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub k: usize,
    /// How many shards.
    pub n: usize,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// The `--shard` value as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    /// `K/N`.
    Fixed(Shard),
    /// `auto`: K and N from the environment.
    Auto,
    /// `auto/N`: K from the environment.
    AutoOf(usize),
}

/// Largest N accepted: more shards than this is a typo, not a cluster.
const MAX_SHARDS: usize = 1 << 20;

fn parse_n(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(format!(
            "N must be a whole number from 1 to {MAX_SHARDS}, not '{s}'"
        )),
    }
}

impl FromStr for ShardArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(ShardArg::Auto);
        }
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("expected K/N, auto or auto/N, not '{s}'"))?;
        let n = parse_n(n)?;
        if k == "auto" {
            return Ok(ShardArg::AutoOf(n));
        }
        let k: usize = k
            .parse()
            .map_err(|_| format!("K must be a whole number, not '{k}'"))?;
        check_k(k, n).map(ShardArg::Fixed)
    }
}

fn check_k(k: usize, n: usize) -> Result<Shard, String> {
    if k < n {
        Ok(Shard { k, n })
    } else {
        Err(format!(
            "shard {k} does not exist in {n} shards (K counts from 0 to {})",
            n - 1
        ))
    }
}

impl ShardArg {
    /// The shard, reading `auto` from `env` (a variable's value by name):
    ///
    /// - Kubernetes Indexed Job (`auto/N` only): K = `JOB_COMPLETION_INDEX`.
    /// - Slurm job array: K = (`SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN`) /
    ///   `SLURM_ARRAY_TASK_STEP` (step 1 when unset), N = `SLURM_ARRAY_TASK_COUNT`
    ///   (with `auto/N` it must agree with N).
    /// - GNU parallel: K = `PARALLEL_SEQ` − 1; it does not export the number of
    ///   jobs, so only `auto/N` works there.
    pub fn resolve(self, env: impl Fn(&str) -> Option<String>) -> Result<Shard, String> {
        let n_given = match self {
            ShardArg::Fixed(s) => return Ok(s),
            ShardArg::Auto => None,
            ShardArg::AutoOf(n) => Some(n),
        };
        let num = |name: &str| -> Result<Option<usize>, String> {
            match env(name) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{name}={v} is not a whole number")),
            }
        };
        if let Some(n) = n_given {
            if let Some(k) = num("JOB_COMPLETION_INDEX")? {
                return check_k(k, n).map_err(|e| format!("JOB_COMPLETION_INDEX: {e}"));
            }
        }
        if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
            let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let step = num("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
            let k = id
                .checked_sub(min)
                .ok_or("SLURM_ARRAY_TASK_ID is below SLURM_ARRAY_TASK_MIN")?
                / step;
            let count = num("SLURM_ARRAY_TASK_COUNT")?;
            let n = match (n_given, count) {
                (Some(n), Some(c)) if n != c => {
                    return Err(format!(
                        "--shard auto/{n}, but the Slurm array has {c} tasks \
                         (SLURM_ARRAY_TASK_COUNT); give the same number"
                    ))
                }
                (Some(n), _) => n,
                (None, Some(c)) => c,
                (None, None) => return Err("SLURM_ARRAY_TASK_COUNT is not set".into()),
            };
            return check_k(k, n).map_err(|e| format!("Slurm array task: {e}"));
        }
        if let Some(seq) = num("PARALLEL_SEQ")? {
            let Some(n) = n_given else {
                return Err(
                    "GNU parallel does not tell the number of jobs: use --shard auto/N".into(),
                );
            };
            let k = seq.checked_sub(1).ok_or("PARALLEL_SEQ is 0")?;
            return check_k(k, n).map_err(|e| format!("PARALLEL_SEQ: {e}"));
        }
        Err(match n_given {
            Some(_) => "none of JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID, PARALLEL_SEQ is set",
            None => "SLURM_ARRAY_TASK_ID is not set (not a Slurm array task; use auto/N or K/N)",
        }
        .into())
    }
}

/// The shard each job belongs to (see the module doc for the rule).
pub fn assign(jobs: &[Job], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        let (ja, jb) = (&jobs[a], &jobs[b]);
        jb.size
            .cmp(&ja.size)
            .then_with(|| path_bytes(&ja.path).cmp(path_bytes(&jb.path)))
            .then(a.cmp(&b))
    });
    // Min-heap of (bytes, files, shard): the least loaded shard on top.
    let mut loads: BinaryHeap<Reverse<(u64, usize, usize)>> =
        (0..n).map(|k| Reverse((0, 0, k))).collect();
    let mut shard_of = vec![0; jobs.len()];
    for i in order {
        let Reverse((bytes, files, k)) = loads.pop().expect("n >= 1");
        shard_of[i] = k;
        loads.push(Reverse((bytes + jobs[i].size, files + 1, k)));
    }
    shard_of
}

/// The plan id: SHA-256 over every job's path, size, root offset and open mode.
pub fn plan_id(jobs: &[Job]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"hashrace-plan-v1\0");
    for j in jobs {
        h.update(path_bytes(&j.path));
        h.update(format!("\0{}\0{}\0{}\0", j.size, j.rel, u8::from(j.follow)).as_bytes());
    }
    h.finalize().into()
}

/// A shard being hashed: which plan positions it holds and what they gave.
#[derive(Debug)]
pub struct ShardRun {
    /// Which shard.
    pub shard: Shard,
    /// Plan id in hex.
    pub plan: String,
    /// Files in the whole plan.
    pub total: usize,
    /// Plan index of each job of this shard, in plan order.
    pub index: Vec<usize>,
    /// Root offset of each job of this shard.
    pub rel: Vec<usize>,
    /// Bytes hashed and digest, per job of this shard, once hashed.
    pub hashed: Vec<Option<(u64, [u8; 32])>>,
}

/// One hashed file as a shard's end line vouches for it.
#[derive(Debug, Clone, Copy)]
pub struct Vouched<'a> {
    /// Position in the plan.
    pub index: usize,
    /// Bytes hashed.
    pub size: u64,
    /// Where the path below its root starts.
    pub rel: usize,
    /// The path as printed (raw bytes).
    pub path: &'a [u8],
    /// Its SHA-256.
    pub digest: &'a [u8; 32],
}

/// The SHA-256 of a shard's files, in its order: each as plan index, size
/// and root offset (8 bytes each, little-endian), the path's length (8
/// bytes) and bytes, and the digest. It covers what the lines say, not how
/// they are styled.
pub fn entries_digest<'a>(files: impl IntoIterator<Item = Vouched<'a>>) -> [u8; 32] {
    let mut h = Sha256::new();
    for f in files {
        for n in [f.index as u64, f.size, f.rel as u64, f.path.len() as u64] {
            h.update(n.to_le_bytes());
        }
        h.update(f.path);
        h.update(f.digest);
    }
    h.finalize().into()
}

impl ShardRun {
    /// Keep only `shard`'s jobs in `jobs` (in plan order), remembering their
    /// plan positions; `jobs` must be the whole, sorted plan.
    pub fn select(jobs: &mut Vec<Job>, shard: Shard) -> ShardRun {
        let plan = hex(&plan_id(jobs));
        let total = jobs.len();
        let shard_of = assign(jobs, shard.n);
        let mut index = Vec::new();
        let mut kept = Vec::new();
        for (i, job) in std::mem::take(jobs).into_iter().enumerate() {
            if shard_of[i] == shard.k {
                index.push(i);
                kept.push(job);
            }
        }
        *jobs = kept;
        ShardRun {
            shard,
            plan,
            total,
            rel: jobs.iter().map(|j| j.rel).collect(),
            hashed: vec![None; index.len()],
            index,
        }
    }

    /// Record that job `i` of this shard was hashed.
    pub fn hashed(&mut self, i: usize, d: &crate::FileDigest) {
        self.hashed[i] = Some((d.size, d.digest));
    }

    /// The header line.
    pub fn write_header(&self, out: &mut impl Write, tag: bool, zero: bool) -> io::Result<()> {
        let style = if tag { "tag" } else { "gnu" };
        write!(
            out,
            "{HEADER}{} plan={} files={} style={style}{}",
            self.shard,
            self.plan,
            self.total,
            end(zero)
        )?;
        out.flush()
    }

    /// The `# f` lines and the end line, for the shard's `jobs` (as kept by
    /// [`ShardRun::select`]); `errors` as the run reported them.
    pub fn write_trailer(
        &self,
        out: &mut impl Write,
        jobs: &[Job],
        errors: u64,
        zero: bool,
    ) -> io::Result<()> {
        let mut out = io::BufWriter::new(out);
        let mut vouched = Vec::new();
        for (i, hashed) in self.hashed.iter().enumerate() {
            let Some((size, digest)) = hashed else {
                continue;
            };
            let (index, rel) = (self.index[i], self.rel[i]);
            write!(out, "{FILE}{index} {size} {rel}{}", end(zero))?;
            let path = path_bytes(&jobs[i].path);
            vouched.push(Vouched {
                index,
                size: *size,
                rel,
                path,
                digest,
            });
        }
        write!(
            out,
            "{END}{} hashed={} assigned={} errors={errors} sha256={}{}",
            self.shard,
            vouched.len(),
            self.index.len(),
            hex(&entries_digest(vouched)),
            end(zero)
        )?;
        out.flush()
    }
}

fn end(zero: bool) -> &'static str {
    if zero {
        "\0"
    } else {
        "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::PathBuf;

    fn paths(jobs: &[Job]) -> Vec<PathBuf> {
        jobs.iter().map(|j| j.path.clone()).collect()
    }

    fn job(name: &str, size: u64) -> Job {
        Job::new(PathBuf::from(name), size, false)
    }

    #[test]
    fn parses_the_three_spellings_and_refuses_the_rest() {
        assert_eq!("2/4".parse(), Ok(ShardArg::Fixed(Shard { k: 2, n: 4 })));
        assert_eq!("auto".parse(), Ok(ShardArg::Auto));
        assert_eq!("auto/8".parse(), Ok(ShardArg::AutoOf(8)));
        for bad in [
            "4/4", "1/0", "x/2", "2", "auto/", "-1/3", "1/-3", "auto/0", "",
        ] {
            assert!(bad.parse::<ShardArg>().is_err(), "{bad}");
        }
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn auto_reads_slurm_kubernetes_and_parallel() {
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "7"),
            ("SLURM_ARRAY_TASK_MIN", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        let s = |k, n| Ok(Shard { k, n });
        assert_eq!(ShardArg::Auto.resolve(env(&slurm)), s(2, 4));
        assert_eq!(ShardArg::AutoOf(4).resolve(env(&slurm)), s(2, 4));
        assert!(ShardArg::AutoOf(3)
            .resolve(env(&slurm))
            .unwrap_err()
            .contains("4 tasks"));
        let stepped = [
            ("SLURM_ARRAY_TASK_ID", "6"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(ShardArg::Auto.resolve(env(&stepped)), s(3, 4));
        let k8s = [("JOB_COMPLETION_INDEX", "3"), ("SLURM_ARRAY_TASK_ID", "0")];
        assert_eq!(ShardArg::AutoOf(5).resolve(env(&k8s)), s(3, 5));
        assert!(ShardArg::AutoOf(3).resolve(env(&k8s)).is_err());
        let parallel = [("PARALLEL_SEQ", "1")];
        assert_eq!(ShardArg::AutoOf(2).resolve(env(&parallel)), s(0, 2));
        assert!(ShardArg::Auto
            .resolve(env(&parallel))
            .unwrap_err()
            .contains("auto/N"));
        assert!(ShardArg::AutoOf(2).resolve(env(&[])).is_err());
        assert!(ShardArg::Auto.resolve(env(&[])).is_err());
        assert!(ShardArg::AutoOf(2)
            .resolve(env(&[("PARALLEL_SEQ", "x")]))
            .is_err());
    }

    #[test]
    fn the_partition_is_complete_disjoint_and_balanced_by_bytes() {
        // An independent model: pseudo-random sizes, check invariants rather than
        // re-deriving the assignment.
        let mut x: u64 = 12345;
        let jobs: Vec<Job> = (0..500)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                job(&format!("f{i:04}"), (x >> 40) % 100_000)
            })
            .collect();
        let largest = jobs.iter().map(|j| j.size).max().unwrap();
        for n in [1, 2, 3, 7, 64] {
            let a = assign(&jobs, n);
            let mut bytes = vec![0u64; n];
            for (j, &k) in jobs.iter().zip(&a) {
                assert!(k < n);
                bytes[k] += j.size;
            }
            let (lo, hi) = (bytes.iter().min().unwrap(), bytes.iter().max().unwrap());
            assert!(hi - lo <= largest, "n={n}: {bytes:?}");
        }
    }

    #[test]
    fn the_partition_does_not_depend_on_input_order_only_on_paths() {
        let jobs = vec![
            job("b", 5),
            job("a", 5),
            job("c", 5),
            job("d", 0),
            job("e", 0),
            job("cc", 5),
        ];
        let by_name = |jobs: &[Job]| -> HashMap<PathBuf, usize> {
            paths(jobs).into_iter().zip(assign(jobs, 2)).collect()
        };
        let mut reversed = jobs.clone();
        reversed.reverse();
        assert_eq!(by_name(&jobs), by_name(&reversed));
        let m = by_name(&jobs);
        // Equal sizes go by path bytes: a, b, c alternate over the shards.
        assert_eq!(m[&PathBuf::from("a")], 0);
        assert_eq!(m[&PathBuf::from("b")], 1);
        assert_eq!(m[&PathBuf::from("c")], 0);
        // Equal bytes: empty files spread by count, not all onto one shard.
        assert_ne!(m[&PathBuf::from("d")], m[&PathBuf::from("e")]);
    }

    #[test]
    fn the_plan_id_covers_paths_sizes_and_roots() {
        let base = plan_id(&[job("a", 1), job("b", 2)]);
        assert_ne!(base, plan_id(&[job("a", 1), job("b", 3)]));
        assert_ne!(base, plan_id(&[job("a", 1), job("c", 2)]));
        assert_ne!(base, plan_id(&[job("a", 1)]));
        let mut moved = job("b", 2);
        moved.rel = 1;
        assert_ne!(base, plan_id(&[job("a", 1), moved]));
        assert_eq!(base, plan_id(&[job("a", 1), job("b", 2)]));
    }

    #[test]
    fn select_keeps_plan_order_and_positions() {
        let mut jobs = vec![job("a", 1), job("b", 9), job("c", 1), job("d", 1)];
        let run = ShardRun::select(&mut jobs, Shard { k: 1, n: 2 });
        // Shard 0 takes b (9 bytes); the 1-byte files a, c, d go to shard 1.
        assert_eq!(paths(&jobs), ["a", "c", "d"].map(PathBuf::from));
        assert_eq!(run.index, [0, 2, 3]);
        assert_eq!(run.total, 4);
        let mut out = Vec::new();
        let mut run = run;
        let d = |b: u8| crate::FileDigest {
            digest: [b; 32],
            size: 1,
            held: None,
        };
        run.hashed(0, &d(0xaa));
        run.hashed(2, &d(0xdd));
        run.write_trailer(&mut out, &jobs, 1, false).unwrap();
        // The vouched digest, by the layout the module doc gives: plan index,
        // size, root offset and path length as 8 little-endian bytes, the
        // path, the digest; "a" at plan index 0, "d" at 3.
        let mut layout = Vec::new();
        for (index, name, digest) in [(0u64, b"a", 0xaa), (3, b"d", 0xdd)] {
            for n in [index, 1, 0, 1] {
                layout.extend_from_slice(&n.to_le_bytes());
            }
            layout.extend_from_slice(name);
            layout.extend_from_slice(&[digest; 32]);
        }
        let sha = hex(&Sha256::digest(&layout));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "# f 0 1 0\n# f 3 1 0\n# hashrace-shard-end 1/2 hashed=2 assigned=3 errors=1 \
                 sha256={sha}\n"
            )
        );
    }
}
