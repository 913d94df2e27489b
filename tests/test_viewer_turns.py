"""The viewer shows what a reader needs to judge a result: a sample the assistant gave no answer for
still shows its inputs (what the assistant was asked), and a conversation turn shows the earlier turns
(user and assistant) above it. Real runs against a real assistant on 127.0.0.1, real pages."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.review.local import LocalReview
from bqas.review.settings import ReviewSettings
from bqas.service.testing import ServiceServer
from bqas.store.db import open_store
from target_support import ServedApp, json_app, write_scenario


def _assistant() -> web.Application:
    async def handler(request: web.Request, body: dict[str, Any]) -> web.Response:
        text = str(body["text"])
        if "kaputt" in text:
            return web.json_response({"error": "down"}, status=500)
        return web.json_response({"answer": f"Antwort auf: {text}", "intent": {"name": "reminder"}})

    return json_app(handler)


def test_target_error_inputs_and_earlier_turns_are_shown(tmp_path: Path, bqas_home: Path) -> None:
    samples = [
        {"id": "broken", "user_input": "Das ist kaputt, erinnere mich", "expected_intent": "reminder"},
        {
            "id": "conv",
            "expected_intent": "reminder",
            "turns": [
                {"user_input": "Erinnere mich an die Konferenz"},
                {"user_input": "Und an die Notenabgabe am Freitag"},
            ],
        },
    ]
    with ServedApp(_assistant()) as served:
        target = {
            "type": "http",
            "url": f"{served.url}/chat",
            "body": {"text": "{user_input}"},
            "outputs": {"response": "$.answer", "detected_intent": "$.intent.name"},
            "retries": 0,
        }
        scenario = write_scenario(tmp_path, samples, target, thresholds={"max_target_errors": 1})
        result = CliRunner().invoke(app, ["run", str(scenario), "--out", str(tmp_path / "o"), "--no-progress"])
    assert result.exit_code == 0, result.output
    run_id = re.search(r"run (r-[\w-]+)", result.output)
    assert run_id is not None
    local = LocalReview(open_store(), ReviewSettings())
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url) as client:
        client.get(local.start_path)
        broken = client.get(f"/review/runs/{run_id.group(1)}/results/broken").text
        inputs = broken.split('id="inputs"', 1)[1].split("</dl>", 1)[0]
        assert "Das ist kaputt, erinnere mich" in inputs, inputs
        second = client.get(f"/review/runs/{run_id.group(1)}/results/conv%231").text
        assert 'id="earlier-turns"' in second
        earlier = second.split('id="earlier-turns"', 1)[1].split("</dl>", 1)[0]
        assert "Erinnere mich an die Konferenz" in earlier and "Antwort auf: Erinnere mich an die Konferenz" in earlier
        assert "Notenabgabe" not in earlier  # this turn itself is below, under Inputs
        first = client.get(f"/review/runs/{run_id.group(1)}/results/conv%230").text
        assert 'id="earlier-turns"' not in first


def test_compare_shows_both_answers_with_their_verdicts_side_by_side(bqas_home: Path) -> None:
    store = open_store()
    answers = {"r-a": "Ich erinnere dich morgen an die Konferenz.", "r-b": "Ich erinnere dich um 8 Uhr an die Party."}
    verdicts = {"r-a": "production_ready", "r-b": "needs_review"}
    for run_id in ("r-a", "r-b"):
        store.create_run(run_id, "compare-test", {"judges": ["voice"]}, total=1)
        record = {
            "run_id": run_id,
            "sample_id": "s1",
            "judge": "voice",
            "status": "scored",
            "verdict": verdicts[run_id],
            "composite_score": 90.0 if run_id == "r-a" else 60.0,
            "dimensions": {},
            "inputs": {"user_input": "Erinnere mich morgen an die Konferenz", "response": answers[run_id]},
        }
        store.add_results(run_id, [("s1::voice", 0, record)])
        store.update_run(run_id, status="done")
    local = LocalReview(store, ReviewSettings())
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url) as client:
        client.get(local.start_path)
        page = client.get("/review/runs/compare", params={"a": "r-a", "b": "r-b"}).text
    row = page.split('id="answers-1"', 1)[1].split("</tr>", 1)[0]
    cell_a, cell_b = row.split('class="answer-b"', 1)
    assert "answer A (production_ready)" in cell_a and answers["r-a"] in cell_a
    assert "answer B (needs_review)" in cell_b and answers["r-b"] in cell_b
    assert "<del>morgen</del>" in page and "<ins>um 8 Uhr</ins>" in page  # the text difference
