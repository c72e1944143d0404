//! Reading fuzz input: a cursor over the fuzzer's bytes that never fails.
//!
//! Every check decodes its operations from raw bytes with [`Input`] instead of the
//! `arbitrary` crate, so that a corpus file means the same thing forever (no dependency's
//! encoding can change under it) and `cargo test` replays the corpus with no feature and no
//! fuzzer. Reads past the end give zeros, so every byte string decodes to *something*; each
//! decoder stops when [`Input::is_empty`] says the bytes are used up.
//!
//! The encoding is the plainest one: fixed-width little-endian numbers, one selector byte
//! per choice. [`Output`] writes the same format, for building seed corpora.

/// A cursor over fuzz input bytes.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// Read from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Input { bytes }
    }

    /// Return whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Read one byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// Read a little-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// Read a little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// Read a little-endian i32.
    pub fn i32(&mut self) -> i32 {
        self.u32() as i32
    }

    /// Read a bool (the low bit of a byte).
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// Read a number in `0..n` (`n` ≤ 256; 0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        let b = usize::from(self.u8());
        b.checked_rem(n).unwrap_or(0)
    }

    /// Read a length byte `len` (capped at `max`) and then `len` bytes (fewer at the end).
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let len = usize::from(self.u8()).min(max).min(self.bytes.len());
        let (head, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        head
    }
}

/// Writes the format [`Input`] reads.
#[derive(Debug, Clone, Default)]
pub struct Output {
    bytes: Vec<u8>,
}

impl Output {
    /// Start empty.
    pub fn new() -> Self {
        Output::default()
    }

    /// Return the bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Write one byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.bytes.push(v);
        self
    }

    /// Write a little-endian u16.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Write a little-endian u32.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Write a little-endian i32.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.u32(v as u32)
    }

    /// Write a bool.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u8(u8::from(v))
    }

    /// Write a length byte and the bytes (at most 255 of them).
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        let v = &v[..v.len().min(255)];
        self.u8(v.len() as u8);
        self.bytes.extend_from_slice(v);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_output_writes_and_zeros_past_the_end() {
        let mut out = Output::new();
        out.u8(7).u16(0x1234).u32(0xdead_beef).i32(-2).bool(true);
        out.bytes(&[1, 2, 3]);
        let bytes = out.into_bytes();
        let mut input = Input::new(&bytes);
        assert_eq!(input.u8(), 7);
        assert_eq!(input.u16(), 0x1234);
        assert_eq!(input.u32(), 0xdead_beef);
        assert_eq!(input.i32(), -2);
        assert!(input.bool());
        assert_eq!(input.bytes(16), [1, 2, 3]);
        assert!(input.is_empty());
        assert_eq!((input.u8(), input.u32(), input.below(5)), (0, 0, 0));
        assert!(input.bytes(9).is_empty());
    }

    #[test]
    fn bytes_are_capped() {
        let mut input = Input::new(&[200, 1, 2, 3]);
        assert_eq!(input.bytes(2), [1, 2]);
        assert_eq!(input.u8(), 3);
    }
}
