//! The subcommands of the `hash-bench` binary: each one's arguments (a clap `Args`
//! struct) and the function that runs it, grouped by what they serve. They are in the
//! library so that `main.rs` only parses and dispatches.

pub mod bench;
pub mod data;
pub mod helpers;
pub mod measure;
pub mod network;
pub mod sweep;
