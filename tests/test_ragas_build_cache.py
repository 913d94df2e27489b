"""The judge-prompt cache builder (seed 004 §4.1): adapt() through the LLM seam, all-or-nothing writes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ragas")

from bqas.llm.client import LLMClient, LLMConfig
from bqas.ragas import judge_prompts as jp
from bqas.ragas.build_cache import BuildError, build_cache, targets
from bqas.testing.ragas_scripted import loopback_only
from bqas.testing.scripted_llm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")


def preset_chinese(payload: dict[str, Any]) -> Reply:
    """A scripted translator: every statement comes back as preset Chinese (same count, same order)."""
    text = payload["messages"][-1]["content"]
    statements = json.loads(text.split("Statements to translate:\n", 1)[1])
    return Reply(content=json.dumps({"statements": [f"中文译文：{s}" for s in statements]}, ensure_ascii=False))


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(jp.PROMPTS_DIR_ENV, raising=False)
    jp.clear_cache()
    with loopback_only() as refused:
        yield
    jp.clear_cache()
    assert refused == []


@pytest.fixture
def translator() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(responder=preset_chinese) as server:
        yield server


def client(server: ScriptedLLM) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.base_url, model="translator", max_retries=0))


async def test_build_writes_the_documented_files(translator: ScriptedLLM, tmp_path: Path) -> None:
    async with client(translator) as llm:
        paths = await build_cache("zh", llm, tmp_path)
    assert sorted(p.name for p in paths) == sorted(jp.cache_file_name(m, a) for m, a in targets())
    assert len(paths) == 7 and not any(p.name.startswith("noise_sensitivity") for p in paths)
    assert [p.name for p in tmp_path.iterdir()] == ["zh"]  # no temporary folder left behind
    # adapt() asks once for the examples and once for the instruction; factual_correctness.prompt has 4 sets.
    assert len(translator.requests) == 2 * 7 + 3
    for path in paths:
        entry = json.loads(path.read_text(encoding="utf-8"))
        assert list(entry) == [
            "metric",
            "prompt_attr",
            "language",
            "ragas_version",
            "source_hash",
            "instruction",
            "examples",
        ]
        assert path.name == jp.cache_file_name(entry["metric"], entry["prompt_attr"])
        assert entry["language"] == "chinese" and entry["ragas_version"] == "0.4.3"
        assert entry["instruction"].startswith("中文译文：")
        assert re.fullmatch(r"[0-9a-f]{64}", entry["source_hash"])
        for example in entry["examples"]:
            assert set(example) == {"input", "output"}
    fc = json.loads((tmp_path / "zh" / "factual_correctness__prompt.json").read_text(encoding="utf-8"))
    assert {(e["input"]["atomicity"], e["input"]["coverage"]) for e in fc["examples"]} == {
        ("low", "low"), ("low", "high"), ("high", "low"), ("high", "high"),
    }  # fmt: skip
    assert all(c.startswith("中文译文：") for e in fc["examples"] for c in e["output"]["claims"])


async def test_built_cache_is_what_the_localizer_applies(
    translator: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with client(translator) as llm:
        await build_cache("zh", llm, tmp_path)
    monkeypatch.setenv(jp.PROMPTS_DIR_ENV, str(tmp_path))
    jp.clear_cache()
    from bqas.ragas.factory import build_metric_pipeline

    pipeline = build_metric_pipeline(["faithfulness", "factual_correctness"], client=client(translator))
    report = jp.localize_pipeline_prompts(pipeline.metrics, "zh")
    assert report.warnings == [] and len(report.applied) == 4
    assert pipeline.metrics["faithfulness"].nli_statement_prompt.instruction.startswith("中文译文：Your task")


async def test_failing_adapt_leaves_the_old_cache_untouched(translator: ScriptedLLM, tmp_path: Path) -> None:
    old = tmp_path / "zh"
    old.mkdir()
    (old / "faithfulness__nli_statement_prompt.json").write_text('{"old": true}', encoding="utf-8")
    before = {p.name: p.read_bytes() for p in old.iterdir()}

    def flaky(payload: dict[str, Any]) -> Reply:
        # The claim-decomposition examples come back one statement short: adapt() raises, every retry.
        if "Charles Babbage" in payload["messages"][-1]["content"]:
            reply = preset_chinese(payload)
            data = json.loads(reply.content or "{}")
            return Reply(content=json.dumps({"statements": data["statements"][:-1]}, ensure_ascii=False))
        return preset_chinese(payload)

    translator.responder = flaky
    async with client(translator) as llm:
        with pytest.raises(BuildError, match=r"factual_correctness\.prompt: adapt\(\) failed 2 times"):
            await build_cache("zh", llm, tmp_path, retries=2)
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["zh"]


async def test_retry_recovers_from_a_transient_failure(translator: ScriptedLLM, tmp_path: Path) -> None:
    translator.push(Reply(status=500))  # first request fails; max_retries=0, so build_cache's retry handles it
    async with client(translator) as llm:
        paths = await build_cache("zh", llm, tmp_path, retries=2)
    assert len(paths) == 7


async def test_english_is_not_a_build_target(translator: ScriptedLLM, tmp_path: Path) -> None:
    async with client(translator) as llm:
        with pytest.raises(BuildError, match="language"):
            await build_cache("en", llm, tmp_path)


def test_script_builds_through_the_cli_code(translator: ScriptedLLM, tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_script", REPO / "scripts" / "build_judge_prompt_cache.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    args = [
        "--language",
        "zh",
        "--judge-model",
        "translator",
        "--base-url",
        translator.base_url,
        "--out",
        str(tmp_path),
    ]
    assert script.main(args) == 0
    assert len(list((tmp_path / "zh").glob("*.json"))) == 7
    assert script.main(["--language", "fr", "--out", str(tmp_path)]) == 2
