"""Jobs that failed because the build engine (the Spark session) died under them: telling such a failure from the
job's own, and putting the job back to resume by itself once a new session is up (`jobs.spark_supervisor`), a
bounded number of times, with a message a user can read instead of the raw `ConnectionRefusedError`."""

from __future__ import annotations

from precube.metadata import Job, JobState
from precube.metadata.entity import now_ms

ENGINE_RESUMES = "engine_resumes"  # job param: how often it was resumed by itself after the engine died under it
ENGINE_NOTE = "engine_note"  # job param: what the engine's death did to the job, for its user
RESUMED = "the build engine restarted; job resumed"

OUT_OF_MEMORY = "its JVM ran out of memory"
_GONE = "its JVM stopped answering"
_SHUT_DOWN = "its SparkContext was shut down"
# Exception types (by name: py4j is not imported for this) and message parts that mean the session is gone.
_TYPES = {
    "Py4JNetworkError": _GONE,
    "ConnectionRefusedError": _GONE,
    "ConnectionResetError": _GONE,
    "BrokenPipeError": _GONE,
}
_TEXTS = (
    ("java.lang.outofmemoryerror", OUT_OF_MEMORY),
    ("answer from java side is empty", _GONE),
    ("error while sending or receiving", _GONE),
    ("error while receiving", _GONE),
    ("java_gateway_exited", _GONE),
    ("unable to send heartbeats", "its executor lost the driver's heartbeat"),
    ("sparkcontext was shut down", _SHUT_DOWN),
    ("sparkcontext has been shutdown", _SHUT_DOWN),
    ("cannot call methods on a stopped sparkcontext", _SHUT_DOWN),
)


def engine_failure(err: BaseException) -> str | None:
    """Why `err` says the Spark session died (one line), or None when it does not; the whole chain of causes is
    read (PySpark and py4j wrap the socket's error)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [err]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        for kind in type(current).__mro__:
            if kind.__name__ in _TYPES:
                return _TYPES[kind.__name__]
        text = str(current).lower()
        for part, reason in _TEXTS:
            if part in text:
                return reason
        todo += [current.__cause__, current.__context__]
    return None


def put_back(job: Job, reason: str, most: int) -> bool:
    """A RUNNING job whose engine died under it (`reason`): READY again, to resume where it stopped once a new
    session is up (True); after `most` such resumes, ERROR with a message saying so, resumable (False)."""
    done = int(job.params.get(ENGINE_RESUMES, "0"))
    step = job.current_step
    if done >= most:
        message = (
            f"the build engine stopped {done + 1} times while this job ran (last: {reason}); "
            "resume the job once Spark is healthy (HOME/logs/spark.log tells why it stopped)"
        )
        job.move_to(JobState.ERROR)
        job.error = message
        job.params.pop(ENGINE_RESUMES, None)
        job.params[ENGINE_NOTE] = message
        if step is not None:
            step.state, step.error, step.end_time = JobState.ERROR, message, now_ms()
        return False
    job.move_to(JobState.READY)
    job.error = None
    job.params[ENGINE_RESUMES] = str(done + 1)
    job.params[ENGINE_NOTE] = f"the build engine stopped ({reason}); the job resumes once it has restarted"
    if step is not None and step.state is JobState.RUNNING:  # it starts again from its last finished layout
        step.state, step.error = JobState.READY, None
    return True


def resumed_note(job: Job, most: int) -> str | None:
    """When a job put back by `put_back` starts again: the note saying so (also left on the job), else None."""
    done = job.params.get(ENGINE_RESUMES)
    if done is None:
        return None
    note = f"{RESUMED} ({done} of at most {most})"
    job.params[ENGINE_NOTE] = note
    return note
