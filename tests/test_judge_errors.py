"""``judge_error``: a result whose judging failed for a reason outside the sample (a lost Ray node, a
worker that kept dying). It misses the ``max_judge_errors`` gate (default 0: exit 1), shows in the
summary, JUnit and the report, is not "done" for ``--resume``, and the result of judging it again
replaces it in the store (never the other way round)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from tests.pg_support import PG_URL, fresh_postgres_database
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.runner.execute import judge_error_record, work_items
from bqas.runner.scenario import load_scenario
from bqas.settings import get_settings
from bqas.store.db import Store, open_store

BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one)")),
]
REASON = "judging failed 3 times on the Ray cluster: ActorDiedError: The actor died because its node has died."


def _scenario(tmp_path: Path) -> Path:
    rows = [
        {
            "id": f"s{i}",
            "user_input": f"Erinnere mich an Termin {i}",
            "detected_intent": "reminder",
            "response": f"Ich erinnere dich an Termin {i}.",
            "expected_intent": "reminder",
        }
        for i in range(5)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = tmp_path / "scenario.yaml"
    path.write_text(
        f"name: judge-errors-{secrets.token_hex(3)}\njudges: [voice]\nlanguage: de\nbackend: offline\n"
        "dataset: data.jsonl\n",
        encoding="utf-8",
    )
    return path


def _as_judge_error(store: Store, run_id: str, scenario_path: Path, sample: str) -> None:
    """Put what a lost node leaves behind in place of ``sample``'s stored result."""
    from sqlalchemy import delete

    from bqas.store.models import ResultRow

    work = next(w for w in work_items(load_scenario(scenario_path)) if w.item.sample_id == sample)
    with store.session.begin() as s:
        s.execute(delete(ResultRow).where(ResultRow.run_id == run_id, ResultRow.sample_key == work.key))
    store.add_results(run_id, [(work.key, work.seq, judge_error_record(run_id, work, REASON, "de"))])


def _show(run_id: str) -> dict[str, Any]:
    shown = CliRunner().invoke(app, ["show", run_id, "--json"])
    assert shown.exit_code == 0, shown.output
    return dict(json.loads(shown.output))


def test_a_judge_error_misses_its_gate_and_resume_judges_it_again(tmp_path: Path, bqas_home: Path) -> None:
    path = _scenario(tmp_path)
    first = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "o")])
    assert first.exit_code == 0, first.output
    store = open_store(get_settings().resolved_database_url())
    (run,) = store.list_runs(1)
    _as_judge_error(store, run.id, path, "s2")

    shown = _show(run.id)
    assert shown["summary"]["judge_errors"] == 1
    gate = next(t for t in shown["thresholds"] if t["name"] == "max_judge_errors")
    assert gate == {"name": "max_judge_errors", "expected": 0, "actual": 1, "passed": False}
    assert "s2::voice" not in store.done_keys(run.id)  # not done: a resume judges it again

    # What a run that ends like this writes: the failed gate and the error in JUnit and the report.
    from bqas.runner.run import _run_meta, write_outputs
    from bqas.runner.scenario import Thresholds
    from bqas.runner.summary import check_thresholds, summarize

    summary = summarize(store.iter_records(run.id))
    gates = check_thresholds(summary, Thresholds())
    write_outputs(store, run.id, tmp_path / "before", _run_meta(store, run.id, summary, gates, None))
    junit = (tmp_path / "before" / "junit.xml").read_text(encoding="utf-8")
    assert '<error type="judge_error"' in junit and "ActorDiedError" in junit
    assert 'name="max_judge_errors"' in junit
    assert "Judging errors" in (tmp_path / "before" / "report.html").read_text(encoding="utf-8")

    resumed = CliRunner().invoke(app, ["run", "--resume", run.id, "--no-progress"])
    assert resumed.exit_code == 0, resumed.output
    assert "judged now: 1" in resumed.output
    records = {r["response_id"]: r for r in store.iter_records(run.id)}
    assert len(records) == 5 and records["s2"]["status"] == "scored"
    shown = _show(run.id)
    assert "judge_errors" not in shown["summary"]
    assert all(t["passed"] for t in shown["thresholds"])


def test_a_judge_error_misses_the_gate_of_a_run_and_exits_1(tmp_path: Path, bqas_home: Path) -> None:
    """``bqas run`` whose judging leaves a judge error exits 1 (a gate missed), the README's rule."""
    from bqas.runner import execute

    path = _scenario(tmp_path)
    real = execute.judge_work

    async def lost(engine: Any, scenario: Any, run_id: str, work: Any) -> Any:
        if work.item.sample_id == "s1":  # what the Ray driver stores for an item it gave up on
            return [(work.key, work.seq, judge_error_record(run_id, work, REASON, "de"))]
        return await real(engine, scenario, run_id, work)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(execute, "judge_work", lost)
        result = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "o")])
    assert result.exit_code == 1, result.output
    assert "max_judge_errors" in result.output and "MISSED" in result.output


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        yield open_store(f"sqlite:///{tmp_path / 's.sqlite'}")
        return
    with fresh_postgres_database("bqas_judge_errors") as url:
        s = open_store(url)
        yield s
        s.engine.dispose()


def test_a_later_result_replaces_a_judge_error_but_nothing_replaces_a_result(store: Store, tmp_path: Path) -> None:
    path = _scenario(tmp_path)
    scenario = load_scenario(path)
    store.create_run("r-1", scenario.name, {}, total=5)
    work = next(iter(work_items(scenario)))
    scored = {"response_id": work.item.sample_id, "judge": "voice", "status": "scored", "verdict": "needs_review"}
    assert store.add_results("r-1", [(work.key, work.seq, judge_error_record("r-1", work, REASON, "de"))]) == 1
    assert store.done_keys("r-1") == set()
    # Another judge error of the same key (a second lost try) keeps the first; a result replaces it.
    assert store.add_results("r-1", [(work.key, work.seq, judge_error_record("r-1", work, "again", "de"))]) == 0
    assert store.add_results("r-1", [(work.key, work.seq, scored)]) == 1
    (record,) = store.iter_records("r-1")
    assert record["status"] == "scored" and store.done_keys("r-1") == {work.key}
    # A judge error that arrives late (an actor that was given up stored it) never overwrites the result.
    assert store.add_results("r-1", [(work.key, work.seq, judge_error_record("r-1", work, REASON, "de"))]) == 0
    assert store.count_results("r-1") == 1 and next(iter(store.iter_records("r-1")))["status"] == "scored"
