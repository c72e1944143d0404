//! The fallback ring's rendezvous: rank 0 listens at the fallback address, every other
//! rank says who it is and where its ring listener is, and rank 0 answers each with every
//! rank's ring address ([`crate::ring`] has the whole picture).

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::config::CommConfig;
use crate::error::Error;
use crate::ring::{hello, read_frame, write_frame, Kind};

/// How often a rank retries connecting to rank 0 while it is not listening yet.
const RETRY: Duration = Duration::from_millis(20);

/// Rank 0: take every other rank's Hello at `at`, answer each with the table.
pub(crate) fn host(
    config: &CommConfig,
    at: SocketAddr,
    port: u16,
    deadline: Instant,
) -> Result<Vec<SocketAddr>, Error> {
    let listener = TcpListener::bind(at)
        .map_err(|e| Error::io(format!("fallback rendezvous: rank 0 listens at {at}"), &e))?;
    let world = usize::from(config.world);
    let mut table = vec![None; world];
    let mut guests = Vec::with_capacity(world - 1);
    while guests.len() + 1 < world {
        let Ok(mut s) = accept_until(&listener, deadline) else {
            let missing: Vec<String> = (1..world)
                .filter(|&r| table[r].is_none())
                .map(|r| r.to_string())
                .collect();
            return Err(Error::Timeout {
                what: format!(
                    "ranks [{}] to meet rank 0 at {at} (fallback rendezvous)",
                    missing.join(", ")
                ),
                after: config.fallback_timeout,
            });
        };
        let _ = s.set_read_timeout(Some(config.fallback_timeout));
        let Ok((rank, p)) = read_frame(&mut s, Kind::Hello, u64::MAX, 6) else {
            continue; // Not one of ours, or gone already: the deadline still holds.
        };
        let field = |i: usize| {
            p.get(2 * i..2 * i + 2)
                .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
        };
        let (job, size, ring_port) = (field(0), field(1), field(2));
        if job != config.job || size != config.world || rank == 0 || usize::from(rank) >= world {
            return Err(Error::Config(format!(
                "fallback rendezvous at {at}: rank {rank} of job {job} with {size} ranks arrived; \
                 this is job {} with {} ranks",
                config.job, config.world
            )));
        }
        let ip = s
            .peer_addr()
            .map_err(|e| Error::io("fallback rendezvous: peer address", &e))?;
        table[usize::from(rank)] = Some(SocketAddr::new(ip.ip(), ring_port));
        guests.push(s);
    }
    let mut full: Vec<SocketAddr> = table.into_iter().map(|a| a.unwrap_or(at)).collect();
    for s in &mut guests {
        // Rank 0's own entry: the address the guest reached it at.
        full[0] = SocketAddr::new(s.local_addr().map_or(at.ip(), |a| a.ip()), port);
        let _ = s.set_write_timeout(Some(config.fallback_timeout));
        write_frame(s, Kind::Table, 0, 0, &encode_table(&full)).map_err(|_| {
            Error::Config("fallback rendezvous: a rank left before the table".into())
        })?;
    }
    Ok(full)
}

/// Every other rank: say who it is at rank 0's address; return the table.
pub(crate) fn guest(
    config: &CommConfig,
    at: SocketAddr,
    port: u16,
    deadline: Instant,
) -> Result<Vec<SocketAddr>, Error> {
    let timeout = |what: &str| Error::Timeout {
        what: format!(
            "rank 0 {what} at {at} (fallback rendezvous, rank {})",
            config.rank
        ),
        after: config.fallback_timeout,
    };
    let mut s = connect_until(at, deadline).map_err(|_| timeout("to listen"))?;
    let _ = s.set_read_timeout(Some(
        deadline
            .saturating_duration_since(Instant::now())
            .max(RETRY),
    ));
    write_frame(&mut s, Kind::Hello, config.rank, 0, &hello(config, port))
        .map_err(|_| timeout("to take this rank's hello"))?;
    let (_, p) = read_frame(
        &mut s,
        Kind::Table,
        u64::MAX,
        usize::from(config.world) * 18,
    )
    .map_err(|_| timeout("to send every rank's ring address (are all ranks started?)"))?;
    let table = decode_table(&p);
    if table.len() != usize::from(config.world) {
        return Err(Error::Config(
            "fallback rendezvous: rank 0's table is short".into(),
        ));
    }
    Ok(table)
}

fn encode_table(table: &[SocketAddr]) -> Vec<u8> {
    let mut out = Vec::with_capacity(table.len() * 18);
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
    p.chunks_exact(18)
        .map(|e| {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&e[..16]);
            let v6 = Ipv6Addr::from(octets);
            let ip = v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4);
            SocketAddr::new(ip, u16::from_le_bytes([e[16], e[17]]))
        })
        .collect()
}

/// Connect to `to`, retrying while nothing listens there, until `deadline`; `Err(None)`
/// when the deadline passed, `Err(Some(e))` for any other failure.
pub(crate) fn connect_until(
    to: SocketAddr,
    deadline: Instant,
) -> Result<TcpStream, Option<std::io::Error>> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(None);
        }
        match TcpStream::connect_timeout(&to, left) {
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionRefused | ErrorKind::TimedOut | ErrorKind::WouldBlock
                ) =>
            {
                std::thread::sleep(RETRY.min(left))
            }
            Err(e) => return Err(Some(e)),
        }
    }
}

/// Accept one connection on `listener` before `deadline`.
pub(crate) fn accept_until(
    listener: &TcpListener,
    deadline: Instant,
) -> std::io::Result<TcpStream> {
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                return Ok(s);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(ErrorKind::TimedOut.into());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e),
        }
    }
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
