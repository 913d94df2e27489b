"""RAGAS `metrics:` in a scenario: one stored record per (sample, metric), judge_language reaches the
prompts, thresholds on `ragas.<metric>`, resume skips finished metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.testing.ragas_scripted import ragas_responder
from bqas.testing.scripted_llm import Reply, ScriptedLLM

JUDGE_ANSWER = {
    "grounding_score": 90,
    "invention_detection": "pass",
    "source_attribution": 4,
    "hallucinated_claims": [],
    "reasoning": "回答与事实一致。",
}


def responder(payload: dict[str, Any]) -> Reply | None:
    """The BQAS judge gets a fixed valid answer; RAGAS prompts get the scripted RAGAS answers."""
    if (payload.get("response_format") or {}).get("json_schema", {}).get("name") == "rag_hallucination":
        return Reply(content=json.dumps(JUDGE_ANSWER, ensure_ascii=False))
    return ragas_responder(payload)


SAMPLES = [
    {
        "id": "vida",
        "judge": ["rag_hallucination", "ragas"],
        "query": "MAGNETOM Vida 的设备总重是多少？",
        "response": "MAGNETOM Vida 的设备总重为 7370 kg。",
        "available_facts": ["设备总重 7370 kg"],
        "user_input": "MAGNETOM Vida 的设备总重是多少？",
        "retrieved_contexts": ["设备总重 7370 kg"],
        "reference": "设备总重 7370 kg。",
    },
    {
        "id": "vida-wrong",
        "query": "MAGNETOM Vida 的设备总重是多少？",
        "response": "MAGNETOM Vida 的设备总重为 7730 kg。",
        "available_facts": ["设备总重 7370 kg"],
        "user_input": "MAGNETOM Vida 的设备总重是多少？",
        "retrieved_contexts": ["设备总重 7370 kg"],
        "reference": "设备总重 7370 kg。",
    },
]


def _scenario(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in SAMPLES), "utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: zh-ragas\njudges: [rag_hallucination]\nmetrics: [faithfulness, semantic_similarity]\n"
        f"language: zh\njudge_language: zh\nbackend: auto\ndataset: d.jsonl\n{extra}",
        encoding="utf-8",
    )
    return path


def test_metrics_are_stored_per_sample_and_use_chinese_prompts(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    with ScriptedLLM(responder=responder) as server:
        path = _scenario(tmp_path, "thresholds:\n  dimensions: {ragas.faithfulness: 0.0}\n")
        out = tmp_path / "out"
        result = runner.invoke(
            app, ["run", str(path), "--no-progress", "--out", str(out), "--base-url", server.base_url, "--model", "m"]
        )
        assert result.exit_code == 0, result.output
        sent = [m["content"] for r in server.requests for m in r["messages"]]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    ragas = [r for r in records if r["judge"] == "ragas"]
    assert sorted((r["sample_id"], r["metric"]) for r in ragas) == [
        ("vida", "faithfulness"),
        ("vida", "semantic_similarity"),
        ("vida-wrong", "faithfulness"),
        ("vida-wrong", "semantic_similarity"),
    ]
    faith = [r for r in ragas if r["metric"] == "faithfulness"]
    assert all(r["status"] == "scored" and 0.0 <= r["faithfulness"] <= 1.0 for r in faith)
    assert all(r["prompt_language"] == "zh" and r["judge_language"] == "zh" for r in faith)
    assert all(r["dimensions"]["faithfulness"]["method"] == "ragas:faithfulness" for r in faith)
    assert [r["judge"] for r in records if r["sample_id"] == "vida"] == ["rag_hallucination", "ragas", "ragas"]
    # The Chinese instruction reached the LLM (seed 004: judge_language zh switches the RAGAS prompts).
    assert any("陈述" in text or "语句" in text for text in sent)
    # RAGAS records have no verdict, so the pass rate is over the judge's results only.
    summary = json.loads(runner.invoke(app, ["runs", "--json"]).output)[0]
    assert summary["verdicts"] == {"production_ready": 1, "failed": 1}  # the offline gate catches 7730 kg
    assert summary["pass_rate"] == 0.5


def test_resume_does_not_rescore_finished_metrics(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    with ScriptedLLM(responder=responder) as server:
        path = _scenario(tmp_path)
        args = ["--no-progress", "--base-url", server.base_url, "--model", "m", "--no-cache"]
        assert runner.invoke(app, ["run", str(path), *args, "--out", str(tmp_path / "a")]).exit_code == 0
        run_id = json.loads(runner.invoke(app, ["runs", "--json"]).output)[0]["id"]
        before = len(server.requests)
        again = runner.invoke(app, ["run", "--resume", run_id, *args, "--out", str(tmp_path / "b")])
        assert again.exit_code == 0 and "judged now: 0" in again.output
        assert len(server.requests) == before


def test_unknown_metric_threshold_is_refused(tmp_path: Path, bqas_home: Path) -> None:
    path = _scenario(tmp_path, "thresholds:\n  dimensions: {ragas.context_recall: 0.5}\n")
    result = CliRunner().invoke(app, ["run", str(path), "--no-progress"])
    assert result.exit_code == 2 and "thresholds.dimensions.ragas.context_recall" in result.output
