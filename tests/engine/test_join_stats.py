"""Merging join stats: a merged segment's are the sums of its sources', unknown when one's are."""

from __future__ import annotations

from precube.engine.join_stats import merged_join_stats
from precube.metadata.dataflow import JoinStat


def test_merge_sums_orphans_and_duplicates() -> None:
    a = {"DATES": JoinStat(orphans=2), "CUSTOMER": JoinStat(duplicate_keys=1)}
    b = {"DATES": JoinStat(orphans=3), "CUSTOMER": JoinStat()}
    assert merged_join_stats([a, b]) == {"DATES": JoinStat(orphans=5), "CUSTOMER": JoinStat(duplicate_keys=1)}
    assert merged_join_stats([b, b]) == {"DATES": JoinStat(orphans=6), "CUSTOMER": JoinStat()}


def test_merge_with_unknown_stats_is_unknown() -> None:
    assert merged_join_stats([{"DATES": JoinStat()}, None]) is None
    assert merged_join_stats([]) is None
    # a join only some sources have a stat for is unknown (left out)
    assert merged_join_stats([{"DATES": JoinStat(), "PART": JoinStat()}, {"DATES": JoinStat()}]) == {
        "DATES": JoinStat()
    }
