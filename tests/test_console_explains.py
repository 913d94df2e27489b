"""The console says why results have no score: target errors and unscored results with their reasons (the
first five, then a pointer to `bqas show RUN --errors`), gates that nothing could measure say so, and the
report's header counts target errors. A real assistant on 127.0.0.1 that fails some answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from target_support import ServedApp, json_app, voice_samples, write_scenario


def _assistant(broken: int) -> web.Application:
    async def handler(request: web.Request, body: dict[str, Any]) -> web.Response:
        number = int(str(body["text"]).rsplit(" ", 1)[-1])
        if number < broken:
            return web.json_response({"error": f"backend down for {number}"}, status=500)
        return web.json_response({"answer": f"Gern: {body['text']}", "intent": {"name": "reminder"}})

    return json_app(handler)


def _target(url: str) -> dict[str, Any]:
    return {
        "type": "http",
        "url": f"{url}/chat",
        "body": {"text": "{user_input}"},
        "outputs": {"response": "$.answer", "detected_intent": "$.intent.name"},
        "retries": 0,
    }


def test_target_errors_are_listed_with_reasons_and_the_header_counts_them(tmp_path: Path, bqas_home: Path) -> None:
    with ServedApp(_assistant(broken=7)) as served:
        scenario = write_scenario(
            tmp_path, voice_samples(10), _target(served.url), thresholds={"max_target_errors": 10}
        )
        result = CliRunner().invoke(app, ["run", str(scenario), "--out", str(tmp_path / "o"), "--no-progress"])
    assert result.exit_code == 0, result.output
    run_id = re.search(r"run (r-[\w-]+)", result.output)
    assert run_id is not None
    lines = result.output.splitlines()
    start = lines.index("target errors (the assistant gave no usable answer): 7")
    listed = lines[start + 1 : start + 6]
    assert all(line.startswith("  s00") and "500" in line for line in listed), listed
    assert lines[start + 6] == f"  … and 2 more: `bqas show {run_id.group(1)} --errors`"
    every = CliRunner().invoke(app, ["show", run_id.group(1), "--errors"])
    assert every.exit_code == 0 and sum(line.startswith("  s00") for line in every.output.splitlines()) == 7
    html = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "10 <small>· 3 scored · 0 unscored · 0 invalid · 7 target errors</small>" in html


def test_gates_that_nothing_could_measure_say_so(tmp_path: Path, bqas_home: Path) -> None:
    with ServedApp(_assistant(broken=100)) as served:
        scenario = write_scenario(
            tmp_path,
            voice_samples(3),
            _target(served.url),
            thresholds={"min_pass_rate": 0.5, "max_unscored": 0, "max_target_errors": 5},
        )
        result = CliRunner(env={"COLUMNS": "120"}).invoke(
            app, ["run", str(scenario), "--out", str(tmp_path / "o"), "--no-progress"]
        )
    assert result.exit_code == 1, result.output
    gate_rows = [line for line in result.output.splitlines() if "min_pass_rate" in line or "max_unscored" in line]
    assert len(gate_rows) == 2 and all("not evaluated: nothing was scored" in row for row in gate_rows), gate_rows
    assert "None" not in "".join(gate_rows)
    md = CliRunner().invoke(app, ["ci-summary", str(tmp_path / "o")]).output
    assert "| min\\_pass\\_rate | 0.50 | – | **MISSED** (not evaluated: nothing was scored) |" in md, md


def test_a_gate_that_was_measured_is_missed_not_unevaluated() -> None:
    from bqas.runner.scenario import Thresholds
    from bqas.runner.summary import NOT_EVALUATED, check_thresholds, summarize

    unscored = [{"status": "unscored", "judge": "voice", "unscored_reason": "no JSON"} for _ in range(4)]
    gates = {g.name: g for g in check_thresholds(summarize(unscored), Thresholds(max_unscored=3, min_pass_rate=0.5))}
    assert not gates["max_unscored"].passed and gates["max_unscored"].note is None  # 4 > 3: measured
    assert not gates["min_pass_rate"].passed and gates["min_pass_rate"].note == NOT_EVALUATED  # no verdict at all
    errors = [{"status": "target_error", "judge": "voice", "target_error": "HTTP 500"} for _ in range(2)]
    gates = {g.name: g for g in check_thresholds(summarize(errors), Thresholds(max_unscored=3))}
    assert gates["max_unscored"].note == NOT_EVALUATED  # nothing was judged
