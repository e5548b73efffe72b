//! hash-core: everything the four `hash-*` binaries share.
//!
//! The binaries differ only in *how* they spread the hashing of a planned list of
//! files over the machine (one thread, a thread pool, worker processes, a tokio
//! runtime). Everything around that — the command line, the walk, opening files
//! safely, GNU-compatible output, error reporting, statistics and exit status — is
//! written once here, so the four cannot drift apart and their outputs stay
//! byte-identical. The source has one folder per layer, from the bottom:
//!
//! - `format/`: GNU lines (escaping, quoting), `--check` lines, the `--tree` digest,
//!   the writer that orders results ([`output`]) and the `--json` document ([`report`]).
//! - `input/`: the walk of the command-line paths into a sorted plan, the filters,
//!   the standard streams ([`stdio`]).
//! - `read/`: one file into SHA-256 ([`hasher`]): opening safely, reading or mapping
//!   ([`mapped`]) and which wins, measured; the reads kept in flight; the memory a
//!   run may take under a `ulimit -v`.
//! - [`strategy`]: the four ways of running a plan, each a value with its own
//!   settings (`strategy::Runner`), held by the one `Engine` a run uses.
//! - [`cache`]: `--cache`, the metadata cache that lets unchanged files go unread.
//! - `run/`: the `main` of every binary ([`app`]): the clap definition and the
//!   `Config` it resolves to, `--check`, messages on stderr, the exit status,
//!   progress and the time left ([`eta`]), [`units`], and the process-wide settings
//!   a binary opts in to ([`limits`]; the library itself changes no process state).
//! - `scale/`: scale-out over cluster engines (`--list`, `--files-from`, `--shard
//!   K/N`, `--merge`), giving exactly the single-machine output.
//!
//! The public API is what the binaries and the harness use, re-exported here; the
//! rest is `pub(crate)`.

// io_uring, getdents, FIEMAP, RWF_NOWAIT, /proc and PR_SET_PDEATHSIG are
// Linux's: say so at once rather than in a hundred errors further down.
#[cfg(not(target_os = "linux"))]
compile_error!("hashrace runs on Linux only (it uses io_uring, getdents, FIEMAP and /proc)");

// The layers, one folder each, from the bottom. Private: what the binaries and the
// harness use is re-exported below; everything else is the crate's own.
pub mod cache;
mod format;
mod input;
mod read;
mod run;
mod scale;
pub mod strategy;

// The public API. The binaries call `app::main`; the harness (`hash-bench`) and the
// tests use the rest: units and escaping as every line writes them, the data paths
// it measures (hasher, mapped), the results types it reads (output, report, eta), the
// cache it times, and the process-wide limits it opts in to like a binary.
pub use format::{escape, output, report};
pub use input::stdio;
pub use read::{hasher, mapped};
pub use run::{app, eta, limits, units};

pub use error::{Error, ErrorKind};
pub(crate) use hasher::FileDigest;
pub use hasher::READ_BUF_SIZE;
pub use strategy::{Job, Strategy};

// The crate's own paths to its modules, as before the folders (`crate::walk`, ...).
use format::{checkline, quote, tree};
use input::{filter, walk};
use read::{datapath, inflight, room, stamp, striped};
use run::{check, cli, diag, error, exit, generate, progress};
use scale::{filelist, merge, shard};
