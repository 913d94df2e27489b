"""The pytest plugin's ``--bqas-target`` makes no call whose answer could not be judged: a sample that lacks
what its judge needs besides the answer is reported invalid without asking the assistant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from target_support import ServedApp, json_app

pytest_plugins = ("pytester",)


def test_a_sample_the_judge_cannot_use_is_not_sent(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BQAS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BQAS_EMBEDDER", "hashing")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_assistant=r"""
import pytest

def test_not_sent(bqas_judge):
    with pytest.raises(ValueError, match=r"expected_intent: missing .* \(not sent to the target"):
        bqas_judge("voice", {"id": "a1", "user_input": "Erinnere mich an die Konferenz"})

def test_sent(bqas_judge):
    j = bqas_judge("voice", {"id": "a2", "user_input": "Erinnere mich an B", "expected_intent": "reminder"})
    assert j.record["target"]["status"] == 200, j.record
"""
    )
    calls: list[dict[str, Any]] = []

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        calls.append(body)
        return web.json_response({"answer": "Gern.", "intent": "reminder"})

    with ServedApp(json_app(answer)) as server:
        target = {
            "type": "http",
            "url": f"{server.url}/chat",
            "body": {"text": "{user_input}"},
            "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
        }
        result = pytester.runpytest_subprocess(
            "-p",
            "bqas.testing.pytest_plugin",
            "test_assistant.py",
            "--bqas-backend",
            "offline",
            "--bqas-target",
            json.dumps(target),
        )
    result.assert_outcomes(passed=2)
    assert [c["text"] for c in calls] == ["Erinnere mich an B"]
