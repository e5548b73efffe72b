//! The layout of `results/`: an index (`README.md`), the explanation (`VERDICT.md`),
//! and one folder per sweep holding its data (`results.json`) and what is generated
//! from that alone (`report.md`, `charts/*.svg`). Anything else is refused by
//! `hash-bench validate results`, which CI runs, so that notes and loose exports do not
//! pile up again. What stays on the machine that ran a sweep (`<sweep>/raw/`, the work
//! directories under `tmp/`) is git-ignored and not checked.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The data file of a sweep folder.
pub const RESULTS_FILE: &str = "results.json";

/// The only files at the top of `results/`.
pub const TOP: [&str; 2] = ["README.md", "VERDICT.md"];

/// What lies in a sweep folder besides `results.json`.
const GENERATED: [&str; 2] = ["report.md", "charts"];

/// Local, git-ignored: not part of the layout.
const LOCAL: [&str; 1] = ["raw"];

/// The sweep folders of `results` (each holding `results.json`), and every path in
/// it that is outside the layout.
pub fn check(results: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut sweeps = Vec::new();
    let mut stray = Vec::new();
    let entries = std::fs::read_dir(results).with_context(|| results.display().to_string())?;
    let mut names: Vec<PathBuf> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for p in names {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if p.is_dir() {
            if name == "tmp" {
                continue;
            }
            if p.join(crate::layout::RESULTS_FILE).is_file() {
                stray.extend(check_sweep(&p)?);
                sweeps.push(p);
            } else {
                stray.push(p);
            }
        } else if !TOP.contains(&name.as_str()) {
            stray.push(p);
        }
    }
    Ok((sweeps, stray))
}

/// The paths of the sweep folder `dir` that are outside the layout.
fn check_sweep(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut stray = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if name == crate::layout::RESULTS_FILE && p.is_file() || LOCAL.contains(&name.as_str()) {
            continue;
        }
        if !GENERATED.contains(&name.as_str()) {
            stray.push(p);
            continue;
        }
        if name == "charts" {
            if !p.is_dir() {
                stray.push(p);
                continue;
            }
            for c in std::fs::read_dir(&p)? {
                let c = c?.path();
                if !(c.is_file() && c.extension().is_some_and(|x| x == "svg")) {
                    stray.push(c);
                }
            }
        } else if !p.is_file() {
            stray.push(p);
        }
    }
    stray.sort();
    Ok(stray)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_index_the_verdict_and_sweep_folders_pass() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for f in ["README.md", "VERDICT.md"] {
            std::fs::write(r.join(f), "").unwrap();
        }
        let sweep = r.join("vm-20261207T000000Z-default");
        std::fs::create_dir_all(sweep.join("charts")).unwrap();
        std::fs::create_dir_all(sweep.join("raw")).unwrap();
        std::fs::create_dir_all(r.join("tmp/work")).unwrap();
        for f in [
            "results.json",
            "report.md",
            "charts/a.svg",
            "raw/x.hyperfine.json",
        ] {
            std::fs::write(sweep.join(f), "").unwrap();
        }
        let (sweeps, stray) = check(r).unwrap();
        assert_eq!(sweeps, std::slice::from_ref(&sweep));
        assert!(stray.is_empty(), "{stray:?}");
        // A loose study at the top, a note in a sweep, a PNG among the charts, and a
        // folder of charts without data.
        for f in ["inflight-x.md", "old.json"] {
            std::fs::write(r.join(f), "").unwrap();
        }
        std::fs::write(sweep.join("notes.md"), "").unwrap();
        std::fs::write(sweep.join("charts/a.png"), "").unwrap();
        std::fs::create_dir_all(r.join("orphan/charts")).unwrap();
        let (_, stray) = check(r).unwrap();
        let names: Vec<String> = stray
            .iter()
            .map(|p| p.strip_prefix(r).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "inflight-x.md",
                "old.json",
                "orphan",
                "vm-20261207T000000Z-default/charts/a.png",
                "vm-20261207T000000Z-default/notes.md"
            ]
        );
    }
}
