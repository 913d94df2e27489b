"""The review page in a real headless Chromium (Debian's chromium + chromium-driver, driven by selenium).

Skipped when the browser or driver is missing, unless BQAS_REQUIRE_BROWSER=1 (CI), where it fails.
Set BQAS_REVIEW_SCREENSHOTS=DIR to keep screenshots of the queue and the item page.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from bqas.review import gold_records
from bqas.review.queue import ItemFilter, get_item, list_items
from bqas.service.testing import ServiceServer
from bqas.store.db import open_store
from test_review_page import build_site

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path("/usr/bin/chromedriver")


def _missing() -> str | None:
    lacking = [str(p) for p in (CHROMIUM, DRIVER) if not p.exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        lacking.append("the selenium package")
    return ", ".join(lacking) or None


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    missing = _missing()
    if missing:
        message = f"headless Chromium test needs {missing} (apt-get install -y chromium chromium-driver; uv pip install selenium)"
        if os.environ.get("BQAS_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " and BQAS_REQUIRE_BROWSER=1 is set")
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: Any, predicate: Any, timeout: float = 10.0) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(predicate)


def _shot(driver: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 1000
    keep = os.environ.get("BQAS_REVIEW_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / name)


def test_review_in_a_real_browser(browser: Any, bqas_home: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    store = open_store()
    app, acme_key, _beta = build_site(store)
    beta_item = list_items(store, "beta", ItemFilter())[0][0].id
    with ServiceServer(app) as server:
        base = server.base_url
        browser.get(f"{base}/review/queue")  # not logged in: the login form
        _wait(browser, lambda d: "/review/login" in d.current_url)
        browser.find_element(By.ID, "api_key").send_keys(acme_key)
        browser.find_element(By.ID, "login-submit").click()
        _wait(browser, lambda d: d.current_url.endswith("/review/queue"))
        rows = browser.find_elements(By.CSS_SELECTOR, "tr.row")
        assert len(rows) == 3 and "beta-only-sample" not in browser.page_source
        _shot(browser, tmp_path, "review-queue.png")
        cookie = browser.get_cookie("bqas_review")
        assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert browser.execute_script("return document.cookie").find("bqas_review") == -1  # HttpOnly

        # Keyboard: j moves the selection to the second row, Enter opens it.
        body = browser.find_element(By.TAG_NAME, "body")
        second = rows[1].get_attribute("id")
        body.send_keys("j")
        assert "sel" in browser.find_element(By.ID, second).get_attribute("class")
        body.send_keys(Keys.ENTER)
        item_id = int(second.removeprefix("item-"))
        _wait(browser, lambda d: f"/review/items/{item_id}" in d.current_url)
        assert browser.find_element(By.ID, "reasons").text
        _shot(browser, tmp_path, "review-item.png")

        # Review by keyboard: 3 = failed, a dimension typed in, Esc leaves the field, s saves.
        browser.find_element(By.TAG_NAME, "body").send_keys("3")
        assert browser.find_element(By.ID, "verdict-failed").is_selected()
        field = browser.find_element(By.ID, "dim_faithfulness")
        field.clear()
        field.send_keys("2")
        comment = browser.find_element(By.ID, "comment")
        comment.send_keys("Zu ungenau; s und j tippen bleibt Text")
        comment.send_keys(Keys.ESCAPE)
        browser.find_element(By.TAG_NAME, "body").send_keys("s")
        _wait(browser, lambda d: "saved=" in d.current_url)
        assert f"Saved item {item_id}." in browser.find_element(By.ID, "flash").text
        reviewed = get_item(store, "acme", item_id)
        assert reviewed is not None and reviewed.status == "reviewed"
        assert reviewed.human_verdict == "failed" and reviewed.human_values is not None
        assert reviewed.human_values["faithfulness"] == 2
        assert reviewed.comment == "Zu ungenau; s und j tippen bleibt Text"

        # The next open item is shown; review it with the mouse.
        next_id = int(browser.current_url.split("/items/")[1].split("?")[0])
        assert next_id != item_id
        browser.find_element(By.CSS_SELECTOR, "label:has(#verdict-production_ready)").click()
        browser.find_element(By.ID, "save").click()
        _wait(browser, lambda d: f"saved={next_id}" in d.current_url)
        assert get_item(store, "acme", next_id).human_verdict == "production_ready"  # type: ignore[union-attr]

        # Another tenant's item is a 404 in the browser too.
        browser.get(f"{base}/review/items/{beta_item}")
        assert "No such review item" in browser.page_source

        # The queue (status any) shows both as reviewed.
        browser.get(f"{base}/review/queue?status=reviewed")
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr.row")) == 2

    lines = gold_records(store, "acme")
    assert {line["id"]: line["expected"]["verdict"] for line in lines} == {
        get_item(store, "acme", item_id).response_id: "failed",  # type: ignore[union-attr]
        get_item(store, "acme", next_id).response_id: "production_ready",  # type: ignore[union-attr]
    }
    from bqas.cli import review as review_cli

    app_cli = typer.Typer()
    review_cli.register(app_cli)
    out = tmp_path / "gold.jsonl"
    result = CliRunner().invoke(app_cli, ["gold", "export", "--tenant", "acme", "--out", str(out)])
    assert result.exit_code == 0, result.output
    exported = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [x["expected"] for x in exported] == [x["expected"] for x in lines]
    assert any(x["comment"] == "Zu ungenau; s und j tippen bleibt Text" for x in exported)


def _fractional(rid: str) -> dict[str, Any]:
    """A voice record as the offline tier writes it: relevance 1.92 on a whole-number 1-5 dimension."""
    from test_review_support import voice_record

    record = voice_record(rid, composite=78.0, reasons=["borderline composite 78 in 75-85"], source="r-frac")
    record["dimensions"]["relevance"].update(value=1.92, backend="offline", method="embedding_similarity")
    record["relevance"] = 1.92
    return record


def test_every_item_saves_with_two_keystrokes_and_gold_holds_only_what_the_reviewer_set(
    browser: Any, bqas_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selenium.webdriver.common.by import By

    from bqas.cli.main import app as main_app
    from bqas.judgment.spec import default_registry
    from bqas.review import enqueue_escalations
    from bqas.settings import get_settings

    store = open_store()
    app, acme_key, _beta = build_site(store)
    enqueue_escalations(store, "acme", [_fractional(f"frac{i}") for i in range(3)], registry=default_registry())
    ids = {i.response_id: i.id for i in list_items(store, "acme", ItemFilter())[0]}
    with ServiceServer(app) as server:
        base = server.base_url
        browser.get(f"{base}/review/login")
        browser.find_element(By.ID, "api_key").send_keys(acme_key)
        browser.find_element(By.ID, "login-submit").click()
        _wait(browser, lambda d: d.current_url.endswith("/review/queue"))

        # Two keystrokes: a verdict and s. The fractional judge value is shown, not pre-filled.
        browser.get(f"{base}/review/items/{ids['frac0']}")
        relevance = browser.find_element(By.ID, "dim_relevance")
        assert relevance.get_attribute("value") == "" and "1.92" in (relevance.get_attribute("placeholder") or "")
        body = browser.find_element(By.TAG_NAME, "body")
        body.send_keys("2")
        body.send_keys("s")
        _wait(browser, lambda d: f"saved={ids['frac0']}" in d.current_url)
        first = get_item(store, "acme", ids["frac0"])
        assert first is not None and first.status == "reviewed" and first.human_verdict == "needs_review"
        assert first.human_values == {}

        # One field typed: only that field is the reviewer's.
        browser.get(f"{base}/review/items/{ids['frac1']}")
        browser.find_element(By.TAG_NAME, "body").send_keys("3")
        browser.find_element(By.ID, "dim_faithfulness").send_keys("2")
        browser.find_element(By.ID, "save").click()
        _wait(browser, lambda d: f"saved={ids['frac1']}" in d.current_url)
        second = get_item(store, "acme", ids["frac1"])
        assert second is not None and second.human_values == {"faithfulness": 2}

        # "a" confirms every judge value explicitly; the whole-number field takes 1.92 rounded.
        browser.get(f"{base}/review/items/{ids['frac2']}")
        body = browser.find_element(By.TAG_NAME, "body")
        body.send_keys("1")
        body.send_keys("a")
        assert browser.find_element(By.ID, "confirm_relevance").is_selected()
        body.send_keys("s")
        _wait(browser, lambda d: f"saved={ids['frac2']}" in d.current_url)
        third = get_item(store, "acme", ids["frac2"])
        assert third is not None and third.human_values == {
            "intent_accuracy": 100.0,
            "faithfulness": 4,
            "relevance": 2,
            "coherence": 4,
            "safety": "pass",
        }

    # Export and calibrate the label with one reviewed field: no other dimension is compared.
    monkeypatch.setenv("BQAS_DATABASE_URL", store.engine.url.render_as_string(hide_password=False))
    get_settings.cache_clear()
    with store.session.begin() as s:  # keep only the one-field label in the gold set
        from sqlalchemy import update

        from bqas.review.tables import ReviewItem

        s.execute(update(ReviewItem).where(ReviewItem.id.in_([ids["frac0"], ids["frac2"]])).values(status="dismissed"))
    out = tmp_path / "gold.jsonl"
    runner = CliRunner()
    exported = runner.invoke(main_app, ["gold", "export", "--tenant", "acme", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [x["expected"] for x in lines] == [{"verdict": "failed", "faithfulness": 2}]
    result = runner.invoke(
        main_app, ["calibrate", "--gold", str(out), "--judge", "voice", "--backend", "offline", "--json"]
    )
    assert result.exit_code in (0, 1, 3), result.output  # one label decides no target
    doc = json.loads(result.stdout[result.stdout.index("{") :])
    assert set(doc["configs"][0]["calibration"]["overall"]["dimensions"]) == {"faithfulness"}
