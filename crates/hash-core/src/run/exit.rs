//! The exit statuses of every binary, one layer below everything that decides
//! one (hashing, check mode, lists, merges), so none of them depends on `app`.

use std::process::ExitCode;

/// Exit statuses shared by all binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Every file was hashed (or the reader closed our output early).
    Success = 0,
    /// Some file or directory could not be read, or output could not be written.
    Failure = 1,
    /// The command line was wrong (clap exits with this itself).
    Usage = 2,
}

impl Exit {
    /// `Failure` if something failed, else `Success`.
    pub fn from_failed(failed: bool) -> Exit {
        if failed {
            Exit::Failure
        } else {
            Exit::Success
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}
