"""`bqas serve` measures its LLM judge on the known-answer sets once the models are loaded, and reports it:
per judge on /readyz (``judge_check``) and as ``bqas_judge_check_fit{judge,language}``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import open_store
from bqas.testing.scripted_llm import Reply, ScriptedLLM

CONSTANT = {"intent_accuracy": 0, "faithfulness": 1, "relevance": 1, "coherence": 1, "safety": "pass"}


def _readyz_when_checked(url: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        data: dict[str, Any] = httpx.get(f"{url}/readyz").json()
        if data.get("judge_check", {}).get("state") not in (None, "not run", "running"):
            return data
        time.sleep(0.2)
    raise AssertionError("the judge check did not finish")


def test_readyz_and_metrics_report_an_unfit_llm_judge(tmp_path: Path) -> None:
    reply = Reply(content=json.dumps({**CONSTANT, "reasoning": "test"}))
    with ScriptedLLM(default=reply) as llm:
        settings = Settings(
            home=tmp_path / "home", llm_cache=False, llm_base_url=llm.base_url, judge_model="broken", judge_check=True
        )
        store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
        service = ServiceSettings(job_poll_seconds=0.05, rate_limit=0, service_backend="llm")
        app = create_app(settings=settings, service=service, store=store, run_worker=False)
        with ServiceServer(app) as server:
            data = _readyz_when_checked(server.base_url)
            metrics = httpx.get(f"{server.base_url}/metrics").text
    check = data["judge_check"]
    assert check["state"] == "done", check
    voice = check["judges"]["voice.de"]
    assert voice["fit"] is False and voice["pairs_right"] == 0.0 and voice["model"] == "broken"
    assert voice["measured"] == "llm tier alone"
    assert any("below the floor" in r for r in voice["reasons"])
    assert 'bqas_judge_check_fit{judge="voice",language="de"} 0.0' in metrics


def test_an_offline_service_needs_no_check(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", llm_cache=False, judge_check=True)
    store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
    service = ServiceSettings(job_poll_seconds=0.05, rate_limit=0, service_backend="offline")
    with ServiceServer(create_app(settings=settings, service=service, store=store, run_worker=False)) as server:
        data = _readyz_when_checked(server.base_url)
    assert data["judge_check"] == {"state": "not needed (no LLM judge)", "judges": {}}
