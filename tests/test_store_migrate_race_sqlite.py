"""Processes that start together on a new SQLite store migrate it once: a file lock beside the database
serialises the migration, the others wait and find the schema current. Before, two ``bqas run`` on an
empty BQAS_HOME failed one of them (``No such constraint: 'uq_results_run_sample'``, exit 2 or 1)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

OPEN = "import sys; from bqas.store.db import open_store; open_store(sys.argv[1])"
SAMPLE = {
    "id": "s1",
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}


def _scenario(folder: Path) -> Path:
    (folder / "data.jsonl").write_text(json.dumps(SAMPLE) + "\n", encoding="utf-8")
    path = folder / "s.yaml"
    path.write_text("name: race\njudges: [voice]\nbackend: offline\ndataset: data.jsonl\n", encoding="utf-8")
    return path


@pytest.mark.timeout(600)
@pytest.mark.parametrize("round_", range(5))
def test_two_bqas_runs_and_an_opener_on_a_fresh_sqlite_home(tmp_path: Path, round_: int) -> None:
    home = tmp_path / "home"
    scenario = _scenario(tmp_path)
    env = {**os.environ, "BQAS_HOME": str(home), "BQAS_OFFLINE_POOL": "threads"}
    bqas = [sys.executable, "-m", "bqas.cli.main"]
    commands = [
        [*bqas, "run", str(scenario), "--no-progress", "--out", str(tmp_path / f"out{i}")] for i in range(2)
    ] + [[sys.executable, "-c", OPEN, f"sqlite:///{home / 'bqas.sqlite'}"] for _ in range(1)]
    procs = [
        subprocess.Popen(c, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for c in commands
    ]
    outcomes = [(p.wait(timeout=500), (p.stderr.read() if p.stderr else "")[-1500:]) for p in procs]
    assert [rc for rc, _ in outcomes] == [0, 0, 0], outcomes
    with sqlite3.connect(home / "bqas.sqlite") as db:
        assert len(db.execute("SELECT version_num FROM alembic_version").fetchall()) == 1
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone() == (2,)
