//! `hash-bench compare`: results files from several machines or sweeps, side by side.
//!
//! For each dataset × cache state there is one table: programs as rows, one column per
//! results file. A cell holds the median throughput (files/s for small-file datasets,
//! MiB/s otherwise), the speed relative to `hash-serial` in the same column, and the rank
//! in that column. Above the tables sits the machine block (CPU, cores, SHA-NI, storage),
//! because absolute numbers from two machines mean little without it.
//!
//! Like is compared with like only:
//! - a dataset name measured on different bytes (different `spec_hash`) gives separate
//!   tables, with a note saying why;
//! - flagged benchmarks (`valid: false`) are shown with their flags and never ranked, and
//!   never serve as the `hash-serial` baseline;
//! - programs of kind `reference` (in-memory SHA-256 rates, the read floor, BLAKE3) are
//!   ceilings, not contestants: shown below the ranked rows, never ranked.
//!
//! Files are read into the schema's own [`Results`](crate::results::Results) type without
//! [`crate::results::validate_file`]'s strictness: unknown fields are ignored, so that
//! every readable schema version, and files from a harness that added fields, can be
//! compared. Nothing beside the file is needed (results files are self-contained). The
//! checks that matter here are still made: JSON well-formed and complete, a results file
//! and not something else, a known schema and hyperfine schema, benchmarks naming known
//! datasets, and throughputs agreeing with the median. A refused file is reported as
//! `FILE: problem` and the others are still compared.
//!
//! The comparison is built once as a [`Comparison`] value, then rendered as Markdown
//! ([`markdown`]) or serialized as JSON for scripts; the charts ([`crate::chart`]) draw
//! from the same value.
//!
//! Reading the files (`read`), the comparison (`comparison`), its Markdown and JSON
//! (`render`) and a document's generated sections (`doc`) are submodules; the commands
//! are here.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

mod comparison;
mod doc;
mod read;
mod render;
#[cfg(test)]
mod testing;

pub use comparison::{
    build, compare_paths, jobs_sweeps, Cell, Column, Comparison, Loaded, Row, Table, Unit,
};
pub use doc::{update_doc, BEGIN, END};
pub use read::{expand, load, load_paths, parse, Refused};
pub use render::{fmt_count, fmt_num, json, markdown, page};

/// Results schema versions this module reads: the ones `results` validates.
pub const READABLE_SCHEMAS: std::ops::RangeInclusive<u32> =
    crate::results::OLDEST_SCHEMA_VERSION..=crate::results::SCHEMA_VERSION;

/// Datasets whose mean file size is below this are measured in files/s, others in MiB/s:
/// per-file costs dominate small files, bytes dominate big ones.
pub const SMALL_FILE_MEAN_BYTES: u64 = 64 * 1024;

/// The program every speed ratio is relative to.
pub const BASELINE: &str = "hash-serial";

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown tables, ready to paste.
    Markdown,
    /// JSON, for scripts.
    Json,
}

pub fn report_refused(c: &Comparison) -> Result<()> {
    for r in &c.refused {
        eprintln!("hash-bench: {}: {}", r.file, r.problem);
    }
    if !c.refused.is_empty() {
        bail!(
            "{} of {} files refused",
            c.refused.len(),
            c.refused.len() + c.columns.len()
        );
    }
    Ok(())
}

/// `hash-bench compare FILE|DIR...`: print the comparison; refused files are reported on
/// stderr, the rest still compared, and the result is an error if any was refused.
pub fn run_compare(args: &[PathBuf], format: Format, output: Option<&Path>) -> Result<()> {
    let (files, refused) = load_paths(args);
    let c = build(&files, refused);
    for w in &c.warnings {
        eprintln!("hash-bench compare: warning: {w}");
    }
    if !c.columns.is_empty() {
        let text = match format {
            Format::Markdown => page(&c, &files),
            Format::Json => json(&c),
        };
        match output {
            Some(path) => {
                std::fs::write(path, &text)
                    .with_context(|| format!("writing {}", path.display()))?;
                eprintln!("hash-bench compare: wrote {}", path.display());
            }
            None => print!("{text}"),
        }
    }
    report_refused(&c)
}

/// `hash-bench compare --update-doc DOC [--check]`: regenerate a document's generated
/// sections; with `check`, fail (changing nothing) if they are out of date.
pub fn run_update_doc(doc: &Path, check: bool) -> Result<()> {
    let text = std::fs::read_to_string(doc).with_context(|| format!("{}", doc.display()))?;
    let base = doc.parent().unwrap_or(Path::new("."));
    let new = update_doc(&text, base).with_context(|| format!("{}", doc.display()))?;
    if new == text {
        eprintln!("{}: generated tables are up to date", doc.display());
    } else if check {
        bail!(
            "{}: generated tables differ from what the results give; run `hash-bench compare --update-doc {}`",
            doc.display(),
            doc.display()
        );
    } else {
        std::fs::write(doc, &new).with_context(|| format!("writing {}", doc.display()))?;
        eprintln!("{}: generated tables rewritten", doc.display());
    }
    Ok(())
}
