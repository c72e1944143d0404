//! An AF_PACKET socket bound to one interface: whole Ethernet frames in and out.
//!
//! Every `unsafe` of the crate is here, each with the reason it is sound.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// A raw socket on one interface.
#[derive(Debug)]
pub struct RawSocket {
    fd: OwnedFd,
    mac: [u8; 6],
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

impl RawSocket {
    /// Open a raw socket on `iface` (in the calling thread's network namespace) that waits
    /// at most `timeout` in [`recv`](Self::recv). Needs CAP_NET_RAW.
    pub fn open(iface: &str, timeout: Duration) -> io::Result<RawSocket> {
        let name = CString::new(iface).map_err(|_| io::ErrorKind::InvalidInput)?;
        if name.as_bytes().len() >= libc::IFNAMSIZ {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        // SAFETY: `name` is a NUL-terminated string that outlives the call.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(io::Error::last_os_error());
        }
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain integer arguments; the result is checked before use.
        let fd = check(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::c_int::from(proto),
            )
        })?;
        // SAFETY: `fd` is a descriptor we just opened and nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };

        // SAFETY: `sockaddr_ll` is a C struct of integers, for which all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = index as libc::c_int;
        // SAFETY: `bind` reads `size_of::<sockaddr_ll>()` bytes from a live `sockaddr_ll`.
        check(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;

        let tv = libc::timeval {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_usec: timeout.subsec_micros() as libc::suseconds_t,
        };
        // SAFETY: `setsockopt` reads `size_of::<timeval>()` bytes from a live `timeval`.
        check(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        })?;

        let mac = hardware_address(fd.as_raw_fd(), name.as_bytes())?;
        Ok(RawSocket { fd, mac })
    }

    /// Return the interface's MAC.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// Receive one frame the interface received (not one it sent) into `buf`. Returns
    /// `Ok(None)` when the timeout passed or a signal interrupted, else the frame's length
    /// on the wire, which is more than `buf.len()` when the frame was cut.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.recv_with(buf, libc::MSG_TRUNC)
    }

    /// [`recv`](Self::recv) without waiting: `Ok(None)` at once when no frame is queued.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.recv_with(buf, libc::MSG_TRUNC | libc::MSG_DONTWAIT)
    }

    /// The socket's descriptor, to `poll` for frames.
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }

    fn recv_with(&self, buf: &mut [u8], flags: libc::c_int) -> io::Result<Option<usize>> {
        // SAFETY: as in `open`: all-zero is a valid `sockaddr_ll`.
        let mut from: libc::sockaddr_ll = unsafe { zeroed() };
        let mut from_len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf` and at most
        // `from_len` bytes into `from`, both live and exclusively borrowed here.
        let n = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags,
                (&mut from as *mut libc::sockaddr_ll).cast(),
                &mut from_len,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        if from.sll_pkttype == libc::PACKET_OUTGOING {
            return Ok(None);
        }
        Ok(Some(n as usize))
    }

    /// Send one whole frame out of the interface.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: the kernel reads `frame.len()` bytes from the live slice `frame`.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Return the MAC of the interface that holds `ip` (an address of this host's own stack),
/// as a worker tells it to the controller. Needs no privilege.
pub fn interface_mac(ip: std::net::Ipv4Addr) -> io::Result<[u8; 6]> {
    let name = interface_of(ip)?;
    let probe = std::net::UdpSocket::bind("0.0.0.0:0")?;
    let len = name.iter().position(|c| *c == 0).unwrap_or(name.len());
    let bytes: Vec<u8> = name[..len].iter().map(|c| *c as u8).collect();
    hardware_address(probe.as_raw_fd(), &bytes)
}

/// The MAC of interface `name` (without its NUL), asked through any socket `fd` of the
/// interface's namespace.
fn hardware_address(fd: libc::c_int, name: &[u8]) -> io::Result<[u8; 6]> {
    // SAFETY: `ifreq` is a C struct of integers and a union of them: all-zero is valid.
    let mut req: libc::ifreq = unsafe { zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name).take(libc::IFNAMSIZ - 1) {
        *d = *s as libc::c_char;
    }
    // SAFETY: SIOCGIFHWADDR reads the name from and writes the address into the live
    // `ifreq` we pass, and nothing more.
    check(unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut req) })?;
    // SAFETY: SIOCGIFHWADDR succeeded, so the union holds `ifru_hwaddr`.
    let hw = unsafe { req.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (d, s) in mac.iter_mut().zip(hw.sa_data) {
        *d = s as u8;
    }
    Ok(mac)
}

/// The name (NUL-padded) of the interface that holds `ip`.
fn interface_of(ip: std::net::Ipv4Addr) -> io::Result<[libc::c_char; libc::IFNAMSIZ]> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into the live pointer; freed below.
    check(unsafe { libc::getifaddrs(&mut list) })?;
    let mut found = None;
    let mut at = list;
    while !at.is_null() && found.is_none() {
        // SAFETY: `at` is a node of the list getifaddrs made, not yet freed.
        let node = unsafe { &*at };
        at = node.ifa_next;
        if node.ifa_addr.is_null() || node.ifa_name.is_null() {
            continue;
        }
        // SAFETY: `ifa_addr` is non-null and points at a sockaddr of the list.
        if libc::c_int::from(unsafe { (*node.ifa_addr).sa_family }) != libc::AF_INET {
            continue;
        }
        // SAFETY: an AF_INET `ifa_addr` is a `sockaddr_in`.
        let sin = unsafe { &*(node.ifa_addr as *const libc::sockaddr_in) };
        if u32::from_be(sin.sin_addr.s_addr) != u32::from(ip) {
            continue;
        }
        // SAFETY: `ifa_name` is a NUL-terminated string of the list.
        let name = unsafe { std::ffi::CStr::from_ptr(node.ifa_name) };
        let mut out = [0 as libc::c_char; libc::IFNAMSIZ];
        for (d, s) in out
            .iter_mut()
            .zip(name.to_bytes().iter().take(libc::IFNAMSIZ - 1))
        {
            *d = *s as libc::c_char;
        }
        found = Some(out);
    }
    // SAFETY: `list` came from getifaddrs and is freed once; no node is used after.
    unsafe { libc::freeifaddrs(list) };
    found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no interface holds {ip}")))
}
