"""Benchmark: precube's clients against `Session.sql`, in one run.

    .venv/bin/python bench/clients.py --scale 0.1     # prints a table, writes bench/results/clients-*.json

Set-up as `bench/ssb.py` (reused when `--home` holds it): SSB at the scale, the SSB model with the layouts
recommended for the 13 queries, built as one segment; the server is `precube serve --no-jobs` in a child
process (`bench/serve.py`'s `Server`), its layouts preloaded. The result cache is off everywhere (in this
process and in the server), so every client runs the query. Per client, after a warm-up:

- small: the p50 latency of the 13 SSB queries (execute and fetch every row), `--repeat` rounds;
- 100k: the p50 latency of a 100,000-row result (seven LINEORDER columns, read from the source files),
  `--big-repeat` runs; the rate in MB/s of its Arrow bytes over that latency, and over what the client adds
  to `Session.sql`'s (the transfer and conversion alone).

The clients take turns query by query, so that the load of a shared machine falls on each alike.

Clients: `Session.sql` (the baseline), the DB-API in this process and through the server (rows as tuples with
`fetchall`, and as Arrow with `fetch_arrow_table`), SQLAlchemy on both URLs, pandas.read_sql on both URLs, and
Arrow Flight SQL through ADBC's driver (`serve --flight-port`; `fetch_arrow_table`).
Goals (issue 22): the remote DB-API within 1.5 ms of the in-process one for small results; a 100,000-row fetch
through Arrow at 50 MB/s or more. Issue 39: Flight SQL within 1.5 ms of `Session.sql` for small answers and
200 MB/s or more for the 100,000 rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from serve import ADMIN, Server, _free_port, _timed_ms, flight_connection

import precube.dbapi as db
from precube.query.session import Session
from precube.settings import load_settings
from precube.ssb.queries import SSB_QUERIES
from ssb import PROJECT, add_recommended_arguments, prepare_recommended

BIG = (
    "select lo_orderkey, lo_linenumber, lo_custkey, lo_partkey, lo_suppkey, lo_orderdate, lo_revenue "
    "from lineorder limit 100000"
)
NO_CACHE = {"PRECUBE__CACHE__ENABLED": "false"}


def _fetch(con: db.Connection, arrow: bool) -> Callable[[str], Any]:
    cur = con.cursor()

    def run(sql: str) -> Any:
        cur.execute(sql)
        return cur.fetch_arrow_table() if arrow else cur.fetchall()

    return run


def _flight(con: Any) -> Callable[[str], Any]:
    cur = con.cursor()

    def run(sql: str) -> Any:
        cur.execute(sql)
        return cur.fetch_arrow_table()

    return run


def _alchemy(engine: sa.Engine) -> Callable[[str], Any]:
    con = engine.connect()
    return lambda sql: con.exec_driver_sql(sql).fetchall()


def _measure(
    clients: dict[str, Callable[[str], Any]], queries: list[str], repeat: int, big_repeat: int
) -> dict[str, dict[str, float]]:
    """Each client's p50 of the small queries and of the big one, the clients taking turns query by query (on a
    shared machine the load drifts: turns spread it over every client alike)."""
    for run in clients.values():
        for sql in [*queries, BIG]:  # warm: layouts loaded, plans cached, connections open
            run(sql)
    small: dict[str, list[float]] = {name: [] for name in clients}
    big: dict[str, list[float]] = {name: [] for name in clients}
    for _ in range(repeat):
        for sql in queries:
            for name, run in clients.items():
                small[name] += _timed_ms(lambda run=run, sql=sql: run(sql), 1)
    for _ in range(big_repeat):
        for name, run in clients.items():
            big[name] += _timed_ms(lambda run=run: run(BIG), 1)
    return {
        name: {"small_p50_ms": statistics.median(small[name]), "big_p50_ms": statistics.median(big[name])}
        for name in clients
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_recommended_arguments(parser, scale=0.1)
    parser.add_argument("--repeat", type=int, default=20, help="rounds of the 13 queries per client")
    parser.add_argument("--big-repeat", type=int, default=10, help="runs of the 100,000-row query per client")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    home, _, store, settings, build_s = prepare_recommended(args)
    settings = load_settings(home=home, spark={"master": args.master}, cache={"enabled": False})
    queries = list(SSB_QUERIES.values())
    report: dict[str, Any] = {"scale": args.scale, "build_s": round(build_s, 1), "cores": os.cpu_count(), "clients": {}}
    flight_port = _free_port()
    server = Server(home, env=NO_CACHE, args=("--flight-port", str(flight_port)))
    try:
        server.wait_loaded()
        remote_url = sa.URL.create("precube+http", ADMIN[0], ADMIN[1], "127.0.0.1", server.port, database=PROJECT)
        local_url = sa.URL.create("precube", database=PROJECT, query={"home": str(home)})
        with (
            Session(store, PROJECT, settings.warehouse_root, settings=settings.query) as session,
            db.connect(project=PROJECT, settings=settings) as local,
            db.connect(server.url, project=PROJECT, user=ADMIN[0], password=ADMIN[1]) as remote,
            flight_connection(flight_port, PROJECT) as flight,
        ):
            for sql in queries:  # held in memory, as the server (preloaded, settled) holds them
                session.hold(sql)
            time.sleep(10)  # the server's loader holds its preloaded layouts meanwhile
            big = session.sql(BIG).table
            report["big_rows"], report["big_bytes"] = big.num_rows, big.nbytes
            os.environ.update(NO_CACHE)  # the in-process SQLAlchemy URL reads the settings itself
            local_engine, remote_engine = sa.create_engine(local_url), sa.create_engine(remote_url)
            clients: dict[str, Callable[[str], Any]] = {
                "Session.sql": lambda sql: session.sql(sql).table,
                "DB-API in-process, fetchall": _fetch(local, arrow=False),
                "DB-API in-process, Arrow": _fetch(local, arrow=True),
                "DB-API remote, fetchall": _fetch(remote, arrow=False),
                "DB-API remote, Arrow": _fetch(remote, arrow=True),
                "SQLAlchemy precube://": _alchemy(local_engine),
                "SQLAlchemy precube+http://": _alchemy(remote_engine),
                "pandas.read_sql precube://": lambda sql: pd.read_sql(sql, local_engine),
                "pandas.read_sql precube+http://": lambda sql: pd.read_sql(sql, remote_engine),
                "Flight SQL (ADBC), Arrow": _flight(flight),
            }
            report["clients"] = _measure(clients, queries, args.repeat, args.big_repeat)
            local_engine.dispose()
            remote_engine.dispose()
    finally:
        server.stop()
        store.close()
    found = report["clients"]
    base = found["Session.sql"]
    for figures in found.values():
        figures["small_vs_session_ms"] = figures["small_p50_ms"] - base["small_p50_ms"]
        figures["big_mb_s"] = report["big_bytes"] / 1e6 / (figures["big_p50_ms"] / 1000)
        added = figures["big_p50_ms"] - base["big_p50_ms"]  # what the client adds to the query's own time
        figures["big_transfer_mb_s"] = report["big_bytes"] / 1e6 / (added / 1000) if added > 0 else None
    report["remote_minus_local_small_ms"] = (
        found["DB-API remote, fetchall"]["small_p50_ms"] - found["DB-API in-process, fetchall"]["small_p50_ms"]
    )
    report["remote_arrow_big_mb_s"] = found["DB-API remote, Arrow"]["big_mb_s"]
    report["remote_arrow_transfer_mb_s"] = found["DB-API remote, Arrow"]["big_transfer_mb_s"]
    report["flight_small_vs_session_ms"] = found["Flight SQL (ADBC), Arrow"]["small_vs_session_ms"]
    report["flight_big_mb_s"] = found["Flight SQL (ADBC), Arrow"]["big_mb_s"]
    _print(Console(width=140), report)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"clients-sf{args.scale:g}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")


def _print(console: Console, report: dict[str, Any]) -> None:
    table = Table(
        title=f"clients at SF {report['scale']:g} ({report['big_rows']:,} rows = {report['big_bytes'] / 1e6:.1f} MB)"
    )
    for column in ("client", "small p50 ms", "vs Session.sql ms", "100k p50 ms", "100k MB/s", "transfer MB/s"):
        table.add_column(column, justify="left" if column == "client" else "right")
    for name, f in report["clients"].items():
        table.add_row(
            name,
            f"{f['small_p50_ms']:.2f}",
            f"{f['small_vs_session_ms']:+.2f}",
            f"{f['big_p50_ms']:.1f}",
            f"{f['big_mb_s']:.0f}",
            "-" if f["big_transfer_mb_s"] is None else f"{f['big_transfer_mb_s']:.0f}",
        )
    console.print(table)
    gap, rate = report["remote_minus_local_small_ms"], report["remote_arrow_big_mb_s"]
    transfer = report["remote_arrow_transfer_mb_s"]
    console.print(f"remote DB-API vs in-process, small results: {gap:+.2f} ms (goal: within 1.5 ms)")
    console.print(
        f"100,000 rows through the remote DB-API as Arrow: {rate:.0f} MB/s with the query's own time, "
        f"{transfer or float('nan'):.0f} MB/s for what the client adds (goal: 50 MB/s or more)"
    )
    console.print(
        f"Flight SQL (ADBC) vs Session.sql, small results: {report['flight_small_vs_session_ms']:+.2f} ms (goal: "
        f"within 1.5 ms); 100,000 rows: {report['flight_big_mb_s']:.0f} MB/s (goal: 200 MB/s or more)"
    )


if __name__ == "__main__":
    main()
