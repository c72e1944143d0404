//! The software switch's shards: one daemon thread per shard, each with its own socket on
//! consecutive ports, its own switch and its own runs (protocol.md §1.1). Nothing is shared
//! on the packet path; what crosses between shards is rare and off that path:
//!
//! - admin requests: shard 0 owns the admin socket, does each request itself and passes it
//!   to every other shard, which answers between its batches (so every shard holds the
//!   same jobs, laid out the same way in its own pool);
//! - counters: each shard publishes its own; [`crate::RunningSwitch`] adds them up.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use switchml_core::shard::MAX_SHARDS;

use crate::admin::{AdminRequest, AdminSocket};

/// An admin request passed from shard 0 to another shard, with where to answer.
pub(crate) struct ShardRequest {
    pub(crate) request: Result<AdminRequest, String>,
    pub(crate) reply: Sender<String>,
}

/// A shard's part in serving admin requests.
pub(crate) enum AdminRole {
    /// Shard 0: the admin socket (if any) and the way to every other shard.
    Leader {
        socket: Option<AdminSocket>,
        peers: Vec<Sender<ShardRequest>>,
    },
    /// Any other shard: requests passed on by shard 0.
    Follower(Receiver<ShardRequest>),
}

/// How long shard 0 waits for another shard's answer: other shards look for requests
/// between batches, at least every 20 ms.
const PEER_TIMEOUT: Duration = Duration::from_secs(2);

impl AdminRole {
    /// The roles of `count` shards, shard 0's with `socket`.
    pub(crate) fn for_shards(count: usize, socket: Option<AdminSocket>) -> Vec<AdminRole> {
        let (peers, followers): (Vec<_>, Vec<_>) = (1..count).map(|_| mpsc::channel()).unzip();
        let mut roles = vec![AdminRole::Leader { socket, peers }];
        roles.extend(followers.into_iter().map(AdminRole::Follower));
        roles
    }
}

/// Pass `request` to every peer and combine their answers with shard 0's own (`mine`):
/// `mine` when every shard agrees, else the first shard's error, naming it.
pub(crate) fn ask_peers(
    peers: &[Sender<ShardRequest>],
    request: &Result<AdminRequest, String>,
    mine: String,
) -> String {
    let waiting: Vec<_> = peers
        .iter()
        .map(|peer| {
            let (reply, answer) = mpsc::channel();
            let sent = peer.send(ShardRequest {
                request: request.clone(),
                reply,
            });
            (sent.is_ok(), answer)
        })
        .collect();
    for (i, (sent, answer)) in waiting.into_iter().enumerate() {
        let shard = i + 1;
        let theirs = match sent {
            true => answer.recv_timeout(PEER_TIMEOUT).ok(),
            false => None,
        };
        match theirs {
            Some(a) if a.starts_with("error") && !mine.starts_with("error") => {
                return format!("error: shard {shard}: {}", a.trim_start_matches("error: "));
            }
            Some(_) => {}
            None => return format!("error: shard {shard} did not answer (stopped?)"),
        }
    }
    mine
}

/// Bind `count` sockets on consecutive ports from `bind`'s (port 0: any run of free ports).
pub(crate) fn bind_shards(bind: SocketAddr, count: usize) -> io::Result<Vec<UdpSocket>> {
    if count == 0 || count > usize::from(MAX_SHARDS) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{count} shards: expected 1 to {MAX_SHARDS}"),
        ));
    }
    let bind_one = |addr: SocketAddr| {
        UdpSocket::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))
    };
    // With port 0 the first port is the kernel's pick and the next ones may be taken:
    // try again elsewhere, a bounded number of times.
    let tries = if bind.port() == 0 { 32 } else { 1 };
    let mut last = None;
    'attempt: for _ in 0..tries {
        let first = bind_one(bind)?;
        let base = first.local_addr()?.port();
        let mut sockets = vec![first];
        for shard in 1..count {
            let mut addr = bind;
            let port = u16::try_from(shard)
                .ok()
                .and_then(|s| switchml_core::shard::shard_port(base, s));
            let Some(port) = port else {
                last = Some(io::Error::new(
                    io::ErrorKind::AddrNotAvailable,
                    format!("shard {shard} of {count}: no port after {base}"),
                ));
                continue 'attempt;
            };
            addr.set_port(port);
            match bind_one(addr) {
                Ok(s) => sockets.push(s),
                Err(e) => {
                    last = Some(e);
                    continue 'attempt;
                }
            }
        }
        return Ok(sockets);
    }
    Err(last.unwrap_or_else(|| io::Error::other("no run of free ports")))
}

/// The default number of shards: one per available core.
pub fn default_shards() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(usize::from(MAX_SHARDS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_bind_consecutive_ports() {
        let s = bind_shards("127.0.0.1:0".parse().unwrap(), 3).unwrap();
        let ports: Vec<u16> = s.iter().map(|s| s.local_addr().unwrap().port()).collect();
        assert_eq!(ports, [ports[0], ports[0] + 1, ports[0] + 2]);
        assert!(bind_shards("127.0.0.1:0".parse().unwrap(), 0).is_err());
        assert!(bind_shards("127.0.0.1:0".parse().unwrap(), 256).is_err());
        // A taken port is an error when the port was asked for.
        let mut s = s;
        let at = s.remove(0).local_addr().unwrap();
        assert!(
            bind_shards(at, 2).is_err(),
            "port {} is taken",
            at.port() + 1
        );
    }

    #[test]
    fn an_error_of_another_shard_names_it() {
        let (tx, rx) = mpsc::channel::<ShardRequest>();
        let peer = std::thread::spawn(move || {
            let r = rx.recv().unwrap();
            r.reply.send("error: no free range".into()).unwrap();
        });
        let answer = ask_peers(&[tx], &Ok(AdminRequest::List), "ok 0 jobs".into());
        assert_eq!(answer, "error: shard 1: no free range");
        peer.join().unwrap();
        let (tx, rx) = mpsc::channel::<ShardRequest>();
        drop(rx);
        let answer = ask_peers(&[tx], &Ok(AdminRequest::List), "ok 0 jobs".into());
        assert!(answer.contains("shard 1 did not answer"), "{answer}");
    }
}
