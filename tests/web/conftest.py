"""Fixtures of the web UI's tests: one server of their own (its own home: these tests build and merge
segments, the shared `live` project stays as the server tests expect it) over a small SSB project, and one
headless Debian chromium driven by Playwright for the whole run (never Playwright's own browser download).

`PRECUBE_SCREENSHOTS=DIR` also copies every screenshot the tests take into DIR (the tests always save them
under their own temporary directory)."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from precube.auth import Permission
from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import TimeRange, open_store
from tests.query.conftest import day
from tests.server.conftest import server_settings
from tests.server.live import ADMIN, LiveServer
from tests.server.tiny import MODEL, make_project

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page
    from pyspark.sql import SparkSession

CHROMIUM = "/usr/bin/chromium"
# Debian's chromium, headless, with nothing that reaches the network on its own (the machine has none)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PROJECT = "web"
ANALYST = ("analyst", "Analy5t-pass!")
# the project's first two segments, built before the server starts: [1992, 1993) and [1993, 1994)
BOUNDS = ("1992-01-01", "1993-01-01", "1994-01-01")


@dataclass(frozen=True)
class WebServer:
    server: LiveServer
    project: str
    model: str
    ssb_dir: Path

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="session")
def web(spark: SparkSession, ssb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    """A server running jobs over project `web`: model `tiny` (LINEORDER ⋈ DATES) with two segments, and a
    user with QUERY only."""
    # every answer is cached (however quick), so the cache page and a re-run's cache hit have something to show
    settings = server_settings(tmp_path_factory.mktemp("web-home"), cache={"min_duration_ms": 0})
    make_project(settings, ssb_dir, PROJECT)
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        ctx = BuildContext(spark, store, PROJECT, settings.warehouse_root, writer="test")
        for start, end in itertools.pairwise(BOUNDS):
            build_segment(ctx, MODEL, TimeRange.of(day(start), day(end)))
    server = LiveServer(settings)
    server.state.directory.add_user(ANALYST[0], ANALYST[1], ["ROLE_ANALYST"])
    server.state.directory.grant(PROJECT, ANALYST[0], Permission.QUERY)
    yield WebServer(server, PROJECT, MODEL, ssb_dir)
    server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        message = (
            f"the web UI tests need Debian's chromium at {CHROMIUM}: apt-get install -y chromium (./dev test does)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        found = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield found
        found.close()


class Problems(list[str]):
    """What went wrong in the page: script errors and refused resources (a CSP violation is one)."""


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (no credentials kept) with one page; the test fails if a script error or a
    Content-Security-Policy refusal happened in it."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=1)
    context.set_default_timeout(30_000)
    found = context.new_page()
    problems = Problems()
    found.on("pageerror", lambda err: problems.append(f"script error: {err}"))

    def console(message: Any) -> None:
        # a request the API refused (4xx) is logged by the browser too; the tests expect some of those
        if message.type == "error" and "Failed to load resource" not in message.text:
            problems.append(f"console: {message.text}")

    found.on("console", console)
    yield found
    context.close()
    assert not problems, problems


def shot(page: Page, tmp_path: Path, name: str, element: Locator | None = None) -> Path:
    """Save a full-page screenshot (or one of `element`) under the test's temporary directory (and into
    $PRECUBE_SCREENSHOTS)."""
    path = tmp_path / f"{name}.png"
    if element is not None:
        element.screenshot(path=str(path))
    else:
        page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000  # a real picture of a page, not an empty one
    wanted = os.environ.get("PRECUBE_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(wanted) / path.name)
    return path


def sign_in(page: Page, url: str, user: tuple[str, str] = ADMIN, where: str = "/projects") -> None:
    """Sign in through the sign-in page, then open `where` (a hash route)."""
    page.goto(f"{url}/#/login?next={where}")
    page.get_by_label("User name").fill(user[0])
    page.get_by_label("Password").fill(user[1])
    page.get_by_role("button", name="Sign in").click()
    page.locator("[data-testid=user]").wait_for()
