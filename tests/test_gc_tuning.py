"""The runner's GC setting: taken for the time of a run, given back exactly after it."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judgment.spec import default_registry
from bqas.llm.client import LLMClient, LLMConfig
from bqas.runner.execute import execute_run
from bqas.runner.gc_tuning import RUN_GEN0_THRESHOLD, fewer_collections
from bqas.runner.loop import new_event_loop
from bqas.runner.scenario import load_scenario
from bqas.store.db import open_store
from bqas.testing.scripted_llm import Reply, ScriptedLLM


@pytest.fixture(autouse=True)
def _default_thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def test_threshold_raised_inside_and_restored_after() -> None:
    gc.set_threshold(700, 7, 9)
    with fewer_collections():
        assert gc.get_threshold() == (RUN_GEN0_THRESHOLD, 7, 9)
    assert gc.get_threshold() == (700, 7, 9)


def test_nested_runs_keep_it_until_the_last_one_ends() -> None:
    with fewer_collections():
        with fewer_collections():
            assert gc.get_threshold()[0] == RUN_GEN0_THRESHOLD
        assert gc.get_threshold()[0] == RUN_GEN0_THRESHOLD  # the outer run is still judging
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_when_the_run_fails() -> None:
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("writer died")
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("threshold", [0, 50_000])
def test_a_users_own_setting_is_left_alone(threshold: int) -> None:
    gc.set_threshold(threshold, 10, 10)  # 0: collection switched off; 50,000: already higher
    with fewer_collections():
        assert gc.get_threshold()[0] == threshold
    assert gc.get_threshold() == (threshold, 10, 10)


def test_execute_run_judges_under_it_and_gives_it_back(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "id": f"s{i}",
                    "user_input": "Termin?",
                    "detected_intent": "r",
                    "expected_intent": "r",
                    "response": f"Ja {i}.",
                }
            )
            + "\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    (tmp_path / "s.yaml").write_text("name: g\njudges: [voice]\nbackend: llm\ndataset: data.jsonl\n", encoding="utf-8")
    store = open_store(f"sqlite:///{tmp_path / 'g.sqlite'}")
    store.create_run("g", "g", {}, total=3)
    seen: list[int] = []
    reply = {
        "intent_accuracy": 90,
        "faithfulness": 5,
        "relevance": 5,
        "coherence": 5,
        "safety": "pass",
        "reasoning": "Gut.",
    }
    with ScriptedLLM(default=Reply(content=json.dumps(reply))) as server:
        llm = LLMClient(LLMConfig(base_url=server.base_url, model="judge-1", timeout=10.0, max_retries=0))
        engine = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
        loop = new_event_loop()
        try:
            judged = loop.run_until_complete(
                execute_run(
                    engine,
                    load_scenario(tmp_path / "s.yaml"),
                    store,
                    "g",
                    concurrency=2,
                    on_progress=lambda n: seen.append(gc.get_threshold()[0]),
                )
            )
            loop.run_until_complete(llm.aclose())
        finally:
            loop.close()
    assert judged == 3 and store.count_results("g") == 3
    assert seen and all(t == RUN_GEN0_THRESHOLD for t in seen)  # the writer's progress hook ran during the run
    assert gc.get_threshold() == (700, 10, 10)


def test_bqas_run_writes_its_summary_under_it_too(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary and report files read every record back after the judging: same setting there."""
    from typer.testing import CliRunner

    import bqas.runner.run as run_module
    from bqas.cli.main import app
    from bqas.runner.summary import summarize as real

    seen: list[int] = []

    def observed(records: Any) -> Any:
        seen.append(gc.get_threshold()[0])
        return real(records)

    monkeypatch.setattr(run_module, "summarize", observed)
    rows = [
        {"id": f"s{i}", "user_input": "Termin?", "detected_intent": "r", "expected_intent": "r", "response": f"Ja {i}."}
        for i in range(2)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "s.yaml").write_text("name: g\njudges: [voice]\nbackend: llm\ndataset: data.jsonl\n", encoding="utf-8")
    reply = {"intent_accuracy": 90, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass"}
    with ScriptedLLM(default=Reply(content=json.dumps({**reply, "reasoning": "Gut."}))) as server:
        monkeypatch.setenv("BQAS_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("BQAS_JUDGE_MODEL", "judge-1")
        out = CliRunner().invoke(
            app, ["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "--no-progress"]
        )
    assert out.exit_code == 0, out.output
    assert seen == [RUN_GEN0_THRESHOLD]
    assert gc.get_threshold() == (700, 10, 10)
