//! The poll loop: one smoltcp interface, one UDP socket, and a worker lane fed from it.

use smoltcp::iface::{Config as IfaceConfig, Interface, SocketHandle, SocketSet, SocketStorage};
use smoltcp::phy::Device;
use smoltcp::socket::udp;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr, IpEndpoint, Ipv4Address};
use switchml_core::quant::Tensor;
use switchml_core::time::Instant;
use switchml_core::worker::Worker;

use crate::clock::Clock;
use crate::logging::{debug, warning};
use crate::time::to_net;

/// How the node sits on the network. Static addressing: no DHCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetConfig {
    /// The interface's MAC address.
    pub mac: [u8; 6],
    /// The interface's IPv4 address and prefix length.
    pub address: (Ipv4Address, u8),
    /// The default gateway, if the switch is off-link.
    pub gateway: Option<Ipv4Address>,
    /// The local UDP port.
    pub port: u16,
    /// The switch's address and UDP port.
    pub switch: (Ipv4Address, u16),
    /// Seed of smoltcp's generator (ephemeral ports, IP ids): anything that differs between
    /// boots.
    pub seed: u64,
}

/// The socket bookkeeping a node needs, sized at compile time: room for `PACKETS`
/// datagrams in each direction. Small; its initialiser is not all zeros, so a `static` of
/// it lands in `.data` (flash and RAM).
pub struct Storage<'a, const PACKETS: usize> {
    sockets: [SocketStorage<'a>; 1],
    rx_meta: [udp::PacketMetadata; PACKETS],
    tx_meta: [udp::PacketMetadata; PACKETS],
}

impl<const PACKETS: usize> Storage<'_, PACKETS> {
    /// Empty storage (a `const fn`, so that it can initialise a `static`).
    pub const fn new() -> Self {
        Storage {
            sockets: [SocketStorage::EMPTY],
            rx_meta: [udp::PacketMetadata::EMPTY; PACKETS],
            tx_meta: [udp::PacketMetadata::EMPTY; PACKETS],
        }
    }
}

impl<const PACKETS: usize> Default for Storage<'_, PACKETS> {
    fn default() -> Self {
        Self::new()
    }
}

/// The bytes a node works in, sized at compile time: the UDP socket's receive and
/// transmit rings of `BYTES` each, and one datagram of `DATAGRAM` bytes (at least the
/// worker's `Config::max_datagram`) for the worker to write into. All zeros, so a `static`
/// of it costs no flash (`.bss`).
pub struct Buffers<const BYTES: usize, const DATAGRAM: usize> {
    rx: [u8; BYTES],
    tx: [u8; BYTES],
    datagram: [u8; DATAGRAM],
}

impl<const BYTES: usize, const DATAGRAM: usize> Buffers<BYTES, DATAGRAM> {
    /// Zeroed buffers.
    pub const fn new() -> Self {
        Buffers {
            rx: [0; BYTES],
            tx: [0; BYTES],
            datagram: [0; DATAGRAM],
        }
    }
}

impl<const BYTES: usize, const DATAGRAM: usize> Default for Buffers<BYTES, DATAGRAM> {
    fn default() -> Self {
        Self::new()
    }
}

/// What the node has counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NodeStats {
    /// Datagrams from the switch handed to the worker.
    pub received: u32,
    /// Datagrams from anyone else, dropped.
    pub foreign: u32,
    /// Datagrams the worker wrote and the socket took.
    pub sent: u32,
    /// Times the socket's transmit ring was full (the datagram waits for the next round).
    pub send_full: u32,
    /// Datagrams smoltcp refused outright (no route to the switch).
    pub unsendable: u32,
}

/// A worker's network endpoint on device `D`, timed by clock `C`.
pub struct Node<'a, D: Device, C: Clock> {
    device: D,
    clock: C,
    iface: Interface,
    sockets: SocketSet<'a>,
    udp: SocketHandle,
    /// Where the worker's datagrams go: the switch, or its lane's shard (§1.1).
    switch: IpEndpoint,
    /// The switch's port: its first shard's.
    switch_port: u16,
    datagram: &'a mut [u8],
    /// The length of a datagram in `datagram` the socket had no room for.
    pending: Option<usize>,
    stats: NodeStats,
}

/// Rounds of "fill the socket, let the interface send" per [`Node::poll`], at most.
const FLUSH_ROUNDS: usize = 8;

impl<'a, D: Device, C: Clock> Node<'a, D, C> {
    /// Bring the interface up on `device` with `config`, the socket bound to its port, in
    /// `storage` and `buffers`.
    pub fn new<const P: usize, const B: usize, const G: usize>(
        mut device: D,
        mut clock: C,
        config: &NetConfig,
        storage: &'a mut Storage<'a, P>,
        buffers: &'a mut Buffers<B, G>,
    ) -> Self {
        let mut iface_config =
            IfaceConfig::new(HardwareAddress::Ethernet(EthernetAddress(config.mac)));
        iface_config.random_seed = config.seed;
        let mut iface = Interface::new(iface_config, &mut device, to_net(clock.now()));
        let (ip, prefix) = config.address;
        iface.update_ip_addrs(|addrs| {
            // IFACE_MAX_ADDR_COUNT is at least 1: the only address always fits.
            let _ = addrs.push(IpCidr::new(ip.into(), prefix));
        });
        if let Some(gw) = config.gateway {
            // The route table is empty: a default route always fits.
            let _ = iface.routes_mut().add_default_ipv4_route(gw);
        }
        let Storage {
            sockets,
            rx_meta,
            tx_meta,
        } = storage;
        let Buffers { rx, tx, datagram } = buffers;
        let mut socket = udp::Socket::new(
            udp::PacketBuffer::new(&mut rx_meta[..], &mut rx[..]),
            udp::PacketBuffer::new(&mut tx_meta[..], &mut tx[..]),
        );
        // Port 0 is the only refusal, and then smoltcp picks none: say so at the first send.
        let _ = socket.bind(config.port);
        let mut sockets = SocketSet::new(&mut sockets[..]);
        let udp = sockets.add(socket);
        Node {
            device,
            clock,
            iface,
            sockets,
            udp,
            switch: IpEndpoint::new(config.switch.0.into(), config.switch.1),
            switch_port: config.switch.1,
            datagram: &mut datagram[..],
            pending: None,
            stats: NodeStats::default(),
        }
    }

    /// Talk to shard `shard` of the switch from now on: what a worker's
    /// [`Event::Redirected`](switchml_core::worker::Event::Redirected) asks (protocol.md
    /// §1.1). A shard past port 65535 cannot exist; the request is then ignored and the
    /// worker's join timeout reports the lane.
    pub fn move_to_shard(&mut self, shard: u16) {
        let Some(port) = switchml_core::shard::shard_port(self.switch_port, shard) else {
            warning!("shard {} has no port", shard);
            return;
        };
        self.switch.port = port;
        debug!("joining shard {} at {}", shard, self.switch);
    }

    /// Return the clock's reading now.
    pub fn now(&mut self) -> Instant {
        self.clock.now()
    }

    /// Return the device.
    pub fn device(&mut self) -> &mut D {
        &mut self.device
    }

    /// Return the counters.
    pub fn stats(&self) -> NodeStats {
        self.stats
    }

    /// One round of the loop: take in what the device received and hand the switch's
    /// datagrams to `worker`, fire its timers if due, send what it has to send. Return the
    /// time the round ran at. Call it again at once, or (on a board that can sleep) by
    /// [`Node::poll_at`].
    pub fn poll<B: Tensor, const SLOTS: usize, const QUEUE: usize>(
        &mut self,
        worker: &mut Worker<B, SLOTS, QUEUE>,
    ) -> Instant {
        let now = self.clock.now();
        let net_now = to_net(now);
        self.iface
            .poll(net_now, &mut self.device, &mut self.sockets);
        let socket = self.sockets.get_mut::<udp::Socket>(self.udp);
        while let Ok((payload, meta)) = socket.recv() {
            if meta.endpoint == self.switch {
                self.stats.received += 1;
                worker.handle_packet(now, payload);
            } else {
                self.stats.foreign += 1;
                debug!("dropped a datagram from {}", meta.endpoint);
            }
        }
        if worker.poll_timeout().is_some_and(|t| t <= now) {
            worker.handle_timeout(now);
        }
        for _ in 0..FLUSH_ROUNDS {
            let more = self.fill_socket(now, worker);
            self.iface
                .poll(net_now, &mut self.device, &mut self.sockets);
            if !more {
                break;
            }
        }
        now
    }

    /// Move the worker's datagrams into the socket until either runs out; return whether
    /// the worker may have more.
    fn fill_socket<B: Tensor, const SLOTS: usize, const QUEUE: usize>(
        &mut self,
        now: Instant,
        worker: &mut Worker<B, SLOTS, QUEUE>,
    ) -> bool {
        let socket = self.sockets.get_mut::<udp::Socket>(self.udp);
        loop {
            let len = match self.pending.take() {
                Some(len) => len,
                None => match worker.poll_transmit(now, self.datagram) {
                    Some(len) => len,
                    None => return false,
                },
            };
            match socket.send_slice(&self.datagram[..len], self.switch) {
                Ok(()) => self.stats.sent += 1,
                Err(udp::SendError::BufferFull) => {
                    self.stats.send_full += 1;
                    self.pending = Some(len);
                    return true;
                }
                Err(udp::SendError::Unaddressable) => {
                    // Lost like a datagram on the wire: the worker's timers resend it.
                    self.stats.unsendable += 1;
                    warning!("no route to the switch at {}", self.switch);
                }
            }
        }
    }

    /// Return when [`Node::poll`] next has something to do without a new frame: the
    /// earlier of the worker's next timer and smoltcp's (ARP, resends).
    pub fn poll_at<B: Tensor, const SLOTS: usize, const QUEUE: usize>(
        &mut self,
        worker: &Worker<B, SLOTS, QUEUE>,
    ) -> Option<Instant> {
        let now = self.clock.now();
        let net = self
            .iface
            .poll_at(to_net(now), &self.sockets)
            .map(crate::time::from_net);
        match (worker.poll_timeout(), net) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
