//! `mount`: a directory served over sshfs across an emulated link, the mount a network
//! sweep reads its data through (`net-prepare`, `net-check` and `net-stop` call the
//! library directly).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use crate::{link, mount};

#[derive(Debug, Args)]
pub struct MountArgs {
    /// The link: raw (no shaping), lan (1 GbE: 0.2 ms RTT, 117 MiB/s), wan (office to
    /// cloud: 20 ms RTT, 100 Mbit/s).
    #[arg(long, value_enum)]
    profile: link::Profile,
    /// One-way delay in milliseconds, added in each direction (replaces the profile's).
    #[arg(long)]
    delay_ms: Option<f64>,
    /// Bandwidth cap in MiB/s in each direction, 0 for none (replaces the profile's).
    #[arg(long)]
    rate_mibps: Option<f64>,
    /// Keep this JSON file up to date with the bytes that crossed each way.
    #[arg(long)]
    counters: Option<PathBuf>,
    /// Join client and server pipes directly, with no relay (to measure the relay's cost).
    #[arg(long, hide = true, conflicts_with_all = ["counters", "delay_ms", "rate_mibps"])]
    direct: bool,
    /// The directory to serve.
    source: PathBuf,
    /// An empty directory to mount it on.
    mountpoint: PathBuf,
}

/// Mount until SIGINT or SIGTERM, which reach the mount's loop as a readable socket.
pub fn mount(a: MountArgs) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    if a.delay_ms.is_some_and(|d| !(d >= 0.0 && d.is_finite())) {
        bail!("--delay-ms must be a finite number of milliseconds, 0 or more");
    }
    if a.rate_mibps.is_some_and(|r| !(r >= 0.0 && r.is_finite())) {
        bail!("--rate-mibps must be a finite rate, 0 (no cap) or more");
    }
    let (stop, signalled) = std::os::unix::net::UnixStream::pair()?;
    signal_hook::low_level::pipe::register(SIGINT, signalled.try_clone()?)?;
    signal_hook::low_level::pipe::register(SIGTERM, signalled)?;
    let opts = mount::MountOptions {
        shape: a.profile.shape().with_overrides(a.delay_ms, a.rate_mibps),
        profile: a.profile,
        source: a.source,
        mountpoint: a.mountpoint,
        counters: a.counters,
        direct: a.direct,
    };
    use std::os::fd::AsFd;
    mount::run(&opts, stop.as_fd())
}
