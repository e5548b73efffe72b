//! A network link emulated between two pairs of pipes: what `hash-bench mount` puts
//! between the `sshfs` client and the SFTP server to make one machine look like a LAN or
//! a WAN.
//!
//! Each direction is relayed on its own, so a slow direction never holds up the other.
//! An unshaped direction (the `raw` profile) is one thread that `splice`s from pipe to
//! pipe: the pages move, nothing is copied through user space, and no clock is read, so
//! the relay costs next to nothing. A shaped direction is two threads:
//!
//! - the reader reads what arrives (up to [`CHUNK`] bytes a read), lets it leave at the
//!   pace of a token bucket (the sender's line rate: the reader sleeps only while the
//!   bucket is in debt, which also bounds what is in flight), and queues it with its due
//!   time, the instant it left plus the one-way delay;
//! - the writer takes the queue in order and delivers each chunk at its due time.
//!
//! The delay is thus a property of each chunk, not a sleep in the reader: a stream keeps
//! its full rate however long the delay is, and a small request waits for the delay
//! only, as on a real link. Bytes are counted as they are delivered, in [`Counters`] that
//! can be read while the link runs.

use std::fs::File;
use std::io::{self, Read, Write};
use std::num::NonZeroU64;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The largest read (or splice) the relay does at once.
pub const CHUNK: usize = 256 * 1024;

/// How many bytes the token bucket lets through at once after an idle spell: small, so
/// a capped link never runs faster than its cap for long.
const BURST: f64 = 64.0 * 1024.0;

/// How many chunks may wait in one direction's queue (the reader blocks beyond): only
/// reached with a delay and no rate cap, where nothing else bounds what is in flight.
const QUEUE_CHUNKS: usize = 1024;

/// A named link, after what it models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// No shaping: the relay only passes bytes through (and counts them).
    Raw,
    /// 1 GbE: 0.2 ms round trip, about 117 MiB/s each way.
    Lan,
    /// Office to cloud: 20 ms round trip, 100 Mbit/s each way.
    Wan,
}

impl Profile {
    /// The name, as given on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Raw => "raw",
            Profile::Lan => "lan",
            Profile::Wan => "wan",
        }
    }

    /// What the profile stands for.
    pub fn models(self) -> &'static str {
        match self {
            Profile::Raw => "no shaping",
            Profile::Lan => "1 GbE",
            Profile::Wan => "office to cloud",
        }
    }

    /// The profile's delay and rate.
    pub fn shape(self) -> Shape {
        match self {
            Profile::Raw => Shape::RAW,
            // 1 Gbit/s less Ethernet, IP and TCP framing carries about 117 MiB/s of data.
            Profile::Lan => Shape {
                delay: Duration::from_micros(100),
                rate: Some(117 << 20),
            },
            Profile::Wan => Shape {
                delay: Duration::from_millis(10),
                rate: Some(100_000_000 / 8),
            },
        }
    }
}

/// What a direction of the link does to the bytes that cross it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// One-way delay, added in each direction (the round trip gains twice this).
    pub delay: Duration,
    /// Bandwidth cap in each direction, in bytes per second; `None`: uncapped.
    pub rate: Option<u64>,
}

impl Shape {
    /// No delay, no cap.
    pub const RAW: Shape = Shape {
        delay: Duration::ZERO,
        rate: None,
    };

    /// Whether the link only passes bytes through.
    pub fn is_raw(&self) -> bool {
        self.delay.is_zero() && self.rate.is_none()
    }

    /// This shape with `delay_ms` (one-way) and `rate_mibps` put in place of its own
    /// figures where given. A rate of 0 means uncapped.
    pub fn with_overrides(self, delay_ms: Option<f64>, rate_mibps: Option<f64>) -> Shape {
        let mut s = self;
        if let Some(ms) = delay_ms {
            s.delay = Duration::from_secs_f64(ms.max(0.0) / 1000.0);
        }
        if let Some(mibps) = rate_mibps {
            s.rate = (mibps > 0.0).then_some((mibps * 1_048_576.0) as u64);
        }
        s
    }
}

/// The figures of a link, as results record them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinkFigures {
    /// The profile the link started from: `raw`, `lan` or `wan`.
    pub profile: String,
    /// What that profile models ("1 GbE", "office to cloud", "no shaping").
    pub models: String,
    /// Whether `--delay-ms` or `--rate-mibps` replaced a figure of the profile.
    pub overridden: bool,
    /// Delay added in each direction, in milliseconds.
    pub one_way_delay_ms: f64,
    /// Round-trip time the link adds (twice the one-way delay), in milliseconds.
    pub rtt_ms: f64,
    /// Bandwidth cap in each direction, in bytes per second; `null`: uncapped.
    pub rate_bytes_per_sec: Option<u64>,
    /// The same cap in MiB/s, for people; `null`: uncapped.
    pub rate_mibps: Option<f64>,
}

impl LinkFigures {
    /// The figures of `shape`, which started as `profile`.
    pub fn new(profile: Profile, shape: Shape) -> LinkFigures {
        let one_way = shape.delay.as_secs_f64() * 1000.0;
        LinkFigures {
            profile: profile.name().into(),
            models: profile.models().into(),
            overridden: shape != profile.shape(),
            one_way_delay_ms: one_way,
            rtt_ms: 2.0 * one_way,
            rate_bytes_per_sec: shape.rate,
            rate_mibps: shape.rate.map(|r| r as f64 / 1_048_576.0),
        }
    }
}

/// Bytes delivered each way so far.
#[derive(Debug, Default)]
pub struct Counters {
    /// From the client to the server (requests, written data).
    pub to_server: AtomicU64,
    /// From the server to the client (replies, read data).
    pub to_client: AtomicU64,
    /// Of `to_client`, the file data: the payload of SFTP `SSH_FXP_DATA` replies
    /// (counted on shaped links only, whose relay sees the bytes; `raw` splices them).
    pub to_client_data: AtomicU64,
}

impl Counters {
    /// `(to_server, to_client)` now.
    pub fn snapshot(&self) -> (u64, u64) {
        (
            self.to_server.load(Ordering::Relaxed),
            self.to_client.load(Ordering::Relaxed),
        )
    }
}

/// One side's two pipe ends, as the relay sees them.
#[derive(Debug)]
pub struct Side {
    /// What this side sends arrives here (the read end of its output pipe).
    pub from: OwnedFd,
    /// What is delivered to this side goes here (the write end of its input pipe).
    pub to: OwnedFd,
}

/// A running link. Each direction ends when its input reaches end of file (or its
/// output is closed), closing its output in turn.
#[derive(Debug)]
pub struct Link {
    counters: Arc<Counters>,
    threads: Vec<JoinHandle<io::Result<()>>>,
}

/// Which way a direction goes, to pick its counter.
#[derive(Debug, Clone, Copy)]
enum Way {
    ToServer,
    ToClient,
}

impl Way {
    fn counter(self, c: &Counters) -> &AtomicU64 {
        match self {
            Way::ToServer => &c.to_server,
            Way::ToClient => &c.to_client,
        }
    }
}

impl Link {
    /// Start relaying between `client` and `server` with `shape` in each direction.
    pub fn start(shape: Shape, client: Side, server: Side) -> io::Result<Link> {
        let counters = Arc::new(Counters::default());
        let mut threads = Vec::new();
        let up = Direction {
            shape,
            from: client.from,
            to: server.to,
            counters: counters.clone(),
            way: Way::ToServer,
        };
        let down = Direction {
            shape,
            from: server.from,
            to: client.to,
            counters: counters.clone(),
            way: Way::ToClient,
        };
        up.spawn(&mut threads)?;
        down.spawn(&mut threads)?;
        Ok(Link { counters, threads })
    }

    /// The byte counters, live.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// How many threads relay (one per raw direction, two per shaped one).
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Wait until both directions have ended; the first error of any of them.
    pub fn join(self) -> io::Result<()> {
        let mut result = Ok(());
        for t in self.threads {
            let r = t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a relay thread panicked")));
            if result.is_ok() {
                result = r;
            }
        }
        result
    }
}

/// One direction of the link, before it runs.
struct Direction {
    shape: Shape,
    from: OwnedFd,
    to: OwnedFd,
    counters: Arc<Counters>,
    way: Way,
}

impl Direction {
    fn spawn(self, threads: &mut Vec<JoinHandle<io::Result<()>>>) -> io::Result<()> {
        let name = |part: &str| format!("link-{:?}-{part}", self.way);
        if self.shape.is_raw() {
            let t = std::thread::Builder::new()
                .name(name("relay"))
                .spawn(move || pass_through(self.from, self.to, &self.counters, self.way))?;
            threads.push(t);
            return Ok(());
        }
        let (tx, rx) = mpsc::sync_channel::<(Instant, Vec<u8>)>(QUEUE_CHUNKS);
        let (shape, from) = (self.shape, self.from);
        let reader = std::thread::Builder::new()
            .name(name("reader"))
            .spawn(move || read_paced(from, shape, tx))?;
        threads.push(reader);
        let (to, counters, way) = (self.to, self.counters, self.way);
        let writer = std::thread::Builder::new()
            .name(name("writer"))
            .spawn(move || deliver_due(rx, to, &counters, way))?;
        threads.push(writer);
        Ok(())
    }
}

/// Move bytes from `from` to `to` as they come: `splice` from pipe to pipe, or a plain
/// copy if either end is not a pipe.
fn pass_through(from: OwnedFd, to: OwnedFd, counters: &Counters, way: Way) -> io::Result<()> {
    use rustix::pipe::{splice, SpliceFlags};
    let counter = way.counter(counters);
    let mut moved_any = false;
    loop {
        match splice(&from, None, &to, None, CHUNK * 4, SpliceFlags::MOVE) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                moved_any = true;
                counter.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::INVAL) if !moved_any => return copy(from, to, counter),
            Err(rustix::io::Errno::PIPE) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// One `read` into `buf`, retried when a signal interrupts it; 0 at the end.
fn read_some(from: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match from.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            res => return res,
        }
    }
}

/// The fallback of [`pass_through`]: read and write through one buffer.
fn copy(from: OwnedFd, to: OwnedFd, counter: &AtomicU64) -> io::Result<()> {
    let (mut from, mut to) = (File::from(from), File::from(to));
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match read_some(&mut from, &mut buf)? {
            0 => return Ok(()),
            n => n,
        };
        match to.write_all(&buf[..n]) {
            Ok(()) => counter.fetch_add(n as u64, Ordering::Relaxed),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e),
        };
    }
}

/// The reader of a shaped direction: read, let the token bucket say when the bytes
/// leave, queue them due one delay later.
fn read_paced(
    from: OwnedFd,
    shape: Shape,
    queue: mpsc::SyncSender<(Instant, Vec<u8>)>,
) -> io::Result<()> {
    let mut from = File::from(from);
    let mut bucket = shape.rate.map(TokenBucket::new);
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match read_some(&mut from, &mut buf)? {
            0 => return Ok(()),
            n => n,
        };
        let now = Instant::now();
        let leaves = bucket.as_mut().map_or(now, |b| b.take(n, now));
        if queue
            .send((leaves + shape.delay, buf[..n].to_vec()))
            .is_err()
        {
            // The writer has stopped: its side closed.
            return Ok(());
        }
        sleep_until(leaves);
    }
}

/// The writer of a shaped direction: deliver each chunk at its due time, in order.
fn deliver_due(
    queue: mpsc::Receiver<(Instant, Vec<u8>)>,
    to: OwnedFd,
    counters: &Counters,
    way: Way,
) -> io::Result<()> {
    // Sub-millisecond delays need the timer to fire on time, not up to 50 µs late.
    let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
    let mut to = File::from(to);
    let counter = way.counter(counters);
    let mut frames = SftpFrames::default();
    for (due, bytes) in queue {
        sleep_until(due);
        match to.write_all(&bytes) {
            Ok(()) => {
                if let Way::ToClient = way {
                    let data = frames.data_in(&bytes);
                    counters.to_client_data.fetch_add(data, Ordering::Relaxed);
                }
                counter.fetch_add(bytes.len() as u64, Ordering::Relaxed)
            }
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e),
        };
    }
    Ok(())
}

/// SFTP's packets as they stream by: `uint32 length`, then `length` bytes whose first
/// is the type. An `SSH_FXP_DATA` reply (type 103) is `type, uint32 id, string data`:
/// its file data is `length - 9` bytes. Used to tell file data from the protocol's own
/// bytes (handles, attributes, statuses), which a run over a warm mount still moves.
#[derive(Debug, Default)]
struct SftpFrames {
    /// The header of the packet being read (length and type), and how much of it came.
    header: [u8; 5],
    have: usize,
    /// Bytes of the current packet still to pass.
    skip: u64,
}

/// `SSH_FXP_DATA`.
const FXP_DATA: u8 = 103;

impl SftpFrames {
    /// File data in the packets whose header is in `bytes`.
    fn data_in(&mut self, mut bytes: &[u8]) -> u64 {
        let mut data = 0;
        while !bytes.is_empty() {
            if self.skip > 0 {
                let k = self.skip.min(bytes.len() as u64);
                self.skip -= k;
                bytes = &bytes[k as usize..];
                continue;
            }
            let k = (5 - self.have).min(bytes.len());
            self.header[self.have..self.have + k].copy_from_slice(&bytes[..k]);
            self.have += k;
            bytes = &bytes[k..];
            if self.have == 5 {
                let len = u32::from_be_bytes([
                    self.header[0],
                    self.header[1],
                    self.header[2],
                    self.header[3],
                ]);
                if self.header[4] == FXP_DATA && len >= 9 {
                    data += u64::from(len) - 9;
                }
                // The type byte is part of the length.
                self.skip = u64::from(len.saturating_sub(1));
                self.have = 0;
            }
        }
        data
    }
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// A token bucket that may go into debt: a chunk always leaves whole, and the instant
/// its last byte leaves is when the debt it made is paid back.
#[derive(Debug)]
struct TokenBucket {
    rate: f64,
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    fn new(rate: u64) -> TokenBucket {
        TokenBucket {
            rate: rate.max(1) as f64,
            tokens: BURST,
            at: Instant::now(),
        }
    }

    /// Take `n` bytes at `now`; the instant they have all left.
    fn take(&mut self, n: usize, now: Instant) -> Instant {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + earned).min(BURST) - n as f64;
        self.at = now;
        if self.tokens >= 0.0 {
            now
        } else {
            now + Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

/// The two ends of a pipe as owned descriptors (close-on-exec), with its capacity raised
/// to `size` where the kernel allows (a larger pipe means fewer wake-ups per MiB).
pub fn pipe(size: usize) -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = io::pipe()?;
    let _ = rustix::pipe::fcntl_setpipe_size(w.as_fd(), size);
    Ok((OwnedFd::from(r), OwnedFd::from(w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    /// A link in memory: the test's ends of the client's and the server's pipes.
    struct Ends {
        link: Link,
        client_out: File,
        client_in: File,
        server_out: File,
        server_in: File,
    }

    fn start(shape: Shape) -> Ends {
        let (c_from, client_out) = pipe(1 << 20).unwrap();
        let (client_in, c_to) = pipe(1 << 20).unwrap();
        let (s_from, server_out) = pipe(1 << 20).unwrap();
        let (server_in, s_to) = pipe(1 << 20).unwrap();
        let client = Side {
            from: c_from,
            to: c_to,
        };
        let server = Side {
            from: s_from,
            to: s_to,
        };
        Ends {
            link: Link::start(shape, client, server).unwrap(),
            client_out: client_out.into(),
            client_in: client_in.into(),
            server_out: server_out.into(),
            server_in: server_in.into(),
        }
    }

    fn send(mut to: File, bytes: Vec<u8>) -> thread::JoinHandle<()> {
        thread::spawn(move || to.write_all(&bytes).unwrap())
    }

    fn receive(mut from: File) -> thread::JoinHandle<Vec<u8>> {
        thread::spawn(move || {
            let mut v = Vec::new();
            from.read_to_end(&mut v).unwrap();
            v
        })
    }

    fn relays_every_byte(shape: Shape) {
        let e = start(shape);
        let up = testenv::pattern(3 << 20);
        let down = testenv::pattern((5 << 20) + 17);
        let sent_up = send(e.client_out, up.clone());
        let sent_down = send(e.server_out, down.clone());
        let got_up = receive(e.server_in);
        let got_down = receive(e.client_in);
        sent_up.join().unwrap();
        sent_down.join().unwrap();
        // Both writers closed their ends: each direction ends, and closes its output.
        assert!(got_up.join().unwrap() == up, "client to server altered");
        assert!(got_down.join().unwrap() == down, "server to client altered");
        let counters = e.link.counters().clone();
        e.link.join().unwrap();
        assert_eq!(counters.snapshot(), (up.len() as u64, down.len() as u64));
    }

    #[test]
    fn sftp_data_is_told_from_the_protocol_however_the_stream_is_cut() {
        // A DATA reply of 10 bytes of file data, a STATUS reply, another DATA of 3.
        let packet = |typ: u8, body: &[u8]| {
            let mut p = ((body.len() + 1) as u32).to_be_bytes().to_vec();
            p.push(typ);
            p.extend_from_slice(body);
            p
        };
        let data = |n: usize| {
            let mut b = vec![0, 0, 0, 7];
            b.extend_from_slice(&(n as u32).to_be_bytes());
            b.extend(std::iter::repeat_n(0xAB, n));
            b
        };
        let mut stream = packet(FXP_DATA, &data(10));
        stream.extend(packet(101, &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]));
        stream.extend(packet(FXP_DATA, &data(3)));
        for cut in 1..stream.len() {
            let mut f = SftpFrames::default();
            let total: u64 = stream.chunks(cut).map(|c| f.data_in(c)).sum();
            assert_eq!(total, 13, "chunks of {cut}");
        }
    }

    #[test]
    fn raw_relays_every_byte_unchanged_and_counts_it() {
        relays_every_byte(Shape::RAW);
    }

    #[test]
    fn shaped_relays_every_byte_unchanged_and_counts_it() {
        relays_every_byte(Shape {
            delay: Duration::from_millis(1),
            rate: Some(256 << 20),
        });
    }

    #[test]
    fn a_round_trip_takes_at_least_twice_the_delay() {
        let mut e = start(Shape {
            delay: Duration::from_millis(50),
            rate: None,
        });
        // The server echoes what it gets.
        let (mut server_in, mut server_out) = (e.server_in, e.server_out);
        let echo = thread::spawn(move || {
            let mut buf = [0u8; 64];
            let n = server_in.read(&mut buf).unwrap();
            server_out.write_all(&buf[..n]).unwrap();
        });
        let start = Instant::now();
        e.client_out.write_all(b"ping").unwrap();
        let mut reply = [0u8; 4];
        e.client_in.read_exact(&mut reply).unwrap();
        let took = start.elapsed();
        echo.join().unwrap();
        assert_eq!(&reply, b"ping");
        assert!(took >= Duration::from_millis(100), "round trip in {took:?}");
    }

    #[test]
    fn the_rate_cap_holds_over_megabytes() {
        let e = start(Shape {
            delay: Duration::ZERO,
            rate: Some(8 << 20),
        });
        let data = testenv::pattern(4 << 20);
        let start = Instant::now();
        let sent = send(e.client_out, data.clone());
        let got = receive(e.server_in).join().unwrap();
        let took = start.elapsed();
        sent.join().unwrap();
        assert!(got == data);
        // 4 MiB at 8 MiB/s is 0.5 s, less the bucket's burst.
        assert!(took >= Duration::from_millis(450), "4 MiB in {took:?}");
    }

    #[test]
    fn raw_is_a_plain_pass_through() {
        assert!(Profile::Raw.shape().is_raw());
        assert!(!Profile::Lan.shape().is_raw());
        assert!(Profile::Wan
            .shape()
            .with_overrides(Some(0.0), Some(0.0))
            .is_raw());
        let e = start(Shape::RAW);
        // One splicing thread per direction, no reader/writer pair, no queue, no clock.
        assert_eq!(e.link.threads(), 2);
        assert_eq!(start(Profile::Lan.shape()).link.threads(), 4);
    }

    #[test]
    fn the_token_bucket_spends_its_burst_then_paces() {
        let t0 = Instant::now();
        let mut b = TokenBucket {
            rate: 1_048_576.0,
            tokens: BURST,
            at: t0,
        };
        assert_eq!(b.take(65_536, t0), t0, "the burst leaves at once");
        let leaves = b.take(1_048_576, t0);
        assert_eq!(leaves - t0, Duration::from_secs(1));
        // Half a second later half the debt is paid: the next byte waits for the rest.
        let t1 = t0 + Duration::from_millis(500);
        assert!(b.take(1, t1) > t0 + Duration::from_secs(1));
    }

    #[test]
    fn profiles_record_their_figures() {
        let lan = LinkFigures::new(Profile::Lan, Profile::Lan.shape());
        assert_eq!(lan.rtt_ms, 0.2);
        assert_eq!(lan.rate_mibps, Some(117.0));
        assert!(!lan.overridden);
        let wan = LinkFigures::new(Profile::Wan, Profile::Wan.shape());
        assert_eq!(wan.rtt_ms, 20.0);
        assert_eq!(wan.rate_bytes_per_sec, Some(12_500_000));
        let raw = LinkFigures::new(
            Profile::Raw,
            Profile::Raw.shape().with_overrides(Some(5.0), None),
        );
        assert!(raw.overridden);
        assert_eq!(raw.rtt_ms, 10.0);
        assert_eq!(raw.rate_bytes_per_sec, None);
    }
}
