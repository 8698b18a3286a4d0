"""Settings: embedded defaults under one home, TOML file, PRECUBE__SECTION__KEY environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from precube.errors import ConfigError
from precube.settings import load_settings


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
    with pytest.raises(ConfigError, match="invalid setting nonsense"):
        load_settings(home=tmp_path, nonsense=1)


def test_importing_the_cli_starts_no_jvm() -> None:
    code = "import sys, precube.cli.app, precube.metadata; sys.exit('pyspark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
