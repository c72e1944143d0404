//! What Linux says about this machine's UDP sockets (`/proc/net/udp`): which local ports are
//! connected to an address (a communicator's lanes are connected to the switch), how many
//! bytes wait in a socket's receive buffer, and how many datagrams the kernel dropped at a
//! socket because that buffer was full.
//!
//! A line reads `sl local rem st tx:rx tr tm retr uid timeout inode ref pointer drops`, the
//! addresses as `%08X:%04X`: the IPv4 address is the in-memory (network order) word printed
//! as a native integer, the port is in host order.

use std::net::{Ipv4Addr, SocketAddrV4};

/// One socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Its local address.
    pub local: SocketAddrV4,
    /// Its remote address (0.0.0.0:0 if unconnected).
    pub remote: SocketAddrV4,
    /// Bytes waiting to be read (the kernel's accounting, overheads included).
    pub queued: u64,
    /// Datagrams dropped because its receive buffer was full.
    pub drops: u64,
}

fn address(field: &str) -> Option<SocketAddrV4> {
    let (ip, port) = field.split_once(':')?;
    let ip = u32::from_str_radix(ip, 16).ok()?;
    let port = u16::from_str_radix(port, 16).ok()?;
    Some(SocketAddrV4::new(Ipv4Addr::from(ip.to_ne_bytes()), port))
}

fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some(Row {
                local: address(f.get(1)?)?,
                remote: address(f.get(2)?)?,
                queued: u64::from_str_radix(f.get(4)?.split_once(':')?.1, 16).ok()?,
                drops: f.last()?.parse().ok()?,
            })
        })
        .collect()
}

/// Return the local addresses of the sockets connected to `remote`.
pub fn connected_to(remote: SocketAddrV4) -> Vec<SocketAddrV4> {
    rows()
        .into_iter()
        .filter(|r| r.remote == remote)
        .map(|r| r.local)
        .collect()
}

/// Return the socket bound to `local` (`None`: no such socket, or no `/proc/net/udp`).
pub fn socket_at(local: SocketAddrV4) -> Option<Row> {
    rows().into_iter().find(|r| r.local == local)
}

/// Return the largest receive buffer a socket may ask for (`net.core.rmem_max`).
pub fn rmem_max() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()?
        .trim()
        .parse()
        .ok()
}
