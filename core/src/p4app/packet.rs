//! The dialect's data header, the bytes after UDP (protocol.md §8.1).
//!
//! ```text
//!  0: msg_type (bits 7-4) | unused (bit 3) | size (bits 2-0)
//!  1: job number
//!  2-5: tsi, little-endian
//!  6-7: pool index, big-endian: set (bit 15) | reserved (bit 14) | slot (bits 13-0)
//!  8: e0 (int8) | 9: e1 (int8)
//! 10-: 64 or 256 big-endian int32
//! ```
//!
//! The `tsi` is the one little-endian field: the original client copies a host integer into
//! the frame unconverted, so on every machine it runs on (x86, little-endian) the field is
//! little-endian, and the captures in `shared/p4app/frames` show it so.

use zerocopy::little_endian::U32 as LeU32;
use zerocopy::network_endian::{I32, U16};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::wire::{check_tail_len, split, split_mut, Error, Result};

/// The fixed header, in wire order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Message type (high nibble), an unused bit and the size code (low three bits).
    pub type_size: u8,
    /// The job number (`job_id & 0xFF`).
    pub job: u8,
    /// The packet's index within its job, little-endian.
    pub tsi: LeU32,
    /// Set bit, a reserved bit and the slot.
    pub pool_index: U16,
    /// First exponent.
    pub e0: i8,
    /// Second exponent.
    pub e1: i8,
}

/// Length of the header: the size of [`Header`]; the values follow it.
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();
/// The message type the original client sends and its switch echoes.
pub const MSG_TYPE: u8 = 1;
/// The UDP port the original client sends to (0xBEE0).
pub const SWITCH_PORT: u16 = 48864;
/// The largest slot number the pool index can carry (14 bits).
pub const MAX_SLOT: u16 = SLOT_MASK;

const SET_BIT: u16 = 0x8000;
const RESERVED_BIT: u16 = 0x4000;
const SLOT_MASK: u16 = 0x3fff;
const UNUSED_BIT: u8 = 0x08;
const SIZE_MASK: u8 = 0x07;

/// The number of values a packet carries, from the size code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum P4appSize {
    /// Size code 1: 64 values (308-byte frames), what a standard Tofino pipe serves.
    Elements64,
    /// Size code 3: 256 values (1,076-byte frames), the client's default.
    Elements256,
}

impl P4appSize {
    /// Return the size for a size code; codes 0, 2 and 4–7 are none (the switch drops them).
    pub const fn from_code(code: u8) -> Option<P4appSize> {
        match code {
            1 => Some(P4appSize::Elements64),
            3 => Some(P4appSize::Elements256),
            _ => None,
        }
    }

    /// Return the size that carries `n` values, if one does.
    pub const fn of_elements(n: usize) -> Option<P4appSize> {
        match n {
            64 => Some(P4appSize::Elements64),
            256 => Some(P4appSize::Elements256),
            _ => None,
        }
    }

    /// Return the size code.
    pub const fn code(self) -> u8 {
        match self {
            P4appSize::Elements64 => 1,
            P4appSize::Elements256 => 3,
        }
    }

    /// Return the number of int32 values.
    pub const fn elements(self) -> usize {
        match self {
            P4appSize::Elements64 => 64,
            P4appSize::Elements256 => 256,
        }
    }
}

/// A zero-copy view of a dialect packet (the UDP payload).
#[derive(Debug, Clone)]
pub struct P4appPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> P4appPacket<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        P4appPacket { buffer }
    }

    /// Wrap a buffer and check its length.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Return the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Check that the buffer holds the header and exactly the values its size code names.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let size = self.size().ok_or(Error::Field("size"))?;
        check_tail_len(len, HEADER_LEN, || 4 * size.elements())
    }

    /// Return the fixed header in place. Panics if the buffer is shorter than it.
    pub fn header(&self) -> &Header {
        split::<Header>(self.buffer.as_ref()).0
    }

    /// Return the message type field (high nibble of the first byte).
    pub fn msg_type(&self) -> u8 {
        self.header().type_size >> 4
    }

    /// Return the unused bit 3 of the first byte.
    pub fn unused_bit(&self) -> bool {
        self.header().type_size & UNUSED_BIT != 0
    }

    /// Return the size code field.
    pub fn size_code(&self) -> u8 {
        self.header().type_size & SIZE_MASK
    }

    /// Return the size the size code names, `None` for a code the switch drops.
    pub fn size(&self) -> Option<P4appSize> {
        P4appSize::from_code(self.size_code())
    }

    /// Return the job number field.
    pub fn job(&self) -> u8 {
        self.header().job
    }

    /// Return the tsi field (little-endian on the wire).
    pub fn tsi(&self) -> u32 {
        self.header().tsi.get()
    }

    /// Return the whole pool index field.
    pub fn pool_index(&self) -> u16 {
        self.header().pool_index.get()
    }

    /// Return the shadow set bit (bit 15 of the pool index).
    pub fn set(&self) -> bool {
        self.pool_index() & SET_BIT != 0
    }

    /// Return the slot (bits 13–0 of the pool index).
    pub fn slot(&self) -> u16 {
        self.pool_index() & SLOT_MASK
    }

    /// Return the e0 exponent field.
    pub fn e0(&self) -> i8 {
        self.header().e0
    }

    /// Return the e1 exponent field.
    pub fn e1(&self) -> i8 {
        self.header().e1
    }

    /// Return the values in place as network-endian int32 (a trailing partial value, which
    /// `check_len` rules out, is left out).
    pub fn values(&self) -> &[I32] {
        let tail = split::<Header>(self.buffer.as_ref()).1;
        <[I32]>::ref_from_prefix_with_elems(tail, tail.len() / 4).map_or(&[], |(v, _)| v)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> P4appPacket<T> {
    /// Return the fixed header in place, mutably. Panics if the buffer is shorter than it.
    pub fn header_mut(&mut self) -> &mut Header {
        split_mut::<Header>(self.buffer.as_mut()).0
    }

    /// Set the message type field (the low four bits of `v`).
    pub fn set_msg_type(&mut self, v: u8) {
        let h = self.header_mut();
        h.type_size = (h.type_size & 0x0f) | (v << 4);
    }

    /// Set the size code field (the low three bits of `v`).
    pub fn set_size_code(&mut self, v: u8) {
        let h = self.header_mut();
        h.type_size = (h.type_size & !SIZE_MASK) | (v & SIZE_MASK);
    }

    /// Set the job number field.
    pub fn set_job(&mut self, v: u8) {
        self.header_mut().job = v;
    }

    /// Set the tsi field.
    pub fn set_tsi(&mut self, v: u32) {
        self.header_mut().tsi.set(v);
    }

    /// Set the whole pool index field.
    pub fn set_pool_index(&mut self, v: u16) {
        self.header_mut().pool_index.set(v);
    }

    /// Set the e0 exponent field.
    pub fn set_e0(&mut self, v: i8) {
        self.header_mut().e0 = v;
    }

    /// Set the e1 exponent field.
    pub fn set_e1(&mut self, v: i8) {
        self.header_mut().e1 = v;
    }

    /// Return the values in place as network-endian int32, mutably.
    pub fn values_mut(&mut self) -> &mut [I32] {
        let tail = split_mut::<Header>(self.buffer.as_mut()).1;
        let n = tail.len() / 4;
        <[I32]>::mut_from_prefix_with_elems(tail, n).map_or(&mut [], |(v, _)| v)
    }
}

/// A validated dialect header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct P4appRepr {
    /// Message type, 0–15 ([`MSG_TYPE`] from the original client; others are kept).
    pub msg_type: u8,
    /// Bit 3 of the first byte, which the original neither sets nor reads; kept.
    pub unused_bit: bool,
    /// How many values follow.
    pub size: P4appSize,
    /// Job number.
    pub job: u8,
    /// The packet's index within its job.
    pub tsi: u32,
    /// The shadow set: `false` for set 0, `true` for set 1.
    pub set: bool,
    /// The slot, 0..=[`MAX_SLOT`].
    pub slot: u16,
    /// First exponent.
    pub e0: i8,
    /// Second exponent.
    pub e1: i8,
}

impl P4appRepr {
    /// Parse and validate the header (values are read through the packet).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &P4appPacket<&T>) -> Result<P4appRepr> {
        packet.check_len()?;
        let size = packet.size().ok_or(Error::Field("size"))?;
        // Bit 14 is 0 in every frame of the original; a slot number above 14 bits would be
        // read differently by its switch, so it is refused rather than guessed.
        if packet.pool_index() & RESERVED_BIT != 0 {
            return Err(Error::Reserved("pool_index.bit14"));
        }
        Ok(P4appRepr {
            msg_type: packet.msg_type(),
            unused_bit: packet.unused_bit(),
            size,
            job: packet.job(),
            tsi: packet.tsi(),
            set: packet.set(),
            slot: packet.slot(),
            e0: packet.e0(),
            e1: packet.e1(),
        })
    }

    /// Return the length of the whole packet: header and values.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + 4 * self.size.elements()
    }

    /// Write the header; the values are written through [`P4appPacket::values_mut`]. The
    /// packet must be at least `HEADER_LEN` bytes long; `msg_type` and `slot` are masked to
    /// their widths.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut P4appPacket<&mut T>) {
        let unused = if self.unused_bit { UNUSED_BIT } else { 0 };
        let set = if self.set { SET_BIT } else { 0 };
        *packet.header_mut() = Header {
            type_size: (self.msg_type << 4) | unused | self.size.code(),
            job: self.job,
            tsi: LeU32::new(self.tsi),
            pool_index: U16::new(set | (self.slot & SLOT_MASK)),
            e0: self.e0,
            e1: self.e1,
        };
    }
}

/// One line: `P4app type 1 size 64 job 0 tsi 518 slot 6 set 0 e0 15 e1 0`.
impl core::fmt::Display for P4appRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "P4app type {} size {} job {} tsi {} slot {} set {} e0 {} e1 {}",
            self.msg_type,
            self.size.elements(),
            self.job,
            self.tsi,
            self.slot,
            u8::from(self.set),
            self.e0,
            self.e1
        )
    }
}

#[cfg(test)]
#[path = "packet_tests.rs"]
mod tests;
