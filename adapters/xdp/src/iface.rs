//! The interface side: its index, MAC and queues, and the XDP program attached to it with
//! its two maps (a port per queue, an AF_XDP socket per queue). One program per process and
//! interface, shared by every queue's socket; it goes when the last user drops it.

use std::fmt;
use std::io;
use std::ops::RangeInclusive;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use crate::bpf::{attach_xdp, create_map, load_xdp, update_map, MAP_ARRAY, MAP_XSK};
use crate::frame::Mac;
use crate::program::steer_program;

/// Queues the maps have room for.
pub const MAX_QUEUES: u32 = 64;

/// Why the AF_XDP path is not available; the caller falls back to sockets and logs this.
#[derive(Debug)]
pub struct Unavailable {
    /// What was being done.
    pub step: String,
    /// What the OS said.
    pub error: io::Error,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = match self.error.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => {
                " (no permission: needs root, or CAP_NET_ADMIN and CAP_BPF)"
            }
            Some(libc::EOPNOTSUPP | libc::EINVAL) if self.step.contains("attach") => {
                " (the driver has no native XDP)"
            }
            Some(libc::EBUSY | libc::EEXIST) => " (another XDP program is attached)",
            _ => "",
        };
        write!(f, "{}: {}{hint}", self.step, self.error)
    }
}

impl std::error::Error for Unavailable {}

pub(crate) fn unavailable(step: impl Into<String>) -> impl FnOnce(io::Error) -> Unavailable {
    move |error| Unavailable {
        step: step.into(),
        error,
    }
}

/// An interface with our XDP program attached.
#[derive(Debug)]
pub struct Attached {
    pub(crate) name: String,
    pub(crate) index: u32,
    pub(crate) mac: Mac,
    pub(crate) rx_queues: u32,
    ports: OwnedFd,
    xsks: OwnedFd,
    _prog: OwnedFd,
    /// The BPF link: closing it detaches the program.
    _link: OwnedFd,
}

impl Attached {
    /// Attach the steering program to interface `name` in native mode.
    pub fn attach(name: &str) -> Result<Arc<Attached>, Unavailable> {
        let no_such = |e: io::Error| Unavailable {
            step: format!("interface {name}"),
            error: io::Error::new(e.kind(), format!("no such interface ({e})")),
        };
        // Through ioctls on a socket, not /sys: sysfs shows the namespace it was mounted
        // in, while a socket is in the calling thread's.
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").map_err(no_such)?;
        let mut req = ifreq(name).ok_or_else(|| Unavailable {
            step: format!("interface {name}"),
            error: io::Error::new(io::ErrorKind::InvalidInput, "not an interface name"),
        })?;
        ioctl(&probe, libc::SIOCGIFINDEX, &mut req).map_err(no_such)?;
        // SAFETY: SIOCGIFINDEX filled the union's index member.
        let index = unsafe { req.ifr_ifru.ifru_ifindex } as u32;
        ioctl(&probe, libc::SIOCGIFHWADDR, &mut req).map_err(no_such)?;
        // SAFETY: SIOCGIFHWADDR filled the union's hardware address member.
        let hw = unsafe { req.ifr_ifru.ifru_hwaddr };
        if hw.sa_family != libc::ARPHRD_ETHER {
            return Err(Unavailable {
                step: format!("interface {name}"),
                error: io::Error::new(io::ErrorKind::InvalidData, "not an Ethernet interface"),
            });
        }
        let mut mac = [0u8; 6];
        for (m, b) in mac.iter_mut().zip(hw.sa_data) {
            *m = b as u8;
        }
        let rx_queues = rx_queues(&probe, name).clamp(1, MAX_QUEUES);
        let ports = create_map(MAP_ARRAY, MAX_QUEUES, "switchml_ports")
            .map_err(unavailable("create the port map"))?;
        let xsks = create_map(MAP_XSK, MAX_QUEUES, "switchml_xsks")
            .map_err(unavailable("create the XSKMAP"))?;
        let insns = steer_program(ports.as_raw_fd(), xsks.as_raw_fd());
        let prog =
            load_xdp(&insns, "switchml_steer").map_err(unavailable("load the XDP program"))?;
        let link = attach_xdp(&prog, index)
            .map_err(unavailable(format!("attach XDP (native) to {name}")))?;
        Ok(Arc::new(Attached {
            name: name.to_string(),
            index,
            mac,
            rx_queues,
            ports,
            xsks,
            _prog: prog,
            _link: link,
        }))
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its receive queues (one AF_XDP socket each at most).
    pub fn rx_queues(&self) -> u32 {
        self.rx_queues
    }

    /// Whether it has receive queue `queue` (an AF_XDP socket binds to one).
    pub(crate) fn has_queue(&self, queue: u32) -> Result<(), Unavailable> {
        if queue < self.rx_queues {
            return Ok(());
        }
        let name = &self.name;
        Err(Unavailable {
            step: format!("queue {queue} of {name}"),
            error: io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name} has {} receive queue(s)", self.rx_queues),
            ),
        })
    }

    /// Steer UDP datagrams to a port in `ports` that arrive on `queue` into socket `xsk`.
    pub(crate) fn steer(&self, queue: u32, ports: RangeInclusive<u16>, xsk: i32) -> io::Result<()> {
        update_map(&self.xsks, queue, xsk as u32)?;
        let (first, last) = (u32::from(*ports.start()), u32::from(*ports.end()));
        update_map(&self.ports, queue, first | last << 16)
    }

    /// Stop steering `queue` (its socket is closing).
    pub(crate) fn unsteer(&self, queue: u32) {
        let _ = update_map(&self.ports, queue, 0);
    }
}

/// An `ifreq` naming `name`, if it fits.
fn ifreq(name: &str) -> Option<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return None;
    }
    // SAFETY: all-zero is a valid `ifreq` (an empty name, a zero union).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (to, b) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *to = b as libc::c_char;
    }
    Some(req)
}

/// One of the interface ioctls used here (`SIOCGIFINDEX`, `SIOCGIFHWADDR`, `SIOCETHTOOL`),
/// all of which take an `ifreq`.
fn ioctl(
    socket: &std::net::UdpSocket,
    request: libc::Ioctl,
    arg: &mut libc::ifreq,
) -> io::Result<()> {
    // SAFETY: `arg` is a live `ifreq` with a NUL-terminated name, which each of these
    // requests reads and writes in place; for SIOCETHTOOL its data pointer points at a live
    // ethtool struct of the command's type (see `rx_queues`). The socket is open.
    match unsafe { libc::ioctl(socket.as_raw_fd(), request, arg as *mut libc::ifreq) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The interface's receive queues (`ETHTOOL_GCHANNELS`: RX or combined channels), 1 if it
/// does not say.
fn rx_queues(probe: &std::net::UdpSocket, name: &str) -> u32 {
    /// `struct ethtool_channels`, `cmd` first.
    #[repr(C)]
    #[derive(Default)]
    struct Channels {
        cmd: u32,
        max: [u32; 4],
        rx: u32,
        tx: u32,
        other: u32,
        combined: u32,
    }
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    let mut channels = Channels {
        cmd: ETHTOOL_GCHANNELS,
        ..Channels::default()
    };
    let Some(mut req) = ifreq(name) else {
        return 1;
    };
    req.ifr_ifru.ifru_data = (&mut channels as *mut Channels).cast();
    match ioctl(probe, libc::SIOCETHTOOL, &mut req) {
        Ok(()) => channels.rx.max(channels.combined).max(1),
        Err(_) => 1,
    }
}
