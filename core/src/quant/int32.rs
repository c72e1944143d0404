//! int32 tensors: sent unscaled, as plain big-endian values (protocol.md §5.2, last part).

/// Copy `src` into the payload `dst` as big-endian i32, with no scaling.
///
/// Processes `min(src.len(), dst.len() / 4)` values; the rest of `dst` is left as it is.
pub fn encode_i32(src: &[i32], dst: &mut [u8]) {
    for (x, out) in src.iter().zip(dst.chunks_exact_mut(4)) {
        out.copy_from_slice(&x.to_be_bytes());
    }
}

/// Copy the big-endian i32 payload `src` into `dst`, with no scaling.
///
/// Processes `min(src.len() / 4, dst.len())` values; the rest of `dst` is left as it is,
/// and trailing bytes of `src` short of a whole value are ignored.
pub fn decode_i32(src: &[u8], dst: &mut [i32]) {
    for (b, y) in src.chunks_exact(4).zip(dst.iter_mut()) {
        *y = <[u8; 4]>::try_from(b).map_or(0, i32::from_be_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    extern crate std;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn known_bytes() {
        let mut dst = [0u8; 16];
        encode_i32(&[-2, 1, i32::MIN, 0x0102_0304], &mut dst);
        assert_eq!(
            dst,
            [0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 1, 0x80, 0, 0, 0, 1, 2, 3, 4]
        );
        let mut back = [0i32; 4];
        decode_i32(&dst, &mut back);
        assert_eq!(back, [-2, 1, i32::MIN, 0x0102_0304]);
    }

    #[test]
    fn mismatched_lengths_process_the_shorter() {
        let mut dst = [0x55u8; 10];
        encode_i32(&[-1, -1, -1], &mut dst);
        assert_eq!(
            dst,
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x55, 0x55]
        );
        let mut back = [9i32; 5];
        decode_i32(&dst, &mut back);
        assert_eq!(back, [-1, -1, 9, 9, 9]);
        decode_i32(&dst, &mut []);
        encode_i32(&[], &mut dst);
        encode_i32(&[1], &mut dst[..3]);
        assert_eq!(dst[..3], [0xff; 3]);
    }

    proptest! {
        #[test]
        fn round_trip(src in proptest::collection::vec(any::<i32>(), 0..70)) {
            let mut bytes = vec![0u8; 4 * src.len()];
            encode_i32(&src, &mut bytes);
            let want: Vec<u8> = src.iter().flat_map(|x| x.to_be_bytes()).collect();
            prop_assert_eq!(&bytes, &want);
            let mut back = vec![0i32; src.len()];
            decode_i32(&bytes, &mut back);
            prop_assert_eq!(back, src);
        }
    }
}
