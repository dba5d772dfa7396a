"""The canonical row encoding of docs/content-digest.md, built column by column with pyarrow compute.

Each column becomes one binary value per row (its identity, its type tag and its value encoding), the columns are
joined row by row in identity order, and each row's bytes are hashed to its LtHash element. Imported only when a
digest is computed from rows: ``attest`` and ``attest.content`` import no pyarrow.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from attest.content import native
from attest.content.digest import CONTEXT, LANES, STATE_BYTES, ContentDigest
from attest.errors import InvalidArgumentError
from attest.fast.record import record

__all__ = ["ColumnSpec", "digest_table", "encode_rows", "type_tag"]

_NULL = b"\x00"
_PRESENT = b"\x01"
_SEP = pa.scalar(b"", pa.large_binary())
_INT_NAMES = {pa.int8(): b"int8", pa.int16(): b"int16", pa.int32(): b"int32", pa.int64(): b"int64",
              pa.uint8(): b"uint8", pa.uint16(): b"uint16", pa.uint32(): b"uint32", pa.uint64(): b"uint64",
              pa.float16(): b"float16", pa.float32(): b"float32", pa.float64(): b"float64",
              pa.date32(): b"date32", pa.date64(): b"date64"}
#: Rows hashed per step: 8,192 elements of 4 KiB are 32 MiB.
BATCH_ROWS = 8192
#: Rows per ``digest_rows`` call when a column's type is not taken by ``digest_batch`` (the kernel then hashes the
#: pyarrow encodings: only they are held, no elements, and the kernel spreads them on threads).
NATIVE_BATCH_ROWS = 65536


@record(frozen=True)
class ColumnSpec:
    """One column of the attested schema: ``identity`` as engines identify it, ``field`` its name and type as read.

    ``identity`` is what the digest binds (``field-id:3`` for Iceberg, ``physical:col-5f3a`` for Delta with column
    mapping, the column name without it); ``field.name`` is where the column is found in the rows given, and
    ``field.type`` the attested type, part of every value's encoding. Nested children are identified by their names
    in ``field`` (a carrier wanting field ids renames them before passing the type and the rows).
    """

    identity: str
    field: pa.Field


def _unit(t: Any) -> bytes:
    return str(t.unit).encode()


def type_tag(t: pa.DataType) -> bytes:
    """The canonical type tag of an Arrow type (docs/content-digest.md, "Type tags"); unsupported types refused."""
    if pa.types.is_dictionary(t):
        return type_tag(t.value_type)
    if t in _INT_NAMES:
        return _INT_NAMES[t]
    if pa.types.is_null(t):
        return b"null"
    if pa.types.is_boolean(t):
        return b"bool"
    if pa.types.is_decimal(t):
        return b"decimal(%d,%d)" % (t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return b"string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return b"binary"
    if pa.types.is_fixed_size_binary(t):
        return b"fixed_binary(%d)" % t.byte_width
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        return b"time%d[%s]" % (t.bit_width, _unit(t))
    if pa.types.is_timestamp(t):
        return b"timestamp[%s%s]" % (_unit(t), b"" if t.tz is None else b",utc")
    if pa.types.is_duration(t):
        return b"duration[%s]" % _unit(t)
    if pa.types.is_fixed_size_list(t):
        return b"fixed_list(%d)<%s>" % (t.list_size, type_tag(t.value_type))
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t)
            or pa.types.is_large_list_view(t)):
        return b"list<%s>" % type_tag(t.value_type)
    if pa.types.is_map(t):
        return b"map<%s,%s>" % (type_tag(t.key_type), type_tag(t.item_type))
    if pa.types.is_struct(t):
        children = []
        for i in range(t.num_fields):
            name = t.field(i).name.encode()
            children.append(b"%d:%s:%s" % (len(name), name, type_tag(t.field(i).type)))
        return b"struct<%s>" % b",".join(children)
    if isinstance(t, pa.BaseExtensionType):
        name = t.extension_name.encode()
        return b"extension(%d:%s)<%s>" % (len(name), name, type_tag(t.storage_type))
    raise InvalidArgumentError(f"the content digest does not define an encoding for the Arrow type {t}")


def _be(values: pa.Array, width: int) -> pa.Array:
    """Fixed-width values as big-endian bytes (large_binary; nulls stay null)."""
    raw = values.view(pa.binary(width)).cast(pa.large_binary())
    return raw if width == 1 else pc.binary_reverse(raw)


def _marked(valid: pa.Array | None, payload: pa.Array) -> pa.Array:
    """0x01 + payload where the value is present, 0x00 where it is null."""
    joined = pc.binary_join_element_wise(pa.scalar(_PRESENT, pa.large_binary()), payload, _SEP)
    if valid is not None:
        joined = pc.if_else(valid, joined, pa.scalar(_NULL, pa.large_binary()))
    return pc.fill_null(joined, pa.scalar(_NULL, pa.large_binary()))


def _count(lengths: pa.Array) -> pa.Array:
    """u32 big-endian counts or lengths."""
    if len(lengths) and pc.max(lengths).as_py() is not None and pc.max(lengths).as_py() >= 1 << 32:
        raise InvalidArgumentError("a value of 4 GiB or more (or a list of 2^32 entries) has no content encoding")
    return _be(pc.fill_null(lengths, 0).cast(pa.uint32()), 4)


def _joined(lengths: pa.Array, encoded: pa.Array) -> pa.Array:
    """u32 count + the concatenated encodings of each list's entries (``lengths``: 0 for a null list)."""
    offsets = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(lengths.cast(pa.int64()))])
    joined = pc.binary_join(pa.LargeListArray.from_arrays(offsets, encoded), _SEP)
    return pc.binary_join_element_wise(_count(lengths), joined, _SEP)


def _list_payload(arr: pa.Array) -> pa.Array:
    """A list's payload per row. list_flatten emits the elements of the lists that are present, in order."""
    lengths = pc.fill_null(pc.list_value_length(arr), 0)
    return _joined(lengths, encode_values(pc.list_flatten(arr)))


def _map_payload(arr: pa.Array) -> pa.Array:
    """A map's payload per row: the entries in the order stored (a map is a list of entries in Parquet)."""
    offsets = arr.offsets.cast(pa.int64())  # a map's offsets rise monotonically, null slots included
    start, stop = offsets[0].as_py(), offsets[-1].as_py()
    lengths = pc.subtract(offsets.slice(1), offsets.slice(0, len(arr)))
    if arr.null_count:  # the entries a null slot may cover are not the map's: drop them
        entries = pc.list_flatten(arr.cast(pa.large_list(pa.struct([arr.type.key_field, arr.type.item_field]))))
        lengths = pc.if_else(arr.is_valid(), lengths, pa.scalar(0, pa.int64()))
    else:
        entries = arr.values.slice(start, stop - start)
    encoded = pc.binary_join_element_wise(encode_values(entries.field(0)), encode_values(entries.field(1)), _SEP)
    return _joined(lengths, encoded)


def encode_values(arr: pa.Array) -> pa.Array:
    """Each value's encoding (null marker included) as a large_binary array without nulls."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return encode_values(arr.dictionary_decode())
    if isinstance(t, pa.BaseExtensionType):
        return encode_values(arr.storage)
    valid = arr.is_valid() if arr.null_count else None
    if pa.types.is_null(t):
        return pa.array([_NULL] * len(arr), pa.large_binary())
    if pa.types.is_boolean(t):
        return _marked(valid, _be(arr.cast(pa.uint8()), 1))
    if t in _INT_NAMES or pa.types.is_temporal(t):
        type_tag(t)  # refuses the temporal types without an encoding (intervals)
        return _marked(valid, _be(arr, t.bit_width // 8))
    if pa.types.is_decimal(t):
        width = 16 if t.precision <= 38 else 32
        if t.bit_width != width * 8:
            arr = arr.cast(pa.decimal128(t.precision, t.scale) if width == 16 else pa.decimal256(t.precision, t.scale))
        return _marked(valid, _be(arr, width))
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return encode_values(arr.cast(pa.large_string() if pa.types.is_string_view(t) else pa.large_binary()))
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        data = arr.cast(pa.large_binary())
        payload = pc.binary_join_element_wise(_count(pc.binary_length(data)), data, _SEP)
        return _marked(valid, payload)
    if pa.types.is_fixed_size_binary(t):
        return _marked(valid, arr.cast(pa.large_binary()))
    if pa.types.is_map(t):
        return _marked(valid, _map_payload(arr))
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t)
            or pa.types.is_large_list_view(t) or pa.types.is_fixed_size_list(t)):
        return _marked(valid, _list_payload(arr))
    if pa.types.is_struct(t):
        children = [encode_values(arr.field(i)) for i in range(t.num_fields)]
        payload = (pc.binary_join_element_wise(*children, _SEP) if children
                   else pa.array([b""] * len(arr), pa.large_binary()))
        return _marked(valid, payload)
    type_tag(t)  # raises: no encoding defined
    raise AssertionError(t)  # pragma: no cover


def _prefix(identity: str, tag: bytes) -> bytes:
    ident = identity.encode()
    return len(ident).to_bytes(4, "big") + ident + len(tag).to_bytes(4, "big") + tag


def _plan(columns: Sequence[ColumnSpec], constants: Mapping[str, tuple[pa.DataType, Any]]) -> list[tuple[bytes, Any]]:
    """(identity bytes, prefix + what supplies the value) in the row's order: identities sorted by their UTF-8."""
    seen: dict[bytes, tuple[bytes, Any]] = {}
    for spec in columns:
        if not isinstance(spec, ColumnSpec):
            raise InvalidArgumentError("columns are ColumnSpec(identity, field) records")
        key = spec.identity.encode()
        if key in seen:
            raise InvalidArgumentError(f"the identity {spec.identity!r} names two columns")
        seen[key] = (_prefix(spec.identity, type_tag(spec.field.type)), spec.field)
    for identity, (t, value) in constants.items():
        key = identity.encode()
        if key in seen:
            raise InvalidArgumentError(f"the identity {identity!r} names two columns")
        try:
            one = pa.array([value], type=t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"the constant {identity!r} is not a {t}: {exc}") from exc
        seen[key] = (_prefix(identity, type_tag(t)) + encode_values(one)[0].as_py(), None)
    if not seen:
        raise InvalidArgumentError("a content digest needs at least one column")
    return [seen[k] for k in sorted(seen)]


def _resolve(batch: pa.RecordBatch, plan: list[tuple[bytes, Any]]) -> list[tuple[bytes, pa.Array | None]]:
    """The plan's columns found in ``batch``: (prefix, the column's values) or (a constant's encoding, None)."""
    resolved: list[tuple[bytes, pa.Array | None]] = []
    for prefix, field in plan:
        if field is None:  # a constant: its whole encoding is fixed
            resolved.append((prefix, None))
            continue
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            raise InvalidArgumentError(f"the rows have no column {field.name!r} (a missing or ambiguous name)")
        column = batch.column(index)
        if type_tag(column.type) != type_tag(field.type):
            raise InvalidArgumentError(f"the column {field.name!r} is {column.type}, the attested type is "
                                       f"{field.type}: the caller gives the values as readers get them")
        resolved.append((prefix, column))
    return resolved


def _encode_batch(batch: pa.RecordBatch, plan: list[tuple[bytes, Any]]) -> pa.Array:
    parts: list[Any] = []
    for prefix, column in _resolve(batch, plan):
        parts.append(pa.scalar(prefix, pa.large_binary()))
        if column is not None:
            parts.append(encode_values(column))
    if all(isinstance(p, pa.Scalar) for p in parts):  # constants only
        parts.append(pa.array([b""] * batch.num_rows, pa.large_binary()))
    return pc.binary_join_element_wise(*parts, _SEP)


def _batches(rows: Any) -> Iterable[pa.RecordBatch]:
    if isinstance(rows, pa.Table):
        yield from rows.to_batches()
    elif isinstance(rows, pa.RecordBatch):
        yield rows
    else:
        for batch in rows:
            if not isinstance(batch, pa.RecordBatch):
                raise InvalidArgumentError("rows are a pyarrow Table, a RecordBatch or an iterable of RecordBatches")
            yield batch


def encode_rows(rows: Any, columns: Sequence[ColumnSpec],
                constants: Mapping[str, tuple[pa.DataType, Any]] | None = None) -> list[bytes]:
    """Every row's canonical encoding (the test vectors of docs/content-digest.md; small inputs only)."""
    plan = _plan(columns, constants or {})
    return [v for batch in _batches(rows) for v in _encode_batch(batch, plan).to_pylist()]


def _elements(encoded: pa.Array) -> bytes:
    """Every row's 4096-byte element, one after another (one BLAKE3 call per row: the cost that dominates)."""
    from blake3 import blake3

    buffers = encoded.buffers()
    offsets = pa.Array.from_buffers(pa.int64(), len(encoded) + 1, [None, buffers[1]],
                                    offset=encoded.offset).to_pylist()
    data = memoryview(buffers[2]) if buffers[2] is not None else memoryview(b"")
    return b"".join([blake3(data[offsets[i]:offsets[i + 1]], derive_key_context=CONTEXT).digest(length=STATE_BYTES)
                     for i in range(len(encoded))])


def _reduce(elements: bytes) -> bytes:
    """The lane-wise sum mod 2^32 of concatenated elements."""
    n = len(elements) // STATE_BYTES
    if n == 0:
        return bytes(STATE_BYTES)
    if sys.byteorder != "little":  # the lanes are little-endian: sum them without pyarrow's native view
        return ContentDigest.total(ContentDigest(elements[i:i + STATE_BYTES], 1)
                                   for i in range(0, len(elements), STATE_BYTES)).state
    lanes = pa.Array.from_buffers(pa.uint32(), n * LANES, [None, pa.py_buffer(elements)])
    while n > 1:  # halve: rows [0, h) + rows [h, 2h) (pc.add wraps mod 2^32), the odd row carried
        half = n // 2
        summed = pc.add(lanes.slice(0, half * LANES), lanes.slice(half * LANES, half * LANES))
        lanes = pa.concat_arrays([summed, lanes.slice(2 * half * LANES)]) if n % 2 else summed
        n = half + n % 2
    return bytes(memoryview(lanes.buffers()[1])[lanes.offset * 4:(lanes.offset + LANES) * 4])


def _native_sum(kernel: native.Kernel, encoded: pa.Array, keep: pa.Array | None) -> ContentDigest:
    """The kernel's sum of the elements of ``encoded`` (binary or large_binary, from its buffers, no copy), of the
    rows ``keep`` (a boolean array without nulls, as long as ``encoded``) keeps."""
    if len(encoded) == 0:
        return ContentDigest.zero()
    buffers = encoded.buffers()
    large = pa.types.is_large_binary(encoded.type)
    if not (large or pa.types.is_binary(encoded.type)) or buffers[1] is None:
        raise InvalidArgumentError(f"the native kernel hashes binary row encodings, not {encoded.type}")
    bits, bit0 = None, 0
    if keep is not None:
        bits, bit0 = keep.buffers()[1], keep.offset
    state, rows = kernel.digest_rows(buffers[1], buffers[2], encoded.offset, len(encoded), large, CONTEXT,
                                     bits, bit0)
    return ContentDigest(bytes(state), rows)


def _kernel_takes(t: pa.DataType) -> bool:
    """Whether the kernel's ``digest_batch`` encodes values of ``t`` itself (native/recipe-attest-digest/src/arrow.rs:
    the layouts whose encoding needs no conversion first); other columns take the pyarrow encoding."""
    if (t in _INT_NAMES or pa.types.is_null(t) or pa.types.is_boolean(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t) or pa.types.is_time32(t) or pa.types.is_time64(t)
            or pa.types.is_timestamp(t) or pa.types.is_duration(t)):
        return True
    if pa.types.is_decimal(t):
        return bool(t.bit_width == (128 if t.precision <= 38 else 256))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _kernel_takes(t.value_type)
    if pa.types.is_map(t):
        return _kernel_takes(t.key_type) and _kernel_takes(t.item_type)
    if pa.types.is_struct(t):
        return all(_kernel_takes(t.field(i).type) for i in range(t.num_fields))
    return False


def _for_kernel(column: pa.Array) -> pa.Array | None:
    """``column`` as the kernel takes it, converted as ``encode_values`` converts it (a dictionary decoded, an
    extension's storage, a view cast, a decimal at its precision's width), or None when a nested type is not taken."""
    t = column.type
    if pa.types.is_dictionary(t):
        return _for_kernel(column.dictionary_decode())
    if isinstance(t, pa.BaseExtensionType):
        return _for_kernel(column.storage)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return _for_kernel(column.cast(pa.large_string() if pa.types.is_string_view(t) else pa.large_binary()))
    if pa.types.is_decimal(t) and t.bit_width != (128 if t.precision <= 38 else 256):
        return _for_kernel(column.cast(pa.decimal128(t.precision, t.scale) if t.precision <= 38
                                       else pa.decimal256(t.precision, t.scale)))
    return column if _kernel_takes(t) else None


def _native_batch(kernel: native.Kernel, batch: pa.RecordBatch, plan: list[tuple[bytes, Any]],
                  keep: pa.Array | None) -> ContentDigest | None:
    """The digest of the rows of ``batch`` kept by ``keep``, encoded and hashed by the kernel from the columns'
    Arrow arrays (C data interface, no copy), or None when a column's type is not taken by the kernel (the caller
    then encodes in pyarrow and hashes the encodings with ``digest_rows``: the same digest)."""
    arrays: list[pa.Array] = []
    segments: list[tuple[bytes, int]] = []
    for prefix, column in _resolve(batch, plan):
        if column is None:
            segments.append((prefix, -1))
            continue
        ready = _for_kernel(column)
        if ready is None:
            return None
        segments.append((prefix, len(arrays)))
        arrays.append(ready)
    if batch.num_rows == 0:
        return ContentDigest.zero()
    bits, bit0 = (None, 0) if keep is None else (keep.buffers()[1], keep.offset)
    try:
        state, rows = kernel.digest_batch([a.__arrow_c_array__() for a in arrays], segments, batch.num_rows,
                                          CONTEXT, bits, bit0)
    except ValueError as exc:  # a value of 4 GiB or more, or buffers that disagree with their lengths
        raise InvalidArgumentError(f"the native kernel refused the rows: {exc}") from exc
    return ContentDigest(bytes(state), rows)


def digest_table(rows: Any, columns: Sequence[ColumnSpec],
                 constants: Mapping[str, tuple[pa.DataType, Any]] | None = None,
                 keep: Any = None) -> ContentDigest:
    """The content digest of the rows a reader gets.

    Args:
        rows: a pyarrow Table, a RecordBatch or an iterable of RecordBatches (one data file's rows, as read).
        columns: the attested schema, in any order: one ColumnSpec per column read from ``rows``.
        constants: columns not in the rows, as ``{identity: (arrow type, value)}`` (Delta partition values),
            encoded exactly like a column holding that value in every row.
        keep: optional boolean mask over all the rows (True: the row is read), the deletion vector or delete files
            applied by the caller; nulls are refused.

    Returns:
        The ContentDigest of the kept rows; digests of files add up to the digest of their union.
    """
    plan = _plan(columns, constants or {})
    mask: pa.Array | None = None
    if keep is not None:
        if isinstance(keep, pa.ChunkedArray):
            keep = keep.combine_chunks()
        mask = keep if isinstance(keep, pa.Array) else pa.array(keep, pa.bool_())
        if not pa.types.is_boolean(mask.type) or mask.null_count:
            raise InvalidArgumentError("keep is a boolean mask without nulls")
    kernel = native.kernel()  # None: the pure-Python path, the reference (attest/content/native.py)
    total, seen = ContentDigest.zero(), 0
    for batch in _batches(rows):
        kept: pa.Array | None = None
        if mask is not None:
            if seen + batch.num_rows > len(mask):
                raise InvalidArgumentError("keep is shorter than the rows")
            kept = mask.slice(seen, batch.num_rows)
            seen += batch.num_rows
        if kernel is not None:  # the kernel skips the rows not kept itself: no filtered copy of the batch
            whole = _native_batch(kernel, batch, plan, kept)
            if whole is not None:  # encoded and hashed in the kernel
                total = total + whole
                continue
            for start in range(0, batch.num_rows, NATIVE_BATCH_ROWS):
                part = batch.slice(start, NATIVE_BATCH_ROWS)
                total = total + _native_sum(kernel, _encode_batch(part, plan),
                                            None if kept is None else kept.slice(start, part.num_rows))
            continue
        for start in range(0, batch.num_rows, BATCH_ROWS):
            part = batch.slice(start, BATCH_ROWS)
            encoded = _encode_batch(part, plan)
            if kept is not None:  # the rows' encodings are filtered, not the rows: every column type filters as bytes
                encoded = encoded.filter(kept.slice(start, part.num_rows))
            total = total + ContentDigest(_reduce(_elements(encoded)), len(encoded))
    if mask is not None and seen != len(mask):
        raise InvalidArgumentError("keep is longer than the rows")
    return total
