"""The runtime localizer of RAGAS judge prompts (seed 004 §4.3, §5, §6) and the committed Chinese cache."""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ragas")

from bqas.llm.client import LLMClient, LLMConfig
from bqas.ragas import judge_prompts as jp
from bqas.ragas.adapters import SeamEmbedding, SeamLLM
from bqas.ragas.factory import build_metric
from bqas.ragas.metrics import LLM_METRICS
from bqas.testing.ragas_scripted import loopback_only

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "configs" / "judge_prompts" / "zh"
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(jp.PROMPTS_DIR_ENV, raising=False)
    jp.clear_cache()
    with loopback_only() as refused:
        yield
    jp.clear_cache()
    assert refused == []


def registry(*names: str) -> dict[str, Any]:
    """Fresh metrics; the LLM points at a closed port and is never called here."""
    llm = SeamLLM(LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="unused")))
    return {n: build_metric(n, llm, SeamEmbedding()) for n in (names or LLM_METRICS)}


def snapshot(reg: dict[str, Any]) -> dict[str, Any]:
    """Instruction, serialized examples and language of every prompt in the registry."""
    out = {}
    for name, metric in reg.items():
        for attr in jp.METRIC_PROMPT_ATTRS.get(name, ()):
            prompt = getattr(metric, attr)
            out[f"{name}.{attr}"] = (
                getattr(prompt, "instruction", None),
                jp.serialize_examples(jp.prompt_examples(prompt)) if jp.is_localizable(prompt) else None,
                getattr(prompt, "language", None),
            )
    return out


def write_fixture(root: Path, metric: str, attr: str, **changes: Any) -> dict[str, Any]:
    """A small Chinese cache file for (metric, attr) built from the live English prompt."""
    prompt = getattr(registry(metric)[metric], attr)
    examples = jp.serialize_examples(jp.prompt_examples(prompt))[:1]
    entry: dict[str, Any] = {
        "metric": metric,
        "prompt_attr": attr,
        "language": "chinese",
        "ragas_version": "0.4.3",
        "source_hash": jp.prompt_source_hash(prompt),
        "instruction": "测试指令：判断每条陈述能否从上下文中直接推断出来。",
        "examples": examples,
    }
    if metric == "faithfulness" and attr == "nli_statement_prompt":
        entry["examples"] = [
            {
                "input": {"context": "小明是学生。", "statements": ["小明是学生。"]},
                "output": {"statements": [{"statement": "小明是学生。", "reason": "上下文直接说明。", "verdict": 1}]},
            }
        ]
    entry.update(changes)
    folder = root / "zh"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / jp.cache_file_name(metric, attr)).write_text(json.dumps(entry, ensure_ascii=False), encoding="utf-8")
    return entry


def use_dir(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    monkeypatch.setenv(jp.PROMPTS_DIR_ENV, str(root))
    jp.clear_cache()


def test_metric_prompt_attrs_is_the_seed_table() -> None:
    assert jp.METRIC_PROMPT_ATTRS == {
        "faithfulness": ("statement_generator_prompt", "nli_statement_prompt"),
        "answer_relevancy": ("prompt",),
        "context_recall": ("prompt",),
        "context_precision": ("prompt",),
        "noise_sensitivity": ("statement_prompt", "faithfulness_prompt"),
        "factual_correctness": ("prompt", "nli_prompt"),
    }


def test_fixture_cache_overrides_instruction_and_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = write_fixture(tmp_path, "faithfulness", "nli_statement_prompt")
    use_dir(monkeypatch, tmp_path)
    reg = registry("faithfulness")
    report = jp.localize_pipeline_prompts(reg, "zh")
    prompt = reg["faithfulness"].nli_statement_prompt
    assert report.applied == ["faithfulness.nli_statement_prompt"]
    assert prompt.instruction == entry["instruction"]
    assert prompt.language == "chinese"
    [(inp, out)] = prompt.examples
    assert isinstance(inp, prompt.input_model) and isinstance(out, prompt.output_model)
    assert inp.statements == ["小明是学生。"] and out.statements[0].verdict == 1
    rendered = prompt.to_string(prompt.input_model(context="c", statements=["s"]))
    assert rendered.startswith(entry["instruction"]) and "小明是学生。" in rendered and "John" not in rendered
    # The other prompt of the metric has no file: English kept, with a warning naming it.
    assert reg["faithfulness"].statement_generator_prompt.language == "english"
    assert any(w.startswith("faithfulness.statement_generator_prompt:") for w in report.warnings)
    assert report.metric_language("faithfulness") == "mixed"


def test_other_instances_and_classes_keep_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_fixture(tmp_path, "faithfulness", "nli_statement_prompt")
    use_dir(monkeypatch, tmp_path)
    localized = registry("faithfulness")
    jp.localize_pipeline_prompts(localized, "zh")
    fresh = registry("faithfulness")["faithfulness"].nli_statement_prompt
    assert fresh.language == "english" and fresh.instruction.startswith("Your task is to judge")
    assert type(fresh).instruction.startswith("Your task is to judge")


def test_missing_file_keeps_english_without_raising(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "zh").mkdir()
    use_dir(monkeypatch, tmp_path)
    reg = registry("context_recall")
    before = snapshot(reg)
    report = jp.localize_pipeline_prompts(reg, "zh")
    assert snapshot(reg) == before
    assert report.applied == []
    assert len(report.warnings) == 1 and "context_recall__prompt.json not found" in report.warnings[0]


def test_missing_folder_warns_once_and_keeps_english(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    use_dir(monkeypatch, tmp_path / "nowhere")
    reg = registry()
    before = snapshot(reg)
    with caplog.at_level(logging.WARNING, logger="bqas.ragas.judge_prompts"):
        report = jp.localize_pipeline_prompts(reg, "zh")
        again = jp.localize_pipeline_prompts(registry(), "zh")
    assert snapshot(reg) == before
    assert len(report.warnings) == 1 and "no judge-prompt cache" in report.warnings[0]
    assert len(again.warnings) == 1
    assert len([r for r in caplog.records if "no judge-prompt cache" in r.getMessage()]) == 1  # logged once


def test_hash_mismatch_warns_and_still_applies_chinese(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    entry = write_fixture(tmp_path, "answer_relevancy", "prompt", source_hash="0" * 64)
    use_dir(monkeypatch, tmp_path)
    reg = registry("answer_relevancy")
    with caplog.at_level(logging.WARNING, logger="bqas.ragas.judge_prompts"):
        report = jp.localize_pipeline_prompts(reg, "zh")
    assert report.applied == ["answer_relevancy.prompt"]
    assert reg["answer_relevancy"].prompt.instruction == entry["instruction"]
    assert len(report.warnings) == 1 and "STALE" in report.warnings[0]
    assert "build_judge_prompt_cache.py" in report.warnings[0]
    assert any("STALE" in r.getMessage() for r in caplog.records)


def test_invalid_schema_falls_back_to_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = [{"input": {"answer_text": "x"}, "output": {"question": "问题？", "noncommittal": "不是数字"}}]
    write_fixture(tmp_path, "answer_relevancy", "prompt", examples=bad)
    use_dir(monkeypatch, tmp_path)
    reg = registry("answer_relevancy")
    before = snapshot(reg)
    report = jp.localize_pipeline_prompts(reg, "zh")
    assert snapshot(reg) == before  # nothing half-applied
    assert report.applied == []
    assert "no longer fit" in report.warnings[0]


def test_broken_json_file_falls_back_to_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "zh"
    folder.mkdir()
    (folder / "context_precision__prompt.json").write_text('{"metric": "context_precision", ', encoding="utf-8")
    use_dir(monkeypatch, tmp_path)
    reg = registry("context_precision")
    report = jp.localize_pipeline_prompts(reg, "zh")
    assert report.applied == [] and "unreadable" in report.warnings[0]
    assert reg["context_precision"].prompt.language == "english"


@pytest.mark.parametrize("language", ["en", "", "EN"])
def test_english_leaves_registry_unchanged(language: str) -> None:
    reg = registry()
    prompts_before = {k: copy.copy(vars(getattr(m, a))) for k, m in reg.items() for a in jp.METRIC_PROMPT_ATTRS[k]}
    report = jp.localize_pipeline_prompts(reg, language)
    prompts_after = {k: vars(getattr(m, a)) for k, m in reg.items() for a in jp.METRIC_PROMPT_ATTRS[k]}
    assert prompts_after == prompts_before  # no instance attribute added or changed
    assert report.applied == [] and report.skipped == {} and report.warnings == []


def test_second_call_reads_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_fixture(tmp_path, "faithfulness", "nli_statement_prompt")
    write_fixture(tmp_path, "answer_relevancy", "prompt")
    use_dir(monkeypatch, tmp_path)
    reads: list[Path] = []
    real = jp._read_file

    def counting(path: Path) -> str:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(jp, "_read_file", counting)
    first = jp.localize_pipeline_prompts(registry("faithfulness", "answer_relevancy"), "zh")
    assert len(reads) == 2
    second = jp.localize_pipeline_prompts(registry("faithfulness", "answer_relevancy"), "zh")
    assert len(reads) == 2  # served from memory
    assert second.applied == first.applied == ["faithfulness.nli_statement_prompt", "answer_relevancy.prompt"]


def test_noise_sensitivity_is_skipped_with_reason() -> None:
    reg = registry("noise_sensitivity")
    report = jp.localize_pipeline_prompts(reg, "zh")
    assert set(report.skipped) == {"noise_sensitivity.statement_prompt", "noise_sensitivity.faithfulness_prompt"}
    assert "to_string" in report.skipped["noise_sensitivity.statement_prompt"]
    assert report.metric_language("noise_sensitivity") == "en"
    assert report.warnings == []


def test_lookup_order_env_then_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    candidates = jp.cache_dir_candidates()
    assert candidates[0] == REPO / "configs" / "judge_prompts"  # running from this checkout
    assert candidates[-1] == Path(jp.__file__).resolve().parents[1] / "configs" / "judge_prompts"  # the wheel copy
    monkeypatch.setenv(jp.PROMPTS_DIR_ENV, str(tmp_path))
    assert jp.cache_dir_candidates() == [tmp_path]


# -- the committed Chinese cache ---------------------------------------------------------------------


def committed_files() -> list[Path]:
    return sorted(COMMITTED.glob("*.json"))


def test_committed_cache_covers_every_localizable_prompt() -> None:
    expected = {
        jp.cache_file_name(m, a)
        for m, attrs in jp.METRIC_PROMPT_ATTRS.items()
        if m not in jp.SKIPPED_METRICS
        for a in attrs
    }
    assert {p.name for p in committed_files()} == expected


def test_committed_source_hashes_match_installed_ragas() -> None:
    import ragas

    reg = registry()
    for path in committed_files():
        entry = json.loads(path.read_text(encoding="utf-8"))
        prompt = getattr(reg[entry["metric"]], entry["prompt_attr"])
        assert entry["source_hash"] == jp.prompt_source_hash(prompt), f"{path.name} is stale: rebuild the cache"
        assert entry["ragas_version"] == ragas.__version__
        assert entry["language"] == "chinese"
        assert set(entry) == {
            "metric",
            "prompt_attr",
            "language",
            "ragas_version",
            "source_hash",
            "instruction",
            "examples",
        }


def test_committed_cache_is_chinese_with_untranslated_keys() -> None:
    reg = registry()
    for path in committed_files():
        entry = json.loads(path.read_text(encoding="utf-8"))
        prompt = getattr(reg[entry["metric"]], entry["prompt_attr"])
        letters = [c for c in entry["instruction"] if c.isalpha()]
        assert len(CJK.findall(entry["instruction"])) / len(letters) > 0.6, path.name
        english = jp.serialize_examples(jp.prompt_examples(prompt))
        assert len(entry["examples"]) == len(english)
        for zh, en in zip(entry["examples"], english, strict=True):
            assert zh["input"].keys() == en["input"].keys() and zh["output"].keys() == en["output"].keys()
            assert CJK.search(json.dumps(zh, ensure_ascii=False)), path.name
        jp.rebuild_examples(prompt, entry["examples"])  # valid for the live models


def test_committed_cache_applies_cleanly() -> None:
    reg = registry()
    report = jp.localize_pipeline_prompts(reg, "zh")
    assert report.warnings == []
    assert len(report.applied) == 7
    assert report.source == COMMITTED
    for name in ("faithfulness", "answer_relevancy", "context_recall", "context_precision", "factual_correctness"):
        assert report.metric_language(name) == "zh"


@pytest.mark.parametrize(
    ("atomicity", "coverage"), [("low", "low"), ("low", "high"), ("high", "low"), ("high", "high")]
)
def test_factual_correctness_chinese_examples_reach_the_rendered_prompt(atomicity: str, coverage: str) -> None:
    reg = registry("factual_correctness")
    english = reg["factual_correctness"].prompt
    english_text = english.to_string(english.input_model(response="x", atomicity=atomicity, coverage=coverage))
    assert "Charles Babbage" in english_text
    jp.localize_pipeline_prompts(reg, "zh")
    prompt = reg["factual_correctness"].prompt
    text = prompt.to_string(prompt.input_model(response="x", atomicity=atomicity, coverage=coverage))
    assert "Charles Babbage" not in text and "查尔斯·巴贝奇" in text
    assert f'"atomicity": "{atomicity}"' in text  # control codes stay untranslated
    # Each (atomicity, coverage) renders its own example set, as in English.
    n_claims_en = english_text.count('"Charles Babbage was')
    n_claims_zh = text.count('"查尔斯·巴贝奇是')
    assert n_claims_en == n_claims_zh
