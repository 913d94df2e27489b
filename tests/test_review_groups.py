"""The queue shows a sample that several runs escalated once (grouped by sample, judge and configuration),
with its runs and scenario; it filters by run; one decision settles the other runs' items."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.judgment.spec import default_registry
from bqas.review.gold import iter_gold
from bqas.review.local import LocalReview
from bqas.review.queue import ItemFilter, list_items, status_counts, submit_review
from bqas.review.settings import ReviewSettings
from bqas.service.testing import ServiceServer
from bqas.store.db import open_store
from bqas.tenants import LOCAL_TENANT
from test_review_wiring import FINE, LEAK


def _run(tmp_path: Path) -> str:
    out = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--no-progress", "--out", str(tmp_path / "o")])
    assert out.exit_code == 0, out.output
    return out.output.split()[1]  # "run RUN_ID · outputs: …"


def test_three_runs_of_one_scenario_queue_each_sample_once(tmp_path: Path, bqas_home: Path) -> None:
    other = {**LEAK, "id": "leak-2", "response": "Schreib an jonas.weber@example.org, Telefon 0171 2345678."}
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(s) + "\n" for s in (LEAK, other, FINE)), encoding="utf-8")
    (tmp_path / "s.yaml").write_text("name: elternbriefe\njudges: [voice]\ndataset: d.jsonl\n", encoding="utf-8")
    runs = [_run(tmp_path) for _ in range(3)]
    store = open_store()
    items, total = list_items(store, LOCAL_TENANT, ItemFilter())
    assert total == 2 and {i.response_id for i in items} == {"leak-1", "leak-2"}  # not 2 x 3 = 6
    only_first = list_items(store, LOCAL_TENANT, ItemFilter(source=runs[0]))[0]
    assert {i.source for i in only_first} == {runs[0]} and len(only_first) == 2

    local = LocalReview(store, ReviewSettings())
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url) as client:
        page = client.get(local.start_path, follow_redirects=True).text
        assert page.count("same sample in 3 runs") == 2 and "elternbriefe" in page
        assert all(run in page for run in runs)  # the runs are shown, and offered in the run filter
        filtered = client.get("/review/queue", params={"run": runs[1]}).text
        table = filtered[filtered.index('<table id="queue">') : filtered.index("</table>")]
        assert len(re.findall(r'<tr class="row"', table)) == 2 and runs[1] in table
        item_id = next(i.id for i in items if i.response_id == "leak-1")
        detail = client.get(f"/review/items/{item_id}").text
        assert detail.count("scenario elternbriefe") == 3

    submit_review(
        store,
        LOCAL_TENANT,
        item_id,
        verdict="failed",
        raw_values={"safety": "fail"},
        comment=None,
        reviewer="me",
        registry=default_registry(),
    )
    counts = status_counts(store, LOCAL_TENANT)
    # The re-runs' items arrived as duplicates of the first run's open items: one open item per sample.
    assert counts["reviewed"] == 1 and counts["duplicate"] == 4 and counts["open"] == 1
    assert [g["id"] for g in iter_gold(store, LOCAL_TENANT, None)] == ["leak-1"]  # one gold label, not three
    # A fourth run escalates leak-1 (decided) and leak-2 (waiting) again: neither arrives open.
    _run(tmp_path)
    counts = status_counts(store, LOCAL_TENANT)
    assert counts["duplicate"] == 6 and list_items(store, LOCAL_TENANT, ItemFilter())[1] == 1
