"""Tables fit 80 columns by leaving out the least useful column first (never the id or the start time),
output to a pipe is 80 columns wide unless COLUMNS says otherwise, and progress rates are items finished
over elapsed time (right for slow runs and for results that arrive in batches)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.runner.loop import rate_and_eta

SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen an die Konferenz.",
    "expected_intent": "reminder",
}


def _scenario(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{**SAMPLE, "id": f"s{i}"} for i in range(3)]
    path = folder / "s.yaml"
    path.write_text(
        f"name: {name}\njudges: [voice]\nsamples:\n" + "".join(f"  - {json.dumps(r)}\n" for r in rows),
        encoding="utf-8",
    )
    return path


def test_runs_at_80_columns_keep_the_scenario_name_and_the_start_time_whole(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "80"})
    for name in ("voice-de-teachers", "voice-de-target-conversations"):
        out = runner.invoke(app, ["run", str(_scenario(tmp_path / name, name)), "--out", str(tmp_path / name / "o")])
        assert out.exit_code == 0, out.output
    listing = runner.invoke(app, ["runs"]).output
    rows = [line for line in listing.splitlines() if line.startswith("r-")]
    table = [line for line in listing.splitlines() if not line.startswith("store: ")]  # a path is not cut
    assert len(rows) == 2 and all(len(line) <= 80 for line in table), listing
    assert "voice-de-target-conversations" in listing and "voice-de-teachers" in listing and "…" not in listing
    assert all(re.search(r"\d\d-\d\d \d\d:\d\d$", row) for row in rows), rows  # the start time whole
    header = next(line for line in listing.splitlines() if line.startswith("id"))
    assert " n " not in f"{header} " and "gate" in header  # the sample count and the pass rate went first


def test_output_to_a_pipe_is_80_columns_wide(tmp_path: Path, bqas_home: Path) -> None:
    scenario = _scenario(tmp_path / "a", "a-scenario")
    out = CliRunner(env={"COLUMNS": None}).invoke(app, ["run", str(scenario), "--out", str(tmp_path / "o")])
    assert out.exit_code == 0, out.output
    tables = [line for line in out.output.splitlines() if line[:1] in "┏┃┡│└━─╇┗ "]
    assert tables and max(len(line) for line in tables) <= 80, out.output


def test_rates_are_items_over_elapsed_time() -> None:
    assert rate_and_eta(8, 0, 708.0) == ("0.7/min", "0:00:00")  # slow: 8 items in 11 min 48 s
    assert rate_and_eta(96, 0, 12.0) == ("8.0/s", "0:00:00")  # 96 results in one batch after 12 s
    assert rate_and_eta(10, 30, 5.0) == ("2.0/s", "0:00:15")
    assert rate_and_eta(0, 30, 5.0) == ("–", "–")


def test_a_slow_step_says_what_it_is_doing_and_a_quick_one_stays_quiet(capfd: pytest.CaptureFixture[str]) -> None:
    import threading

    from bqas.cli.steps import slow_step

    with slow_step("fitting the classifier", after=0.0, spinner=False):
        # The step outlasts its threshold (0 s) until its line is written: the watcher thread ends right after
        # writing it. Reading the captured stderr only afterwards, never while that thread may write (a read
        # empties the capture file and can drop what a thread writes in between).
        for watcher in [t for t in threading.enumerate() if t.name == "bqas-slow-step"]:
            watcher.join()
    with slow_step("a quick step", after=3600.0, spinner=False):
        pass
    seen = capfd.readouterr().err
    assert "fitting the classifier …" in seen and "a quick step" not in seen
