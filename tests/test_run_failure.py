"""A dying results writer fails the run loudly (status ``failed`` with the reason; a store or disk that
cannot be written is exit 4, README), never hangs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.store.db import Store


def _scenario(tmp_path: Path, n: int) -> Path:
    rows = [
        {
            "id": f"s{i:04d}",
            "user_input": f"Erinnere mich an Termin {i}",
            "detected_intent": "reminder",
            "response": f"Ich erinnere dich an Termin {i}.",
            "expected_intent": "reminder",
        }
        for i in range(n)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = tmp_path / "scenario.yaml"
    path.write_text("name: dying-writer\njudges: [voice]\nbackend: offline\ndataset: data.jsonl\n", encoding="utf-8")
    return path


def test_dying_writer_fails_the_run_instead_of_hanging(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # More rows than the bounded results queue holds (2 × flush_every = 400): before the fix the
    # workers blocked on it forever once the writer had died.
    path = _scenario(tmp_path, 700)
    calls = {"n": 0}
    original = Store.add_results

    def failing(self: Store, run_id: str, records: Any, **options: Any) -> int:
        calls["n"] += 1
        if calls["n"] >= 2:
            raise OSError("disk full (planted)")
        return original(self, run_id, records, **options)

    monkeypatch.setattr(Store, "add_results", failing)
    result = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "o")])
    assert result.exit_code == 4, result.output
    assert "stopped: the store" in result.output and "cannot be written: disk full (planted)" in result.output
    assert "bqas run --resume r-" in result.output
    runs = json.loads(CliRunner().invoke(app, ["runs", "--json"]).output)
    assert runs[0]["status"] == "failed"
    shown = CliRunner().invoke(app, ["show", runs[0]["id"], "--json"])
    assert json.loads(shown.output)["status"] == "failed"
