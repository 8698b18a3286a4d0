"""`GET /metrics` in Prometheus's text format: the metrics recorded as things happen (`precube.metrics`: queries
by how they were answered and their latency, cache lookups, single-flight takeovers, sign-in failures) and the
values read when scraped from this server's state (`ScrapeCollector`: statements running, jobs by state, the
Spark session's state, the process's memory and CPU).

With `precube serve --workers N` the recorded metrics are every worker's, summed (prometheus_client's
multiprocess mode, over `PROMETHEUS_MULTIPROC_DIR`); the values read when scraped are those of the worker that
answered (jobs by state are the store's, so every worker's; Spark is the jobs worker's).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from precube import metrics
from precube.metadata import Job
from precube.metadata.job import JobState

if TYPE_CHECKING:
    from precube.server.state import ServerState

log = logging.getLogger(__name__)

JOBS_EVERY_S = 15.0  # jobs by state are counted from the store at most this often (a scrape reads every job)

# Gauges read from the state at each scrape: name → (help, reader). Another value of the state is one more line.
GAUGES: dict[str, tuple[str, Callable[[ServerState], float]]] = {
    "precube_queries_running": (
        "Statements submitted to this process's query service and not yet finished.",
        lambda state: len(state.queries.running()),
    ),
}


class ScrapeCollector(Collector):
    """The values of one server's state, read when Prometheus scrapes it."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._jobs: tuple[float, dict[str, int]] | None = None  # when counted, and the counts
        self._jobs_lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        for name, (doc, read) in GAUGES.items():
            yield GaugeMetricFamily(name, doc, value=read(self.state))
        admitted = self.state.queries.stats()
        for name, doc, counts in (
            ("precube_admission_running", "Statements holding an engine slot now, by lane.", admitted.running),
            ("precube_admission_queued", "Statements waiting for an engine slot now, by lane.", admitted.queued),
        ):
            family = GaugeMetricFamily(name, doc, labels=["lane"])
            for lane, count in sorted(counts.items()):
                family.add_metric([lane], count)
            yield family
        jobs = self._job_counts()
        if jobs is not None:
            family = GaugeMetricFamily("precube_jobs", "Jobs of every project, by state.", labels=["state"])
            for state in JobState:
                family.add_metric([state.value], jobs.get(state.value, 0))
            yield family
        spark = GaugeMetricFamily(
            "precube_spark_state",
            "The job service's Spark session: 1 for its state now (off: this process runs no jobs).",
            labels=["state"],
        )
        service = self.state.jobs
        spark.add_metric([str(service.status()["spark"]) if service is not None else "off"], 1)
        yield spark

    def _job_counts(self) -> dict[str, int] | None:
        """Jobs by state, counted afresh at most every JOBS_EVERY_S; None while the store cannot be read."""
        with self._jobs_lock:
            if self._jobs is not None and time.monotonic() - self._jobs[0] < JOBS_EVERY_S:
                return self._jobs[1]
            store = self.state.store
            try:
                counts: Counter[str] = Counter()
                for project in store.list_projects():
                    with store.read(project.name) as tx:
                        counts.update(job.state.value for job in tx.list(Job))
            except Exception as err:  # noqa: BLE001 (a store down: the scrape still answers the rest)
                log.debug("jobs not counted for /metrics: %s", err)
                return None
            self._jobs = (time.monotonic(), dict(counts))
            return self._jobs[1]


class _Recorded(Collector):
    """The metrics this process recorded (`precube.metrics.REGISTRY`)."""

    def collect(self) -> Iterable[Metric]:
        return metrics.REGISTRY.collect()


def exposition(collector: ScrapeCollector) -> bytes:
    """The text Prometheus reads: the recorded metrics (every worker's in multiprocess mode), then the state's."""
    registry = CollectorRegistry(auto_describe=False)
    recorded = MultiProcessCollector(None) if metrics.multiprocess() else _Recorded()  # type: ignore[no-untyped-call]
    registry.register(recorded)
    registry.register(collector)
    registry.register(ProcessCollector(registry=None))  # process_resident_memory_bytes and others, on Linux
    return generate_latest(registry)
