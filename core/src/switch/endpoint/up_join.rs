//! What an endpoint keeps of a child job's admission at its parent switch (protocol.md
//! §4.2). The endpoint holds one per job; the admission code (`admission.rs`) fills it, and
//! lives apart so that the endpoint does not name it.

use crate::wire;

/// A child job's side of its parent's cookies (protocol.md §4.2): what the controller of a
/// child switch keeps.
#[derive(Clone, Copy)]
pub(super) struct UpJoin {
    /// The parent's cookie for this child, 0 before one came.
    pub(super) cookie: u64,
    /// The last Join sent up, as sent (to send again with a new cookie); its length is
    /// `wire::join::LEN` when there is one.
    pub(super) last: Option<[u8; wire::join::LEN]>,
}

impl UpJoin {
    pub(super) const NONE: UpJoin = UpJoin {
        cookie: 0,
        last: None,
    };
}
