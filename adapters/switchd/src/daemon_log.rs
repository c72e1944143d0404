//! What the daemon logs about per-packet problems, rate-limited.
//!
//! A broken or hostile peer can cause a problem with every datagram it sends; a line for
//! each would flood the log and slow the switch down. So each kind of problem gets a
//! [`LogLimit`]: at most a few lines per second, and the next line that gets through says
//! how many were left out. The counters ([`DaemonCounters`](crate::DaemonCounters)) still
//! count every one.

use std::io;
use std::net::SocketAddr;

use switchml_udp::batch::Failure;
use switchml_udp::log_limit::{check, LogLimit, Suppressed, BURST, WINDOW};

/// The daemon's problem reports, one limit per kind.
#[derive(Debug, Clone)]
pub(crate) struct DaemonLog {
    bad_source: LogLimit,
    send: LogLimit,
    recv: LogLimit,
}

impl DaemonLog {
    /// Allow [`BURST`] lines of each kind per [`WINDOW`].
    pub(crate) const fn new() -> DaemonLog {
        DaemonLog {
            bad_source: LogLimit::new(BURST, WINDOW),
            send: LogLimit::new(BURST, WINDOW),
            recv: LogLimit::new(BURST, WINDOW),
        }
    }

    /// A datagram from `from` (`None`: not an IP address) was dropped: no reply can go there.
    pub(crate) fn bad_source(&mut self, from: Option<SocketAddr>) {
        if let Some(n) = check(&mut self.bad_source, log::Level::Warn, module_path!()) {
            match from {
                Some(a) => log::warn!(
                    "dropped a datagram from {a}: no reply can go to that source{}",
                    Suppressed(n)
                ),
                None => log::warn!("dropped a datagram from a non-IP source{}", Suppressed(n)),
            }
        }
    }

    /// `failed` datagrams of a step were not sent; `first` is the first of them.
    pub(crate) fn send_failed(&mut self, failed: u64, first: Option<Failure>) {
        if failed == 0 {
            return;
        }
        if let Some(n) = check(&mut self.send, log::Level::Warn, module_path!()) {
            let to = first.and_then(|f| f.to);
            let why = first.map(|f| f.error());
            match (to, why) {
                (Some(to), Some(why)) => log::warn!(
                    "datagrams not sent: {failed}, the first to {to}: {why}{}",
                    Suppressed(n)
                ),
                (None, Some(why)) => {
                    log::warn!("datagrams not sent: {failed}: {why}{}", Suppressed(n))
                }
                _ => log::warn!("datagrams not sent: {failed}{}", Suppressed(n)),
            }
        }
    }

    /// A receive failed with `err`, which is not the socket's own failure.
    pub(crate) fn recv_failed(&mut self, err: &io::Error) {
        if let Some(n) = check(&mut self.recv, log::Level::Warn, module_path!()) {
            log::warn!("receive failed: {err}{}", Suppressed(n));
        }
    }
}
