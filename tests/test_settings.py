"""Settings: embedded defaults under one home, TOML file, PRECUBE__SECTION__KEY environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from precube.errors import ConfigError
from precube.settings import Settings, load_settings


def test_defaults_live_under_home(tmp_path: Path) -> None:
    s = load_settings(home=tmp_path)
    assert s.metadata_url == f"sqlite:///{tmp_path.resolve() / 'metadata.db'}"
    assert s.warehouse_root == str(tmp_path.resolve() / "warehouse")
    assert s.spark.master == "local[*]"


def test_toml_then_env_then_explicit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "precube.toml"
    config.write_text(
        '[spark]\nmaster = "local[3]"\nshuffle_partitions = 5\n[spark.conf]\n"spark.x" = "1"\n'
        '[metadata]\nurl = "postgresql://u@h/db"\n'
    )
    s = load_settings(config, home=tmp_path)
    assert (s.spark.master, s.spark.shuffle_partitions, s.spark.conf) == ("local[3]", 5, {"spark.x": "1"})
    assert s.metadata_url == "postgresql://u@h/db"
    monkeypatch.setenv("PRECUBE__SPARK__MASTER", "spark://127.0.0.1:7077")
    s = load_settings(config, home=tmp_path)
    assert s.spark.master == "spark://127.0.0.1:7077"
    assert s.spark.shuffle_partitions == 5  # the rest of the section still comes from TOML
    s = load_settings(config, home=tmp_path, spark={"master": "local[1]"})
    assert s.spark.master == "local[1]"


def test_bad_config_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[spark\n")
    with pytest.raises(ConfigError, match="bad.toml is not valid TOML"):
        load_settings(bad)
    monkeypatch.setenv("PRECUBE__SPARK__SHUFFLE_PARTITIONS", "many")
    with pytest.raises(ConfigError, match=r"invalid setting spark\.shuffle_partitions"):
        load_settings(home=tmp_path)
    monkeypatch.delenv("PRECUBE__SPARK__SHUFFLE_PARTITIONS")
    with pytest.raises(ConfigError, match="unknown setting nonsense"):
        load_settings(home=tmp_path, nonsense=1)


@pytest.mark.parametrize("section", ["metadata", "warehouse", "spark", "sampling", "jobs", "query", "cache"])
def test_an_unknown_key_in_any_section_is_named(section: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo in a key is an error naming it and the keys its section has, from the file, the environment
    or the caller alike — never a setting silently left at its default."""
    known = sorted(Settings.model_fields[section].annotation.model_fields)  # type: ignore[union-attr]
    message = rf"unknown setting {section}\.typo_key \(known keys of \[{section}\]: {', '.join(known)}\)"
    config = tmp_path / "precube.toml"
    config.write_text(f"[{section}]\ntypo_key = 1\n")
    with pytest.raises(ConfigError, match=message):
        load_settings(config, home=tmp_path)
    with pytest.raises(ConfigError, match=message):
        load_settings(home=tmp_path, **{section: {"typo_key": 1}})
    monkeypatch.setenv(f"PRECUBE__{section.upper()}__TYPO_KEY", "1")
    with pytest.raises(ConfigError, match=message):
        load_settings(home=tmp_path)


def test_an_unknown_section_in_the_environment_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECUBE__JOB__CONCURRENCY", "2")
    with pytest.raises(ConfigError, match="unknown setting job in environment variable PRECUBE__JOB__CONCURRENCY"):
        load_settings(home=tmp_path)


def test_importing_the_cli_starts_no_jvm() -> None:
    code = "import sys, precube.cli.app, precube.metadata; sys.exit('pyspark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
