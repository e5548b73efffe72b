//! The wire format between the parent and a worker process.
//!
//! A request is a job id, flags (follow; keep) and the raw bytes of a path,
//! length-prefixed so that any name survives (no escaping, no UTF-8); an
//! answer is the id and either the digest and size or the error, tagged. Both
//! sides read with `read_exact`, so a truncated message is an error and only a
//! clean end between two messages is the end of input. Kept apart from the
//! processes so the format can be read, and tested, on its own.
//!
//! The first message a worker reads is how it was started ([`Started`]: its
//! data path, buffers, share of the cores and of the files in flight), so a
//! worker's settings come only from its parent, never from an environment.
//!
//! A worker also says, a few times a second, how many more bytes it has fed
//! to SHA-256 ([`write_streamed`]): the parent's progress line then moves
//! through a large file as it does with threads, instead of jumping when the
//! file's answer comes.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::error::ErrorKind;
use crate::hasher::FileDigest;
use crate::stamp::{Held, Stamp};
use crate::strategy::{Job, Outcome};

use super::pool::Started;

/// The first message on a worker's input: how it was started.
pub(super) fn write_started(w: &mut impl Write, how: &Started) -> io::Result<()> {
    let name = how.data_path.name().as_bytes();
    let mut m = Vec::with_capacity(32);
    m.push(name.len() as u8);
    m.extend_from_slice(name);
    m.extend_from_slice(&(how.cores_each as u64).to_le_bytes());
    m.push(u8::from(how.small_buffers));
    m.push(u8::from(how.stamps));
    m.extend_from_slice(&(how.files_each as u64).to_le_bytes());
    m.extend_from_slice(&(how.readers_each as u64).to_le_bytes());
    w.write_all(&m)
}

/// The settings [`write_started`] wrote; an unknown data path or a short
/// message is an error.
pub(super) fn read_started(r: &mut impl Read) -> io::Result<Started> {
    let mut len = [0u8; 1];
    r.read_exact(&mut len)?;
    let mut name = vec![0; usize::from(len[0])];
    r.read_exact(&mut name)?;
    let data_path = std::str::from_utf8(&name)
        .ok()
        .and_then(crate::datapath::DataPath::named)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unknown data path"))?;
    let mut rest = [0u8; 8 + 1 + 1 + 8 + 8];
    r.read_exact(&mut rest)?;
    let number = |at: usize| u64::from_le_bytes(rest[at..at + 8].try_into().unwrap()) as usize;
    Ok(Started {
        data_path,
        cores_each: number(0),
        small_buffers: rest[8] == 1,
        stamps: rest[9] == 1,
        files_each: number(10),
        readers_each: number(18),
    })
}

/// A request: hash this path.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Request {
    pub(super) id: u32,
    pub(super) follow: bool,
    /// The parent knew the file's size when it sent it: hash it whatever its
    /// size, never hand it back ([`write_returned`]).
    pub(super) keep: bool,
    pub(super) path: PathBuf,
}

const FLAG_FOLLOW: u8 = 1;
const FLAG_KEEP: u8 = 2;

pub(super) fn write_request(w: &mut impl Write, id: u32, job: &Job, keep: bool) -> io::Result<()> {
    let path = job.path.as_os_str().as_bytes();
    let len = u32::try_from(path.len()).map_err(|_| io::Error::other("path too long"))?;
    w.write_all(&id.to_le_bytes())?;
    let flags = if job.follow { FLAG_FOLLOW } else { 0 } | if keep { FLAG_KEEP } else { 0 };
    w.write_all(&[flags])?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(path)
}

/// The next request, or `None` at a clean end of input.
pub(super) fn read_request(r: &mut impl Read) -> io::Result<Option<Request>> {
    let mut head = [0u8; 9];
    match r.read_exact(&mut head[..1]) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        other => other?,
    }
    r.read_exact(&mut head[1..])?;
    let id = u32::from_le_bytes(head[0..4].try_into().unwrap());
    let follow = head[4] & FLAG_FOLLOW != 0;
    let keep = head[4] & FLAG_KEEP != 0;
    let len = u32::from_le_bytes(head[5..9].try_into().unwrap()) as usize;
    let mut path = vec![0; len];
    r.read_exact(&mut path)?;
    let path = PathBuf::from(OsStr::from_bytes(&path));
    Ok(Some(Request {
        id,
        follow,
        keep,
        path,
    }))
}

const TAG_OK: u8 = 0;
const TAG_ERRNO: u8 = 1;
const TAG_NOT_REGULAR: u8 = 2;
const TAG_MESSAGE: u8 = 3;
const TAG_STREAMED: u8 = 4;
const TAG_WAITED: u8 = 5;
/// A digest with the file's stamps ([`FileDigest::held`]).
const TAG_OK_HELD: u8 = 6;
/// A file handed back unread, with its size ([`write_returned`]).
const TAG_RETURNED: u8 = 7;

/// The id of a [`Message::Streamed`]: never a job's (the pool has fewer
/// than `u32::MAX` files).
pub(super) const STREAMED_ID: u32 = u32::MAX;

/// What a worker says: an answer about one job, or bytes streamed since it
/// last said so.
#[derive(Debug)]
pub(super) enum Message {
    /// The job `id`'s outcome.
    Answer(u32, Outcome),
    /// This many more bytes went through SHA-256.
    Streamed(u64),
    /// A file just read had to wait for the disk: more workers would help.
    Waited,
    /// Job `id` handed back unread: it has this many bytes (see
    /// [`write_returned`]).
    Returned(u32, u64),
}

/// Hand job `id` back unread: it turned out to be large (`size` bytes)
/// while the worker holds more files, which would wait behind it while
/// other workers may idle. The parent sends it again, knowing its size.
pub(super) fn write_returned(w: &mut impl Write, id: u32, size: u64) -> io::Result<()> {
    w.write_all(&id.to_le_bytes())?;
    w.write_all(&[TAG_RETURNED])?;
    w.write_all(&size.to_le_bytes())
}

/// Tell the parent that a file had to wait for the disk.
pub(super) fn write_waited(w: &mut impl Write) -> io::Result<()> {
    w.write_all(&STREAMED_ID.to_le_bytes())?;
    w.write_all(&[TAG_WAITED])
}

/// Tell the parent that `bytes` more bytes went through SHA-256.
pub(super) fn write_streamed(w: &mut impl Write, bytes: u64) -> io::Result<()> {
    w.write_all(&STREAMED_ID.to_le_bytes())?;
    w.write_all(&[TAG_STREAMED])?;
    w.write_all(&bytes.to_le_bytes())
}

pub(super) fn write_response(w: &mut impl Write, id: u32, outcome: &Outcome) -> io::Result<()> {
    w.write_all(&id.to_le_bytes())?;
    match outcome {
        Ok(d) => {
            w.write_all(&[if d.held.is_some() {
                TAG_OK_HELD
            } else {
                TAG_OK
            }])?;
            w.write_all(&d.digest)?;
            w.write_all(&d.size.to_le_bytes())?;
            match &d.held {
                Some(held) => {
                    w.write_all(&stamp_bytes(&held.opened))?;
                    w.write_all(&stamp_bytes(&held.read))
                }
                None => Ok(()),
            }
        }
        Err(ErrorKind::Io(e)) if e.raw_os_error().is_some() => {
            w.write_all(&[TAG_ERRNO])?;
            w.write_all(&e.raw_os_error().unwrap_or(0).to_le_bytes())
        }
        Err(ErrorKind::NotRegular) => w.write_all(&[TAG_NOT_REGULAR]),
        Err(other) => {
            let mut msg = other.to_string();
            if msg.len() > MAX_MESSAGE {
                let mut end = MAX_MESSAGE;
                while !msg.is_char_boundary(end) {
                    end -= 1;
                }
                msg.truncate(end);
            }
            w.write_all(&[TAG_MESSAGE])?;
            w.write_all(&(msg.len() as u32).to_le_bytes())?;
            w.write_all(msg.as_bytes())
        }
    }
}

/// The longest error message on the wire, in bytes (longer ones are cut).
const MAX_MESSAGE: usize = 64 * 1024;

/// Bytes of a [`Stamp`] on the wire: five little-endian 64-bit fields.
const STAMP_BYTES: usize = 40;

fn stamp_bytes(s: &Stamp) -> [u8; STAMP_BYTES] {
    let mut out = [0u8; STAMP_BYTES];
    let fields = [s.size, s.mtime_ns as u64, s.ctime_ns as u64, s.ino, s.dev];
    for (chunk, f) in out.chunks_exact_mut(8).zip(fields) {
        chunk.copy_from_slice(&f.to_le_bytes());
    }
    out
}

fn stamp_of(b: &[u8]) -> Stamp {
    let f = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    Stamp {
        size: f(0),
        mtime_ns: f(1) as i64,
        ctime_ns: f(2) as i64,
        ino: f(3),
        dev: f(4),
    }
}

/// The next message, or `None` at a clean end of input.
pub(super) fn read_message(r: &mut impl Read) -> io::Result<Option<Message>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head[..1]) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        other => other?,
    }
    r.read_exact(&mut head[1..])?;
    let id = u32::from_le_bytes(head[0..4].try_into().unwrap());
    let outcome = match head[4] {
        tag @ (TAG_OK | TAG_OK_HELD) => {
            let mut body = [0u8; 40];
            r.read_exact(&mut body)?;
            let held = if tag == TAG_OK_HELD {
                let mut stamps = [0u8; 2 * STAMP_BYTES];
                r.read_exact(&mut stamps)?;
                let (opened, read) = stamps.split_at(STAMP_BYTES);
                Some(Held {
                    opened: stamp_of(opened),
                    read: stamp_of(read),
                })
            } else {
                None
            };
            Ok(FileDigest {
                digest: body[..32].try_into().unwrap(),
                size: u64::from_le_bytes(body[32..].try_into().unwrap()),
                held,
            })
        }
        TAG_ERRNO => {
            let mut code = [0u8; 4];
            r.read_exact(&mut code)?;
            Err(ErrorKind::Io(io::Error::from_raw_os_error(
                i32::from_le_bytes(code),
            )))
        }
        TAG_NOT_REGULAR => Err(ErrorKind::NotRegular),
        TAG_RETURNED if id != STREAMED_ID => {
            let mut n = [0u8; 8];
            r.read_exact(&mut n)?;
            return Ok(Some(Message::Returned(id, u64::from_le_bytes(n))));
        }
        TAG_WAITED if id == STREAMED_ID => return Ok(Some(Message::Waited)),
        TAG_STREAMED if id == STREAMED_ID => {
            let mut n = [0u8; 8];
            r.read_exact(&mut n)?;
            return Ok(Some(Message::Streamed(u64::from_le_bytes(n))));
        }
        TAG_MESSAGE => {
            let mut len = [0u8; 4];
            r.read_exact(&mut len)?;
            let len = u32::from_le_bytes(len) as usize;
            // Longer is no message a worker writes: a corrupt length, which
            // would otherwise be waited for as the rest of a message.
            if len > MAX_MESSAGE {
                return Err(io::Error::other(format!("error message of {len} bytes")));
            }
            let mut msg = vec![0; len];
            r.read_exact(&mut msg)?;
            Err(ErrorKind::Io(io::Error::other(
                String::from_utf8_lossy(&msg).into_owned(),
            )))
        }
        tag => return Err(io::Error::other(format!("bad response tag {tag}"))),
    };
    Ok(Some(Message::Answer(id, outcome)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workers_settings_arrive_as_they_were_sent() {
        use crate::datapath::DataPath;
        for data_path in [
            DataPath::Auto,
            DataPath::Map,
            DataPath::MapFault,
            DataPath::Read,
        ] {
            let how = Started {
                data_path,
                cores_each: 3,
                small_buffers: data_path == DataPath::Map,
                stamps: data_path != DataPath::Map,
                files_each: 70_000,
                readers_each: 1 << 33,
            };
            let mut wire = Vec::new();
            write_started(&mut wire, &how).unwrap();
            // A request may follow at once: the settings end where they should.
            write_request(&mut wire, 9, &Job::new(PathBuf::from("a"), 0, false), false).unwrap();
            let mut r = &wire[..];
            assert_eq!(read_started(&mut r).unwrap(), how);
            assert_eq!(read_request(&mut r).unwrap().unwrap().id, 9);
            for cut in 0..1 + data_path.name().len() + 26 {
                assert!(read_started(&mut &wire[..cut]).is_err(), "cut at {cut}");
            }
        }
        let mut bad = Vec::new();
        bad.push(4);
        bad.extend_from_slice(b"fast");
        bad.extend_from_slice(&[0; 26]);
        assert!(read_started(&mut &bad[..]).is_err());
    }

    /// The next message, which must be an answer.
    fn read_response(r: &mut impl Read) -> io::Result<Option<(u32, Outcome)>> {
        Ok(read_message(r)?.map(|m| match m {
            Message::Answer(id, o) => (id, o),
            other => panic!("{other:?}, expected an answer"),
        }))
    }

    #[test]
    fn streamed_counts_interleave_with_answers() {
        let mut wire = Vec::new();
        write_streamed(&mut wire, 5 << 30).unwrap();
        let ok = FileDigest {
            digest: [9; 32],
            size: 3,
            held: None,
        };
        write_response(&mut wire, 4, &Ok(ok)).unwrap();
        write_streamed(&mut wire, 1).unwrap();
        write_waited(&mut wire).unwrap();
        let mut r = &wire[..];
        assert!(
            matches!(read_message(&mut r).unwrap(), Some(Message::Streamed(n)) if n == 5 << 30)
        );
        assert!(
            matches!(read_message(&mut r).unwrap(), Some(Message::Answer(4, Ok(d))) if d == ok)
        );
        assert!(matches!(
            read_message(&mut r).unwrap(),
            Some(Message::Streamed(1))
        ));
        assert!(matches!(
            read_message(&mut r).unwrap(),
            Some(Message::Waited)
        ));
        assert!(read_message(&mut r).unwrap().is_none());
        // The streamed tag on a job's id is a broken stream, not a count.
        let mut bad = Vec::new();
        bad.extend_from_slice(&7u32.to_le_bytes());
        bad.push(TAG_STREAMED);
        bad.extend_from_slice(&1u64.to_le_bytes());
        assert!(read_message(&mut &bad[..]).is_err());
    }

    #[test]
    fn requests_round_trip_with_raw_bytes() {
        let path = PathBuf::from(OsStr::from_bytes(b"d/\xff\nname\\x"));
        let job = Job::new(path.clone(), 3, true);
        let unfollowed = Job {
            follow: false,
            ..job.clone()
        };
        let mut wire = Vec::new();
        for (id, job, keep) in [
            (7, &job, false),
            (8, &unfollowed, false),
            (9, &job, true),
            (10, &unfollowed, true),
        ] {
            write_request(&mut wire, id, job, keep).unwrap();
        }
        let mut r = &wire[..];
        for (id, follow, keep) in [
            (7, true, false),
            (8, false, false),
            (9, true, true),
            (10, false, true),
        ] {
            assert_eq!(
                read_request(&mut r).unwrap(),
                Some(Request {
                    id,
                    follow,
                    keep,
                    path: path.clone()
                })
            );
        }
        assert_eq!(read_request(&mut r).unwrap(), None);
    }

    #[test]
    fn a_returned_file_round_trips_among_answers() {
        let mut wire = Vec::new();
        write_returned(&mut wire, 3, 5 << 30).unwrap();
        write_waited(&mut wire).unwrap();
        let mut r = &wire[..];
        assert!(matches!(
            read_message(&mut r).unwrap(),
            Some(Message::Returned(3, n)) if n == 5 << 30
        ));
        assert!(matches!(
            read_message(&mut r).unwrap(),
            Some(Message::Waited)
        ));
        // Cut anywhere, it is an error, never a clean end.
        for cut in 1..wire.len() - 5 {
            assert!(read_message(&mut &wire[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// The parent reads answers as they arrive and takes a short read as
    /// "more to come": a cut message must say `UnexpectedEof` (wait), and a
    /// corrupt length must not (it would be waited for forever).
    #[test]
    fn a_cut_message_waits_and_a_corrupt_length_does_not() {
        let long = ErrorKind::Io(io::Error::other("é".repeat(MAX_MESSAGE)));
        let mut wire = Vec::new();
        write_response(&mut wire, 7, &Err(long)).unwrap();
        // Cut to the most the wire takes, at a character's boundary.
        let Some(Message::Answer(7, Err(e))) = read_message(&mut &wire[..]).unwrap() else {
            panic!("not the answer written");
        };
        let text = e.to_string();
        assert!(
            text.len() <= MAX_MESSAGE && text.len() > MAX_MESSAGE - 2,
            "{}",
            text.len()
        );
        assert!(text.chars().all(|c| c == 'é'));
        for cut in [6, 9, 10, wire.len() - 1] {
            let err = read_message(&mut &wire[..cut]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
        let mut corrupt = wire[..5].to_vec();
        corrupt.extend_from_slice(&u32::MAX.to_le_bytes());
        let err = read_message(&mut &corrupt[..]).unwrap_err();
        assert_ne!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_truncated_request_is_an_error_not_a_clean_end() {
        let job = Job::new(PathBuf::from("abc"), 0, false);
        let mut wire = Vec::new();
        write_request(&mut wire, 1, &job, false).unwrap();
        for cut in 1..wire.len() {
            assert!(read_request(&mut &wire[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn responses_round_trip_every_kind() {
        let ok = FileDigest {
            digest: [0xab; 32],
            size: 1 << 40,
            held: None,
        };
        // Every field distinct, negative times and the top bit set too.
        let stamp = |k: u64| Stamp {
            size: k,
            mtime_ns: -(k as i64) - 1,
            ctime_ns: k as i64 * 3,
            ino: u64::MAX - k,
            dev: k << 40,
        };
        let held = FileDigest {
            held: Some(Held {
                opened: stamp(5),
                read: stamp(7),
            }),
            ..ok
        };
        let mut wire = Vec::new();
        write_response(&mut wire, 1, &Ok(ok)).unwrap();
        write_response(&mut wire, 5, &Ok(held)).unwrap();
        write_response(
            &mut wire,
            2,
            &Err(io::Error::from_raw_os_error(libc::EACCES).into()),
        )
        .unwrap();
        write_response(&mut wire, 3, &Err(ErrorKind::NotRegular)).unwrap();
        write_response(&mut wire, 4, &Err(io::Error::other("odd").into())).unwrap();
        let mut r = &wire[..];
        assert_eq!(read_response(&mut r).unwrap().unwrap().1.unwrap(), ok);
        assert_eq!(read_response(&mut r).unwrap().unwrap().1.unwrap(), held);
        let (id, e) = read_response(&mut r).unwrap().unwrap();
        assert_eq!(id, 2);
        assert_eq!(e.unwrap_err().to_string(), "Permission denied");
        assert!(matches!(
            read_response(&mut r).unwrap().unwrap().1,
            Err(ErrorKind::NotRegular)
        ));
        assert_eq!(
            read_response(&mut r)
                .unwrap()
                .unwrap()
                .1
                .unwrap_err()
                .to_string(),
            "odd"
        );
        assert!(read_response(&mut r).unwrap().is_none());
    }

    #[test]
    fn an_unknown_tag_is_an_error() {
        let wire = [1, 0, 0, 0, 99];
        assert!(read_response(&mut &wire[..]).is_err());
    }
}
