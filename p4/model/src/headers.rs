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
    /// The switch's cookie for the sender (protocol.md §4.2).
    pub cookie: u64,
    /// The tag under the job's key (protocol.md §4.2).
    pub tag: [u8; 16],
}

impl JoinHeader {
    /// Whether the tag was made under `key` over this Join (protocol.md §4.2). A P4 data
    /// plane cannot compute an HMAC: its controller checks the tag of every Join, which
    /// reaches the pipeline only through the CPU port (p4/README.md, "Joins and the
    /// controller"); the model checks it here, where the program checks that port.
    pub fn verify(&self, key: u64) -> bool {
        switchml_core::wire::JoinRepr {
            job: self.job,
            rank: self.rank,
            world: self.world,
            slot_lo: self.slot_lo,
            slot_count: self.slot_count,
            count: self.count,
            lanes: self.lanes,
            nonce: self.nonce,
            cookie: self.cookie,
            tag: self.tag,
        }
        .verify(key)
    }
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
