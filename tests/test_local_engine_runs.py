"""Runs on the real llama.cpp engine: a scenario with `llm.gguf` (RAGAS in Chinese included), and
`bqas calibrate --backend llm` on a few DEV gold samples.

The model is the session's SmolLM2-135M (`local_llm`). Its figures are poor, as they should be for a 135M
model: the tests check that they are real (computed from the engine's answers, the model named), not good.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.llm.local import LocalEngine
from bqas.testing.local_engine import TEST_CTX, TEST_SLOTS, TEST_THREADS

# The shared DEV datasets lie next to the repository (CI has them there too); tests must pass without them.
DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"

SAMPLE = {
    "id": "vida",
    "query": "MAGNETOM Vida 的设备总重是多少？",
    "response": "MAGNETOM Vida 的设备总重为 7370 kg。",
    "available_facts": ["设备总重 7370 kg"],
    "user_input": "MAGNETOM Vida 的设备总重是多少？",
    "retrieved_contexts": ["设备总重 7370 kg"],
    "reference": "设备总重 7370 kg。",
}

# A real engine on a shared CPU: a judgment takes seconds to a minute of wall time under load.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def short_replies(bqas_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_LLM_MAX_TOKENS", "160")
    from bqas.settings import get_settings

    get_settings.cache_clear()


def test_a_scenario_with_a_local_model_runs_the_judge_and_ragas_in_chinese(
    local_llm: LocalEngine, short_replies: None, tmp_path: Path
) -> None:
    (tmp_path / "models").mkdir()
    link = tmp_path / "models" / local_llm.model.path.name
    link.symlink_to(local_llm.model.path)  # llm.gguf relative to the scenario's folder
    (tmp_path / "d.jsonl").write_text(json.dumps(SAMPLE, ensure_ascii=False) + "\n", encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: zh-local\njudges: [rag_hallucination]\nmetrics: [faithfulness]\nlanguage: zh\njudge_language: zh\n"
        f"backend: llm\ndataset: d.jsonl\nllm:\n  gguf: models/{link.name}\n  n_ctx: {TEST_CTX}\n"
        f"  threads: {TEST_THREADS}\n  slots: {TEST_SLOTS}\nthresholds:\n  max_unscored: 2\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    runner = CliRunner()
    result = runner.invoke(app, ["run", str(path), "--no-progress", "--no-cache", "--out", str(out)])
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), result.output
    assert f"embedded llama.cpp engine: {local_llm.name} started in" in result.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    judge = next(r for r in records if r["judge"] == "rag_hallucination")
    assert judge["model"] == local_llm.name and judge["prompt_language"] == "zh"
    # Scored, or one of the small model's two named failures (never a timeout or an error of ours).
    assert judge["status"] == "scored" or judge["unscored_reason"].startswith(
        ("the judge's reply was cut off at the token limit (160)", "judge reply failed validation twice: ")
    ), judge["unscored_reason"]
    [faith] = [r for r in records if r["judge"] == "ragas"]
    # ragas through the engine with the Chinese prompts: a value in [0, 1], or unscored saying why.
    assert faith["metric"] == "faithfulness" and faith["judge_language"] == "zh" and faith["prompt_language"] == "zh"
    if faith["status"] == "scored":
        assert 0.0 <= faith["faithfulness"] <= 1.0
    else:
        assert faith["unscored_reason"] and faith.get("faithfulness") is None
    assert faith["llm_calls"] >= 1
    # The run's config and report name the model and the engine, with its start-up time.
    from bqas.store.db import open_store

    run_id = json.loads(runner.invoke(app, ["runs", "--json"]).output)[0]["id"]
    run = open_store().get_run(run_id)
    assert run is not None and run.config["model"] == local_llm.name
    engine = run.config["llm_engine"]
    assert engine["gguf"] == str(local_llm.model.path) and engine["start_seconds"] > 0
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "LLM engine" in report and "llama.cpp (embedded)" in report


def _halluqa_gold(path: Path, questions: int) -> Path:
    """HalluQA (Apache-2.0) as rag_hallucination gold, as benchmarks/trust/prepare_gold.py makes it:
    leave-one-out facts, one accepted (a right answer) and one rejected (a wrong answer) record per question."""
    rows = []
    with (DATASETS / "hallucination_zh.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            item = json.loads(line)
            if len(item["right_answers"]) < 2:
                continue
            facts = item["right_answers"][1:]
            for answer, verdict, gate in (
                (item["right_answers"][0], "production_ready", "pass"),
                (item["wrong_answers"][0], "failed", "fail"),
            ):
                expected = {"verdict": verdict, "invention_detection": gate}
                rows.append(
                    {"query": item["question"], "response": answer, "available_facts": facts, "expected": expected}
                )
            if len(rows) >= 2 * questions:
                break
    gold = path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return gold


@pytest.mark.skipif(not (DATASETS / "hallucination_zh.jsonl").is_file(), reason="shared DEV datasets not here")
def test_calibrate_on_the_engine_gives_real_figures_with_the_model_named(
    local_llm: LocalEngine, short_replies: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in (("CTX", TEST_CTX), ("THREADS", TEST_THREADS), ("SLOTS", TEST_SLOTS)):
        monkeypatch.setenv(f"BQAS_LLM_GGUF_{name}", str(value))
    from bqas.settings import get_settings

    get_settings.cache_clear()
    gold = _halluqa_gold(tmp_path, questions=1)
    args = ["calibrate", "--gold", str(gold), "--judge", "rag_hallucination", "--backend", "llm", "--language", "zh"]
    result = CliRunner().invoke(app, [*args, "--llm-gguf", str(local_llm.model.path), "--no-cache", "--json"])
    assert "Traceback" not in result.output
    doc = json.loads(result.stdout)
    # Two gold samples can never show a target met: missed (1) or not enough evidence (3), as the outcome says.
    assert result.exit_code == {"missed": 1, "not enough evidence": 3}[doc["outcome"]], result.output
    [config] = doc["configs"]
    assert config["model"] == local_llm.name and config["backend"] == "llm"
    overall = config["calibration"]["overall"]
    assert overall["samples"] == 2 and overall["scored"] + overall["unscored"] == 2
    # Figures computed from the engine's verdicts; none where nothing was scored, and then it says why.
    agreement = overall["verdicts"]["agreement"]
    if overall["scored"]:
        assert agreement["n"] == overall["scored"] and 0.0 <= agreement["value"] <= 1.0
    else:
        assert agreement["value"] is None and agreement["undefined"]
