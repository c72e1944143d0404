//! UDP segmentation offload: one `sendmmsg` entry carries a run of equal-size datagrams to
//! one destination (`UDP_SEGMENT`, GSO), and one `recvmmsg` entry brings back a run of
//! datagrams from one source coalesced into one buffer (`UDP_GRO`), to be cut at the
//! `stride` the kernel reports. On loopback a GSO send stays one buffer all the way to a
//! GRO receiver, so the kernel's per-datagram path runs once per run instead of once per
//! datagram.
//!
//! Both are probed at run time on each socket ([`Offload::enable`]); a kernel without them,
//! or `SWITCHML_NO_GSO=1` in the environment, leaves today's one-datagram-per-entry path.
//! The pure rules — how a batch is cut into runs, how a coalesced buffer is cut into
//! datagrams — live here apart from the syscalls, so that tests can state them.

use std::os::fd::RawFd;

/// The most datagrams one GSO send carries (the kernel's `UDP_MAX_SEGMENTS` of older
/// kernels; newer ones allow 128).
pub const GSO_MAX_SEGMENTS: usize = 64;

/// The most payload bytes one GSO send carries: an IP datagram is at most 65,535 bytes,
/// headers (IPv6's 40 and UDP's 8) included, so stay clear of it.
pub const GSO_MAX_BYTES: usize = 65_000;

/// The bytes of one GRO receive buffer: the largest UDP payload fits, so a coalesced
/// buffer is never cut.
pub const GRO_BUFFER: usize = 1 << 16;

/// The most datagrams one GRO buffer can hold (the kernel's `UDP_GRO_CNT_MAX` is 64; a
/// loopback GSO send of a newer kernel's up to 128 segments arrives whole).
pub const GRO_MAX_SEGMENTS: usize = 128;

/// The environment variable that turns both offloads off (`1`).
pub const NO_GSO_ENV: &str = "SWITCHML_NO_GSO";

/// Which offloads a socket has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offload {
    /// `UDP_SEGMENT` sends work.
    pub gso: bool,
    /// `UDP_GRO` is on: receives may coalesce.
    pub gro: bool,
}

impl Offload {
    /// Neither offload.
    pub const NONE: Offload = Offload {
        gso: false,
        gro: false,
    };

    /// Probe `fd` (a UDP socket): turn `UDP_GRO` on if the kernel knows it, and see whether
    /// it knows `UDP_SEGMENT`. `SWITCHML_NO_GSO=1` skips both.
    pub fn enable(fd: RawFd) -> Offload {
        if disabled_by_env() {
            return Offload::NONE;
        }
        let mut value: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `fd` is the caller's open socket; `value` and `len` are live and `len`
        // holds value's size.
        let gso = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_UDP,
                libc::UDP_SEGMENT,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        } == 0;
        let on: libc::c_int = 1;
        // SAFETY: as above; the option value points at a live c_int of the size passed.
        let gro = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_UDP,
                libc::UDP_GRO,
                (&on as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        } == 0;
        Offload { gso, gro }
    }
}

/// Return whether `SWITCHML_NO_GSO` asks for no offload.
pub fn disabled_by_env() -> bool {
    std::env::var(NO_GSO_ENV).is_ok_and(|v| v.trim() == "1")
}

/// Return how many of `datagrams` (destination, length), taken in order, one GSO send
/// carries: they go to the first one's destination, all but the last are as long as the
/// first and the last no longer, at most [`GSO_MAX_SEGMENTS`] and [`GSO_MAX_BYTES`]. An
/// empty datagram, or none at all, goes alone (0 for none).
pub fn gso_run<D: PartialEq>(mut datagrams: impl Iterator<Item = (D, usize)>) -> usize {
    let Some((to, size)) = datagrams.next() else {
        return 0;
    };
    if size == 0 || size > GSO_MAX_BYTES {
        return 1;
    }
    let (mut count, mut bytes) = (1, size);
    for (d, len) in datagrams {
        if count == GSO_MAX_SEGMENTS || d != to || len > size || bytes + len > GSO_MAX_BYTES {
            break;
        }
        count += 1;
        bytes += len;
        if len < size {
            // A shorter datagram can only end a run.
            break;
        }
    }
    count
}

/// Return the (offset, length) of each datagram in a received buffer of `len` bytes that
/// the kernel coalesced at `stride` (the last may be shorter); no stride, or one no shorter
/// than the buffer, means one datagram.
pub fn gro_split(len: usize, stride: Option<usize>) -> impl Iterator<Item = (usize, usize)> {
    let stride = stride.filter(|&s| s > 0 && s < len).unwrap_or(len.max(1));
    let count = len.div_ceil(stride).max(1);
    (0..count).map(move |i| {
        let at = i * stride;
        (at, stride.min(len - at.min(len)))
    })
}

/// Control-message room: one `UDP_SEGMENT` (a u16) or one `UDP_GRO` (an int), aligned for
/// `cmsghdr`.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub struct Control([u8; 32]);

impl Control {
    /// An empty control buffer.
    pub const EMPTY: Control = Control([0; 32]);

    /// Return a pointer to the buffer and its length, for `msg_control`.
    pub fn as_mut_ptr(&mut self) -> *mut libc::c_void {
        self.0.as_mut_ptr().cast()
    }
}

/// Write a `UDP_SEGMENT` of `size` into `control` and point `hdr` at it.
pub fn set_segment(hdr: &mut libc::msghdr, control: &mut Control, size: u16) {
    // SAFETY: CMSG_SPACE only computes a length.
    let space = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as usize;
    debug_assert!(space <= size_of::<Control>());
    control.0 = [0; 32];
    hdr.msg_control = control.as_mut_ptr();
    hdr.msg_controllen = space as _;
    // SAFETY: `hdr` points at `control`, 8-aligned and `space` bytes long, room for one
    // header with a u16, so CMSG_FIRSTHDR returns a non-null pointer into it, and CMSG_DATA
    // of it has two bytes of room within `control` (written unaligned).
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(hdr);
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = libc::UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), size);
    }
}

/// Return the `UDP_GRO` segment size among the control messages `hdr` came back with.
pub fn gro_stride(hdr: &libc::msghdr) -> Option<usize> {
    if hdr.msg_control.is_null() || hdr.msg_controllen == 0 {
        return None;
    }
    let mut stride = None;
    // SAFETY: `hdr.msg_control`/`msg_controllen` describe the live control buffer that the
    // kernel filled (it sets `msg_controllen` to what it wrote, never more than we gave).
    // CMSG_FIRSTHDR/CMSG_NXTHDR return either null or a header wholly inside it, and we
    // read the int payload only when the header's length says it holds one.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        while !cmsg.is_null() {
            let c = &*cmsg;
            let holds_int =
                c.cmsg_len as usize >= libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize;
            if c.cmsg_level == libc::SOL_UDP && c.cmsg_type == libc::UDP_GRO && holds_int {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                stride = usize::try_from(v).ok();
            }
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
    stride
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(datagrams: &[(u8, usize)]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < datagrams.len() {
            let n = gso_run(datagrams[at..].iter().copied());
            out.push(n);
            at += n;
        }
        out
    }

    #[test]
    fn runs_are_equal_sizes_to_one_destination() {
        assert_eq!(gso_run(std::iter::empty::<(u8, usize)>()), 0);
        // A different destination or a longer datagram starts a new run; a shorter one
        // ends its run.
        let d = [
            (1, 1076),
            (1, 1076),
            (1, 1076),
            (2, 1076),
            (2, 1076),
            (2, 100),
            (2, 1076),
            (2, 2000),
            (1, 1076),
        ];
        assert_eq!(runs(&d), vec![3, 3, 1, 1, 1]);
        // Empty datagrams go alone.
        assert_eq!(runs(&[(1, 0), (1, 0), (1, 5), (1, 5)]), vec![1, 1, 2]);
    }

    #[test]
    fn runs_respect_the_segment_and_byte_limits() {
        let small = vec![(0u8, 100); 150];
        assert_eq!(runs(&small), vec![64, 64, 22]);
        let big = vec![(0u8, 1076); 130];
        // 60 × 1076 = 64,560 bytes fit in 65,000; 61 do not.
        assert_eq!(runs(&big), vec![60, 60, 10]);
        for n in runs(&big) {
            assert!(n * 1076 <= GSO_MAX_BYTES);
        }
        // A datagram too long to share a send goes alone.
        assert_eq!(runs(&[(0, 40_000), (0, 40_000)]), vec![1, 1]);
        assert_eq!(runs(&[(0, 65_507), (0, 1)]), vec![1, 1]);
    }

    #[test]
    fn a_coalesced_buffer_splits_at_the_stride() {
        let split = |len, stride| gro_split(len, stride).collect::<Vec<_>>();
        assert_eq!(
            split(1076 * 3 + 40, Some(1076)),
            vec![(0, 1076), (1076, 1076), (2152, 1076), (3228, 40)]
        );
        assert_eq!(split(2152, Some(1076)), vec![(0, 1076), (1076, 1076)]);
        // No stride, a zero stride or one at least the length: one datagram.
        assert_eq!(split(500, None), vec![(0, 500)]);
        assert_eq!(split(500, Some(0)), vec![(0, 500)]);
        assert_eq!(split(500, Some(500)), vec![(0, 500)]);
        assert_eq!(split(500, Some(9000)), vec![(0, 500)]);
        // An empty datagram is still one.
        assert_eq!(split(0, Some(10)), vec![(0, 0)]);
        assert_eq!(split(0, None), vec![(0, 0)]);
        // Every split covers the buffer exactly, whatever the stride.
        for len in [1usize, 7, 1076, 65_535] {
            for stride in [1usize, 3, 64, 1076, 65_536] {
                let parts = split(len, Some(stride));
                let mut at = 0;
                for (o, l) in parts {
                    assert_eq!(o, at);
                    assert!(l > 0 && l <= stride.max(1).min(len));
                    at += l;
                }
                assert_eq!(at, len, "len {len} stride {stride}");
            }
        }
    }

    #[test]
    fn a_segment_control_message_reads_back() {
        // SAFETY: all-zero is a valid msghdr (null pointers, zero lengths).
        let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
        let mut control = Control::EMPTY;
        set_segment(&mut hdr, &mut control, 1076);
        // The same layout as the kernel's UDP_GRO answer, bar the type and width.
        // SAFETY: as in `set_segment`: the header lies inside `control`.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&hdr);
            assert_eq!((*cmsg).cmsg_type, libc::UDP_SEGMENT);
            (*cmsg).cmsg_type = libc::UDP_GRO;
            (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), 1076);
        }
        hdr.msg_controllen = size_of::<Control>() as _;
        assert_eq!(gro_stride(&hdr), Some(1076));
        hdr.msg_controllen = 0;
        assert_eq!(gro_stride(&hdr), None);
    }
}
