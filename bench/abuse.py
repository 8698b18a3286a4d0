"""Benchmark: a well-behaved client of `precube serve` alone, then beside each abuse of issue 38, in one run.

    .venv/bin/python bench/abuse.py --scale 0.05   # prints a table, writes bench/results/abuse-*.json

Set-up as `bench/ssb.py` (the same `--home`, reused when it holds it): SSB at the scale, the SSB model with
the layouts recommended for the 13 queries, built as one segment. The server runs as a child process
(`precube serve --no-jobs`, `[query] timeout_s` = `--timeout-s`, every `--set SECTION.KEY=VALUE` passed as
`PRECUBE__SECTION__KEY`, e.g. `--set query.max_result_rows=100000 --set query.memory_limit=2GB`). The bench
creates two users with only QUERY permission on the project: the abuser, and the target of the sign-in flood
(so that its lockout spares the other abuses).

The good client (ADMIN) sends the 13 SSB queries round-robin on one keep-alive connection, result cache off
(Kylin's `backdoorToggles` DEBUG_TOGGLE_DISABLE_QUERY_CACHE), for `--seconds` alone (its idle p50), then
beside each abuse in turn, from the abuse's start until it has ended (at least `--seconds`):

- (a) `select * from lineorder a, lineorder b, lineorder c` over REST, repeated for `--seconds`;
- (b) `select repeat('x', 2000000000)`, the same;
- (c) `{"sql": "select 1", "limit": 1e30}` and a typed comparison (`lo_orderdate < 19940101`), alternating;
- (d) a sign-in flood: `--flood-clients` clients sending wrong passwords for `--seconds` (from 127.0.0.2);
- (e) `--half-open` connections that send part of a request and hold (from 127.0.0.3) for `--seconds`, at
  least `timeout_s` + 2 s;
- (f) `--pushdowns` concurrent clients repeating a statement no layout answers (`--slow-sql`, run on the
  source tables) for `--seconds`;
- (g) with `--pg-port`, (a) over the Postgres wire protocol (psycopg, rows streamed and dropped).

Abusers read their answers to the end and drop them, with the result cache off, and give up on an answer
after `timeout_s` + 30 s. Per abuse it prints: whether the server is alive after it (its process and `GET
/health`), the peak RSS of the server's process tree (from /proc every 100 ms), the abuser's outcome (answers
by status or SQLSTATE, an example one-line message each) and times (the slowest request; the abuse's end),
the good client's p50/p99 and failures, and the goals of issue 38 as pass/fail: alive; good p50 ≤ 3x its idle
p50; 0 good failures; each abusive request ended ≤ `timeout_s` + 2 s (half-open connections: closed by the
server by then); each answered with a refusal a client understands (a 4xx or 503, a SQLSTATE not of class 08,
58 or XX; a 200 for the pushdowns, 401/403/429/503 for the flood); peak RSS ≤ `--rss-bound` + 0.5 GB. A
server whose tree grows past `--rss-guard` is killed by the bench (the machine may be shared; its peak is then
unknown); a dead or unresponsive server is recorded and started again for the next abuse, as is one still busy
`--settle-s` after the abuse (what a statement left running would otherwise count against the next abuse).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import multiprocessing
import os
import re
import selectors
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import psycopg
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from serve import ADMIN, NO_CACHE, Server, Wire, _free_port, _pct

from precube.ssb.queries import SSB_QUERIES
from ssb import PROJECT, add_recommended_arguments, prepare_recommended

API = "/kylin/api"
ABUSER = ("bench_abuser", "Abus3r-pass!")
FLOODED = ("bench_flooded", "Fl00ded-pass!")  # the sign-in flood's target: its lockout spares the other abuses
WRONG_PASSWORD = "Wr0ng-pass!"
FLOOD_FROM, HALF_OPEN_FROM = "127.0.0.2", "127.0.0.3"  # loopback, but not the good client's address
CARTESIAN = "select * from lineorder a, lineorder b, lineorder c"
HUGE_STRING = "select repeat('x', 2000000000)"
TYPED = "select count(*) from lineorder where lo_orderdate < 19940101"
SLOW_SQL = (  # a self-join no layout answers: ~30 lines per part at every scale, so ~9M pairs at SF 0.05, 180M at SF 1
    "select count(*) from lineorder a join lineorder b on a.lo_partkey = b.lo_partkey and a.lo_suppkey <> b.lo_suppkey"
)
GIVE_UP_EXTRA_S = 30.0  # an abuser waits timeout_s + this for an answer, then closes its connection
KEPT_BYTES = 4096  # of an answer: enough for its status line and one-line error
MAX_REQUESTS = 100_000  # per abusing client: every loop ends by count as well as by time
GB = 1 << 30
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
GUARD_KILLED = "killed by the bench: RSS past --rss-guard"


@dataclass
class Exchange:
    """One abusive request: how it ended (`label`: an HTTP status, a SQLSTATE or why there was no answer),
    its seconds, an example one-line message, and whether it is a refusal a client understands."""

    label: str
    seconds: float
    note: str
    proper: bool


# -- the server's memory --------------------------------------------------------------------------------


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (each thread's /proc children list: a child belongs to the thread that forked
    it)."""
    found: list[int] = []
    todo = [pid]
    while todo and len(found) < 10_000:
        current = todo.pop()
        found.append(current)
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in children.read_text().split()]
    return found


def _rss(pid: int) -> int:
    """The resident bytes of `pid` (0 once it has gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else 0


def tree_rss(pid: int) -> int:
    return sum(_rss(p) for p in _tree(pid))


class PeakRss(threading.Thread):
    """Samples the resident bytes of a process tree every 100 ms until stopped; past `guard` bytes it kills the
    tree (SIGKILL), so that an abuse cannot take a shared machine's memory."""

    def __init__(self, pid: int, guard: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.guard = pid, guard
        self.peak = tree_rss(pid)
        self.guard_hit = False
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.1):
            pids = _tree(self.pid)
            rss = sum(_rss(p) for p in pids)
            self.peak = max(self.peak, rss)
            if rss > self.guard and not self.guard_hit:
                self.guard_hit = True
                for p in pids:
                    with contextlib.suppress(OSError):
                        os.kill(p, signal.SIGKILL)

    def stop(self) -> int:
        self.halt.set()
        self.join(5)
        return self.peak


# -- the well-behaved client ----------------------------------------------------------------------------


def _good_client(url: str, timeout_s: float, limit_s: float, halt: Any, ready: Any, out: Any) -> None:
    """The good client's loop (in a process of its own: the abusers' threads do not hold its GIL): ADMIN
    sending the 13 SSB queries round-robin, cache off, on one keep-alive connection until `halt` (or `limit_s`,
    or MAX_REQUESTS); sends its p50/p99 and failures (an answer other than 200, or none: the connection is
    then opened again) to `out`."""
    latencies: list[float] = []
    failures = 0
    errors: Counter[str] = Counter()
    wire = Wire(url, timeout_s=timeout_s)
    requests = [wire.request(sql, cache=False) for sql in SSB_QUERIES.values()]
    end = time.perf_counter() + limit_s
    ready.set()
    for i in range(MAX_REQUESTS):
        if halt.is_set() or time.perf_counter() >= end:
            break
        started = time.perf_counter()
        try:
            status, body = wire.post(requests[i % len(requests)])
        except (OSError, RuntimeError) as err:
            failures += 1
            errors[_one_line(str(err) or type(err).__name__)] += 1
            wire.close()
            halt.wait(0.05)
            continue
        latencies.append((time.perf_counter() - started) * 1000)
        if status != 200:
            failures += 1
            errors[f"{status} {_message(body)}"] += 1
    wire.close()
    out.send(
        {
            "queries": len(latencies),
            "failures": failures,
            "p50_ms": _pct(latencies, 0.5),
            "p99_ms": _pct(latencies, 0.99),
            "errors": dict(errors.most_common(5)),
        }
    )


class GoodClient:
    """`_good_client` in a child process, from its start (once it is ready) until `stop`."""

    def __init__(self, url: str, timeout_s: float, limit_s: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.timeout_s = timeout_s
        self.halt, ready = context.Event(), context.Event()
        self.results, out = context.Pipe(duplex=False)
        self.process = context.Process(
            target=_good_client, args=(url, timeout_s, limit_s, self.halt, ready, out), daemon=True
        )
        self.process.start()
        if not ready.wait(120):
            self.process.kill()
            raise RuntimeError("the good client did not start")

    def stop(self) -> dict[str, Any]:
        """Its figures (after its request in flight, if any, ends)."""
        self.halt.set()
        found: dict[str, Any] | None = self.results.recv() if self.results.poll(self.timeout_s + 10) else None
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(10)
        if found is None:
            return {"queries": 0, "failures": 1, "p50_ms": float("nan"), "p99_ms": float("nan"), "errors": {"stuck": 1}}
        return found


# -- abusive requests -----------------------------------------------------------------------------------


def _one_line(text: str, width: int = 120) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def _message(body: bytes) -> str:
    """An answer's one-line message: Kylin's failure envelope's `error_code: msg`, else its first line."""
    try:
        data = json.loads(body)
    except ValueError:
        return _one_line(body.decode(errors="replace"))
    if isinstance(data, dict) and data.get("code") == "000":
        answer = data.get("data") or {}
        return "pushdown" if isinstance(answer, dict) and answer.get("pushDown") else "answered"
    if isinstance(data, dict):
        return _one_line(f"{data.get('error_code', '')}: {data.get('msg') or data.get('detail', '')}")
    return _one_line(str(data))


def _request(path: str, auth: tuple[str, str], payload: dict[str, Any], host: str) -> bytes:
    """An HTTP/1.1 POST that closes its connection after the answer (read to its end, whatever its framing)."""
    body = json.dumps(payload).encode()
    token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    head = (
        f"POST {API}{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Basic {token}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _query(sql: str, **extra: Any) -> dict[str, Any]:
    return {"sql": sql, "project": PROJECT, "backdoorToggles": NO_CACHE, **extra}


def exchange(
    address: tuple[str, int], request: bytes, give_up_s: float, source: str | None, proper: Callable[[int], bool]
) -> Exchange:
    """Send `request` on a new connection and read its answer to the end (keeping its first KEPT_BYTES),
    closing the connection after `give_up_s`."""
    started = time.perf_counter()
    deadline = started + give_up_s
    kept, total = b"", 0
    try:
        sock = socket.create_connection(address, timeout=5, source_address=(source, 0) if source else None)
    except OSError as err:
        return Exchange("no connection", time.perf_counter() - started, _one_line(str(err)), False)
    with sock:
        try:
            sock.sendall(request)
            while (left := deadline - time.perf_counter()) > 0:
                sock.settimeout(min(left, 1.0))
                try:
                    chunk = sock.recv(1 << 16)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                total += len(chunk)
                kept += chunk[: KEPT_BYTES - len(kept)]
            else:
                seconds = time.perf_counter() - started
                got = f"{total:,} bytes" if total else "nothing"
                return Exchange("gave up", seconds, f"{got} after {seconds:.0f} s", False)
        except OSError as err:
            return Exchange("connection lost", time.perf_counter() - started, _one_line(str(err)), False)
    seconds = time.perf_counter() - started
    if not kept.startswith(b"HTTP/1."):
        return Exchange("closed", seconds, f"closed without an answer ({total} bytes)", False)
    status = int(kept[9:12])
    body = kept.split(b"\r\n\r\n", 1)[-1]
    note = _message(body) if total <= KEPT_BYTES else f"{_message(body)[:60]} ({total:,} bytes)"
    return Exchange(str(status), seconds, note, proper(status))


def _refusal(status: int) -> bool:
    return 400 <= status < 500 or status == 503


def _answer_or_refusal(status: int) -> bool:
    return status == 200 or _refusal(status)


def _signin_refusal(status: int) -> bool:
    return status in (401, 403, 429, 503)


def repeat(clients: int, seconds: float, pause_s: float, action: Callable[[int, int], Exchange]) -> list[Exchange]:
    """`clients` threads each running `action(client, i)` one after another for `seconds` (at least once,
    at most MAX_REQUESTS times), `pause_s` apart."""
    end = time.perf_counter() + seconds

    def client(k: int) -> list[Exchange]:
        done: list[Exchange] = []
        for i in range(MAX_REQUESTS):
            done.append(action(k, i))
            if time.perf_counter() >= end:
                break
            time.sleep(pause_s)
        return done

    with ThreadPoolExecutor(clients) as pool:
        return [e for batch in pool.map(client, range(clients)) for e in batch]


def half_open(address: tuple[str, int], count: int, hold_s: float, source: str) -> dict[str, Any]:
    """`count` connections that send part of a request (half of them part of the request line, half the line
    and headers without their end) and hold for `hold_s`: how many the server closed (or answered), when."""
    partial = (b"GET /kylin/api/hea", b"POST /kylin/api/query HTTP/1.1\r\nHost: bench\r\nContent-Type: app")
    selector = selectors.DefaultSelector()
    started = time.perf_counter()
    refused: Counter[str] = Counter()
    opened = 0
    for i in range(count):
        try:
            sock = socket.create_connection(address, timeout=2, source_address=(source, 0))
            sock.sendall(partial[i % 2])
        except OSError as err:
            refused[_one_line(str(err))] += 1
            continue
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, sock)
        opened += 1
    closed_after: list[float] = []
    answers: Counter[str] = Counter()
    end = started + hold_s
    while selector.get_map() and (left := end - time.perf_counter()) > 0:
        for key, _ in selector.select(min(left, 0.1)):
            conn: socket.socket = key.data
            try:
                data = conn.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1."):
                answers[data[9:12].decode(errors="replace")] += 1
            if not data:  # closed by the server (after its answer, if any)
                closed_after.append(time.perf_counter() - started)
                selector.unregister(conn)
                conn.close()
    held = len(selector.get_map())
    for key in list(selector.get_map().values()):
        selector.unregister(key.fileobj)
        key.data.close()
    selector.close()
    return {
        "opened": opened,
        "refused": dict(refused),
        "closed_by_server": len(closed_after),
        "answers": dict(answers),
        "held_at_end": held,
        "last_closed_s": max(closed_after) if closed_after else None,
        "held_s": round(time.perf_counter() - started, 2),
    }


def wire_statement(port: int, sql: str, give_up_s: float) -> Exchange:
    """`sql` over the Postgres wire protocol as the abuser, its rows streamed and dropped; cancelled after
    `give_up_s`."""
    dsn = f"host=127.0.0.1 port={port} dbname={PROJECT} user={ABUSER[0]} password={ABUSER[1]} connect_timeout=5"
    started = time.perf_counter()
    try:
        conn = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as err:
        return Exchange("no connection", time.perf_counter() - started, _one_line(str(err)), False)
    rows = 0
    timer = threading.Timer(give_up_s, conn.cancel_safe)
    timer.start()
    try:
        with conn, conn.cursor() as cur:
            for _ in cur.stream(sql):
                rows += 1
    except psycopg.Error as err:
        seconds = time.perf_counter() - started
        if seconds >= give_up_s:
            return Exchange("gave up", seconds, f"{rows:,} rows after {seconds:.0f} s", False)
        if err.sqlstate is None:
            return Exchange("connection lost", seconds, _one_line(str(err)), False)
        proper = not err.sqlstate.startswith(("08", "58", "XX"))
        return Exchange(f"SQLSTATE {err.sqlstate}", seconds, _one_line(str(err)), proper)
    finally:
        timer.cancel()
    return Exchange("rows", time.perf_counter() - started, f"{rows:,} rows", False)


# -- the run --------------------------------------------------------------------------------------------


def summarize(exchanges: list[Exchange]) -> dict[str, Any]:
    """The abuser's requests: how many, by label (status, SQLSTATE, …) with one example message each, the
    slowest's seconds, and whether every one was a refusal a client understands."""
    labels = Counter(e.label for e in exchanges)
    examples: dict[str, str] = {}
    for e in exchanges:
        examples.setdefault(e.label, e.note)
    return {
        "requests": len(exchanges),
        "by_label": dict(labels.most_common()),
        "examples": examples,
        "slowest_s": round(max((e.seconds for e in exchanges), default=0.0), 2),
        "proper": all(e.proper for e in exchanges),
    }


@dataclass
class Bench:
    """The server under test (started again after an abuse that killed it) and what the run measures by."""

    home: Path
    timeout_s: float
    seconds: float
    env: dict[str, str]
    pg_port: int | None
    rss_guard: int
    settle_s: float
    server: Server | None = None
    starts: int = 0

    @property
    def give_up_s(self) -> float:
        return self.timeout_s + GIVE_UP_EXTRA_S

    def ensure(self) -> Server | None:
        """The running server: started (again) when there is none; None when it cannot start."""
        if self.server is not None:
            return self.server
        args = ("--pg-port", str(self.pg_port)) if self.pg_port is not None else ()
        try:
            server = Server(self.home, args=args, env=self.env)
        except (RuntimeError, httpx.HTTPError, OSError):
            return None
        try:
            server.wait_loaded()
            self._users(server)
        except (RuntimeError, httpx.HTTPError, OSError):
            server.stop()
            return None
        self.starts += 1
        warm = Wire(server.url, timeout_s=self.give_up_s)
        for sql in SSB_QUERIES.values():  # untimed: the first answer of each layout
            with contextlib.suppress(OSError, RuntimeError):
                warm.post(warm.request(sql, cache=False))
        warm.close()
        self.server = server
        return server

    @staticmethod
    def _users(server: Server) -> None:
        """The abuser and the flood's target, with QUERY permission on the project (kept in the home's
        metadata: created once)."""
        with httpx.Client(base_url=server.url + API, auth=ADMIN, timeout=30) as admin:
            for name, password in (ABUSER, FLOODED):
                created = admin.post("/user", json={"username": name, "password": password})
                if created.status_code != 200 and "already exists" not in created.text:
                    raise RuntimeError(f"cannot create user {name}: {created.text}")
                grant = {"project": PROJECT, "type": "user", "permission": "QUERY", "names": [name]}
                admin.post("/access/project", json=grant).raise_for_status()

    def check(self, server: Server, guard_hit: bool) -> str:
        """`alive`, or why not; a server that is not is stopped (the next abuse starts another)."""
        if guard_hit:
            state = GUARD_KILLED
        elif (code := server.process.poll()) is not None:
            state = f"dead (exit code {code})"
        else:
            try:
                answered = httpx.get(f"{server.url}/health", timeout=5).status_code
                state = "alive" if answered == 200 else f"unhealthy (/health {answered})"
            except httpx.HTTPError as err:
                state = f"unresponsive ({type(err).__name__})"
        if state != "alive":
            self.restart()
        return state

    def restart(self) -> None:
        """Stop the server: the next `ensure` starts another."""
        if self.server is not None:
            self.server.stop()
            self.server = None


def _address(server: Server) -> tuple[str, int]:
    return "127.0.0.1", server.port


def _statement(bench: Bench, server: Server, sql: str, **extra: Any) -> Exchange:
    request = _request("/query", ABUSER, _query(sql, **extra), f"127.0.0.1:{server.port}")
    return exchange(_address(server), request, bench.give_up_s, None, _refusal)


def abuse_cartesian(bench: Bench, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    return summarize(repeat(1, bench.seconds, 0.1, lambda k, i: _statement(bench, server, CARTESIAN)))


def abuse_huge_string(bench: Bench, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    return summarize(repeat(1, bench.seconds, 0.1, lambda k, i: _statement(bench, server, HUGE_STRING)))


def abuse_bad_input(bench: Bench, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    def action(k: int, i: int) -> Exchange:
        if i % 2 == 0:
            return replace(done := _statement(bench, server, "select 1", limit=1e30), label=f"limit {done.label}")
        return replace(done := _statement(bench, server, TYPED), label=f"date<int {done.label}")

    return summarize(repeat(1, bench.seconds, 0.1, action))


def abuse_signin_flood(bench: Bench, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    request = _request("/query", (FLOODED[0], WRONG_PASSWORD), _query("select 1"), f"127.0.0.1:{server.port}")

    def action(k: int, i: int) -> Exchange:
        return exchange(_address(server), request, bench.give_up_s, FLOOD_FROM, _signin_refusal)

    return summarize(repeat(args.flood_clients, bench.seconds, 0.0, action))


def abuse_half_open(bench: Bench, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    found = half_open(_address(server), args.half_open, max(bench.seconds, bench.timeout_s + 2), HALF_OPEN_FROM)
    return {
        **found,
        "requests": found["opened"],
        "by_label": {"closed by the server": found["closed_by_server"], "held at the end": found["held_at_end"]}
        | {f"refused: {k}": v for k, v in found["refused"].items()},
        "examples": {f"answered {k}": f"{v} connections" for k, v in found["answers"].items()},
        "slowest_s": found["held_s"] if found["held_at_end"] else (found["last_closed_s"] or 0.0),
        "proper": None,
    }


def abuse_pushdowns(bench: Bench, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    request = _request("/query", ABUSER, _query(args.slow_sql), f"127.0.0.1:{server.port}")

    def action(k: int, i: int) -> Exchange:
        return exchange(_address(server), request, bench.give_up_s, None, _answer_or_refusal)

    return summarize(repeat(args.pushdowns, bench.seconds, 0.0, action))


def abuse_wire(bench: Bench, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    assert bench.pg_port is not None
    port = bench.pg_port
    return summarize(repeat(1, bench.seconds, 0.1, lambda k, i: wire_statement(port, CARTESIAN, bench.give_up_s)))


Abuse = Callable[[Bench, Server, argparse.Namespace], dict[str, Any]]
ABUSES: dict[str, tuple[str, Abuse]] = {
    "a": ("(a) cross join of lineorder x3, REST", abuse_cartesian),
    "b": ("(b) repeat('x', 2e9)", abuse_huge_string),
    "c": ("(c) limit 1e30; date < int", abuse_bad_input),
    "d": ("(d) sign-in flood", abuse_signin_flood),
    "e": ("(e) half-open connections", abuse_half_open),
    "f": ("(f) concurrent slow pushdowns", abuse_pushdowns),
    "g": ("(g) (a) over the Postgres wire", abuse_wire),
}


def measure(bench: Bench, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """One abuse beside the good client: the server's state after it, its peak RSS, the abuser's outcome and
    the good client's latencies."""
    title, run = ABUSES[key]
    server = bench.ensure()
    if server is None:
        return {"abuse": key, "title": title, "server": "could not be started", "skipped": True}
    before = tree_rss(server.process.pid)
    sampler = PeakRss(server.process.pid, bench.rss_guard)
    sampler.start()
    good = GoodClient(server.url, bench.give_up_s, bench.seconds + bench.give_up_s + 60)
    started = time.perf_counter()
    try:
        outcome = run(bench, server, args)
    except Exception as err:  # noqa: BLE001 -- a failing abuser is reported; the other abuses still run
        outcome = {"requests": 0, "by_label": {"bench error": 1}, "examples": {"bench error": repr(err)}}
        outcome |= {"slowest_s": 0.0, "proper": False}
    ended_s = time.perf_counter() - started
    time.sleep(max(0.0, bench.seconds - ended_s))  # the good client runs for at least --seconds
    good_stats = good.stop()
    settled_s = settle(server.process.pid, bench.settle_s, before + GB // 2)  # the RSS guard still watches
    peak = sampler.stop()
    state = bench.check(server, sampler.guard_hit)
    if state == "alive" and settled_s is None:  # still working for the abuse: the next abuse gets a fresh server
        bench.restart()
    return {
        "abuse": key,
        "title": title,
        "server": state,
        "settled_s": settled_s,
        "rss_before_bytes": before,
        "rss_peak_bytes": peak,
        "abuser": outcome,
        "abuse_end_s": round(ended_s, 2),
        "good": good_stats,
    }


def _cpu_s(pid: int) -> float:
    """The CPU seconds (user and system) `pid` has used (0 once it has gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime: the stat's fields 14 and 15


def settle(pid: int, limit_s: float, rss_ceiling: int) -> float | None:
    """Seconds until the process tree is quiet (under 0.2 CPU seconds a second, and at most `rss_ceiling` bytes:
    on a loaded machine a statement still running may get little CPU, but holds its memory), None when it is not
    within `limit_s`."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit_s:
        before = sum(_cpu_s(p) for p in _tree(pid))
        time.sleep(1.0)
        if sum(_cpu_s(p) for p in _tree(pid)) - before < 0.2 and tree_rss(pid) <= rss_ceiling:
            return round(time.perf_counter() - started, 1)
    return None


def goals(
    row: dict[str, Any], idle_p50: float, timeout_s: float, rss_bound: int, rss_guard: int
) -> dict[str, bool | None]:
    """Issue 38's goals for one abuse (None: not applicable)."""
    good, abuser = row["good"], row["abuser"]
    if row["abuse"] == "e":
        ends = abuser["held_at_end"] == 0 and (abuser["last_closed_s"] or 0.0) <= timeout_s + 2
    else:
        ends = abuser["slowest_s"] <= timeout_s + 2
    return {
        "alive": row["server"] == "alive",
        "p50": good["p50_ms"] <= 3 * idle_p50,
        "failures": good["failures"] == 0,
        "ends": ends,
        "refusals": abuser["proper"],
        # killed by the guard: its peak is unknown, a failure only if the guard lies past the goal
        "rss": (None if rss_guard < rss_bound + GB // 2 else False)
        if row["server"] == GUARD_KILLED
        else row["rss_peak_bytes"] <= rss_bound + GB // 2,
    }


def parse_size(text: str) -> int:
    """Bytes of a size as DuckDB writes them: "4GB" (10^9), "4GiB" (2^30), "512MB", a plain number of bytes."""
    found = re.fullmatch(r"\s*([\d.]+)\s*(?:([KMGT])(i?)B?)?\s*", text, re.IGNORECASE)
    if found is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4GB, 512MiB)")
    number, unit, binary = found.groups()
    power = "KMGT".index(unit.upper()) + 1 if unit else 0
    return int(float(number) * (1024 if binary else 1000) ** power)


def _ram() -> int:
    meminfo = Path("/proc/meminfo").read_text()
    found = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.MULTILINE)
    assert found is not None
    return int(found.group(1)) * 1024


def _settings_env(pairs: list[str], timeout_s: float) -> dict[str, str]:
    """`SECTION.KEY=VALUE` pairs as precube's environment variables, after `[query] timeout_s`."""
    env = {"PRECUBE__QUERY__TIMEOUT_S": f"{timeout_s:g}"}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        section, dot, key = name.partition(".")
        if not (sep and dot and section and key):
            raise SystemExit(f"--set wants SECTION.KEY=VALUE, not {pair!r}")
        env[f"PRECUBE__{section.upper()}__{key.upper()}"] = value
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_recommended_arguments(parser, scale=1.0)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the idle run and of each abuse")
    parser.add_argument("--timeout-s", type=float, default=10.0, help="the server's [query] timeout_s")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a server setting (PRECUBE__SECTION__KEY), e.g. query.max_result_rows=100000; repeatable",
    )
    parser.add_argument("--only", default="abcdefg", help="the abuses to run, e.g. abc (default: all)")
    parser.add_argument("--pg-port", type=int, default=None, help="also serve the wire here and run (g); 0: any")
    parser.add_argument("--flood-clients", type=int, default=40, help="(d) clients sending wrong passwords")
    parser.add_argument("--half-open", type=int, default=400, help="(e) half-open connections")
    parser.add_argument("--pushdowns", type=int, default=32, help="(f) concurrent slow pushdowns")
    parser.add_argument("--slow-sql", default=SLOW_SQL, help="(f) a statement no layout answers")
    parser.add_argument(
        "--rss-bound",
        type=parse_size,
        default=None,
        help="the memory bound (default: --set query.memory_limit, else 80%% of RAM)",
    )
    parser.add_argument(
        "--rss-guard",
        type=parse_size,
        default=None,
        help="kill a server whose tree grows past this (default: half the RAM)",
    )
    parser.add_argument(
        "--settle-s", type=float, default=30.0, help="after an abuse, wait this long for the server to go quiet"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    env = _settings_env(args.set, args.timeout_s)
    limit = env.get("PRECUBE__QUERY__MEMORY_LIMIT")
    rss_bound = args.rss_bound or (parse_size(limit) if limit else int(0.8 * _ram()))
    pg_port = (args.pg_port or _free_port()) if args.pg_port is not None else None
    home, _, store, _, build_s = prepare_recommended(args)
    store.close()
    bench = Bench(home, args.timeout_s, args.seconds, env, pg_port, args.rss_guard or _ram() // 2, args.settle_s)
    report: dict[str, Any] = {
        "scale": args.scale,
        "cores": os.cpu_count(),
        "build_s": round(build_s, 1),
        "timeout_s": args.timeout_s,
        "seconds": args.seconds,
        "settings": env,
        "rss_bound_bytes": rss_bound,
        "rss_guard_bytes": bench.rss_guard,
        "load": os.getloadavg()[0],
    }
    server = bench.ensure()
    if server is None:
        raise SystemExit("the server could not be started")
    try:
        sampler = PeakRss(server.process.pid, bench.rss_guard)
        sampler.start()
        idle = GoodClient(server.url, bench.give_up_s, args.seconds)
        time.sleep(args.seconds)
        report["idle"] = {"good": idle.stop(), "rss_peak_bytes": sampler.stop()}
        keys = [k for k in ABUSES if k in args.only and (k != "g" or pg_port is not None)]
        rows = []
        for key in keys:
            row = measure(bench, key, args)
            if not row.get("skipped"):
                row["goals"] = goals(row, report["idle"]["good"]["p50_ms"], args.timeout_s, rss_bound, bench.rss_guard)
            rows.append(row)
            time.sleep(1.0)  # what the abuse left running ends before the next begins (or shows in it)
        report["abuses"] = rows
        report["server_starts"] = bench.starts
    finally:
        if bench.server is not None:
            bench.server.stop()
    console = Console()
    if not console.is_terminal:  # a file or a pipe: the table's own width, not 80 columns
        console = Console(width=200)
    _print(console, report)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"abuse-sf{args.scale:g}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    console.print(f"wrote {out}")


def _gb(n: int) -> str:
    return f"{n / GB:.2f} GB"


def _latency(good: dict[str, Any], idle_p50: float) -> str:
    """p50 · p99 and the p50's ratio to idle; a dash without answers."""
    if not good["queries"]:
        return "-"
    return f"{good['p50_ms']:.1f} · {good['p99_ms']:.1f} ms (x{good['p50_ms'] / idle_p50:.1f})"


def _print(console: Console, report: dict[str, Any]) -> None:
    idle = report["idle"]
    title = (
        f"precube serve under abuse, SSB SF {report['scale']:g} (cores: {report['cores']}, timeout_s "
        f"{report['timeout_s']:g}, RSS bound {_gb(report['rss_bound_bytes'])}, load {report['load']:.1f})"
    )
    view = Table(title=title, show_lines=True)
    for column in (
        "abuse",
        "server",
        "peak RSS (before)",
        "abuser's outcome",
        "slowest / end",
        "good p50 · p99",
        "good fails",
        "goals",
    ):
        view.add_column(column)
    good = idle["good"]
    view.add_row(
        "idle",
        "alive",
        _gb(idle["rss_peak_bytes"]),
        "",
        "",
        _latency(good, good["p50_ms"]),
        str(good["failures"]),
        "",
    )
    for row in report["abuses"]:
        if row.get("skipped"):
            view.add_row(row["title"], row["server"], "", "", "", "", "", "skipped")
            continue
        abuser, good = row["abuser"], row["good"]
        outcome = "\n".join(
            f"{n} x {label}" + (f": {abuser['examples'][label]}" if label in abuser["examples"] else "")
            for label, n in abuser["by_label"].items()
        )
        outcome += "".join(f"\n{k}: {v}" for k, v in abuser["examples"].items() if k not in abuser["by_label"])
        marks = "\n".join(f"{'-' if ok is None else '✓' if ok else '✗'} {name}" for name, ok in row["goals"].items())
        view.add_row(
            row["title"],
            row["server"]
            + ("\nbusy after it: restarted" if row["settled_s"] is None else f"\nquiet {row['settled_s']:g} s after"),
            f"{_gb(row['rss_peak_bytes'])} ({_gb(row['rss_before_bytes'])})",
            outcome,
            f"{abuser['slowest_s']:.1f} s / {row['abuse_end_s']:.1f} s",
            _latency(good, idle["good"]["p50_ms"]),
            str(good["failures"]) + "".join(f"\n{n} x {e}" for e, n in good["errors"].items()),
            marks,
        )
    console.print(view)


if __name__ == "__main__":
    main()
