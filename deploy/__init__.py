"""Running precube as several processes on one machine: the services (`services.py`) and the launcher
(`cluster.py`); see docs/deploy.md."""
