"""Stored target replies: a killed run resumed asks each sample once and judges it once, another run's
replies are judged again without asking, and a secret given through the environment is nowhere."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.testing.scripted_llm import Reply, ScriptedLLM
from target_support import ServedApp, json_app, records, voice_samples, write_scenario

TARGET = {
    "type": "http",
    "body": {"text": "{user_input}"},
    "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
}


def _bqas(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bqas.cli.main", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def _count(db: Path, sql: str) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:  # not created yet, or being migrated
        return 0


def test_sigkill_then_resume_answers_and_judges_every_sample_once(tmp_path: Path, bqas_home: Path) -> None:
    n, first = 12, 5
    answered: dict[str, int] = {}
    hold = {"on": True}

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        text = body["text"]
        if hold["on"] and len(answered) >= first:
            await asyncio.Event().wait()  # the killed run's requests are never answered
        answered[text] = answered.get(text, 0) + 1
        return web.json_response({"answer": f"Gern: {text}", "intent": "reminder"})

    env = {**os.environ, "BQAS_HOME": str(bqas_home)}
    db = bqas_home / "bqas.sqlite"
    with ServedApp(json_app(answer)) as server:
        path = write_scenario(tmp_path, voice_samples(n), {**TARGET, "url": f"{server.url}/chat", "concurrency": 2})
        cmd = [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--no-progress", "--out", str(tmp_path / "o")]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 90
        while time.time() < deadline and _count(db, "SELECT COUNT(*) FROM results") < first:
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        stored_before = _count(db, "SELECT COUNT(*) FROM target_replies")
        judged_before = _count(db, "SELECT COUNT(*) FROM results")
        assert judged_before == first and stored_before == first, "killed in the middle, after 5 answers"
        with sqlite3.connect(db) as conn:
            run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
        hold["on"] = False
        resumed = _bqas("run", "--resume", run_id, "--no-progress", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"judged now: {n - first}" in resumed.stdout
    assert sorted(answered) == sorted(s["user_input"] for s in voice_samples(n))
    assert set(answered.values()) == {1}, answered  # every sample answered once
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT sample_key FROM results WHERE run_id = ?", (run_id,)).fetchall()
        replies = conn.execute("SELECT sample_id FROM target_replies WHERE run_id = ?", (run_id,)).fetchall()
    assert sorted(r[0] for r in rows) == sorted(f"s{i:03d}::voice" for i in range(n))  # judged once each
    assert len(replies) == n


def test_reuse_target_replies_judges_another_runs_answers_without_asking(tmp_path: Path, bqas_home: Path) -> None:
    calls: list[str] = []

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        calls.append(body["text"])
        return web.json_response({"answer": f"Gern: {body['text']}", "intent": "reminder"})

    runner = CliRunner()
    with ServedApp(json_app(answer)) as server:
        path = write_scenario(tmp_path, voice_samples(4), {**TARGET, "url": f"{server.url}/chat"})
        first = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "a"), "--no-progress"])
        assert first.exit_code == 0, first.output
        run_a = records(tmp_path / "a")[0]["run_id"]
        asked = len(calls)
        # A new judge configuration over the same answers: the intent judge reads user_input as text.
        again = runner.invoke(
            app,
            ["run", str(path), "--reuse-target-replies", run_a, "--out", str(tmp_path / "b"), "--no-progress"],
        )
        assert again.exit_code == 0, again.output
        assert len(calls) == asked == 4  # nobody asked the assistant again
    a = {r["response_id"]: r for r in records(tmp_path / "a")}
    b = {r["response_id"]: r for r in records(tmp_path / "b")}
    assert a.keys() == b.keys()
    for key in a:
        assert b[key]["inputs"]["response"] == a[key]["inputs"]["response"]
        assert b[key]["target"]["reused_from"] == run_a
        assert b[key]["target"]["latency_ms"] == a[key]["target"]["latency_ms"]
    assert "4 replies reused from an earlier run" in again.output
    missing = runner.invoke(app, ["run", str(path), "--reuse-target-replies", "r-nope", "--no-progress"])
    assert missing.exit_code == 2 and "--reuse-target-replies: no run with id 'r-nope'" in missing.output


def test_a_secret_from_the_environment_is_nowhere(tmp_path: Path, bqas_home: Path) -> None:
    """api_key_env and ${VAR}: the secret reaches the assistant and is in no file of BQAS_HOME or the outputs,
    no log line, and no page of the viewer."""
    token, key = "tok-SECRET-4711-abc", "sk-SECRET-0815-xyz"
    seen: list[str | None] = []

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        if body["text"].endswith(" 1"):
            return web.json_response({"error": "denied"}, status=403)
        if body["text"].endswith(" 2"):  # an assistant that repeats what it was sent
            return web.json_response({"answer": f"Du sagtest {request.headers['Authorization']}", "intent": "x"})
        return web.json_response({"answer": f"Gern: {body['text']}", "intent": "reminder"})

    env = {**os.environ, "BQAS_HOME": str(bqas_home), "ASSISTANT_TOKEN": token, "ASSISTANT_API_KEY": key}
    out = tmp_path / "out"
    with ServedApp(json_app(answer)) as server:
        http = {**TARGET, "url": f"{server.url}/chat?k=1", "headers": {"Authorization": "Bearer ${ASSISTANT_TOKEN}"}}
        path = write_scenario(tmp_path, voice_samples(3), http)
        ran = _bqas("run", str(path), "--out", str(out / "http"), "--no-progress", env=env)
    content = json.dumps({"answer": "Gern.", "intent": "reminder"})
    with ScriptedLLM(default=Reply(content=content)) as llm:
        openai = {
            "type": "openai",
            "base_url": llm.base_url,
            "model": "m",
            "api_key_env": "ASSISTANT_API_KEY",
            "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
        }
        path = write_scenario(tmp_path, voice_samples(2), openai)
        ran2 = _bqas("run", str(path), "--out", str(out / "openai"), "--no-progress", env=env)
    assert seen and all(h == f"Bearer {token}" for h in seen)  # it did reach the assistant
    assert ran.returncode == 1 and ran2.returncode == 0, ran.stderr + ran2.stderr
    logs = ran.stdout + ran.stderr + ran2.stdout + ran2.stderr
    failed = [r for r in records(out / "http") if r["status"] == "target_error"]
    assert len(failed) == 1 and "HTTP 403" in failed[0]["target_error"]
    echoed = next(r for r in records(out / "http") if r["response_id"] == "s002")
    assert echoed["inputs"]["response"] == "Du sagtest Bearer [secret ASSISTANT_TOKEN]"
    files = [p for root in (bqas_home, out) for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "bqas.sqlite" for p in files) and any(p.name == "report.html" for p in files)
    for secret in (token, key):
        assert secret not in logs
        for file in files:
            assert secret.encode() not in file.read_bytes(), f"{secret} in {file}"
    # The viewer's pages of both runs, every result.
    from bqas.review.local import LocalReview
    from bqas.review.settings import ReviewSettings
    from bqas.service.testing import ServiceServer
    from bqas.settings import get_settings
    from bqas.store.db import open_store

    get_settings.cache_clear()
    store = open_store()
    local = LocalReview(store, ReviewSettings())
    with ServiceServer(local.app) as served, httpx.Client(base_url=served.base_url) as client:
        client.get(local.start_path)
        pages = []
        for run in store.list_runs():
            pages.append(client.get(f"/review/runs/{run.id}").text)
            for i in range(1, 20):
                page = client.get(f"/review/runs/{run.id}/results/{i}")
                if page.status_code == 200:
                    pages.append(page.text)
    assert any('id="target"' in p and "raw reply" in p for p in pages)
    for secret in (token, key):
        assert not any(secret in p for p in pages)


def test_stored_replies_are_read_back_by_sample_and_turn(bqas_home: Path) -> None:
    from bqas.store.db import open_store

    store = open_store()
    store.create_run("r-x", "s", {})
    assert store.add_target_replies("r-x", [("a", 0, {"turn": 0}), ("a", 1, {"turn": 1})]) == 2
    assert store.add_target_replies("r-x", [("a", 1, {"turn": 99})]) == 0  # a stored reply is kept
    assert store.target_replies("r-x", "a") == {0: {"turn": 0}, 1: {"turn": 1}}
    assert "a" in store.target_reply_samples("r-x") and "b" not in store.target_reply_samples("r-x")
