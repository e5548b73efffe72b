//! The memory a read goes into: one huge-page buffer per hashing worker, small
//! ones for the extra readers a pool adds while files wait for the disk.

use std::io;

use super::READ_BUF_SIZE;

/// Alignment and size of the allocation behind a [`ReadBuf`]: one huge page.
pub(super) const BUF_ALLOC: usize = 2 * 1024 * 1024;

/// A worker's reusable read buffer of [`READ_BUF_SIZE`] bytes.
///
/// Why not a plain `Vec`: measured on this project's VMs, `read()` into an
/// ordinary 256 KiB heap buffer ran at 1.2–1.8 GiB/s from page cache for the
/// whole run in some processes and ~5 GiB/s in others, depending only on which
/// memory the allocator handed out (guest memory returned to the host comes
/// back slower). A 2 MiB-aligned allocation advised with `MADV_HUGEPAGE` ran at
/// ~5 GiB/s every time, so every worker gets one of those (2 MiB each).
pub struct ReadBuf {
    /// An anonymous mapping of two huge pages' worth, so that one whole
    /// 2 MiB-aligned huge page lies inside it whatever address it got.
    map: memmap2::MmapMut,
    /// Offset of that aligned page in `map`.
    start: usize,
}

impl ReadBuf {
    /// Allocate a buffer (zeroed, as every anonymous mapping is); fails
    /// when the address space is exhausted, or nearly (a low `ulimit -v`:
    /// see `crate::room::leaves_room`).
    pub fn new() -> io::Result<ReadBuf> {
        if !crate::room::leaves_room(2 * BUF_ALLOC) {
            return Err(io::Error::from_raw_os_error(libc::ENOMEM));
        }
        let map = memmap2::MmapOptions::new().len(2 * BUF_ALLOC).map_anon()?;
        let start = (BUF_ALLOC - map.as_ptr() as usize % BUF_ALLOC) % BUF_ALLOC;
        // Failing only costs speed: it is advice.
        let _ = map.advise_range(memmap2::Advice::HugePage, start, BUF_ALLOC);
        Ok(ReadBuf { map, start })
    }
}

impl std::fmt::Debug for ReadBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBuf").finish_non_exhaustive()
    }
}

impl std::ops::Deref for ReadBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.start..self.start + READ_BUF_SIZE]
    }
}

impl std::ops::DerefMut for ReadBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.start..self.start + READ_BUF_SIZE]
    }
}

/// A fresh read buffer of a hashing worker: a [`ReadBuf`], or a small one
/// where no address space is left for it (a low `ulimit -v`): slower, never
/// wrong.
pub(crate) fn new_buffer() -> Buffer {
    ReadBuf::new().map_or_else(|_| Buffer::small(), Buffer::Huge)
}

/// Size of the buffer of a reader added only to keep more reads in flight
/// (see [`Buffer::Small`]).
pub(crate) const SMALL_BUF_SIZE: usize = 64 * 1024;

/// A worker's read buffer: the huge-page one of a hashing worker, or a small
/// plain one for the extra readers a pool adds while files wait for the disk.
/// Those only matter for small cold files, where the disk, not the copy, is
/// the limit; 64 of them cost 4 MiB instead of 128.
#[derive(Debug)]
pub enum Buffer {
    /// A `ReadBuf` (2 MiB of memory, [`READ_BUF_SIZE`] used).
    Huge(ReadBuf),
    /// `SMALL_BUF_SIZE` bytes on the heap.
    Small(Box<[u8]>),
}

impl Buffer {
    /// A small buffer.
    pub fn small() -> Buffer {
        Buffer::Small(vec![0; SMALL_BUF_SIZE].into_boxed_slice())
    }
}

impl std::ops::Deref for Buffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buffer::Huge(b) => b,
            Buffer::Small(b) => b,
        }
    }
}

impl std::ops::DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Buffer::Huge(b) => b,
            Buffer::Small(b) => b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_buffer_is_zeroed_and_starts_a_huge_page() {
        for _ in 0..4 {
            let mut buf = ReadBuf::new().unwrap();
            assert_eq!(buf.len(), READ_BUF_SIZE);
            assert_eq!(buf.as_ptr() as usize % (2 << 20), 0, "2 MiB-aligned");
            assert!(buf.iter().all(|&b| b == 0));
            buf.fill(7); // writable to the end
            assert_eq!(buf[READ_BUF_SIZE - 1], 7);
        }
    }

    #[test]
    fn read_buffers_are_zeroed_and_exactly_read_buf_size() {
        let mut b = new_buffer();
        assert_eq!(b.len(), READ_BUF_SIZE);
        assert!(b.iter().all(|&x| x == 0));
        b[READ_BUF_SIZE - 1] = 7;
        assert_eq!(b[READ_BUF_SIZE - 1], 7);
    }
}
