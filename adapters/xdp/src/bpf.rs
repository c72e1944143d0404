//! The three `bpf(2)` commands the data path needs, by hand: create a map, update it, load
//! a program, and link the program to an interface. The attribute unions are written as
//! the small `#[repr(C)]` structs of `include/uapi/linux/bpf.h` they are, each padded to the
//! kernel's expectations (it zero-checks the bytes past what a command reads).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::program::Insn;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;

/// `BPF_MAP_TYPE_ARRAY`.
pub(crate) const MAP_ARRAY: u32 = 2;
/// `BPF_MAP_TYPE_XSKMAP`.
pub(crate) const MAP_XSK: u32 = 17;
/// `BPF_PROG_TYPE_XDP`.
const PROG_XDP: u32 = 6;
/// `BPF_XDP`, the attach type of an XDP link.
const ATTACH_XDP: u32 = 37;
/// `XDP_FLAGS_DRV_MODE`: the driver's own (native) XDP hook, never the generic one.
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

#[repr(C)]
#[derive(Default)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
    pad: [u32; 16],
}

#[repr(C)]
#[derive(Default)]
struct MapElem {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    pad: [u32; 24],
}

#[repr(C)]
#[derive(Default)]
struct LinkCreate {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
    pad: [u32; 12],
}

/// Run `bpf(cmd, attr)`; a non-negative result is a new descriptor (or 0 for updates).
fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, fully initialised `#[repr(C)]` struct laid out as the
    // command's part of `union bpf_attr`, and its size is passed with it; the kernel reads
    // at most that many bytes and writes nothing back for these commands except through
    // the pointers inside, which point at live buffers (see each caller).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut T).cast::<libc::c_void>(),
            size_of::<T>() as libc::c_uint,
        )
    };
    match rc {
        r if r < 0 => Err(io::Error::last_os_error()),
        r => Ok(r),
    }
}

/// Wrap a descriptor `bpf` returned.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("bpf returned no descriptor"))?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Create a map of `entries` entries with 4-byte keys and values.
pub(crate) fn create_map(map_type: u32, entries: u32, name: &str) -> io::Result<OwnedFd> {
    let mut attr = MapCreate {
        map_type,
        key_size: 4,
        value_size: 4,
        max_entries: entries,
        ..MapCreate::default()
    };
    copy_name(&mut attr.map_name, name);
    owned(bpf(BPF_MAP_CREATE, &mut attr)?)
}

/// Set `map[key] = value` (4-byte key and value).
pub(crate) fn update_map(map: &OwnedFd, key: u32, value: u32) -> io::Result<()> {
    let mut attr = MapElem {
        map_fd: map.as_raw_fd() as u32,
        key: (&key as *const u32) as u64,
        value: (&value as *const u32) as u64,
        ..MapElem::default()
    };
    // `key` and `value` live across the call the pointers are read in.
    bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
}

/// Load `insns` as an XDP program; the verifier's log comes back in the error.
pub(crate) fn load_xdp(insns: &[Insn], name: &str) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut log = vec![0u8; 64 * 1024];
    let mut attr = ProgLoad {
        prog_type: PROG_XDP,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        kern_version: 0,
        prog_flags: 0,
        prog_name: [0; 16],
        prog_ifindex: 0,
        expected_attach_type: ATTACH_XDP,
        pad: [0; 24],
    };
    copy_name(&mut attr.prog_name, name);
    // `insns`, `license` and `log` outlive the call.
    match bpf(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => owned(fd),
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let last = text.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            Err(io::Error::new(e.kind(), format!("{e} (verifier: {last})")))
        }
    }
}

/// Attach `prog` to interface `ifindex` in native (driver) mode through a BPF link: the
/// program stays attached while the returned descriptor is open, and goes when it closes
/// (on exit too, even a crash), so nothing is left on the interface.
pub(crate) fn attach_xdp(prog: &OwnedFd, ifindex: u32) -> io::Result<OwnedFd> {
    let mut attr = LinkCreate {
        prog_fd: prog.as_raw_fd() as u32,
        target_ifindex: ifindex,
        attach_type: ATTACH_XDP,
        flags: XDP_FLAGS_DRV_MODE,
        ..LinkCreate::default()
    };
    owned(bpf(BPF_LINK_CREATE, &mut attr)?)
}

fn copy_name(to: &mut [u8; 16], name: &str) {
    for (t, b) in to.iter_mut().take(15).zip(name.bytes()) {
        *t = b;
    }
}
