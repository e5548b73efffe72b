//! A Markdown document's generated sections (`<!-- compare:begin FILES -->` to
//! `<!-- compare:end -->`), rebuilt from the results files they name, so that a committed
//! document cannot drift from its numbers.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{compare_paths, markdown};

/// Start of a generated section; the rest of the line (up to `-->`) lists the results
/// files, relative to the document's directory.
pub const BEGIN: &str = "<!-- compare:begin";
/// End of a generated section.
pub const END: &str = "<!-- compare:end -->";

/// Regenerate every `compare` section of a Markdown document: the text between each
/// begin marker and the next end marker becomes the comparison of the files the begin
/// marker names (paths relative to `base`). Fails on unbalanced markers or a refused file
/// (a document must not silently lose a column).
pub fn update_doc(doc: &str, base: &Path) -> Result<String> {
    let mut out = String::new();
    let mut rest = doc;
    while let Some(b) = rest.find(BEGIN) {
        let line_end = rest[b..]
            .find('\n')
            .map(|i| b + i + 1)
            .context("begin marker without a line end")?;
        let marker = &rest[b..line_end];
        let names = marker
            .trim_start_matches(BEGIN)
            .trim_end()
            .strip_suffix("-->")
            .context("begin marker must end with -->")?;
        let files: Vec<PathBuf> = names.split_whitespace().map(|n| base.join(n)).collect();
        if files.is_empty() {
            bail!("begin marker names no results files");
        }
        let e = rest[line_end..]
            .find(END)
            .map(|i| line_end + i)
            .context("begin marker without an end marker")?;
        if rest[line_end..e].contains(BEGIN) {
            bail!("nested begin marker");
        }
        let c = compare_paths(&files);
        if let Some(r) = c.refused.first() {
            bail!("{}: {}", r.file, r.problem);
        }
        // Labels are file names, so the text does not depend on where we run from.
        out.push_str(&rest[..line_end]);
        out.push('\n');
        out.push_str(&markdown(&c));
        out.push('\n');
        rest = &rest[e..];
        out.push_str(END);
        rest = &rest[END.len()..];
    }
    if rest.contains(END) {
        bail!("end marker without a begin marker");
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::testing::*;

    #[test]
    fn update_doc_rewrites_only_the_marked_sections() {
        let doc = "# Title\n\nby hand\n<!-- compare:begin a.json b.json -->\nstale\n<!-- compare:end -->\nafter\n";
        let new = update_doc(doc, &fixtures()).unwrap();
        assert!(new.starts_with("# Title\n\nby hand\n<!-- compare:begin a.json b.json -->\n"));
        assert!(new.ends_with("<!-- compare:end -->\nafter\n"));
        assert!(!new.contains("stale"));
        assert!(new.contains(&markdown(&two())));
        // Idempotent: a second run changes nothing.
        assert_eq!(update_doc(&new, &fixtures()).unwrap(), new);
        let e = |d: &str| format!("{:#}", update_doc(d, &fixtures()).unwrap_err());
        assert!(e("<!-- compare:begin a.json -->\nx\n").contains("without an end marker"));
        assert!(e("x\n<!-- compare:end -->\n").contains("end marker without a begin"));
        assert!(
            e("<!-- compare:begin truncated.json -->\n<!-- compare:end -->\n")
                .contains("truncated JSON")
        );
    }
}
