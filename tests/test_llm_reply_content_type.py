"""An LLM reply read as bytes whatever its Content-Type says: a proxy's HTML error page (``502`` from
nginx, no charset) is retried and then leaves the sample ``unscored`` naming the status and the page's
first bytes (``bqas score``, ``bqas run``), ``/api/score`` answers 503 with Retry-After; a 200 with a valid
chat completion under ``text/html`` is scored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import open_store
from bqas.store.service import create_api_key
from bqas.testing.scripted_llm import Reply, ScriptedLLM

GOOD = {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass", "reasoning": "ok"}
SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}
NGINX_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
)
HTML = {"Content-Type": "text/html"}


def _completion(content: str) -> str:
    return json.dumps({"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "usage": {}})


def proxy_error() -> Reply:
    return Reply(status=502, body=NGINX_502, headers=HTML)


def _score(server: ScriptedLLM, *extra: str) -> Any:
    args = ["score", "-", "-j", "voice", "--backend", "llm", "--base-url", server.base_url, "--model", "m", *extra]
    return CliRunner().invoke(app, args, input=json.dumps(SAMPLE))


def _assert_names_the_proxy_page(record: dict[str, Any]) -> None:
    assert record["status"] == "unscored", record
    reason = record["unscored_reason"]
    assert "HTTP 502" in reason and "502 Bad Gateway" in reason, reason


def test_bqas_score_html_error_page_is_retried_then_unscored(bqas_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_LLM_MAX_RETRIES", "2")
    from bqas.settings import get_settings

    get_settings.cache_clear()
    with ScriptedLLM(default=proxy_error()) as server:
        result = _score(server, "--no-cache", "--max-unscored", "1")
        asked = len(server.requests)
    assert "Traceback" not in result.output and result.exception is None, result.output
    assert result.exit_code == 0, result.output
    _assert_names_the_proxy_page(json.loads(result.output.strip().splitlines()[-1]))
    assert asked == 3  # the first try and the two retries the policy allows


@pytest.mark.parametrize(
    "content_type", ["text/html", "text/plain", "application/octet-stream", "text/html; charset=bogus-42"]
)
def test_bqas_score_valid_completion_under_any_content_type_is_scored(bqas_home: Path, content_type: str) -> None:
    reply = Reply(body=_completion(json.dumps(GOOD)), headers={"Content-Type": content_type})
    with ScriptedLLM(default=reply) as server:
        result = _score(server, "--no-cache")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output.strip().splitlines()[-1])
    assert record["status"] == "scored" and record["faithfulness"] == 5, record


def test_html_200_page_is_unscored_with_its_first_bytes(bqas_home: Path) -> None:
    with ScriptedLLM(default=Reply(body=NGINX_502, headers=HTML)) as server:
        result = _score(server, "--no-cache", "--max-unscored", "1")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output.strip().splitlines()[-1])
    assert record["status"] == "unscored"
    assert "malformed chat completion" in record["unscored_reason"]
    assert "502 Bad Gateway" in record["unscored_reason"], record["unscored_reason"]


def test_bytes_that_are_not_utf8_under_html_are_replaced(bqas_home: Path) -> None:
    content = json.dumps({**GOOD, "reasoning": "caf\u00e9"}, ensure_ascii=False)
    body = json.dumps({"choices": [{"message": {"content": content}}]}, ensure_ascii=False).encode()
    latin1 = body.replace("caf\u00e9".encode(), b"caf\xe9")  # a Latin-1 byte where UTF-8 was due
    assert b"caf\xe9" in latin1
    with ScriptedLLM(default=Reply(raw=latin1, headers=HTML)) as server:
        result = _score(server, "--no-cache")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output.strip().splitlines()[-1])
    assert record["status"] == "scored" and "caf\ufffd" in record["reasoning"], record


def test_bqas_run_finishes_when_one_reply_is_a_proxy_page(tmp_path: Path, bqas_home: Path) -> None:
    rows = [{**SAMPLE, "id": f"s{i}", "response": f"{SAMPLE['response']} ({i})"} for i in range(3)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "name: proxy\njudges: [voice]\nbackend: llm\ndataset: data.jsonl\nthresholds:\n  max_unscored: 1\n",
        encoding="utf-8",
    )
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD))) as server:
        server.on("(1)", proxy_error())
        args = ["run", str(scenario), "--base-url", server.base_url, "--model", "m", "--no-progress", "--no-cache"]
        result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "o")])
    assert "Traceback" not in result.output and result.exit_code == 0, result.output
    lines = (tmp_path / "o" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    records = {r["sample_id"]: r for r in map(json.loads, lines)}
    assert records["s0"]["status"] == records["s2"]["status"] == "scored"
    _assert_names_the_proxy_page(records["s1"])


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], ScriptedLLM]]:
    with ScriptedLLM(default=proxy_error()) as llm:
        store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
        settings = Settings(
            home=tmp_path / "home", llm_base_url=llm.base_url, judge_model="m", llm_max_retries=1, llm_cache=False
        )
        app_ = create_app(settings=settings, service=ServiceSettings(rate_limit=0, llm_retry_after=9), store=store)
        headers = {"Authorization": f"Bearer {create_api_key(store, 't')}"}
        with ServiceServer(app_) as server:
            yield server.base_url, headers, llm


def test_api_score_html_error_page_is_503_with_retry_after(service: tuple[str, dict[str, str], ScriptedLLM]) -> None:
    url, headers, llm = service
    body = {
        "question": SAMPLE["user_input"],
        "answer": SAMPLE["response"],
        "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
        "judges": ["voice"],
        "backend": "llm",
    }
    r = httpx.post(f"{url}/api/score", json=body, headers=headers, timeout=60)
    assert r.status_code == 503, r.text
    assert r.headers["Retry-After"] == "9"
    _assert_names_the_proxy_page(r.json()["results"][0])
    assert len(llm.requests) == 2
    llm.default = Reply(body=_completion(json.dumps(GOOD)), headers=HTML)
    ok = httpx.post(f"{url}/api/score", json=body, headers=headers, timeout=60)
    assert ok.status_code == 200 and ok.json()[0]["status"] == "scored", ok.text
