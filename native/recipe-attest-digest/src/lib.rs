//! Native batch kernel of recipe-attest's content digest (docs/content-digest.md): for each row encoding, the
//! element `BLAKE3.derive_key(context, encoding)` read to 4096 bytes (1024 little-endian u32 lanes), summed lane by
//! lane mod 2^32. The pure-Python path in `attest/content/encoding.py` is the reference; this computes the same sum
//! from an Arrow binary / large_binary array's buffers, without copying them, on every core (rayon).
//!
//! Addition mod 2^32 is commutative and associative, so splitting rows into chunks summed on different threads and
//! adding the chunks' sums gives the same state whatever the split and the scheduling.
//!
//! Two entry points: `digest_rows` hashes row encodings built elsewhere (pyarrow compute, the fallback), and
//! `digest_batch` builds each row's canonical encoding itself from the columns' Arrow arrays (the Arrow C data
//! interface: pyarrow's `__arrow_c_array__` capsules, read in place) and hashes it — no encodings are materialised.
//! `digest_batch` takes the physical layouts listed in `arrow.rs`; the caller sends anything else down the fallback.
//!
//! A third, `bloom_missing` (`bloom.rs`), serves the Parquet checks beside the digest (carriers/content_store.py,
//! `index_problems`): the first value of an Arrow array a Parquet split-block bloom filter leaves out.

mod arrow;
mod bloom;

use std::ffi::CStr;

use pyo3::ffi;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

/// Bumped whenever an entry point's signature or meaning changes, or one is added: attest.content.native uses a
/// kernel only when it has the API version it was written for. 3: `bloom_missing`.
const API: u32 = 3;
const LANES: usize = 1024;
const STATE_BYTES: usize = LANES * 4;
/// Rows per rayon task: enough work (4 MiB of XOF output) to amortise a task, small enough to spread.
const CHUNK_ROWS: usize = 1024;

type State = [u32; LANES];

fn add_into(acc: &mut State, other: &State) {
    for (a, b) in acc.iter_mut().zip(other.iter()) {
        *a = a.wrapping_add(*b);
    }
}

/// Adds the element of one row encoding (BLAKE3 derive_key XOF, 4096 bytes, 1024 little-endian u32 lanes) to `acc`.
#[inline]
fn absorb(hasher: &mut blake3::Hasher, encoding: &[u8], acc: &mut State, block: &mut [u8; STATE_BYTES]) {
    hasher.reset(); // keeps the derive_key context key and mode
    hasher.update(encoding);
    hasher.finalize_xof().fill(block);
    for (lane, word) in acc.iter_mut().zip(block.chunks_exact(4)) {
        *lane = lane.wrapping_add(u32::from_le_bytes([word[0], word[1], word[2], word[3]]));
    }
}

#[inline]
fn kept_bit(keep: Option<(&[u8], usize)>, i: usize) -> bool {
    match keep {
        Some((bits, bit0)) => {
            let b = bit0 + i;
            bits[b >> 3] >> (b & 7) & 1 == 1
        }
        None => true,
    }
}

/// The sum of the elements of rows `[lo, hi)` kept by `keep`, and how many were kept.
fn sum_rows(base: &blake3::Hasher, offsets: &[i64], data: &[u8], keep: Option<(&[u8], usize)>, lo: usize,
            hi: usize) -> (Box<State>, u64) {
    let mut acc: Box<State> = Box::new([0u32; LANES]);
    let mut block = [0u8; STATE_BYTES];
    let mut hasher = base.clone();
    let mut kept = 0u64;
    for i in lo..hi {
        if !kept_bit(keep, i) {
            continue;
        }
        absorb(&mut hasher, &data[offsets[i] as usize..offsets[i + 1] as usize], &mut acc, &mut block);
        kept += 1;
    }
    (acc, kept)
}

/// A read-only, contiguous view of any object with the buffer protocol (a pyarrow Buffer, bytes, memoryview),
/// whatever its item format: the kernel reads bytes. Released when dropped.
struct Bytes(Box<ffi::Py_buffer>);

// SAFETY: the view is only read, and the exporting object is kept alive by the view's reference until drop.
unsafe impl Send for Bytes {}
unsafe impl Sync for Bytes {}

impl Bytes {
    fn get(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        let mut view: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
        // PyBUF_SIMPLE: a contiguous block of bytes, no format or shape requested.
        if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, ffi::PyBUF_SIMPLE) } != 0 {
            return Err(PyErr::take(obj.py()).unwrap_or_else(|| {
                PyValueError::new_err(format!("{what}: an object with the buffer protocol is needed"))
            }));
        }
        Ok(Bytes(view))
    }

    fn slice(&self) -> &[u8] {
        if self.0.len == 0 || self.0.buf.is_null() {
            return &[];
        }
        // SAFETY: PyBUF_SIMPLE guarantees `len` contiguous bytes at `buf`, valid until PyBuffer_Release.
        unsafe { std::slice::from_raw_parts(self.0.buf as *const u8, self.0.len as usize) }
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        Python::with_gil(|_| unsafe { ffi::PyBuffer_Release(&mut *self.0) });
    }
}

/// The `keep` bitmap as `(bits, keep_offset)` for `kept_bit`, checked to hold bits `keep_offset .. keep_offset +
/// length`; None (every row kept) without one.
fn checked_keep(keep: Option<&Bytes>, keep_offset: usize, length: usize) -> PyResult<Option<(&[u8], usize)>> {
    let Some(k) = keep else { return Ok(None) };
    let bits = k.slice();
    let needed = keep_offset.checked_add(length).ok_or_else(|| PyValueError::new_err("keep_offset overflows"))?;
    if bits.len() * 8 < needed {
        return Err(PyValueError::new_err("the keep bitmap is shorter than keep_offset + length bits"));
    }
    Ok(Some((bits, keep_offset)))
}

/// Both entry points' run: rows `0..length` split into chunks of CHUNK_ROWS, each summed by `sum(base, lo, hi)`
/// (`base`: BLAKE3 derive_key of `context`) on rayon — its default pool for `threads` 0, else a pool of that many —
/// with the GIL released, the chunks' sums added; returned as `(state: 4096 little-endian bytes, rows kept)`.
fn sum_chunks<'py, F>(py: Python<'py>, context: &str, length: usize, threads: usize, sum: F)
                      -> PyResult<(Bound<'py, PyBytes>, u64)>
where
    F: Fn(&blake3::Hasher, usize, usize) -> (Box<State>, u64) + Sync,
{
    let base = blake3::Hasher::new_derive_key(context);
    let run = || -> (Box<State>, u64) {
        let chunks: Vec<(usize, usize)> = (0..length).step_by(CHUNK_ROWS).map(|lo| (lo, (lo + CHUNK_ROWS).min(length))).collect();
        chunks.into_par_iter()
            .map(|(lo, hi)| sum(&base, lo, hi))
            .reduce(|| (Box::new([0u32; LANES]), 0), |(mut a, n), (b, m)| {
                add_into(&mut a, &b);
                (a, n + m)
            })
    };
    let (state, kept) = py.allow_threads(|| -> PyResult<(Box<State>, u64)> {
        if threads == 0 {
            Ok(run())
        } else {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()
                .map_err(|e| PyValueError::new_err(format!("thread pool: {e}")))?;
            Ok(pool.install(run))
        }
    })?;
    let mut out = Vec::with_capacity(STATE_BYTES);
    for lane in state.iter() {
        out.extend_from_slice(&lane.to_le_bytes());
    }
    Ok((PyBytes::new(py, &out), kept))
}

/// The LtHash<32,1024> sum of the elements of `length` rows of an Arrow binary (`large=False`, int32 offsets) or
/// large_binary (`large=True`, int64 offsets) array, given its offsets and data buffers and its `offset` (in rows),
/// as `(state: 4096 bytes, rows kept)`. `keep`, when given, is a validity-style bitmap (bit `keep_offset + i` set:
/// row i is kept), as in a pyarrow boolean array's second buffer. `threads` 0 means rayon's default pool.
/// The GIL is released while hashing. Out-of-range offsets or a short bitmap raise ValueError.
#[pyfunction]
#[pyo3(signature = (offsets, data, offset, length, large, context, keep=None, keep_offset=0, threads=0))]
#[allow(clippy::too_many_arguments)]
fn digest_rows<'py>(py: Python<'py>, offsets: &Bound<'py, PyAny>, data: Option<&Bound<'py, PyAny>>, offset: usize,
                    length: usize, large: bool, context: &str, keep: Option<&Bound<'py, PyAny>>, keep_offset: usize,
                    threads: usize) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let offsets_view = Bytes::get(offsets, "offsets")?;
    let data_view = data.map(|d| Bytes::get(d, "data")).transpose()?;
    let keep_view = keep.map(|k| Bytes::get(k, "keep")).transpose()?;
    let raw = offsets_view.slice();
    let data_bytes: &[u8] = data_view.as_ref().map_or(&[], |d| d.slice());
    let width = if large { 8 } else { 4 };
    let needed = offset.checked_add(length).and_then(|n| n.checked_add(1)).and_then(|n| n.checked_mul(width))
        .ok_or_else(|| PyValueError::new_err("offset + length overflows"))?;
    if length > 0 && raw.len() < needed {
        return Err(PyValueError::new_err("the offsets buffer is shorter than offset + length + 1 offsets"));
    }
    // Widen the offsets in use to i64 and check them once: monotone and inside the data buffer.
    let offs: Vec<i64> = if length == 0 {
        Vec::new()
    } else {
        raw[offset * width..needed].chunks_exact(width).map(|w| if large {
            i64::from_le_bytes(w.try_into().unwrap())
        } else {
            i32::from_le_bytes(w.try_into().unwrap()) as i64
        }).collect()
    };
    for pair in offs.windows(2) {
        if pair[0] < 0 || pair[1] < pair[0] || pair[1] as u64 > data_bytes.len() as u64 {
            return Err(PyValueError::new_err("the offsets are not increasing within the data buffer"));
        }
    }
    let keep_bits = checked_keep(keep_view.as_ref(), keep_offset, length)?;
    sum_chunks(py, context, length, threads, |base, lo, hi| sum_rows(base, &offs, data_bytes, keep_bits, lo, hi))
}

/// A pyarrow array exported through the Arrow C data interface: its schema and array capsules (`__arrow_c_array__`),
/// kept alive (by the caller's tuple) while the kernel reads them.
fn capsule_ptr<T>(obj: &Bound<'_, PyAny>, name: &CStr) -> PyResult<*const T> {
    // SAFETY: PyCapsule_GetPointer checks the capsule's name and type, setting an exception on a mismatch.
    let ptr = unsafe { ffi::PyCapsule_GetPointer(obj.as_ptr(), name.as_ptr()) };
    if ptr.is_null() {
        return Err(PyErr::take(obj.py()).unwrap_or_else(|| {
            PyValueError::new_err(format!("not an {} capsule", name.to_string_lossy()))
        }));
    }
    Ok(ptr as *const T)
}

/// The sum of the elements of rows `[lo, hi)` of a batch kept by `keep`, each row's encoding built from `segments`.
fn sum_batch(base: &blake3::Hasher, segments: &[(Vec<u8>, Option<usize>)], cols: &[arrow::Col<'_>],
             keep: Option<(&[u8], usize)>, lo: usize, hi: usize) -> (Box<State>, u64) {
    let mut acc: Box<State> = Box::new([0u32; LANES]);
    let mut block = [0u8; STATE_BYTES];
    let mut hasher = base.clone();
    let mut row: Vec<u8> = Vec::with_capacity(1024);
    let mut kept = 0u64;
    for i in lo..hi {
        if !kept_bit(keep, i) {
            continue;
        }
        row.clear();
        for (prefix, col) in segments {
            row.extend_from_slice(prefix);
            if let Some(c) = col {
                cols[*c].encode(i, &mut row);
            }
        }
        absorb(&mut hasher, &row, &mut acc, &mut block);
        kept += 1;
    }
    (acc, kept)
}

/// The LtHash<32,1024> sum of the elements of the canonical row encodings of `length` rows, built here from the
/// columns' Arrow arrays, as `(state: 4096 bytes, rows kept)`.
///
/// `columns` are `(schema capsule, array capsule)` pairs (pyarrow's `Array.__arrow_c_array__()`), each at least
/// `length` rows long; `segments` is the row's encoding in order: `(bytes, column)` writes the bytes (a column's
/// identity and type tag prefix, or a constant's whole encoding) then, when `column` is not negative, that
/// column's value encoding for the row. `keep`, `keep_offset`, `threads`: as for `digest_rows`. The GIL is released
/// while hashing. A layout the kernel does not take, or buffers inconsistent with their lengths, raise ValueError
/// before any row is hashed.
#[pyfunction]
#[pyo3(signature = (columns, segments, length, context, keep=None, keep_offset=0, threads=0))]
#[allow(clippy::too_many_arguments)]
fn digest_batch<'py>(py: Python<'py>, columns: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
                     segments: Vec<(Vec<u8>, i64)>, length: usize, context: &str, keep: Option<&Bound<'py, PyAny>>,
                     keep_offset: usize, threads: usize) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let mut cols = Vec::with_capacity(columns.len());
    for (k, (schema, array)) in columns.iter().enumerate() {
        let s = capsule_ptr::<arrow::FfiSchema>(schema, c"arrow_schema")?;
        let a = capsule_ptr::<arrow::FfiArray>(array, c"arrow_array")?;
        // SAFETY: the capsules hold live C data interface structs (pyarrow exports them), alive until `columns`
        // is dropped, after the hashing below; nothing here releases or moves them.
        let col = unsafe { arrow::import(&*s, &*a) }.map_err(|e| PyValueError::new_err(format!("column {k}: {e}")))?;
        if unsafe { (*a).length } != length as i64 {
            return Err(PyValueError::new_err(format!("column {k} does not hold the {length} rows")));
        }
        cols.push(col);
    }
    let mut plan: Vec<(Vec<u8>, Option<usize>)> = Vec::with_capacity(segments.len());
    for (bytes, col) in segments {
        let col = if col < 0 {
            None
        } else if (col as usize) < cols.len() {
            Some(col as usize)
        } else {
            return Err(PyValueError::new_err(format!("a segment names column {col} of {}", cols.len())));
        };
        plan.push((bytes, col));
    }
    let keep_view = keep.map(|k| Bytes::get(k, "keep")).transpose()?;
    let keep_bits = checked_keep(keep_view.as_ref(), keep_offset, length)?;
    sum_chunks(py, context, length, threads, |base, lo, hi| sum_batch(base, &plan, &cols, keep_bits, lo, hi))
}

/// The first value of an Arrow array (logical index; nulls skipped) that the Parquet split-block bloom filter
/// `bitset` leaves out, or None when it may hold every one (`bloom.rs`: XXH64 of each value's plain encoding for a
/// column of Parquet type `physical`, `type_length` its FIXED_LEN_BYTE_ARRAY length). `column` is a `(schema
/// capsule, array capsule)` pair (`Array.__arrow_c_array__()`). The GIL is released while hashing. A layout or
/// physical type the check does not take, a bitset that is not whole 32-byte blocks, or a value its physical type
/// cannot hold raise ValueError.
#[pyfunction]
#[pyo3(signature = (bitset, column, physical, type_length=0))]
fn bloom_missing<'py>(py: Python<'py>, bitset: &Bound<'py, PyAny>, column: (Bound<'py, PyAny>, Bound<'py, PyAny>),
                      physical: &str, type_length: usize) -> PyResult<Option<usize>> {
    let bits = Bytes::get(bitset, "bitset")?;
    let (schema, array) = &column;
    let s = capsule_ptr::<arrow::FfiSchema>(schema, c"arrow_schema")?;
    let a = capsule_ptr::<arrow::FfiArray>(array, c"arrow_array")?;
    // SAFETY: as in digest_batch: live exported structs, alive while `column` is, past the check below.
    let (col, format) = unsafe { (arrow::import(&*s, &*a), arrow::format_of(&*s)) };
    let col = col.map_err(PyValueError::new_err)?;
    let format = format.map_err(PyValueError::new_err)?;
    let length = usize::try_from(unsafe { (*a).length }).map_err(|_| PyValueError::new_err("a negative length"))?;
    py.allow_threads(|| bloom::first_missing(&col, format, physical, type_length, bits.slice(), length))
        .map_err(PyValueError::new_err)
}

#[pymodule]
fn recipe_attest_digest(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("API", API)?;
    m.add("LANES", LANES)?;
    m.add("STATE_BYTES", STATE_BYTES)?;
    m.add("CHUNK_ROWS", CHUNK_ROWS)?;
    m.add_function(wrap_pyfunction!(digest_rows, m)?)?;
    m.add_function(wrap_pyfunction!(digest_batch, m)?)?;
    m.add_function(wrap_pyfunction!(bloom_missing, m)?)?;
    Ok(())
}
