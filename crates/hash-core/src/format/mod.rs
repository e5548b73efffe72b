//! GNU lines and what they are made of: the escaping of names, shell quoting, `--check`
//! lines, the `--tree` digest, the writer that puts results in order, and the `--json`
//! document.

pub(crate) mod checkline;
pub mod escape;
pub mod output;
pub(crate) mod quote;
pub mod report;
pub(crate) mod tree;
