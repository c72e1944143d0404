//! The fallback ring's rendezvous: rank 0 listens at the fallback address, every other
//! rank proves the job key there and says where its ring listener is, and rank 0 answers
//! each with every rank's ring address ([`crate::ring`] has the whole picture, and
//! [`crate::link`] the handshake).

use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use crate::config::RingConfig;
use crate::dial::dial;
use crate::error::Error;
use crate::gate::Gate;
use crate::link::{Kind, Role};

/// How often a rank retries connecting to rank 0 while it is not listening yet.
const RETRY: Duration = Duration::from_millis(20);
/// The length of one entry of the table: an IPv6 (or IPv4-mapped) address and a port.
const ENTRY_LEN: usize = 18;

/// Rank 0: take every other rank's handshake and Hello at `at`, answer each with the
/// table; connections that fail the handshake are closed and counted in `gate`.
pub(crate) fn host(
    config: &RingConfig,
    at: SocketAddr,
    port: u16,
    deadline: Instant,
    gate: &mut Gate,
) -> Result<Vec<SocketAddr>, Error> {
    let listener = TcpListener::bind(at)
        .map_err(|e| Error::io(format!("fallback rendezvous: rank 0 listens at {at}"), &e))?;
    let world = usize::from(config.world);
    let wanted: Vec<u16> = (1..config.world).collect();
    let mut guests = gate
        .gather(&listener, config, Role::Rendezvous, &wanted, deadline)
        .map_err(|missing| {
            let missing: Vec<String> = missing.iter().map(u16::to_string).collect();
            let refused = match &gate.last_refusal {
                Some(last) => format!(
                    "; {} connection(s) there failed the handshake, the last {last}",
                    gate.refused
                ),
                None => String::new(),
            };
            Error::Timeout {
                what: format!(
                    "ranks [{}] to meet rank 0 at {at} (fallback rendezvous{refused})",
                    missing.join(", ")
                ),
                after: config.timeout,
            }
        })?;
    let mut full = vec![at; world];
    for g in &guests {
        full[usize::from(g.rank)] = SocketAddr::new(g.addr.ip(), g.port);
    }
    for g in &mut guests {
        // Rank 0's own entry: the address the guest reached it at.
        let local = g.link.stream().local_addr().map_or(at.ip(), |a| a.ip());
        full[0] = SocketAddr::new(local, port);
        let _ = g.link.stream().set_write_timeout(Some(config.timeout));
        g.link
            .send(Kind::Table, 0, 0, &encode_table(&full))
            .map_err(|_| {
                Error::Config(format!(
                    "fallback rendezvous: rank {} left before the table",
                    g.rank
                ))
            })?;
    }
    Ok(full)
}

/// Every other rank: prove the job key at rank 0's address, say where this rank's ring
/// listener is, and return the table.
pub(crate) fn guest(
    config: &RingConfig,
    at: SocketAddr,
    port: u16,
    deadline: Instant,
) -> Result<Vec<SocketAddr>, Error> {
    let timeout = |what: &str| Error::Timeout {
        what: format!(
            "rank 0 {what} at {at} (fallback rendezvous, rank {})",
            config.rank
        ),
        after: config.timeout,
    };
    let mut link =
        dial(config, Role::Rendezvous, 0, at, port, deadline).map_err(|e| match e.last {
            Some(why) => timeout(&format!(
                "to complete the handshake (the last attempt: {why})"
            )),
            None => timeout("to listen"),
        })?;
    let _ = link.stream().set_read_timeout(Some(
        deadline
            .saturating_duration_since(Instant::now())
            .max(RETRY),
    ));
    let want = usize::from(config.world) * ENTRY_LEN;
    let p = link
        .recv(Kind::Table, u64::MAX, want)
        .map_err(|e| match e {
            crate::link::FrameError::Io(_) => {
                timeout("to send every rank's ring address (are all ranks started?)")
            }
            e => Error::Config(format!("fallback rendezvous: rank 0's table: {e}")),
        })?;
    if p.len() != want {
        return Err(Error::Config(
            "fallback rendezvous: rank 0's table is short".into(),
        ));
    }
    Ok(decode_table(&p))
}

fn encode_table(table: &[SocketAddr]) -> Vec<u8> {
    let mut out = Vec::with_capacity(table.len() * ENTRY_LEN);
    for a in table {
        let ip = match a.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            IpAddr::V6(v6) => v6,
        };
        out.extend_from_slice(&ip.octets());
        out.extend_from_slice(&a.port().to_le_bytes());
    }
    out
}

fn decode_table(p: &[u8]) -> Vec<SocketAddr> {
    p.chunks_exact(ENTRY_LEN)
        .map(|e| {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&e[..16]);
            let v6 = Ipv6Addr::from(octets);
            let ip = v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4);
            SocketAddr::new(ip, u16::from_le_bytes([e[16], e[17]]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_round_trips_both_address_families() {
        let t: Vec<SocketAddr> = vec![
            "127.0.0.1:5000".parse().unwrap(),
            "[::1]:7".parse().unwrap(),
        ];
        assert_eq!(decode_table(&encode_table(&t)), t);
    }
}
