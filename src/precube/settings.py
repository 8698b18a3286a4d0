"""One typed settings object: embedded defaults < TOML file < `PRECUBE__SECTION__KEY` env < explicit values.

Nothing reads settings globally: the CLI (or an application) loads a `Settings` once and passes it
to whatever needs it.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from precube.errors import ConfigError

DEFAULT_HOME = Path("~/.precube")
ENV_PREFIX = "PRECUBE__"


class _Section(BaseModel):
    """A `[section]` of the settings: a key it does not know (a typo) is an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


class MetadataSettings(_Section):
    """Where the metadata store lives. `url` defaults to a SQLite file under the home directory."""

    url: str | None = None
    table: str = "precube_metadata"


class WarehouseSettings(_Section):
    """Root of the precomputed data: a local directory (default: under home) or any URI Spark writes."""

    root: str | None = None


class SparkSettings(_Section):
    """How the Spark session is created for builds, sampling and pushdown. A job runner's session is supervised
    (`jobs.spark_supervisor`): probed every `probe_interval_s`, and replaced when its JVM is gone or a probe gets
    no answer within `probe_timeout_s` (a wedged JVM)."""

    master: str = "local[*]"
    app_name: str = "precube"
    driver_memory: str = "4g"
    shuffle_partitions: int = 8
    ui_enabled: bool = False
    bind_address: str = "127.0.0.1"
    conf: dict[str, str] = Field(default_factory=dict)
    probe_interval_s: float = Field(default=2.0, gt=0)
    probe_timeout_s: float = Field(default=20.0, gt=0)


class SamplingSettings(_Section):
    """Table sampling: at most `rows` rows are read; `sample_rows` rows are kept as examples."""

    rows: int = Field(default=20_000_000, gt=0)
    sample_rows: int = Field(default=10, ge=0, le=1000)


class JobSettings(_Section):
    """The job scheduler: how many jobs run at once (of different models), how long a silent lease
    holder is trusted (renewed every third of it), the least free disk space a build starts with (in the
    warehouse and the SQLite metadata store's directory, beside its own estimate: `jobs.disk`), and how old
    unreferenced warehouse directories must be before GC removes them. `engine_resumes`: how often a job whose
    Spark session died under it is resumed by itself on the next session before it is left in ERROR."""

    concurrency: int = Field(default=1, ge=1, le=16)
    lease_ttl_s: float = Field(default=30.0, gt=0)
    min_free_mb: float = Field(default=256.0, ge=0)
    gc_grace_hours: float = Field(default=24.0, ge=0)
    engine_resumes: int = Field(default=3, ge=0, le=100)

    @property
    def min_free_bytes(self) -> int:
        return int(self.min_free_mb * 1024 * 1024)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the platform tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


class QuerySettings(_Section):
    """The query engine: `engine` runs queries by default (duckdb in-process, or spark); `history`
        records every query of a project beside the metadata (table `{metadata.table}_query_history`).

        Limits that keep one statement from holding the engine: `timeout_s` per statement, `memory_limit`
        of each in-process engine's database (DuckDB's syntax, e.g. "4GB"; empty: half the machine's memory over
        the server's processes, `precube.query.bounds`), `max_result_rows` and `max_result_bytes` of an answer,
        `max_statement_chars` and `max_nesting_depth` of the SQL text and its tree; `spill_dir` (empty:
        `<home>/spill`) where each engine database spills what exceeds its memory, at most `max_spill_mb` (0: a
        quarter of that disk's free space when the database opens; past it, the memory error), `query.spill`.
        `pushdown_on_failure`: a statement over layouts that fails on the engine is re-run on the source tables
        (off: it is an error naming the layout and segments, so an answer never silently changes source).
        `metadata_check_ms`: how long a reading of the metadata's change counter answers queries (another
        process's change — a build by the CLI, an edit through another server — is seen within it; this
        process's own at once).

        Admission (`precube.service.admission`): at most `max_running` statements run on the engines at once (default
        twice the CPUs this process may use), of them at most `max_running_pushdown` pushed down to the source
        tables (0: a quarter of `max_running`, at least 1) and `max_running_per_user` of one user (0: no bound
        but `max_running`); the others wait, at most `max_queued` of them and at most `queue_timeout_s` each,
    then fail as busy (503, SQLSTATE 53300)."""

    engine: Literal["duckdb", "spark"] = "duckdb"
    history: bool = True
    timeout_s: float = Field(default=60.0, gt=0)
    memory_limit: str = ""
    max_result_rows: int = Field(default=1_000_000, gt=0)  # Kylin's kylin.query.max-result-rows
    max_result_bytes: int = Field(default=256 * 2**20, gt=0)
    spill_dir: str = ""  # empty: <home>/spill
    max_spill_mb: int = Field(default=0, ge=0)  # 0: a quarter of the spill disk's free space
    max_statement_chars: int = Field(default=1_000_000, gt=0)
    max_nesting_depth: int = Field(default=200, gt=0)
    pushdown_on_failure: bool = False
    metadata_check_ms: float = Field(default=50.0, ge=0)
    max_running: int = Field(default_factory=lambda: 2 * usable_cpus(), gt=0, le=1024)
    max_running_pushdown: int = Field(default=0, ge=0)
    max_running_per_user: int = Field(default=0, ge=0)
    max_queued: int = Field(default=100, ge=0, le=10_000)
    queue_timeout_s: float = Field(default=10.0, ge=0)
    # layouts held in memory per engine (`precube.query.layout_memory`); 0: 1/8 of RAM over the processes, ≤ 1 GiB
    layout_memory_mb: int = Field(default=0, ge=0)


class CacheSettings(_Section):
    """The query result cache (DESIGN §7). `url`: `memory` (an in-process LRU bounded by `memory_mb`) or
    `redis://host:port/db` (shared by every process). A result is kept when the query took at least
    `min_duration_ms` or scanned at least `min_scanned_rows` layout rows (Kylin's rules), or took at least
    `min_ms_per_mb` ms per MB of its answer (a small answer pays for its place: `keep_rules`; 0: off), and has
    at most `max_cells` rows times columns. Identical concurrent queries run once (`single_flight`): the first
    holds a marker that expires `flight_expiry_s` after its last renewal; the others wait at most `flight_wait_s`.
    A Redis call taking longer than `redis_timeout_s` fails: the cache is then bypassed until Redis answers again."""

    enabled: bool = True
    url: str = "memory"
    ttl_s: float = Field(default=86_400.0, gt=0)
    memory_mb: float = Field(default=256.0, gt=0)
    min_duration_ms: float = Field(default=100.0, ge=0)
    min_scanned_rows: int = Field(default=10_240, ge=0)
    min_ms_per_mb: float = Field(default=10.0, ge=0)
    max_cells: int = Field(default=1_000_000, ge=0)
    cache_pushdown: bool = False  # a source table's freshness is unknown: only the TTL would bound it
    single_flight: bool = True
    flight_expiry_s: float = Field(default=30.0, gt=0)
    flight_wait_s: float = Field(default=300.0, ge=0)
    redis_timeout_s: float = Field(default=0.5, gt=0)


class ServerSettings(_Section):
    """`precube serve`: where it listens, the password of the `ADMIN` user its first start creates (unset: a
        random one, printed once; there is never a built-in default), and the largest request body it reads.
        `url` (with `user` and `password`) makes the CLI's query, build, jobs, segments and cache commands talk
        to that server instead of opening the metadata store. `source_roots`: the only directories (or URI
        prefixes) whose files `POST /api/tables` may register; empty, loading files through the API is refused
        (the CLI, whose user owns the machine, is not bound by it). `pg_port`: also answer the PostgreSQL wire
    protocol there (same host, users and permissions; `pg_tls_cert`/`pg_tls_key` offer TLS to its clients).
    `flight_port`: also answer Arrow Flight SQL there (same host, users and permissions; TLS with that certificate)."""

    host: str = "127.0.0.1"
    port: int = Field(default=7070, ge=0, le=65535)
    admin_password: SecretStr | None = None
    max_body_bytes: int = Field(default=2 * 1024 * 1024, gt=0)
    url: str | None = None
    user: str | None = None
    password: SecretStr | None = None
    source_roots: list[str] = Field(default_factory=list)
    preload: bool = True  # at start, offer every project's layouts to the engines' background loaders (within budget)
    workers: int = Field(default=1, ge=1, le=64)  # `precube serve` processes sharing the port
    pg_port: int | None = Field(default=None, ge=0, le=65535)  # the Postgres wire protocol's port (None: off)
    pg_tls_cert: str | None = None  # a PEM certificate (chain) and its key: the wire front end then offers TLS
    pg_tls_key: str | None = None
    flight_port: int | None = Field(default=None, ge=0, le=65535)  # Arrow Flight SQL's port (None or 0: off)
    # connection hygiene: a connection that has not sent a request's headers within header_timeout_s (after it
    # opened, or after its last answer) is closed; keep_alive_s: an idle keep-alive connection's life (uvicorn's
    # timeout_keep_alive); max_connections: more open HTTP connections or requests get 503 (uvicorn's
    # limit_concurrency); the wire: pg_startup_timeout_s for start-up and sign-in, pg_max_connections at once
    header_timeout_s: float = Field(default=10.0, gt=0)
    keep_alive_s: float = Field(default=5.0, gt=0)
    max_connections: int = Field(default=1000, ge=1)
    pg_startup_timeout_s: float = Field(default=10.0, gt=0)
    pg_max_connections: int = Field(default=100, ge=1)


class AuthSettings(_Section):
    """Sign-in throttling, on HTTP and the wire alike. Failed sign-ins are counted per user name (of an existing
    user; a success resets it) and per client address (any names). From half of its threshold on, a name's or
    address's next try is refused (429, Retry-After) until `delay_s` after its last failure, doubling per further
    failure up to `max_delay_s`; at `max_failures` (an address: `address_max_failures`) it is locked for `lock_s`,
    and each failure after a lock ran out locks it again for twice as long, up to `max_lock_s`. Failures are
    forgotten `failure_window_s` after the last one (or the end of the last lock). 0 as a threshold: never
    throttled. The counts live in the metadata store (every server and worker on it shares them). `password_checks`:
    bcrypt checks run at once per process (0: half the CPU cores, at least 1), at most `password_queue` more wait."""

    max_failures: int = Field(default=5, ge=0)
    address_max_failures: int = Field(default=50, ge=0)
    delay_s: float = Field(default=1.0, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)
    lock_s: float = Field(default=300.0, gt=0)
    max_lock_s: float = Field(default=86_400.0, gt=0)
    failure_window_s: float = Field(default=900.0, gt=0)
    password_checks: int = Field(default=0, ge=0, le=256)
    password_queue: int = Field(default=256, ge=0)


class Settings(BaseSettings):
    """All of precube's configuration. Sections map to `[section]` tables in TOML."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
    )
    # Set by `load_settings` on a private subclass; None means no TOML file.
    _toml_file: ClassVar[Path | None] = None

    home: Path = DEFAULT_HOME
    metadata: MetadataSettings = Field(default_factory=MetadataSettings)
    warehouse: WarehouseSettings = Field(default_factory=WarehouseSettings)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    jobs: JobSettings = Field(default_factory=JobSettings)
    query: QuerySettings = Field(default_factory=QuerySettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)

    @model_validator(mode="after")
    def _derive_paths(self) -> Settings:
        self.home = self.home.expanduser().resolve()
        if self.home.exists() and not self.home.is_dir():
            raise ValueError(f"{self.home} is a file, not a directory")
        if self.metadata.url is None:
            self.metadata.url = f"sqlite:///{self.home / 'metadata.db'}"
        if self.warehouse.root is None:
            self.warehouse.root = str(self.home / "warehouse")
        if not self.query.spill_dir:
            self.query.spill_dir = str(self.home / "spill")
        return self

    @property
    def metadata_url(self) -> str:
        assert self.metadata.url is not None  # filled by _derive_paths
        return self.metadata.url

    @property
    def warehouse_root(self) -> str:
        assert self.warehouse.root is not None  # filled by _derive_paths
        return self.warehouse.root

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if cls._toml_file is not None:
            sources.append(_TomlSource(settings_cls, cls._toml_file))
        return tuple(sources)


class _TomlSource(PydanticBaseSettingsSource):
    """Reads one TOML file; a syntax error names the file and line."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        super().__init__(settings_cls)
        try:
            self._data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ConfigError(f"cannot read config file {path}: {err.strerror}") from err
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"config file {path} is not valid TOML: {err}") from err

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Load settings from defaults, the TOML `config_file` (if given), the environment and `overrides`."""
    if config_file is not None and not config_file.is_file():
        raise ConfigError(f"config file {config_file} does not exist")

    for name in os.environ:
        section = name.upper().removeprefix(ENV_PREFIX).split("__")[0].lower()
        if name.upper().startswith(ENV_PREFIX) and section not in Settings.model_fields:
            raise ConfigError(f"unknown setting {section} in environment variable {name} ({_known((section,))})")

    class _Configured(Settings):
        _toml_file: ClassVar[Path | None] = config_file

    try:
        return _Configured(**overrides)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        if first["type"] == "extra_forbidden":
            raise ConfigError(f"unknown setting {where} ({_known(first['loc'])})") from err
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"invalid setting {where}: {message}" if where else f"invalid settings: {message}") from err


def _known(loc: tuple[int | str, ...]) -> str:
    """The keys the section of an unknown key has, to name in the error."""
    section = Settings.model_fields.get(str(loc[0])) if len(loc) > 1 else None
    model = section.annotation if section is not None else Settings
    fields = getattr(model, "model_fields", {})
    kind = f"keys of [{loc[0]}]" if len(loc) > 1 else "sections"
    return f"known {kind}: {', '.join(sorted(fields))}"
