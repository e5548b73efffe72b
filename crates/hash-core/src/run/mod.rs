//! A binary's run, around the engine: the one clap definition and the `Config` it
//! resolves to, `--check`, messages on stderr, the exit status, progress and the time
//! left, units, the process-wide limits a binary opts in to, and completions and man
//! pages.

pub mod app;
pub(crate) mod check;
pub(crate) mod cli;
pub(crate) mod diag;
pub(crate) mod error;
pub mod eta;
pub(crate) mod exit;
pub(crate) mod generate;
pub mod limits;
pub(crate) mod progress;
pub mod units;
