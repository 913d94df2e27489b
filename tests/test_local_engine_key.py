"""The embedded llama.cpp engine on a loopback port every local process can reach: it answers only
requests with this process's random key, which BQAS's LLM client sends; a GGUF path that is not a regular
file (a FIFO would block the read forever) is refused before it is opened."""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bqas.llm.client import LLMClient, LLMConfig
from bqas.llm.local import LocalEngine, LocalEngineError, check_gguf, engine_key


def _status(url: str, key: str | None = None, body: bytes | None = None) -> int:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_engine_answers_only_with_its_key(local_llm: LocalEngine) -> None:
    root = local_llm.base_url.removesuffix("/v1")
    chat = json.dumps({"model": local_llm.name, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})
    for path in ("/slots", "/metrics", "/props", "/v1/models"):
        assert _status(root + path) == 401, path  # another local process, without the key
        assert _status(root + path, key="guessed-key") == 401, path
        assert _status(root + path, key=local_llm.api_key) == 200, path
    assert _status(local_llm.base_url + "/chat/completions", body=chat.encode()) == 401
    assert len(local_llm.api_key) >= 32 and local_llm.api_key not in json.dumps(local_llm.info())
    assert engine_key(local_llm.base_url) == local_llm.api_key
    assert engine_key("http://127.0.0.1:9/v1") is None


async def test_the_llm_client_sends_the_engines_key(local_llm: LocalEngine) -> None:
    llm = LLMClient(LLMConfig(base_url=local_llm.base_url, model=local_llm.name, max_tokens=4, max_retries=0))
    try:
        completion = await llm.complete([{"role": "user", "content": "Sag Hallo."}])
    finally:
        await llm.aclose()
    assert completion.completion_tokens >= 1


def test_a_gguf_path_that_is_not_a_regular_file_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    outcome: list[BaseException | Path] = []

    def check() -> None:
        try:
            outcome.append(check_gguf(fifo))
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    worker = threading.Thread(target=check, daemon=True)
    worker.start()
    worker.join(timeout=60)  # a guard against a hang, not a measured time
    if worker.is_alive():  # opening a FIFO with no writer blocks: unblock the thread before failing
        with fifo.open("wb"):
            pass
        pytest.fail("check_gguf blocked on a FIFO")
    (result,) = outcome
    assert isinstance(result, LocalEngineError) and "not a regular file" in str(result)
