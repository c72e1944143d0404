//! Socket set-up and waiting: buffer sizes, readiness with a timeout, and a wake-up fd.
//!
//! A lane waits in one `poll(2)` for either a datagram or a command from the application
//! thread; the [`Wake`] eventfd is how the application interrupts that wait without a
//! timer. Socket buffers are sized for the window: a lane can have `window` datagrams in
//! flight each way, and the switch's socket receives from every lane of every worker, so a
//! default-sized buffer overflows and turns a burst into retransmissions.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Which buffer of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    /// `SO_RCVBUF`.
    Receive,
    /// `SO_SNDBUF`.
    Send,
}

/// Ask for `bytes` of socket buffer and return what the kernel granted (Linux doubles the
/// request for bookkeeping and caps it at `net.core.{r,w}mem_max`). Past that cap a process
/// with `CAP_NET_ADMIN` (a switch daemon run as root) may still get it (`SO_*BUFFORCE`);
/// others keep what the cap allows. A full receive buffer drops datagrams even on a
/// lossless loopback, and every drop costs a retransmission timeout.
pub fn size_buffer(socket: &UdpSocket, which: Buffer, bytes: usize) -> io::Result<usize> {
    let (opt, force) = match which {
        Buffer::Receive => (libc::SO_RCVBUF, libc::SO_RCVBUFFORCE),
        Buffer::Send => (libc::SO_SNDBUF, libc::SO_SNDBUFFORCE),
    };
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let fd = socket.as_raw_fd();
    set_int(fd, opt, value)?;
    let granted = get_int(fd, opt)?;
    if granted / 2 < bytes && set_int(fd, force, value).is_ok() {
        return get_int(fd, opt);
    }
    Ok(granted)
}

/// Set socket option `opt` (level `SOL_SOCKET`) to `value`.
fn set_int(fd: RawFd, opt: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `fd` is an open socket owned by the caller's `UdpSocket` for the duration of
    // the call; the option value points at a live c_int and its exact size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Read socket option `opt` (level `SOL_SOCKET`) as a byte count.
fn get_int(fd: RawFd, opt: libc::c_int) -> io::Result<usize> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: as in `set_int`; `value` and `len` are live and `len` holds value's size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    match rc {
        0 => Ok(usize::try_from(value).unwrap_or(0)),
        _ => Err(io::Error::last_os_error()),
    }
}

/// What became ready.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    /// The socket has datagrams.
    pub socket: bool,
    /// The wake fd was signalled.
    pub woken: bool,
}

/// Wait until `socket` is readable, `wake` (if any) is signalled, or `timeout` passes.
/// An interrupted wait (`EINTR`) returns as a timeout: callers loop anyway.
pub fn wait_readable(socket: RawFd, wake: Option<&Wake>, timeout: Duration) -> io::Result<Ready> {
    let [socket, woken] = wait_any([socket, wake.map_or(-1, |w| w.fd.as_raw_fd())], timeout)?;
    Ok(Ready { socket, woken })
}

/// Wait until any of `fds` is readable or `timeout` passes; say which are (a negative
/// descriptor is never). An interrupted wait (`EINTR`) returns as a timeout.
pub fn wait_any<const N: usize>(fds: [RawFd; N], timeout: Duration) -> io::Result<[bool; N]> {
    let mut polled = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // Round up so that a sub-millisecond deadline does not spin.
    let ms = timeout.as_micros().div_ceil(1000);
    let ms = libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX);
    // SAFETY: `polled` is a live array of initialised pollfd and its length is passed; a
    // negative fd is ignored by poll(2).
    let rc = unsafe { libc::poll(polled.as_mut_ptr(), N as libc::nfds_t, ms) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::Interrupted => Ok([false; N]),
            _ => Err(err),
        };
    }
    Ok(polled.map(|p| p.revents != 0))
}

/// Wait until `socket` can take more datagrams, at most `timeout`.
pub fn wait_writable(socket: RawFd, timeout: Duration) -> io::Result<bool> {
    let mut fd = libc::pollfd {
        fd: socket,
        events: libc::POLLOUT,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fd` is one live, initialised pollfd.
    let rc = unsafe { libc::poll(&mut fd, 1, ms) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::Interrupted => Ok(false),
            _ => Err(err),
        };
    }
    Ok(rc > 0)
}

/// An eventfd another thread signals to end a lane's `poll` early.
#[derive(Debug)]
pub struct Wake {
    fd: OwnedFd,
}

impl AsRawFd for Wake {
    /// The eventfd, for a caller that polls more descriptors than [`wait_readable`] does.
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Wake {
    /// Make a non-blocking eventfd.
    pub fn new() -> io::Result<Wake> {
        // SAFETY: eventfd takes no pointers; a non-negative return is a new fd we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by eventfd and nothing else owns it.
        Ok(Wake {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Signal the waiter. Never blocks; a counter already at its maximum stays signalled.
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd; a failure (EAGAIN when the
        // counter is saturated) still leaves the fd readable, which is all we need.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Reset the signal after a wake-up.
    pub fn clear(&self) {
        let mut value: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64 from our non-blocking eventfd.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), (&mut value as *mut u64).cast(), 8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_interrupts_a_wait_and_buffers_can_be_sized() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let granted = size_buffer(&socket, Buffer::Receive, 1 << 16).unwrap();
        assert!(granted >= 1 << 16);
        let wake = Wake::new().unwrap();
        let fd = socket.as_raw_fd();
        let r = wait_readable(fd, Some(&wake), Duration::from_millis(1)).unwrap();
        assert_eq!(r, Ready::default());
        wake.signal();
        let r = wait_readable(fd, Some(&wake), Duration::from_secs(5)).unwrap();
        assert!(r.woken && !r.socket);
        wake.clear();
        let r = wait_readable(fd, Some(&wake), Duration::ZERO).unwrap();
        assert!(!r.woken);
        assert!(wait_writable(fd, Duration::from_millis(1)).unwrap());
    }
}
