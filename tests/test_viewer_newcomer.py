"""The viewer as a newcomer meets it: a sample's address is its sample id, the run table shows the
answer, the histogram follows the filter, the runs list has pass rate and gates, its compare form starts
on two runs of one scenario, and the compare page shows how the two answers differ."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.review.local import LocalReview
from bqas.review.settings import ReviewSettings
from bqas.service.testing import ServiceServer
from bqas.store.db import open_store


def _sample(i: int, response: str) -> dict[str, str]:
    return {
        "id": f"voice-{i:03d}",
        "user_input": f"Erinnere mich an Termin {i}",
        "detected_intent": "reminder",
        "response": response,
        "expected_intent": "reminder",
    }


def _runs(tmp_path: Path) -> tuple[str, str, str]:
    """Two runs of one scenario (the second with a changed answer) and one of another scenario."""
    runner = CliRunner()
    for name, answers in (("voice-a", None), ("voice-a", "Ich erinnere dich nicht."), ("other", None)):
        folder = tmp_path / f"{name}-{answers is not None}"
        folder.mkdir()
        rows = [_sample(i, f"Ich erinnere dich an Termin {i} um 8 Uhr.") for i in range(6)]
        if answers:
            rows[2] = _sample(2, answers)
        (folder / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        (folder / "s.yaml").write_text(
            f"name: {name}\njudges: [voice]\ndataset: d.jsonl\nthresholds: {{min_pass_rate: 0.5}}\n", encoding="utf-8"
        )
        result = runner.invoke(app, ["run", str(folder / "s.yaml"), "--no-progress", "--out", str(folder / "o")])
        assert result.exit_code in (0, 1), result.output
    other, second, first = (r["id"] for r in json.loads(runner.invoke(app, ["runs", "--json"]).output)[:3])
    return first, second, other


def test_the_viewer_pages_a_newcomer_uses(tmp_path: Path, bqas_home: Path) -> None:
    first, second, _other = _runs(tmp_path)
    local = LocalReview(open_store(), ReviewSettings())
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url) as client:
        client.get(local.start_path)
        runs = client.get("/review/runs").text
        # Pass rate and gates per run; the compare form starts on the newest run and the one before it of
        # the same scenario, not on two different scenarios.
        assert "<th>Gates</th>" in runs and '<th class="num">Pass rate</th>' in runs
        assert re.search(r'<td class="gate"><span class="badge v-(production_ready|failed)">(met|missed)</span>', runs)
        select_a = runs[runs.index('name="a"') : runs.index("</select>", runs.index('name="a"'))]
        select_b = runs[runs.index('name="b"') : runs.index("</select>", runs.index('name="b"'))]
        # Not the newest run (of another scenario): the newest run that has an earlier one of its scenario.
        assert f'value="{second}" selected' in select_b and f'value="{first}" selected' in select_a
        run_page = client.get(f"/review/runs/{second}").text
        # A row links to its sample by sample id; the answer is in the table.
        assert f'/review/runs/{second}/results/voice-002?judge=voice"' in run_page
        assert "Ich erinnere dich nicht." in run_page and "<th>Response</th>" in run_page
        sample = client.get(f"/review/runs/{second}/results/voice-002", params={"judge": "voice"})
        assert sample.status_code == 200 and "voice-002" in sample.text and "Ich erinnere dich nicht." in sample.text
        assert client.get(f"/review/runs/{second}/results/voice-002").status_code == 200  # the judge is optional
        missing = client.get(f"/review/runs/{second}/results/voice-999")
        assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
        assert "No sample &#39;voice-999&#39; in this run" in missing.text  # a page, not a 422 of the API
        # The histogram shows what the filter shows.
        assert "Composite score of every scored result in the run" in run_page
        failed = client.get(f"/review/runs/{second}", params={"verdict": "failed"}).text
        assert re.search(r"Composite score of the \d+ result\(s\) the filter shows", failed)
        # The compare page: the changed answer word by word.
        compare = client.get("/review/runs/compare", params={"a": first, "b": second}).text
        assert "<del>an Termin 2 um 8 Uhr.</del>" in compare and "<ins>nicht.</ins>" in compare
        assert compare.count('<tr class="diff">') == 1  # only the sample whose answer changed
