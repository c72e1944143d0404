//! One AF_XDP socket with its own UMEM: the frames it receives into and sends from, and its
//! four rings (fill and RX for receiving, TX and completion for sending). The first half of
//! the frames cycle through fill → RX → fill; the second half are free for sending until the
//! completion ring gives them back.
//!
//! The bind asks for zero-copy first (`XDP_ZEROCOPY`: the NIC DMAs straight into the UMEM)
//! and falls back to copy mode (`XDP_COPY`) when the driver cannot (veth cannot); both with
//! `XDP_USE_NEED_WAKEUP`, so that a busy path makes no syscall the kernel does not ask for.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::ring::Ring;

/// Bytes per UMEM frame (chunk): a page, the largest aligned chunk.
pub const FRAME_SIZE: u32 = 4096;
/// Frames per socket: 16 MiB of UMEM.
const FRAMES: u32 = 4096;
/// Entries per ring: half the frames each way.
const RING: u32 = FRAMES / 2;

/// How a socket was bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The driver moves frames to and from the UMEM itself.
    ZeroCopy,
    /// The kernel copies each frame (drivers without AF_XDP support, veth).
    Copy,
}

/// An AF_XDP socket bound to one queue of one interface.
pub struct Xsk {
    fd: OwnedFd,
    umem: *mut u8,
    umem_len: usize,
    fill: Ring<u64>,
    completion: Ring<u64>,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    /// Send frames not in flight.
    free_tx: Vec<u64>,
    mode: Mode,
    /// RX frames read but not yet handed back to the fill ring.
    pending_rx: Vec<u64>,
}

// SAFETY: the UMEM and rings are owned by this value (unmapped in `Drop`) and touched only
// through `&mut self`; the kernel's side is synchronised by the rings' indices.
unsafe impl Send for Xsk {}

fn check(rc: libc::c_int) -> io::Result<()> {
    match rc {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

fn set<T>(fd: RawFd, opt: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live `T` of the size passed, the option's documented type.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_XDP,
            opt,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })
}

impl Xsk {
    /// Open a socket on queue `queue` of interface `ifindex`, zero-copy if the driver can.
    pub fn open(ifindex: u32, queue: u32) -> io::Result<Xsk> {
        // SAFETY: plain socket(2); the result is checked and owned at once.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor socket(2) just returned, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let umem_len = (FRAMES * FRAME_SIZE) as usize;
        // SAFETY: a fresh private anonymous mapping; checked below.
        let umem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                umem_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if umem == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let umem = umem.cast::<u8>();
        // From here on `Drop` of a partly built value would leak the UMEM: unmap on error.
        let built = Xsk::build(fd, umem, umem_len, ifindex, queue);
        if built.is_err() {
            // SAFETY: the mapping made above, not referenced by anything else.
            unsafe { libc::munmap(umem.cast(), umem_len) };
        }
        built
    }

    fn build(
        fd: OwnedFd,
        umem: *mut u8,
        umem_len: usize,
        ifindex: u32,
        queue: u32,
    ) -> io::Result<Xsk> {
        let raw = fd.as_raw_fd();
        let reg = libc::xdp_umem_reg {
            addr: umem as u64,
            len: umem_len as u64,
            chunk_size: FRAME_SIZE,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        set(raw, libc::XDP_UMEM_REG, &reg)?;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            set(raw, opt, &RING)?;
        }
        // SAFETY: all-zero is a valid value of this plain C struct; getsockopt fills it.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: `off` is live and `len` is its size.
        check(unsafe {
            libc::getsockopt(
                raw,
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                (&mut off as *mut libc::xdp_mmap_offsets).cast(),
                &mut len,
            )
        })?;
        let fill = Ring::map(raw, RING, &off.fr, libc::XDP_UMEM_PGOFF_FILL_RING)?;
        let completion =
            Ring::map(raw, RING, &off.cr, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?.into_consumer();
        let rx = Ring::map(raw, RING, &off.rx, libc::XDP_PGOFF_RX_RING as u64)?.into_consumer();
        let tx = Ring::map(raw, RING, &off.tx, libc::XDP_PGOFF_TX_RING as u64)?;
        let mut xsk = Xsk {
            fd,
            umem,
            umem_len,
            fill,
            completion,
            rx,
            tx,
            free_tx: (RING..FRAMES).map(|f| u64::from(f * FRAME_SIZE)).collect(),
            mode: Mode::Copy,
            pending_rx: (0..RING).map(|f| u64::from(f * FRAME_SIZE)).collect(),
        };
        xsk.refill();
        xsk.mode = xsk.bind(ifindex, queue)?;
        Ok(xsk)
    }

    /// Bind zero-copy, or else in copy mode.
    fn bind(&self, ifindex: u32, queue: u32) -> io::Result<Mode> {
        let tries = [
            (libc::XDP_ZEROCOPY, Mode::ZeroCopy),
            (libc::XDP_COPY, Mode::Copy),
        ];
        let mut last = None;
        for (flag, mode) in tries {
            let addr = libc::sockaddr_xdp {
                sxdp_family: libc::AF_XDP as u16,
                sxdp_flags: flag | libc::XDP_USE_NEED_WAKEUP,
                sxdp_ifindex: ifindex,
                sxdp_queue_id: queue,
                sxdp_shared_umem_fd: 0,
            };
            // SAFETY: `addr` is a live sockaddr_xdp and its size is passed.
            let rc = unsafe {
                libc::bind(
                    self.fd.as_raw_fd(),
                    (&addr as *const libc::sockaddr_xdp).cast(),
                    size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
                )
            };
            match check(rc) {
                Ok(()) => return Ok(mode),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("bind")))
    }

    /// The socket's descriptor, for `poll` and the XSKMAP.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// How the socket was bound.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Hand read RX frames back to the kernel through the fill ring.
    fn refill(&mut self) {
        let n = self.fill.free().min(self.pending_rx.len() as u32);
        for i in 0..n {
            let addr = self.pending_rx[self.pending_rx.len() - 1 - i as usize];
            self.fill.write(i, addr);
        }
        self.fill.submit(n);
        self.pending_rx.truncate(self.pending_rx.len() - n as usize);
        if n > 0 && self.fill.needs_wakeup() {
            self.kick_rx();
        }
    }

    fn kick_rx(&self) {
        // SAFETY: a zero-length non-blocking receive with no buffer only wakes the driver.
        unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    }

    /// Call `each` with up to `max` received frames; return how many.
    pub fn receive(&mut self, max: usize, mut each: impl FnMut(&[u8])) -> usize {
        let n = self.rx.ready().min(max as u32);
        for i in 0..n {
            let d = self.rx.read(i);
            if let Some(frame) = self.frame(d.addr, d.len as usize) {
                each(frame);
            }
            self.pending_rx.push(d.addr);
        }
        self.rx.release(n);
        self.refill();
        n as usize
    }

    fn frame(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(addr).ok()?;
        let end = start.checked_add(len)?;
        if end > self.umem_len {
            return None;
        }
        // SAFETY: `start..end` lies inside the UMEM (checked), which lives as long as
        // `self`; the kernel wrote this frame before publishing it and does not touch it
        // again until it is back in the fill ring.
        Some(unsafe { std::slice::from_raw_parts(self.umem.add(start), len) })
    }

    /// Take the frames the kernel has finished sending back into the free list.
    fn reap(&mut self) {
        let n = self.completion.ready();
        for i in 0..n {
            self.free_tx.push(self.completion.read(i));
        }
        self.completion.release(n);
    }

    /// Queue one frame written by `write` (given a frame buffer, returning the length to
    /// send); false if no frame or ring entry is free.
    pub fn push(&mut self, write: impl FnOnce(&mut [u8]) -> usize) -> bool {
        if self.free_tx.is_empty() {
            self.reap();
        }
        if self.tx.free() == 0 {
            return false;
        }
        let Some(addr) = self.free_tx.pop() else {
            return false;
        };
        let start = addr as usize;
        // SAFETY: every address in `free_tx` starts a frame of FRAME_SIZE bytes inside the
        // UMEM, and a frame there is not in the kernel's hands (not yet queued, or given back
        // by the completion ring).
        let buf =
            unsafe { std::slice::from_raw_parts_mut(self.umem.add(start), FRAME_SIZE as usize) };
        let len = write(buf).min(FRAME_SIZE as usize);
        self.tx.write(
            0,
            libc::xdp_desc {
                addr,
                len: len as u32,
                options: 0,
            },
        );
        self.tx.submit(1);
        true
    }

    /// Have the kernel send what is queued. In copy mode each `sendto` sends a bounded
    /// number of frames, so go on until the ring is drained, a bounded number of times.
    pub fn kick_tx(&mut self) -> io::Result<()> {
        for _ in 0..64 {
            if self.mode == Mode::ZeroCopy && !self.tx.needs_wakeup() {
                break;
            }
            if self.tx.free() == RING {
                break;
            }
            // SAFETY: a zero-length non-blocking send with no buffer only starts the TX.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            if rc < 0 {
                let err = io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => {
                        self.reap();
                    }
                    _ => return Err(err),
                }
            }
        }
        self.reap();
        Ok(())
    }
}

impl Drop for Xsk {
    fn drop(&mut self) {
        // SAFETY: the UMEM mapping is ours and of this length. The rings unmap themselves;
        // the socket closes after, which takes the UMEM out of the kernel's hands.
        unsafe { libc::munmap(self.umem.cast(), self.umem_len) };
    }
}
