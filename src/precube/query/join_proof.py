"""Join proofs (issue 18): a query whose joins differ from the model's — an INNER join where the model's is
LEFT or the reverse, or an INNER join of the model the query leaves out — still reads the model's rows
when, in every segment it scans, those joins were exact: every fact row found exactly one lookup row (the
build records this per segment and join: `JoinStat`). Then an INNER join drops nothing, a LEFT one nulls
nothing, and leaving the join out changes no row.

A snowflake join deeper in the graph also needs its LEFT ancestors to have found a row for every fact
row: a fact row whose parent lookup row is missing reaches the child join with a NULL key, which an INNER
join drops and a LEFT one keeps. INNER ancestors the query joins as INNER too drop such rows on both
sides; INNER ancestors it treats otherwise need a proof of their own, and have it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from precube.metadata import Model, Segment
from precube.metadata.model import JoinTable, JoinType

# How the query differs from the model at one join (what the missing rows would do to its answer).
DROPS = "the query's INNER join would drop them"
KEEPS = "the model's INNER join dropped them; the query's LEFT join keeps them"
LEAVES_OUT = "the model's INNER join dropped them; the query leaves that join out"
COUNTS_KEYS = "the query counts that table's rows as distinct keys (`reshape`'s counted semi-join)"


@dataclass(frozen=True)
class Obligation:
    """One model join whose rows must be exact (`exact`) or, for a LEFT ancestor, only complete."""

    alias: str  # the model's lookup alias, upper case
    table: str  # what to call the lookup in a reason
    why: str  # one of DROPS, KEEPS, LEAVES_OUT, or the ancestor's: the join that needs it
    exact: bool = True


@dataclass(frozen=True)
class JoinProof:
    """The joins a query's rows depend on, to check against the segments it scans."""

    obligations: tuple[Obligation, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.obligations)

    def check(self, segments: Iterable[Segment]) -> str | None:
        """Why the scanned segments' join stats do not prove the query's rows are the model's, or None."""
        for segment in segments:
            stats = segment.join_stats
            for ob in self.obligations:
                stat = stats.get(ob.alias) if stats is not None else None
                if stat is None:
                    return f"join statistics of segment {segment.name} are unknown: refresh it"
                if stat.orphans:
                    return f"{stat.orphans} fact rows of segment {segment.name} have no {ob.table} row ({ob.why})"
                if ob.exact and stat.duplicate_keys:
                    return (
                        f"{ob.table} holds {stat.duplicate_keys} duplicate join keys in segment {segment.name} "
                        "(the query's and the model's joins would multiply fact rows differently)"
                    )
        return None


def join_proof(model: Model, differing: dict[str, str]) -> JoinProof:
    """The proof for these model joins (lookup alias, upper case → how the query differs there)."""
    if not differing:
        return JoinProof()
    by_alias = {jt.alias.upper(): jt for jt in model.join_tables}
    found: dict[str, Obligation] = {}
    for alias in sorted(differing):
        found[alias] = Obligation(alias, _name(by_alias[alias].table, alias), differing[alias])
    for alias in sorted(differing):
        parent = _parent(by_alias[alias])
        while parent in by_alias:
            jt = by_alias[parent]
            if jt.join.type is JoinType.LEFT and parent not in found:
                why = f"the join to {_name(by_alias[alias].table, alias)} needs them"
                found[parent] = Obligation(parent, _name(jt.table, parent), why, exact=False)
            parent = _parent(jt)
    return JoinProof(tuple(found[a] for a in sorted(found)))


def _parent(jt: JoinTable) -> str:
    return jt.parent.upper()


def _name(table: str, alias: str) -> str:
    name = table.split(".")[-1].upper()
    return name if name == alias else f"{name} ({alias})"
