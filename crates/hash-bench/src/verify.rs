//! Before anything is timed: every hashrace command of the plan (and every Python
//! reference command, which prints the same lines) must print, on each
//! dataset, byte-identical output, and its SHA-256 must equal the dataset's committed
//! manifest digest. A program that disagrees is not worth timing.
//!
//! Each distinct command (one per program and job count) runs once in the data root,
//! exactly as hyperfine will run it. The outcome is recorded in
//! `<work>/verified/<dataset>.json` for the results file.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

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
}

/// Path of a dataset's verification record.
pub fn record_path(work: &Path, dataset: &str) -> std::path::PathBuf {
    work.join("verified").join(format!("{dataset}.json"))
}

/// Run and compare every hashrace command of `dataset`; write the record on success.
pub fn verify(plan: &Plan, work: &Path, dataset: &str) -> Result<Verified> {
    let d = plan.dataset(dataset)?;
    let mut commands: Vec<(&str, &Vec<String>)> = Vec::new();
    for b in plan.benchmarks.iter().filter(|b| {
        b.dataset == dataset
            && plan
                .programs
                .iter()
                .any(|p| p.name == b.program && crate::plan::verified(p))
    }) {
        if !commands.iter().any(|(c, _)| *c == b.command) {
            commands.push((&b.command, &b.argv));
        }
    }
    if commands.is_empty() {
        bail!("no hashrace command runs on {dataset}");
    }
    if plan.location.is_network() {
        crate::net::serve(plan, work, dataset)?;
    }
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    for (cmd, argv) in &commands {
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
        outputs.push((cmd.to_string(), out.stdout));
    }
    let (first_cmd, first) = &outputs[0];
    for (cmd, out) in &outputs[1..] {
        if out != first {
            let a = String::from_utf8_lossy(first);
            let b = String::from_utf8_lossy(out);
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
            bail!(
                "outputs differ on {dataset}; refusing to time programs that disagree:\n  \
                 {first_cmd}\n  {cmd}\n  first difference at line {n}:\n    {la}\n    {lb}"
            );
        }
    }
    let digest = hex(&Sha256::digest(first));
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
    let v = Verified {
        dataset: dataset.to_string(),
        output_sha256: digest,
        lines,
        expected_manifest_sha256: d.spec.expected_manifest_sha256.clone(),
        commands: commands.iter().map(|(c, _)| c.to_string()).collect(),
    };
    let path = record_path(work, dataset);
    std::fs::create_dir_all(path.parent().expect("has parent"))?;
    let mut text = serde_json::to_string_pretty(&v)?;
    text.push('\n');
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(v)
}
