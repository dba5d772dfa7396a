//! Parquet's split-block bloom filter membership test (parquet-format BloomFilter.md), over an Arrow array's values.
//!
//! Each non-null value is hashed as the spec defines: XXH64 (seed 0) of its plain encoding — INT32 / INT64 its
//! 4 / 8 little-endian two's complement bytes, FLOAT / DOUBLE its 4 / 8 little-endian IEEE bytes, BYTE_ARRAY its
//! bytes without the length prefix, FIXED_LEN_BYTE_ARRAY its bytes (a decimal: its unscaled value, big-endian two's
//! complement of the type length). The hash's upper 32 bits pick the block (`((h >> 32) * blocks) >> 32`), its lower
//! 32 bits times each of the eight salts, shifted right by 27, pick one bit in each of the block's eight words.
//!
//! The caller (carriers/content_store.py, `_bloom_ready`) sends the array in the physical domain the pure-Python
//! reference (`_physical`, `_plain`) reads it in — temporal values cast to int32 / int64, views to large binaries,
//! decimals at their precision's width — and takes the Python path for anything else; this module refuses any other
//! (Arrow format, physical type) pair with an error naming it. Semantics are the reference's, value for value: an
//! integer (or decimal) stored as INT32 / INT64 keeps its low 32 / 64 bits, a double stored as FLOAT is rounded to
//! single precision (a finite double past its range is an error), a decimal that does not fit its fixed length an
//! error.

use xxhash_rust::xxh64::xxh64;

use crate::arrow::Col;

const SALT: [u32; 8] = [0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31];

/// Whether the split-block bloom filter `bitset` (a whole number of 32-byte blocks, at least one) may hold the value
/// whose XXH64 is `h`.
#[inline]
pub fn holds(bitset: &[u8], h: u64) -> bool {
    let blocks = (bitset.len() / 32) as u64;
    let block = ((((h >> 32) * blocks) >> 32) as usize) * 32;
    let key = h as u32;
    SALT.iter().enumerate().all(|(i, salt)| {
        let at = block + 4 * i;
        let word = u32::from_le_bytes([bitset[at], bitset[at + 1], bitset[at + 2], bitset[at + 3]]);
        (word >> (key.wrapping_mul(*salt) >> 27)) & 1 == 1
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Physical {
    Int32,
    Int64,
    Float,
    Double,
    ByteArray,
    FixedLen(usize),
}

#[derive(Clone, Copy, PartialEq)]
enum Source {
    /// An integer of the array's width, signed or not; a decimal is a signed one (its unscaled value).
    Int { signed: bool, decimal: bool },
    F32,
    F64,
    Bytes,
}

/// How values of Arrow `format` are encoded for a column of Parquet `physical` type (`length`: its type length).
fn plan(format: &str, physical: &str, length: usize) -> Result<(Source, Physical), String> {
    let phys = match physical {
        "INT32" => Physical::Int32,
        "INT64" => Physical::Int64,
        "FLOAT" => Physical::Float,
        "DOUBLE" => Physical::Double,
        "BYTE_ARRAY" => Physical::ByteArray,
        "FIXED_LEN_BYTE_ARRAY" => Physical::FixedLen(length),
        _ => return Err(format!("a column stored as {physical} is not taken by the kernel")),
    };
    let source = match format {
        "c" | "s" | "i" | "l" => Source::Int { signed: true, decimal: false },
        "C" | "S" | "I" | "L" => Source::Int { signed: false, decimal: false },
        "f" => Source::F32,
        "g" => Source::F64,
        "z" | "Z" | "u" | "U" => Source::Bytes,
        _ if format.starts_with("w:") => Source::Bytes,
        _ if format.starts_with("d:") => Source::Int { signed: true, decimal: true },
        _ => return Err(format!("the Arrow format {format:?} is not taken by the bloom filter check")),
    };
    let taken = match source {
        Source::Int { decimal: false, .. } => matches!(phys, Physical::Int32 | Physical::Int64),
        Source::Int { decimal: true, .. } => matches!(phys, Physical::Int32 | Physical::Int64 | Physical::FixedLen(_)),
        Source::F32 | Source::F64 => matches!(phys, Physical::Float | Physical::Double),
        Source::Bytes => matches!(phys, Physical::ByteArray | Physical::FixedLen(_)),
    };
    if !taken {
        return Err(format!("an Arrow {format:?} column stored as {physical} is not taken by the bloom filter check"));
    }
    Ok((source, phys))
}

/// The plain encoding of one stored value (`stored`: its Arrow bytes, little-endian for fixed widths) into `out`.
fn plain<'b>(source: Source, physical: Physical, stored: &'b [u8], out: &'b mut Vec<u8>) -> Result<&'b [u8], String> {
    match source {
        Source::Bytes => Ok(stored),
        Source::F32 | Source::F64 => {
            let value = if source == Source::F32 {
                f32::from_le_bytes(stored.try_into().map_err(|_| "a float of another width")?) as f64
            } else {
                f64::from_le_bytes(stored.try_into().map_err(|_| "a double of another width")?)
            };
            out.clear();
            match (source, physical) {
                // as stored: a float's own bits (no round trip through a double)
                (Source::F32, Physical::Float) => return Ok(stored),
                (Source::F64, Physical::Double) => return Ok(stored),
                (_, Physical::Double) => out.extend_from_slice(&value.to_le_bytes()),
                _ => {
                    let single = value as f32; // round to nearest, as C's (float) cast that Python's struct uses
                    if single.is_infinite() && value.is_finite() {
                        return Err("float too large to pack with f format".into());
                    }
                    out.extend_from_slice(&single.to_le_bytes());
                }
            }
            Ok(out)
        }
        Source::Int { signed, .. } => {
            let negative = signed && stored.last().is_some_and(|b| b & 0x80 != 0);
            let fill = if negative { 0xFF } else { 0x00 };
            let (width, big_endian) = match physical {
                Physical::Int32 => (4, false),
                Physical::Int64 => (8, false),
                Physical::FixedLen(n) => (n, true),
                _ => return Err("an integer stored as a float or a byte array".into()),
            };
            if big_endian {
                // two's complement of `width` bytes must hold the value: the bytes past it are all sign bytes, and
                // the sign bit of its top byte is the value's (width 0 holds only 0)
                if width < stored.len() {
                    let top_negative = width > 0 && stored[width - 1] & 0x80 != 0;
                    if stored[width..].iter().any(|&b| b != fill) || (width > 0 && top_negative != negative)
                        || (width == 0 && negative) {
                        return Err("int too big to convert".into());
                    }
                }
            }
            out.clear();
            out.extend((0..width).map(|k| stored.get(k).copied().unwrap_or(fill)));
            if big_endian {
                out.reverse();
            }
            Ok(out)
        }
    }
}

/// The first value (logical index, nulls skipped) of `col`'s `length` values the bloom filter `bitset` leaves out,
/// or None when it may hold every one; an error for a layout or value the check does not take.
pub fn first_missing(col: &Col<'_>, format: &str, physical: &str, type_length: usize, bitset: &[u8], length: usize)
                     -> Result<Option<usize>, String> {
    if bitset.is_empty() || !bitset.len().is_multiple_of(32) {
        return Err(format!("a bloom filter of {} bytes (a whole number of 32-byte blocks is needed)", bitset.len()));
    }
    if !col.is_flat() {
        return Err(format!("the Arrow format {format:?} is not taken by the bloom filter check"));
    }
    let (source, phys) = plan(format, physical, type_length)?;
    let mut buf = Vec::with_capacity(32);
    for i in 0..length {
        if col.is_null(i) {
            continue;
        }
        let stored = col.stored(i).ok_or("a value without stored bytes")?;
        if !holds(bitset, xxh64(plain(source, phys, stored, &mut buf)?, 0)) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh64_vectors() {
        // the reference implementation's (xxHash's sanity checks) and Python's reference in carriers/content_store.py
        assert_eq!(xxh64(b"", 0), 0xEF46DB3751D8E999);
        assert_eq!(xxh64(b"a", 0), 0xD24EC4F1A98C6E5B);
        assert_eq!(xxh64(b"abc", 0), 0x44BC2CF5AD770999);
    }

    #[test]
    fn decimals_fit_their_length() {
        let mut buf = Vec::new();
        let int = Source::Int { signed: true, decimal: true };
        let minus_one = [0xFFu8; 16];
        assert_eq!(plain(int, Physical::FixedLen(2), &minus_one, &mut buf).unwrap(), &[0xFF, 0xFF]);
        let mut big = [0u8; 16];
        big[0] = 0x80; // 128 does not fit one signed byte
        assert!(plain(int, Physical::FixedLen(1), &big, &mut buf).is_err());
        assert_eq!(plain(int, Physical::FixedLen(2), &big, &mut buf).unwrap(), &[0x00, 0x80]);
        assert_eq!(plain(int, Physical::FixedLen(0), &[0u8; 16], &mut buf).unwrap(), &[] as &[u8]);
        assert!(plain(int, Physical::FixedLen(0), &minus_one, &mut buf).is_err());
        assert_eq!(plain(int, Physical::FixedLen(18), &minus_one, &mut buf).unwrap(), &[0xFF; 18]);
    }
}
