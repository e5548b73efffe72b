//! Reading one file into SHA-256: opening safely, reading or mapping (and which wins,
//! measured), the reads kept in flight, the memory a run may take, and the stamps a
//! cached digest depends on.

pub(crate) mod datapath;
pub mod hasher;
pub(crate) mod inflight;
pub mod mapped;
pub(crate) mod room;
pub(crate) mod stamp;
pub(crate) mod striped;
