//! Whom to address a frame to: the next hop's MAC for a peer's IPv4 address.
//!
//! The kernel keeps answering ARP on the interface (the XDP program passes ARP to it), so
//! its neighbour table stays right; we read it (`/proc/thread-self/net/arp`, the calling
//! thread's namespace's: complete entries of our interface) when a peer is new to us, at
//! most every 100 ms. We also learn from every
//! frame we receive: its source MAC is the hop the peer's datagrams come through, which is
//! the peer itself on a link, or the router it sits behind, where our answers must go too.
//! A peer we know no MAC for gets its datagrams through the kernel's socket, which resolves
//! it (and so fills the table for the next read): nothing waits, nothing is lost.
//!
//! A hop is relearned from every frame, so a peer whose MAC changes is followed as soon as
//! it sends. What this does not defend against: a host on the link that forges a peer's
//! source address steers our frames for that peer to itself, as a forged ARP reply would
//! steer the kernel's (the protocol's results are not secret; its joins are keyed).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crate::frame::Mac;

/// The shortest time between two reads of the kernel's table.
const REREAD: Duration = Duration::from_millis(100);

/// Known next hops, by peer address.
#[derive(Debug)]
pub struct Neighbours {
    iface: String,
    known: HashMap<Ipv4Addr, Mac>,
    read_at: Option<Instant>,
}

impl Neighbours {
    /// An empty table for interface `iface`.
    pub fn new(iface: &str) -> Neighbours {
        Neighbours {
            iface: iface.to_string(),
            known: HashMap::new(),
            read_at: None,
        }
    }

    /// Remember that `ip`'s datagrams come through `mac`.
    pub fn learn(&mut self, ip: Ipv4Addr, mac: Mac) {
        if self.known.get(&ip) != Some(&mac) {
            self.known.insert(ip, mac);
        }
    }

    /// The MAC to send to `ip` through, reading the kernel's table if `ip` is new.
    pub fn lookup(&mut self, ip: Ipv4Addr) -> Option<Mac> {
        if let Some(mac) = self.known.get(&ip) {
            return Some(*mac);
        }
        let now = Instant::now();
        if self.read_at.is_some_and(|t| now.duration_since(t) < REREAD) {
            return None;
        }
        self.read_at = Some(now);
        // The calling thread's namespace's table (`/proc/net` is the process leader's).
        let table = std::fs::read_to_string("/proc/thread-self/net/arp").unwrap_or_default();
        for (peer, mac) in parse_arp(&table, &self.iface) {
            self.known.entry(peer).or_insert(mac);
        }
        self.known.get(&ip).copied()
    }
}

/// The complete entries of `iface` in `/proc/net/arp`'s text.
fn parse_arp<'a>(table: &'a str, iface: &'a str) -> impl Iterator<Item = (Ipv4Addr, Mac)> + 'a {
    table.lines().skip(1).filter_map(move |line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        // IP address, HW type, Flags, HW address, Mask, Device
        let [ip, _, flags, mac, _, dev] = f.as_slice() else {
            return None;
        };
        let complete = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()? & 0x2 != 0;
        if *dev != iface || !complete {
            return None;
        }
        Some((ip.parse().ok()?, parse_mac(mac)?))
    })
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(text: &str) -> Option<Mac> {
    let mut mac = [0u8; 6];
    let mut parts = text.trim().split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_complete_entries_of_the_interface_are_read() {
        let table = "IP address       HW type     Flags       HW address            Mask     Device\n\
                     10.9.0.2         0x1         0x2         02:aa:bb:cc:dd:02     *        xd-s\n\
                     10.9.0.3         0x1         0x0         00:00:00:00:00:00     *        xd-s\n\
                     10.8.0.1         0x1         0x2         02:aa:bb:cc:dd:09     *        eth0\n";
        let got: Vec<_> = parse_arp(table, "xd-s").collect();
        assert_eq!(
            got,
            [("10.9.0.2".parse().unwrap(), [2, 0xaa, 0xbb, 0xcc, 0xdd, 2])]
        );
        assert_eq!(parse_mac("02:aa:bb:cc:dd"), None);
        assert_eq!(parse_mac("02:aa:bb:cc:dd:ee:ff"), None);
    }

    #[test]
    fn a_learned_hop_wins_over_an_unknown_peer() {
        let mut n = Neighbours::new("xd-none");
        let ip = "10.9.0.7".parse().unwrap();
        n.learn(ip, [1; 6]);
        assert_eq!(n.lookup(ip), Some([1; 6]));
        assert_eq!(n.lookup("10.9.0.8".parse().unwrap()), None);
    }
}
