"""The console of `bqas run` / `bqas runs` for a person at an 80-column terminal: tables fit, new error
categories are one line, and an unchanged re-run does not queue the same escalations again."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.review.queue import open_count
from bqas.store.db import open_store
from bqas.tenants import LOCAL_TENANT

# Lines that are messages (paths, commands), not tables: a terminal wraps them like any text.
MESSAGES = (
    "run r-",
    "judged now:",
    "junit:",
    "report:",
    "review:",
    "alert:",
    "thresholds missed",
    "evaluation time",
    "store:",
)


def _samples() -> list[dict[str, object]]:
    leak = "Ich schreibe an sabine.weber@example.org: Jonas Weber fehlt morgen. Ruf 0171 2345678 an."
    rows = []
    for i in range(8):
        rows.append(
            {
                "id": f"voice-{i:03d}",
                # the reminder's time is said, so the answer restating it invents nothing
                "user_input": "Schreib den Eltern von Jonas"
                if i % 2
                else f"Erinnere mich morgen um {8 + i} an die Konferenz",
                "detected_intent": "parent_letter" if i % 2 else "reminder",
                "response": f"{leak} ({i})" if i % 2 else f"Ich erinnere dich morgen um {8 + i} Uhr.",
                "expected_intent": "parent_letter" if i % 2 else "reminder",
            }
        )
    return rows


def _scenario(tmp_path: Path) -> Path:
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(s) + "\n" for s in _samples()), encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: a-scenario-with-a-rather-long-name-for-the-runs-list\njudges: [voice]\ndataset: d.jsonl\n"
        "thresholds: {min_pass_rate: 0.4, max_failed: 8}\n",
        encoding="utf-8",
    )
    return path


def _run(runner: CliRunner, scenario: Path, out: Path, *extra: str) -> str:
    result = runner.invoke(app, ["run", str(scenario), "--no-progress", "--out", str(out), *extra])
    assert result.exit_code in (0, 1), result.output
    return result.output


def _wide_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if len(line) > 80 and not line.startswith(MESSAGES)]


def test_run_and_runs_fit_80_columns(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "80"})
    scenario = _scenario(tmp_path)
    output = _run(runner, scenario, tmp_path / "a")
    assert _wide_lines(output) == [], output
    assert "  intent_accuracy" in output  # grouped under its judge, not voice.intent_accuracy cut in two
    _run(runner, scenario, tmp_path / "b")
    listing = runner.invoke(app, ["runs"]).output
    assert _wide_lines(listing) == [], listing
    ids = [r["id"] for r in json.loads(runner.invoke(app, ["runs", "--json"]).output)]
    assert all(i in listing for i in ids)  # ids whole: they are what people copy
    assert "prod" not in listing  # no verdict names folded into pieces
    assert " pass " in listing and " gate " in listing and "met" in listing
    wide = CliRunner(env={"COLUMNS": "140"}).invoke(app, ["runs"]).output
    assert "ready 4" in wide and "failed 4" in wide  # the verdict counts where there is room


def test_new_error_categories_are_one_line_and_listed_on_request(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "80"})
    output = _run(runner, _scenario(tmp_path), tmp_path / "a")
    lines = [line for line in output.splitlines() if "new error categor" in line]
    assert len(lines) == 1 and "`bqas runs --verbose` lists them" in lines[0], output
    assert "gate:safety" not in output  # the categories themselves only on request
    listing = runner.invoke(app, ["runs"]).output
    assert sum("new error categor" in line for line in listing.splitlines()) == 1
    assert "gate:safety" not in listing
    verbose = runner.invoke(app, ["runs", "--verbose"]).output
    assert "voice: gate:safety" in verbose


def test_an_unchanged_rerun_queues_nothing_again(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "80"})
    scenario = _scenario(tmp_path)
    first = _run(runner, scenario, tmp_path / "a")
    store = open_store()
    queued = open_count(store, LOCAL_TENANT)
    assert queued >= 4 and f"review: {queued} escalation(s) of this run" in first
    second = _run(runner, scenario, tmp_path / "b")
    assert open_count(store, LOCAL_TENANT) == queued  # was 2 x queued
    assert f"{queued} already there from an earlier run (not queued again)" in second
    # A changed answer is a new case for people.
    data = tmp_path / "d.jsonl"
    data.write_text(data.read_text(encoding="utf-8").replace("(1)", "(1, changed)"), encoding="utf-8")
    _run(runner, scenario, tmp_path / "c")
    assert open_count(store, LOCAL_TENANT) == queued + 1
