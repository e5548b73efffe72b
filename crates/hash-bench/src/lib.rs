//! hash-bench: the pieces of hashrace's benchmark harness (`scripts/bench.sh`) that are
//! easier to get right, and to test, in Rust than in shell.
//!
//! The shell script stays the conductor (build, install hyperfine, call one subcommand
//! per step); this crate does everything that needs care or a schema, and the steps pass
//! nothing to each other but the plan's work directory:
//!
//! - [`spec`] and [`gen`]: dataset specs and their deterministic, parallel, idempotent
//!   generation; [`manifest`]: the `sha256sum`-style manifest and its digest.
//! - [`cache`]: page-cache eviction (`posix_fadvise`), residency (`mincore`) and the
//!   "is this filesystem able to go cold" check; [`cgroup`]: a memory cgroup smaller than
//!   the dataset for timed commands, so that the page cache cannot hold it.
//! - [`maxrss`]: peak RSS of a command and of its process tree (hyperfine 1.x does not
//!   record it).
//! - [`datapath`]: the data-path experiment: files hashed mapped, mapped and copied, read,
//!   or read by a second thread, for `scripts/bench-datapath.sh`.
//! - [`refs`]: the reference rows: in-memory SHA-256 ceiling and the read floor.
//! - [`machine`]: what the machine is, for results that travel.
//! - [`plan`]: which programs run on which dataset in which cache state, with exact
//!   commands and a time estimate, from the table of programs in [`plan::programs`];
//!   [`verify`]: the hashers agree before timing; [`race`]: the hyperfine loop.
//! - [`hyperfine`]: reading hyperfine's JSON exports (1.x and `schema_version` 2).
//! - [`results`]: the versioned results schema and its validation; [`collect`]: merging
//!   everything into one results file and the terminal table; [`upgrade`]: older results
//!   files (which leaned on their raw directories) made self-contained.
//! - [`report`]: a sweep's one-page answer (`report.md`, a winner line per workload) and
//!   its charts, from its `results.json` alone; [`layout`]: what `results/` may hold.
//! - [`compare`]: results of several machines or sweeps side by side (Markdown, JSON, and
//!   the generated sections of `results/VERDICT.md`); [`chart`]: their SVG charts.
//! - [`link`]: a network link emulated between pipes (delay, bandwidth cap, byte
//!   counts); [`mount`]: an sshfs mount whose SFTP traffic crosses such a link;
//!   [`location`] and [`net`]: a sweep's data read over such a mount, remounted before
//!   every cold run, each run proved cold or warm by the bytes that crossed.
//! - [`cmd`]: the subcommands of the `hash-bench` binary, each one's arguments and the
//!   function that runs it.

pub mod cache;
pub mod cachefloor;
pub mod cgroup;
pub mod chart;
pub mod cmd;
pub mod collect;
pub mod compare;
pub mod datapath;
pub mod etacheck;
pub mod flip;
pub mod gen;
pub mod hashfloor;
pub mod hyperfine;
pub mod layout;
pub mod link;
pub mod location;
pub mod machine;
pub mod manifest;
pub mod maxrss;
pub mod mount;
pub mod net;
pub mod plan;
pub mod predict;
pub mod progress;
pub mod python;
pub mod race;
pub mod refs;
pub mod report;
pub mod results;
pub mod spec;
pub mod upgrade;
pub mod util;
pub mod verify;
