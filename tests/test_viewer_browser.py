"""The results viewer in a real headless Chromium: a run of 10,000 samples, filtered, a sample opened,
two runs compared. Skipped without Chromium unless BQAS_REQUIRE_BROWSER=1 (CI). Screenshots of each page
go to BQAS_SCREENSHOTS (default artifacts/screenshots/, git-ignored) for the CI artifact."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bqas.review.local import LocalReview
from bqas.review.settings import ReviewSettings
from bqas.service.testing import ServiceServer
from bqas.store.db import open_store
from test_review_browser import _wait, browser  # noqa: F401 - the fixture
from viewer_runs import make_run

SHOTS = Path(os.environ.get("BQAS_SCREENSHOTS") or Path(__file__).resolve().parents[1] / "artifacts" / "screenshots")


def _shot(driver: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 1000


def test_a_run_of_10000_samples_filtered_opened_and_compared(browser: Any, bqas_home: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    store = open_store()
    make_run(store, "r-big-a", 10_000, seed=1)
    make_run(store, "r-big-b", 10_000, seed=2, shift=-6.0)
    local = LocalReview(store, ReviewSettings(), landing="/review/runs/r-big-b")
    with ServiceServer(local.app) as server:
        browser.get(server.base_url + local.start_path)
        _wait(browser, lambda d: d.current_url.endswith("/review/runs/r-big-b"))
        assert "10000 result(s) match the filter" in browser.find_element(By.TAG_NAME, "h1").text
        assert len(browser.find_elements(By.CSS_SELECTOR, "#results tr.row")) == 50  # one page, not 10,000
        _shot(browser, "viewer-run.png")

        # Filter: Chinese, failed, tag regression, changed against run A.
        Select(browser.find_element(By.ID, "f-language")).select_by_value("zh")
        Select(browser.find_element(By.ID, "f-verdict")).select_by_value("failed")
        Select(browser.find_element(By.ID, "f-tag")).select_by_value("regression")
        Select(browser.find_element(By.ID, "f-baseline")).select_by_value("r-big-a")
        Select(browser.find_element(By.ID, "f-changed")).select_by_value("yes")
        browser.find_element(By.ID, "filter-submit").click()
        _wait(browser, lambda d: "changed=yes" in d.current_url)
        rows = browser.find_elements(By.CSS_SELECTOR, "#results tr.row")
        assert rows and all("changed" in (r.get_attribute("class") or "") for r in rows)
        cells = [r.find_elements(By.TAG_NAME, "td") for r in rows]
        assert all(c[3].text == "zh" and c[5].text.startswith("failed") for c in cells)
        assert all(c[7].text != "failed" for c in cells)  # the baseline verdict differs
        _shot(browser, "viewer-filtered.png")

        # Open a sample (the row is a link), then the same sample under the baseline.
        sample = cells[0][1].text
        rows[0].click()
        _wait(browser, lambda d: "/results/" in d.current_url)
        assert browser.find_element(By.ID, "sample-title").text.startswith(sample)
        assert "上海" in browser.find_element(By.ID, "inputs").text  # CJK text shown
        assert browser.find_elements(By.CSS_SELECTOR, "#dimensions tr")
        _shot(browser, "viewer-sample.png")
        browser.find_element(By.ID, "baseline-link").click()
        _wait(browser, lambda d: "/review/runs/r-big-a/results/" in d.current_url)
        assert browser.find_element(By.ID, "sample-title").text.startswith(sample)

        # Compare the two runs: changed verdicts first, the bootstrap interval of the composite.
        browser.get(f"{server.base_url}/review/runs/compare?a=r-big-a&b=r-big-b")
        _wait(browser, lambda d: d.find_elements(By.ID, "pairs"))
        if browser.find_elements(By.ID, "computing"):  # 10,000 pairs on a loaded machine: reload when ready
            _shot(browser, "viewer-compare-computing.png")
            _wait(browser, lambda d: d.refresh() or not d.find_elements(By.ID, "computing"), timeout=120)
        first = browser.find_element(By.ID, "pair-1")
        assert "changed" in (first.get_attribute("class") or "")
        composite = next(r for r in browser.find_elements(By.CSS_SELECTOR, "#dims tr") if "composite_score" in r.text)
        assert "[" in composite.text and "," in composite.text  # the 95 % interval
        _shot(browser, "viewer-compare.png")


def test_the_llm_exchange_and_a_repeated_run_in_chromium(browser: Any, bqas_home: Path, tmp_path: Path) -> None:  # noqa: F811
    """A hostile LLM reply stays text on the sample page; a repeated run lists one row per sample, the
    straddling filter works, and the sample page lists the repeats."""
    import json

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from bqas.testing.scripted_llm import Reply, ScriptedLLM
    from test_viewer_exchange import GOOD, _run
    from test_viewer_exchange import _scenario as exchange_scenario
    from test_viewer_repeats import _two_repeated_runs

    hostile = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script> {{ 7*7 }}'
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD))) as llm:
        llm.push(Reply(content=hostile))
        (tmp_path / "x").mkdir()
        llm_run = _run(
            exchange_scenario(tmp_path / "x", "llm"),
            tmp_path / "x" / "out",
            "--base-url",
            llm.base_url,
            "--model",
            "m1",
        )
    store, _run_a, run_b = _two_repeated_runs(tmp_path)
    local = LocalReview(store, ReviewSettings(), landing=f"/review/runs/{llm_run}")
    with ServiceServer(local.app) as server:
        browser.get(server.base_url + local.start_path)
        _wait(browser, lambda d: d.current_url.endswith(f"/review/runs/{llm_run}"))
        browser.find_element(By.CSS_SELECTOR, "#results tr.row").click()
        _wait(browser, lambda d: "/results/" in d.current_url)
        first = browser.find_element(By.ID, "attempt-1")
        assert hostile in first.find_element(By.CLASS_NAME, "reply").text  # shown as text, not run
        assert browser.title != "pwned" and not browser.find_elements(
            By.CSS_SELECTOR, "#exchange img, #exchange script"
        )
        assert browser.find_elements(By.ID, "attempt-2") and browser.find_elements(By.ID, "prompt-verified")
        assert "<<<DATA user_input" in browser.find_element(By.ID, "exchange").text
        browser.execute_script("document.getElementById('exchange').scrollIntoView()")
        _shot(browser, "viewer-exchange.png")

        browser.get(f"{server.base_url}/review/runs/{run_b}")
        _wait(browser, lambda d: d.find_elements(By.ID, "settled-note"))
        assert "3 sample(s) match the filter" in browser.find_element(By.TAG_NAME, "h1").text
        Select(browser.find_element(By.ID, "f-straddles")).select_by_value("yes")
        browser.find_element(By.ID, "filter-submit").click()
        _wait(browser, lambda d: "straddles=yes" in d.current_url)
        rows = browser.find_elements(By.CSS_SELECTOR, "#results tr.row")
        assert len(rows) == 1 and "straddles" in rows[0].text
        _shot(browser, "viewer-repeats.png")
        rows[0].click()
        _wait(browser, lambda d: "/results/" in d.current_url)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#repeat-list tr")) == 4  # header + 3 repeats
        _shot(browser, "viewer-repeats-sample.png")
