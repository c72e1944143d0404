//! The original controller's messages (package `switchml_proto`), field numbers as in
//! `shared/p4app/README.md`. `RdmaSession` is not served: the dialect switch speaks UDP.

/// `Sync.Broadcast`'s request: every rank sends one; the root's `value` comes back.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct BroadcastRequest {
    /// The root's value (ignored from the others).
    #[prost(uint64, tag = "1")]
    pub value: u64,
    /// The caller's rank.
    #[prost(uint32, tag = "2")]
    pub rank: u32,
    /// How many calls make a round.
    #[prost(uint32, tag = "3")]
    pub num_workers: u32,
    /// The rank whose value is returned.
    #[prost(uint32, tag = "4")]
    pub root: u32,
}

/// `Sync.Broadcast`'s response.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct BroadcastResponse {
    /// The root's value.
    #[prost(uint64, tag = "1")]
    pub value: u64,
}

/// `Sync.Barrier`'s request.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct BarrierRequest {
    /// How many calls release the barrier.
    #[prost(uint32, tag = "1")]
    pub num_workers: u32,
}

/// `Sync.Barrier`'s response (empty).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct BarrierResponse {}

/// `PacketSize` of `Session.UdpSession` (the MTU names are the original's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum PacketSize {
    /// 128-byte MTU.
    Mtu128 = 0,
    /// 256-byte MTU (64 values per packet).
    Mtu256 = 1,
    /// 512-byte MTU.
    Mtu512 = 2,
    /// 1,024-byte MTU (256 values per packet).
    Mtu1024 = 3,
}

/// `Session.UdpSession`'s request: a rank registers its MAC and IPv4 address; rank 0's call
/// starts a new session.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct UdpSessionRequest {
    /// Rank 0's session id (broadcast to all first).
    #[prost(uint64, tag = "1")]
    pub session_id: u64,
    /// The caller's rank.
    #[prost(uint32, tag = "2")]
    pub rank: u32,
    /// The session's worker count.
    #[prost(uint32, tag = "3")]
    pub num_workers: u32,
    /// The caller's MAC, 48 bits in the low bits (first byte most significant).
    #[prost(uint64, tag = "4")]
    pub mac: u64,
    /// The caller's IPv4 address, host order (first octet most significant).
    #[prost(uint32, tag = "5")]
    pub ipv4: u32,
    /// Values per packet, as an MTU.
    #[prost(enumeration = "PacketSize", tag = "7")]
    pub packet_size: i32,
}

/// `Session.UdpSession`'s response: the switch's addresses.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct UdpSessionResponse {
    /// The session id, echoed.
    #[prost(uint64, tag = "1")]
    pub session_id: u64,
    /// The switch's MAC, as in the request.
    #[prost(uint64, tag = "2")]
    pub mac: u64,
    /// The switch's IPv4 address, host order.
    #[prost(uint32, tag = "3")]
    pub ipv4: u32,
}

/// The generated `Sync` service and client.
pub mod sync {
    include!(concat!(env!("OUT_DIR"), "/switchml_proto.Sync.rs"));
}

/// The generated `Session` service and client.
pub mod session {
    include!(concat!(env!("OUT_DIR"), "/switchml_proto.Session.rs"));
}
