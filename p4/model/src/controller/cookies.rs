//! What the controller keeps for cookies (protocol.md §4.2), held by the pipeline: its
//! jar and clock, and per job what it keeps of a child's Joins up. Apart from the
//! controller's code (`controller.rs`, an `impl Pipeline`), so that the pipeline can hold
//! them without naming that code.

use switchml_core::auth::CookieJar;
use switchml_core::time::Instant;
use switchml_core::wire;

use crate::headers::TRANSPORT_LEN;

/// The controller's cookies (protocol.md §4.2): the core's jar, with the switch's secret,
/// and the controller's clock, which its caller advances
/// ([`Pipeline::set_controller_time`](crate::Pipeline::set_controller_time)).
#[derive(Debug, Clone)]
pub struct CookieCheck {
    /// The issuer and checker.
    pub jar: CookieJar,
    /// The controller's time now.
    pub now: Instant,
}

/// Bytes of a child's Join up as a frame: the outer headers and the Join.
pub(super) const UP_FRAME_LEN: usize = TRANSPORT_LEN + wire::join::LEN;

/// What the controller keeps of a child job's Joins up (protocol.md §4.2, §7): the
/// parent's cookie (0 before one came) and the last Join up as sent, with the port it left
/// by, to send again when a new cookie comes. One per job table entry, allocated with the
/// pipeline.
#[derive(Debug, Clone, Copy)]
pub struct ParentCookie {
    pub(super) cookie: u64,
    pub(super) last: Option<([u8; UP_FRAME_LEN], u16)>,
}

impl ParentCookie {
    /// None yet.
    pub const NONE: ParentCookie = ParentCookie {
        cookie: 0,
        last: None,
    };
}
