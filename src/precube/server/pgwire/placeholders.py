"""A statement's `$n` placeholders: how many it has, the value of each one a Bind message carries (read by the
type the client gave in Parse — its OID — in the text or binary format it chose), and the statement with each
replaced by that value's literal node (`precube.service.parameters`, the rule the DB-API binds by too). The
client's bytes never become SQL text: the generator quotes and escapes every string for the dialect the statement
is written out in."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from precube.server.pgwire import types as pg
from precube.server.pgwire.sqlstate import PgError
from precube.service.parameters import ParameterError, Real
from precube.service.parameters import literal as literal_of

TEXT_LIKE = {0, pg.TEXT.oid, pg.VARCHAR.oid, pg.BPCHAR.oid, pg.NAME.oid, pg.CHAR.oid, pg.JSON.oid, pg.UNKNOWN.oid}
_INTEGERS = {pg.INT2.oid: ">h", pg.INT4.oid: ">i", pg.INT8.oid: ">q", pg.OID.oid: ">I"}
_FLOATS = {pg.FLOAT4.oid: ">f", pg.FLOAT8.oid: ">d"}
_EPOCH = dt.datetime(2000, 1, 1)


def _invalid(oid: int, raw: bytes | str, why: str = "") -> PgError:
    name = pg.BY_OID[oid].sql_name if oid in pg.BY_OID else f"OID {oid}"
    shown = raw if isinstance(raw, str) else raw[:40].hex()
    return PgError("22P02", f"invalid input for a parameter of type {name}: {shown[:40]!r}{why}")


def _string(text: str) -> str:
    if "\x00" in text:  # a PostgreSQL text value cannot hold one
        raise PgError("22021", "invalid byte sequence for encoding UTF8: 0x00 (a parameter holds a NUL character)")
    return text


def _float(value: float, oid: int) -> float:
    """A `real` parameter stays single-precision (bound as FLOAT, not DOUBLE)."""
    return Real(value) if oid == pg.FLOAT4.oid else value


def from_text(raw: bytes, oid: int) -> object:
    """A parameter sent in the text format."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PgError("22021", f"invalid byte sequence for encoding UTF8 in a parameter: {err.reason}") from err
    if oid in TEXT_LIKE:
        return _string(text)
    try:
        if oid in _INTEGERS:
            return int(text.strip())
        if oid in _FLOATS:
            return _float(float(text.strip()), oid)
        if oid == pg.NUMERIC.oid:
            return Decimal(text.strip())
        if oid == pg.BOOL.oid:
            word = text.strip().lower()
            if word not in ("t", "true", "f", "false", "1", "0", "yes", "no", "on", "off", "y", "n"):
                raise ValueError(word)
            return word in ("t", "true", "1", "yes", "on", "y")
        if oid == pg.DATE.oid:
            return dt.date.fromisoformat(text.strip())
        if oid in (pg.TIMESTAMP.oid, pg.TIMESTAMPTZ.oid):
            return dt.datetime.fromisoformat(text.strip())
    except (ValueError, InvalidOperation) as err:
        raise _invalid(oid, text) from err
    raise PgError("0A000", f"parameters of type {_type_name(oid)} are not supported; send them as text")


def from_binary(raw: bytes, oid: int) -> object:
    """A parameter sent in the binary format."""
    try:
        if oid in TEXT_LIKE:
            return from_text(raw, oid)
        if oid in _INTEGERS:
            (integer,) = struct.unpack(_INTEGERS[oid], raw)
            return int(integer)
        if oid in _FLOATS:
            (number,) = struct.unpack(_FLOATS[oid], raw)
            return _float(float(number), oid)
        if oid == pg.BOOL.oid and len(raw) == 1:
            return raw != b"\x00"
        if oid == pg.DATE.oid:
            (days,) = struct.unpack(">i", raw)
            return _EPOCH.date() + dt.timedelta(days=days)
        if oid in (pg.TIMESTAMP.oid, pg.TIMESTAMPTZ.oid):
            (micros,) = struct.unpack(">q", raw)
            return _EPOCH + dt.timedelta(microseconds=micros)
        if oid == pg.NUMERIC.oid:
            return _numeric(raw)
    except (struct.error, OverflowError, ValueError) as err:
        raise _invalid(oid, raw) from err
    raise PgError("0A000", f"binary parameters of type {_type_name(oid)} are not supported; send them as text")


def _numeric(raw: bytes) -> Decimal:
    count, weight, sign, scale = struct.unpack(">hhHH", raw[:8])
    digits = struct.unpack(f">{count}H", raw[8 : 8 + 2 * count])
    if sign == 0xC000:
        raise ValueError("NaN")
    value = sum((Decimal(d) * Decimal(10000) ** (weight - i) for i, d in enumerate(digits)), Decimal(0))
    return (-value if sign == 0x4000 else value).quantize(Decimal(1).scaleb(-scale))


def _type_name(oid: int) -> str:
    return pg.BY_OID[oid].sql_name if oid in pg.BY_OID else f"OID {oid}"


def literal(raw: bytes | None, oid: int, binary: bool) -> exp.Expr:
    """The literal of one bound value (None: SQL NULL)."""
    if raw is None:
        return literal_of(None)
    value = from_binary(raw, oid) if binary else from_text(raw, oid)
    try:
        return literal_of(value)
    except ParameterError as err:  # a value its type reads but SQL cannot hold: a NaN or 39-digit numeric
        raise _invalid(oid, raw if binary else raw.decode(), f" ({err.message})") from err


def argument(value: exp.Expr, oid: int) -> exp.Expr:
    """The literal of one `EXECUTE name (…)` argument, typed as PREPARE declared it (0: as written): a constant
    (a string, a number, NULL, TRUE/FALSE, or a cast of one) read through its text as a Bind value is."""
    if isinstance(value, exp.Cast) and isinstance(value.to, exp.DataType):
        oid = oid or _TYPE_OIDS.get(value.to.this, 0)
        value = value.this
    if isinstance(value, exp.Null):
        return literal(None, oid, False)
    if isinstance(value, exp.Boolean):
        return literal(b"true" if value.this else b"false", oid or pg.BOOL.oid, False)
    negative = isinstance(value, exp.Neg)
    inner = value.this if negative else value
    if isinstance(inner, exp.Literal) and (inner.is_number or not negative):
        text = ("-" if negative else "") + str(inner.this)
        if inner.is_number and not oid:
            oid = pg.INT8.oid if text.lstrip("-").isdigit() and abs(int(text)) < 2**63 else pg.NUMERIC.oid
        return literal(text.encode(), oid, False)
    raise PgError("0A000", f"EXECUTE takes constants as parameters, not {value.sql(dialect='postgres')[:60]!r}")


_TYPE_OIDS = {
    exp.DataType.Type.BOOLEAN: pg.BOOL.oid,
    exp.DataType.Type.BIGINT: pg.INT8.oid,
    exp.DataType.Type.SMALLINT: pg.INT2.oid,
    exp.DataType.Type.INT: pg.INT4.oid,
    exp.DataType.Type.TEXT: pg.TEXT.oid,
    exp.DataType.Type.FLOAT: pg.FLOAT4.oid,
    exp.DataType.Type.DOUBLE: pg.FLOAT8.oid,
    exp.DataType.Type.CHAR: pg.BPCHAR.oid,
    exp.DataType.Type.VARCHAR: pg.VARCHAR.oid,
    exp.DataType.Type.DATE: pg.DATE.oid,
    exp.DataType.Type.TIMESTAMP: pg.TIMESTAMP.oid,
    exp.DataType.Type.TIMESTAMPTZ: pg.TIMESTAMPTZ.oid,
    exp.DataType.Type.DECIMAL: pg.NUMERIC.oid,
}


def type_oid(datatype: exp.DataType) -> int:
    """The OID of a type as sqlglot reads it (0, unknown, for one the wire has no OID for: read as text)."""
    return _TYPE_OIDS.get(datatype.this, 0)


def bind(statement: exp.Expr, values: list[exp.Expr]) -> exp.Expr:
    """`statement` with each `$n` replaced by the n-th value (a copy; the parsed statement is kept for the next
    Bind). A `$n` without a value is an error, as in Postgres."""

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            n = int(node.this.this)
            if not 1 <= n <= len(values):
                raise PgError("42P02", f"there is no parameter ${n}")
            return values[n - 1].copy()
        return node

    return statement.copy().transform(replace, copy=False)


def count(statement: exp.Expr) -> int:
    """How many parameters the statement refers to (its highest `$n`)."""
    found = [
        int(p.this.this)
        for p in statement.find_all(exp.Parameter)
        if isinstance(p.this, exp.Literal) and not p.this.is_string and str(p.this.this).isdigit()
    ]
    return max(found, default=0)
