//! Whole Ethernet frames through one queue's AF_XDP socket, for a caller that parses and
//! builds its frames itself (the p4app dialect switch, whose clients send UDP checksums a
//! kernel socket would drop): the socket, steered a range of UDP destination ports, and
//! unsteered when it goes. Unlike [`XdpPath`](crate::XdpPath) there is no UDP socket beside
//! it: frames the program passes reach whatever the caller reads the kernel's frames with
//! (an AF_PACKET socket).

use std::io;
use std::ops::RangeInclusive;
use std::os::fd::RawFd;
use std::sync::Arc;

use crate::iface::{unavailable, Attached, Unavailable};
use crate::xsk::{Mode, Xsk};

/// An AF_XDP socket on one queue that IPv4/UDP frames to a range of ports are steered to.
pub struct FrameQueue {
    /// The socket; [`XdpPath`](crate::XdpPath) writes its frames in place.
    pub(crate) xsk: Xsk,
    pub(crate) iface: Arc<Attached>,
    queue: u32,
}

impl FrameQueue {
    /// Open an AF_XDP socket on `queue` of `iface` and steer IPv4/UDP frames to `ports`
    /// that arrive on that queue into it.
    pub fn open(
        iface: &Arc<Attached>,
        queue: u32,
        ports: RangeInclusive<u16>,
    ) -> Result<FrameQueue, Unavailable> {
        let name = &iface.name;
        iface.has_queue(queue)?;
        let xsk = Xsk::open(iface.index, queue).map_err(unavailable(format!(
            "AF_XDP socket on {name} queue {queue}"
        )))?;
        iface
            .steer(queue, ports, xsk.fd())
            .map_err(unavailable("steer the ports to the AF_XDP socket"))?;
        Ok(FrameQueue {
            xsk,
            iface: Arc::clone(iface),
            queue,
        })
    }

    /// The queue it is bound to.
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// How the socket was bound.
    pub fn mode(&self) -> Mode {
        self.xsk.mode()
    }

    /// The socket's descriptor, to `poll` for frames.
    pub fn fd(&self) -> RawFd {
        self.xsk.fd()
    }

    /// Call `each` with up to `max` received frames; return how many ([`Xsk::receive`]).
    pub fn receive(&mut self, max: usize, each: impl FnMut(&[u8])) -> usize {
        self.xsk.receive(max, each)
    }

    /// Queue `frame` for sending; if the TX ring is full, have the kernel send what is
    /// queued and try once more. False if there is still no room.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        let copy = |buf: &mut [u8]| match buf.get_mut(..frame.len()) {
            Some(to) => {
                to.copy_from_slice(frame);
                frame.len()
            }
            None => 0,
        };
        if frame.len() > crate::xsk::FRAME_SIZE as usize {
            return false;
        }
        self.xsk.push(copy) || (self.xsk.kick_tx().is_ok() && self.xsk.push(copy))
    }

    /// Have the kernel send what is queued ([`Xsk::kick_tx`]): once per batch.
    pub fn kick_tx(&mut self) -> io::Result<()> {
        self.xsk.kick_tx()
    }
}

impl Drop for FrameQueue {
    fn drop(&mut self) {
        self.iface.unsteer(self.queue);
    }
}
