"""The one place a Spark session is created (build, sources and the Spark query engine use it).

pyspark is imported inside the function so that importing precube never starts or needs a JVM.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from precube.errors import EnvironmentMissingError
from precube.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOG4J_CONFIG = Path(__file__).parent / "resources" / "log4j2.properties"
JAVA_FIX = "install it with: sudo apt-get install -y openjdk-17-jre-headless (or set JAVA_HOME)"


def check_java() -> None:
    """Fail with the exact fix when no Java runtime is reachable (Spark would fail obscurely)."""
    java_home = os.environ.get("JAVA_HOME")  # the JVM launcher reads it too
    has_home = bool(java_home) and (Path(str(java_home)) / "bin" / "java").exists()
    if not has_home and not shutil.which("java"):
        raise EnvironmentMissingError(f"Java 17+ is required by Spark and was not found; {JAVA_FIX}")


def spark_conf(settings: Settings) -> dict[str, str]:
    """Spark configuration from settings; `[spark.conf]` entries override the defaults here."""
    s = settings.spark
    conf = {
        "spark.ui.enabled": str(s.ui_enabled).lower(),
        "spark.ui.showConsoleProgress": "false",  # Rich draws progress; Spark's bar would interleave
        "spark.sql.shuffle.partitions": str(s.shuffle_partitions),
        # Adaptive execution would merge a large shuffle into about as many tasks as cores (3 on 2 cores for
        # SF 1's base layout: the third ran alone); keeping the configured count balances the cores.
        "spark.sql.adaptive.coalescePartitions.minPartitionNum": str(s.shuffle_partitions),
        "spark.driver.memory": s.driver_memory,
        # PySpark 4 sends the Python call site of every Column function and method to the JVM for its error
        # messages (4 to 10 py4j round trips each: F.col cost 13 calls, ==, 37): a one-day build made ~2,100
        # calls, most of them that. precube's errors name what is wrong themselves.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # Loopback by default: the machine may have no resolvable hostname or outside network.
        "spark.driver.host": s.bind_address,
        "spark.driver.bindAddress": s.bind_address,
        # Python workers must run the interpreter that has precube's dependencies.
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        # Segment ranges are UTC epoch ms; dates and timestamps must not shift with the machine's zone.
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(settings.home / "spark-warehouse"),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={settings.home / 'derby'} -Dlog4j2.configurationFile={LOG4J_CONFIG}"
        ),
    }
    conf.update(s.conf)
    return conf


@contextlib.contextmanager
def _stderr_to(log: Path | None) -> Iterator[None]:
    """While Spark starts, the process's standard error (file descriptor 2) goes to `log`: the JVM started
    now inherits it for good — its banner and warnings land in the log, never among a command's progress
    bars — and Python's own standard error is given back after."""
    if log is None:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with log.open("ab") as out:
        os.dup2(out.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def spark_session(settings: Settings, console_log: Path | None = None) -> SparkSession:
    """Return the process's Spark session, creating it from `settings` on first use; `console_log`: where
    the JVM's console output goes (default: this process's standard error)."""
    check_java()
    # The launcher script reads SPARK_LOCAL_IP before any conf applies; without it Spark probes
    # the machine's interfaces and warns when the hostname resolves to loopback.
    os.environ.setdefault("SPARK_LOCAL_IP", settings.spark.bind_address)
    # Local-mode Python workers are started from PYSPARK_PYTHON, not from spark.pyspark.python:
    # without it they run the system python3, which lacks pandas/pyroaring for the measure UDFs.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(settings.spark.master).appName(settings.spark.app_name)
    for key, value in spark_conf(settings).items():
        builder = builder.config(key, value)
    with _stderr_to(console_log):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
