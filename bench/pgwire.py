"""Benchmark: the Postgres wire protocol (`precube serve --pg-port`, through psycopg) and Arrow Flight SQL
(`--flight-port`, through ADBC's driver) against `Session.sql` in this process, in one run.

    .venv/bin/python bench/pgwire.py --scale 1     # prints a table, writes bench/results/pgwire-*.json

Set-up as `bench/ssb.py` (the same `--home`, reused when it holds it): SSB at the scale, the SSB model with the
layouts recommended for the 13 queries, built as one segment. The server runs as a child process (`precube
serve --no-jobs --pg-port P --flight-port F`, result cache off so that every answer is computed, as in-process)
so that it and this client do not share one GIL. Measured, each the median of `--repeat` runs after one untimed run:

- a warm SSB query: per query of the 13, `Session.sql` against psycopg's simple query protocol (text rows)
  and its extended protocol (a prepared statement, binary rows), and Flight SQL (`fetch_arrow_table`); the
  overhead is wire minus in-process;
- a 100,000-row answer (`--rows`; a detail query read from the source files): `Session.sql` against psycopg
  text and binary and Flight SQL, with rows per second (and MB/s of the Arrow answer through Flight SQL).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from serve import ADMIN, Server, _free_port, _timed_ms, flight_connection

from precube.query.session import Session
from precube.ssb.queries import SSB_QUERIES
from ssb import PROJECT, add_recommended_arguments, prepare_recommended

DETAIL = "select lo_orderkey, lo_linenumber, lo_custkey, lo_orderdate, lo_revenue, lo_shipmode from ssb.lineorder"


def _fetch(conn: psycopg.Connection[Any], sql: str, binary: bool, prepare: bool | None) -> int:
    with conn.cursor(binary=binary) as cur:
        cur.execute(sql, prepare=prepare)
        return len(cur.fetchall())


def _flight(cur: Any, sql: str) -> int:
    cur.execute(sql)
    return int(cur.fetch_arrow_table().num_rows)


def _median(run: Any, repeat: int) -> float:
    run()  # untimed: the plan, the layout, the connection's first use
    return statistics.median(_timed_ms(run, repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_recommended_arguments(parser, scale=1.0)
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per SSB query")
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the large answer")
    parser.add_argument("--large-repeat", type=int, default=7, help="timed runs of the large answer")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    home, _, store, settings, build_s = prepare_recommended(args)
    port, flight_port = _free_port(), _free_port()
    server = Server(
        home,
        args=("--pg-port", str(port), "--flight-port", str(flight_port)),
        env={"PRECUBE__CACHE__ENABLED": "false"},
    )
    server.wait_loaded()
    time.sleep(10)  # the server's loader holds the preloaded layouts meanwhile
    report: dict[str, Any] = {"scale": args.scale, "build_s": round(build_s, 1), "cores": os.cpu_count()}
    report["load"] = os.getloadavg()[0]
    dsn = f"host=127.0.0.1 port={port} dbname={PROJECT} user={ADMIN[0]} password={ADMIN[1]}"
    try:
        with (
            Session(store, PROJECT, settings.warehouse_root, settings=settings.query) as session,
            psycopg.connect(dsn, autocommit=True) as conn,
            flight_connection(flight_port, PROJECT) as flight,
            flight.cursor() as cursor,
        ):
            for sql in SSB_QUERIES.values():  # held in memory, as the server (preloaded, settled) holds them
                session.hold(sql)
            queries = {}
            for name, sql in SSB_QUERIES.items():
                local = _median(lambda sql=sql: session.sql(sql), args.repeat)
                simple = _median(lambda sql=sql: _fetch(conn, sql, False, False), args.repeat)
                extended = _median(lambda sql=sql: _fetch(conn, sql, True, True), args.repeat)
                arrow = _median(lambda sql=sql: _flight(cursor, sql), args.repeat)
                queries[name] = {
                    "in_process_ms": local,
                    "simple_ms": simple,
                    "extended_binary_ms": extended,
                    "flight_ms": arrow,
                }
            report["ssb"] = queries
            for kind in ("simple_ms", "extended_binary_ms", "flight_ms"):
                report[f"ssb_overhead_p50_ms_{kind.removesuffix('_ms')}"] = statistics.median(
                    q[kind] - q["in_process_ms"] for q in queries.values()
                )
            large = f"{DETAIL} limit {args.rows}"
            answer = session.sql(large).table
            rows = answer.num_rows
            local = _median(lambda: session.sql(large), args.large_repeat)
            text = _median(lambda: _fetch(conn, large, False, False), args.large_repeat)
            binary = _median(lambda: _fetch(conn, large, True, None), args.large_repeat)
            arrow = _median(lambda: _flight(cursor, large), args.large_repeat)
            report["large"] = {
                "rows": rows,
                "in_process_ms": local,
                "text_ms": text,
                "binary_ms": binary,
                "text_rows_per_s": rows / text * 1000,
                "binary_rows_per_s": rows / binary * 1000,
                "text_over_in_process": text / local,
                "binary_over_in_process": binary / local,
                "flight_ms": arrow,
                "flight_rows_per_s": rows / arrow * 1000,
                "flight_mb_per_s": answer.nbytes / 1e6 / (arrow / 1000),
                "flight_over_in_process": arrow / local,
            }
    finally:
        server.stop()
        store.close()
    _print(Console(), report)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"pgwire-sf{args.scale:g}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    Console().print(f"wrote {out}")


def _print(console: Console, report: dict[str, Any]) -> None:
    table = Table(title=f"SSB SF {report['scale']:g} over the Postgres wire protocol (ms, p50)")
    for column in ("query", "Session.sql", "psycopg simple (text)", "psycopg prepared (binary)", "Flight SQL"):
        table.add_column(column, justify="right")
    for name, q in report["ssb"].items():
        table.add_row(
            name,
            f"{q['in_process_ms']:.2f}",
            f"{q['simple_ms']:.2f}",
            f"{q['extended_binary_ms']:.2f}",
            f"{q['flight_ms']:.2f}",
        )
    console.print(table)
    console.print(
        f"overhead p50 over Session.sql: simple {report['ssb_overhead_p50_ms_simple']:.2f} ms (goal ≤ 1 ms), "
        f"prepared binary {report['ssb_overhead_p50_ms_extended_binary']:.2f} ms, "
        f"Flight SQL {report['ssb_overhead_p50_ms_flight']:.2f} ms (goal ≤ 1.5 ms)"
    )
    large = report["large"]
    console.print(
        f"{large['rows']:,} rows: Session.sql {large['in_process_ms']:.0f} ms, psycopg text {large['text_ms']:.0f} ms "
        f"({large['text_rows_per_s']:,.0f} rows/s, {large['text_over_in_process']:.1f}x), binary "
        f"{large['binary_ms']:.0f} ms ({large['binary_rows_per_s']:,.0f} rows/s, "
        f"{large['binary_over_in_process']:.1f}x), Flight SQL {large['flight_ms']:.0f} ms "
        f"({large['flight_rows_per_s']:,.0f} rows/s, {large['flight_mb_per_s']:.0f} MB/s, "
        f"{large['flight_over_in_process']:.1f}x); load average {report['load']:.1f} on {report['cores']} cores"
    )


if __name__ == "__main__":
    main()
