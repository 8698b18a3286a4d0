"""Jobs (seed 002 "Task & Job", seed 003 "入口介绍"): submitting build, refresh, merge and index jobs,
acting on them, and (next) the scheduler that runs them through `precube.engine`."""
