"""The LLM seam against a real scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from bqas.llm.client import LLMClient, LLMConfig, LLMError, parse_retry_after
from bqas.testing.scripted_llm import Reply, ScriptedLLM

MESSAGES = [{"role": "user", "content": "Sag hallo"}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def _client(server: ScriptedLLM, **kw: object) -> LLMClient:
    options: dict[str, object] = {"backoff_base": 0.05, "timeout": 5.0, **kw}
    config = LLMConfig(base_url=server.base_url, model="judge-1", **options)  # type: ignore[arg-type]
    return LLMClient(config)


async def test_plain_completion_counts_tokens(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(content='{"a": 1}', prompt_tokens=11, completion_tokens=7))
    async with _client(scripted_llm) as client:
        out = await client.complete(MESSAGES, schema=SCHEMA)
    assert out.text == '{"a": 1}'
    assert (out.prompt_tokens, out.completion_tokens, out.calls) == (11, 7, 1)
    assert client.usage.prompt_tokens == 11 and client.usage.calls == 1
    sent = scripted_llm.requests[0]
    assert sent["temperature"] == 0.0 and sent["model"] == "judge-1"
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA


def _recorded_pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the client asks for between attempts (recorded, not slept: what counts is the request)."""
    from bqas.llm import client as client_module

    pauses: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, *args: Any) -> Any:
        pauses.append(delay)
        return await real_sleep(0, *args)

    monkeypatch.setattr(client_module.asyncio, "sleep", sleep)
    return pauses


async def test_retry_after_is_honoured_on_429(scripted_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    scripted_llm.push(Reply(status=429, headers={"Retry-After": "7"}), Reply(content='{"a": 2}'))
    async with _client(scripted_llm) as client:
        pauses = _recorded_pauses(monkeypatch)
        out = await client.complete(MESSAGES, schema=SCHEMA)
        monkeypatch.undo()
    assert out.text == '{"a": 2}' and out.calls == 2
    assert 7.0 in pauses, "the client must wait the Retry-After seconds, not its own short backoff"
    assert client.usage.retries == 1


async def test_retry_after_longer_than_allowed_gives_up(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(status=503, headers={"Retry-After": "600"}))
    async with _client(scripted_llm, max_retry_after=5.0) as client:
        with pytest.raises(LLMError) as err:
            await client.complete(MESSAGES, schema=SCHEMA)
    assert err.value.status == 503 and err.value.retry_after == 600


async def test_500_is_retried_with_backoff(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(status=500), Reply(status=502), Reply(content='{"a": 3}'))
    async with _client(scripted_llm) as client:
        out = await client.complete(MESSAGES, schema=SCHEMA)
    assert out.text == '{"a": 3}' and out.calls == 3


async def test_persistent_500_fails_after_max_retries(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default = Reply(status=500)
    async with _client(scripted_llm, max_retries=2) as client:
        with pytest.raises(LLMError, match="HTTP 500"):
            await client.complete(MESSAGES)
    assert len(scripted_llm.requests) == 3


async def test_hanging_request_times_out_with_a_message_that_says_what_to_do(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default = Reply(hang=True)
    async with _client(scripted_llm, timeout=0.3, max_retries=1) as client:
        with pytest.raises(LLMError, match="timed out") as err:
            await client.complete(MESSAGES)
    message = str(err.value)
    assert "BQAS_LLM_TIMEOUT" in message and "BQAS_LLM_CONCURRENCY" in message and "0.3 s" in message
    # Both attempts count, though neither answered.
    assert err.value.timed_out and err.value.calls == 2
    assert client.usage.calls == 2 and client.usage.timeouts == 2


async def test_llama_cpp_style_server_falls_back_to_json_object_and_remembers(tmp_path: Path) -> None:
    with ScriptedLLM(default=Reply(content='{"a": 4}'), reject_json_schema=True) as server:
        async with _client(server) as client:
            first = await client.complete(MESSAGES, schema=SCHEMA)
            second = await client.complete([{"role": "user", "content": "noch mal"}], schema=SCHEMA)
        kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert first.text == '{"a": 4}' and first.mode == "json_object" and first.calls == 2
    assert second.calls == 1 and client.mode == "json_object"
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert server.requests[1]["response_format"]["schema"] == SCHEMA


async def test_server_without_response_format_falls_back_to_prompting(scripted_llm: ScriptedLLM) -> None:
    def responder(payload: dict[str, object]) -> Reply:
        if "response_format" in payload:
            return Reply(status=400, body='{"error": {"message": "response_format not supported"}}')
        return Reply(content='{"a": 5}')

    scripted_llm.responder = responder
    async with _client(scripted_llm) as client:
        out = await client.complete(MESSAGES, schema=SCHEMA)
    assert out.mode == "prompt" and out.text == '{"a": 5}'


async def test_cache_serves_repeats_and_never_stores_rejected_replies(
    scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    scripted_llm.push(Reply(content="kaputt"), Reply(content='{"a": 6}'))
    async with _client(scripted_llm, cache_path=cache) as client:
        bad = await client.complete(MESSAGES, schema=SCHEMA, accept=lambda t: t.startswith("{"))
        good = await client.complete(MESSAGES, schema=SCHEMA, accept=lambda t: t.startswith("{"))
        again = await client.complete(MESSAGES, schema=SCHEMA, accept=lambda t: t.startswith("{"))
    assert bad.text == "kaputt" and good.text == '{"a": 6}'
    assert again.cache_hit and again.calls == 0 and again.text == '{"a": 6}'
    assert len(scripted_llm.requests) == 2
    # A new client (a new process) reads the same cache file.
    async with _client(scripted_llm, cache_path=cache) as client2:
        assert (await client2.complete(MESSAGES, schema=SCHEMA)).cache_hit
    assert len(scripted_llm.requests) == 2


async def test_cache_sqlite_io_runs_off_the_event_loop(
    scripted_llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite reads, writes and commits on the loop would stall every other request.
    import threading

    from bqas.llm.cache import ResponseCache

    threads: list[tuple[str, int]] = []
    real_get, real_flush = ResponseCache.get_many, ResponseCache.flush

    def get_many(self: ResponseCache, keys: object) -> object:
        threads.append(("get", threading.get_ident()))
        return real_get(self, keys)  # type: ignore[arg-type]

    def flush(self: ResponseCache) -> int:
        threads.append(("flush", threading.get_ident()))
        return real_flush(self)

    monkeypatch.setattr(ResponseCache, "get_many", get_many)
    monkeypatch.setattr(ResponseCache, "flush", flush)
    scripted_llm.push(Reply(content='{"a": 1}'))
    loop_thread = threading.get_ident()
    async with _client(scripted_llm, cache_path=tmp_path / "c.sqlite") as client:
        first = await client.complete(MESSAGES, schema=SCHEMA)
        second = await client.complete(MESSAGES, schema=SCHEMA)  # answered from the reply kept in memory
    assert not first.cache_hit and second.cache_hit and second.text == '{"a": 1}'
    assert [op for op, _ in threads] == ["get", "get", "flush"]  # written once, when the client closed
    assert all(ident != loop_thread for _, ident in threads)
    async with _client(scripted_llm, cache_path=tmp_path / "c.sqlite") as client2:  # a new process
        assert (await client2.complete(MESSAGES, schema=SCHEMA)).cache_hit
    assert len(scripted_llm.requests) == 1


def _sql_trace(client: LLMClient) -> list[str]:
    """Every SQL statement the client's cache file runs from now on."""
    assert client.cache is not None
    statements: list[str] = []
    client.cache._conn.set_trace_callback(statements.append)
    return statements


async def test_cache_writes_are_batched_in_few_transactions(scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    # One commit per reply was most of the cache's CPU in a run with the defaults.
    from bqas.llm.cache import FLUSH_EVERY

    n = FLUSH_EVERY + 36
    scripted_llm.default = Reply(content='{"a": 2}')
    async with _client(scripted_llm, cache_path=tmp_path / "c.sqlite") as client:
        statements = _sql_trace(client)
        for i in range(n):
            await client.complete([{"role": "user", "content": f"Frage {i}"}], schema=SCHEMA)
    assert statements.count("COMMIT") == 2  # one full batch, the rest when the client closed
    async with _client(scripted_llm, cache_path=tmp_path / "c.sqlite") as again:
        hits = [await again.complete([{"role": "user", "content": f"Frage {i}"}], schema=SCHEMA) for i in range(n)]
    assert all(h.cache_hit for h in hits) and len(scripted_llm.requests) == n


async def test_concurrent_cache_lookups_share_queries(scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    # Not a thread hop and a query per lookup: 64 concurrent requests share a few queries.
    scripted_llm.default = Reply(content='{"a": 3}')
    async with _client(scripted_llm, cache_path=tmp_path / "c.sqlite", concurrency=64) as client:
        statements = _sql_trace(client)
        first = await asyncio.gather(
            *(client.complete([{"role": "user", "content": f"F {i}"}], schema=SCHEMA) for i in range(64))
        )
        second = await asyncio.gather(
            *(client.complete([{"role": "user", "content": f"F {i}"}], schema=SCHEMA) for i in range(64))
        )
    selects = [q for q in statements if q.startswith("SELECT")]
    assert not any(r.cache_hit for r in first) and all(r.cache_hit for r in second)
    assert [r.text for r in second] == ['{"a": 3}'] * 64
    assert 1 <= len(selects) <= 8, len(selects)
    assert len(scripted_llm.requests) == 64


async def test_concurrency_limit_is_respected() -> None:
    with ScriptedLLM(default=Reply(content="{}"), latency=0.2) as server:
        async with _client(server, concurrency=2) as client:
            await asyncio.gather(*(client.complete([{"role": "user", "content": str(i)}]) for i in range(6)))
        # The server counts the requests it works on at once: never more than the limit, and all six answered.
        assert server.peak_active == 2 and len(server.requests) == 6


async def test_malformed_completion_body_is_an_error(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(body='{"choices": []}'))
    async with _client(scripted_llm, max_retries=0) as client:
        with pytest.raises(LLMError, match="malformed"):
            await client.complete(MESSAGES)


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    value = parse_retry_after(future)
    assert value is not None and 25 <= value <= 31


async def test_timed_out_requests_are_dropped_by_the_server_and_not_piled_on() -> None:
    # A one-request-at-a-time server (llama.cpp with one slot) slower than the client's timeout.
    with ScriptedLLM(default=Reply(content='{"a": 1}'), latency=2.0, slots=1) as server:
        async with _client(server, timeout=0.3, max_retries=1, concurrency=4) as client:
            results = await asyncio.gather(
                *(client.complete([{"role": "user", "content": f"q{i}"}]) for i in range(4)), return_exceptions=True
            )
            limit = client._limit
        for _ in range(100):  # give the server's event loop a moment to see the closed connections
            if server.cancelled == len(server.requests) and server.active == 0:
                break
            await asyncio.sleep(0.05)
        cancelled, active, sent = server.cancelled, server.active, len(server.requests)
    assert all(isinstance(r, LLMError) and r.timed_out for r in results)
    assert sum(r.calls for r in results if isinstance(r, LLMError)) == sent == 8
    # Closing the connection told the server to stop: nothing BQAS gave up on is still running there.
    assert cancelled == sent and active == 0
    # After timeouts the client keeps one request in flight, not four plus retries.
    assert limit is not None and limit.limit == 1


async def test_negotiated_format_survives_a_timeout() -> None:
    with ScriptedLLM(default=Reply(content='{"a": 4}'), reject_json_schema=True) as server:
        server.push(Reply(hang=True))  # the json_object request (after json_schema was refused) times out
        async with _client(server, timeout=0.3, max_retries=0) as client:
            with pytest.raises(LLMError, match="timed out") as err:
                await client.complete(MESSAGES, schema=SCHEMA)
            after = await client.complete(MESSAGES, schema=SCHEMA)
        kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert err.value.calls == 2
    assert kinds == ["json_schema", "json_object", "json_object"] and after.calls == 1


async def test_max_tokens_from_the_caller_unless_configured(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default = Reply(content='{"a": 1}')
    async with _client(scripted_llm) as client:
        await client.complete(MESSAGES, max_tokens=300)
    async with _client(scripted_llm, max_tokens=900) as client:
        await client.complete(MESSAGES, max_tokens=300)
        await client.complete(MESSAGES)
    assert [r["max_tokens"] for r in scripted_llm.requests] == [300, 900, 900]


async def test_a_bare_400_for_one_request_does_not_demote_the_servers_format(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(Reply(status=400), Reply(status=400), Reply(status=400))
    scripted_llm.default = Reply(content='{"a": 1}')
    async with _client(scripted_llm) as client:
        with pytest.raises(LLMError, match="HTTP 400") as err:
            await client.complete(MESSAGES, schema=SCHEMA)
        after = await client.complete(MESSAGES, schema=SCHEMA)
    assert err.value.calls == 3  # json_schema, json_object, plain prompting: all counted
    assert after.mode == "json_schema" and after.calls == 1


async def test_clients_of_one_server_share_its_in_flight_limit() -> None:
    # The service builds one client per backend; together they must not exceed the server's limit.
    with ScriptedLLM(default=Reply(content='{"a": 1}'), latency=0.2) as server:
        async with _client(server, concurrency=2) as first, _client(server, concurrency=2) as second:
            calls = [c.complete([{"role": "user", "content": f"q{i}"}]) for i in range(3) for c in (first, second)]
            replies = await asyncio.gather(*calls)
        peak = server.peak_active
    assert len(replies) == 6 and all(r.text == '{"a": 1}' for r in replies)
    assert peak == 2


async def test_requests_are_sent_as_json_with_the_json_content_type() -> None:
    # The body is encoded once with orjson and sent as bytes (hot path); servers still need
    # Content-Type: application/json. A raw server on 127.0.0.1 reads the request as it arrives.
    import json

    seen: dict[str, object] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
        body = await reader.readexactly(int(headers["content-length"]))
        seen.update(content_type=headers.get("content-type"), body=json.loads(body))
        answer = json.dumps({"choices": [{"message": {"content": '{"a": 1}'}, "finish_reason": "stop"}]}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(answer))
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="judge-1", structured_output="prompt")
        async with LLMClient(config) as client:
            out = await client.complete([{"role": "user", "content": "Grüß {dich} \u2028"}])
    finally:
        server.close()
        await server.wait_closed()
    assert out.text == '{"a": 1}'
    assert seen["content_type"] == "application/json"
    body = seen["body"]
    assert isinstance(body, dict) and body["messages"] == [{"role": "user", "content": "Grüß {dich} \u2028"}]


async def test_a_prompt_over_the_context_is_not_taken_for_a_rejected_format(scripted_llm: ScriptedLLM) -> None:
    # llama.cpp's answer to a prompt longer than its context, word for word.
    body = (
        '{"error":{"code":400,"message":"request (5120 tokens) exceeds the available context size (4096 tokens),'
        ' try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5120,"n_ctx":4096}}'
    )
    scripted_llm.push(Reply(status=400, body=body))
    from bqas.llm.client import PromptTooLong

    client = LLMClient(LLMConfig(base_url=scripted_llm.base_url, model="m", max_retries=2))
    try:
        with pytest.raises(PromptTooLong, match=r"does not fit the model's context: request \(5120 tokens\)") as exc:
            await client.complete([{"role": "user", "content": "x"}], schema={"type": "object"})
    finally:
        await client.aclose()
    assert exc.value.calls == 1 and len(scripted_llm.requests) == 1  # no retry, no other format tried
    assert not client.server.rejected_modes
