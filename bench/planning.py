"""Benchmark: how planning cost grows with the statement — long IN lists, deep nesting — in one run.

    .venv/bin/python bench/planning.py --scale 0.1   # prints a table, writes bench/results/planning-*.json

Set-up: bench/cache.py's project (reused when `--home` already holds it): LINEORDER with a one-layout model
(order date, discount, ship mode; COUNT and SUM(LO_REVENUE)) built as one segment. Each statement is a new
shape for the session (its plan cache is emptied before every run): reported are the median of `--repeat`
runs of `Session.plan` (parse, qualify, match, prune, rewrite) and of `Session.sql` (the same, plus the plan
cache's bookkeeping, printing the engine's SQL and running it), and how it was answered: from a layout, by
pushdown, or refused (statements past `[query] max_nesting_depth` are, with a one-line error).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cache import PROJECT, _prepare  # bench/cache.py: the same project and model
from precube.query.errors import QueryError
from precube.query.session import Session

SIZES = (1_000, 5_000, 20_000)
DEPTHS = (100, 1_000)


def _in_list(n: int, strings: bool) -> str:
    """An IN list of `n` literals on a dimension of the layout (a few of them match, most do not)."""
    if strings:
        values = ", ".join(["'AIR'", "'MAIL'", *(f"'MODE {i:06d}'" for i in range(n - 2))])
        return f"select lo_orderdate, count(*) from ssb.lineorder where lo_shipmode in ({values}) group by lo_orderdate"
    values = ", ".join(str(i) for i in range(n))
    return f"select lo_orderdate, count(*) from ssb.lineorder where lo_discount in ({values}) group by lo_orderdate"


def _derived(n: int) -> str:
    """`n` derived tables nested around a block a layout answers."""
    inner = "(select lo_discount, count(*) as n from ssb.lineorder group by lo_discount) t"
    return "select lo_discount, n from " + "(select * from " * (n - 1) + inner + ") t" * (n - 1)


def _parentheses(n: int) -> str:
    return "select count(*) from ssb.lineorder where " + "(" * n + "lo_discount = 1" + ")" * n


STATEMENTS: list[tuple[str, str]] = [
    *((f"IN {n:,} integers", _in_list(n, strings=False)) for n in SIZES),
    *((f"IN {n:,} strings", _in_list(n, strings=True)) for n in SIZES),
    *((f"{n:,} nested derived tables", _derived(n)) for n in DEPTHS),
    *((f"{n:,} nested parentheses", _parentheses(n)) for n in DEPTHS),
]


def _median_ms(session: Session, run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The median of `repeat` runs, each a shape never seen (the plan cache emptied first), and the last
    run's result or error."""
    times, outcome = [], None
    for _ in range(repeat):
        session.plans.clear()
        started = time.perf_counter()
        try:
            outcome = run()
        except QueryError as err:
            outcome = err
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), outcome


def _answered(outcome: Any) -> str:
    if isinstance(outcome, QueryError):
        return f"refused: {type(outcome).__name__}"
    return "pushdown" if outcome.pushdown else "layout"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--home", type=Path, default=None, help="default /tmp/precube-cache-bench-sfN (shared)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    home = args.home or Path(f"/tmp/precube-cache-bench-sf{args.scale:g}")
    store, warehouse, build_s = _prepare(home, home / "ssb", args.scale, args.master)
    results = []
    with Session(store, PROJECT, warehouse) as session:
        session.sql(_in_list(2, strings=False))  # load the layout: its first load is no planning cost
        for name, sql in STATEMENTS:
            plan_ms, _ = _median_ms(session, lambda sql=sql: session.plan(sql), args.repeat)
            total_ms, outcome = _median_ms(session, lambda sql=sql: session.sql(sql), args.repeat)
            results.append(
                {
                    "statement": name,
                    "chars": len(sql),
                    "plan_ms": round(plan_ms, 1),
                    "total_ms": round(total_ms, 1),
                    "answered": _answered(outcome),
                    "rows": None if isinstance(outcome, QueryError) else outcome.table.num_rows,
                }
            )
    view = Table(title=f"planning cost, SSB SF {args.scale:g} (median of {args.repeat}, each a new shape)")
    for column in ("statement", "chars", "plan ms", "total ms", "answered", "rows"):
        view.add_column(column, justify="left" if column in ("statement", "answered") else "right")
    for r in results:
        rows = "-" if r["rows"] is None else f"{r['rows']:,}"
        times = f"{r['plan_ms']:.1f}", f"{r['total_ms']:.1f}"
        view.add_row(r["statement"], f"{r['chars']:,}", *times, r["answered"], rows)
    Console().print(view)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"planning-sf{args.scale:g}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    summary = {"scale": args.scale, "repeat": args.repeat, "build_s": round(build_s, 1)}
    path.write_text(json.dumps({"summary": summary, "statements": results}, indent=2))
    Console().print(f"wrote {path}")


if __name__ == "__main__":
    main()
