//! `switchml worker --output FILE`: the last result, for a check from outside.
//!
//! Raw little-endian values, or a NumPy `.npy` file (format version 1.0) when the name ends
//! in `.npy`: the magic `\x93NUMPY`, the version bytes 1 and 0, the header's length as a
//! little-endian u16, and the header, a Python dict literal padded with spaces to a newline
//! so that the data starts at a multiple of 64 bytes. NumPy has no bfloat16, so a bf16
//! result goes out as `<u2`, its bit patterns (`np.load(f).view(ml_dtypes.bfloat16)`, or
//! `(x.astype(np.uint32) << 16).view(np.float32)`).

use std::io::Write;
use std::path::Path;

use crate::run::Values;

/// The magic string that opens every `.npy` file.
const NPY_MAGIC: &[u8] = b"\x93NUMPY";
/// The data of a `.npy` file starts at a multiple of this.
const NPY_ALIGN: usize = 64;

impl Values {
    /// Return the number of elements.
    pub fn len(&self) -> usize {
        match self {
            Values::F32(x) => x.len(),
            Values::I32(x) => x.len(),
            Values::F16(x) => x.len(),
            Values::Bf16(x) => x.len(),
        }
    }

    /// Return the values as little-endian bytes.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Values::F32(x) => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Values::I32(x) => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Values::F16(x) => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Values::Bf16(x) => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// Return the NumPy type string of the values as written.
    fn npy_descr(&self) -> &'static str {
        match self {
            Values::F32(_) => "<f4",
            Values::I32(_) => "<i4",
            Values::F16(_) => "<f2",
            Values::Bf16(_) => "<u2",
        }
    }
}

/// Return a `.npy` (version 1.0) header for a one-dimensional array of `len` elements of
/// type `descr`.
fn npy_header(descr: &str, len: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
    // Magic, two version bytes, two length bytes, the dict, padding, a newline.
    let unpadded = NPY_MAGIC.len() + 4 + dict.len() + 1;
    let total = unpadded.div_ceil(NPY_ALIGN) * NPY_ALIGN;
    let header_len = total - NPY_MAGIC.len() - 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[1, 0]);
    // A dict for one dimension is well under 65,535 bytes.
    out.extend_from_slice(&(header_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// Write `values` to `path`: `.npy` if the name ends so, raw little-endian otherwise.
pub fn write(path: &Path, values: &Values) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    if path.extension().is_some_and(|e| e == "npy") {
        file.write_all(&npy_header(values.npy_descr(), values.len()))?;
    }
    file.write_all(&values.to_le_bytes())?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    #[test]
    fn npy_header_is_version_1_and_aligned() {
        let h = npy_header("<f4", 1000);
        assert_eq!(h.len() % NPY_ALIGN, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(usize::from(u16::from_le_bytes([h[8], h[9]])), h.len() - 10);
        let dict = std::str::from_utf8(&h[10..]).unwrap();
        assert!(dict.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }"));
        assert!(dict.ends_with(" \n"));
    }

    #[test]
    fn raw_and_npy_files_hold_the_values() {
        let dir = std::env::temp_dir().join(format!("switchml-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let values = Values::I32(vec![1, -2, 300_000]);
        let raw = dir.join("r.bin");
        write(&raw, &values).unwrap();
        assert_eq!(std::fs::read(&raw).unwrap(), values.to_le_bytes());
        let npy = dir.join("r.npy");
        let b = Values::Bf16(vec![bf16::from_f32(1.5), bf16::from_f32(-2.0)]);
        write(&npy, &b).unwrap();
        let bytes = std::fs::read(&npy).unwrap();
        let start = 10 + usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
        assert_eq!(start % NPY_ALIGN, 0);
        let header = std::str::from_utf8(&bytes[10..start]).unwrap();
        assert!(header.contains("'descr': '<u2'"), "{header}");
        assert_eq!(&bytes[start..], &[0xc0, 0x3f, 0x00, 0xc0]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
