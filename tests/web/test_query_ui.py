"""The query page in a real browser: SQL run with Ctrl-Enter answers like the oracle (the same SQL by DuckDB
on the raw files), the chart drawn from the result's columns, and bad SQL shown as the API's one-line error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.query.oracle import Oracle
from tests.server.conftest import data, error
from tests.web.conftest import WebServer, shot, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.spark
# within the first segments, which every test leaves built (merged or not)
SQL = (
    "SELECT D_YEAR, LO_DISCOUNT, COUNT(*) AS ORDERS, SUM(LO_REVENUE) AS REVENUE\n"
    "FROM SSB.LINEORDER LEFT JOIN SSB.DATES ON LO_ORDERDATE = D_DATEKEY\n"
    "WHERE LO_ORDERDATE < DATE '1994-01-01'\n"
    "GROUP BY D_YEAR, LO_DISCOUNT\nORDER BY D_YEAR, LO_DISCOUNT"
)


def number(text: str) -> float:
    return float(text.replace(",", ""))


def test_a_query_answers_like_the_oracle_and_charts(page: Page, web: WebServer, tmp_path: Path) -> None:
    sign_in(page, web.url, where=f"/projects/{web.project}/query")
    editor = page.get_by_test_id("sql")
    editor.fill(SQL)
    assert page.locator(".editor-shadow .tok-kw", has_text="SELECT").count() == 1  # highlighted as typed
    editor.press("Control+Enter")
    answer = page.get_by_test_id("answer")
    answer.wait_for()
    assert "tiny" in answer.inner_text() and "Agg Index" in answer.inner_text()
    page.locator("[data-testid=answer]", has_text="pruned").wait_for()  # from the EXPLAIN run beside it
    cells = (
        page.get_by_test_id("result")
        .locator("tbody tr")
        .evaluate_all("rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.innerText))")
    )
    oracle = Oracle(web.ssb_dir)
    try:
        expected = oracle.run(SQL).to_pylist()
    finally:
        oracle.close()
    got = [tuple(number(v) for v in row) for row in cells]
    assert got == [tuple(float(v) for v in r.values()) for r in expected]
    shot(page, tmp_path, "query-table")

    page.locator("[data-view=chart]").click()
    chart = page.get_by_test_id("chart")
    chart.locator("[data-chart=bar]").click()
    bars = chart.locator("svg.chart rect.bar")
    bars.first.wait_for()
    values = chart.locator("label.chip input:checked").count()  # numeric columns drawn: ORDERS, REVENUE…
    assert values >= 1 and bars.count() == len(expected) * values
    shot(page, tmp_path, "query-chart-bar")
    chart.locator("[data-chart=pie]").click()
    assert chart.locator("svg.chart .slice").count() >= 2
    chart.locator("[data-chart=line]").click()
    assert chart.locator("svg.chart polyline.line").count() == values
    shot(page, tmp_path, "query-chart-line")

    page.locator("[data-view=explain]").click()
    explained = page.get_by_test_id("explain-view")
    explained.wait_for()
    assert "Layout columns" in explained.inner_text()

    history = page.locator("section.card", has_text="History").locator("tbody tr").first
    assert "D_YEAR" in history.inner_text() and "SUCCEEDED" in history.inner_text()
    history.get_by_role("button", name="Re-run").click()  # the same SQL again: from the result cache
    answer.locator(".answer-item", has_text="Cache").get_by_text("HIT").wait_for()

    # the answer is in the result cache: the cache page shows the project's counters, and clears them
    page.get_by_role("link", name="Cache").click()
    stats = page.locator(".stats")
    stats.wait_for()
    with web.server.client() as admin:
        counters = data(admin.get("/kylin/api/query/cache/stats", params={"project": web.project}))
    assert counters["entries"] >= 1 and counters["hits"] >= 1
    labels = [label.upper() for label in stats.locator(".stat-label").all_inner_texts()]
    shown = dict(zip(labels, stats.locator(".stat-value").all_inner_texts(), strict=True))
    assert shown["ENTRIES"] == f"{counters['entries']:,}" and shown["HITS"] == f"{counters['hits']:,}"
    shot(page, tmp_path, "cache")
    page.get_by_test_id("clear-cache").click()
    page.get_by_role("dialog").get_by_role("button", name="Clear cache").click()
    page.locator(".stat", has_text="Entries").locator(".stat-value", has_text=re.compile(r"^0$")).wait_for()
    with web.server.client() as admin:
        assert data(admin.get("/kylin/api/query/cache/stats", params={"project": web.project}))["entries"] == 0


def test_bad_sql_shows_the_one_line_error(page: Page, web: WebServer, tmp_path: Path) -> None:
    bad = "SELECT LO_NO_SUCH_COLUMN FROM SSB.LINEORDER"
    sign_in(page, web.url, where=f"/projects/{web.project}/query")
    page.get_by_test_id("sql").fill(bad)
    page.get_by_test_id("run").click()
    shown = page.get_by_test_id("query-error").inner_text().strip()
    with web.server.client() as admin:
        expected = error(admin.post("/kylin/api/query", json={"project": web.project, "sql": bad}), 400)
    assert shown == expected and "\n" not in shown and "Traceback" not in shown
    shot(page, tmp_path, "query-error")
