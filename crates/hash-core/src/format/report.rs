//! The `--json` document: a versioned schema, in code.
//!
//! One document per run, written at the end: every file hashed, every error,
//! every skipped entry, an optional tree digest and a summary. Paths are bytes
//! on Unix but JSON strings must be Unicode, so a path is written as its UTF-8
//! text in `path` when it is valid UTF-8; otherwise `path` holds a lossy
//! rendering (for humans) and `path_hex` the exact bytes in lowercase hex (for
//! programs) — [`JsonPath::to_bytes`] gets the real path back either way.
//! Bump [`SCHEMA_VERSION`] on any change that would break a reader.
//!
//! `--json-lines` writes the same entries one [`Line`] at a time, as each
//! file's turn comes, then a [`Line::Summary`]: a tree of any size in memory
//! bounded as the plain output is, and a reader that sees the first files at
//! once (as `rg --json` does).

use serde::{Deserialize, Serialize};

use crate::hasher::hex;

/// Version of the `--json` schema described by [`Report`].
pub const SCHEMA_VERSION: u32 = 1;

/// The whole `--json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Version of this schema ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The program that wrote it, e.g. `hash-threads`.
    pub tool: String,
    /// That program's version.
    pub version: String,
    /// Every regular file hashed, sorted by the raw bytes of its path.
    pub files: Vec<FileEntry>,
    /// Every file or directory that could not be read, in report order.
    pub errors: Vec<ErrorEntry>,
    /// Every entry skipped because it is not a regular file (links without `-L`, FIFOs, ...).
    pub skipped: Vec<SkippedEntry>,
    /// The tree digest (`--tree`, see the README), or `null`.
    pub tree_sha256: Option<String>,
    /// Totals and speed.
    pub summary: JsonSummary,
}

/// A path, lossless even when it is not valid UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonPath {
    /// The path as text; lossy (U+FFFD) only when `path_hex` is present.
    pub path: String,
    /// The path's exact bytes in lowercase hex, present only when the path is
    /// not valid UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_hex: Option<String>,
}

impl JsonPath {
    /// Encode raw path bytes.
    pub fn from_bytes(bytes: &[u8]) -> JsonPath {
        match std::str::from_utf8(bytes) {
            Ok(text) => JsonPath {
                path: text.to_owned(),
                path_hex: None,
            },
            Err(_) => JsonPath {
                path: String::from_utf8_lossy(bytes).into_owned(),
                path_hex: Some(hex(bytes)),
            },
        }
    }

    /// The exact path bytes (`None` if `path_hex` is not valid hex).
    pub fn to_bytes(&self) -> Option<Vec<u8>> {
        match &self.path_hex {
            None => Some(self.path.as_bytes().to_vec()),
            Some(h) => unhex(h),
        }
    }
}

/// Decode lowercase or uppercase hex.
pub fn unhex(h: &str) -> Option<Vec<u8>> {
    ::hex::decode(h).ok()
}

/// One hashed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Root joined with the path below it, as in the text output.
    #[serde(flatten)]
    pub path: JsonPath,
    /// Bytes hashed.
    pub size: u64,
    /// SHA-256 in lowercase hex.
    pub sha256: String,
}

/// One file or directory that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEntry {
    /// The path the error is about.
    #[serde(flatten)]
    pub path: JsonPath,
    /// Stable kind: `not_found`, `permission_denied`, `io`, `not_regular`, `loop`, `worker_died`.
    pub kind: String,
    /// The human-readable reason, as printed on stderr.
    pub message: String,
}

/// One entry skipped because it is not a regular file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedEntry {
    /// Its path.
    #[serde(flatten)]
    pub path: JsonPath,
    /// `symlink`, `fifo`, `socket`, `block_device`, `char_device` or `other`.
    pub kind: String,
}

/// One line of `--json-lines`: an object whose `type` says what it is.
/// Files and errors come in output order, then the skipped entries, then one
/// summary, last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// A file hashed.
    File(FileEntry),
    /// A file or directory that could not be read.
    Error(ErrorEntry),
    /// An entry skipped because it is not a regular file.
    Skipped(SkippedEntry),
    /// The end of the run: present only when the run was not cut short.
    Summary(LinesSummary),
}

/// What ends a `--json-lines` run: the [`Report`]'s fields other than its lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinesSummary {
    /// Version of this schema ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The program that wrote it, e.g. `hash-threads`.
    pub tool: String,
    /// That program's version.
    pub version: String,
    /// The tree digest (`--tree`), or `null`.
    pub tree_sha256: Option<String>,
    /// Totals and speed.
    #[serde(flatten)]
    pub totals: JsonSummary,
}

/// Totals of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSummary {
    /// `serial`, `threads`, `procs` or `async`.
    pub strategy: String,
    /// Workers used.
    pub jobs: usize,
    /// Files hashed.
    pub files: u64,
    /// Bytes hashed.
    pub bytes: u64,
    /// Errors reported.
    pub errors: u64,
    /// Entries skipped.
    pub skipped: u64,
    /// Wall-clock time of the whole run, walk included, in seconds.
    pub elapsed_seconds: f64,
    /// `bytes` / 2^20 / `elapsed_seconds`.
    pub mib_per_second: f64,
    /// `files` / `elapsed_seconds`.
    pub files_per_second: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_paths_are_plain_strings() {
        let p = JsonPath::from_bytes("dir/é x".as_bytes());
        assert_eq!(p.path_hex, None);
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"path":"dir/é x"}"#);
    }

    #[test]
    fn invalid_utf8_is_kept_exactly_in_hex() {
        let raw = b"d/\xff\xfe\n";
        let p = JsonPath::from_bytes(raw);
        assert_eq!(
            p.path_hex.as_deref(),
            Some("642fff fe0a".replace(' ', "").as_str())
        );
        let back: JsonPath = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back.to_bytes().unwrap(), raw);
    }

    #[test]
    fn a_line_says_its_type_beside_the_entry_fields() {
        let file = Line::File(FileEntry {
            path: JsonPath::from_bytes(b"d/\xff"),
            size: 3,
            sha256: "ab".into(),
        });
        let text = serde_json::to_string(&file).unwrap();
        let want = "{\"type\":\"file\",\"path\":\"d/\u{fffd}\",\"path_hex\":\"642fff\",\"size\":3,\"sha256\":\"ab\"}";
        assert_eq!(text, want);
        assert_eq!(serde_json::from_str::<Line>(&text).unwrap(), file);
    }

    #[test]
    fn unhex_rejects_odd_and_non_hex() {
        assert_eq!(unhex("0aFF"), Some(vec![10, 255]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("é0"), None);
        // `u8::from_str_radix` took a sign: "+f" was once the byte 15.
        assert_eq!(unhex("+f"), None);
    }
}
