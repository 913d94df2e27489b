"""Scenario runner: validation errors with file/line/field, invalid samples, outputs, exit codes,
resume after SIGKILL, compare."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.runner.scenario import ScenarioError, load_scenario
from bqas.testing.scripted_llm import Reply, ScriptedLLM

GOOD = {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass", "reasoning": "ok"}


def _sample(i: int, **kw: object) -> dict[str, object]:
    return {
        "id": f"s{i:03d}",
        "user_input": f"Erinnere mich an Termin {i}",
        "detected_intent": "reminder",
        "response": f"Ich erinnere dich an Termin {i}.",
        "expected_intent": "reminder",
        **kw,
    }


def _scenario(tmp_path: Path, samples: list[dict[str, object]], extra: str = "", backend: str = "offline") -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples), encoding="utf-8")
    path = tmp_path / "scenario.yaml"
    path.write_text(
        f"name: test-scenario\ndescription: test\njudges: [voice]\nlanguage: de\nbackend: {backend}\n"
        f"concurrency: 4\ndataset: data.jsonl\n{extra}",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("name: x\njudges: [voice, nope]\ndataset: d.jsonl\n", r"scenario\.yaml:2: judges\[1\]: unknown judge 'nope'"),
        (
            "name: x\njudges: [voice]\ndataset: d.jsonl\nthresholds:\n  min_pass_rate: 3\n",
            r":5: thresholds\.min_pass_rate",
        ),
        (
            "name: x\njudges: [voice]\ndataset: d.jsonl\nthresholds:\n  dimensions: {cohesion: 3}\n",
            r":5: thresholds\.dimensions\.cohesion",
        ),
        ("name: x\njudges: [voice]\ndataset: d.jsonl\njudge_language: fr\n", r":4: judge_language: .*en, zh"),
        ("name: x\njudges: [voice]\ndataset: d.jsonl\nlanguage: klingon\n", r":4: language"),
        ("name: x\njudges: [voice]\ndataset: d.jsonl\nbogus: 1\n", r":4: bogus: Extra inputs"),
        ("name: x\njudges: [voice]\ndataset: missing.jsonl\n", r":3: dataset: file not found"),
        ("name: x\njudges: [voice]\n", r"exactly one of 'dataset'"),
        ("name: x\njudges: [voice\n", r"invalid YAML"),
    ],
)
def test_scenario_errors_name_file_line_and_field(tmp_path: Path, body: str, expected: str) -> None:
    (tmp_path / "d.jsonl").write_text("{}\n", encoding="utf-8")
    path = tmp_path / "scenario.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ScenarioError, match=expected):
        load_scenario(path)


def test_judge_language_resolves_from_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bqas_home: Path) -> None:
    path = _scenario(tmp_path, [_sample(1)])
    assert load_scenario(path).judge_language == "en"
    monkeypatch.setenv("RAGAS_JUDGE_LANGUAGE", "zh")
    from bqas.settings import get_settings

    get_settings.cache_clear()
    assert load_scenario(path).judge_language == "zh"
    path.write_text(path.read_text() + "judge_language: en\n", encoding="utf-8")
    assert load_scenario(path).judge_language == "en"  # explicit value wins over the setting


def test_offline_run_writes_outputs_and_marks_bad_samples(tmp_path: Path, bqas_home: Path) -> None:
    samples = [_sample(i) for i in range(6)]
    samples[2] = {"id": "s-bad", "user_input": "x", "detected_intent": "reminder", "expected_intent": "reminder"}
    path = _scenario(tmp_path, samples, "thresholds:\n  max_failed: 100\n  max_invalid: 2\n")
    with path.parent.joinpath("data.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output  # two invalid samples, as many as max_invalid allows
    records = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 7
    bad = {r["sample_id"]: r for r in records if r["status"] == "invalid"}
    assert set(bad) == {"s-bad", "line-7"}
    assert "line 3: field response: missing" in bad["s-bad"]["errors"][0]
    assert "data.jsonl:7: invalid JSON" in bad["line-7"]["errors"][0]
    good = [r for r in records if r["status"] == "scored"]
    assert len(good) == 5
    assert all(r["dimensions"]["safety"]["backend"] == "offline" for r in good)
    suites = ET.parse(out / "junit.xml").getroot()
    assert sum(int(s.get("errors", 0)) for s in suites.iter("testsuite")) == 2
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "test-scenario" in html and "<script" not in html
    assert "report:" in result.output


def test_threshold_gate_exit_codes(tmp_path: Path, bqas_home: Path) -> None:
    seed_example = {**GOOD, "intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4}  # 87.5
    runner = CliRunner()
    with ScriptedLLM(default=Reply(content=json.dumps(seed_example))) as server:
        for minimum, code in ((87.5, 0), (87.6, 1)):
            path = _scenario(
                tmp_path, [_sample(1), _sample(2)], f"thresholds:\n  min_mean_composite: {minimum}\n", backend="llm"
            )
            result = runner.invoke(
                app,
                [
                    "run",
                    str(path),
                    "--out",
                    str(tmp_path / "o"),
                    "--no-progress",
                    "--base-url",
                    server.base_url,
                    "--model",
                    "m",
                ],
            )
            assert result.exit_code == code, result.output
    bad = runner.invoke(app, ["run", str(tmp_path / "nope.yaml")])
    assert bad.exit_code == 2 and "cannot read" in bad.output
    no_llm = runner.invoke(app, ["run", str(path), "--backend", "llm", "--no-progress"])
    assert no_llm.exit_code == 2 and "BQAS_LLM_BASE_URL" in no_llm.output


def test_llm_run_counts_tokens_and_second_run_is_served_from_cache(tmp_path: Path, bqas_home: Path) -> None:
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD), prompt_tokens=100, completion_tokens=10)) as server:
        path = _scenario(tmp_path, [_sample(i) for i in range(5)], backend="llm")
        runner = CliRunner()
        args = ["run", str(path), "--no-progress", "--base-url", server.base_url, "--model", "m1"]
        first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
        assert first.exit_code == 0, first.output
        assert len(server.requests) == 5
        second = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
        assert second.exit_code == 0, second.output
        assert len(server.requests) == 5  # unchanged inputs: every judgment came from the cache
    runs = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    show = json.loads(runner.invoke(app, ["show", runs[1]["id"], "--json"]).output)
    assert show["summary"]["llm_calls"] == 5 and show["summary"]["prompt_tokens"] == 500
    again = json.loads(runner.invoke(app, ["show", runs[0]["id"], "--json"]).output)
    assert again["summary"]["llm_calls"] == 0 and again["summary"]["cache_hits"] == 5


def test_resume_after_sigkill_finishes_without_redoing_or_duplicating(tmp_path: Path, bqas_home: Path) -> None:
    n = 12
    samples = [_sample(i) for i in range(n)]
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD)), latency=0.25) as server:
        path = _scenario(tmp_path, samples, backend="llm")
        env = {**os.environ, "BQAS_HOME": str(bqas_home), "BQAS_LLM_CACHE": "false"}
        cmd = [
            sys.executable,
            "-m",
            "bqas.cli.main",
            "run",
            str(path),
            "--no-progress",
            "--concurrency",
            "2",
            "--base-url",
            server.base_url,
            "--model",
            "m1",
            "--out",
            str(tmp_path / "o"),
        ]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db = bqas_home / "bqas.sqlite"
        deadline = time.time() + 30
        stored = 0
        while time.time() < deadline and stored < 4:
            time.sleep(0.1)
            if db.exists():
                try:
                    with sqlite3.connect(db) as conn:
                        stored = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
                except sqlite3.OperationalError:
                    pass
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert 4 <= stored < n, "the run should have been killed in the middle"
        with sqlite3.connect(db) as conn:
            run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
            done_before = {r[0] for r in conn.execute("SELECT sample_id FROM results")}
        requests_before = len(server.requests)
        resumed = subprocess.run(
            [
                sys.executable,
                "-m",
                "bqas.cli.main",
                "run",
                "--resume",
                run_id,
                "--no-progress",
                "--base-url",
                server.base_url,
                "--model",
                "m1",
                "--out",
                str(tmp_path / "o"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert resumed.returncode == 0, resumed.stderr
        asked_after = [json.dumps(r["messages"], ensure_ascii=False) for r in server.requests[requests_before:]]
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT sample_id FROM results WHERE run_id = ?", (run_id,)).fetchall()
        status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
    assert sorted(r[0] for r in rows) == sorted(s["id"] for s in samples)  # all there, none twice
    assert status == "done"
    for sample in samples:
        if sample["id"] in done_before:
            assert not any(str(sample["response"]) in a for a in asked_after), f"{sample['id']} was judged again"
    assert len(asked_after) == n - len(done_before)


def test_compare_reports_differences_and_gates_regressions(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD))) as server:
        path = _scenario(tmp_path, [_sample(i) for i in range(6)], backend="llm")
        base = ["run", str(path), "--no-progress", "--base-url", server.base_url, "--no-cache"]
        assert runner.invoke(app, [*base, "--model", "a", "--out", str(tmp_path / "a")]).exit_code == 0
        server.default = Reply(content=json.dumps({**GOOD, "relevance": 2, "faithfulness": 2}))
        assert runner.invoke(app, [*base, "--model", "b", "--out", str(tmp_path / "b")]).exit_code == 0
    runs = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    new, old = runs[0]["id"], runs[1]["id"]
    result = runner.invoke(app, ["compare", old, new, "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    comp = next(d for d in data["dimensions"] if d["name"] == "composite_score")
    assert comp["diff"] == pytest.approx(-27.0) and comp["n"] == 6
    assert len(data["changes"]) == 6 and all(c["direction"] == "worse" for c in data["changes"])
    assert runner.invoke(app, ["compare", old, new, "--max-drop", "30"]).exit_code == 0
    assert runner.invoke(app, ["compare", old, "r-nope"]).exit_code == 2


def test_compare_of_runs_with_no_sample_in_common_is_a_usage_error(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    first = _scenario(tmp_path, [_sample(i) for i in range(2)], backend="offline")
    assert runner.invoke(app, ["run", str(first), "--no-progress", "--out", str(tmp_path / "a")]).exit_code in (0, 1)
    other = tmp_path / "other"
    other.mkdir()
    second = _scenario(other, [{**_sample(i), "id": f"other-{i}"} for i in range(3)], backend="offline")
    assert runner.invoke(app, ["run", str(second), "--no-progress", "--out", str(tmp_path / "b")]).exit_code in (0, 1)
    new, old = (r["id"] for r in json.loads(runner.invoke(app, ["runs", "--json"]).output)[:2])
    for extra in ([], ["--json"]):
        result = runner.invoke(app, ["compare", old, new, *extra])
        assert result.exit_code == 2, result.output
        assert "have no sample in common" in result.stderr and "only in A: 2, only in B: 3" in result.stderr
