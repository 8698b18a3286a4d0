"""The extended-protocol patterns of Power BI (Npgsql) and Tableau, as raw messages on one connection: a pipeline
sent without waiting (Parse, Describe of the statement before Bind, Bind, Describe of the portal, Execute, Sync),
a portal read by pieces (Execute with a row limit, PortalSuspended, Execute again), Close and Flush, an error
mid-pipeline discarding the rest until Sync, a failed transaction block. Each answer is compared, message by
message, with what PostgreSQL 15 answers the same messages (recorded from a real server over a table of the same
rows)."""

from __future__ import annotations

from collections.abc import Iterator

import pygwire.messages as m
import pytest

from tests.server.conftest import ServerHome
from tests.server.live import LiveServer
from tests.server.test_pgwire_clients import Raw

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("warm_live")]  # see warm_live

INT4, TEXT = 23, 25
YEARS = "select d_year from ssb.dates where d_year < $1 group by d_year order by d_year"  # 1992 … 1998


def shape(messages: list[m.PGMessage]) -> str:
    """The answer as one line: each message's kind (and what a client reads from it), repeats counted."""
    out: list[list[object]] = []
    for x in messages:
        name = type(x).__name__
        if isinstance(x, m.DataRow):
            name = "D"
        elif isinstance(x, m.CommandComplete):
            name = f"C({x.tag})"
        elif isinstance(x, m.ErrorResponse):
            name = f"E({x.code})"
        elif isinstance(x, m.ParameterDescription):
            name = f"t{x.type_oids}"
        elif isinstance(x, m.RowDescription):
            name = "T[" + ",".join(f"{f.name}:{f.type_oid}" for f in x.fields) + "]"
        elif isinstance(x, m.ReadyForQuery):
            name = f"Z({x.status.value})"
        if out and out[-1][0] == name:
            out[-1][1] = int(str(out[-1][1])) + 1
        else:
            out.append([name, 1])
    return " ".join(str(n) if c == 1 else f"{n}x{c}" for n, c in out)


@pytest.fixture
def raw(live: LiveServer, server_home: ServerHome) -> Iterator[Raw]:
    assert live.pg_port is not None
    found = Raw(live.pg_port, server_home.project)
    yield found
    found.close()


def test_a_pipeline_with_statement_describe_before_bind(raw: Raw) -> None:
    raw.send(  # Npgsql and Tableau: everything up to Sync before reading anything
        m.Parse(statement="s1", query=YEARS, param_types=[INT4]),
        m.Describe(kind="S", name="s1"),
        m.Bind(portal="p1", statement="s1", param_values=[b"1997"]),
        m.Describe(kind="P", name="p1"),
        m.Execute(portal="p1"),
        m.Parse(query="select 1 as one"),
        m.Bind(),
        m.Describe(kind="P"),
        m.Execute(),
        m.Sync(),
    )
    assert shape(raw.until(m.ReadyForQuery)) == (
        "ParseComplete t[23] T[d_year:23] BindComplete T[d_year:23] Dx5 C(SELECT 5) "
        "ParseComplete BindComplete T[one:23] D C(SELECT 1) Z(I)"
    )


def test_a_portal_read_by_pieces(raw: Raw) -> None:
    raw.send(m.Parse(statement="s1", query=YEARS, param_types=[INT4]), m.Sync())
    raw.until(m.ReadyForQuery)
    raw.send(m.Bind(portal="p2", statement="s1", param_values=[b"1999"]), m.Execute(portal="p2", max_rows=3), m.Flush())
    assert shape(raw.until(m.PortalSuspended)) == "BindComplete Dx3 PortalSuspended"  # Flush: sent without Sync
    raw.send(*[m.Execute(portal="p2", max_rows=3)] * 3, m.Sync())
    # PostgreSQL's tags count each Execute's rows; one past the end answers SELECT 0
    assert shape(raw.until(m.ReadyForQuery)) == "Dx3 PortalSuspended D C(SELECT 1) C(SELECT 0) Z(I)"
    raw.send(m.Execute(portal="p2"), m.Sync())  # Sync ended the implicit transaction, and its portals
    assert shape(raw.until(m.ReadyForQuery)) == "E(34000) Z(I)"

    raw.send(m.Query(query_string="begin"))
    raw.until(m.ReadyForQuery)
    raw.send(m.Bind(portal="p3", statement="s1", param_values=[b"1994"]), m.Execute(portal="p3", max_rows=1), m.Sync())
    assert shape(raw.until(m.ReadyForQuery)) == "BindComplete D PortalSuspended Z(T)"
    raw.send(m.Execute(portal="p3"), m.Sync())  # in a transaction block a portal outlives Sync
    assert shape(raw.until(m.ReadyForQuery)) == "D C(SELECT 1) Z(T)"
    raw.send(m.Query(query_string="commit"))
    assert shape(raw.until(m.ReadyForQuery)) == "C(COMMIT) Z(I)"


def test_close_flush_and_an_error_discarding_the_pipeline(raw: Raw) -> None:
    raw.send(m.Parse(statement="s2", query="select 2 as two"), m.Flush())
    assert shape(raw.until(m.ParseComplete)) == "ParseComplete"
    raw.send(
        m.Close(kind="S", name="s2"),
        m.Close(kind="P", name="nosuch"),  # closing what does not exist is no error
        m.Close(kind="S", name="nosuch"),
        m.Bind(statement="s2"),
        m.Sync(),
    )
    assert shape(raw.until(m.ReadyForQuery)) == "CloseCompletex3 E(26000) Z(I)"

    raw.send(
        m.Parse(query="select 3 as three"),
        m.Bind(),
        m.Execute(),
        m.Parse(query="select nosuchcolumn from ssb.dates"),
        m.Bind(),
        m.Execute(),
        m.Parse(statement="s3", query="select 4"),  # discarded: after the error, everything until Sync
        m.Sync(),
    )
    answer = raw.until(m.ReadyForQuery)
    # PostgreSQL fails the bad statement at its Parse; precube when it is run (the Bind or Execute after it)
    assert shape(answer).startswith("ParseComplete BindComplete D C(SELECT 1) ")
    assert shape(answer).endswith(" E(42703) Z(I)") and len(_of(m.ErrorResponse, answer)) == 1
    raw.send(m.Bind(statement="s3"), m.Execute(), m.Sync())
    assert shape(raw.until(m.ReadyForQuery)) == "E(26000) Z(I)"


def test_a_command_described_and_a_failed_transaction_block(raw: Raw) -> None:
    raw.send(
        m.Parse(statement="s5", query="set application_name = 'pipeline'"),
        m.Describe(kind="S", name="s5"),
        m.Bind(statement="s5"),
        m.Describe(kind="P"),
        m.Execute(),
        m.Sync(),
    )
    assert (
        shape(raw.until(m.ReadyForQuery)) == "ParseComplete t[] NoData BindComplete NoData C(SET) ParameterStatus Z(I)"
    )

    raw.send(m.Query(query_string="begin"))
    raw.until(m.ReadyForQuery)
    raw.send(m.Parse(query="select nosuchcolumn from ssb.dates"), m.Bind(), m.Execute(), m.Sync())
    assert shape(raw.until(m.ReadyForQuery)).endswith("E(42703) Z(E)")
    raw.send(m.Parse(query="select 1"), m.Bind(), m.Execute(), m.Sync())
    assert shape(raw.until(m.ReadyForQuery)) == "E(25P02) Z(E)"
    raw.send(m.Query(query_string="rollback"))
    assert shape(raw.until(m.ReadyForQuery)) == "C(ROLLBACK) Z(I)"


def _of(kind: type[m.PGMessage], messages: list[m.PGMessage]) -> list[m.PGMessage]:
    return [x for x in messages if isinstance(x, kind)]
