//! Batched datagram I/O: one `recvmmsg(2)` or `sendmmsg(2)` moves up to a batch of
//! datagrams, so the per-syscall cost is paid once per batch instead of once per packet.
//! With segmentation offload ([`offload`](crate::offload)) one entry of either carries a
//! run of datagrams: a send groups equal-size datagrams to one destination behind one
//! `UDP_SEGMENT`, and a receive cuts a `UDP_GRO` buffer back into datagrams at its stride,
//! so that callers still see one datagram at a time.
//!
//! Both batches own every buffer they use, allocated once: nothing allocates per packet.
//! The C headers (`mmsghdr`, `iovec`, control messages) point into those buffers and are
//! rebuilt right before each syscall, so moving a batch never leaves a dangling pointer
//! behind.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::time::Duration;

use crate::offload::{
    gro_split, gro_stride, gso_run, set_segment, Control, GRO_BUFFER, GRO_MAX_SEGMENTS,
};
use crate::sockaddr::{from_storage, to_storage};
use crate::socket::wait_writable;

/// Datagrams received by one `recvmmsg`.
pub struct RecvBatch {
    /// The longest datagram kept whole; a longer one is reported cut.
    size: usize,
    /// Bytes per receive buffer: `size`, or [`GRO_BUFFER`] with GRO.
    room: usize,
    gro: bool,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    iovecs: Vec<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
    controls: Vec<Control>,
    /// The datagrams of the last `recv`, GRO buffers cut at their stride.
    datagrams: Vec<Received>,
    received: usize,
    /// Receive buffers the last `recv` used (datagrams copied in later go after them).
    entries: usize,
    refused: bool,
}

// SAFETY: the raw pointers inside `iovecs` and `headers` point only into this batch's own
// heap buffers, are rewritten before every syscall and are never dereferenced by Rust code
// outside the calls that fill them; no other thread can reach them.
unsafe impl Send for RecvBatch {}

/// Where one received datagram lies.
#[derive(Debug, Clone, Copy, Default)]
struct Received {
    /// The receive buffer (and source address) it came in.
    entry: usize,
    /// Its first byte in `bufs`.
    start: usize,
    /// Its length, at most `size`.
    len: usize,
    truncated: bool,
}

/// One received datagram.
#[derive(Debug)]
pub struct Datagram<'a> {
    /// Its bytes.
    pub bytes: &'a [u8],
    /// Where it came from.
    pub from: Option<SocketAddr>,
    /// Whether it was longer than the batch's datagram size and cut.
    pub truncated: bool,
}

impl RecvBatch {
    /// Make room for `batch` datagrams of up to `size` bytes each (no GRO).
    pub fn new(batch: usize, size: usize) -> RecvBatch {
        RecvBatch::with_gro(batch, size, false)
    }

    /// Make room for `batch` receive buffers for datagrams of up to `size` bytes each; with
    /// `gro` (the socket has `UDP_GRO` on), each buffer holds a coalesced run of them.
    pub fn with_gro(batch: usize, size: usize, gro: bool) -> RecvBatch {
        let batch = batch.max(1);
        let room = if gro { GRO_BUFFER.max(size) } else { size };
        let per_entry = if gro { GRO_MAX_SEGMENTS } else { 1 };
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
            room,
            gro,
            bufs: vec![0; batch * room],
            addrs: vec![storage; batch],
            iovecs: vec![iovec; batch],
            headers: vec![header; batch],
            controls: vec![Control::EMPTY; if gro { batch } else { 0 }],
            datagrams: vec![Received::default(); batch * per_entry],
            received: 0,
            entries: 0,
            refused: false,
        }
    }

    /// Receive what is waiting on non-blocking `fd`, up to a batch; return how many
    /// datagrams came (a GRO buffer counts as the datagrams it holds). Nothing waiting is
    /// `Ok(0)`, and so is a refusal ([`RecvBatch::refused`]).
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.clear_received();
        let base = self.bufs.as_mut_ptr();
        for (i, ((iov, hdr), addr)) in self
            .iovecs
            .iter_mut()
            .zip(self.headers.iter_mut())
            .zip(self.addrs.iter_mut())
            .enumerate()
        {
            // SAFETY: `i * room` is within `bufs` (len `batch * room`).
            iov.iov_base = unsafe { base.add(i * self.room) }.cast();
            iov.iov_len = self.room;
            hdr.msg_hdr.msg_name = (addr as *mut libc::sockaddr_storage).cast();
            hdr.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            hdr.msg_hdr.msg_iov = iov;
            hdr.msg_hdr.msg_iovlen = 1;
            match self.controls.get_mut(i) {
                Some(c) => {
                    hdr.msg_hdr.msg_control = c.as_mut_ptr();
                    hdr.msg_hdr.msg_controllen = size_of::<Control>() as _;
                }
                None => {
                    hdr.msg_hdr.msg_control = std::ptr::null_mut();
                    hdr.msg_hdr.msg_controllen = 0;
                }
            }
            hdr.msg_hdr.msg_flags = 0;
            hdr.msg_len = 0;
        }
        // SAFETY: every header points at a live iovec covering `room` bytes of `bufs`, at a
        // live sockaddr_storage with its size, and at a live control buffer with its size
        // (or none); the count passed is the array length.
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
        let entries = (n as usize).min(self.headers.len());
        for entry in 0..entries {
            self.split(entry);
        }
        self.entries = entries;
        Ok(self.received)
    }

    /// Forget the last `recv`'s datagrams, as a `recv` that found none would.
    pub fn clear_received(&mut self) {
        self.received = 0;
        self.entries = 0;
        self.refused = false;
    }

    /// Return whether the batch reads `UDP_GRO` buffers.
    pub fn has_gro(&self) -> bool {
        self.gro
    }

    /// Return how many more datagrams [`RecvBatch::push_copy`] can take.
    pub fn room_left(&self) -> usize {
        self.addrs.len() - self.entries
    }

    /// Return how many datagrams the batch holds.
    pub fn len(&self) -> usize {
        self.received
    }

    /// Return whether the batch holds no datagram.
    pub fn is_empty(&self) -> bool {
        self.received == 0
    }

    /// Add a datagram received some other way (the AF_XDP path) after those of the last
    /// `recv`, copied into a free receive buffer; false if none is free. A datagram longer
    /// than the batch's size is cut and says so, as one from the socket would.
    pub fn push_copy(&mut self, bytes: &[u8], from: SocketAddr) -> bool {
        let entry = self.entries;
        let (Some(addr), Some(slot)) = (
            self.addrs.get_mut(entry),
            self.datagrams.get_mut(self.received),
        ) else {
            return false;
        };
        let len = bytes.len().min(self.size);
        let start = entry * self.room;
        let Some(buf) = self.bufs.get_mut(start..start + len) else {
            return false;
        };
        buf.copy_from_slice(&bytes[..len]);
        to_storage(&from, addr);
        *slot = Received {
            entry,
            start,
            len,
            truncated: bytes.len() > self.size,
        };
        self.entries += 1;
        self.received += 1;
        true
    }

    /// List the datagrams of receive buffer `entry`: one, or a GRO run cut at its stride.
    fn split(&mut self, entry: usize) {
        let hdr = &self.headers[entry];
        let len = (hdr.msg_len as usize).min(self.room);
        let cut = hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        let stride = if self.gro {
            gro_stride(&hdr.msg_hdr)
        } else {
            None
        };
        let mut parts = gro_split(len, stride).peekable();
        while let Some((at, part)) = parts.next() {
            let Some(slot) = self.datagrams.get_mut(self.received) else {
                // More than a buffer can hold (the kernel never coalesces that many): the
                // rest is lost, as an overflowing socket buffer would lose it.
                return;
            };
            let last = parts.peek().is_none();
            *slot = Received {
                entry,
                start: entry * self.room + at,
                len: part.min(self.size),
                truncated: part > self.size || (cut && last),
            };
            self.received += 1;
        }
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
        let d = self.datagrams.get(i)?;
        Some(Datagram {
            bytes: self.bufs.get(d.start..d.start + d.len)?,
            from: self.addrs.get(d.entry).and_then(from_storage),
            truncated: d.truncated,
        })
    }
}

/// Datagrams queued for one `sendmmsg`. Several entries may share one buffer (replicas of
/// a multicast). With GSO ([`SendBatch::set_gso`]) a flush groups the queued datagrams by
/// destination (keeping their order per destination) and sends each run of equal-size
/// datagrams to one destination as one `UDP_SEGMENT` message.
pub struct SendBatch {
    size: usize,
    bufs: Vec<u8>,
    used: usize,
    entries: Vec<Entry>,
    queued: usize,
    gso: bool,
    /// The order a flush sends the entries in.
    order: Vec<usize>,
    /// One per entry, in `order`: a message's datagrams are consecutive iovecs.
    iovecs: Vec<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
    controls: Vec<Control>,
    /// How many datagrams each built message carries.
    segments: Vec<usize>,
    failure: Option<Failure>,
}

// SAFETY: as for `RecvBatch`: the C headers point only into this batch's own buffers and
// are rebuilt before every syscall.
unsafe impl Send for SendBatch {}

#[derive(Clone, Copy)]
struct Entry {
    buf: usize,
    len: usize,
    dest: Option<SocketAddr>,
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
            dest: None,
            to: storage,
            to_len: 0,
        };
        SendBatch {
            size,
            bufs: vec![0; buffers.max(1) * size],
            used: 0,
            entries: vec![entry; entries],
            queued: 0,
            gso: false,
            order: Vec::with_capacity(entries),
            iovecs: vec![iovec; entries],
            headers: vec![header; entries],
            controls: vec![Control::EMPTY; entries],
            segments: vec![0; entries],
            failure: None,
        }
    }

    /// Send runs of equal-size datagrams to one destination as one GSO message (the socket
    /// must support `UDP_SEGMENT`: [`Offload::enable`](crate::offload::Offload::enable)).
    /// A send that fails with `EIO` turns it off again.
    pub fn set_gso(&mut self, on: bool) {
        self.gso = on;
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
        e.dest = to.copied();
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
    /// as failed, and the rest go on; [`SendBatch::take_failure`] tells the first. A GSO
    /// message the kernel refuses is sent again one datagram at a time, so that each
    /// datagram's fate is its own (and `EIO`, a device that cannot segment, turns GSO off).
    /// Only an unusable socket ([`is_fatal`]) is an error. The loop ends: each turn either
    /// moves past a datagram, splits a GSO message once, or uses up one of a bounded number
    /// of waits for room.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<Flushed> {
        let mut done = Flushed::default();
        self.arrange();
        // Entries before `at` (in `order`) are done; those before `alone` go one per message.
        let mut at = 0;
        let mut alone = 0;
        let mut stalls = 0;
        while at < self.queued {
            let messages = self.build(at, alone);
            // SAFETY: `build` initialised headers `0..messages` to point at live iovecs
            // over `bufs`, at live addresses (or null for a connected socket) and at live
            // control buffers (or none); `messages` is at most the array length.
            let n = unsafe {
                libc::sendmmsg(
                    fd,
                    self.headers.as_mut_ptr(),
                    messages as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if n > 0 {
                let sent: usize = self.segments[..(n as usize).min(messages)].iter().sum();
                at += sent;
                done.sent += sent;
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
                SendError::Datagram if self.segments[0] > 1 => {
                    // Retry the run one datagram at a time: each gets its own verdict.
                    if errno == libc::EIO {
                        self.gso = false;
                    }
                    alone = at + self.segments[0];
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

    /// Decide the order of the queued entries: as queued, or with GSO grouped by
    /// destination, each destination's datagrams in the order they were queued (the daemon
    /// queues a result to every lane, then the next result to every lane: grouped, each
    /// lane's results make one run).
    fn arrange(&mut self) {
        self.order.clear();
        self.order.extend(0..self.queued);
        let entries = &self.entries[..self.queued];
        let mixed = entries.windows(2).any(|w| w[0].dest != w[1].dest);
        if self.gso && mixed {
            self.order
                .sort_unstable_by(|&a, &b| entries[a].dest.cmp(&entries[b].dest).then(a.cmp(&b)));
        }
    }

    /// Build the headers for the entries from `order[at]` on, GSO runs where allowed (not
    /// before `order[alone]`); return how many messages.
    fn build(&mut self, at: usize, alone: usize) -> usize {
        let base = self.bufs.as_mut_ptr();
        let mut e = at;
        let mut m = 0;
        while e < self.queued && m < self.headers.len() {
            let run = if self.gso && e >= alone {
                let entries = &self.entries;
                gso_run(
                    self.order[e..self.queued]
                        .iter()
                        .map(|&i| (entries[i].dest, entries[i].len)),
                )
                .max(1)
            } else {
                1
            };
            for k in e..e + run {
                let entry = &self.entries[self.order[k]];
                let iov = &mut self.iovecs[k];
                // SAFETY: `entry.buf < used <= buffers`, so the offset is within `bufs`.
                iov.iov_base = unsafe { base.add(entry.buf * self.size) }.cast();
                iov.iov_len = entry.len;
            }
            let first = &mut self.entries[self.order[e]];
            let hdr = &mut self.headers[m];
            hdr.msg_hdr.msg_name = if first.to_len == 0 {
                std::ptr::null_mut()
            } else {
                (&mut first.to as *mut libc::sockaddr_storage).cast()
            };
            hdr.msg_hdr.msg_namelen = first.to_len;
            hdr.msg_hdr.msg_iov = &mut self.iovecs[e];
            hdr.msg_hdr.msg_iovlen = run as _;
            hdr.msg_hdr.msg_control = std::ptr::null_mut();
            hdr.msg_hdr.msg_controllen = 0;
            if run > 1 {
                // `gso_run` keeps a run's datagrams under 65,000 bytes.
                let segment = u16::try_from(first.len).unwrap_or(u16::MAX);
                set_segment(&mut hdr.msg_hdr, &mut self.controls[m], segment);
            }
            hdr.msg_hdr.msg_flags = 0;
            hdr.msg_len = 0;
            self.segments[m] = run;
            e += run;
            m += 1;
        }
        m
    }

    /// Offer each queued datagram, in order, to `take` (its bytes and destination); those
    /// it takes (returns true for) leave the queue, the others stay for the next flush.
    /// Return how many were taken.
    pub fn take_queued(
        &mut self,
        mut take: impl FnMut(&[u8], Option<&SocketAddr>) -> bool,
    ) -> usize {
        let mut kept = 0;
        for i in 0..self.queued {
            let e = self.entries[i];
            let start = e.buf * self.size;
            let bytes = self.bufs.get(start..start + e.len).unwrap_or(&[]);
            if !take(bytes, e.dest.as_ref()) {
                self.entries[kept] = e;
                kept += 1;
            }
        }
        let taken = self.queued - kept;
        self.queued = kept;
        taken
    }

    /// Return the first datagram that failed since the last call, if any.
    pub fn take_failure(&mut self) -> Option<Failure> {
        self.failure.take()
    }

    /// Remember that entry `at` failed with `errno`, unless an earlier failure is kept.
    fn note_failure(&mut self, at: usize, errno: i32) {
        if self.failure.is_none() {
            let to = self
                .order
                .get(at)
                .and_then(|&i| self.entries.get(i))
                .and_then(|e| e.dest);
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

    /// Datagrams copied in from another path go after the socket's, up to one per buffer,
    /// cut and flagged past the batch's size; queued datagrams taken elsewhere leave the
    /// send queue, the rest keep their order.
    #[test]
    fn datagrams_from_another_path_join_the_batches() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"socket", rx.local_addr().unwrap()).unwrap();
        let mut recv = RecvBatch::new(3, 8);
        let from: SocketAddr = "10.0.0.9:7".parse().unwrap();
        let mut got = 0;
        for _ in 0..1000 {
            got = recv.recv(rx.as_raw_fd()).unwrap();
            if got > 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!((got, recv.room_left()), (1, 2));
        assert!(recv.push_copy(b"frame", from));
        assert!(recv.push_copy(b"much too long", from));
        assert!(!recv.push_copy(b"no room", from));
        assert_eq!(recv.len(), 3);
        assert_eq!(recv.get(0).unwrap().bytes, b"socket");
        let d = recv.get(1).unwrap();
        assert_eq!(
            (d.bytes, d.from, d.truncated),
            (&b"frame"[..], Some(from), false)
        );
        let d = recv.get(2).unwrap();
        assert_eq!((d.bytes, d.truncated), (&b"much too"[..], true));
        recv.clear_received();
        assert!(recv.is_empty() && recv.room_left() == 3);

        let mut send = SendBatch::new(4, 8, 4);
        for k in 0..4u8 {
            let (i, buf) = send.buffer().unwrap();
            buf[0] = k;
            send.push(i, 1, Some(&from));
        }
        let taken = send.take_queued(|bytes, to| {
            assert_eq!(to, Some(&from));
            bytes[0] % 2 == 0
        });
        assert_eq!(taken, 2);
        let mut left = Vec::new();
        send.take_queued(|bytes, _| {
            left.push(bytes[0]);
            false
        });
        assert_eq!(left, [1, 3]);
    }

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

    /// Receive until `want` datagrams came or five seconds passed.
    fn receive_all(recv: &mut RecvBatch, fd: RawFd, want: usize) -> Vec<(Vec<u8>, bool)> {
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while got.len() < want && std::time::Instant::now() < deadline {
            crate::socket::wait_readable(fd, None, Duration::from_millis(50)).unwrap();
            let n = recv.recv(fd).unwrap();
            for k in 0..n {
                let d = recv.get(k).unwrap();
                got.push((d.bytes.to_vec(), d.truncated));
            }
        }
        got
    }

    fn offloaded() -> Option<(UdpSocket, UdpSocket)> {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (oa, ob) = (
            crate::offload::Offload::enable(a.as_raw_fd()),
            crate::offload::Offload::enable(b.as_raw_fd()),
        );
        (oa.gso && ob.gro).then_some((a, b))
    }

    #[test]
    fn gso_runs_per_destination_come_back_whole_through_gro() {
        let Some((a, b)) = offloaded() else {
            eprintln!("no UDP GSO/GRO on this kernel: nothing to test");
            return;
        };
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (to_b, to_c) = (b.local_addr().unwrap(), c.local_addr().unwrap());
        let mut send = SendBatch::new(8, 128, 16);
        send.set_gso(true);
        // Interleaved as the daemon queues replicas: b, c, b, c, ... then a short one to b.
        for k in 0..5u8 {
            let (i, buf) = send.buffer().unwrap();
            buf[..100].fill(k);
            assert!(send.push(i, 100, Some(&to_b)));
            assert!(send.push(i, 100, Some(&to_c)));
        }
        let (i, buf) = send.buffer().unwrap();
        buf[..40].fill(9);
        assert!(send.push(i, 40, Some(&to_b)));
        let out = send.flush(a.as_raw_fd()).unwrap();
        assert_eq!((out.sent, out.failed), (11, 0));
        send.clear();
        // One receive buffer: the six datagrams to b can only arrive in one call if the
        // kernel kept the GSO run whole and GRO handed it over at its stride.
        let mut recv = RecvBatch::with_gro(1, 128, true);
        let fd = b.as_raw_fd();
        crate::socket::wait_readable(fd, None, Duration::from_secs(5)).unwrap();
        assert_eq!(recv.recv(fd).unwrap(), 6);
        for k in 0..5u8 {
            let d = recv.get(k as usize).unwrap();
            assert_eq!((d.bytes, d.truncated), (&[k; 100][..], false));
            assert_eq!(d.from, Some(a.local_addr().unwrap()));
        }
        let last = recv.get(5).unwrap();
        assert_eq!((last.bytes, last.truncated), (&[9; 40][..], false));
        assert!(recv.get(6).is_none());
        // c got its five, in order, through a plain receive batch.
        let mut plain = RecvBatch::new(8, 128);
        let got = receive_all(&mut plain, c.as_raw_fd(), 5);
        let want: Vec<_> = (0..5u8).map(|k| (vec![k; 100], false)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_gro_run_of_oversized_datagrams_is_cut_datagram_by_datagram() {
        let Some((a, b)) = offloaded() else {
            return;
        };
        let to = b.local_addr().unwrap();
        let mut send = SendBatch::new(1, 300, 4);
        send.set_gso(true);
        let (i, buf) = send.buffer().unwrap();
        buf.fill(3);
        for _ in 0..3 {
            assert!(send.push(i, 300, Some(&to)));
        }
        assert_eq!(send.flush(a.as_raw_fd()).unwrap().sent, 3);
        // Datagrams of up to 100 bytes: each 300-byte one is oversized, not the buffer.
        let mut recv = RecvBatch::with_gro(4, 100, true);
        let got = receive_all(&mut recv, b.as_raw_fd(), 3);
        assert_eq!(got, vec![(vec![3; 100], true); 3]);
    }

    #[test]
    fn a_refused_gso_run_is_retried_one_datagram_at_a_time() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let gso = crate::offload::Offload::enable(a.as_raw_fd()).gso;
        let to = b.local_addr().unwrap();
        let nowhere: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut send = SendBatch::new(1, 16, 8);
        send.set_gso(gso);
        let (i, _) = send.buffer().unwrap();
        for dest in [nowhere, to, nowhere, to, nowhere] {
            assert!(send.push(i, 16, Some(&dest)));
        }
        let out = send.flush(a.as_raw_fd()).unwrap();
        assert_eq!((out.sent, out.failed, out.refused), (2, 3, 0));
        let failure = send.take_failure().unwrap();
        assert_eq!((failure.to, failure.errno), (Some(nowhere), libc::EINVAL));
        let mut recv = RecvBatch::with_gro(4, 16, gso);
        assert_eq!(receive_all(&mut recv, b.as_raw_fd(), 2).len(), 2);
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
