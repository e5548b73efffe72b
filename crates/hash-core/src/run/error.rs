//! The error type of the core: every failure is about one path.
//!
//! A per-file failure never aborts a run; it is reported as `tool: PATH: reason`
//! and counted. Keeping the path inside the error (as `ignore::Error::WithPath`
//! does) means no caller can print a reason without saying what it is about.
//! [`ErrorKind`] is small and plain so that the process strategy can carry it
//! across a pipe from a worker to the parent without losing anything.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What went wrong with one file or directory.
#[derive(Debug)]
pub enum ErrorKind {
    /// An operating-system error (open, read, stat, readdir).
    Io(io::Error),
    /// The path is not a regular file (a FIFO, socket, device, or a file that
    /// was replaced by one of those, or by a symbolic link, during the run).
    NotRegular,
    /// Following symbolic links (`-L`) led back to an ancestor directory.
    Loop {
        /// The directory the walk would have entered again.
        ancestor: PathBuf,
    },
    /// The worker process hashing this file died, and retrying did not help.
    WorkerDied(String),
}

impl ErrorKind {
    /// A short, stable name for the kind of error (used in JSON output).
    pub fn name(&self) -> &'static str {
        match self {
            ErrorKind::Io(e) => match e.kind() {
                io::ErrorKind::NotFound => "not_found",
                io::ErrorKind::PermissionDenied => "permission_denied",
                // ELOOP: a symbolic link loop met while opening (a root or a
                // listed path that is one, or a link under `-L`).
                _ if e.raw_os_error() == Some(libc::ELOOP) => "loop",
                _ => "io",
            },
            ErrorKind::NotRegular => "not_regular",
            ErrorKind::Loop { .. } => "loop",
            ErrorKind::WorkerDied(_) => "worker_died",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(e) => f.write_str(&io_reason(e)),
            ErrorKind::NotRegular => f.write_str("not a regular file"),
            ErrorKind::Loop { ancestor } => write!(
                f,
                "File system loop detected (leads back to {})",
                crate::escape::display_path(ancestor)
            ),
            ErrorKind::WorkerDied(why) => write!(f, "worker process died: {why}"),
        }
    }
}

impl From<io::Error> for ErrorKind {
    fn from(e: io::Error) -> Self {
        ErrorKind::Io(e)
    }
}

/// The reason of an I/O error as `strerror` words, like GNU tools print it:
/// "Permission denied", not "Permission denied (os error 13)".
pub fn io_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .map(str::to_owned)
            .unwrap_or(text),
        None => text,
    }
}

/// A failure about one path.
#[derive(Debug)]
pub struct Error {
    /// The path as the user will recognise it (root joined with the walk).
    pub path: PathBuf,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// An error about `path`.
    pub fn new(path: impl Into<PathBuf>, kind: impl Into<ErrorKind>) -> Self {
        Error {
            path: path.into(),
            kind: kind.into(),
        }
    }

    /// The path this error is about.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `PATH: reason`, the path shell-quoted as in GNU's messages (so that a
/// newline in a name cannot forge a second message).
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", crate::quote::quoted(&self.path), self.kind)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symbolic_link_loop_is_a_loop_and_other_io_errors_keep_their_kinds() {
        let kind = |code| ErrorKind::Io(io::Error::from_raw_os_error(code)).name();
        assert_eq!(kind(libc::ELOOP), "loop");
        assert_eq!(kind(libc::ENOENT), "not_found");
        assert_eq!(kind(libc::EACCES), "permission_denied");
        assert_eq!(kind(libc::EIO), "io");
    }

    #[test]
    fn io_reason_drops_the_os_error_suffix() {
        let e = io::Error::from(rustix::io::Errno::NOENT);
        assert_eq!(io_reason(&e), "No such file or directory");
        let e = io::Error::from(rustix::io::Errno::ACCESS);
        assert_eq!(io_reason(&e), "Permission denied");
    }

    #[test]
    fn io_reason_keeps_messages_without_an_os_code() {
        let e = io::Error::other("pipe closed");
        assert_eq!(io_reason(&e), "pipe closed");
    }

    #[test]
    fn display_is_path_colon_reason() {
        let e = Error::new("dir/a b", ErrorKind::NotRegular);
        assert_eq!(e.to_string(), "'dir/a b': not a regular file");
        let e = Error::new("x\ny", io::Error::from(rustix::io::Errno::ACCESS));
        assert_eq!(e.to_string(), "'x'$'\\n''y': Permission denied");
    }
}
