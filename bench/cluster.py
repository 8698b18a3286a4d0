"""Benchmark: precube on several processes over loopback (`deploy/cluster.py`'s deployment, without the Spark
standalone cluster): the 13 SSB queries through HAProxy with one and with two `precube serve` processes, a server
killed under load, the metadata sync delay between two servers, and a killed server's build taken over.

    .venv/bin/python bench/cluster.py --scale 0.1     # prints a table, writes bench/results/cluster-*.json

Set-up: `deploy.cluster.up` in `--dir` (default /tmp/precube-bench-cluster-sfN: PostgreSQL, Redis, two servers on
one configuration with local Spark each, HAProxy), then `bench/ssb.py`'s set-up on that metadata and warehouse (SSB
at the scale, the SSB model with the layouts recommended for the 13 queries, one segment). A later run reuses the
directory's database and warehouse; the deployment is stopped at the end (`deploy/cluster.py down --dir DIR
--purge` deletes it). Measured, in one run:

- (a) warm layout answers (result cache off: Kylin's `backdoorToggles`) through HAProxy at concurrency 8 and 32
  with one server (the other disabled on HAProxy's admin socket) and with two, alternately, `--rounds` times each
  (`bench/serve.py`'s `Wire` client and `_load` loops): q/s, p50, p99, and the ratio two / one;
- (b) the same loops with both servers at concurrency 8 while one server is killed (kill -9) mid-run: the failed
  requests (a query in flight on the dying server is sent to the other by HAProxy: the goal is none beyond those);
- (c) the metadata sync delay: a model taken OFFLINE / ONLINE and a user's QUERY grant / revoke through server A,
  until server B answers accordingly (B's cached answer must not be served meanwhile), `--sync-repeat` times each;
- (d) a build submitted through HAProxy, its runner killed (kill -9) once the job runs: the seconds until the other
  server runs the job and until it finishes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # deploy/
from serve import BUILD_PROJECT, _load, _second_project

from deploy.cluster import down, up
from deploy.services import Process, haproxy_command, haproxy_stats, start_server, wait_balanced
from precube.auth.passwords import random_password
from precube.metadata import Job, JobLease, JobState, open_store
from precube.ssb.queries import SSB_QUERIES
from ssb import PROJECT, _prepare

READER = "bench-reader"
SYNC_SQL = SSB_QUERIES["Q1.1"]


class Deployment:
    """What `deploy.cluster.up` started, as the benchmark uses it."""

    def __init__(self, directory: Path, state: dict[str, Any]) -> None:
        self.dir, self.url = directory, str(state["url"])
        self.admin = ("ADMIN", str(state["secrets"]["admin"]))
        self.processes = {p["name"]: Process(**p) for p in state["processes"]}
        self.restarted: list[Process] = []  # servers this benchmark started again (`down` knows the first ones)

    def server(self, i: int) -> Process:
        return self.processes[f"precube-{i}"]

    def server_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.server(i).port}"

    def client(self, url: str, auth: tuple[str, str] | None = None) -> httpx.Client:
        return httpx.Client(base_url=url, auth=auth or self.admin, timeout=300)

    def restart(self, i: int) -> None:
        """Start server `i` again on its port (HAProxy knows it by the port) and wait until HAProxy routes to it."""
        old = self.server(i)
        self.processes[old.name] = start_server(
            self.dir / "precube.toml", self.dir / f"server-{i}", old.port, name=old.name
        )
        self.restarted.append(self.processes[old.name])
        wait_balanced(self.dir, {"s1", "s2"}, timeout=120)


def _data(response: httpx.Response) -> Any:
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.method} {response.request.url}: {response.text[:300]}")
    return response.json()["data"]


def _until(check: Callable[[], bool], what: str, timeout: float = 120) -> float:
    """Poll `check` (every 10 ms) until it holds; the seconds it took."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.01)
    return time.monotonic() - started


def _served(directory: Path) -> dict[str, int]:
    """Requests HAProxy sent to each query server so far."""
    return {name: int(row["stot"]) for name, row in haproxy_stats(directory).items() if name != "BACKEND"}


def _cpu_seconds(pid: int | None = None) -> float:
    """CPU seconds (user + system) a process has used (`pid`), or the whole machine has been busy (None)."""
    if pid is None:
        machine = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        ticks = sum(machine) - machine[3] - machine[4]  # all but idle and iowait
    else:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def _cpu_use(d: Deployment) -> dict[str, float]:
    """CPU seconds so far of the servers, HAProxy, this load generator and the whole machine (other agents too)."""
    servers = [d.server(i).pid for i in (1, 2) if d.server(i).alive]
    return {
        "servers": sum(_cpu_seconds(pid) for pid in servers),
        "haproxy": _cpu_seconds(d.processes["haproxy"].pid),
        "client": _cpu_seconds(os.getpid()),
        "machine": _cpu_seconds(),
    }


def _loaded(d: Deployment, queries: list[str], concurrency: int, seconds: float) -> dict[str, Any]:
    """One `_load` run through HAProxy, with what each query server answered and the cores each part used."""
    served, cpu, started = _served(d.dir), _cpu_use(d), time.perf_counter()
    run: dict[str, Any] = asyncio.run(_load(d.url, queries, False, concurrency, seconds, d.admin))
    elapsed = time.perf_counter() - started
    run["per_server"] = {s: n - served.get(s, 0) for s, n in _served(d.dir).items()}
    run["cores_used"] = {k: round((v - cpu[k]) / elapsed, 2) for k, v in _cpu_use(d).items()}
    run["qps_per_server_core"] = run["qps"] / max(run["cores_used"]["servers"], 0.01)
    return run


def _warm(d: Deployment, queries: list[str]) -> None:
    """Every query on every server, a few times: each has loaded its layouts and planned each shape."""
    for i in (1, 2):
        asyncio.run(_load(d.server_url(i), queries, False, 2, 3.0, d.admin))


def load_runs(d: Deployment, queries: list[str], seconds: float, rounds: int) -> dict[str, Any]:
    """(a): one server, then two, alternately, at concurrency 8 and 32."""
    runs: dict[str, Any] = {}
    for concurrency in (8, 32):
        found: dict[str, list[dict[str, Any]]] = {"one": [], "two": []}
        for _ in range(rounds):
            for servers in ("one", "two"):
                haproxy_command(d.dir, f"{'disable' if servers == 'one' else 'enable'} server queries/s2")
                wait_balanced(d.dir, {"s1"} if servers == "one" else {"s1", "s2"})
                found[servers].append(_loaded(d, queries, concurrency, seconds))
        one, two = (statistics.median(r["qps"] for r in found[k]) for k in ("one", "two"))
        runs[str(concurrency)] = {**found, "one_qps": one, "two_qps": two, "ratio": two / one}
    return runs


def kill_under_load(d: Deployment, queries: list[str], seconds: float) -> dict[str, Any]:
    """(b): concurrency 8 on both servers; server 2 killed a third of the way in."""

    async def run() -> dict[str, Any]:
        loading = asyncio.create_task(_load(d.url, queries, False, 8, seconds, d.admin))
        await asyncio.sleep(seconds / 3)
        before = _served(d.dir)
        d.server(2).kill()
        killed: dict[str, Any] = await loading
        killed["served_before_kill"] = before
        return killed

    wait_balanced(d.dir, {"s1", "s2"})
    before = _retries(d.dir)
    found = asyncio.run(run())
    found["haproxy_resent"] = {k: v - before[k] for k, v in _retries(d.dir).items()}
    d.restart(2)
    return found


def _retries(directory: Path) -> dict[str, int]:
    """HAProxy's retries and redispatches of the query backend (requests it sent again)."""
    backend = haproxy_stats(directory)["BACKEND"]
    return {"retries": int(backend["wretr"] or 0), "redispatches": int(backend["wredis"] or 0)}


def sync_delays(d: Deployment, repeat: int) -> dict[str, list[float]]:
    """(c): changes through server 1, seen by server 2 (its cached answer dropped)."""
    reader = (READER, random_password())
    query = {"sql": SYNC_SQL, "project": PROJECT}
    found: dict[str, list[float]] = {"model_offline": [], "model_online": [], "grant": [], "revoke": []}
    with (
        d.client(d.server_url(1)) as a,
        d.client(d.server_url(2)) as b,
        d.client(d.server_url(2), reader) as reader_on_b,
    ):
        a.delete(f"/kylin/api/user/{READER}")  # left by an earlier run, or not there
        _data(a.post("/kylin/api/user", json={"username": READER, "password": reader[1]}))

        def pushed_down() -> bool:
            return bool(_data(b.post("/kylin/api/query", json=query))["pushDown"])

        def answered_offline(offline: bool) -> Callable[[], bool]:
            return lambda: pushed_down() == offline

        status = "/kylin/api/models/ssb/status"
        grant = {"project": PROJECT, "type": "user", "permission": "QUERY", "names": [READER]}
        revoke = {"project": PROJECT, "type": "user", "name": READER}
        for turn in range(repeat + 1):  # the first turn untimed: B's first pushdown answer reads the sources
            pushed_down()
            pushed_down()  # B's answer is in the shared cache now
            for state, key in (("OFFLINE", "model_offline"), ("ONLINE", "model_online")):
                _data(a.put(status, json={"project": PROJECT, "status": state}))
                delay = _until(answered_offline(state == "OFFLINE"), f"the model {state} on B")
                found[key] += [delay] if turn else []
            _data(a.post("/kylin/api/access/project", json=grant))
            delay = _until(lambda: reader_on_b.post("/kylin/api/query", json=query).status_code == 200, "the grant")
            found["grant"] += [delay] if turn else []
            _data(a.delete("/kylin/api/access/project", params=revoke))
            delay = _until(lambda: reader_on_b.post("/kylin/api/query", json=query).status_code == 403, "the revoke")
            found["revoke"] += [delay] if turn else []
        a.delete(f"/kylin/api/user/{READER}")
    return found


def take_over(d: Deployment, home: Path, data: Path) -> dict[str, Any]:
    """(d): a build through HAProxy; its runner killed once the job runs."""
    _second_project(home, data)
    store = open_store(os.environ["PRECUBE__METADATA__URL"])
    try:
        with d.client(d.url) as client:
            body = {"project": BUILD_PROJECT, "start": "694224000000", "end": "915148800000"}  # [1992, 1999)
            [job] = _data(client.post("/kylin/api/models/ssb/segments", json=body))["jobs"]
        job_id = str(job["job_id"])

        def job_now() -> Job:
            with store.read(BUILD_PROJECT) as tx:
                found = tx.require(Job, job_id)
            if found.state in (JobState.ERROR, JobState.DISCARDED):
                raise RuntimeError(f"the build ended {found.state}: {found.error}")
            return found

        _until(lambda: job_now().state is JobState.RUNNING, "the build running")
        runner = str(job_now().runner)  # host:pid:token of the run
        holder = next(i for i in (1, 2) if f":{d.server(i).pid}:" in runner)
        other = d.server(3 - holder)
        d.server(holder).kill()
        killed = time.monotonic()
        taken = _until(lambda: f":{other.pid}:" in str(job_now().runner), "the other server running the job")
        _until(lambda: job_now().state is JobState.SUCCEED, "the job finishing", timeout=900)
        finished = time.monotonic() - killed
        with store.read(BUILD_PROJECT) as tx:
            epoch = tx.require(JobLease, "scheduler").epoch
        d.restart(holder)
        return {
            "killed": f"precube-{holder}",
            "takeover_s": taken,
            "finished_s": finished,
            "lease_epoch": epoch,
        }
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument(
        "--dir", type=Path, default=None, help="deployment directory (default /tmp/precube-bench-cluster-sfN)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each load run")
    parser.add_argument("--rounds", type=int, default=2, help="load runs per server count and concurrency")
    parser.add_argument("--sync-repeat", type=int, default=5, help="times each metadata change is measured")
    parser.add_argument("--lease-ttl", type=float, default=10.0, help="[jobs] lease_ttl_s of the servers")
    parser.add_argument("--no-takeover", action="store_true", help="skip (d), the build taken over")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    directory = (args.dir or Path(f"/tmp/precube-bench-cluster-sf{args.scale:g}")).resolve()
    queries = list(SSB_QUERIES.values())
    report: dict[str, Any] = {"scale": args.scale, "cores": os.cpu_count(), "lease_ttl_s": args.lease_ttl}
    d = Deployment(directory, up(directory, 2, None, False, args.lease_ttl))
    try:
        # bench/ssb.py's set-up, on the deployment's metadata and warehouse
        config = _settings_env(directory)
        os.environ.update(config)
        home, data = directory / "bench", directory / "data"
        store, _, build_s = _prepare(home, data, args.scale, "local[2]", "recommended")
        store.close()
        _stop_spark()
        report["build_s"] = round(build_s, 1)
        _warm(d, queries)
        report["load"] = load_runs(d, queries, args.seconds, args.rounds)
        report["kill"] = kill_under_load(d, queries, args.seconds * 2)
        report["sync_s"] = sync_delays(d, args.sync_repeat)
        if not args.no_takeover:
            report["takeover"] = take_over(d, home, data)
    finally:
        for process in d.restarted:
            process.stop()
        down(directory, purge=False)
    _print(Console(width=160), report)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"cluster-sf{args.scale:g}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")


def _settings_env(directory: Path) -> dict[str, str]:
    """The deployment's metadata URL and warehouse root, as environment settings for `bench/ssb.py`'s set-up."""
    import tomllib

    config = tomllib.loads((directory / "precube.toml").read_text())
    return {
        "PRECUBE__METADATA__URL": config["metadata"]["url"],
        "PRECUBE__WAREHOUSE__ROOT": config["warehouse"]["root"],
    }


def _stop_spark() -> None:
    """The set-up's Spark session (if it built): its JVM would take memory and CPU from the servers."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()


def _print(console: Console, report: dict[str, Any]) -> None:
    view = Table(title=f"precube cluster over loopback, SSB SF {report['scale']:g} (cores: {report['cores']})")
    for column in ("measure", "value", "goal"):
        view.add_column(column)
    for c, run in report["load"].items():
        for servers in ("one", "two"):
            best = max(run[servers], key=lambda r: r["qps"])
            rounds = " / ".join(f"{r['qps']:,.0f}" for r in run[servers])
            used = ", ".join(f"{k} {v:.2f}" for k, v in best["cores_used"].items())
            failed = sum(r["failures"] for r in run[servers])
            view.add_row(
                f"(a) {servers} server{'s' * (servers == 'two')}, concurrency {c}",
                f"{run[f'{servers}_qps']:,.0f} q/s (rounds {rounds}) · best: p50 {best['p50_ms']:.1f} ms, "
                f"p99 {best['p99_ms']:.1f} ms, {best['qps_per_server_core']:,.0f} q/s per core the servers used; "
                f"cores used: {used}" + (f" · {failed} failed" if failed else ""),
                "",
            )
        view.add_row(f"(a) two / one, concurrency {c}", f"x{run['ratio']:.2f}", "≥ 1.6")
    k = report["kill"]
    view.add_row(
        "(b) one server killed mid-run, concurrency 8",
        f"{k['failures']} failed of {k['queries']:,} · HAProxy sent {k['haproxy_resent']['redispatches']} to the other",
        "only those in flight on it",
    )
    for key, label in (
        ("model_offline", "model OFFLINE"),
        ("model_online", "model ONLINE"),
        ("grant", "grant"),
        ("revoke", "revoke"),
    ):
        delays = report["sync_s"][key]
        view.add_row(
            f"(c) {label} through A, seen on B",
            f"median {statistics.median(delays) * 1000:.0f} ms · max {max(delays) * 1000:.0f} ms",
            "",
        )
    if "takeover" in report:
        t = report["takeover"]
        view.add_row(
            "(d) killed runner's build: other server runs it",
            f"{t['takeover_s']:.1f} s after kill -9 · finished after {t['finished_s']:.1f} s",
            f"≤ lease_ttl_s ({report['lease_ttl_s']:g} s)",
        )
    console.print(view)


if __name__ == "__main__":
    main()
