"""The services of a precube deployment, started on one machine over loopback, each as a detached process on a free
(or given) port and logging under a directory: PostgreSQL (a throwaway cluster: initdb + pg_ctl), Redis, a Spark
standalone master and worker (`spark-class` from the installed pyspark), `precube serve` and HAProxy.
`deploy/cluster.py` puts them together; the cluster tests and `bench/cluster.py` start them one by one.

Nothing here has a built-in password: PostgreSQL's and Redis's are random, written into files only the owner may
read. Every process is started in its own session, so it outlives the command that started it and a terminal's
Ctrl-C does not reach it; each is stopped by its own pid (or, PostgreSQL, by `pg_ctl`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


class ServiceError(RuntimeError):
    """A service could not be started or stopped; the message names it and its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def secret() -> str:
    """A random password that may stand in a URL as it is (PostgreSQL's, Redis's)."""
    return secrets.token_urlsafe(24)


def write_private(path: Path, text: str) -> Path:
    """Write a file only its owner may read (it holds a password)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return path


@dataclass
class Process:
    """A started service: enough to find, check and stop it later (saved in the cluster's state file)."""

    name: str
    pid: int
    port: int
    log: str
    stop_command: list[str] = field(default_factory=list)  # how it is stopped, when not by SIGTERM to `pid`

    @property
    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        with contextlib.suppress(ChildProcessError):  # our own child that exited: reap it, it is gone
            if os.waitpid(self.pid, os.WNOHANG)[0] == self.pid:
                return False
        return True

    def stop(self, timeout: float = 60) -> None:
        """Stop it cleanly (SIGTERM, or its stop command), then SIGKILL after `timeout`."""
        if self.stop_command:
            subprocess.run(self.stop_command, capture_output=True, timeout=timeout, check=False)
        elif self.alive:
            os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.alive:
            os.kill(self.pid, signal.SIGKILL)

    def kill(self) -> None:
        """kill -9, and wait until it is gone."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        while self.alive:
            time.sleep(0.02)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def spawn(name: str, command: list[str], log: Path, port: int, env: dict[str, str] | None = None) -> Process:
    """Start `command` detached (its own session), its output appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    return Process(name, proc.pid, port, str(log))


def wait_until(ready: Any, process: Process | None, what: str, timeout: float = 120) -> None:
    """Poll `ready()` until it is true; fail naming `what` (and its log) if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            if ready():
                return
        if process is not None and not process.alive:
            raise ServiceError(f"{what} exited; see {process.log}: {_tail(Path(process.log))}")
        time.sleep(0.1)
    raise ServiceError(f"{what} did not start within {timeout:.0f} s; see {process.log if process else 'its log'}")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _tail(log: Path) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
    except OSError:
        return ""


def _as_postgres() -> list[str]:
    """PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not found:
        raise ServiceError("PostgreSQL is not installed (fix: apt-get install -y postgresql)")
    return found[-1].parent


@dataclass
class Postgres:
    """A throwaway PostgreSQL cluster on loopback: database `precube`, user `precube` with a random password.

    As root its data lives in a directory of its own under /tmp owned by `postgres` (which cannot enter a
    directory only root may read, such as a test's temporary directory); `data` records where."""

    data: str
    port: int
    password: str

    @classmethod
    def create(cls, port: int | None = None) -> Postgres:
        home = Path(tempfile.mkdtemp(prefix="precube-pg-"))
        if os.geteuid() == 0:
            shutil.chown(home, "postgres")
        password = secret()
        pwfile = write_private(home / "pwfile", password + "\n")
        if os.geteuid() == 0:
            shutil.chown(pwfile, "postgres")
        initdb = [str(_pg_bin() / "initdb"), "-D", str(home / "data"), "-U", "precube", f"--pwfile={pwfile}"]
        done = subprocess.run(
            [*_as_postgres(), *initdb, "--auth-host=scram-sha-256", "--auth-local=trust"],
            capture_output=True,
            text=True,
            check=False,
        )
        pwfile.unlink()
        if done.returncode != 0:
            raise ServiceError(f"initdb failed: {done.stderr.strip()[-500:]}")
        pg = cls(str(home), port or free_port(), password)
        pg.start()
        created = subprocess.run(
            [
                *_as_postgres(),
                str(_pg_bin() / "createdb"),
                "-h",
                str(home),
                "-p",
                str(pg.port),
                "-U",
                "precube",
                "precube",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if created.returncode != 0:
            raise ServiceError(f"createdb failed: {created.stderr.strip()}")
        return pg

    @property
    def url(self) -> str:
        return f"postgresql://precube:{self.password}@127.0.0.1:{self.port}/precube"

    @property
    def log(self) -> Path:
        return Path(self.data) / "postgres.log"

    def _ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [*_as_postgres(), str(_pg_bin() / "pg_ctl"), "-D", f"{self.data}/data", *args]
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off"
        done = self._ctl("-l", str(self.log), "-w", "-o", options, "start")
        if done.returncode != 0:
            raise ServiceError(f"PostgreSQL did not start on port {self.port}: {done.stderr.strip()}; see {self.log}")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def process(self) -> Process:
        pid = int((Path(self.data) / "data" / "postmaster.pid").read_text().split()[0])
        stop = [*_as_postgres(), str(_pg_bin() / "pg_ctl"), "-D", f"{self.data}/data", "-m", "fast", "-w", "stop"]
        return Process("postgresql", pid, self.port, str(self.log), stop)

    def remove(self) -> None:
        """Stop it and delete its data."""
        self.stop("immediate")
        shutil.rmtree(self.data, ignore_errors=True)


@dataclass
class Redis:
    """A redis-server on loopback with a random password and nothing persisted (a cache)."""

    directory: str
    port: int
    password: str

    @classmethod
    def create(cls, directory: Path, port: int | None = None) -> Redis:
        if shutil.which("redis-server") is None:
            raise ServiceError("redis-server is not installed (fix: apt-get install -y redis-server)")
        return cls(str(directory), port or free_port(), secret())

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def start(self) -> Process:
        directory = Path(self.directory)
        conf = write_private(
            directory / "redis.conf",
            f"port {self.port}\nbind 127.0.0.1\nprotected-mode yes\nrequirepass {self.password}\n"
            f'save ""\nappendonly no\ndir {directory}\n',
        )
        found = spawn("redis", ["redis-server", str(conf)], directory / "redis.log", self.port)
        wait_until(lambda: port_open(self.port), found, "redis-server")
        return found


def spark_home() -> Path:
    """The installed pyspark: its `bin/spark-class` starts a standalone master and worker."""
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class SparkStandalone:
    """A Spark standalone master and one worker on loopback (small: `cores`, `memory`)."""

    directory: str
    port: int
    ui_port: int
    cores: int = 2
    memory: str = "2g"

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def _env(self) -> dict[str, str]:
        # SPARK_LOCAL_IP keeps every port (the web UIs too) on loopback; executors run this interpreter
        return {"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}

    def state(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as answer:
            found: dict[str, Any] = json.load(answer)
        return found

    @staticmethod
    def _listen(port: int, ui_port: int | None = None) -> list[str]:
        return ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port or free_port())]

    def start(self) -> list[Process]:
        directory = Path(self.directory)
        spark_class = str(spark_home() / "bin" / "spark-class")
        master = spawn(
            "spark-master",
            [spark_class, "org.apache.spark.deploy.master.Master", *self._listen(self.port, self.ui_port)],
            directory / "spark-master.log",
            self.port,
            self._env,
        )
        wait_until(lambda: port_open(self.port) and port_open(self.ui_port), master, "the Spark master")
        worker_port = free_port()
        resources = ["--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(directory / "spark-work")]
        worker = spawn(
            "spark-worker",
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                *self._listen(worker_port),
                *resources,
            ],
            directory / "spark-worker.log",
            worker_port,
            self._env,
        )
        wait_until(lambda: self.state().get("aliveworkers", 0) >= 1, worker, "the Spark worker")
        return [master, worker]


def start_server(
    config: Path, home: Path, port: int, env: dict[str, str] | None = None, name: str = "precube"
) -> Process:
    """`precube serve` on `config`, with its own home (its logs) and port; answering /health when this returns."""
    command = [sys.executable, "-m", "precube", "--config", str(config), "--home", str(home), "serve"]
    found = spawn(name, [*command, "--port", str(port)], home / "serve.log", port, env)

    def health() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            return int(answer.status) == 200

    wait_until(health, found, f"precube serve on port {port}", timeout=180)
    return found


def haproxy_config(port: int, servers: list[int], check_auth: str, directory: Path) -> str:
    """HAProxy in front of the servers: round robin over those whose `/ready` answers 200 (asked every second with
    the check user's Basic credentials, `check_auth`; a server is out after two failed checks, back after two good
    ones). A connection a dead server refuses is retried on another (`retries`, `option redispatch`), for every
    request; a query (`POST /kylin/api/query`: it reads only) that a server closed without answering — it died
    while answering — is sent again to another, so a server that dies costs no query. Other requests (a build, a
    user's change) are not sent twice: the one in flight on a dying server fails and the client may retry it."""
    check = [
        "    balance roundrobin",
        "    option httpchk",
        "    http-check send meth GET uri /ready ver HTTP/1.1 hdr Host localhost"
        f' hdr Authorization "Basic {check_auth}"',
        "    http-check expect status 200",
        "    default-server inter 1s fall 2 rise 2",
    ]
    lines = [
        "global",
        f"    stats socket {directory / 'haproxy.sock'} mode 600 level admin",
        "    log stdout format raw local0",
        "defaults",
        "    mode http",
        "    log global",
        "    option httplog",
        "    option dontlog-normal",  # only failed requests (and server state changes) reach the log
        "    timeout connect 2s",
        "    timeout client 300s",
        "    timeout server 300s",
        "    retries 3",
        "    option redispatch 1",
        "frontend precube",
        f"    bind 127.0.0.1:{port}",
        "    use_backend queries if METH_POST { path /kylin/api/query }",
        "    default_backend servers",
        "backend queries",
        *check,
        "    option http-buffer-request",  # the whole body in hand: it can be sent again
        "    retry-on conn-failure empty-response junk-response",
        *[f"    server s{i} 127.0.0.1:{p} check" for i, p in enumerate(servers, 1)],
        "backend servers",
        "    balance roundrobin",
        *[f"    server s{i} 127.0.0.1:{p} track queries/s{i}" for i, p in enumerate(servers, 1)],
    ]
    return "\n".join(lines) + "\n"


def start_haproxy(directory: Path, port: int, servers: list[int], check_auth: str) -> Process:
    """HAProxy (Debian's package) on loopback `port` over the servers' ports."""
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(binary).exists():
        raise ServiceError("HAProxy is not installed (fix: apt-get install -y haproxy)")
    config = write_private(directory / "haproxy.cfg", haproxy_config(port, servers, check_auth, directory))
    checked = subprocess.run([binary, "-c", "-q", "-f", str(config)], capture_output=True, text=True, check=False)
    if checked.returncode != 0:
        raise ServiceError(f"HAProxy refuses {config}: {checked.stderr.strip() or checked.stdout.strip()}")
    found = spawn("haproxy", [binary, "-db", "-f", str(config)], directory / "haproxy.log", port)
    wait_until(lambda: port_open(port), found, "HAProxy")
    return found


def haproxy_command(directory: Path, command: str) -> str:
    """A command on HAProxy's admin socket (`show stat`, `disable server servers/s2`, …); its answer."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(directory / "haproxy.sock"))
        s.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def haproxy_stats(directory: Path, backend: str = "queries") -> dict[str, dict[str, str]]:
    """HAProxy's counters (`show stat`) of a backend's servers and of the backend itself (`BACKEND`), by name."""
    lines = haproxy_command(directory, "show stat").splitlines()
    header = lines[0].lstrip("# ").split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
    return {r["svname"]: r for r in rows if r.get("pxname") == backend}


def haproxy_servers(directory: Path) -> dict[str, str]:
    """Each query server's status as HAProxy sees it (UP, DOWN, MAINT, …)."""
    return {name: row["status"] for name, row in haproxy_stats(directory).items() if name != "BACKEND"}


def wait_balanced(directory: Path, up: set[str], timeout: float = 30) -> None:
    """Until HAProxy sees exactly the servers `up` (s1, s2, …) UP."""
    deadline = time.monotonic() + timeout
    while (found := {name for name, state in haproxy_servers(directory).items() if state == "UP"}) != up:
        if time.monotonic() > deadline:
            raise ServiceError(f"HAProxy sees {sorted(found) or 'no server'} UP, not {sorted(up)}")
        time.sleep(0.2)
