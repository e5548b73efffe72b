//! One path for diagnostics: every message a binary prints on stderr is
//! `program: message`, written here.
//!
//! The program's name is set once, by the binary at start-up
//! ([`set_program`]), instead of being threaded through every function that
//! may complain. [`show!`](crate::show) prints a message; [`path_error`]
//! prints a failure about one path (shell-quoted as GNU does, so a name cannot
//! forge a second line) out of the progress line's way; [`write_failed`]
//! reports that standard output could not be written. Each message goes out in
//! one `write` on locked stderr, so lines from two threads never interleave.

use std::fmt;
use std::io::{self, Write};
use std::sync::OnceLock;

use crate::error::{io_reason, Error};
use crate::progress::Progress;

static PROGRAM: OnceLock<&'static str> = OnceLock::new();

/// Name the program in every message from now on. The first call wins: a
/// process is one program.
pub fn set_program(name: &'static str) {
    let _ = PROGRAM.set(name);
}

/// The name messages start with: the one [`set_program`] gave, else the
/// name the process was started under, else `hashrace`.
pub fn program() -> &'static str {
    PROGRAM.get_or_init(|| {
        let argv0 = std::env::args_os().next().map(std::path::PathBuf::from);
        let name = argv0
            .as_deref()
            .and_then(std::path::Path::file_name)
            .and_then(|n| n.to_str())
            .unwrap_or("hashrace");
        Box::leak(name.to_owned().into_boxed_str())
    })
}

/// Print `program: ARGS` and a newline on stderr (see [`show!`](crate::show)).
pub fn show(args: fmt::Arguments<'_>) {
    let line = format!("{}: {args}\n", program());
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

/// `show!("{path}: {why}")` prints `program: PATH: WHY` on stderr.
#[macro_export]
macro_rules! show {
    ($($arg:tt)*) => {
        $crate::diag::show(format_args!($($arg)*))
    };
}

/// Write `program: PATH: reason\n` for `e` into `err`.
pub fn write_path_error(err: &mut impl Write, e: &Error) -> io::Result<()> {
    let mut line = Vec::with_capacity(64);
    line.extend_from_slice(program().as_bytes());
    line.extend_from_slice(b": ");
    line.extend_from_slice(&crate::quote::quote_path(&e.path));
    writeln!(line, ": {}", e.kind)?;
    err.write_all(&line)
}

/// Print `e` on stderr as `program: PATH: reason`, out of the progress
/// line's way when one is drawn.
pub fn path_error(e: &Error, progress: Option<&Progress>) {
    let print = || {
        let _ = write_path_error(&mut io::stderr().lock(), e);
    };
    match progress {
        Some(p) => p.print(print),
        None => print(),
    }
}

/// Report that standard output could not be written (`program: write
/// error: reason`, GNU's words); returns the failure exit status.
pub fn write_failed(e: &io::Error) -> crate::exit::Exit {
    show(format_args!("write error: {}", io_reason(e)));
    crate::exit::Exit::Failure
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_error_is_program_quoted_path_reason_on_one_line() {
        let mut out = Vec::new();
        let e = Error::new("a\nb", crate::error::ErrorKind::NotRegular);
        write_path_error(&mut out, &e).unwrap();
        // (Which name the test binary gets depends on which test asks first.)
        let want = format!("{}: 'a'$'\\n''b': not a regular file\n", program());
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
