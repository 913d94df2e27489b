"""A store or disk that cannot be written (``ulimit -f``: RLIMIT_FSIZE in a real process) ends a command
with one line naming the store and the cause, exit 4 (README), nothing half-written: during the
migration of a new store (the schema is all or nothing), mid-run (the run resumes and completes with
`bqas run --resume`), and for the output files."""

from __future__ import annotations

import errno
import json
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")

SAMPLE = {"user_input": "Erinnere mich morgen", "detected_intent": "reminder", "expected_intent": "reminder"}


def _scenario(folder: Path, n: int) -> Path:
    rows = [
        {**SAMPLE, "id": f"s{i:03d}", "response": f"Ich erinnere dich morgen an Termin {i}. " * 8} for i in range(n)
    ]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = folder / "s.yaml"
    path.write_text("name: disk\njudges: [voice]\nbackend: offline\ndataset: data.jsonl\n", encoding="utf-8")
    return path


def _bqas(home: Path, cwd: Path, *args: str, file_limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    env = {**os.environ, "BQAS_HOME": str(home), "BQAS_OFFLINE_POOL": "threads", "BQAS_MODEL_CACHE": "off"}
    return subprocess.run(
        [sys.executable, "-m", "bqas.cli.main", *args],
        env=env,
        cwd=cwd,
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _tables(database: Path) -> set[str]:
    with sqlite3.connect(database) as db:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


@pytest.mark.timeout(600)
def test_full_disk_during_the_migration_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    home, scenario = tmp_path / "home", _scenario(tmp_path, 3)
    failed = _bqas(home, tmp_path, "run", str(scenario), "--no-progress", file_limit=60_000)
    assert failed.returncode == 4, failed.stderr[-3000:]
    line = _one_error_line(failed)
    assert str(home / "bqas.sqlite") in line and "disk I/O error" in line and "file size limit" in line
    assert _tables(home / "bqas.sqlite") == set()  # not half-migrated: nothing at all
    listing = _bqas(home, tmp_path, "runs", file_limit=60_000)  # any command that opens the store
    assert listing.returncode == 4 and "cannot be opened" in _one_error_line(listing)
    again = _bqas(home, tmp_path, "run", str(scenario), "--no-progress")
    assert again.returncode == 0, again.stderr[-3000:]


@pytest.mark.timeout(600)
def test_full_disk_mid_run_stops_with_the_resume_command_that_completes_it(tmp_path: Path) -> None:
    home, scenario = tmp_path / "home", _scenario(tmp_path, 120)
    assert _bqas(home, tmp_path, "runs").returncode == 0  # the store exists and is migrated
    size = (home / "bqas.sqlite").stat().st_size
    failed = _bqas(home, tmp_path, "run", str(scenario), "--no-progress", file_limit=size + 40_000)
    assert failed.returncode == 4, failed.stderr[-3000:]
    line = _one_error_line(failed)
    assert "stopped: the store" in line and "disk I/O error" in line
    run_id = line.split("bqas run --resume ", 1)[1].split("`", 1)[0]
    resumed = _bqas(home, tmp_path, "run", "--resume", run_id, "--no-progress", "--out", "o")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    records = (tmp_path / "o" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(records) == 120 and len({json.loads(r)["sample_id"] for r in records}) == 120


def test_output_files_that_cannot_be_written_name_the_file(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bqas.runner import run as runner

    real = runner.write_outputs

    def full(store: Any, run_id: str, out_dir: Path, *args: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(out_dir / "results.jsonl"))

    monkeypatch.setattr(runner, "write_outputs", full)
    scenario = _scenario(tmp_path, 2)
    result = CliRunner().invoke(app, ["run", str(scenario), "--no-progress", "--out", str(tmp_path / "o")])
    assert result.exit_code == 4, result.output
    assert "a file could not be written: No space left on device:" in result.output
    assert "results.jsonl (the disk is full" in result.output and "Traceback" not in result.output
    monkeypatch.setattr(runner, "write_outputs", real)
    run_id = result.output.split("bqas run --resume ", 1)[1].split("`", 1)[0]
    resumed = CliRunner().invoke(app, ["run", "--resume", run_id, "--no-progress", "--out", str(tmp_path / "o")])
    assert resumed.exit_code == 0 and (tmp_path / "o" / "results.jsonl").is_file(), resumed.output
