//! Process-wide settings a binary opts in to at start-up.
//!
//! Nothing else in the library changes process state: a signal handler or a
//! resource limit belongs to the whole process, so only the program that owns
//! the process may decide on them. Each `hash-*` binary calls [`opt_in`]
//! first thing in `main`; a program that embeds the library and does not
//! gets the same digests, reading every file instead of mapping it, with
//! fewer directory descriptors kept by the walk.

/// What the `hash-*` binaries set up before anything else runs:
/// - the soft limit on open files is raised to the hard limit (the usual soft
///   1024 is a leftover of `select`; the walk keeps up to half of it as open
///   directories, so files are opened relative to their parent);
/// - the `SIGBUS` handler that makes hashing through memory-mapped windows
///   safe against files truncated under the mapping
///   ([`crate::mapped::catch_sigbus`]).
pub fn opt_in() {
    raise_open_file_limit();
    crate::mapped::catch_sigbus();
}

/// Stack reserved for each thread the library starts. Hashing needs little
/// (the deepest frame holds a 64 KiB buffer); reserving less than std's
/// 2 MiB lets many threads start under a low `ulimit -v`.
pub(crate) const THREAD_STACK: usize = 512 * 1024;

/// A builder for the library's threads (see [`THREAD_STACK`]): spawning
/// through it returns an error where `std::thread::spawn` would panic.
pub(crate) fn thread_builder() -> std::thread::Builder {
    std::thread::Builder::new().stack_size(THREAD_STACK)
}

/// Start a scoped thread with [`thread_builder`], unless its stack would not
/// leave room under a `ulimit -v` (`crate::room::leaves_room`): then the
/// error a refused spawn gives, so that a pool starts fewer threads, as it
/// does when the kernel refuses one, instead of taking the last room.
pub(crate) fn spawn_scoped<'scope, F, T>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    f: F,
) -> std::io::Result<std::thread::ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    if !crate::room::leaves_room(THREAD_STACK) {
        return Err(std::io::Error::from_raw_os_error(libc::ENOMEM));
    }
    thread_builder().spawn_scoped(scope, f)
}

/// Raise the soft limit on open files to the hard one; a failure leaves it.
pub fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if let (Some(cur), Some(max)) = (lim.current, lim.maximum) {
        if cur < max {
            lim.current = Some(max);
            let _ = setrlimit(Resource::Nofile, lim);
        }
    }
}

/// Descriptors this process may still open (what it does under a low
/// `ulimit -n` is tested in `crates/testenv/tests/faults.rs`): the soft limit on open files
/// less those open now (counted in `/proc/self/fd`). `None` when either
/// cannot be read, or there is no limit. It reads the limit, never changes
/// it, so the library may ask.
pub(crate) fn free_descriptors() -> Option<usize> {
    use rustix::process::{getrlimit, Resource};
    let limit = getrlimit(Resource::Nofile).current?;
    // (The directory's own descriptor is among those listed.)
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count();
    Some((limit as usize).saturating_sub(open))
}
