"""``type: dify`` in every mode against a local Dify speaking each of its shapes (tests/dify_shapes.py): agent
and chatflow apps streamed (the default), a chatflow app that streams when asked to block, workflow apps
streamed and blocking, completion apps, an ``error`` event mid-stream, a failed workflow, a cut stream."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.targets.config import TargetConfig
from bqas.targets.kinds import Conversation, client_for
from bqas.targets.reply import TargetReply
from dify_shapes import FACT, Dify
from target_support import ServedApp, records, write_scenario


def _ask(url: str, turns: list[dict[str, Any]], **config: Any) -> tuple[list[TargetReply], Conversation]:
    target = TypeAdapter(TargetConfig).validate_python(
        {"type": "dify", "base_url": f"{url}/v1", "api_key_env": "DIFY_TEST_KEY", "retries": 0, **config}
    )

    async def run() -> tuple[list[TargetReply], Conversation]:
        client = client_for(target, 1024 * 1024)
        conversation = Conversation()
        try:
            return [await client.ask(data, conversation, i) for i, data in enumerate(turns)], conversation
        finally:
            await client.aclose()

    return asyncio.run(run())


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIFY_TEST_KEY", "app-key-123")


def test_an_agent_app_is_streamed_by_default_and_keeps_its_conversation() -> None:
    dify = Dify("agent")
    with ServedApp(dify.app()) as server:
        replies, conversation = _ask(server.url, [{"query": "Wann?"}, {"query": "Und wo?"}])
    first, second = replies
    assert first.error is None and second.error is None, (first.error, second.error)
    assert first.fields["response"] == "Die Konferenz ist am Donnerstag (Wann?)."  # the agent_message pieces
    assert first.fields["available_facts"] == [FACT]  # message_end's retriever_resources
    assert (first.prompt_tokens, first.completion_tokens, first.total_tokens) == (900, 12, 912)
    assert first.ttft_ms is not None and first.conversation_id == "conv-1"
    paths = [(path, body["response_mode"], body["conversation_id"]) for path, body, _ in dify.requests]
    assert paths == [("/v1/chat-messages", "streaming", ""), ("/v1/chat-messages", "streaming", "conv-1")]
    assert {auth for _, _, auth in dify.requests} == {"Bearer app-key-123"}
    assert conversation.remote_id == "conv-1" and "agent_message" in first.raw  # the raw stream is kept


@pytest.mark.parametrize("label", ["text/event-stream", "application/json"])
def test_a_chatflow_app_streaming_when_asked_to_block_is_read_all_the_same(label: str) -> None:
    dify = Dify("chatflow")
    dify.label = label  # an event stream, whatever its Content-Type says
    with ServedApp(dify.app()) as server:
        (reply,), _ = _ask(server.url, [{"query": "Wann?"}], response_mode="blocking")
    assert reply.error is None, reply.error
    assert dify.requests[0][1]["response_mode"] == "blocking"
    assert reply.fields["response"] == "Die Konferenz ist am Donnerstag."  # message_replace started it again


def test_a_completion_app_gets_the_message_as_its_query_input() -> None:
    dify = Dify("completion")
    with ServedApp(dify.app()) as server:
        (reply,), _ = _ask(
            server.url, [{"query": "Wann?", "klasse": "7b"}], mode="completion", inputs={"k": "{klasse}"}
        )
    path, body, _ = dify.requests[0]
    assert path == "/v1/completion-messages" and body["inputs"] == {"k": "7b", "query": "Wann?"}
    assert "conversation_id" not in body and "query" not in body
    assert reply.error is None and reply.fields == {"response": "Die Konferenz ist am Donnerstag."}


@pytest.mark.parametrize("shape", ["workflow", "workflow-blocking"])
def test_a_workflow_app_maps_its_outputs(shape: str) -> None:
    dify = Dify(shape)
    outputs = {"detected_intent": "$.intent"}
    mode = "blocking" if shape == "workflow-blocking" else "streaming"
    with ServedApp(dify.app()) as server:
        (reply,), _ = _ask(
            server.url,
            [{"user_input": "Erinnere mich an die Konferenz"}],
            mode="workflow",
            inputs={"frage": "{user_input}"},
            outputs=outputs,
            response_mode=mode,
        )
    path, body, _ = dify.requests[0]
    assert path == "/v1/workflows/run" and body["response_mode"] == mode
    assert body["inputs"] == {"frage": "Erinnere mich an die Konferenz", "query": "Erinnere mich an die Konferenz"}
    assert reply.error is None, reply.error
    assert reply.fields == {"response": "Gern: Erinnere mich an die Konferenz", "detected_intent": "reminder"}
    assert reply.total_tokens == (77 if shape == "workflow" else 321)
    assert (reply.ttft_ms is None) == (shape == "workflow-blocking")  # text_chunk is the first token


@pytest.mark.parametrize(
    ("shape", "mode", "reason"),
    [
        (
            "error",
            "chat",
            "Dify error event after 1 pieces of the answer: 400 completion_request_error: Quota exceeded",
        ),
        ("cut", "chat", "the stream was cut after 1 events"),
        ("no-end", "chat", "the stream ended before message_end (cut off after 1 events): Die Konferenz"),
        ("workflow-failed", "workflow", "the workflow failed: node llm: model quota exceeded"),
    ],
)
def test_a_broken_stream_is_a_target_error_with_what_was_read(shape: str, mode: str, reason: str) -> None:
    dify = Dify(shape)
    with ServedApp(dify.app()) as server:
        (reply,), _ = _ask(server.url, [{"query": "Wann?", "frage": "x"}], mode=mode, inputs={"frage": "{frage}"})
    assert reply.error is not None and reason in reply.error, reply.error
    assert reply.status == 200 and reply.fields == {}
    assert len(dify.requests) == 1  # retries: 0 here; a started stream is never sent again anyway
    if shape != "workflow-failed":
        assert "Die Konferenz" in reply.raw


def test_a_streamed_agent_run_records_time_to_first_token(tmp_path: Path, bqas_home: Path) -> None:
    dify = Dify("agent")
    samples = [{"id": "q1", "query": "Wann ist die Konferenz?"}]
    with ServedApp(dify.app()) as server:
        target = {"type": "dify", "base_url": f"{server.url}/v1", "api_key_env": "DIFY_TEST_KEY"}
        path = write_scenario(tmp_path, samples, target, judges=["rag_hallucination"])
        result = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "o")])
    assert result.exit_code in (0, 1), result.output
    (rec,) = records(tmp_path / "o")
    assert rec["status"] != "target_error", rec
    assert rec["inputs"]["response"] == "Die Konferenz ist am Donnerstag (Wann ist die Konferenz?)."
    assert rec["target"]["ttft_ms"] is not None and rec["target"]["total_tokens"] == 912
