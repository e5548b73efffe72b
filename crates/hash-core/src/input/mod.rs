//! What a run is asked to hash: the walk of the command-line paths into a sorted plan,
//! `--exclude` and `--one-file-system`, and the standard streams.

pub(crate) mod filter;
pub mod stdio;
pub(crate) mod walk;
