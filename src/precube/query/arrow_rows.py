"""Arrow columns from a small result's Python values, built from buffers.

A small result is fetched from DuckDB as tuples and made into Arrow here: DuckDB's own Arrow export costs
~0.4 ms more per statement, most of a warm answer's time over a tiny layout. pyarrow's converters from Python
objects (`pa.array`, even `pa.scalar`) import pandas when it is installed (~0.3-1 s, ~60 MB), which would land
on a process's first answers; `Array.from_buffers` does not. So each plain type is laid out as Arrow lays it
out: a validity bitmap, then fixed-width values (little-endian), or offsets and UTF-8 bytes for strings, or
128-bit two's complement unscaled integers for decimals. `column` answers None for values it cannot lay out
exactly (a decimal with more digits than its scale or its precision, strings past 2 GiB): the caller then
converts them with pyarrow.
"""

from __future__ import annotations

import array
import datetime
import sys
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

_LITTLE = sys.byteorder == "little"
_EPOCH_DAY = datetime.date(1970, 1, 1).toordinal()
_EPOCH = datetime.datetime(1970, 1, 1)
_MICROSECOND = datetime.timedelta(microseconds=1)
_CODES = {  # array module type codes of the fixed-width types
    pa.int8(): "b",
    pa.int16(): "h",
    pa.int32(): "i",
    pa.int64(): "q",
    pa.float32(): "f",
    pa.float64(): "d",
}
_OFFSET_MAX = 2**31 - 1


def column(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array | None:
    """The values (None: NULL) as an Arrow array of `arrow_type`, one of the plain types of a result; None
    when they cannot be laid out exactly."""
    valid = [v is not None for v in values]
    nulls = len(values) - sum(valid)
    bitmap = _bits(valid) if nulls else None
    if arrow_type in _CODES:
        data = _fixed(_CODES[arrow_type], [0 if v is None else v for v in values])
    elif arrow_type == pa.bool_():
        data = _bits([bool(v) for v in values])
    elif arrow_type == pa.date32():
        data = _fixed("i", [0 if v is None else v.toordinal() - _EPOCH_DAY for v in values])
    elif arrow_type == pa.timestamp("us"):
        data = _fixed("q", [0 if v is None else (v - _EPOCH) // _MICROSECOND for v in values])
    elif pa.types.is_string(arrow_type):
        return _strings(values, bitmap, nulls)
    elif pa.types.is_decimal128(arrow_type):
        unscaled = [0 if v is None else _unscaled(v, arrow_type.scale) for v in values]
        if any(u is None or abs(u) >= 10**arrow_type.precision for u in unscaled):
            return None
        data = pa.py_buffer(b"".join(u.to_bytes(16, "little", signed=True) for u in unscaled))  # type: ignore[union-attr]
    else:
        return None
    return pa.Array.from_buffers(arrow_type, len(values), [bitmap, data], null_count=nulls)


def _fixed(code: str, items: list[Any]) -> pa.Buffer:
    values = array.array(code, items)
    if not _LITTLE:
        values.byteswap()
    return pa.py_buffer(values)


def _bits(flags: list[bool]) -> pa.Buffer:
    """A bitmap, least significant bit first."""
    out = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            out[i >> 3] |= 1 << (i & 7)
    return pa.py_buffer(bytes(out))


def _strings(values: Sequence[Any], bitmap: pa.Buffer | None, nulls: int) -> pa.Array | None:
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = [0]
    for item in encoded:
        offsets.append(offsets[-1] + len(item))
    if offsets[-1] > _OFFSET_MAX:
        return None
    buffers = [bitmap, _fixed("i", offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers, null_count=nulls)


def _unscaled(value: Decimal | int, scale: int) -> int | None:
    """The integer a decimal of this scale stores for `value` (HUGEINT's ints: scale 0); None when it has more
    fractional digits than the scale or is not finite."""
    if isinstance(value, int):
        return int(value * 10**scale)
    if not value.is_finite():
        return None
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    number = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift < 0:
        number, rest = divmod(number, 10**-shift)
        if rest:
            return None
    else:
        number *= 10**shift
    return int(-number if sign else number)
