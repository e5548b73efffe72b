//! Address space under a `ulimit -v`: what the large, optional allocations
//! of a run may take, so that the small ones still find room.
//!
//! A Rust allocation that fails aborts the process, and a run makes many small
//! ones (paths, batches, output). The large ones it can do without (a thread,
//! a huge-page read buffer, a mapped window, io_uring's read buffers) ask
//! [`leaves_room`] first and do without when told no. The limit is read, never
//! changed, so the library may ask (see [`crate::limits`]).

/// The soft limit on this process's address space (`ulimit -v`), in bytes;
/// `None` when there is none.
pub fn address_space() -> Option<u64> {
    use rustix::process::{getrlimit, Resource};
    getrlimit(Resource::As).current
}

/// Address space that large, optional allocations leave free under a
/// `ulimit -v` (see [`leaves_room`]).
pub const ROOM_KEPT: u64 = 4 * 1024 * 1024;

/// Whether `bytes` more of address space would still leave [`ROOM_KEPT`]
/// under the process's `ulimit -v` (always, without one). Measured need: a
/// hashing thread's 4 MiB read buffer left nothing for the small
/// allocations at 8 MiB above what starting the binary takes.
pub fn leaves_room(bytes: usize) -> bool {
    let Some(limit) = address_space() else {
        return true;
    };
    let Some(used) = address_space_used() else {
        return true;
    };
    used.saturating_add(bytes as u64).saturating_add(ROOM_KEPT) <= limit
}

/// This process's address space in use, in bytes (`/proc/self/statm`).
fn address_space_used() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}
