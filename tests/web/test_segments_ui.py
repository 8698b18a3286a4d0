"""The segment timeline in a real browser: sign in, see the segments drawn as the API lists them, build the
next segment from the UI and follow its job to FINISHED, see the new segment appear, merge two segments; an
analyst (QUERY only) sees no Build and no segment actions, and the server refuses them anyway."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from precube.settings import AuthSettings
from tests.server.conftest import data, error
from tests.server.live import ADMIN
from tests.web.conftest import ANALYST, WebServer, shot, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.spark
JOB_TIMEOUT_MS = 300_000


def segments(web: WebServer) -> list[dict[str, Any]]:
    with web.server.client() as admin:
        listed = data(
            admin.get(
                f"/kylin/api/models/{web.model}/segments",
                params={"project": web.project, "sort_by": "start_time", "reverse": False, "page_size": 1000},
            )
        )
    return list(listed["value"])


def day(ms: str | int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(int(ms) / 1000, dt.UTC).strftime("%Y-%m-%d")


def open_segments(page: Page, web: WebServer, user: tuple[str, str] = ADMIN) -> None:
    sign_in(page, web.url, user, f"/projects/{web.project}/models/{web.model}/segments")
    page.locator("[data-testid=timeline] svg.timeline").wait_for()


def test_sign_in_then_the_timeline_draws_the_segments(page: Page, web: WebServer, tmp_path: Path) -> None:
    page.goto(f"{web.url}/")
    page.get_by_label("User name").fill(ADMIN[0])
    page.get_by_label("Password").fill("Wr0ng-pass!")
    page.get_by_role("button", name="Sign in").click()
    refused = page.get_by_role("alert").inner_text()
    with httpx.Client(base_url=web.url, auth=(ADMIN[0], "Wr0ng-pass!")) as wrong:
        assert refused == error(wrong.post("/kylin/api/user/authentication"), 401)
    shot(page, tmp_path, "sign-in-refused")

    time.sleep(AuthSettings().delay_s + 0.2)  # after two failures the throttle holds ADMIN's next try this long
    page.get_by_label("Password").fill(ADMIN[1])
    page.get_by_role("button", name="Sign in").click()
    page.locator(f"[data-project={web.project}]").click()  # projects → the project's models
    page.get_by_role("link", name=web.model, exact=True).click()  # models → the model's overview
    page.get_by_role("tab", name="Segments").click()
    timeline = page.locator("[data-testid=timeline] svg.timeline")
    timeline.wait_for()
    assert re.search(rf"#/projects/{web.project}/models/{web.model}/segments$", page.url)
    listed = segments(web)
    drawn = page.locator("[data-testid=timeline] g.seg")
    assert drawn.count() == len(listed) >= 2
    assert sorted(drawn.evaluate_all("els => els.map(e => e.dataset.segment)")) == sorted(s["name"] for s in listed)
    assert set(drawn.evaluate_all("els => els.map(e => e.dataset.status)")) == {"ready"}
    first = listed[0]
    page.locator(f"[data-testid=timeline] g.seg[data-segment='{first['name']}']").hover()
    tip = page.get_by_role("tooltip")
    assert f"{day(first['start_time'])} → {day(first['end_time'])}" in tip.inner_text()
    assert f"{first['source_count']:,}" in tip.inner_text()
    shot(page, tmp_path, "segments-timeline")

    page.go_back()  # the back button returns to the model's overview
    page.get_by_role("tab", name="Overview", selected=True).wait_for()
    assert page.url.endswith(f"/models/{web.model}")


def test_build_the_next_segment_and_follow_its_job(page: Page, web: WebServer, tmp_path: Path) -> None:
    before = segments(web)
    last_end = max(int(s["end_time"]) for s in before)
    open_segments(page, web)
    page.get_by_test_id("build").click()
    dialog = page.get_by_role("dialog")
    start = dialog.locator("input[name=start]")
    assert start.is_disabled() and start.input_value() == day(last_end)  # seed 001 §4.3: fixed to the last end
    end = f"{int(day(last_end)[:4]) + 1}{day(last_end)[4:]}"  # one year on
    dialog.get_by_test_id("build-end").fill(end)
    assert "365 days" in dialog.inner_text() or "366 days" in dialog.inner_text()
    shot(page, tmp_path, "build-dialog")
    dialog.get_by_test_id("build-submit").click()
    chip = page.locator("[data-testid=model-jobs] a.job-chip").first
    chip.wait_for()
    chip.click()  # the job's page: its steps and progress, live
    page.get_by_test_id("steps").locator(".step").first.wait_for()
    assert "/jobs/" in page.url
    status = page.get_by_test_id("job-status")
    status.get_by_text("FINISHED").wait_for(timeout=JOB_TIMEOUT_MS)  # no reload: the page polls
    steps = page.get_by_test_id("steps").locator(".step")
    assert steps.count() > 0 and steps.locator(".badge", has_text="FINISHED").count() == steps.count()
    assert page.get_by_test_id("output").inner_text().strip()
    assert f"by {ADMIN[0]}" in page.locator(".stats").inner_text()  # who submitted it
    shot(page, tmp_path, "job-finished")

    page.go_back()  # the back button returns to the segments, which show the new one
    page.locator(f"[data-testid=timeline] g.seg[data-segment$='_{end.replace('-', '')}000000']").wait_for()
    after = segments(web)
    assert len(after) == len(before) + 1
    new = after[-1]
    assert (day(new["start_time"]), day(new["end_time"])) == (day(last_end), end)
    assert new["status_to_display"] == "ONLINE" and new["source_count"] > 0
    page.locator("[data-testid=timeline] g.seg").nth(len(after) - 1).wait_for()
    assert page.locator("[data-testid=timeline] g.seg").count() == len(after)
    shot(page, tmp_path, "segments-after-build")

    page.get_by_role("link", name="Jobs").click()  # the jobs list shows it; its status filter is in the URL
    page.locator("[data-status=FINISHED]").click()
    page.wait_for_url(re.compile(r"/jobs\?status=FINISHED$"))
    finished = page.locator("tbody tr", has_text="INC BUILD")
    finished.first.wait_for()
    assert (
        finished.count() >= 1 and "FINISHED" in finished.first.inner_text() and ADMIN[0] in finished.first.inner_text()
    )
    page.locator("[data-status=ERROR]").click()  # FINISHED or ERROR: the same jobs, none failed
    page.wait_for_url(re.compile(r"status=FINISHED%2CERROR$"))
    assert page.locator("tbody tr", has_text="INC BUILD").count() == finished.count()
    shot(page, tmp_path, "jobs")


def test_merge_two_contiguous_segments(page: Page, web: WebServer, tmp_path: Path) -> None:
    before = segments(web)
    first, second = before[0], before[1]
    assert first["end_time"] == second["start_time"]
    open_segments(page, web)
    page.locator(f"g.seg[data-segment='{first['name']}']").click()
    assert page.get_by_test_id("merge").is_disabled()  # one segment is nothing to merge
    page.locator(f"g.seg[data-segment='{second['name']}']").click()
    page.get_by_test_id("merge").click()
    dialog = page.get_by_role("dialog")
    assert f"{day(first['start_time'])} → {day(second['end_time'])}" in dialog.inner_text()
    dialog.get_by_role("button", name="Merge").click()
    merged_name = f"{day(first['start_time']).replace('-', '')}000000_{day(second['end_time']).replace('-', '')}000000"
    page.locator(f"g.seg[data-segment='{merged_name}']").wait_for()  # while it runs: MERGING, above the two
    shot(page, tmp_path, "segments-merging")
    page.locator(f"g.seg[data-segment='{merged_name}'].seg-ready").wait_for(timeout=JOB_TIMEOUT_MS)
    page.locator(f"g.seg[data-segment='{first['name']}']").wait_for(state="detached")
    after = segments(web)
    assert [s["name"] for s in after] == [merged_name] + [s["name"] for s in before[2:]]
    assert after[0]["source_count"] == first["source_count"] + second["source_count"]
    shot(page, tmp_path, "segments-merged")


def test_an_analyst_sees_no_build_and_the_server_refuses_it(page: Page, web: WebServer, tmp_path: Path) -> None:
    open_segments(page, web, ANALYST)
    assert page.locator("g.seg").count() == len(segments(web))
    assert page.get_by_test_id("build").count() == 0
    assert page.locator("input[type=checkbox][aria-label^=Select]").count() == 0  # nothing to refresh, merge or delete
    page.locator("g.seg").first.click()
    assert page.get_by_test_id("merge").count() == 0 and page.get_by_test_id("delete").count() == 0
    assert page.get_by_test_id("save-settings").count() == 0
    assert page.get_by_role("button", name="Take offline").count() == 0
    shot(page, tmp_path, "segments-analyst")
    with web.server.client(ANALYST) as analyst:  # hidden is not the check: the server refuses it
        body = {"project": web.project, "end": "2000000000000"}
        assert "OPERATION" in error(analyst.post(f"/kylin/api/models/{web.model}/segments", json=body), 403)


def test_delete_shows_the_servers_preview_first(page: Page, web: WebServer, tmp_path: Path) -> None:
    before = segments(web)
    last = before[-1]
    open_segments(page, web)
    page.locator(f"g.seg[data-segment='{last['name']}']").click()
    page.get_by_test_id("delete").click()
    preview = page.get_by_test_id("delete-preview").inner_text()
    with web.server.client() as admin:
        params = {"project": web.project, "purge": "false", "ids": last["id"], "dry_run": "true"}
        expected = data(admin.delete(f"/kylin/api/models/{web.model}/segments", params=params))["preview"]
    assert preview == expected and last["name"] in preview
    assert len(segments(web)) == len(before)  # the preview dropped nothing
    shot(page, tmp_path, "delete-preview")
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    page.locator(f"g.seg[data-segment='{last['name']}']").wait_for(state="detached")
    assert [s["name"] for s in segments(web)] == [s["name"] for s in before[:-1]]


def test_the_timeline_shows_gaps_overlaps_and_each_status(page: Page, web: WebServer, tmp_path: Path) -> None:
    """The timeline module itself, in the browser, on segments no rule would let a build make: a gap, an
    overlap of two READY ones (a broken invariant), and one of each status a job leaves on the way."""
    sign_in(page, web.url)
    page.locator(f"[data-project={web.project}]").wait_for()  # the page is drawn: nothing redraws it now
    y = [f"{year}-01-01" for year in range(2001, 2008)]
    cases = [  # (start, end, status, status_to_display)
        (y[0], y[1], "READY", "ONLINE"),
        (y[1], y[2], "READY", "LOCKED"),
        (y[1], y[2], "NEW", "REFRESHING"),
        (y[3], y[5], "READY", "ONLINE"),  # a gap [2003, 2004) before it
        (y[4], y[6], "WARNING", "OVERLAP"),  # overlaps [2005, 2006) of the one before
        (y[6], "2007-06-01", "NEW", "LOADING"),
    ]
    found = page.evaluate(
        """async (cases) => {
            const { drawTimeline, gaps, overlaps } = await import("/web/js/timeline.js");
            const host = document.createElement("div");
            host.className = "timeline-host";
            host.style.width = "1100px";
            host.style.background = "#fff";
            document.body.append(host);  // outside the page's frame, which the router redraws
            const ms = (d) => String(Date.parse(d + "T00:00:00Z"));
            const segs = cases.map(([a, b, status, shown], i) => ({
                id: "s" + i, name: `${a}_${b}_${i}`, status, status_to_display: shown,
                segRange: { date_range_start: ms(a), date_range_end: ms(b) },
                source_count: 1000 * (i + 1), bytes_size: 4096, index_count: 3, index_count_total: 3, last_build_time: 0,
            }));
            drawTimeline(host, segs, {});
            const items = segs.map((s) => ({ ...s, start: +s.segRange.date_range_start, end: +s.segRange.date_range_end }));
            return {
                gaps: gaps(items).map(([a, b]) => [new Date(a).toISOString().slice(0, 10), new Date(b).toISOString().slice(0, 10)]),
                overlaps: overlaps(items).map(([a, b]) => [new Date(a).toISOString().slice(0, 10), new Date(b).toISOString().slice(0, 10)]),
                drawnGaps: host.querySelectorAll("rect.gap").length,
                drawnOverlaps: host.querySelectorAll("rect.overlap-mark").length,
                tones: [...host.querySelectorAll("g.seg")].map((g) => g.dataset.status),
                lanes: new Set([...host.querySelectorAll("g.seg .seg-box")].map((r) => r.getAttribute("y"))).size,
            };
        }""",
        cases,
    )
    assert found["gaps"] == [["2003-01-01", "2004-01-01"]] and found["drawnGaps"] == 1
    assert found["overlaps"] == [["2005-01-01", "2006-01-01"]] and found["drawnOverlaps"] == 1
    assert sorted(found["tones"]) == sorted(["ready", "locked", "refreshing", "ready", "overlap", "new"])
    assert found["lanes"] >= 2  # the refreshing segment sits above the one it replaces
    shot(page, tmp_path, "timeline-states", page.locator("body > .timeline-host"))
