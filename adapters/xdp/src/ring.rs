//! An AF_XDP ring: a power-of-two array of descriptors in memory shared with the kernel,
//! with a producer and a consumer index. One side only ever writes each index, and reads
//! the other's with acquire ordering, so no lock is needed (the kernel's `xsk_queue.h`
//! protocol). The four rings differ only in entry type and in which side produces.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

/// A mapped ring of entries `T` (`u64` frame addresses, or `libc::xdp_desc`).
pub(crate) struct Ring<T> {
    map: *mut libc::c_void,
    map_len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    entries: *mut T,
    mask: u32,
    /// Our side's index, published with `submit`/`release`.
    local: u32,
}

// SAFETY: the ring's memory is owned by this value (unmapped in `Drop`) and only touched
// through `&mut self` or atomics; moving it to another thread moves that ownership.
unsafe impl<T> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    /// Map the ring of `size` entries of socket `fd` at page offset `pgoff`, laid out as
    /// `off` says.
    pub(crate) fn map(
        fd: RawFd,
        size: u32,
        off: &libc::xdp_ring_offset,
        pgoff: u64,
    ) -> io::Result<Ring<T>> {
        let map_len = off.desc as usize + size as usize * size_of::<T>();
        // SAFETY: a shared mapping of the socket's ring, of the length the kernel's layout
        // gives; the kernel checks the offset and length, and we check the result.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff as libc::off_t,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let at = |o: u64| map.cast::<u8>().wrapping_add(o as usize);
        let mut ring = Ring {
            map,
            map_len,
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(off.flags).cast(),
            entries: at(off.desc).cast(),
            mask: size - 1,
            local: 0,
        };
        // A fresh ring starts at zero on both sides; read ours back anyway.
        ring.local = ring.index(true);
        Ok(ring)
    }

    /// Our index: the producer's if `producer`, else the consumer's.
    fn index(&self, producer: bool) -> u32 {
        let p = if producer {
            self.producer
        } else {
            self.consumer
        };
        // SAFETY: `p` points at an aligned u32 inside the live mapping.
        unsafe { &*p }.load(Ordering::Relaxed)
    }

    fn other(&self, theirs: *const AtomicU32) -> u32 {
        // SAFETY: as in `index`; acquire pairs with the kernel's release of its index, so
        // the entries it published are visible.
        unsafe { &*theirs }.load(Ordering::Acquire)
    }

    /// Whether the kernel asks to be woken (`XDP_RING_NEED_WAKEUP`).
    pub(crate) fn needs_wakeup(&self) -> bool {
        // SAFETY: as in `index`.
        unsafe { &*self.flags }.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    /// Producer side: how many entries are free for us to write.
    pub(crate) fn free(&self) -> u32 {
        (self.mask + 1) - self.local.wrapping_sub(self.other(self.consumer))
    }

    /// Producer side: write entry `i` past our index (`i < free()`).
    pub(crate) fn write(&mut self, i: u32, value: T) {
        let at = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: `at <= mask`, inside the mapped array; the kernel does not read the entry
        // until `submit` publishes it.
        unsafe { self.entries.add(at).write(value) }
    }

    /// Producer side: publish `n` written entries.
    pub(crate) fn submit(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        // SAFETY: as in `index`; release makes the entries visible before the index.
        unsafe { &*self.producer }.store(self.local, Ordering::Release);
    }

    /// Consumer side: how many entries the kernel has published for us.
    pub(crate) fn ready(&self) -> u32 {
        self.other(self.producer).wrapping_sub(self.local)
    }

    /// Consumer side: read entry `i` past our index (`i < ready()`).
    pub(crate) fn read(&self, i: u32) -> T {
        let at = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: `at <= mask`; the kernel published the entry before its index (acquired
        // in `ready`) and does not reuse it until `release`.
        unsafe { self.entries.add(at).read() }
    }

    /// Consumer side: hand `n` read entries back.
    pub(crate) fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        // SAFETY: as in `index`.
        unsafe { &*self.consumer }.store(self.local, Ordering::Release);
    }

    /// The same ring, used from the consumer side (our index is the consumer's).
    pub(crate) fn into_consumer(mut self) -> Ring<T> {
        self.local = self.index(false);
        self
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours, of this length, and nothing points into it past here.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}
