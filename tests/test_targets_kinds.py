"""``type: openai`` against the scripted OpenAI-compatible server, ``type: dify`` against an app that answers
like Dify's blocking chat-messages API, ``type: python`` sync and async."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

import target_functions
from bqas.cli.main import app
from bqas.testing.scripted_llm import Reply, ScriptedLLM
from target_support import ServedApp, json_app, records, voice_samples, write_scenario


def _run(path: Path, out: Path) -> Any:
    return CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--no-progress"])


def test_openai_target_sends_system_input_key_and_the_conversation(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_API_KEY", "sk-test")
    samples = [
        {"id": "one", "frage": "Erinnere mich an die Konferenz", "expected_intent": "reminder"},
        {"id": "conv", "expected_intent": "reminder", "turns": [{"frage": "Hallo"}, {"frage": "Und morgen?"}]},
    ]
    content = json.dumps({"answer": "Mach ich.", "intent": "reminder"})
    with ScriptedLLM(default=Reply(content=content, prompt_tokens=12, completion_tokens=4)) as llm:
        target = {
            "type": "openai",
            "base_url": llm.base_url,
            "model": "my-assistant",
            "api_key_env": "ASSISTANT_API_KEY",
            "system": "Du bist ein Sprachassistent für Lehrkräfte.",
            "input": "frage",
            "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
            "concurrency": 1,
        }
        # The judge reads user_input: the samples' "frage" is also copied there for it.
        for sample in samples:
            for turn in [sample, *sample.get("turns", [])]:
                if "frage" in turn:
                    turn["user_input"] = turn["frage"]
        path = write_scenario(tmp_path, samples, target)
        result = _run(path, tmp_path / "out")
        requests = list(llm.requests)
    assert result.exit_code == 0, result.output
    assert all(r["model"] == "my-assistant" for r in requests)
    assert all(r["messages"][0] == {"role": "system", "content": target["system"]} for r in requests)
    last = next(r for r in requests if r["messages"][-1]["content"] == "Und morgen?")
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "user"]  # the whole exchange
    assert last["messages"][1]["content"] == "Hallo" and last["messages"][2]["content"] == content
    recs = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert set(recs) == {"one", "conv#0", "conv#1"}
    assert recs["one"]["inputs"]["response"] == "Mach ich." and recs["one"]["inputs"]["detected_intent"] == "reminder"
    assert recs["one"]["target"]["prompt_tokens"] == 12 and recs["one"]["target"]["completion_tokens"] == 4
    assert "tokens per answer prompt 12, completion 4, total 16" in result.output


def test_openai_target_without_outputs_judges_the_message(tmp_path: Path, bqas_home: Path) -> None:
    with ScriptedLLM(default=Reply(content="Ich erinnere dich morgen.")) as llm:
        target = {"type": "openai", "base_url": llm.base_url, "model": "m"}
        path = write_scenario(
            tmp_path,
            [
                {
                    "id": "a",
                    "user_input": "Erinnere mich an X",
                    "detected_intent": "reminder",
                    "expected_intent": "reminder",
                }
            ],
            target,
        )
        result = _run(path, tmp_path / "out")
        assert llm.requests and "Authorization" not in json.dumps(llm.requests)
    assert result.exit_code == 0, result.output
    (rec,) = records(tmp_path / "out")
    assert rec["inputs"]["response"] == "Ich erinnere dich morgen."


def _dify_app(seen: list[tuple[str | None, dict[str, Any]]]) -> web.Application:
    """Answers exactly as Dify's documented blocking chat-messages response."""

    async def chat_messages(request: web.Request, body: dict[str, Any]) -> web.Response:
        seen.append((request.headers.get("Authorization"), body))
        conversation = body.get("conversation_id") or "45701982-8118-4bc5-8e9b-64562b4555f2"
        return web.json_response(
            {
                "event": "message",
                "task_id": "c3800678-a077-43df-a102-53f23ed20b88",
                "id": f"msg-{len(seen)}",
                "message_id": f"msg-{len(seen)}",
                "conversation_id": conversation,
                "mode": "chat",
                "answer": "Die Lehrerkonferenz ist am Donnerstag um 14 Uhr.",
                "metadata": {
                    "usage": {
                        "prompt_tokens": 1033,
                        "prompt_unit_price": "0.001",
                        "prompt_price_unit": "0.001",
                        "prompt_price": "0.0010330",
                        "completion_tokens": 128,
                        "completion_unit_price": "0.002",
                        "completion_price_unit": "0.001",
                        "completion_price": "0.0002560",
                        "total_tokens": 1161,
                        "total_price": "0.0012890",
                        "currency": "USD",
                        "latency": 0.7682376249867957,
                    },
                    "retriever_resources": [
                        {
                            "position": 1,
                            "dataset_id": "101b4c97-fc2e-463c-90b1-5261a4cdcafb",
                            "dataset_name": "schule",
                            "document_id": "8dd1ad74-0b5f-4175-b735-7d98bbbb4e00",
                            "document_name": "termine.txt",
                            "segment_id": "ed599c7f-2766-4294-9d1d-e5235a61270a",
                            "score": 0.98457545,
                            "content": "Die Lehrerkonferenz findet am Donnerstag um 14 Uhr im Raum 104 statt.",
                        }
                    ],
                },
                "created_at": 1705407629,
            }
        )

    return json_app(chat_messages, "/v1/chat-messages")


def test_dify_target_maps_answer_and_retriever_resources_and_keeps_the_conversation(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIFY_APP_KEY", "app-secret")
    seen: list[tuple[str | None, dict[str, Any]]] = []
    samples = [
        {"id": "q1", "query": "Wann ist die Lehrerkonferenz?"},
        {"id": "c", "turns": [{"query": "Wann ist die Konferenz?"}, {"query": "Und wo?"}]},
    ]
    with ServedApp(_dify_app(seen)) as dify:
        target = {
            "type": "dify",
            "base_url": f"{dify.url}/v1",
            "api_key_env": "DIFY_APP_KEY",
            "concurrency": 1,
            "response_mode": "blocking",
        }
        path = write_scenario(tmp_path, samples, target, judges=["rag_hallucination"])
        result = _run(path, tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert {h for h, _ in seen} == {"Bearer app-secret"}
    bodies = [b for _, b in seen]
    assert all(b["response_mode"] == "blocking" and b["user"] == "bqas" and b["inputs"] == {} for b in bodies)
    second = next(b for b in bodies if b["query"] == "Und wo?")
    assert second["conversation_id"] == "45701982-8118-4bc5-8e9b-64562b4555f2"  # the id Dify gave turn 0
    assert next(b for b in bodies if b["query"] == "Wann ist die Konferenz?")["conversation_id"] == ""
    recs = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert recs["q1"]["inputs"]["response"] == "Die Lehrerkonferenz ist am Donnerstag um 14 Uhr."
    assert recs["q1"]["inputs"]["available_facts"] == [
        "Die Lehrerkonferenz findet am Donnerstag um 14 Uhr im Raum 104 statt."
    ]
    assert recs["q1"]["target"]["total_tokens"] == 1161 and recs["q1"]["target"]["prompt_tokens"] == 1033
    assert recs["c#1"]["target"]["conversation_id"] == "45701982-8118-4bc5-8e9b-64562b4555f2"


def test_python_targets_sync_in_a_thread_and_async_on_the_loop(tmp_path: Path, bqas_home: Path) -> None:
    target_functions.CALLS.clear()
    samples = [*voice_samples(2), {"id": "bad", "user_input": "kaputt", "expected_intent": "reminder"}]
    sync = write_scenario(tmp_path, samples, {"type": "python", "function": "target_functions:answer"})
    result = _run(sync, tmp_path / "sync")
    assert result.exit_code == 1, result.output  # one target error misses max_target_errors (0)
    recs = {r["response_id"]: r for r in records(tmp_path / "sync")}
    assert recs["s000"]["inputs"]["response"] == "Gern: Erinnere mich an die Konferenz Nummer 0"
    assert recs["s000"]["target"]["prompt_tokens"] == 5
    assert recs["bad"]["status"] == "target_error"
    assert "target_functions:answer raised RuntimeError: assistant crashed" in recs["bad"]["target_error"]
    assert all(thread != "MainThread" for name, thread in target_functions.CALLS if name == "answer")

    conv = [{"id": "c", "expected_intent": "reminder", "turns": [{"user_input": "a"}, {"user_input": "b"}]}]
    path = write_scenario(tmp_path, conv, {"type": "python", "function": "target_functions:answer_async"})
    result = _run(path, tmp_path / "async")
    assert result.exit_code == 0, result.output
    recs = {r["response_id"]: r for r in records(tmp_path / "async")}
    assert recs["c#0"]["inputs"]["response"] == "Turn 0: a" and recs["c#1"]["inputs"]["response"] == "Turn 1: b"


def test_python_target_errors_name_the_function(tmp_path: Path, bqas_home: Path) -> None:
    path = write_scenario(tmp_path, voice_samples(1), {"type": "python", "function": "target_functions:not_a_dict"})
    _run(path, tmp_path / "o")
    (rec,) = records(tmp_path / "o")
    assert rec["status"] == "target_error" and "returned str, not a non-empty dict" in rec["target_error"]
    missing = write_scenario(tmp_path, voice_samples(1), {"type": "python", "function": "target_functions:nope"})
    result = _run(missing, tmp_path / "p")
    assert result.exit_code == 2 and "target.function: 'target_functions' has no 'nope'" in result.output


def test_openai_target_against_the_real_llama_cpp_engine(
    tmp_path: Path, bqas_home: Path, local_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The assistant under test is a real model (SmolLM2-135M in llama.cpp): its message is the response,
    its token counts are the assistant's figures."""
    monkeypatch.setenv("ENGINE_KEY", local_llm.api_key)  # the engine takes only requests with its key
    samples = [
        {"id": "e1", "user_input": "Sag Hallo.", "detected_intent": "unknown", "expected_intent": "unknown"},
        {
            "id": "e2",
            "expected_intent": "unknown",
            "detected_intent": "unknown",
            "turns": [{"user_input": "Hi!"}, {"user_input": "Und jetzt?"}],
        },
    ]
    target = {
        "type": "openai",
        "base_url": local_llm.base_url,
        "model": local_llm.name,
        "api_key_env": "ENGINE_KEY",
        "max_tokens": 16,
        "temperature": 0,
        "concurrency": 2,
        "timeout": 120,
    }
    path = write_scenario(tmp_path, samples, target)
    result = _run(path, tmp_path / "out")
    assert result.exit_code in (0, 1), result.output  # the tiny model's answers may miss a gate; none may fail
    recs = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert set(recs) == {"e1", "e2#0", "e2#1"}
    for rec in recs.values():
        assert rec["status"] == "scored", rec  # the voice judge runs offline: every answer is judged
        assert isinstance(rec["inputs"]["response"], str) and rec["inputs"]["response"]
        assert rec["target"]["status"] == 200 and rec["target"]["completion_tokens"] >= 1


def test_openai_history_repeats_a_long_message_whole(tmp_path: Path, bqas_home: Path) -> None:
    # A message larger than the raw reply the store keeps (16 KiB): the next turn's history used to be
    # re-parsed from that cut raw reply, failed, and fell back to the mapped answer alone.
    content = json.dumps({"answer": "Mach ich. " + "Details folgen. " * 2000, "intent": "reminder"})
    conv = [{"id": "c", "expected_intent": "reminder", "turns": [{"user_input": "Hallo"}, {"user_input": "Und?"}]}]
    with ScriptedLLM(default=Reply(content=content)) as llm:
        target = {
            "type": "openai",
            "base_url": llm.base_url,
            "model": "m",
            "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
            "concurrency": 1,
        }
        result = _run(write_scenario(tmp_path, conv, target), tmp_path / "out")
        requests = list(llm.requests)
    assert result.exit_code == 0, result.output
    second = next(r for r in requests if r["messages"][-1]["content"] == "Und?")
    assert second["messages"][1] == {"role": "assistant", "content": content}
    recs = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert recs["c#0"]["target"]["raw_bytes"] > 16 * 1024  # the raw reply was indeed longer than what is kept
