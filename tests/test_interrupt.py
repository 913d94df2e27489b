"""Ctrl-C (SIGINT) or SIGTERM in the middle of ``bqas run``: the work in flight stops, what finished is
stored, the command prints at most three lines, no traceback, the exact resume command, and exits 130 / 143;
the resume then finishes every sample exactly once. A real ``bqas`` process, a real assistant and a real
(scripted) LLM server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bqas.testing.scripted_llm import Reply, ScriptedLLM
from target_support import ServedApp, json_app, records, voice_samples, write_scenario

BQAS = str(Path(sys.executable).parent / "bqas")
NOISE = ("Traceback", "Task was destroyed", "Event loop is closed", "Exception ignored", "never awaited")
ANSWER = {
    "intent_accuracy": 100,
    "faithfulness": 5,
    "relevance": 5,
    "coherence": 5,
    "safety": "pass",
    "reasoning": "ok",
}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BQAS_LLM") and k != "BQAS_JUDGE_MODEL"}
    env.update({"BQAS_HOME": str(tmp_path / "home"), "COLUMNS": "80", **extra})
    return env


def _stop_midway(cmd: list[str], env: dict[str, str], cwd: Path, started: Any, sig: int) -> tuple[int, str]:
    """Start ``cmd``, send ``sig`` once ``started()`` is true, return its exit code and stderr."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not started() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def _resume_command(err: str) -> list[str]:
    found = re.search(r"resume with `(bqas run --resume r-[\w-]+)`", err)
    assert found, err
    return shlex.split(found.group(1))


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_target_run_stops_cleanly_and_resumes_exactly(tmp_path: Path, sig: int, code: int) -> None:
    calls: list[str] = []

    async def slow_assistant(request: web.Request, body: dict[str, Any]) -> web.Response:
        calls.append(str(body["text"]))
        await asyncio.sleep(0.2)
        return web.json_response({"answer": f"Gern: {body['text']}", "intent": {"name": "reminder"}})

    samples = voice_samples(30)
    with ServedApp(json_app(slow_assistant)) as served:
        target = {
            "type": "http",
            "url": f"{served.url}/chat",
            "body": {"text": "{user_input}"},
            "outputs": {"response": "$.answer", "detected_intent": "$.intent.name"},
            "concurrency": 2,
        }
        scenario = write_scenario(tmp_path, samples, target)
        env = _env(tmp_path)
        cmd = [BQAS, "run", str(scenario), "--out", str(tmp_path / "out"), "--no-progress"]
        rc, err = _stop_midway(cmd, env, tmp_path, lambda: len(calls) >= 8, sig)
        assert rc == code, err
        lines = err.strip().splitlines()
        assert len(lines) <= 3 and not [n for n in NOISE if n in err], err
        asked_before = len(calls)
        resume = _resume_command(err)
        assert asked_before < len(samples)
        done = subprocess.run([BQAS, *resume[1:]], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    recs = records(tmp_path / "out")
    per_sample = Counter(r["sample_id"] for r in recs)
    assert sorted(per_sample) == sorted(s["id"] for s in samples) and set(per_sample.values()) == {1}
    assert all(r["status"] == "scored" for r in recs)
    # Asked again on resume: only the samples whose call was in flight when the signal came (concurrency 2).
    assert len(calls) - len(samples) <= 2, len(calls)


def test_an_llm_run_without_a_target_stops_cleanly(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"v{i}",
            "user_input": f"Erinnere mich an Termin {i}",
            "detected_intent": "reminder",
            "response": f"Ich erinnere dich an Termin {i}.",
            "expected_intent": "reminder",
        }
        for i in range(40)
    ]
    with ScriptedLLM(default=Reply(content=json.dumps(ANSWER), delay=0.2)) as llm:
        scenario = write_scenario(tmp_path, rows, None, backend="llm", concurrency=2)
        env = _env(tmp_path, BQAS_LLM_BASE_URL=llm.base_url, BQAS_JUDGE_MODEL="m", BQAS_LLM_CACHE="false")
        cmd = [BQAS, "run", str(scenario), "--out", str(tmp_path / "out"), "--no-progress"]
        rc, err = _stop_midway(cmd, env, tmp_path, lambda: len(llm.requests) >= 6, signal.SIGINT)
        assert rc == 130, err
        assert len(err.strip().splitlines()) <= 3 and not [n for n in NOISE if n in err], err
        done = subprocess.run(
            [BQAS, *_resume_command(err)[1:]], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stdout + done.stderr
    per_sample = Counter(r["sample_id"] for r in records(tmp_path / "out"))
    assert len(per_sample) == len(rows) and set(per_sample.values()) == {1}
