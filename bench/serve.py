"""Benchmark: the 13 SSB queries through `precube serve` (HTTP on loopback) against the same queries
in-process (`Session.sql`), in one run.

    .venv/bin/python bench/serve.py --scale 1      # prints a table, writes bench/results/serve-*.json

Set-up as `bench/ssb.py` (reused when `--home` holds it): SSB at the scale, the SSB model with the layouts
recommended for the 13 queries, built as one segment. The server runs as a child process (`precube serve
--no-jobs`, as an operator starts it) so that it and this load generator do not share one GIL. Measured:

- first, `--warmup` seconds of the load (b) below, so that the server's loader holds what the reads earn (a
  warm server's steady state; a layout of nearly the fact's rows is held only after it saved several copies);
- overhead: per query, the median of `--repeat` HTTP answers with the result cache off (Kylin's
  `backdoorToggles` DEBUG_TOGGLE_DISABLE_QUERY_CACHE) minus the median of `Session.sql` in this process;
- (a) result-cache hits and (b) warm layout answers with the cache off: throughput and p50/p99 latency at
  concurrency 1, 8 and 32 (asyncio loops, each on its own keep-alive connection, sending the queries
  round-robin for `--seconds`);
- (c) query p50 (cache off, concurrency 1) while `precube build` builds another project's model in a child
  process, against idle;
- (d) the first query on each layout after a server start: once the server has loaded its layouts
  (`[server] preload`, the default; its time is reported), and with preload off (`--no-preload` start); with
  each, the time from the server's start to its first answer and the server's resident memory (the process
  and its children, from /proc): at `/health`, after the 13 queries, and its peak (VmHWM) at the end of the run.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from precube.metadata import Project, SourceType, open_store
from precube.modeling.model_store import create_model
from precube.query.session import Session
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES
from precube.ssb.queries import SSB_QUERIES
from ssb import PROJECT, add_recommended_arguments, prepare_recommended

ADMIN = ("ADMIN", "bench-Adm1n!")
NO_CACHE = {"DEBUG_TOGGLE_DISABLE_QUERY_CACHE": "true"}
LOADED = re.compile(r"loaded (\d+) layouts in ([\d.]+) s")
BUILD_PROJECT = "ssb_build_load"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`precube serve` in a child process."""

    def __init__(
        self,
        home: Path,
        preload: bool = True,
        workers: int = 1,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        start_timeout_s: float = 300.0,
        jobs: bool = False,
    ) -> None:
        """`jobs`: with the server's job service (and its Spark session); by default `--no-jobs`."""
        self.port, self.workers = _free_port(), workers
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / f"serve-bench-{self.port}.log"
        env = {
            **os.environ,
            "PRECUBE__SERVER__ADMIN_PASSWORD": ADMIN[1],
            "PRECUBE__SERVER__PRELOAD": "true" if preload else "false",
            # every answer is admitted to the result cache: (a) measures hits of all 13 queries
            "PRECUBE__CACHE__MIN_DURATION_MS": "0",
            "PRECUBE__CACHE__MIN_SCANNED_ROWS": "0",
            **(env or {}),
        }
        command = [sys.executable, "-m", "precube", "--home", str(home), "serve", "--port", str(self.port)]
        command += [*([] if jobs else ["--no-jobs"]), *args]
        if workers > 1:
            command += ["--workers", str(workers)]
        self.started = time.perf_counter()
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log.read_text()[-2000:]}")
            if time.perf_counter() - self.started > start_timeout_s:
                self.stop()
                raise RuntimeError(f"the server did not answer /health within {start_timeout_s:g} s")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        self.up_s = time.perf_counter() - self.started

    def wait_loaded(self, timeout: float = 600) -> tuple[int, float]:
        """The layouts the server preloaded and the seconds it took (from its log)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = list(LOADED.finditer(self.log.read_text(errors="replace")))
            if len(found) >= self.workers:  # every worker process loads its own
                return int(found[-1].group(1)), float(found[-1].group(2))
            time.sleep(0.05)
        raise RuntimeError("the server did not finish loading its layouts")

    @contextmanager
    def client(self) -> Iterator[Wire]:
        wire = Wire(self.url)
        try:
            yield wire
        finally:
            wire.close()

    def memory_mb(self) -> tuple[float, float]:
        """The server's resident memory and its peak (MiB): the process and its children, from /proc."""
        rss = peak = 0
        for pid in _tree(self.process.pid):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue  # exited meanwhile
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            rss += int(fields.get("VmRSS", "0 kB").split()[0])
            peak += int(fields.get("VmHWM", "0 kB").split()[0])
        return rss / 1024, peak / 1024

    def stop(self) -> None:
        """Terminate the server; killed when it has not exited after 60 s."""
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def flight_connection(port: int, project: str) -> Any:
    """An ADBC Flight SQL connection to a server's `--flight-port` on loopback, signed in as ADMIN, on `project`."""
    import adbc_driver_flightsql.dbapi as flightsql  # only the benchmarks of Flight SQL need it

    return flightsql.connect(
        f"grpc://127.0.0.1:{port}",
        db_kwargs={
            "username": ADMIN[0],
            "password": ADMIN[1],
            "adbc.flight.sql.rpc.call_header.x-precube-project": project,
        },
        autocommit=True,
    )


def _tree(root: int) -> list[int]:
    """`root` and its descendants' pids."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _body(sql: str, cache: bool) -> dict[str, Any]:
    return {"sql": sql, "project": PROJECT} | ({} if cache else {"backdoorToggles": NO_CACHE})


class Wire:
    """A minimal HTTP/1.1 keep-alive client of `POST /kylin/api/query` for the timed requests: each request's
    bytes are made once and the answer is read by its Content-Length. httpx spends 1-4 ms of CPU a request,
    which on a 2-core machine shared with the server measures the client rather than the server."""

    def __init__(self, url: str, auth: tuple[str, str] = ADMIN, timeout_s: float | None = None) -> None:
        self.host, port = url.removeprefix("http://").split(":")
        self.port = int(port)
        self.timeout_s = timeout_s  # of each connect and read (None: none)
        self._token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        self._sock: socket.socket | None = None
        self._file: Any = None

    def request(self, sql: str, cache: bool) -> bytes:
        payload = json.dumps(_body(sql, cache)).encode()
        head = (
            f"POST /kylin/api/query HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Basic {self._token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        return head.encode() + payload

    def post(self, request: bytes) -> tuple[int, bytes]:
        """Send one request on this client's connection (blocking); the status and body. A connection the
        server closed while idle (uvicorn's keep-alive timeout, 5 s) is reopened once."""
        for attempt in (1, 2):
            if self._sock is None:
                self._sock = socket.create_connection((self.host, self.port), self.timeout_s)
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._file = self._sock.makefile("rb")
            try:
                self._sock.sendall(request)
                head = self._file.readline()
            except ConnectionError:
                head = b""
            if head:
                break
            self.close()
            if attempt == 2:
                raise RuntimeError("the server closed the connection")
        while not head.endswith(b"\r\n\r\n"):
            line = self._file.readline()
            if not line:
                raise RuntimeError("the server closed the connection")
            head += line
        return _status(head), self._file.read(_length(head))

    async def post_async(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
    ) -> tuple[int, bytes]:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        return _status(head), await reader.readexactly(_length(head))

    def close(self) -> None:
        if self._sock is not None:
            self._file.close()
            self._sock.close()
            self._sock = None


def _status(head: bytes) -> int:
    return int(head[9:12])


def _length(head: bytes) -> int:
    found = CONTENT_LENGTH.search(head)
    if found is None:
        raise RuntimeError(f"an answer without Content-Length: {head[:200]!r}")
    return int(found.group(1))


CONTENT_LENGTH = re.compile(rb"(?i)\r\ncontent-length: *(\d+)")


def _post(wire: Wire, sql: str, cache: bool) -> dict[str, Any]:
    status, body = wire.post(wire.request(sql, cache))
    if status != 200:
        raise RuntimeError(f"query failed: {body[:500]!r}")
    data: dict[str, Any] = json.loads(body)["data"]
    return data


def _timed_ms(run: Any, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return times


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _load(
    url: str, queries: list[str], cache: bool, concurrency: int, seconds: float, auth: tuple[str, str] = ADMIN
) -> dict[str, float]:
    """`concurrency` loops, each on its own connection, sending the queries round-robin for `seconds`: q/s,
    p50, p99 (ms), and the failures (an answer other than 200, or a connection closed without one: the loop
    then opens another)."""
    latencies: list[float] = []
    failures = 0
    wire = Wire(url, auth)
    requests = [wire.request(sql, cache) for sql in queries]
    deadline = time.perf_counter() + seconds

    async def loop(offset: int) -> None:
        nonlocal failures
        i = offset
        while time.perf_counter() < deadline:
            try:
                reader, writer = await asyncio.open_connection(wire.host, wire.port)
            except OSError:
                failures += 1
                await asyncio.sleep(0.05)
                continue
            try:
                while time.perf_counter() < deadline:
                    request = requests[i % len(requests)]
                    i += 1
                    started = time.perf_counter()
                    status, _ = await wire.post_async(reader, writer, request)
                    latencies.append((time.perf_counter() - started) * 1000)
                    failures += status != 200
            except (OSError, asyncio.IncompleteReadError):
                failures += 1  # the connection went away with the request in flight
            finally:
                writer.close()

    began = time.perf_counter()
    await asyncio.gather(*(loop(k) for k in range(concurrency)))
    elapsed = time.perf_counter() - began
    return {
        "concurrency": concurrency,
        "queries": len(latencies),
        "failures": failures,
        "qps": len(latencies) / elapsed,
        "p50_ms": _pct(latencies, 0.5),
        "p99_ms": _pct(latencies, 0.99),
    }


def _second_project(home: Path, data: Path) -> None:
    """A project with the SSB tables and model, unbuilt: what `precube build` builds during (c)."""
    from precube.cli.demo import SSB_DATABASE, ssb_model_spec
    from precube.settings import load_settings

    settings = load_settings(home=home)
    with open_store(settings.metadata_url) as store:
        if any(p.name == BUILD_PROJECT for p in store.list_projects()):
            store.delete_project(BUILD_PROJECT)
        store.create_project(Project(name=BUILD_PROJECT, default_database=SSB_DATABASE))
        for name in TABLES:
            load_file_table(store, BUILD_PROJECT, data / name, SourceType.PARQUET, database=SSB_DATABASE)
        spec = ssb_model_spec().model_copy(update={"aggregation_groups": [], "base_index_type": ["AGG_INDEX"]})
        create_model(store, BUILD_PROJECT, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_recommended_arguments(parser, scale=1.0)
    parser.add_argument("--repeat", type=int, default=50, help="timed runs per query for the overhead")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each load run")
    parser.add_argument(
        "--warmup", type=float, default=45.0, help="seconds of load (b) before the warm measures (the loader holds)"
    )
    parser.add_argument(
        "--settle", type=float, default=10.0, help="seconds after the 13 first queries before the memory is read"
    )
    parser.add_argument("--no-build", action="store_true", help="skip (c), the queries during a build")
    parser.add_argument("--workers", type=int, default=1, help="server processes (precube serve --workers)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    home, data, store, settings, build_s = prepare_recommended(args)
    queries = list(SSB_QUERIES.values())
    names = list(SSB_QUERIES)
    console = Console()
    report: dict[str, Any] = {
        "workers": args.workers,
        "scale": args.scale,
        "build_s": round(build_s, 1),
        "cores": os.cpu_count(),
    }

    # (d) first: a fresh server, every layout's first query (after its preload, then with preload off)
    first: dict[str, Any] = {}
    for preload in (True, False):
        server = Server(home, preload=preload)
        try:
            rss_start = server.memory_mb()[0]
            with server.client() as client:
                times = [_timed_ms(lambda sql=queries[0]: _post(client, sql, cache=False), 1)[0]]
                first_answer_s = time.perf_counter() - server.started
                loaded = server.wait_loaded() if preload else (0, 0.0)
                times += [_timed_ms(lambda sql=sql: _post(client, sql, cache=False), 1)[0] for sql in queries[1:]]
            time.sleep(args.settle)  # the background loader's copies, begun by the reads, run on
            rss_after, peak = server.memory_mb()
        finally:
            server.stop()
        first["preload" if preload else "no_preload"] = {
            "server_up_s": round(server.up_s, 2),
            "first_answer_s": round(first_answer_s, 2),
            "rss_start_mb": round(rss_start),
            "rss_after_13_mb": round(rss_after),
            "peak_rss_mb": round(peak),
            "layouts_loaded": loaded[0],
            "load_s": loaded[1],
            "p50_ms": statistics.median(times),
            "max_ms": max(times),
            "per_query_ms": dict(zip(names, times, strict=True)),
        }
    report["first_query"] = first

    server = Server(home, workers=args.workers)
    try:
        server.wait_loaded()
        with server.client() as client:
            for sql in queries:  # the answers of a warm server: its loader holds what the reads earn
                _post(client, sql, cache=False)
        # the load (b) measures, until the loader holds what its reads earn (a layout of nearly the fact's rows
        # must save several times its copy first: SF 1's two largest, after ~300 reads each)
        report["warmup"] = asyncio.run(_load(server.url, queries, False, 8, args.warmup))
        time.sleep(args.settle)
        with (
            Session(store, PROJECT, settings.warehouse_root, settings=settings.query) as session,
            server.client() as client,
        ):
            for sql in queries:  # held in memory, as the server (preloaded, settled) holds them
                session.hold(sql)
            overhead = {}
            for name, sql in zip(names, queries, strict=True):
                local = statistics.median(_timed_ms(lambda sql=sql: session.sql(sql), args.repeat))
                _post(client, sql, cache=False)
                remote = statistics.median(_timed_ms(lambda sql=sql: _post(client, sql, cache=False), args.repeat))
                overhead[name] = {"in_process_ms": local, "http_ms": remote, "overhead_ms": remote - local}
        report["overhead"] = overhead
        report["overhead_p50_ms"] = statistics.median(o["overhead_ms"] for o in overhead.values())
        with server.client() as client:
            for sql in queries:
                _post(client, sql, cache=True)  # cached: (a) reads them
        report["load"] = {
            kind: [asyncio.run(_load(server.url, queries, cache, c, args.seconds)) for c in (1, 8, 32)]
            for kind, cache in (("a_cache_hits", True), ("b_layouts_no_cache", False))
        }
        if not args.no_build:
            idle = asyncio.run(_load(server.url, queries, False, 1, args.seconds))
            _second_project(home, data)
            log = (home / "build-during-bench.log").open("wb")
            build = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "precube",
                    "--home",
                    str(home),
                    "build",
                    "-p",
                    BUILD_PROJECT,
                    "-m",
                    "ssb",
                    "--start",
                    "1992-01-01",
                    "--end",
                    "1999-01-01",
                    "--wait",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            time.sleep(20.0)  # past the JVM's start (the build runs ~50 s at SF 1 on two cores)
            during = asyncio.run(_load(server.url, queries, False, 1, args.seconds))
            still_building = build.poll() is None
            build.terminate()  # the job is paused; the project is dropped at the next run
            build.wait(120)
            report["during_build"] = {
                "idle_p50_ms": idle["p50_ms"],
                "build_p50_ms": during["p50_ms"],
                "ratio": during["p50_ms"] / idle["p50_ms"],
                "build_running_throughout": still_building,
            }
        report["peak_rss_mb"] = round(server.memory_mb()[1])
    finally:
        server.stop()
        store.close()

    _print(console, report)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"serve-sf{args.scale:g}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    console.print(f"wrote {out}")


def _print(console: Console, report: dict[str, Any]) -> None:
    view = Table(title=f"precube serve, SSB SF {report['scale']:g} (cores: {report['cores']})")
    for column in ("measure", "value", "goal"):
        view.add_column(column)
    view.add_row("HTTP overhead p50 (cache off)", f"{report['overhead_p50_ms']:.2f} ms", "≤ 1 ms")
    for kind, goal in (("a_cache_hits", 1000), ("b_layouts_no_cache", 600)):
        for run in report["load"][kind]:
            c = run["concurrency"]
            text = f"{run['qps']:,.0f} q/s · p50 {run['p50_ms']:.1f} ms · p99 {run['p99_ms']:.1f} ms"
            if run["failures"]:
                text += f" · {run['failures']} failed"
            wanted = f"≥ {goal} q/s" if c == 8 else "p99 ≤ 25 ms" if c == 32 else ""
            view.add_row(f"({kind[0]}) {kind[2:].replace('_', ' ')}, concurrency {c}", text, wanted)
    if "during_build" in report:
        b = report["during_build"]
        view.add_row(
            "(c) p50 during a build / idle",
            f"{b['build_p50_ms']:.1f} / {b['idle_p50_ms']:.1f} ms (x{b['ratio']:.2f})",
            "≤ 2x",
        )
    for key, label in (("preload", "after preload"), ("no_preload", "no preload")):
        f = report["first_query"][key]
        extra = f" (loaded {f['layouts_loaded']} layouts in {f['load_s']:.1f} s)" if key == "preload" else ""
        view.add_row(
            f"(d) first query per layout, {label}",
            f"p50 {f['p50_ms']:.1f} ms · max {f['max_ms']:.1f} ms{extra}",
            "p50 ≤ 50, max ≤ 250 ms" if key == "no_preload" else "",
        )
        view.add_row(
            f"(d) start to first answer, {label}", f"{f['first_answer_s']:.2f} s", "≤ 3 s" if key == "preload" else ""
        )
        view.add_row(
            f"(d) server RSS, {label}: start · after the 13 first queries · peak",
            f"{f['rss_start_mb']} · {f['rss_after_13_mb']} · {f['peak_rss_mb']} MB",
            "after ≤ 700, peak ≤ 1024 MB" if key == "preload" else "",
        )
    if "peak_rss_mb" in report:
        view.add_row("peak RSS over the load runs", f"{report['peak_rss_mb']} MB", "")
    console.print(view)
    per = Table(title="per query: in-process vs HTTP (cache off), ms")
    for column in ("query", "Session.sql", "HTTP", "overhead"):
        per.add_column(column)
    for name, o in report["overhead"].items():
        per.add_row(name, f"{o['in_process_ms']:.2f}", f"{o['http_ms']:.2f}", f"{o['overhead_ms']:.2f}")
    console.print(per)


if __name__ == "__main__":
    main()
