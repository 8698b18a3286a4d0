"""Arrow columns from a small result's Python values, built from buffers.

A small result is fetched from DuckDB as tuples and made into Arrow here: DuckDB's own Arrow export costs
~0.4 ms more per statement, most of a warm answer's time over a tiny layout. pyarrow's converters from Python
objects (`pa.array`, even `pa.scalar`) import pandas when it is installed (~0.3-1 s, ~45 MB), which would land
on a process's first answers; `Array.from_buffers` does not. So each plain type is laid out as Arrow lays it
out: a validity bitmap, then fixed-width values (little-endian), or offsets and UTF-8 bytes for strings, or
128-bit two's complement unscaled integers for decimals. `column` answers None for values it cannot lay out
exactly (a decimal with more digits than its scale or its precision, strings past 2 GiB): the caller then
converts them with pyarrow.
"""

from __future__ import annotations

import array
import datetime
import decimal
import sys
from collections.abc import Sequence
from itertools import accumulate
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
# exact for any DECIMAL(38, s) or HUGEINT: the default context rounds to 28 digits
_EXACT = decimal.Context(prec=100, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def column(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array | None:
    """The values (None: NULL) as an Arrow array of `arrow_type`, one of the plain types of a result; None
    when they cannot be laid out exactly."""
    nulls = sum(1 for v in values if v is None)
    bitmap = _bits([v is not None for v in values]) if nulls else None
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
        unscaled = _unscaled([0 if v is None else v for v in values], arrow_type.scale, arrow_type.precision)
        if unscaled is None:
            return None
        data = pa.py_buffer(b"".join(u.to_bytes(16, "little", signed=True) for u in unscaled))
    else:
        return None
    return pa.Array.from_buffers(arrow_type, len(values), [bitmap, data], null_count=nulls)


def _fixed(code: str, items: list[Any]) -> pa.Buffer:
    values = array.array(code, items)
    if not _LITTLE:
        values.byteswap()
    return pa.py_buffer(values)


def _bits(flags: list[bool]) -> pa.Buffer:
    """A bitmap, least significant bit first (one Python integer: a loop over bytes costs 10 times more)."""
    bits = int("".join("1" if f else "0" for f in reversed(flags)) or "0", 2)
    return pa.py_buffer(bits.to_bytes((len(flags) + 7) // 8, "little"))


def _strings(values: Sequence[Any], bitmap: pa.Buffer | None, nulls: int) -> pa.Array | None:
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = [0, *accumulate(map(len, encoded))]
    if offsets[-1] > _OFFSET_MAX:
        return None
    buffers = [bitmap, _fixed("i", offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers, null_count=nulls)


def _unscaled(values: list[Any], scale: int, precision: int) -> list[int] | None:
    """The integers a decimal of this scale and precision stores for `values` (Decimals, or HUGEINT's ints);
    None when one has more fractional digits than the scale, more digits than the precision, or is not finite."""
    try:
        scaled = [_EXACT.scaleb(v, scale) if isinstance(v, decimal.Decimal) else v * 10**scale for v in values]
        unscaled = [int(v) for v in scaled]
    except (ValueError, OverflowError):  # NaN, infinities
        return None
    limit = 10**precision
    if any(u != v or not -limit < u < limit for u, v in zip(unscaled, scaled, strict=True)):
        return None
    return unscaled
