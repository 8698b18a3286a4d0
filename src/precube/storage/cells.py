"""Reading and combining stored measure cells outside Spark (query side, tests): no pyspark here.

Cell formats are described in `precube.engine.measures` and docs/architecture.md ("Measures: storage and
error bounds"). This module also holds the pure rules both sides share: return-type parameters, the
TOP_N key encoding, and each sketch's error bound.
"""

from __future__ import annotations

import array
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from datasketches import hll_sketch, hll_union, kll_doubles_sketch
from numpy.typing import NDArray
from pyroaring import BitMap

MAX_BITMAP_ID = 2**32 - 1  # 32-bit Roaring bitmaps; dictionary ids stay far below
TOPN_CAPACITY_FACTOR = 50  # Kylin's TopNCounter keeps 50 * n entries so merged cells stay accurate
KLL_K_PER_COMPRESSION = 2  # percentile(c) → KLL k = 2c: 200 (Spark's default k), 2000, 20000
HLL_MAX_LG_K = 21  # DataSketches' largest lgConfigK; a union adopts the smallest of its inputs

_RETURN = re.compile(r"^\s*([a-z_]+)\s*\(\s*(\d+)\s*\)\s*$")

# TOP_N key: group-by values cast to string, `\` → `\\`, `|` → `\|`, NULL → `\N`, joined by `|`.
KEY_SEPARATOR = "|"
KEY_ESCAPE = "\\"
KEY_NULL = "\\N"


def return_parameter(returntype: str, kind: str) -> int:
    """The number in a sketch return type: `return_parameter("hllc(12)", "hllc") == 12`."""
    m = _RETURN.match(returntype.lower())
    if m is None or m.group(1) != kind:
        raise ValueError(f"return type {returntype!r} is not {kind}(<number>)")
    return int(m.group(2))


def topn_capacity(n: int) -> int:
    return TOPN_CAPACITY_FACTOR * n


def kll_k(compression: int) -> int:
    """KLL's k for Kylin's `percentile(c)` (a T-Digest compression in Kylin), within KLL's 8..65535."""
    return min(65535, max(8, KLL_K_PER_COMPRESSION * compression))


def kll_rank_error(k: int) -> float:
    """DataSketches' normalized rank error (single-sided, 99% confidence) of a KLL sketch with this k."""
    return float(kll_doubles_sketch.get_normalized_rank_error(k, False))


def hll_standard_error(lg_k: int) -> float:
    """Relative standard error of an HLL sketch with 2^lg_k buckets (≈ 1.04 / sqrt(K))."""
    return 1.04 / math.sqrt(2**lg_k)


# -- precise COUNT DISTINCT: serialized Roaring bitmaps (portable format) ------------------------------


def bitmaps_from_id_lists(id_lists: Sequence[NDArray[np.integer] | Sequence[int]]) -> list[bytes]:
    """One serialized bitmap per list of dictionary ids; ids must fit in 32 bits (0..2^32-1)."""
    arrays = [np.asarray(ids, dtype=np.int64) for ids in id_lists]
    flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) > MAX_BITMAP_ID):  # one check per batch
        bad = int(flat.min()) if int(flat.min()) < 0 else int(flat.max())
        raise ValueError(
            f"precise COUNT DISTINCT id {bad} is outside 0..{MAX_BITMAP_ID}: bitmaps hold 32-bit dictionary ids"
        )
    raw = flat.astype(np.uint32).data.cast("B")
    out = []
    start = 0
    for end in (np.cumsum([a.size for a in arrays], dtype=np.int64) * 4).tolist():
        ids32 = array.array("I")  # array('I') is pyroaring's fast bulk-load path
        ids32.frombytes(raw[start:end])
        out.append(bytes(BitMap(ids32).serialize()))
        start = end
    return out


def bitmap_from_ids(ids: NDArray[np.integer] | Sequence[int]) -> bytes:
    return bitmaps_from_id_lists([ids])[0]


def bitmap_cardinality(blob: bytes | None) -> int:
    return 0 if blob is None else len(BitMap.deserialize(blob))


def bitmap_union(blobs: Iterable[bytes | None]) -> bytes:
    """OR of serialized bitmaps (NULLs skipped), serialized."""
    maps = [BitMap.deserialize(b) for b in blobs if b is not None]
    return bytes(BitMap.union(*maps).serialize() if maps else BitMap().serialize())


# -- approximate COUNT DISTINCT: Spark's DataSketches HLL sketch bytes ----------------------------------


def hll_estimate(blobs: Iterable[bytes | None]) -> float:
    """Distinct-count estimate of the union of HLL sketches (NULLs skipped; none → 0)."""
    union = hll_union(HLL_MAX_LG_K)
    for b in blobs:
        if b is not None:
            union.update(hll_sketch.deserialize(b))
    return float(union.get_estimate())


# -- PERCENTILE_APPROX: Spark's DataSketches KLL (doubles) sketch bytes ---------------------------------


def kll_merged(blobs: Iterable[bytes | None]) -> kll_doubles_sketch | None:
    merged: kll_doubles_sketch | None = None
    for b in blobs:
        if b is None:
            continue
        sketch = kll_doubles_sketch.deserialize(b)
        if merged is None:
            merged = sketch
        else:
            merged.merge(sketch)
    return merged


def kll_quantile(blobs: Iterable[bytes | None], q: float) -> float | None:
    """The q-quantile (0 ≤ q ≤ 1, inclusive rank) of the merged sketches; None when they hold no value."""
    merged = kll_merged(blobs)
    if merged is None or merged.is_empty():
        return None
    return float(merged.get_quantile(q, True))


# -- TOP_N: array<struct<key: string, value: double>> sorted by value desc, key asc ---------------------


def encode_key(values: Sequence[object]) -> str:
    """The TOP_N key of group-by values (already strings as Spark casts them, or None for NULL)."""
    parts = []
    for v in values:
        if v is None:
            parts.append(KEY_NULL)
        else:
            parts.append(str(v).replace(KEY_ESCAPE, KEY_ESCAPE * 2).replace(KEY_SEPARATOR, KEY_ESCAPE + KEY_SEPARATOR))
    return KEY_SEPARATOR.join(parts)


def decode_key(key: str) -> list[str | None]:
    """The group-by values of a TOP_N key (as strings; None for NULL)."""
    values: list[str | None] = []
    current: list[str] = []
    null = False
    i = 0
    while i < len(key):
        ch = key[i]
        if ch == KEY_ESCAPE and i + 1 < len(key):
            nxt = key[i + 1]
            null = null or (nxt == "N" and not current)
            current.append("" if nxt == "N" else nxt)
            i += 2
            continue
        if ch == KEY_SEPARATOR:
            values.append(None if null else "".join(current))
            current, null = [], False
        else:
            current.append(ch)
        i += 1
    values.append(None if null else "".join(current))
    return values


def topn_merge(cells: Iterable[Sequence[tuple[str, float]] | None], n: int) -> list[tuple[str, float]]:
    """Re-sum the cells' (key, value) entries per key and keep the n largest (ties: smaller key first)."""
    totals: dict[str, float] = defaultdict(float)
    for cell in cells:
        for key, value in cell or ():
            totals[key] += value
    return sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
