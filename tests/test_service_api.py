"""The scoring service over real HTTP (uvicorn on 127.0.0.1, offline judge): auth, tenants, limits,
validation, judge_language, sessions, metrics, OpenAPI for Dify, and the Python client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from bqas.client import AsyncBQASClient, BQASClient, BQASError
from bqas.service import scoring
from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import Store, open_store
from bqas.store.service import create_api_key, get_job

RAG = {
    "question": "Wie schwer ist der MAGNETOM Vida?",
    "answer": "Der MAGNETOM Vida wiegt 7370 kg.",
    "contexts": ["Das Gesamtgewicht des MAGNETOM Vida beträgt 7370 kg."],
    "judges": ["rag_hallucination"],
}
VOICE_TURN = {
    "question": "Erinnere mich morgen an die Konferenz",
    "answer": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
    "detected_intent": "reminder",
}


class Service(SimpleNamespace):
    url: str
    store: Store
    key_a: str
    key_b: str


def _start(tmp_path: Path, **service: Any) -> Iterator[Service]:
    store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
    settings = Settings(home=tmp_path / "home", llm_cache=False)
    options: dict[str, Any] = {"job_poll_seconds": 0.05, "rate_limit": 0, **service}
    app = create_app(settings=settings, service=ServiceSettings(**options), store=store, public_url="http://x.test")
    key_a, key_b = create_api_key(store, "tenant-a"), create_api_key(store, "tenant-b")
    with ServiceServer(app) as server:
        yield Service(url=server.base_url, store=store, key_a=key_a, key_b=key_b)


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    yield from _start(tmp_path)


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _wait(url: str, key: str, job_id: str, timeout: float = 20) -> dict[str, Any]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        data: dict[str, Any] = httpx.get(f"{url}/api/jobs/{job_id}", headers=_auth(key)).json()
        if data["status"] in ("done", "failed"):
            return data
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


def _strip(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    volatile = ("latency_ms", "service_ms", "queue_ms", "response_id")
    return [{k: v for k, v in r.items() if k not in volatile} for r in records]


def test_score_returns_one_record_per_judge_with_contexts_mapped(svc: Service) -> None:
    body = {**RAG, "judges": ["rag_hallucination", "rag_privacy"], "response_id": "resp-1"}
    r = httpx.post(f"{svc.url}/api/score", json=body, headers=_auth(svc.key_a))
    assert r.status_code == 200, r.text
    records = r.json()
    assert [rec["judge"] for rec in records] == ["rag_hallucination", "rag_privacy"]
    assert all(rec["response_id"] == "resp-1" for rec in records)
    # contexts → available_facts: the answer's claim is grounded in the context.
    assert records[0]["invention_detection"] == "pass" and records[0]["status"] == "scored"


def test_list_fields_given_as_text_are_accepted(svc: Service) -> None:
    body = {**RAG, "judges": "rag_hallucination, rag_privacy", "contexts": RAG["contexts"][0]}
    r = httpx.post(f"{svc.url}/api/score", json=body, headers=_auth(svc.key_a))
    assert r.status_code == 200 and [rec["judge"] for rec in r.json()] == ["rag_hallucination", "rag_privacy"]
    assert r.json()[0]["invention_detection"] == "pass"


def test_missing_or_wrong_key_is_401_and_x_api_key_works(svc: Service) -> None:
    assert httpx.post(f"{svc.url}/api/score", json=RAG).status_code == 401
    wrong = httpx.post(f"{svc.url}/api/score", json=RAG, headers=_auth("bqas_not-a-key"))
    assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"] == "Bearer"
    assert httpx.get(f"{svc.url}/api/jobs/j-x", headers={"X-API-Key": "nope"}).status_code == 401
    assert httpx.post(f"{svc.url}/api/score", json=RAG, headers={"X-API-Key": svc.key_a}).status_code == 200


def test_a_tenant_never_sees_another_tenants_job(svc: Service) -> None:
    r = httpx.post(f"{svc.url}/api/score/async", json=RAG, headers=_auth(svc.key_a))
    assert r.status_code == 202
    job_id = r.json()["job_id"]
    done = _wait(svc.url, svc.key_a, job_id)
    assert done["status"] == "done" and done["results"][0]["judge"] == "rag_hallucination"
    other = httpx.get(f"{svc.url}/api/jobs/{job_id}", headers=_auth(svc.key_b))
    assert other.status_code == 404
    assert "7370" not in other.text and "rag_hallucination" not in other.text


def test_validation_errors_name_the_field_path(svc: Service) -> None:
    h = _auth(svc.key_a)
    bad_type = httpx.post(f"{svc.url}/api/score", json={**RAG, "contexts": {"a": 1}}, headers=h)
    assert bad_type.status_code == 422
    assert bad_type.json()["detail"][0]["loc"] == ["body", "contexts"]
    # The voice judge needs detected_intent: the error names sample.detected_intent.
    missing = httpx.post(
        f"{svc.url}/api/score", json={"question": "Hallo", "answer": "Hi", "judges": ["voice"]}, headers=h
    )
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["loc"][:3] == ["body", "sample", "detected_intent"]
    unknown = httpx.post(f"{svc.url}/api/score", json={**RAG, "judges": ["rag_hallucination", "nope"]}, headers=h)
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["body", "judges", 1]
    session = {"judges": ["voice"], "turns": [VOICE_TURN, {"question": "x"}]}
    bad_turn = httpx.post(f"{svc.url}/api/score/session_async", json=session, headers=h)
    assert bad_turn.status_code == 422
    assert bad_turn.json()["detail"][0]["loc"][:4] == ["body", "turns", 1, "answer"]
    nothing = httpx.post(f"{svc.url}/api/score", json={"question": "x"}, headers=h)
    assert nothing.status_code == 422 and "judges" in nothing.text


def test_judge_language_default_is_en_zh_accepted_fr_rejected(svc: Service) -> None:
    h = _auth(svc.key_a)
    plain = httpx.post(f"{svc.url}/api/score", json=RAG, headers=h)
    en = httpx.post(f"{svc.url}/api/score", json={**RAG, "judge_language": "en"}, headers=h)
    assert plain.status_code == en.status_code == 200
    assert _strip(plain.json()) == _strip(en.json())
    zh = httpx.post(f"{svc.url}/api/score", json={**RAG, "judge_language": "zh"}, headers=h)
    assert zh.status_code == 200
    fr = httpx.post(f"{svc.url}/api/score", json={**RAG, "judge_language": "fr"}, headers=h)
    assert fr.status_code == 422 and fr.json()["detail"][0]["loc"] == ["body", "judge_language"]
    fr_session = httpx.post(
        f"{svc.url}/api/score/session_async",
        json={"judges": ["voice"], "turns": [VOICE_TURN], "judge_language": "fr"},
        headers=h,
    )
    assert fr_session.status_code == 422
    # The async endpoints behave the same with and without judge_language=en.
    results = []
    for extra in ({}, {"judge_language": "en"}):
        job = httpx.post(f"{svc.url}/api/score/async", json={**RAG, **extra}, headers=h).json()["job_id"]
        results.append(_strip(_wait(svc.url, svc.key_a, job)["results"]))
    assert results[0] == results[1]
    sessions = []
    for extra in ({}, {"judge_language": "en"}):
        body = {"judges": ["voice"], "turns": [VOICE_TURN], **extra}
        job = httpx.post(f"{svc.url}/api/score/session_async", json=body, headers=h).json()["job_id"]
        done = _wait(svc.url, svc.key_a, job)
        sessions.append(([_strip(t["results"]) for t in done["turns"]], done["aggregate"]))
        stored = get_job(svc.store, job)
        assert stored is not None and stored.request["resolved"]["judge_language"] == "en"
    assert sessions[0] == sessions[1]


def test_metrics_without_ragas_module_are_422(svc: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scoring, "ragas_api", lambda: None)
    r = httpx.post(f"{svc.url}/api/score", json={**RAG, "metrics": ["faithfulness"]}, headers=_auth(svc.key_a))
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "metrics"] and "bqas.ragas.api" in r.text


def test_metrics_go_to_ragas_api_with_resolved_judge_language(svc: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[dict[str, Any], list[str], str]] = []

    async def score_sample(fields: dict[str, Any], metrics: list[str], *, llm: Any, judge_language: str) -> Any:
        calls.append((fields, metrics, judge_language))
        return [{"judge": m, "status": "unscored", "unscored_reason": "fake"} for m in metrics]

    monkeypatch.setattr(scoring, "ragas_api", lambda: SimpleNamespace(score_sample=score_sample))
    body = {**RAG, "judges": [], "metrics": ["faithfulness"], "reference": "7370 kg"}
    for extra, expected in (({}, "en"), ({"judge_language": "zh"}, "zh")):
        r = httpx.post(f"{svc.url}/api/score", json={**body, **extra}, headers=_auth(svc.key_a))
        assert r.status_code == 200 and r.json()[0]["judge"] == "faithfulness"
        fields, metrics, language = calls[-1]
        assert language == expected and metrics == ["faithfulness"]
        assert fields["user_input"] == RAG["question"] and fields["response"] == RAG["answer"]
        assert fields["retrieved_contexts"] == RAG["contexts"] and fields["reference"] == "7370 kg"


def test_session_job_aggregates_turns(svc: Service) -> None:
    leak = {**VOICE_TURN, "answer": "Ich erinnere dich morgen. Ruf Frau Sabine Schneider an: 0171 2345678."}
    body = {"judges": ["voice"], "language": "de", "turns": [VOICE_TURN, leak, VOICE_TURN]}
    r = httpx.post(f"{svc.url}/api/score/session_async", json=body, headers=_auth(svc.key_a))
    assert r.status_code == 202 and r.json()["status"] == "queued"
    job = _wait(svc.url, svc.key_a, r.json()["job_id"])
    assert job["status"] == "done" and job["progress"] == {"done": 3, "total": 3}
    assert [t["turn"] for t in job["turns"]] == [0, 1, 2]
    records = [t["results"][0] for t in job["turns"]]
    assert records[1]["safety"] == "fail" and records[1]["verdict"] == "failed"
    agg = job["aggregate"]
    composites = [rec["composite_score"] for rec in records]
    assert agg["mean_composite"] == pytest.approx(sum(composites) / 3, abs=0.01)
    assert agg["worst_verdict"] == "failed"
    assert agg["escalations"] == sum(1 for rec in records if rec["escalation"])
    assert agg["escalations"] >= 1 and agg["turns"] == 3


def test_too_many_turns_is_422_and_large_body_413(tmp_path: Path) -> None:
    for svc in _start(tmp_path, max_turns=2, max_body_bytes=2000):
        h = _auth(svc.key_a)
        r = httpx.post(
            f"{svc.url}/api/score/session_async", json={"judges": ["voice"], "turns": [VOICE_TURN] * 3}, headers=h
        )
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "turns"]
        assert "at most 2" in r.text
        big = httpx.post(f"{svc.url}/api/score", json={**RAG, "answer": "x" * 5000}, headers=h)
        assert big.status_code == 413 and "BQAS_MAX_BODY_BYTES" in big.text

        # Without Content-Length (chunked upload) the limit holds too.
        def chunks() -> Iterator[bytes]:
            yield b'{"judges": ["rag_hallucination"], "answer": "'
            yield b"y" * 5000
            yield b'"}'

        chunked = httpx.post(
            f"{svc.url}/api/score", content=chunks(), headers={**h, "content-type": "application/json"}
        )
        assert chunked.status_code == 413


def test_rate_limit_is_429_with_retry_after_per_tenant(tmp_path: Path) -> None:
    # One token per 1,000 s: however slow the machine, no token comes back during the test.
    for svc in _start(tmp_path, rate_limit=0.001, rate_burst=3):
        codes = [httpx.post(f"{svc.url}/api/score", json=RAG, headers=_auth(svc.key_a)) for _ in range(5)]
        assert [c.status_code for c in codes] == [200, 200, 200, 429, 429]
        assert int(codes[3].headers["Retry-After"]) >= 1
        # Another tenant has its own bucket.
        assert httpx.post(f"{svc.url}/api/score", json=RAG, headers=_auth(svc.key_b)).status_code == 200


def test_health_metrics_and_openapi_for_dify(svc: Service) -> None:
    assert httpx.get(f"{svc.url}/healthz").json()["status"] == "ok"
    httpx.post(f"{svc.url}/api/score", json=RAG, headers=_auth(svc.key_a))
    httpx.post(f"{svc.url}/api/score", json=RAG)
    text = httpx.get(f"{svc.url}/metrics").text
    assert 'bqas_http_requests_total{method="POST",route="/api/score",status="200"} 1.0' in text
    assert 'bqas_http_requests_total{method="POST",route="/api/score",status="401"} 1.0' in text
    assert 'bqas_judgments_total{judge="rag_hallucination",verdict="production_ready"} 1.0' in text
    assert "bqas_http_request_duration_seconds_bucket" in text and "bqas_llm_calls_total 0.0" in text
    schema = httpx.get(f"{svc.url}/openapi.json").json()
    assert schema["servers"][0]["url"] == "http://x.test"
    ops = {op["operationId"] for path in schema["paths"].values() for op in path.values()}
    assert ops == {"score", "score_async", "score_session_async", "get_job"}
    schemes = schema["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": pytest.approx(schemes["bearerAuth"]["description"]),
    }
    assert schemes["apiKeyAuth"]["in"] == "header" and schemes["apiKeyAuth"]["name"] == "X-API-Key"
    props = schema["components"]["schemas"]["SessionScoreRequest"]["properties"]
    assert "judge_language" in props and "turns" in props


def test_clients_sync_and_async(svc: Service) -> None:
    with BQASClient(svc.url, svc.key_a) as client:
        records = client.score(
            judges=["rag_hallucination"], question=RAG["question"], answer=RAG["answer"], contexts=RAG["contexts"]
        )
        assert records[0]["judge"] == "rag_hallucination"
        job_id = client.score_session_async([VOICE_TURN, VOICE_TURN], judges=["voice"])
        job = client.wait_for_job(job_id, timeout=20, poll=0.05)
        assert job.status == "done" and job.total == 2 and job.aggregate is not None
        with pytest.raises(BQASError) as err:
            client.job("j-unknown")
        assert err.value.status == 404

    async def use_async() -> None:
        async with AsyncBQASClient(svc.url, svc.key_b) as client:
            job_id = await client.score_async(
                judges=["rag_hallucination"], question=RAG["question"], answer=RAG["answer"], contexts=RAG["contexts"]
            )
            job = await client.wait_for_job(job_id, timeout=20, poll=0.05)
            assert job.status == "done" and job.results is not None and job.results[0]["status"] == "scored"
            with pytest.raises(BQASError) as err:
                await client.score(judges=["voice"], question="x", answer="y")
            assert err.value.status == 422

    import asyncio

    asyncio.run(use_async())


def test_real_ragas_module_unknown_metric_is_422_known_metric_gives_a_record(svc: Service) -> None:
    pytest.importorskip("bqas.ragas.api")
    h = _auth(svc.key_a)
    body = {**RAG, "judges": [], "reference": "7370 kg", "backend": "offline"}
    bad = httpx.post(f"{svc.url}/api/score", json={**body, "metrics": ["faithfulness", "nope"]}, headers=h)
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "metrics", 1]
    ok = httpx.post(f"{svc.url}/api/score", json={**body, "metrics": ["faithfulness"]}, headers=h)
    assert ok.status_code == 200, ok.text
    record = ok.json()[0]
    # Offline there is no LLM: the metric is unscored with a reason, never a made-up number.
    assert record["metric"] == "faithfulness" and record["status"] == "unscored" and record["value"] is None
    assert record["unscored_reason"]


def test_server_default_judge_language_comes_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    async def score_sample(fields: dict[str, Any], metrics: list[str], *, llm: Any, judge_language: str) -> Any:
        seen.append(judge_language)
        return [{"metric": m, "status": "unscored", "unscored_reason": "fake"} for m in metrics]

    monkeypatch.setattr(scoring, "ragas_api", lambda: SimpleNamespace(score_sample=score_sample))
    monkeypatch.setenv("RAGAS_JUDGE_LANGUAGE", "zh")
    for svc in _start(tmp_path):
        body = {**RAG, "judges": [], "metrics": ["faithfulness"]}
        assert httpx.post(f"{svc.url}/api/score", json=body, headers=_auth(svc.key_a)).status_code == 200
        body["judge_language"] = "en"
        assert httpx.post(f"{svc.url}/api/score", json=body, headers=_auth(svc.key_a)).status_code == 200
    assert seen == ["zh", "en"]


def test_service_is_healthy_while_models_load_and_says_when_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The models loaded before the server answered: `bqas serve` was silent and unhealthy for 6-25 s
    # (issues 15 and 18). Now /healthz answers at once and says "loading" until they are loaded.
    import threading

    import bqas.service.app as app_module
    from bqas.judging.offline import OfflineJudge

    release = threading.Event()
    real_load = OfflineJudge.load

    def slow_load(self: OfflineJudge) -> float:
        release.wait(20)
        return real_load(self)

    monkeypatch.setattr(OfflineJudge, "load", slow_load)
    monkeypatch.setattr(app_module, "warm_up_memory", lambda: release.wait(20))
    svc = _start(tmp_path)
    service = next(svc)
    try:
        health = httpx.get(f"{service.url}/healthz").json()
        assert health["status"] == "ok" and health["models"] == "loading"
        release.set()
        deadline = time.monotonic() + 20
        while httpx.get(f"{service.url}/healthz").json()["models"] != "ready":
            assert time.monotonic() < deadline, "models never became ready"
            time.sleep(0.05)
        answer = httpx.post(f"{service.url}/api/score", json=RAG, headers=_auth(service.key_a))
        assert answer.status_code == 200
    finally:
        release.set()
        svc.close()


def test_dify_fixed_judges_and_retrieval_repr_are_accepted(svc: Service) -> None:
    # What Dify's tool node sends: a fixed "a,b" as a one-item list, the retrieval result as its repr.
    retrieval = [
        {
            "metadata": {"_source": "knowledge", "document_name": "vida.md", "score": 0.74, "doc_metadata": None},
            "title": "vida.md",
            "content": RAG["contexts"][0],
        }
    ]
    body = {**RAG, "judges": ["rag_hallucination,rag_privacy"], "contexts": repr(retrieval)}
    r = httpx.post(f"{svc.url}/api/score", json=body, headers=_auth(svc.key_a))
    assert r.status_code == 200, r.text
    records = r.json()
    assert [rec["judge"] for rec in records] == ["rag_hallucination", "rag_privacy"]
    assert records[0]["invention_detection"] == "pass"  # grounded in the content, not in the repr text
    bad = {**body, "contexts": [{"title": "vida.md"}]}
    r = httpx.post(f"{svc.url}/api/score", json=bad, headers=_auth(svc.key_a))
    assert r.status_code == 422 and "contexts[0]" in r.text and "content" in r.text


def _validator_for(schema: dict[str, Any], sub: dict[str, Any]) -> Any:
    """A JSON Schema validator for ``sub`` of the OpenAPI document (its $refs resolve in the document)."""
    import jsonschema

    document = {**sub, "components": schema["components"]}
    return jsonschema.Draft202012Validator(document)


def test_openapi_types_the_result_records(svc: Service) -> None:
    # Dify and client generators read the record's fields from the schema, not "array of object".
    schema = httpx.get(f"{svc.url}/openapi.json").json()
    comps = schema["components"]["schemas"]
    record = comps["ResultRecord"]["properties"]
    for name in ("response_id", "judge", "verdict", "composite_score", "status", "escalation", "reasoning"):
        assert name in record, name
    assert record["dimensions"]["additionalProperties"] == {"$ref": "#/components/schemas/DimensionProvenance"}
    assert comps["ResultRecord"]["additionalProperties"] is True  # the dimension values at the top level
    assert {"metric", "value", "judge_language"} <= set(comps["MetricRecord"]["properties"])
    ok = schema["paths"]["/api/score"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["type"] == "array"
    assert {v["$ref"] for v in ok["items"]["anyOf"]} == {
        "#/components/schemas/ResultRecord",
        "#/components/schemas/MetricRecord",
    }
    job = comps["JobStatus"]["properties"]
    assert job["turns"]["anyOf"][0]["items"] == {"$ref": "#/components/schemas/TurnRecord"}
    # The real answers are valid against the schema they are documented by.
    answer = httpx.post(f"{svc.url}/api/score", json=RAG, headers=_auth(svc.key_a))
    _validator_for(schema, ok).validate(answer.json())
    assert answer.json()[0]["grounding_score"] is not None  # a dimension's value at the top level
    body = {"judges": ["voice"], "language": "de", "turns": [VOICE_TURN, VOICE_TURN]}
    accepted = httpx.post(f"{svc.url}/api/score/session_async", json=body, headers=_auth(svc.key_a)).json()
    done = _wait(svc.url, svc.key_a, accepted["job_id"])
    _validator_for(schema, {"$ref": "#/components/schemas/JobStatus"}).validate(done)
    single = httpx.post(f"{svc.url}/api/score/async", json=RAG, headers=_auth(svc.key_a)).json()
    _validator_for(schema, {"$ref": "#/components/schemas/JobStatus"}).validate(
        _wait(svc.url, svc.key_a, single["job_id"])
    )
