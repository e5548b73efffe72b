//! hash-core: everything the four `hash-*` binaries share.
//!
//! The binaries differ only in *how* they spread the hashing of a planned list of
//! files over the machine (one thread, a thread pool, worker processes, a tokio
//! runtime). Everything around that — the command line, the walk, opening files
//! safely, GNU-compatible output, error reporting, statistics and exit status — is
//! written once here, so the four cannot drift apart and their outputs stay
//! byte-identical. The layering, from the bottom:
//!
//! - [`hasher`]: open one file without blocking and stream it through SHA-256;
//!   [`datapath`] measures whether large cached files are mapped or read.
//! - [`walk`]: turn the command-line paths into a sorted [`walk::Plan`] of files.
//! - [`strategy`]: the four ways of running a plan, each a value with its own
//!   settings ([`strategy::Runner`]), held by the one [`Engine`] a run uses.
//! - [`output`]: the single writer that orders results and prints them.
//! - [`check`]: `--check`, on the same strategies, with [`checkline`] parsing.
//! - [`app`]: the `main` of every binary: parse, plan, run, exit status.
//! - [`diag`]: every message on stderr, `program: ...`, written once;
//!   [`units`]: sizes, durations and counts as every text line writes them.
//! - [`limits`]: the process-wide settings a binary opts in to (the library
//!   itself changes no process state); [`room`]: what large, optional
//!   allocations may take under a `ulimit -v`.
//! - [`cache`]: `--cache`, the metadata cache that lets unchanged files go
//!   unread, between the walk and the strategies.
//! - [`filelist`], [`shard`], [`merge`]: scale-out over cluster engines (`--list`,
//!   `--shard K/N`, `--merge`), giving exactly the single-machine output.

// io_uring, getdents, FIEMAP, RWF_NOWAIT, /proc and PR_SET_PDEATHSIG are
// Linux's: say so at once rather than in a hundred errors further down.
#[cfg(not(target_os = "linux"))]
compile_error!("hashrace runs on Linux only (it uses io_uring, getdents, FIEMAP and /proc)");

pub mod app;
pub mod cache;
pub mod check;
pub mod checkline;
pub mod cli;
pub mod datapath;
pub mod diag;
pub mod error;
pub mod escape;
pub mod eta;
pub mod exit;
pub mod filelist;
pub mod filter;
pub mod generate;
pub mod hasher;
pub mod inflight;
pub mod limits;
pub mod mapped;
pub mod merge;
pub mod output;
pub mod progress;
pub mod quote;
pub mod report;
pub mod room;
pub mod shard;
pub mod stamp;
pub mod stdio;
pub mod strategy;
mod striped;
pub mod tree;
pub mod units;
pub mod walk;

pub use error::{Error, ErrorKind};
pub use hasher::{FileDigest, READ_BUF_SIZE};
pub use strategy::{Engine, Job, Outcome, Strategy};
