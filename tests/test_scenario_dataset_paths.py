"""A scenario reads its dataset only from inside its own folder or the working directory (symlinks
followed), unless the operator says otherwise (``--allow-dataset-outside``, BQAS_ALLOW_DATASET_OUTSIDE):
scenarios come from pull requests, and ``dataset: ../../outside_secret.jsonl`` was read, judged and
published with exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app

SAMPLE = {
    "id": "secret-1",
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A checkout (the working directory) with a scenario folder, and a secret beside the checkout."""
    secret = tmp_path / "outside_secret.jsonl"
    secret.write_text(json.dumps(SAMPLE) + "\n", encoding="utf-8")
    checkout = tmp_path / "checkout"
    qa = checkout / "qa" / "voice"
    qa.mkdir(parents=True)
    monkeypatch.chdir(checkout)
    return {"secret": secret, "checkout": checkout, "qa": qa}


def _scenario(folder: Path, dataset: str) -> Path:
    path = folder / "s.yaml"
    path.write_text(f"name: p\njudges: [voice]\nbackend: offline\ndataset: {dataset}\n", encoding="utf-8")
    return path


def _run(scenario: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["run", str(scenario), "--no-progress", "--out", "out", *extra])
    return result.exit_code, result.output


def _stored_runs() -> list[object]:
    result = CliRunner().invoke(app, ["runs", "--json"])
    return list(json.loads(result.output))


def test_dotdot_dataset_is_a_usage_error_naming_the_path(layout: dict[str, Path], bqas_home: Path) -> None:
    scenario = _scenario(layout["qa"], "../../../outside_secret.jsonl")
    code, output = _run(scenario)
    assert code == 2, output
    assert "s.yaml:4: dataset: " in output and "outside_secret.jsonl" in output
    assert "lies outside the scenario's folder" in output and "--allow-dataset-outside" in output
    assert "secret-1" not in output and not Path("out").exists() and _stored_runs() == []
    dry = CliRunner().invoke(app, ["run", str(scenario), "--dry-run"])
    assert dry.exit_code == 2 and "lies outside the scenario's folder" in dry.output, dry.output


def test_symlink_inside_pointing_outside_is_refused(layout: dict[str, Path], bqas_home: Path) -> None:
    (layout["qa"] / "data.jsonl").symlink_to(layout["secret"])
    code, output = _run(_scenario(layout["qa"], "data.jsonl"))
    assert code == 2 and f"(resolves to {layout['secret']})" in output, output


def test_absolute_path_outside_is_refused(layout: dict[str, Path], bqas_home: Path) -> None:
    code, output = _run(_scenario(layout["qa"], str(layout["secret"])))
    assert code == 2 and "lies outside" in output, output


@pytest.mark.parametrize("where", ["scenario folder", "working directory"])
def test_datasets_inside_are_read(layout: dict[str, Path], bqas_home: Path, where: str) -> None:
    folder = layout["qa"] if where == "scenario folder" else layout["checkout"] / "data"
    folder.mkdir(exist_ok=True)
    (folder / "d.jsonl").write_text(json.dumps(SAMPLE) + "\n", encoding="utf-8")
    dataset = "d.jsonl" if where == "scenario folder" else "../../data/d.jsonl"
    code, output = _run(_scenario(layout["qa"], dataset))
    assert code == 0, output


def test_operator_may_allow_outside_by_flag_or_setting(
    layout: dict[str, Path], bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = _scenario(layout["qa"], "../../../outside_secret.jsonl")
    code, output = _run(scenario, "--allow-dataset-outside")
    assert code == 0, output
    run_id = str(_stored_runs()[0]["id"])  # type: ignore[index]
    resumed = CliRunner().invoke(app, ["run", "--resume", run_id, "--no-progress"])
    assert resumed.exit_code == 0, resumed.output  # accepted when it started: a resume reads it again
    monkeypatch.setenv("BQAS_ALLOW_DATASET_OUTSIDE", "true")
    from bqas.settings import get_settings

    get_settings.cache_clear()
    code, output = _run(scenario)
    assert code == 0, output
    monkeypatch.delenv("BQAS_ALLOW_DATASET_OUTSIDE")
    get_settings.cache_clear()
    monkeypatch.chdir(layout["qa"])  # the working directory does not widen what the scenario folder allows
    assert _run(scenario)[0] == 2
