"""A precube deployment of several processes on one machine, over loopback (docs/deploy.md):

    .venv/bin/python deploy/cluster.py up --dir /tmp/precube-cluster      # start everything, print where
    .venv/bin/python deploy/cluster.py status --dir /tmp/precube-cluster  # what runs, what HAProxy routes to
    .venv/bin/python deploy/cluster.py down --dir /tmp/precube-cluster    # stop everything (--purge: and delete)

`up` starts PostgreSQL (the metadata), Redis (the shared result cache), a Spark standalone master and worker
(`--no-spark`: builds in each server's own local Spark), `--servers` `precube serve` processes on one
configuration (`DIR/precube.toml`: those three, and the warehouse directory `DIR/warehouse` they all share) and
HAProxy balancing them with a health check on `/ready`. Users: ADMIN (a random password in `DIR/admin-password`)
and `haproxy-check` (no permission on any project: it may only ask `/ready`; its random password is in HAProxy's
configuration). Every file holding a password is readable by its owner only. Each process logs under DIR; `down`
stops them by their pids (servers with SIGTERM: their running jobs pause, to resume at the next start). A later
`up` on the same DIR starts the same database, users and warehouse again.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the checkout's root first
from deploy.services import (
    Postgres,
    Process,
    Redis,
    ServiceError,
    SparkStandalone,
    free_port,
    haproxy_servers,
    port_open,
    start_haproxy,
    start_server,
    write_private,
)
from precube.auth.passwords import random_password

CHECK_USER = "haproxy-check"
STATE = "cluster.json"


def config_text(dir_: Path, pg: Postgres, redis: Redis, spark: SparkStandalone | None, lease_ttl_s: float) -> str:
    """The one configuration every server (and the CLI) of the deployment reads."""
    lines = [
        "# precube on several processes over loopback (deploy/cluster.py); holds passwords: owner-only",
        "[metadata]",
        f'url = "{pg.url}"',
        "[warehouse]",
        f'root = "{dir_ / "warehouse"}"  # shared by every server and the Spark worker',
        "[cache]",
        f'url = "{redis.url}"',
        "[jobs]",
        f"lease_ttl_s = {lease_ttl_s:g}",
        "[spark]",
    ]
    if spark is None:
        lines += ['master = "local[2]"', 'driver_memory = "1g"', "shuffle_partitions = 4"]
    else:  # each server is one application of the standalone cluster, on one of the worker's cores
        lines += [
            f'master = "{spark.master_url}"',
            'driver_memory = "1g"',
            "shuffle_partitions = 4",
            'conf = { "spark.cores.max" = "1", "spark.executor.cores" = "1", "spark.executor.memory" = "1g" }',
        ]
    return "\n".join(lines) + "\n"


def precube(config: Path, home: Path, *args: str, stdin: str | None = None) -> str:
    """A `precube` command on the deployment's configuration; its output (an error stops the launcher)."""
    command = [sys.executable, "-m", "precube", "--config", str(config), "--home", str(home), *args]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ServiceError(f"precube {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _user(config: Path, home: Path, name: str, password: str, *options: str) -> None:
    """Create the user, or set its password if an earlier, interrupted `up` created it."""
    try:
        precube(config, home, "user", "add", name, *options, "--password-stdin", stdin=password)
    except ServiceError as err:
        if "exists" not in str(err):
            raise
        precube(config, home, "user", "passwd", name, "--password-stdin", stdin=password)


def _load(dir_: Path) -> dict[str, Any]:
    path = dir_ / STATE
    return json.loads(path.read_text()) if path.exists() else {}


def _save(dir_: Path, state: dict[str, Any]) -> None:
    write_private(dir_ / STATE, json.dumps(state, indent=2) + "\n")


def _processes(state: dict[str, Any]) -> list[Process]:
    return [Process(**p) for p in state.get("processes", [])]


def up(dir_: Path, servers: int, port: int | None, spark: bool, lease_ttl_s: float) -> dict[str, Any]:
    dir_ = dir_.resolve()
    dir_.mkdir(parents=True, exist_ok=True)
    state = _load(dir_)
    running = [p.name for p in _processes(state) if p.alive]
    if running:
        raise ServiceError(f"{dir_} is up already ({', '.join(running)}): `down` first")
    started: list[Process] = []
    try:
        if "postgres" in state:
            pg = Postgres(**state["postgres"])
            pg.port = pg.port if not port_open(pg.port) else free_port()
            pg.start()
        else:
            pg = Postgres.create()
        state["postgres"] = pg.__dict__
        started.append(pg.process())
        redis = Redis(**state["redis"]) if "redis" in state else Redis.create(dir_ / "redis")
        redis.port = free_port()
        state["redis"] = redis.__dict__
        started.append(redis.start())
        standalone = SparkStandalone(str(dir_ / "spark"), free_port(), free_port()) if spark else None
        if standalone is not None:
            started += standalone.start()
            state["spark"] = {"master": standalone.master_url, "ui": f"http://127.0.0.1:{standalone.ui_port}"}
        config = write_private(dir_ / "precube.toml", config_text(dir_, pg, redis, standalone, lease_ttl_s))
        secrets_ = state.setdefault("secrets", {"admin": random_password(), "check": random_password()})
        if not state.get("users"):  # the first start: the users, before any server (none of them creates ADMIN)
            _user(config, dir_ / "cli", "ADMIN", secrets_["admin"], "--admin")
            _user(config, dir_ / "cli", CHECK_USER, secrets_["check"])
            write_private(dir_ / "admin-password", secrets_["admin"] + "\n")
            state["users"] = True
        ports = [free_port() for _ in range(servers)]
        for i, server_port in enumerate(ports, 1):
            started.append(start_server(config, dir_ / f"server-{i}", server_port, name=f"precube-{i}"))
        check = base64.b64encode(f"{CHECK_USER}:{secrets_['check']}".encode()).decode()
        state["url"] = f"http://127.0.0.1:{port or free_port()}"
        started.append(start_haproxy(dir_, int(state["url"].rsplit(":", 1)[1]), ports, check))
    except BaseException:
        for process in reversed(started):
            process.stop()
        raise
    finally:
        state["processes"] = [p.as_dict() for p in started]
        _save(dir_, state)
    return state


def down(dir_: Path, purge: bool) -> list[str]:
    """Stop every process of the deployment (servers first); with `purge`, delete its data too."""
    state = _load(dir_)
    stopped = []
    for process in reversed(_processes(state)):
        if process.alive:
            process.stop()
            stopped.append(process.name)
    state["processes"] = []
    if purge:
        if "postgres" in state:
            shutil.rmtree(state["postgres"]["data"], ignore_errors=True)
        shutil.rmtree(dir_, ignore_errors=True)
    elif state:
        _save(dir_, state)
    return stopped


def status(dir_: Path) -> dict[str, Any]:
    """Each process (alive or not), what HAProxy routes to, and what each server's /ready says."""
    state = _load(dir_)
    found: dict[str, Any] = {"url": state.get("url"), "processes": {}, "balancer": {}, "ready": {}}
    for process in _processes(state):
        found["processes"][process.name] = {"pid": process.pid, "port": process.port, "alive": process.alive}
    try:
        found["balancer"] = haproxy_servers(dir_)
    except OSError as err:
        found["balancer"] = f"HAProxy does not answer: {err}"
    check = base64.b64encode(f"{CHECK_USER}:{state.get('secrets', {}).get('check', '')}".encode()).decode()
    for process in _processes(state):
        if not process.name.startswith("precube-"):
            continue
        request = urllib.request.Request(f"http://127.0.0.1:{process.port}/ready")
        request.add_header("Authorization", f"Basic {check}")
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                found["ready"][process.name] = json.load(answer)["data"]
        except OSError as err:
            found["ready"][process.name] = f"not ready: {err}"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument("--dir", type=Path, required=True, help="where everything logs and keeps its data")
    parser.add_argument("--servers", type=int, default=2, help="precube serve processes (up)")
    parser.add_argument("--port", type=int, default=None, help="HAProxy's port (up; default: a free one)")
    parser.add_argument("--no-spark", action="store_true", help="no standalone cluster: servers build locally")
    parser.add_argument("--lease-ttl", type=float, default=30.0, help="[jobs] lease_ttl_s of the servers")
    parser.add_argument("--purge", action="store_true", help="down: also delete the database and DIR")
    args = parser.parse_args()
    try:
        if args.action == "up":
            state = up(args.dir, args.servers, args.port, not args.no_spark, args.lease_ttl)
            print(f"precube is up behind HAProxy at {state['url']} (Kylin's API: {state['url']}/kylin/api)")
            print(f"  ADMIN's password: {args.dir.resolve() / 'admin-password'}")
            print(f"  configuration:    {args.dir.resolve() / 'precube.toml'} (PRECUBE_CONFIG for the CLI)")
            for p in state["processes"]:
                print(f"  {p['name']:<16} pid {p['pid']:<8} port {p['port']:<6} log {p['log']}")
        elif args.action == "down":
            print("stopped: " + (", ".join(down(args.dir, args.purge)) or "nothing was running"))
        else:
            print(json.dumps(status(args.dir), indent=2))
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
