"""A run judged with --repeats in the viewer: one row per sample (canonical verdict, spread, straddle
flag, repeat count), counted and paged per sample; the straddling filter; the repeats on the sample page;
compare pairs once per sample; a repeated run finished before settled rows existed is settled on first
view. The rows agree with a plain reading of the canonical records (`bqas.runner.repeats.settle`)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import httpx
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.review.local import LocalReview
from bqas.review.settings import ReviewSettings
from bqas.runner.run import settled_records
from bqas.service.testing import ServiceServer
from bqas.store.db import Store, open_store
from bqas.testing.scripted_llm import ScriptedLLM
from test_repeats import Varying, _scenario


def _two_repeated_runs(tmp_path: Path) -> tuple[Store, str, str]:
    runner = CliRunner()
    with ScriptedLLM(responder=Varying()) as server:
        path = _scenario(tmp_path)
        args = ["run", str(path), "--no-progress", "--base-url", server.base_url, "--model", "m", "--repeats", "3"]
        for out in ("a", "b"):
            result = runner.invoke(app, [*args, "--out", str(tmp_path / out)])
            assert result.exit_code in (0, 1), result.output
    runs = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    return open_store(), str(runs[1]["id"]), str(runs[0]["id"])


def _rows(page: str) -> list[str]:
    return re.findall(r'<tr class="row[^"]*" data-href="[^"]*/results/(\d+)', page)


def test_a_repeated_run_lists_filters_and_pages_per_sample(tmp_path: Path, bqas_home: Path) -> None:
    store, run_a, run_b = _two_repeated_runs(tmp_path)
    canonical = {r["sample_id"]: r for r in settled_records(store, run_b)}
    assert store.count_results(run_b) == 9 and len(canonical) == 3
    local = LocalReview(store, ReviewSettings())
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url) as client:
        client.get(local.start_path)
        page = client.get(f"/review/runs/{run_b}").text
        assert "3 sample(s) match the filter" in page and 'id="settled-note"' in page
        assert len(_rows(page)) == 3 and page.count('class="badge v-needs_review straddles"') == 1
        straddling = client.get(f"/review/runs/{run_b}", params={"straddles": "yes"}).text
        assert "1 sample(s) match the filter" in straddling and "s001" in straddling and "s000" not in straddling
        steady = client.get(f"/review/runs/{run_b}", params={"straddles": "no"}).text
        assert "2 sample(s) match the filter" in steady
        for verdict in {r["verdict"] for r in canonical.values()}:
            want = sum(1 for r in canonical.values() if r["verdict"] == verdict)
            got = client.get(f"/review/runs/{run_b}", params={"verdict": verdict}).text
            assert f"{want} sample(s) match the filter" in got, verdict

        # The sample page: the canonical verdict, and each repeat with its own verdict.
        (link,) = _rows(straddling)
        sample = client.get(f"/review/runs/{run_b}/results/{link}").text
        assert 'id="repeat-list"' in sample and sample.count(">repeat ") == 3
        assert "straddles a threshold" in sample and "canonical" in sample
        shown = re.search(r'id="canonical-verdict">([^<]+)<', sample)
        assert shown is not None and shown.group(1) == canonical["s001"]["verdict"]

        # Compare and the baseline column pair once per sample, not 3 x 3 times.
        compare = client.get("/review/runs/compare", params={"a": run_a, "b": run_b}).text
        assert len(re.findall(r'id="pair-\d+"', compare)) == 3
        based = client.get(f"/review/runs/{run_b}", params={"baseline": run_a}).text
        assert len(_rows(based)) == 3

        # A repeated run stored before settled samples existed is settled when first viewed.
        with sqlite3.connect(bqas_home / "bqas.sqlite") as conn:
            conn.execute("DELETE FROM settled_results WHERE run_id = ?", (run_a,))
        again = client.get(f"/review/runs/{run_a}").text
        assert "3 sample(s) match the filter" in again
        assert store.has_settled(run_a)


def test_a_run_judged_once_has_no_straddling_sample(tmp_path: Path, bqas_home: Path) -> None:
    from viewer_runs import make_run

    store = open_store()
    make_run(store, "r-once", 20, seed=1)
    local = LocalReview(store, ReviewSettings())
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url) as client:
        client.get(local.start_path)
        assert "0 result(s) match" in client.get("/review/runs/r-once", params={"straddles": "yes"}).text
        assert "20 result(s) match" in client.get("/review/runs/r-once", params={"straddles": "no"}).text
        assert client.get("/review/runs/r-once", params={"straddles": "maybe"}).status_code == 400
