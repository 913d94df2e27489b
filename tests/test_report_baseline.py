"""report.html against a baseline: the paired differences with the 95 % bootstrap intervals that
`bqas compare` computes (the same function, bqas.runner.compare.compare_runs), end to end through
`bqas run --baseline` and `bqas compare --json`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from bqas.cli.main import app


def _scenario(tmp_path: Path, shift: int) -> Path:
    rows = []
    for i in range(40):
        good = (i + shift) % 3 != 0  # the second run answers a third of the samples off-topic
        rows.append(
            {
                "id": f"s{i:03d}",
                "user_input": f"Erinnere mich morgen an den Termin {i} beim Zahnarzt",
                "detected_intent": "reminder",
                "response": f"Ich erinnere dich morgen an den Termin {i} beim Zahnarzt."
                if good
                else "Das Wetter wird sonnig.",
                "expected_intent": "reminder",
            }
        )
    folder = tmp_path / f"shift{shift}"
    folder.mkdir()
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = folder / "scenario.yaml"
    path.write_text("name: base\njudges: [voice]\nlanguage: de\nbackend: offline\ndataset: data.jsonl\n", "utf-8")
    return path


def test_the_report_shows_the_bootstrap_intervals_of_bqas_compare(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(app, ["run", str(_scenario(tmp_path, 1)), "--no-progress", "--out", str(tmp_path / "a")])
    assert first.exit_code in (0, 1), first.output
    base_id = json.loads(runner.invoke(app, ["runs", "--json"]).output)[0]["id"]
    args = ["run", str(_scenario(tmp_path, 0)), "--no-progress", "--out", str(tmp_path / "b"), "--baseline", base_id]
    second = runner.invoke(app, args)
    assert second.exit_code in (0, 1), second.output
    run_id = json.loads(runner.invoke(app, ["runs", "--json"]).output)[0]["id"]
    compared = json.loads(runner.invoke(app, ["compare", base_id, run_id, "--json"]).output)
    html = (tmp_path / "b" / "report.html").read_text(encoding="utf-8")
    table = html.split('id="paired-table"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>([^<]+)</td><td class=\"num\">(\d+)</td>.*?\[([^\]]+)\]", table, re.S)
    shown = {name: (int(n), ci) for name, n, ci in rows}
    dims = [d for d in compared["dimensions"] if d["ci_low"] is not None]
    assert dims and len(shown) == len(dims)
    for d in dims:  # every interval bqas compare prints, in the report, rounded as shown
        assert shown[d["name"]] == (d["n"], f"{d['ci_low']:+.2f}, {d['ci_high']:+.2f}"), d["name"]
    composite = next(d for d in dims if d["name"] == "composite_score")
    assert composite["n"] == 40 and composite["ci_low"] != composite["ci_high"]  # a real interval, not a point
