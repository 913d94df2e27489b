"""Bidi controls in untrusted values cannot spoof a page: on report.html, the viewer's pages and the review
pages every U+202A-E and U+2066-9 of an id or a text is shown as a visible escape (``\\u202e``), and text
with right-to-left letters is isolated (FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE, as ``<bdi>``).
Form fields send back what they were given."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.review.local import LocalReview
from bqas.review.queue import enqueue_escalations
from bqas.review.settings import ReviewSettings
from bqas.service.testing import ServiceServer
from bqas.store.db import open_store
from bqas.tenants import LOCAL_TENANT
from bqas.textsafe import bidi_isolated
from test_review_support import voice_record

RLO = "\u202e"
SPOOF_ID = f"invoice{RLO}fdp.exe"  # shows as "invoiceexe.pdf" when the override is applied
ARABIC = "مرحبا بك"
RAW_CONTROLS = re.compile("[\u202a-\u202e\u2066\u2067]")


def assert_isolated(html: str, where: str) -> None:
    """No raw embedding, override or isolate initiator but ours, and every isolate of ours closed in order."""
    assert not RAW_CONTROLS.search(html), (where, RAW_CONTROLS.findall(html)[:3])
    depth = 0
    for ch in re.findall("[\u2068\u2069]", html):
        depth += 1 if ch == "\u2068" else -1
        assert depth >= 0, f"{where}: a POP DIRECTIONAL ISOLATE without its isolate"
    assert depth == 0, f"{where}: an isolate left open"


def test_bidi_isolated_shows_controls_and_isolates_right_to_left_text() -> None:
    assert bidi_isolated(SPOOF_ID) == "invoice\\u202efdp.exe"
    assert bidi_isolated(ARABIC) == f"\u2068{ARABIC}\u2069"
    assert bidi_isolated("Grüße 你好 ✓ (12)") == "Grüße 你好 ✓ (12)"  # left-to-right text untouched
    # A stray PDI cannot close our isolate early and let an override out.
    assert bidi_isolated(f"\u2069{RLO}{ARABIC}") == f"\u2068\\u2069\\u202e{ARABIC}\u2069"


@pytest.fixture
def hostile_run(tmp_path: Path, bqas_home: Path) -> tuple[str, Path]:
    rows = [
        {"id": SPOOF_ID, "response": f"Ich erinnere dich {RLO}gromrom{RLO} um 8 Uhr."},
        {"id": f"ar-{ARABIC}", "response": f"{ARABIC} (12:30) Ich erinnere dich morgen."},
        {"id": "plain", "response": "Ich erinnere dich morgen um 8 Uhr."},
    ]
    base = {"user_input": "Erinnere mich morgen", "detected_intent": "reminder", "expected_intent": "reminder"}
    data = "".join(json.dumps({**base, **r}, ensure_ascii=False) + "\n" for r in rows)
    (tmp_path / "data.jsonl").write_text(data, encoding="utf-8")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: bidi {RLO}evil\njudges: [voice]\nbackend: offline\ndataset: data.jsonl\n", "utf-8")
    result = CliRunner().invoke(app, ["run", str(scenario), "--no-progress", "--out", str(tmp_path / "o")])
    assert result.exit_code in (0, 1), result.output
    run_id = json.loads(CliRunner().invoke(app, ["runs", "--json"]).output)[0]["id"]
    return run_id, tmp_path / "o"


def test_report_html_isolates_every_value(hostile_run: tuple[str, Path]) -> None:
    html = (hostile_run[1] / "report.html").read_text(encoding="utf-8")
    assert_isolated(html, "report.html")
    assert "invoice\\u202efdp.exe" in html and "bidi \\u202eevil" in html  # ids and names show the control
    assert f"\u2068{ARABIC}" in html


def test_viewer_and_review_pages_isolate_every_value(hostile_run: tuple[str, Path]) -> None:
    run_id, _ = hostile_run
    store = open_store()
    hostile = voice_record(SPOOF_ID, reasons=[f"borderline {RLO}58 in 75-85"], source=run_id)
    hostile["inputs"] = {"user_input": ARABIC, "response": f"{RLO}txt.exe"}
    enqueue_escalations(store, LOCAL_TENANT, [hostile], source=run_id)
    local = LocalReview(store, ReviewSettings())
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url) as client:
        client.get(local.start_path)
        pages = {"runs": client.get("/review/runs").text, "run": client.get(f"/review/runs/{run_id}").text}
        results = re.findall(r'id="res-(\d+)"', pages["run"])
        assert len(results) == 3
        for result in results:
            pages[f"result {result}"] = client.get(f"/review/runs/{run_id}/results/{result}").text
        compare = client.get("/review/runs/compare", params={"a": run_id, "b": run_id})
        pages["compare"] = compare.text
        pages["queue"] = client.get("/review/queue").text
        items = re.findall(r'id="item-(\d+)"', pages["queue"])
        assert items, pages["queue"][:500]
        pages["item"] = client.get(f"/review/items/{items[0]}").text
        searched = client.get(f"/review/runs/{run_id}", params={"q": ARABIC}).text
    for name, html in pages.items():
        assert_isolated(html, name)
    assert "invoice\\u202efdp.exe" in pages["run"] and "invoice\\u202efdp.exe" in pages["queue"]
    assert any(f"\u2068ar-{ARABIC}\u2069" in html for html in pages.values())
    assert "\\u202etxt.exe" in pages["item"] and f"\u2068{ARABIC}\u2069" in pages["item"]
    # The search box sends back what was typed, without the isolation around it.
    assert f'value="{ARABIC}"' in searched and 'id="res-' in searched
