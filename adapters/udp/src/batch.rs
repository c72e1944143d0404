//! Batched datagram I/O: one `recvmmsg(2)` or `sendmmsg(2)` moves up to a batch of
//! datagrams, so the per-syscall cost is paid once per batch instead of once per packet.
//!
//! Both batches own every buffer they use, allocated once: nothing allocates per packet.
//! The C headers (`mmsghdr`, `iovec`) point into those buffers and are rebuilt right before
//! each syscall, so moving a batch never leaves a dangling pointer behind.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::time::Duration;

use crate::sockaddr::{from_storage, to_storage};
use crate::socket::wait_writable;

/// Datagrams received by one `recvmmsg`.
pub struct RecvBatch {
    size: usize,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    iovecs: Vec<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
    received: usize,
    refused: bool,
}

// SAFETY: the raw pointers inside `iovecs` and `headers` point only into this batch's own
// heap buffers, are rewritten before every syscall and are never dereferenced by Rust code;
// no other thread can reach them.
unsafe impl Send for RecvBatch {}

/// One received datagram.
#[derive(Debug)]
pub struct Datagram<'a> {
    /// Its bytes.
    pub bytes: &'a [u8],
    /// Where it came from.
    pub from: Option<SocketAddr>,
    /// Whether it was longer than the buffer and cut (`MSG_TRUNC`).
    pub truncated: bool,
}

impl RecvBatch {
    /// Make room for `batch` datagrams of up to `size` bytes each.
    pub fn new(batch: usize, size: usize) -> RecvBatch {
        let batch = batch.max(1);
        // SAFETY: all-zero is a valid value of these plain C structs (null pointers, zero
        // lengths); they are filled in before use.
        let (storage, iovec, header) = unsafe {
            (
                std::mem::zeroed::<libc::sockaddr_storage>(),
                std::mem::zeroed::<libc::iovec>(),
                std::mem::zeroed::<libc::mmsghdr>(),
            )
        };
        RecvBatch {
            size,
            bufs: vec![0; batch * size],
            addrs: vec![storage; batch],
            iovecs: vec![iovec; batch],
            headers: vec![header; batch],
            received: 0,
            refused: false,
        }
    }

    /// Receive what is waiting on non-blocking `fd`, up to a batch; return how many.
    /// Nothing waiting is `Ok(0)`, and so is a refusal ([`RecvBatch::refused`]).
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.received = 0;
        self.refused = false;
        let base = self.bufs.as_mut_ptr();
        for (i, ((iov, hdr), addr)) in self
            .iovecs
            .iter_mut()
            .zip(self.headers.iter_mut())
            .zip(self.addrs.iter_mut())
            .enumerate()
        {
            // SAFETY: `i * size` is within `bufs` (len `batch * size`).
            iov.iov_base = unsafe { base.add(i * self.size) }.cast();
            iov.iov_len = self.size;
            hdr.msg_hdr.msg_name = (addr as *mut libc::sockaddr_storage).cast();
            hdr.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            hdr.msg_hdr.msg_iov = iov;
            hdr.msg_hdr.msg_iovlen = 1;
            hdr.msg_hdr.msg_control = std::ptr::null_mut();
            hdr.msg_hdr.msg_controllen = 0;
            hdr.msg_hdr.msg_flags = 0;
            hdr.msg_len = 0;
        }
        // SAFETY: every header points at a live iovec covering `size` bytes of `bufs` and
        // at a live sockaddr_storage with its size; the count passed is the array length.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.headers.as_mut_ptr(),
                self.headers.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                // An ICMP error queued on a connected socket: the peer is not there (yet).
                io::ErrorKind::ConnectionRefused => {
                    self.refused = true;
                    Ok(0)
                }
                _ => Err(err),
            };
        }
        self.received = n as usize;
        Ok(self.received)
    }

    /// Return whether the last `recv` found, instead of datagrams, that one we sent on this
    /// connected socket was refused (ICMP port unreachable: nothing listens at the peer).
    pub fn refused(&self) -> bool {
        self.refused
    }

    /// Return the `i`-th datagram of the last `recv`.
    pub fn get(&self, i: usize) -> Option<Datagram<'_>> {
        if i >= self.received {
            return None;
        }
        let hdr = &self.headers[i];
        let len = (hdr.msg_len as usize).min(self.size);
        let start = i * self.size;
        Some(Datagram {
            bytes: &self.bufs[start..start + len],
            from: from_storage(&self.addrs[i]),
            truncated: hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        })
    }
}

/// Datagrams queued for one `sendmmsg`. Several entries may share one buffer (replicas of
/// a multicast).
pub struct SendBatch {
    size: usize,
    bufs: Vec<u8>,
    used: usize,
    entries: Vec<Entry>,
    queued: usize,
    iovecs: Vec<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
    failure: Option<Failure>,
}

// SAFETY: as for `RecvBatch`: the C headers point only into this batch's own buffers and
// are rebuilt before every syscall.
unsafe impl Send for SendBatch {}

#[derive(Clone, Copy)]
struct Entry {
    buf: usize,
    len: usize,
    to: libc::sockaddr_storage,
    to_len: libc::socklen_t,
}

/// A datagram that a flush could not send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// Where it was going (`None`: the connected peer).
    pub to: Option<SocketAddr>,
    /// Why: the OS error number.
    pub errno: i32,
}

impl Failure {
    /// Return the OS error, for printing.
    pub fn error(&self) -> io::Error {
        io::Error::from_raw_os_error(self.errno)
    }
}

/// What a failed `sendmmsg` means for the batch. The kernel reports an error only when the
/// datagram at the head of the batch could not go; the ones before it were sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SendError {
    /// A signal interrupted the call: try again.
    Interrupted,
    /// No room for now (`EAGAIN`, `ENOBUFS`): wait for room a while, then give the rest up.
    Full,
    /// The socket itself is unusable: nothing more can be sent through it.
    Fatal,
    /// The head datagram cannot go (its destination is invalid, unreachable or refused,
    /// it is too long, a firewall said no, ...): skip it and send the rest.
    Datagram,
}

impl SendError {
    /// Classify the error number of a failed `sendmmsg`.
    fn of(errno: i32) -> SendError {
        match errno {
            libc::EINTR => SendError::Interrupted,
            libc::EAGAIN | libc::ENOBUFS => SendError::Full,
            _ if is_fatal_errno(errno) => SendError::Fatal,
            _ => SendError::Datagram,
        }
    }
}

/// Return whether `err` means the socket itself is unusable (`EBADF`, `ENOTSOCK`,
/// `EFAULT`), rather than that one datagram, one destination or a moment was bad.
pub fn is_fatal(err: &io::Error) -> bool {
    err.raw_os_error().is_some_and(is_fatal_errno)
}

fn is_fatal_errno(errno: i32) -> bool {
    matches!(errno, libc::EBADF | libc::ENOTSOCK | libc::EFAULT)
}

/// What a flush did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Datagrams the kernel took.
    pub sent: usize,
    /// Datagrams given up on (refused by the kernel, or the socket stayed full).
    pub failed: usize,
    /// Among them, those refused because an ICMP port unreachable was queued on the
    /// connected socket (nothing listens at the peer).
    pub refused: usize,
}

/// How long a flush waits for room in a full socket buffer before giving the rest up (the
/// protocol retransmits what is lost).
const FULL_WAIT: Duration = Duration::from_millis(20);

/// Interrupted or full sends one flush tolerates before it gives the rest up: with
/// [`FULL_WAIT`] each, a flush never waits much longer than a third of a second.
const MAX_STALLS: u32 = 16;

impl SendBatch {
    /// Make `buffers` buffers of `size` bytes and room for `entries` queued datagrams.
    pub fn new(buffers: usize, size: usize, entries: usize) -> SendBatch {
        let entries = entries.max(1);
        // SAFETY: all-zero is a valid value of these plain C structs.
        let (storage, iovec, header) = unsafe {
            (
                std::mem::zeroed::<libc::sockaddr_storage>(),
                std::mem::zeroed::<libc::iovec>(),
                std::mem::zeroed::<libc::mmsghdr>(),
            )
        };
        let entry = Entry {
            buf: 0,
            len: 0,
            to: storage,
            to_len: 0,
        };
        SendBatch {
            size,
            bufs: vec![0; buffers.max(1) * size],
            used: 0,
            entries: vec![entry; entries],
            queued: 0,
            iovecs: vec![iovec; entries],
            headers: vec![header; entries],
            failure: None,
        }
    }

    /// Return the next free buffer and its index, or `None` when every buffer is taken.
    pub fn buffer(&mut self) -> Option<(usize, &mut [u8])> {
        let i = self.used;
        let start = i * self.size;
        let buf = self.bufs.get_mut(start..start + self.size)?;
        self.used += 1;
        Some((i, buf))
    }

    /// Give back the buffer `buffer()` handed out last, unused.
    pub fn unuse_last(&mut self) {
        self.used = self.used.saturating_sub(1);
    }

    /// Return whether no more entries fit.
    pub fn is_full(&self) -> bool {
        self.queued == self.entries.len()
    }

    /// Return whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Queue `len` bytes of buffer `buf` to `to` (`None`: the connected peer). Return false
    /// if no entry is free (flush first).
    pub fn push(&mut self, buf: usize, len: usize, to: Option<&SocketAddr>) -> bool {
        let Some(e) = self.entries.get_mut(self.queued) else {
            return false;
        };
        e.buf = buf;
        e.len = len.min(self.size);
        e.to_len = match to {
            Some(a) => to_storage(a, &mut e.to),
            None => 0,
        };
        self.queued += 1;
        true
    }

    /// Send every queued entry. Buffers stay handed out (entries may still be pushed for
    /// them) until [`SendBatch::clear`].
    ///
    /// A datagram the kernel will not send (a bad destination, say) is skipped and counted
    /// as failed, and the rest go on; [`SendBatch::take_failure`] tells the first. Only an
    /// unusable socket ([`is_fatal`]) is an error. The loop ends: each turn either moves past
    /// a datagram or uses up one of a bounded number of waits for room.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<Flushed> {
        let mut done = Flushed::default();
        let base = self.bufs.as_mut_ptr();
        for i in 0..self.queued {
            let e = &mut self.entries[i];
            let (iov, hdr) = (&mut self.iovecs[i], &mut self.headers[i]);
            // SAFETY: `e.buf < used <= buffers`, so the offset is within `bufs`.
            iov.iov_base = unsafe { base.add(e.buf * self.size) }.cast();
            iov.iov_len = e.len;
            hdr.msg_hdr.msg_name = if e.to_len == 0 {
                std::ptr::null_mut()
            } else {
                (&mut e.to as *mut libc::sockaddr_storage).cast()
            };
            hdr.msg_hdr.msg_namelen = e.to_len;
            hdr.msg_hdr.msg_iov = iov;
            hdr.msg_hdr.msg_iovlen = 1;
            hdr.msg_hdr.msg_control = std::ptr::null_mut();
            hdr.msg_hdr.msg_controllen = 0;
            hdr.msg_hdr.msg_flags = 0;
            hdr.msg_len = 0;
        }
        let mut at = 0;
        let mut stalls = 0;
        while at < self.queued {
            // SAFETY: headers `at..queued` were initialised above to point at live iovecs
            // over `bufs` and at live addresses (or null for a connected socket).
            let n = unsafe {
                libc::sendmmsg(
                    fd,
                    self.headers.as_mut_ptr().add(at),
                    (self.queued - at) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if n > 0 {
                at += n as usize;
                done.sent += n as usize;
                continue;
            }
            let err = io::Error::last_os_error();
            // sendmmsg returns 0 only for an empty batch, which `at < queued` rules out;
            // should it happen anyway, treat it as a full socket so that the loop still ends.
            let errno = match n {
                0 => libc::EAGAIN,
                _ => err.raw_os_error().unwrap_or(libc::EIO),
            };
            match SendError::of(errno) {
                SendError::Fatal => {
                    self.queued = 0;
                    return Err(err);
                }
                SendError::Datagram => {
                    self.note_failure(at, errno);
                    at += 1;
                    done.failed += 1;
                    done.refused += usize::from(err.kind() == io::ErrorKind::ConnectionRefused);
                }
                class @ (SendError::Interrupted | SendError::Full) => {
                    stalls += 1;
                    let go_on = stalls <= MAX_STALLS
                        && (class == SendError::Interrupted
                            || wait_writable(fd, FULL_WAIT).unwrap_or(false));
                    if !go_on {
                        self.note_failure(at, errno);
                        done.failed += self.queued - at;
                        break;
                    }
                }
            }
        }
        self.queued = 0;
        Ok(done)
    }

    /// Return the first datagram that failed since the last call, if any.
    pub fn take_failure(&mut self) -> Option<Failure> {
        self.failure.take()
    }

    /// Remember that entry `at` failed with `errno`, unless an earlier failure is kept.
    fn note_failure(&mut self, at: usize, errno: i32) {
        if self.failure.is_none() {
            let to = self
                .entries
                .get(at)
                .filter(|e| e.to_len != 0)
                .and_then(|e| from_storage(&e.to));
            self.failure = Some(Failure { to, errno });
        }
    }

    /// Forget every entry and hand every buffer back.
    pub fn clear(&mut self) {
        self.queued = 0;
        self.used = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_batch_goes_out_and_comes_back_with_addresses() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = b.local_addr().unwrap();
        let mut send = SendBatch::new(2, 64, 4);
        let (i, buf) = send.buffer().unwrap();
        buf[..3].copy_from_slice(b"abc");
        assert!(send.push(i, 3, Some(&to)));
        assert!(send.push(i, 2, Some(&to)));
        let (j, buf) = send.buffer().unwrap();
        buf[..64].fill(7);
        assert!(send.push(j, 64, Some(&to)));
        assert!(send.buffer().is_none());
        let out = send.flush(a.as_raw_fd()).unwrap();
        assert_eq!(
            out,
            Flushed {
                sent: 3,
                failed: 0,
                refused: 0
            }
        );
        assert_eq!(send.take_failure(), None);
        send.clear();

        let mut recv = RecvBatch::new(8, 16);
        let fd = b.as_raw_fd();
        let mut got = Vec::new();
        for _ in 0..100 {
            let n = recv.recv(fd).unwrap();
            for k in 0..n {
                let d = recv.get(k).unwrap();
                assert_eq!(d.from, Some(a.local_addr().unwrap()));
                got.push((d.bytes.to_vec(), d.truncated));
            }
            if got.len() == 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(got[0], (b"abc".to_vec(), false));
        assert_eq!(got[1], (b"ab".to_vec(), false));
        assert_eq!(got[2], (vec![7; 16], true));
        assert!(recv.get(3).is_none());
    }

    #[test]
    fn a_datagram_to_port_zero_fails_alone_and_the_rest_go_out() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let to = b.local_addr().unwrap();
        let nowhere: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut send = SendBatch::new(3, 16, 3);
        for (k, dest) in [to, nowhere, to].iter().enumerate() {
            let (i, buf) = send.buffer().unwrap();
            buf[0] = k as u8;
            assert!(send.push(i, 1, Some(dest)));
        }
        let out = send.flush(a.as_raw_fd()).unwrap();
        assert_eq!(
            out,
            Flushed {
                sent: 2,
                failed: 1,
                refused: 0
            }
        );
        let failure = send.take_failure().unwrap();
        assert_eq!(failure.to, Some(nowhere));
        assert_eq!(failure.errno, libc::EINVAL);
        assert_eq!(send.take_failure(), None);
        let mut got = [0u8; 16];
        for k in [0u8, 2] {
            let (n, from) = b.recv_from(&mut got).unwrap();
            assert_eq!((&got[..n], from), (&[k][..], a.local_addr().unwrap()));
        }
    }

    #[test]
    fn only_an_unusable_socket_is_fatal() {
        for errno in [libc::EBADF, libc::ENOTSOCK, libc::EFAULT] {
            assert_eq!(SendError::of(errno), SendError::Fatal);
            assert!(is_fatal(&io::Error::from_raw_os_error(errno)));
        }
        for errno in [
            libc::EINVAL,
            libc::EHOSTUNREACH,
            libc::ENETUNREACH,
            libc::EPERM,
            libc::EACCES,
            libc::EMSGSIZE,
            libc::ECONNREFUSED,
            libc::EADDRNOTAVAIL,
            libc::EDESTADDRREQ,
        ] {
            assert_eq!(SendError::of(errno), SendError::Datagram, "errno {errno}");
            assert!(!is_fatal(&io::Error::from_raw_os_error(errno)));
        }
        assert_eq!(SendError::of(libc::EAGAIN), SendError::Full);
        assert_eq!(SendError::of(libc::ENOBUFS), SendError::Full);
        assert_eq!(SendError::of(libc::EINTR), SendError::Interrupted);
        assert!(!is_fatal(&io::Error::other("no errno")));
    }

    #[test]
    fn a_closed_socket_is_fatal() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = a.local_addr().unwrap();
        let mut send = SendBatch::new(1, 16, 1);
        let (i, _) = send.buffer().unwrap();
        assert!(send.push(i, 1, Some(&to)));
        // An fd that is open but not a socket.
        let file = std::fs::File::open("/dev/null").unwrap();
        let err = send.flush(file.as_raw_fd()).unwrap_err();
        assert!(is_fatal(&err), "{err}");
        assert!(send.is_empty());
    }

    #[test]
    fn a_closed_port_shows_as_refused_on_receive_and_on_send() {
        // Bound and released: nothing listens there.
        let closed = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(closed).unwrap();
        let fd = a.as_raw_fd();
        let mut send = SendBatch::new(1, 8, 1);
        let mut recv = RecvBatch::new(1, 8);
        let (i, _) = send.buffer().unwrap();
        let mut send_one = || {
            assert!(send.push(i, 1, None));
            send.flush(fd).unwrap()
        };
        // The datagram goes out; the ICMP port unreachable comes back to the socket.
        assert_eq!(send_one().sent, 1);
        let ready = crate::socket::wait_readable(fd, None, Duration::from_secs(5)).unwrap();
        assert!(ready.socket);
        assert_eq!(recv.recv(fd).unwrap(), 0);
        assert!(recv.refused());
        assert_eq!(recv.recv(fd).unwrap(), 0);
        assert!(!recv.refused(), "each refusal is reported once");
        // Now the refusal is taken by the next send instead.
        assert_eq!(send_one().sent, 1);
        crate::socket::wait_readable(fd, None, Duration::from_secs(5)).unwrap();
        let out = send_one();
        assert_eq!((out.sent, out.failed, out.refused), (0, 1, 1));
    }
}
