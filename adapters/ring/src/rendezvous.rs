//! The fallback ring's rendezvous: rank 0 listens at the fallback address, every other
//! rank proves the job key there and says where its ring listener is, and rank 0 answers
//! each with every rank's ring address ([`crate::ring`] has the whole picture, and
//! [`crate::link`] the handshake).

use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use crate::config::RingConfig;
use crate::dial::dial;
use crate::error::Error;
use crate::gate::Gate;
use crate::link::{Kind, Role};
use switchml_core::wire::ring_payload::{emit_table_entry, parse_table, table_len};

/// How often a rank retries connecting to rank 0 while it is not listening yet.
const RETRY: Duration = Duration::from_millis(20);

/// Bind `at`, trying again until `deadline` while the port is in use: another rank's
/// attempt to reach rank 0 before it listens may hold the port for a moment (a dial from
/// that very port connects to itself; the dialer lets it go).
fn bind_until(at: SocketAddr, deadline: Instant) -> std::io::Result<TcpListener> {
    loop {
        match TcpListener::bind(at) {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline => {
                std::thread::sleep(RETRY)
            }
            bound => return bound,
        }
    }
}

/// Rank 0: take every other rank's handshake and Hello at `at`, answer each with the
/// table; connections that fail the handshake are closed and counted in `gate`.
pub(crate) fn host(
    config: &RingConfig,
    at: SocketAddr,
    port: u16,
    deadline: Instant,
    gate: &mut Gate,
) -> Result<Vec<SocketAddr>, Error> {
    let listener = bind_until(at, deadline)
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
        let table: Vec<u8> = full.iter().flat_map(|&a| emit_table_entry(a)).collect();
        let _ = g.link.stream().set_write_timeout(Some(config.timeout));
        g.link.send(Kind::Table, 0, 0, &table).map_err(|_| {
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
    let want = table_len(config.world);
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
    Ok(parse_table(&p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_0_binds_its_address_once_a_passing_holder_lets_it_go() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = held.local_addr().unwrap();
        // Past the deadline, a port in use is the error it is.
        let refused = bind_until(at, Instant::now()).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::AddrInUse);
        // Held for a moment only (as a dial that connected to itself holds it): bound.
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(held);
        });
        let bound = bind_until(at, Instant::now() + Duration::from_secs(60)).unwrap();
        assert_eq!(bound.local_addr().unwrap(), at);
        release.join().unwrap();
    }
}
