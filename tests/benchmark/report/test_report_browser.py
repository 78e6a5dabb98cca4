"""The report in a real headless browser: Debian's chromium driven by Selenium through the system
chromedriver (``make browser`` installs both; the test skips with a one-line reason without them).

The page loads from file:// with no console error and no network request, the table filters, a
trajectory opens, a screenshot is kept (``artefacts/report-browser/report.png`` under the repository,
ignored by git; ``DRSEARCH_ARTEFACTS`` names another directory), and
1,000 synthetic episodes render in under 2 s: measured inside the page, from navigation start
until the table is filled (``performance.now()`` at the end of its script)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.benchmark.report import write_report

from ...helpers import REPO
from .conftest import Runs
from .synthetic import synthetic_run

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
RENDER_LIMIT_MS = 2000
ARTEFACTS = Path(os.environ.get("DRSEARCH_ARTEFACTS") or REPO / "artefacts") / "report-browser"


def _browser_missing() -> str | None:
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        return "no Debian chromium + chromium-driver (`make browser` installs them)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "no selenium (the dev extra)"
    return None


needs_browser = pytest.mark.skipif(_browser_missing() is not None, reason=_browser_missing() or "")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1300", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _requests(driver: Any) -> list[str]:
    """Every URL the page asked for since the last call (Chrome's performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def _open(driver: Any, page: Path) -> None:
    driver.get_log("browser")
    driver.get_log("performance")  # drop what earlier pages logged
    driver.get(page.as_uri())
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.find_element("tag name", "body").get_attribute("data-ready"))


def _shown(driver: Any) -> list[list[str]]:
    rows = driver.find_elements("css selector", "#questions tbody tr")
    return [[td.text for td in tr.find_elements("tag name", "td")] for tr in rows]


@needs_browser
def test_the_report_opens_from_disk_filters_and_shows_a_trajectory(browser: Any, graded_runs: Runs,
                                                                   tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    write_report([graded_runs.blocked, graded_runs.open], tmp_path / "rep")
    page = tmp_path / "rep/index.html"
    _open(browser, page)
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    assert _requests(browser) == [page.as_uri()]  # the page itself, nothing else
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert len(_shown(browser)) == 24
    # filter: one question's id leaves its two episodes (one per run); a verdict leaves only it
    qid = _shown(browser)[0][2]
    box = browser.find_element("id", "f-text")
    box.send_keys(qid)
    assert [r[2] for r in _shown(browser)] == [qid, qid]
    box.clear()
    browser.execute_script("arguments[0].dispatchEvent(new Event('input'))", box)
    Select(browser.find_element("id", "f-verdict")).select_by_value("correct")
    correct = _shown(browser)
    assert correct and all(r[4] == "correct" for r in correct) and len(correct) < 24
    Select(browser.find_element("id", "f-run")).select_by_value("run-b")
    assert all(r[0] == "run-b" for r in _shown(browser))
    Select(browser.find_element("id", "f-run")).select_by_value("")
    Select(browser.find_element("id", "f-verdict")).select_by_value("")
    # sort: the tokens header twice gives descending tokens
    header = browser.find_element("css selector", '#questions th[data-key="total_tokens"]')
    header.click()
    header.click()
    tokens = [int(r[8]) for r in _shown(browser)]
    assert tokens == sorted(tokens, reverse=True)
    # a trajectory opens on a row's click: turns, tool calls with their documents, the verdict
    trajectory = browser.find_element("id", "trajectory")
    assert not trajectory.is_displayed()
    browser.find_elements("css selector", "#questions tbody tr")[0].click()
    assert trajectory.is_displayed()
    text = trajectory.text
    assert "turn 0" in text and "search" in text and "final answer:" in text and "judge:" in text
    assert trajectory.find_elements("css selector", "li.doc code")  # docids of the documents returned
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
    assert _requests(browser) == []


@needs_browser
def test_a_thousand_episodes_render_in_under_two_seconds(browser: Any, tmp_path: Path) -> None:
    run, _ = synthetic_run(tmp_path / "syn", 1000)
    write_report([run], tmp_path / "rep")
    _open(browser, tmp_path / "rep/index.html")
    assert len(browser.find_elements("css selector", "#questions tbody tr")) == 1000
    ms = int(browser.find_element("tag name", "body").get_attribute("data-render-ms"))
    print(f"1,000 episodes rendered in {ms} ms")
    assert ms < RENDER_LIMIT_MS, ms
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_without_a_browser_the_skip_reason_is_one_line_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", Path("/nonexistent/chromium"))
    reason = _browser_missing()
    assert reason is not None and "\n" not in reason and "`make browser` installs them" in reason
