//! GNU `sha256sum` name escaping, on raw bytes.
//!
//! GNU prints a file name verbatim unless it contains a backslash, a newline or
//! a carriage return; then the whole line starts with `\` and those three are
//! written `\\`, `\n` and `\r`. Everything else — spaces, leading dashes,
//! invalid UTF-8 — is written as the raw bytes of the name, never replaced. The
//! same escaping is used for paths in error messages, so a name cannot forge an
//! extra line on stderr either. The escaping rules themselves live, with their
//! tests against real GNU output, in `crate::checkline`.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use crate::checkline::{escape_name, escape_status_name, unescape_name};

/// The name with `\\`, newline and carriage return escaped (see [`escape_name`]
/// for whether the line then needs a leading `\\`).
pub fn escape(name: &[u8]) -> Cow<'_, [u8]> {
    escape_name(name).1
}

/// The raw bytes of a path.
pub(crate) fn path_bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

/// A path from raw bytes (lossless on Unix).
pub(crate) fn bytes_path(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

/// A path escaped for a human-readable `String` (invalid UTF-8 replaced). Only for
/// `Display` impls; the real output paths write [`escape`]d raw bytes instead.
pub(crate) fn display_path(path: &Path) -> String {
    String::from_utf8_lossy(&escape(path_bytes(path))).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_borrowed_untouched() {
        for name in [&b"a"[..], b"a b", b"-x", b"\xff\xfe", b"\t", b""] {
            assert!(!escape_name(name).0);
            assert!(matches!(escape(name), Cow::Borrowed(n) if n == name));
        }
    }

    #[test]
    fn the_three_special_bytes_are_escaped() {
        assert_eq!(&*escape(b"a\\b"), b"a\\\\b");
        assert_eq!(&*escape(b"a\nb"), b"a\\nb");
        assert_eq!(&*escape(b"a\rb"), b"a\\rb");
        assert_eq!(&*escape(b"\\\n\r\xff"), b"\\\\\\n\\r\xff");
    }
}
