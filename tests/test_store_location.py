"""One store per project, found like git finds .git: the nearest ``.bqas/`` upward from the working
folder, else the user-level data folder; ``BQAS_HOME`` wins; ``bqas runs`` says which store it reads; the
pytest plugin stores into the project's store, whatever folder a test changed into. Real ``bqas``
processes (the store is chosen once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

SAMPLE = {
    "id": "s1",
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen an die Konferenz.",
    "expected_intent": "reminder",
}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BQAS_HOME", "BQAS_DATABASE_URL")}
    env.update({"XDG_DATA_HOME": str(tmp_path / "xdg"), "COLUMNS": "120", **extra})  # the user-level store
    return env


def _bqas(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bqas.cli.main", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _scenario(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "scenario.yaml"
    path.write_text(
        "name: here\njudges: [voice]\nbackend: offline\nsamples:\n  - " + json.dumps(SAMPLE) + "\n", encoding="utf-8"
    )
    return path


def _run_id(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split()[1]  # "run RUN_ID · outputs: …"


def test_bqas_runs_from_a_subfolder_reads_the_projects_store(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".bqas").mkdir(parents=True)
    deep = project / "qa" / "voice"
    scenario = _scenario(deep)
    env = _env(tmp_path)
    run = _run_id(_bqas(project, env, "run", str(scenario), "--out", str(tmp_path / "o1"), "--no-progress"))
    listed = _bqas(deep, env, "runs")
    assert listed.returncode == 0 and run in listed.stdout, listed.stdout
    assert f"store: {project / '.bqas' / 'bqas.sqlite'} (the nearest .bqas/ folder)" in listed.stdout
    # A run started in the subfolder lands in the same store, none is made there.
    second = _run_id(_bqas(deep, env, "run", str(scenario), "--out", str(tmp_path / "o2"), "--no-progress"))
    assert not (deep / ".bqas").exists()
    ids = {r["id"] for r in json.loads(_bqas(project, env, "runs", "--json").stdout)}
    assert ids == {run, second}


def test_outside_a_project_the_user_level_store_and_bqas_home_wins(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    scenario = _scenario(elsewhere)
    env = _env(tmp_path)
    run = _run_id(_bqas(elsewhere, env, "run", str(scenario), "--out", str(tmp_path / "o"), "--no-progress"))
    assert not (elsewhere / ".bqas").exists() and (tmp_path / "xdg" / "bqas" / "bqas.sqlite").is_file()
    listed = _bqas(tmp_path, env, "runs")
    assert run in listed.stdout and "(the user-level store" in listed.stdout, listed.stdout
    (tmp_path / ".bqas").mkdir()  # a project's store above: BQAS_HOME still wins over it
    home = tmp_path / "explicit"
    explicit = _bqas(elsewhere, {**env, "BQAS_HOME": str(home)}, "runs")
    assert f"store: {home / 'bqas.sqlite'} (BQAS_HOME)" in explicit.stdout and run not in explicit.stdout


def test_the_pytest_plugin_stores_into_the_projects_store(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BQAS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (pytester.path / ".bqas").mkdir()
    pytester.makepyfile(
        test_team=f"""
import os

def test_in_a_temp_folder(bqas_judge, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert bqas_judge("voice", {SAMPLE!r}).status == "scored"
"""
    )
    pytester.makeini("[pytest]\n")  # the project's root folder
    # pytest started from outside the project (CI often does): the store is still the project's.
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    result = pytester.runpytest_subprocess(
        "-p", "bqas.testing.pytest_plugin", "--bqas-backend", "offline", str(pytester.path)
    )
    result.assert_outcomes(passed=1)
    assert (pytester.path / ".bqas" / "bqas.sqlite").is_file()
    assert not (tmp_path / "xdg" / "bqas").exists() and not (outside / ".bqas").exists()
    listed = _bqas(pytester.path, _env(tmp_path), "runs", "--json")
    assert [r["scenario"] for r in json.loads(listed.stdout)] == ["pytest"]
