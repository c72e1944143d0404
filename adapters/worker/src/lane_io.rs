//! The AF_XDP program a communicator's lanes share (`CommConfig::io`), attached once per
//! communicator; lane `l` takes receive queue `l` (`switchml_xdp::Io::open`). Whatever is
//! unavailable is said as a warning naming why, and the lanes keep their UDP sockets.

use std::sync::Arc;

use switchml_xdp::Attached;

use crate::config::IoPath;

/// Attach the AF_XDP program if `io` asks for it and it can be had.
pub(crate) fn attach(io: &IoPath) -> Option<Arc<Attached>> {
    let IoPath::Xdp(iface) = io else {
        return None;
    };
    match Attached::attach(iface) {
        Ok(a) => Some(a),
        Err(e) => {
            log::warn!("io xdp:{iface}: {e}; the lanes use UDP sockets instead");
            None
        }
    }
}
