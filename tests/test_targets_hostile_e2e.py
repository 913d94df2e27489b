"""One hostile assistant under test, one real ``bqas run`` process: a 2,000-deep nesting, an echo of every
secret form, a 302 to another port, a body that stops after the headers, and data rows with CR/LF and
``../`` in the fields used in headers and the URL. The run completes; each bad sample is a
``target_error`` with a reason; no secret is in any stored or shown output (files, logs, viewer pages);
nothing reaches the other port; no request leaves the configured path."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from aiohttp import web

from target_support import ServedApp, records, write_scenario

KEY = "sk/LIVE+9z=Q7-abcdef0123456789"
OTHER = "tok-SECRET-2718-defaulted"


def _leaks(data: bytes) -> list[str]:
    forms = {
        KEY,
        KEY.replace("/", "\\/"),
        quote(KEY, safe=""),
        quote(KEY),
        base64.b64encode(KEY.encode()).decode(),
        OTHER,
        base64.b64encode(OTHER.encode()).decode(),
        KEY[:8],
        OTHER[:10],
    }
    return sorted(f for f in forms if f.encode() in data)


def test_one_hostile_target_exercising_everything_in_one_run(tmp_path: Path, bqas_home: Path) -> None:
    stranger_requests: list[str] = []
    paths: list[str] = []

    @web.middleware
    async def stranger_app(request: web.Request, handler: Any) -> web.Response:
        stranger_requests.append(f"{request.method} {request.raw_path} {dict(request.headers)}")
        return web.json_response({"answer": "von woanders", "intent": "reminder"})

    with ServedApp(web.Application(middlewares=[stranger_app])) as stranger:

        @web.middleware
        async def hostile(request: web.Request, handler: Any) -> web.StreamResponse:
            paths.append(request.raw_path)
            key, other = request.headers.get("X-Api-Key", ""), request.headers.get("X-Other", "")
            n = int((await request.json())["text"].rsplit(" ", 1)[1])
            if n == 1:  # 2,000 levels deep
                return web.Response(body=b"[" * 2000 + b"]" * 2000, content_type="application/json")
            if n == 2:  # every secret form at once
                raw = json.dumps(
                    {
                        "answer": f"{key} {other} {quote(key, safe='')} {base64.b64encode(key.encode()).decode()}",
                        "intent": "reminder",
                        "session": f"sess-{key}",
                    }
                ).replace("/", "\\/")
                return web.Response(text=raw, content_type="application/json")
            if n == 3:  # the excerpt's cut falls inside the key
                return web.Response(text="x" * 290 + key + other, status=500)
            if n == 4:
                raise web.HTTPFound(f"{stranger.url}/chat")
            if n == 5:  # a drip that stops after the headers
                response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
                response.content_length = 1000
                await response.prepare(request)
                await response.write(b'{"answer": "Ge')
                await asyncio.sleep(30)
                return response
            return web.json_response({"answer": "Gern.", "intent": "reminder", "session": "sess"})

        samples = [
            {"id": f"s{i}", "user_input": f"Erinnere mich an Nummer {i}", "expected_intent": "reminder",
             "uid": "u", "user": "Ada"}
            for i in range(9)
        ]  # fmt: skip
        samples[6]["user"] = "Ada\r\nX-Injected: 1"  # CR/LF in a field used in a header
        samples[7]["uid"] = "../../../admin?x=1#frag"  # a field used in the URL
        samples[8]["uid"] = ".."
        target = {
            "type": "http",
            "url": "",  # the hostile server's, once it listens
            "headers": {"X-Api-Key": "${ASSISTANT_KEY:-none}", "X-Other": "${ASSISTANT_OTHER}", "X-User": "{user}"},
            "body": {"text": "{user_input}"},
            "outputs": {"response": "$.answer", "detected_intent": "$.intent", "conversation_id": "$.session"},
            "timeout": 1,
            "retries": 1,
            # The conversation id mapped above makes this a target that keeps a session, whose turns are not
            # sent twice unless declared safe to; the stalled body's retry is what is checked here.
            "idempotent": True,
        }
        with ServedApp(web.Application(middlewares=[hostile])) as server:
            target["url"] = f"{server.url}/chat/{{uid}}"
            path = write_scenario(tmp_path, samples, target)
            env = {**os.environ, "BQAS_HOME": str(bqas_home), "ASSISTANT_KEY": KEY, "ASSISTANT_OTHER": OTHER}
            out = tmp_path / "out"
            ran = subprocess.run(
                [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--out", str(out), "--no-progress"],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
    assert ran.returncode == 1, ran.stdout + ran.stderr  # the target-error gate, not a crash
    by_id = {r["response_id"]: r for r in records(out)}
    assert sorted(by_id) == [f"s{i}" for i in range(9)]
    status = {k: r["status"] for k, r in by_id.items()}
    assert status == {
        "s0": "scored",
        "s1": "target_error",
        "s2": "scored",
        "s3": "target_error",
        "s4": "target_error",
        "s5": "target_error",
        "s6": "target_error",
        "s7": "scored",
        "s8": "target_error",
    }, status
    reasons = {k: r.get("target_error", "") for k, r in by_id.items()}
    assert "not JSON" in reasons["s1"]
    assert "HTTP 500" in reasons["s3"]
    assert f"redirects to {stranger.url}/chat" in reasons["s4"]
    assert "timed out" in reasons["s5"] and "after 2 attempts" in reasons["s5"]
    assert "header X-User" in reasons["s6"]
    assert "would change the URL" in reasons["s8"]
    assert by_id["s2"]["inputs"]["response"].startswith("[secret ASSISTANT_KEY] [secret ASSISTANT_OTHER]")
    assert stranger_requests == []
    assert paths and all(p.startswith("/chat/") and len(p.split("?")[0].split("/")) == 3 for p in paths), paths

    # Every file of the store and the outputs, the process's output, and every viewer page.
    files = [p for root in (bqas_home, out) for p in root.rglob("*") if p.is_file()]
    assert {"bqas.sqlite", "report.html", "results.jsonl"} <= {p.name for p in files}
    assert _leaks((ran.stdout + ran.stderr).encode()) == []
    for file in files:
        assert _leaks(file.read_bytes()) == [], file
    from bqas.review.local import LocalReview
    from bqas.review.settings import ReviewSettings
    from bqas.service.testing import ServiceServer
    from bqas.settings import get_settings
    from bqas.store.db import open_store

    get_settings.cache_clear()
    store = open_store()
    local = LocalReview(store, ReviewSettings())
    pages: list[str] = []
    with ServiceServer(local.app) as served, httpx.Client(base_url=served.base_url) as client:
        client.get(local.start_path)
        for run in store.list_runs():
            pages.append(client.get(f"/review/runs/{run.id}").text)
            for i in range(1, 12):
                page = client.get(f"/review/runs/{run.id}/results/{i}")
                if page.status_code == 200:
                    pages.append(page.text)
    assert sum("raw reply" in p for p in pages) >= 5  # the sample pages with their stored replies
    for page in pages:
        assert _leaks(page.encode()) == []
