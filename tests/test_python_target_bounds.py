"""A ``type: python`` target cannot end or hold the run: a sync function that never returns is a target
error at its timeout and the run ends (nothing joins its thread), ``sys.exit()`` inside the function is
that sample's target error, and text that UTF-8 cannot hold (a lone surrogate) is a target error, not a
store failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from bqas.cli.main import app
from target_support import records, voice_samples, write_scenario

TESTS = Path(__file__).resolve().parent


def test_a_sync_function_that_never_returns_ends_at_its_timeout_and_the_run_exits(
    tmp_path: Path, bqas_home: Path
) -> None:
    # The function waits on an event nobody sets: before, the run's exit joined its worker thread and the
    # process never ended (the 600 s below would be hit however fast the machine).
    target = {"type": "python", "function": "target_functions:hangs", "timeout": 0.2}
    path = write_scenario(tmp_path, voice_samples(10), target)
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--out", str(tmp_path / "o"), "--no-progress"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]  # ten target errors miss max_target_errors (0)
    recs = records(tmp_path / "o")
    assert len(recs) == 10
    for rec in recs:
        assert rec["status"] == "target_error"
        assert rec["target_error"] == "timed out: no answer within 0.2 s (target.timeout)"


def test_sys_exit_in_the_function_is_that_samples_target_error(tmp_path: Path, bqas_home: Path) -> None:
    for function in ("exits", "exits_async"):
        target = {"type": "python", "function": f"target_functions:{function}"}
        path = write_scenario(tmp_path, voice_samples(3), target)
        result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / function), "--no-progress"])
        assert result.exit_code == 1, result.output  # a target error, not the function's exit code 3
        recs = {r["response_id"]: r for r in records(tmp_path / function)}
        assert recs["s001"]["status"] == "target_error"
        assert recs["s001"]["target_error"] == f"target_functions:{function} called sys.exit(3)"
        if function == "exits":
            assert recs["s000"]["status"] == recs["s002"]["status"] == "scored"


def test_a_lone_surrogate_is_a_target_error_and_everything_is_stored(tmp_path: Path, bqas_home: Path) -> None:
    target = {"type": "python", "function": "target_functions:lone_surrogate"}
    path = write_scenario(tmp_path, voice_samples(3), target)
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "o"), "--no-progress"])
    assert result.exit_code == 1, result.output  # two target errors; before: exit 4 (the store's write failed)
    recs = {r["response_id"]: r for r in records(tmp_path / "o")}
    assert recs["s000"]["status"] == "scored"
    assert recs["s001"]["status"] == "target_error"
    assert recs["s001"]["target_error"] == (
        "target_functions:lone_surrogate returned text that is not valid Unicode (a lone surrogate in response)"
    )
    assert "\\udcff" in recs["s001"]["target"]["reply_excerpt"]  # the raw reply, escaped
    assert recs["s002"]["target_error"] == "target_functions:lone_surrogate raised RuntimeError: kaputt \\ud800"
