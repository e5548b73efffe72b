//! What the walk leaves out: `--exclude`, `--exclude-from` and `-x`.
//!
//! A pattern is a glob matched against an entry's path below the root it was
//! found under, with the rules of `.gitignore` files, which fd and ripgrep
//! follow and rsync's differ from only in corners:
//! - a pattern with no `/` matches the entry's name at any depth (`*.tmp`);
//! - a pattern with a `/` in it is anchored at the root (`build/out`, and
//!   `/core` for `core` at the top only);
//! - a trailing `/` matches directories only (`cache/`);
//! - `*` and `?` never match a `/`; `**` matches any number of directories.
//!
//! An excluded directory is never opened, so nothing below it is read,
//! listed or reported. The roots themselves are never excluded: a path named
//! on the command line is always walked. `-x` (`find -xdev`) keeps the walk
//! on each root's file system: a directory on another device (a mount) is
//! not descended into.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};

/// Which entries a walk leaves out.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Patterns that exclude any entry.
    any: GlobSet,
    /// Patterns written with a trailing `/`: they exclude directories only.
    dirs: GlobSet,
    /// `-x`: stay on each root's file system.
    pub one_file_system: bool,
}

/// A pattern that is not a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPattern {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it, in globset's words.
    pub reason: String,
}

impl std::fmt::Display for BadPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid pattern '{}': {}", self.pattern, self.reason)
    }
}

impl Filter {
    /// The filter of these patterns (see the module doc for their rules).
    pub fn new<S: AsRef<str>>(patterns: &[S], one_file_system: bool) -> Result<Filter, BadPattern> {
        let mut any = GlobSetBuilder::new();
        let mut dirs = GlobSetBuilder::new();
        for pattern in patterns {
            let pattern = pattern.as_ref();
            let (glob, dir_only) = anchored(pattern);
            let glob = GlobBuilder::new(&glob)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| BadPattern {
                    pattern: pattern.to_owned(),
                    reason: e.kind().to_string(),
                })?;
            if dir_only { &mut dirs } else { &mut any }.add(glob);
        }
        let build = |set: GlobSetBuilder| {
            set.build().map_err(|e| BadPattern {
                pattern: patterns
                    .iter()
                    .map(AsRef::as_ref)
                    .collect::<Vec<_>>()
                    .join(" "),
                reason: e.to_string(),
            })
        };
        Ok(Filter {
            any: build(any)?,
            dirs: build(dirs)?,
            one_file_system,
        })
    }

    /// Whether the filter has any pattern (then it may leave files out of a
    /// walk that is otherwise complete).
    pub fn has_patterns(&self) -> bool {
        !self.any.is_empty() || !self.dirs.is_empty()
    }

    /// Whether the filter may leave out anything at all.
    pub fn is_active(&self) -> bool {
        self.has_patterns() || self.one_file_system
    }

    /// Whether the entry at `rel` (its path below its root, never empty) is
    /// left out.
    pub fn excludes(&self, rel: &[u8], is_dir: bool) -> bool {
        if !self.has_patterns() {
            return false;
        }
        let candidate = Candidate::new(Path::new(OsStr::from_bytes(rel)));
        self.any.is_match_candidate(&candidate)
            || (is_dir && self.dirs.is_match_candidate(&candidate))
    }
}

/// The glob a pattern stands for, and whether it is for directories only:
/// unanchored patterns gain a leading `**/`, anchored ones lose their `/`.
fn anchored(pattern: &str) -> (String, bool) {
    let (body, dir_only) = match pattern.strip_suffix('/') {
        Some(body) if !body.is_empty() => (body, true),
        _ => (pattern, false),
    };
    let glob = if let Some(rooted) = body.strip_prefix('/') {
        rooted.to_owned()
    } else if body.contains('/') {
        body.to_owned()
    } else {
        format!("**/{body}")
    };
    (glob, dir_only)
}

/// The patterns of an `--exclude-from` file: one a line, blank lines and
/// lines starting with `#` ignored, a line's trailing carriage return
/// dropped (a file written on Windows). A line that is not UTF-8 is an
/// error: the glob syntax is text.
pub fn patterns_in(text: &[u8]) -> Result<Vec<String>, usize> {
    let mut patterns = Vec::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let line = std::str::from_utf8(line).map_err(|_| n + 1)?;
        patterns.push(line.to_owned());
    }
    Ok(patterns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(patterns: &[&str]) -> Filter {
        Filter::new(patterns, false).unwrap()
    }

    #[test]
    fn a_pattern_without_a_slash_matches_a_name_at_any_depth() {
        let f = filter(&["*.tmp"]);
        assert!(f.excludes(b"a.tmp", false));
        assert!(f.excludes(b"deep/er/a.tmp", false));
        assert!(f.excludes(b"dir.tmp", true));
        assert!(!f.excludes(b"a.tmp.keep", false));
        assert!(!f.excludes(b"tmp", false));
    }

    #[test]
    fn a_trailing_slash_matches_directories_only() {
        let f = filter(&["cache/"]);
        assert!(f.excludes(b"cache", true));
        assert!(f.excludes(b"a/b/cache", true));
        assert!(!f.excludes(b"cache", false), "a file named cache stays");
        assert!(!f.excludes(b"cache2", true));
    }

    #[test]
    fn a_slash_inside_anchors_the_pattern_at_the_root() {
        let f = filter(&["build/out", "/core"]);
        assert!(f.excludes(b"build/out", false));
        assert!(!f.excludes(b"x/build/out", false));
        assert!(f.excludes(b"core", false));
        assert!(!f.excludes(b"src/core", false));
    }

    #[test]
    fn a_star_stops_at_a_slash_and_a_double_star_does_not() {
        let f = filter(&["logs/*.log"]);
        assert!(f.excludes(b"logs/a.log", false));
        assert!(!f.excludes(b"logs/old/a.log", false));
        let f = filter(&["logs/**/*.log"]);
        assert!(f.excludes(b"logs/old/a.log", false));
        assert!(f.excludes(b"logs/a.log", false));
    }

    #[test]
    fn names_that_are_not_utf8_or_hold_a_newline_are_matched_by_their_bytes() {
        let f = filter(&["*.tmp", "new?line"]);
        assert!(f.excludes(b"bad-\xff.tmp", false));
        assert!(f.excludes(b"new\nline", false));
        assert!(!f.excludes(b"bad-\xff.dat", false));
    }

    #[test]
    fn a_backslash_escapes_a_glob_character() {
        let f = filter(&[r"\*"]);
        assert!(f.excludes(b"*", false));
        assert!(!f.excludes(b"x", false));
    }

    #[test]
    fn no_pattern_excludes_nothing_and_a_bad_one_is_refused() {
        let none = Filter::new::<&str>(&[], false).unwrap();
        assert!(!none.excludes(b"anything", true));
        assert!(!none.is_active());
        assert!(Filter::new::<&str>(&[], true).unwrap().is_active());
        let err = Filter::new(&["a[b"], false).unwrap_err();
        assert_eq!(err.pattern, "a[b");
        assert!(
            err.to_string().starts_with("invalid pattern 'a[b': "),
            "{err}"
        );
    }

    #[test]
    fn an_exclude_file_has_a_pattern_a_line_and_comments() {
        let text = b"# build output\n*.o\n\ntarget/\r\n  spaced  \n";
        assert_eq!(patterns_in(text).unwrap(), ["*.o", "target/", "  spaced  "]);
        assert_eq!(patterns_in(b"ok\n\xff\n"), Err(2));
        assert!(patterns_in(b"").unwrap().is_empty());
    }
}
