"""Every page of the console opens by its URL without a script error or a refused resource (the strict
Content-Security-Policy holds), shows what the API holds, and is saved as a screenshot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.server.conftest import data
from tests.web.conftest import WebServer, shot, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.spark


def test_every_page_opens_by_its_url(page: Page, web: WebServer, tmp_path: Path) -> None:
    sign_in(page, web.url)
    page.locator(f"[data-project={web.project}] .project-models", has_text="model").wait_for()
    shot(page, tmp_path, "projects")
    base = f"{web.url}/#/projects/{web.project}"

    page.goto(f"{base}/models")
    page.get_by_role("link", name=web.model, exact=True).wait_for()
    shot(page, tmp_path, "models")

    page.goto(f"{base}/models/{web.model}")
    page.locator("svg.diagram .table-node").nth(1).wait_for()
    assert page.locator("svg.diagram .table-node").count() == 2  # LINEORDER and DATES
    assert "LO_ORDERDATE = D_DATEKEY" in page.locator("svg.diagram").text_content()
    shot(page, tmp_path, "model-overview")

    page.goto(f"{base}/models/{web.model}/indexes")
    count = page.get_by_test_id("layout-count").locator(".count-number")
    count.wait_for()
    with web.server.client() as admin:
        layouts = data(admin.get(f"/kylin/api/models/{web.model}/indexes", params={"project": web.project}))
    assert page.locator("section.card", has_text="Layouts").locator("tbody tr").count() >= layouts["total_size"]
    shot(page, tmp_path, "model-indexes")

    page.goto(f"{base}/tables?table=SSB.LINEORDER")
    page.locator(".table-detail", has_text="LO_ORDERDATE").wait_for()
    assert page.locator(".list-item").count() == 2
    page.locator("[data-table='SSB.DATES']").click()  # sample the small table: its statistics appear
    page.get_by_test_id("sample").click()
    page.get_by_role("dialog").get_by_role("button", name="Sample").click()
    page.locator(".table-detail .stat-hint", has_text=re.compile(r"^[\d,]+ sampled$")).wait_for(timeout=120_000)
    with web.server.client() as admin:
        [dates] = data(admin.get("/kylin/api/tables", params={"project": web.project, "table": "DATES"}))["value"]
    year = next(s for s in dates["ext"]["columns_stats"] if s["column_name"] == "D_YEAR")
    row = page.locator(".table-detail tbody tr", has_text="D_YEAR").first
    cells = row.locator("td").all_inner_texts()
    assert cells[2:5] == [f"{year['cardinality']:,}", year["min_value"], year["max_value"]]
    shot(page, tmp_path, "tables")

    page.goto(f"{base}/jobs?status=RUNNING")  # the filter comes from the URL
    page.locator("[data-status=RUNNING].on").wait_for()
