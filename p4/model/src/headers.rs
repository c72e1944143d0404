//! The packet header vector: the headers `p4/include/headers.p4` declares, as plain structs.
//!
//! The switchml headers mirror `docs/protocol.md` §2–3; their byte layout is not written
//! here a second time but read through `switchml_core::wire` views (see `parser.rs`). The
//! values themselves stay in the packet buffer, as the P4 program keeps them in header
//! stacks: the processors read them from the input and write sums to the output.

/// Ethernet II header length.
pub const ETHERNET_LEN: usize = 14;
/// IPv4 header length (no options; packets with options are not ours).
pub const IPV4_LEN: usize = 20;
/// UDP header length.
pub const UDP_LEN: usize = 8;
/// Bytes before the switchml datagram in a frame.
pub const TRANSPORT_LEN: usize = ETHERNET_LEN + IPV4_LEN + UDP_LEN;
/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IP protocol number of UDP.
pub const IP_PROTO_UDP: u8 = 17;

/// Ethernet II.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ethernet {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// EtherType.
    pub ether_type: u16,
}

/// IPv4 without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ipv4 {
    /// Type of service.
    pub tos: u8,
    /// Total length.
    pub total_len: u16,
    /// Identification.
    pub ident: u16,
    /// Flags and fragment offset.
    pub flags_frag: u16,
    /// Time to live.
    pub ttl: u8,
    /// Protocol.
    pub protocol: u8,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
}

/// UDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Udp {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Length of header and datagram.
    pub length: u16,
}

/// The outer headers of a framed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Transport {
    /// Ethernet.
    pub ethernet: Ethernet,
    /// IPv4.
    pub ipv4: Ipv4,
    /// UDP.
    pub udp: Udp,
}

/// The CPU port of the v1model program (`CPU_PORT` in `v1model/switchml.p4`, the port BMv2
/// is started with); the TNA program's is `switch_config`'s, which
/// [`Pipeline::set_cpu_port`](crate::Pipeline::set_cpu_port) sets.
pub const CPU_PORT: u16 = 64;
/// Length of the `packet_in` and `packet_out` headers.
pub const CPU_HEADER_LEN: usize = 2;

/// The two bytes both CPU headers are: a 9-bit port, then a flag bit, then padding.
fn cpu_header(port: u16, flag: bool) -> [u8; CPU_HEADER_LEN] {
    ((port & 0x1FF) << 7 | u16::from(flag) << 6).to_be_bytes()
}

/// The port and flag of a CPU header's two bytes.
fn cpu_fields(b: [u8; CPU_HEADER_LEN]) -> (u16, bool) {
    let v = u16::from_be_bytes(b);
    (v >> 7, v & 1 << 6 != 0)
}

/// `packet_in_h`: what the pipeline puts before a frame it sends the controller
/// (protocol.md §4.2): the port the frame came in on, or, for a child's Join up (`up`), the
/// parent's port, out of which the controller sends it once signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketIn {
    /// The port (9 bits).
    pub port: u16,
    /// A child's Join up, for the controller to sign.
    pub up: bool,
}

impl PacketIn {
    /// Return the header's two bytes.
    pub fn to_bytes(self) -> [u8; CPU_HEADER_LEN] {
        cpu_header(self.port, self.up)
    }

    /// Read the header from its two bytes.
    pub fn from_bytes(b: [u8; CPU_HEADER_LEN]) -> Self {
        let (port, up) = cpu_fields(b);
        PacketIn { port, up }
    }
}

/// `packet_out_h`: what the controller puts before a frame it sends back on the CPU port:
/// an admitted Join, which the pipeline takes as from `port` (`forward` false), or the
/// controller's own answer, which leaves out of `port` as it is (`forward` true).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketOut {
    /// The port (9 bits).
    pub port: u16,
    /// Send the frame out of `port` unchanged.
    pub forward: bool,
}

impl PacketOut {
    /// Return the header's two bytes.
    pub fn to_bytes(self) -> [u8; CPU_HEADER_LEN] {
        cpu_header(self.port, self.forward)
    }

    /// Read the header from its two bytes.
    pub fn from_bytes(b: [u8; CPU_HEADER_LEN]) -> Self {
        let (port, forward) = cpu_fields(b);
        PacketOut { port, forward }
    }
}

/// The 6-byte prefix of every switchml message (protocol.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prefix {
    /// Protocol version.
    pub version: u8,
    /// Message type byte.
    pub msg_type: u8,
    /// Job id.
    pub job: u16,
    /// Rank.
    pub rank: u16,
}

/// The Contribution/Result header after the prefix (protocol.md §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DataHeader {
    /// Job-relative slot.
    pub slot: u16,
    /// Shadow version.
    pub ver: u8,
    /// Flag bits.
    pub flags: u8,
    /// Number of values.
    pub count: u16,
    /// Use number.
    pub seq: u32,
    /// Biased exponent.
    pub exp: u8,
    /// Reserved bytes 17–19, as one number.
    pub reserved: u32,
    /// The job run's session (§4.1).
    pub session: u32,
}

/// The Join header after the prefix (protocol.md §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JoinHeader {
    /// World size the worker believes in.
    pub world: u16,
    /// First slot of the lane.
    pub slot_lo: u16,
    /// Slots of the lane.
    pub slot_count: u16,
    /// Chunk size.
    pub count: u16,
    /// The rank's number of lanes (non-zero).
    pub lanes: u16,
    /// The worker process's nonce (non-zero): the session of the run it opens.
    pub nonce: u32,
    /// The prefix's job id and rank, which the tag covers.
    pub job: u16,
    /// The sender's rank, as the prefix states it.
    pub rank: u16,
    /// The switch's cookie for the sender (`join_auth`, protocol.md §4.2): the
    /// controller's, never read by the pipeline.
    pub cookie: u64,
    /// The tag under the job's key (`join_auth`): likewise the controller's.
    pub tag: [u8; 16],
}

/// The JoinReply header after the prefix (protocol.md §3.3), as a child switch reads its
/// parent's (§7); the bitmap stays in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JoinReplyHeader {
    /// The parent job's world size.
    pub world: u16,
    /// Flag bits (`COMPLETE`).
    pub flags: u8,
    /// The parent run's session.
    pub session: u32,
    /// The nonce of the Join it answers (the child's session).
    pub nonce: u32,
    /// Bitmap bytes after the header.
    pub bitmap_len: u16,
}

impl JoinReplyHeader {
    /// Return whether it says `COMPLETE`.
    pub fn complete(&self) -> bool {
        switchml_core::wire::JoinFlags(self.flags)
            .contains(switchml_core::wire::JoinFlags::COMPLETE)
    }
}

/// The Probe header after the prefix (protocol.md §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProbeHeader {
    /// Job-relative slot.
    pub slot: u16,
    /// Shadow version.
    pub ver: u8,
    /// Reserved bytes 9–11, as one number.
    pub reserved: u32,
    /// The use the worker waits for.
    pub seq: u32,
    /// The job run's session.
    pub session: u32,
}

/// The Abort header after the prefix (protocol.md §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AbortHeader {
    /// Reason byte.
    pub reason: u8,
    /// Detail.
    pub detail: u16,
    /// Reserved bytes 7, 10–11, as one number.
    pub reserved: u32,
    /// Epoch.
    pub epoch: u32,
    /// The job run's session.
    pub session: u32,
}

/// The Leave header after the prefix (protocol.md §3.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeaveHeader {
    /// Reserved bytes 6–7.
    pub reserved: u16,
    /// The job run's session.
    pub session: u32,
}

/// The Status header after the prefix (protocol.md §3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusHeader {
    /// Reserved bytes 6–7.
    pub reserved: u16,
    /// The asker's nonce (non-zero); the cookie and tag after it are the controller's
    /// (protocol.md §4.2).
    pub nonce: u32,
}

/// Which header follows the prefix: the parser's `select` on version and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// Type 0x01.
    Contribution(DataHeader),
    /// Type 0x10.
    Join(JoinHeader),
    /// Type 0x12.
    Probe(ProbeHeader),
    /// Type 0x14.
    Abort(AbortHeader),
    /// Type 0x15.
    Status(StatusHeader),
    /// Type 0x17.
    Leave(LeaveHeader),
    /// Type 0x18: nothing parsed after the prefix (a parent's, for the controller).
    Cookie,
    /// Type 0x02, which only a child switch takes from its parent (protocol.md §7); `None`
    /// if the packet is too short for the header.
    Result(Option<DataHeader>),
    /// Type 0x11, likewise.
    JoinReply(Option<JoinReplyHeader>),
    /// A type only a switch sends to workers (0x13, 0x16): not parsed further.
    SwitchOnly,
    /// A type version 1 does not know: not parsed further.
    Unknown,
    /// A version other than 1: not parsed further.
    OtherVersion,
}

/// The parsed packet.
#[derive(Debug, Clone, Copy)]
pub struct Headers<'a> {
    /// Ethernet/IPv4/UDP, for framed packets.
    pub transport: Option<Transport>,
    /// The switchml prefix.
    pub prefix: Prefix,
    /// The header after the prefix.
    pub body: Body,
    /// The bytes after the parsed headers (a Contribution's values).
    pub payload: &'a [u8],
    /// The whole switchml datagram.
    pub datagram: &'a [u8],
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of `packet_in_h` and `packet_out_h` (include/headers.p4): the port in the
    /// first 9 bits, the flag after it.
    #[test]
    fn cpu_headers_have_the_programs_layout() {
        assert_eq!(PacketIn { port: 3, up: false }.to_bytes(), [0x01, 0x80]);
        assert_eq!(PacketIn { port: 3, up: true }.to_bytes(), [0x01, 0xC0]);
        let out = PacketOut {
            port: CPU_PORT,
            forward: true,
        };
        assert_eq!(out.to_bytes(), [0x20, 0x40]);
        for port in 0..512 {
            for flag in [false, true] {
                let i = PacketIn { port, up: flag };
                assert_eq!(PacketIn::from_bytes(i.to_bytes()), i);
                let o = PacketOut {
                    port,
                    forward: flag,
                };
                assert_eq!(PacketOut::from_bytes(o.to_bytes()), o);
            }
        }
    }
}
