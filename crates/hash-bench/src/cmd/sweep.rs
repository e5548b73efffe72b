//! The steps of a sweep, in the order `bench.sh` runs them (`plan`, `verify`, `race`,
//! `collect`), and what reads its results afterwards (`validate`, `report`, `upgrade`,
//! `table`, `schema`, `compare`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::plan::{self, PlanOptions};
use crate::{collect, compare, race, results, verify};

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    options: PlanOptions,
    /// Discard finished benchmarks of an earlier, interrupted run of the same plan.
    #[arg(long)]
    fresh: bool,
}

pub fn plan(a: PlanArgs) -> Result<()> {
    let opts = a.options.resolve()?;
    let plan = plan::build(&opts)?;
    let work = plan::work_dir(&opts.work_parent, &plan);
    if a.fresh && work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    let done = plan
        .benchmarks
        .iter()
        .filter(|b| race::is_done(&work, &b.id))
        .count();
    plan::write(&plan, &work)?;
    eprint!("{}", plan::summary(&plan, &[]));
    if done > 0 {
        eprintln!(
            "  resuming: {done} of {} benchmarks already done in {} (pass --fresh to start over)",
            plan.benchmarks.len(),
            work.display()
        );
    }
    println!("{}", work.display());
    Ok(())
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Work directory of the plan.
    #[arg(long)]
    work: PathBuf,
    /// Datasets to verify (default: all of the plan's).
    datasets: Vec<String>,
}

pub fn verify(a: VerifyArgs) -> Result<()> {
    let plan = plan::read(&a.work)?;
    let names: Vec<String> = if a.datasets.is_empty() {
        plan.datasets.iter().map(|d| d.spec.name.clone()).collect()
    } else {
        a.datasets
    };
    for n in &names {
        let v = verify::verify(&plan, &a.work, n)?;
        let against = if v.expected_manifest_sha256.is_some() {
            "the committed digest"
        } else {
            "each other (no committed digest)"
        };
        let pysum = if v.pysum_output_sha256.is_some() {
            "; the pysum rows agree with hash-bench's own byte sums"
        } else {
            ""
        };
        eprintln!(
            "  {n}: {} commands agree ({} lines) and match {against}{pysum}",
            v.commands.len(),
            v.lines
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct RaceArgs {
    /// Work directory of the plan.
    #[arg(long)]
    work: PathBuf,
    /// hyperfine executable.
    #[arg(long, default_value = "hyperfine")]
    hyperfine: OsString,
}

pub fn race(a: RaceArgs) -> Result<()> {
    let work = std::fs::canonicalize(&a.work).with_context(|| a.work.display().to_string())?;
    race::race(&work, &std::env::current_exe()?, &a.hyperfine)
}

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Work directory of the plan.
    #[arg(long)]
    work: PathBuf,
    /// Directory receiving the results file and its raw directory.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// hyperfine executable (for its version).
    #[arg(long, default_value = "hyperfine")]
    hyperfine: String,
    /// Then validate the results file, as `hash-bench validate` does.
    #[arg(long)]
    validate: bool,
    /// Then write its report and charts into its folder, as `hash-bench report` does (a
    /// drawing failure is a warning: it does not lose a sweep).
    #[arg(long)]
    charts: bool,
}

pub fn collect(a: CollectArgs) -> Result<()> {
    let (file, r) = collect::collect(&a.work, &a.out, &a.hyperfine)?;
    print!("{}", collect::table(&r));
    println!("\nresults: {}", file.display());
    if a.validate {
        validate(std::slice::from_ref(&file))?;
    }
    if a.charts {
        let dir = file.parent().expect("a sweep folder");
        // A drawing failure is a warning: it does not lose a sweep.
        match crate::report::write_for(&r, dir) {
            Ok(report) => report_lines(dir, &report)?,
            Err(e) => {
                eprintln!("hash-bench: {e:#}");
                println!("warning: no report (hash-bench report {})", dir.display());
            }
        }
    }
    Ok(())
}

/// The winner lines of the sweep in `dir`, and where its report is.
fn report_lines(dir: &Path, report: &Path) -> Result<()> {
    let r = results::validate_file(&dir.join(crate::layout::RESULTS_FILE))?;
    println!("\nThe answer ({}):", crate::report::machine_line(&r));
    for line in crate::report::winner_lines(&r) {
        println!("  {line}");
    }
    println!("report: {}", report.display());
    Ok(())
}

pub fn validate(paths: &[PathBuf]) -> Result<()> {
    let mut files = Vec::new();
    for p in paths {
        if !p.is_dir() {
            files.push(p.clone());
        } else if p.join(crate::layout::RESULTS_FILE).is_file() {
            files.push(p.join(crate::layout::RESULTS_FILE));
        } else {
            let (sweeps, stray) = crate::layout::check(p)?;
            if !stray.is_empty() {
                let list: Vec<String> =
                    stray.iter().map(|s| format!("  {}", s.display())).collect();
                bail!(
                    "{}: outside the layout (README.md, VERDICT.md, and sweep folders of \
                     results.json, report.md and charts/*.svg):\n{}",
                    p.display(),
                    list.join("\n")
                );
            }
            files.extend(sweeps.iter().map(|d| d.join(crate::layout::RESULTS_FILE)));
        }
    }
    for f in &files {
        let r = results::validate_file(f)?;
        let invalid = r.benchmarks.iter().filter(|b| !b.valid).count();
        println!(
            "{}: valid schema v{} ({} benchmarks, {} datasets, {invalid} flagged invalid)",
            f.display(),
            r.schema_version,
            r.benchmarks.len(),
            r.datasets.len()
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results files or directories of them; one column each.
    #[arg(required_unless_present = "update_doc")]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "markdown")]
    format: compare::Format,
    /// Write the page to this file instead of standard output.
    #[arg(short, long, conflicts_with = "update_doc")]
    output: Option<PathBuf>,
    /// Regenerate the `<!-- compare:begin FILES -->` sections of this Markdown file.
    #[arg(long, conflicts_with_all = ["files", "format"])]
    update_doc: Option<PathBuf>,
    /// With --update-doc: change nothing, fail if the sections are out of date.
    #[arg(long, requires = "update_doc")]
    check: bool,
}

pub fn compare(a: CompareArgs) -> Result<()> {
    match a.update_doc {
        Some(doc) => compare::run_update_doc(&doc, a.check),
        None => compare::run_compare(&a.files, a.format, a.output.as_deref()),
    }
}

pub fn schema() -> Result<()> {
    let schema = crate::results::json_schema();
    println!("{}", serde_json::to_string_pretty(&schema)?);
    Ok(())
}

pub fn report(dirs: &[PathBuf], update_doc: Option<&Path>) -> Result<()> {
    if let Some(doc) = update_doc {
        let text =
            std::fs::read_to_string(doc).with_context(|| format!("reading {}", doc.display()))?;
        let root = doc.parent().unwrap_or(Path::new("."));
        std::fs::write(doc, crate::report::update_doc(&text, root)?)?;
        println!("{}: answer tables regenerated", doc.display());
    }
    for d in dirs {
        let report = crate::report::write(d)?;
        report_lines(d, &report)?;
    }
    Ok(())
}

pub fn upgrade(files: &[PathBuf]) -> Result<()> {
    for f in files {
        let r = crate::upgrade::upgrade_file(f)?;
        println!(
            "{}: upgraded to schema v{} ({} benchmarks recomputed)",
            f.display(),
            r.schema_version,
            r.benchmarks.len()
        );
    }
    Ok(())
}

pub fn table(file: &Path) -> Result<()> {
    let r = results::validate_file(file)?;
    print!("{}", collect::table(&r));
    Ok(())
}
