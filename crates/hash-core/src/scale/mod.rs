//! Scale-out over cluster engines: `--list` and `--files-from`, `--shard K/N` and
//! `--merge`, which give exactly the single-machine output.

pub(crate) mod filelist;
pub(crate) mod merge;
pub(crate) mod shard;
