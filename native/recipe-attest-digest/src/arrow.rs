//! The canonical value encoding of docs/content-digest.md ("Values"), read straight from Arrow arrays exported
//! through the Arrow C data interface (<https://arrow.apache.org/docs/format/CDataInterface.html>).
//!
//! Every value is `00` when null, else `01` and its payload. The payload depends only on the physical layout once
//! the caller (attest/content/encoding.py) has normalised the column the way the pure-Python path does (dictionary
//! decoded, extension storage, views cast, decimals at the width of their precision): every fixed-width value is its
//! little-endian bytes reversed (two's complement or IEEE bits, big-endian), a (large) string or binary is a u32
//! big-endian length then its bytes, a fixed-size binary its bytes, a (large / fixed-size) list or a map a u32
//! count then its elements' (entries' key then value) encodings, a struct its children's encodings in order. The
//! type tag is not written here: the caller's per-column prefix holds it.
//!
//! Layouts taken: null `n`, bool `b`, integers `c C s S i I l L`, floats `e f g`, decimals `d:P,S[,128|256]` (16
//! bytes when P <= 38, else 32), `z Z u U`, `w:N`, dates `tdD tdm`, times `tts ttm ttu ttn`, timestamps `ts?:…`,
//! durations `tD?`, lists `+l +L +w:N`, structs `+s`, maps `+m`. Anything else (dictionaries, views, list views,
//! unions, run-end encoded, intervals, decimal32/64) is refused with an error naming it.
//!
//! Every buffer is turned into a bounds-checked slice of the length the layout implies once, and every offset is
//! checked to rise within its target, before any row is encoded: encoding never reads outside what was exported.

use std::ffi::{c_char, c_void, CStr};

#[repr(C)]
pub struct FfiSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut FfiSchema,
    dictionary: *mut FfiSchema,
    release: Option<unsafe extern "C" fn(*mut FfiSchema)>,
    private_data: *mut c_void,
}

#[repr(C)]
pub struct FfiArray {
    pub(crate) length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut FfiArray,
    dictionary: *mut FfiArray,
    release: Option<unsafe extern "C" fn(*mut FfiArray)>,
    private_data: *mut c_void,
}

/// A bitmap (validity or booleans) with bit 0 at the array's start; `get` takes the physical index.
#[derive(Clone, Copy)]
struct Bits<'a>(&'a [u8]);

impl Bits<'_> {
    #[inline]
    fn get(&self, i: usize) -> bool {
        self.0[i >> 3] >> (i & 7) & 1 == 1
    }
}

enum Offs<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl Offs<'_> {
    /// The range of entry `i` (physical index): checked at import to rise and to fit its target.
    #[inline]
    fn range(&self, i: usize) -> (usize, usize) {
        match self {
            Offs::I32(o) => (o[i] as usize, o[i + 1] as usize),
            Offs::I64(o) => (o[i] as usize, o[i + 1] as usize),
        }
    }
}

enum Kind<'a> {
    Null,
    Bool(Bits<'a>),
    /// A fixed-width value written big-endian: its little-endian bytes reversed.
    Fixed { data: &'a [u8], width: usize },
    /// A fixed-size binary: its bytes as they are.
    Raw { data: &'a [u8], width: usize },
    Binary { offsets: Offs<'a>, data: &'a [u8] },
    List { offsets: Offs<'a>, child: Box<Col<'a>> },
    FixedList { size: usize, child: Box<Col<'a>> },
    Struct(Vec<Col<'a>>),
    /// The entries struct's own offset, then its key and value children.
    Map { offsets: Offs<'a>, entries: usize, key: Box<Col<'a>>, value: Box<Col<'a>> },
}

/// One imported array: its offset (added to every index it is asked for), validity and layout.
pub struct Col<'a> {
    offset: usize,
    valid: Option<Bits<'a>>,
    kind: Kind<'a>,
}

impl<'a> Col<'a> {
    /// Whether value `i` (logical) is null.
    #[inline]
    pub fn is_null(&self, i: usize) -> bool {
        let p = self.offset + i;
        matches!(self.kind, Kind::Null) || self.valid.is_some_and(|v| !v.get(p))
    }

    /// Whether `stored` answers for every value: a fixed-width, fixed-size binary or (large) binary layout.
    pub fn is_flat(&self) -> bool {
        matches!(self.kind, Kind::Fixed { .. } | Kind::Raw { .. } | Kind::Binary { .. })
    }

    /// The bytes value `i` (logical) is stored as: a fixed-width value's little-endian bytes, a binary's bytes
    /// (no length); None for a layout that is not flat. Bounds were checked at import.
    #[inline]
    pub fn stored(&self, i: usize) -> Option<&'a [u8]> {
        let p = self.offset + i;
        match &self.kind {
            Kind::Fixed { data, width } | Kind::Raw { data, width } => {
                let d: &'a [u8] = data;
                Some(&d[p * width..(p + 1) * width])
            }
            Kind::Binary { offsets, data } => {
                let (a, b) = offsets.range(p);
                let d: &'a [u8] = data;
                Some(&d[a..b])
            }
            _ => None,
        }
    }
}

/// The Arrow format string of an exported schema.
///
/// # Safety
/// `schema` is a valid, unreleased Arrow C data interface schema.
pub unsafe fn format_of(schema: &FfiSchema) -> Result<&str, String> {
    if schema.format.is_null() {
        return Err("an array without a format".into());
    }
    CStr::from_ptr(schema.format).to_str().map_err(|_| "a format that is not UTF-8".to_string())
}

fn count(n: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&(n as u32).to_be_bytes());
}

impl Col<'_> {
    /// Appends the encoding of value `i` (logical: the array's offset is added here).
    pub fn encode(&self, i: usize, out: &mut Vec<u8>) {
        let p = self.offset + i;
        if let Some(valid) = self.valid {
            if !valid.get(p) {
                out.push(0);
                return;
            }
        }
        match &self.kind {
            Kind::Null => out.push(0),
            Kind::Bool(bits) => {
                out.push(1);
                out.push(bits.get(p) as u8);
            }
            Kind::Fixed { data, width } => {
                out.push(1);
                let w = *width;
                let v = &data[p * w..p * w + w];
                match w {
                    8 => out.extend_from_slice(&u64::from_le_bytes(v.try_into().unwrap()).to_be_bytes()),
                    4 => out.extend_from_slice(&u32::from_le_bytes(v.try_into().unwrap()).to_be_bytes()),
                    16 => out.extend_from_slice(&u128::from_le_bytes(v.try_into().unwrap()).to_be_bytes()),
                    _ => out.extend(v.iter().rev()),
                }
            }
            Kind::Raw { data, width } => {
                out.push(1);
                out.extend_from_slice(&data[p * width..(p + 1) * width]);
            }
            Kind::Binary { offsets, data } => {
                let (a, b) = offsets.range(p);
                out.push(1);
                count(b - a, out);
                out.extend_from_slice(&data[a..b]);
            }
            Kind::List { offsets, child } => {
                let (a, b) = offsets.range(p);
                out.push(1);
                count(b - a, out);
                for j in a..b {
                    child.encode(j, out);
                }
            }
            Kind::FixedList { size, child } => {
                out.push(1);
                count(*size, out);
                for j in p * size..(p + 1) * size {
                    child.encode(j, out);
                }
            }
            Kind::Struct(children) => {
                out.push(1);
                for child in children {
                    child.encode(p, out);
                }
            }
            Kind::Map { offsets, entries, key, value } => {
                let (a, b) = offsets.range(p);
                out.push(1);
                count(b - a, out);
                for j in a..b {
                    key.encode(entries + j, out);
                    value.encode(entries + j, out);
                }
            }
        }
    }
}

fn nonneg(v: i64, what: &str) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("a negative {what} ({v})"))
}

/// `bytes` bytes at buffer `k` of `array` (an empty slice when none are needed; a null buffer otherwise refused).
unsafe fn buffer<'a>(array: &FfiArray, k: usize, bytes: usize, format: &str) -> Result<&'a [u8], String> {
    if k >= array.n_buffers as usize || array.buffers.is_null() {
        return Err(format!("the {format} array has {} buffers, buffer {k} is needed", array.n_buffers));
    }
    let ptr = *array.buffers.add(k) as *const u8;
    if bytes == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(format!("buffer {k} of the {format} array is missing"));
    }
    Ok(std::slice::from_raw_parts(ptr, bytes))
}

/// The offsets buffer (`n` + 1 entries from physical index `first`), checked: each rises from the previous, the
/// first is not negative, no entry spans 2^32 or more, the last is at most `limit`.
unsafe fn offsets<'a>(array: &FfiArray, large: bool, first: usize, n: usize, limit: Option<usize>, format: &str)
    -> Result<(Offs<'a>, usize), String> {
    let entries = first + n + 1;
    let width = if large { 8 } else { 4 };
    if n == 0 && first == 0 && (array.n_buffers as usize) > 1 && (*array.buffers.add(1)).is_null() {
        return Ok((Offs::I64(&[0]), 0)); // an empty array may omit its offsets
    }
    let raw = buffer(array, 1, bytes_of(entries, width)?, format)?;
    if !(raw.as_ptr() as usize).is_multiple_of(width) {
        return Err(format!("the offsets of the {format} array are not aligned"));
    }
    let (offs, values): (Offs<'a>, Vec<i64>) = if large {
        let s = std::slice::from_raw_parts(raw.as_ptr() as *const i64, entries);
        (Offs::I64(s), s[first..].to_vec())
    } else {
        let s = std::slice::from_raw_parts(raw.as_ptr() as *const i32, entries);
        (Offs::I32(s), s[first..].iter().map(|&v| v as i64).collect())
    };
    if values[0] < 0 {
        return Err(format!("the offsets of the {format} array start below 0"));
    }
    for pair in values.windows(2) {
        if pair[1] < pair[0] {
            return Err(format!("the offsets of the {format} array are not increasing"));
        }
        if pair[1] - pair[0] >= 1 << 32 {
            return Err("a value of 4 GiB or more (or a list of 2^32 entries) has no content encoding".into());
        }
    }
    let last = values[values.len() - 1] as usize;
    if let Some(limit) = limit {
        if last > limit {
            return Err(format!("the offsets of the {format} array run past its child ({last} > {limit})"));
        }
    }
    Ok((offs, last))
}

fn bytes_of(items: usize, width: usize) -> Result<usize, String> {
    items.checked_mul(width).ok_or_else(|| format!("{items} values of {width} bytes overflow"))
}

fn fixed_width(format: &str) -> Option<usize> {
    Some(match format {
        "c" | "C" => 1,
        "s" | "S" | "e" => 2,
        "i" | "I" | "f" | "tdD" | "tts" | "ttm" => 4,
        "l" | "L" | "g" | "tdm" | "ttu" | "ttn" | "tDs" | "tDm" | "tDu" | "tDn" => 8,
        _ if format.len() > 3 && ["tss:", "tsm:", "tsu:", "tsn:"].contains(&&format[..4]) => 8,
        _ => return None,
    })
}

/// The width of a decimal `d:P,S[,W]`: W/8, which must be the encoding's (16 when P <= 38, else 32).
fn decimal_width(format: &str) -> Result<usize, String> {
    let parts: Vec<&str> = format[2..].split(',').collect();
    let precision: u32 = parts.first().and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("the decimal format {format:?} has no precision"))?;
    let bits: u32 = match parts.get(2) {
        None => 128,
        Some(b) => b.parse().map_err(|_| format!("the decimal format {format:?} has no bit width"))?,
    };
    let wanted = if precision <= 38 { 128 } else { 256 };
    if bits != wanted {
        return Err(format!("decimal({precision}) of {bits} bits: the caller casts it to {wanted} bits"));
    }
    Ok(bits as usize / 8)
}

/// Imports one exported array (and its children) as a `Col`, every buffer bounds-checked.
///
/// # Safety
/// `schema` and `array` are valid, unreleased Arrow C data interface structs describing the same array, alive (with
/// their buffers) for `'a`.
pub unsafe fn import<'a>(schema: &FfiSchema, array: &FfiArray) -> Result<Col<'a>, String> {
    if schema.format.is_null() {
        return Err("an array without a format".into());
    }
    let format = CStr::from_ptr(schema.format).to_str().map_err(|_| "a format that is not UTF-8".to_string())?;
    if !schema.dictionary.is_null() || !array.dictionary.is_null() {
        return Err(format!("a dictionary-encoded array ({format}): the caller decodes it"));
    }
    let offset = nonneg(array.offset, "offset")?;
    let length = nonneg(array.length, "length")?;
    let end = offset.checked_add(length).ok_or("offset + length overflows")?;
    let bitmap_bytes = end.div_ceil(8);
    let children = |n: usize| -> Result<Vec<(&FfiSchema, &FfiArray)>, String> {
        if schema.n_children != n as i64 || array.n_children != n as i64 {
            return Err(format!("the {format} array has {} children, {n} expected", array.n_children));
        }
        if n > 0 && (schema.children.is_null() || array.children.is_null()) {
            return Err(format!("the {format} array has no children"));
        }
        (0..n).map(|k| {
            let (s, a) = (*schema.children.add(k), *array.children.add(k));
            if s.is_null() || a.is_null() {
                return Err(format!("child {k} of the {format} array is missing"));
            }
            Ok((&*s, &*a))
        }).collect()
    };
    let valid = if format == "n" || array.n_buffers == 0 || (*array.buffers).is_null() {
        None
    } else {
        Some(Bits(buffer(array, 0, bitmap_bytes, format)?))
    };
    let kind = if format == "n" {
        Kind::Null
    } else if format == "b" {
        Kind::Bool(Bits(buffer(array, 1, bitmap_bytes, format)?))
    } else if let Some(width) = fixed_width(format) {
        Kind::Fixed { data: buffer(array, 1, bytes_of(end, width)?, format)?, width }
    } else if format.starts_with("d:") {
        let width = decimal_width(format)?;
        Kind::Fixed { data: buffer(array, 1, bytes_of(end, width)?, format)?, width }
    } else if let Some(n) = format.strip_prefix("w:") {
        let width: usize = n.parse().map_err(|_| format!("the format {format:?} has no width"))?;
        Kind::Raw { data: buffer(array, 1, bytes_of(end, width)?, format)?, width }
    } else if matches!(format, "z" | "Z" | "u" | "U") {
        let (offsets, last) = offsets(array, matches!(format, "Z" | "U"), offset, length, None, format)?;
        Kind::Binary { offsets, data: buffer(array, 2, last, format)? }
    } else if format == "+l" || format == "+L" {
        let kids = children(1)?;
        let child = import(kids[0].0, kids[0].1)?;
        let limit = nonneg(kids[0].1.length, "length")?;
        let (offsets, _) = offsets(array, format == "+L", offset, length, Some(limit), format)?;
        Kind::List { offsets, child: Box::new(child) }
    } else if let Some(n) = format.strip_prefix("+w:") {
        let size: usize = n.parse().map_err(|_| format!("the format {format:?} has no size"))?;
        let kids = children(1)?;
        if (nonneg(kids[0].1.length, "length")? as u128) < end as u128 * size as u128 {
            return Err(format!("the child of the {format} array is shorter than its lists"));
        }
        Kind::FixedList { size, child: Box::new(import(kids[0].0, kids[0].1)?) }
    } else if format == "+s" {
        let n = nonneg(schema.n_children, "child count")?;
        let mut cols = Vec::with_capacity(n);
        for (s, a) in children(n)? {
            if nonneg(a.length, "length")? < end {
                return Err("a struct child is shorter than the struct".into());
            }
            cols.push(import(s, a)?);
        }
        Kind::Struct(cols)
    } else if format == "+m" {
        let kids = children(1)?;
        let (es, ea) = kids[0];
        let entries_format = if es.format.is_null() { "" } else { CStr::from_ptr(es.format).to_str().unwrap_or("") };
        if entries_format != "+s" || es.n_children != 2 || ea.n_children != 2 || !ea.dictionary.is_null() {
            return Err("a map whose entries are not a struct of a key and a value".into());
        }
        let entries_offset = nonneg(ea.offset, "offset")?;
        let entries_len = nonneg(ea.length, "length")?;
        let kid = |k: usize| -> Result<(&FfiSchema, &FfiArray), String> {
            if es.children.is_null() || ea.children.is_null() {
                return Err("a map's entries have no children".into());
            }
            let (s, a) = (*es.children.add(k), *ea.children.add(k));
            if s.is_null() || a.is_null() {
                return Err("a map's key or value is missing".into());
            }
            Ok((&*s, &*a))
        };
        let ((ks, ka), (vs, va)) = (kid(0)?, kid(1)?);
        for a in [ka, va] {
            if nonneg(a.length, "length")? < entries_offset + entries_len {
                return Err("a map's keys or values are shorter than its entries".into());
            }
        }
        let (offsets, _) = offsets(array, false, offset, length, Some(entries_len), format)?;
        Kind::Map { offsets, entries: entries_offset, key: Box::new(import(ks, ka)?),
                    value: Box::new(import(vs, va)?) }
    } else {
        return Err(format!("the Arrow format {format:?} is not taken by the kernel"));
    };
    Ok(Col { offset, valid, kind })
}
