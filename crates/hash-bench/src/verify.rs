//! Before anything is timed: every hashrace command of the plan (and every Python
//! reference command, which prints the same lines) must print, on each
//! dataset, byte-identical output, and its SHA-256 must equal the dataset's committed
//! manifest digest. A program that disagrees is not worth timing.
//!
//! The Python rows of the other kind of work (`pyhash.py --work pysum`, the byte sum mod
//! 2^32) print other lines: they must agree with each other and with the manifest this
//! harness computes itself in Rust ([`crate::manifest::Work::Pysum`]), and with the
//! spec's committed pysum digest where there is one.
//!
//! Each distinct command (one per program and job count) runs once in the data root,
//! exactly as hyperfine will run it. The outcome is recorded in
//! `<work>/verified/<dataset>.json` for the results file.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::manifest::{manifest_of, Work};
use crate::plan::Plan;
use crate::util::hex;

/// What verification established about one dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verified {
    /// Dataset name.
    pub dataset: String,
    /// SHA-256 of the (identical) output of every hashrace command.
    pub output_sha256: String,
    /// Lines of output (one per file).
    pub lines: u64,
    /// The committed digest it was compared with, if the spec has one.
    pub expected_manifest_sha256: Option<String>,
    /// The commands that were run.
    pub commands: Vec<String>,
    /// SHA-256 of the (identical) output of every pysum command, when the plan has
    /// some; equal to the harness's own pysum manifest digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pysum_output_sha256: Option<String>,
}

/// Path of a dataset's verification record.
pub fn record_path(work: &Path, dataset: &str) -> std::path::PathBuf {
    work.join("verified").join(format!("{dataset}.json"))
}

/// The distinct verified commands of `dataset` whose programs compute `work`.
fn commands<'p>(plan: &'p Plan, dataset: &str, work: Work) -> Vec<(&'p str, &'p [String])> {
    let mut out: Vec<(&str, &[String])> = Vec::new();
    for b in plan.benchmarks.iter().filter(|b| {
        b.dataset == dataset
            && plan.programs.iter().any(|p| {
                p.name == b.program
                    && crate::plan::verified(p)
                    && Work::from_name(&p.algorithm) == Some(work)
            })
    }) {
        if !out.iter().any(|(c, _)| *c == b.command) {
            out.push((&b.command, &b.argv));
        }
    }
    out
}

/// Run each command in the data root; all must succeed and print the same bytes, which
/// are returned.
fn agreeing_output(plan: &Plan, dataset: &str, commands: &[(&str, &[String])]) -> Result<Vec<u8>> {
    let mut outputs: Vec<(&str, Vec<u8>)> = Vec::new();
    for (cmd, argv) in commands {
        eprintln!("  verify {dataset}: {cmd}");
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir(&plan.data_root)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("running {cmd}"))?;
        if !out.status.success() {
            bail!(
                "{cmd} failed ({}) on {dataset}; refusing to time it",
                out.status
            );
        }
        outputs.push((cmd, out.stdout));
    }
    let (first_cmd, first) = outputs.swap_remove(0);
    for (cmd, out) in &outputs {
        if *out != first {
            bail!(
                "outputs differ on {dataset}; refusing to time programs that disagree:\n  \
                 {first_cmd}\n  {cmd}\n  {}",
                first_difference(&first, out)
            );
        }
    }
    Ok(first)
}

/// Where two outputs first differ, for the error message.
fn first_difference(first: &[u8], other: &[u8]) -> String {
    let a = String::from_utf8_lossy(first);
    let b = String::from_utf8_lossy(other);
    let (n, (la, lb)) = a
        .lines()
        .zip(b.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map(|(i, p)| (i + 1, p))
        .unwrap_or((
            a.lines().count().min(b.lines().count()) + 1,
            ("<end>", "<end>"),
        ));
    format!("first difference at line {n}:\n    {la}\n    {lb}")
}

/// Check the pysum commands of `dataset`, if any: they agree, and their output is the
/// harness's own pysum manifest (and the committed digest, where there is one).
fn verify_pysum(plan: &Plan, dataset: &str) -> Result<Option<String>> {
    let commands = commands(plan, dataset, Work::Pysum);
    if commands.is_empty() {
        return Ok(None);
    }
    let out = agreeing_output(plan, dataset, &commands)?;
    let digest = hex(&Sha256::digest(&out));
    // Read from where the data was generated: on a network location that is not the
    // mount the commands ran on, and the golden must not depend on the mount either.
    let root = Path::new(&plan.location.source_root);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let golden = manifest_of(root, dataset, Work::Pysum, threads, false)?;
    if golden.digest != digest {
        bail!(
            "the pysum programs agree on {dataset}, but not with hash-bench's own byte sums \
             (output {digest}, hash-bench {}): {}",
            golden.digest,
            first_difference(golden.text.as_bytes(), &out)
        );
    }
    let d = plan.dataset(dataset)?;
    if let Some(expected) = &d.spec.expected_pysum_manifest_sha256 {
        if *expected != digest {
            bail!(
                "{dataset}: the pysum manifest's SHA-256 is {digest}, not the committed {expected} \
                 (regenerate the data: hash-bench gen --force {dataset})"
            );
        }
    }
    Ok(Some(digest))
}

/// Run and compare every verified command of `dataset`; write the record on success.
pub fn verify(plan: &Plan, work: &Path, dataset: &str) -> Result<Verified> {
    let d = plan.dataset(dataset)?;
    let commands = commands(plan, dataset, Work::Sha256);
    if commands.is_empty() {
        bail!("no hashrace command runs on {dataset}");
    }
    if plan.location.is_network() {
        crate::net::serve(plan, work, dataset)?;
    }
    let first = agreeing_output(plan, dataset, &commands)?;
    let digest = hex(&Sha256::digest(&first));
    let lines = first.iter().filter(|&&c| c == b'\n').count() as u64;
    if let Some(expected) = &d.spec.expected_manifest_sha256 {
        if *expected != digest {
            bail!(
                "every hashrace program agrees on {dataset}, but the output's SHA-256 is {digest}, \
                 not the committed {expected}. Either the data on disk is damaged \
                 (regenerate: hash-bench gen --force {dataset}) or all four share a bug \
                 (compare with: cd {} && find -H {dataset} -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)",
                plan.data_root
            );
        }
    }
    if lines != d.files {
        bail!("{dataset}: {lines} output lines for {} files", d.files);
    }
    let pysum_output_sha256 = verify_pysum(plan, dataset)?;
    let v = Verified {
        dataset: dataset.to_string(),
        output_sha256: digest,
        lines,
        expected_manifest_sha256: d.spec.expected_manifest_sha256.clone(),
        commands: commands.iter().map(|(c, _)| c.to_string()).collect(),
        pysum_output_sha256,
    };
    let path = record_path(work, dataset);
    std::fs::create_dir_all(path.parent().expect("has parent"))?;
    let mut text = serde_json::to_string_pretty(&v)?;
    text.push('\n');
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(v)
}
