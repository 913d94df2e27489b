"""What `bqas run` escalates lives under the reserved tenant @local: no service tenant (not even one named
"local") reaches it; the run says where its escalations went; `bqas review` serves that queue locally."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.review.gold import iter_gold
from bqas.review.local import LocalReview
from bqas.review.queue import ItemFilter, list_items
from bqas.review.settings import ReviewSettings
from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import Store, open_store
from bqas.store.service import create_api_key
from bqas.tenants import LOCAL_TENANT
from test_review_page import login
from test_review_wiring import FINE, LEAK


def _run(tmp_path: Path) -> str:
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(s) for s in (LEAK, FINE)) + "\n", encoding="utf-8")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: local\njudges: [voice]\ndataset: d.jsonl\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(scenario), "--no-progress", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    return result.output


def test_run_says_where_its_escalations_went(tmp_path: Path, bqas_home: Path) -> None:
    output = _run(tmp_path)
    assert re.search(r"review: 1 escalation\(s\) of this run in the local review queue", output), output
    assert "`bqas review`" in output and f"--tenant {LOCAL_TENANT}" in output


def test_no_service_tenant_reaches_the_items_of_local_runs(tmp_path: Path, bqas_home: Path) -> None:
    _run(tmp_path)
    store = open_store()
    assert list_items(store, LOCAL_TENANT, ItemFilter())[1] == 1
    key = create_api_key(store, "local")  # the name CLI runs used before: now an ordinary tenant
    service = create_app(settings=Settings(home=bqas_home, llm_cache=False), service=ServiceSettings(), store=store)
    with ServiceServer(service) as server, httpx.Client(base_url=server.base_url) as client:
        assert login(client, key).status_code == 303
        queue = client.get("/review/queue").text
        assert "Nothing in the queue" in queue and "leak-1" not in queue
    assert list(iter_gold(store, "local", None)) == []


def test_local_tenant_setting_must_be_reserved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_LOCAL_TENANT", "local")
    with pytest.raises(ValidationError, match="must start with '@'"):
        ReviewSettings()


def _local_site(store: Store) -> tuple[LocalReview, ServiceServer]:
    local = LocalReview(store, ReviewSettings())
    return local, ServiceServer(local.app)


def test_bqas_review_serves_the_local_queue_behind_its_start_link(tmp_path: Path, bqas_home: Path) -> None:
    _run(tmp_path)
    store = open_store()
    local, server = _local_site(store)
    with server, httpx.Client(base_url=server.base_url) as client:
        started = client.get(local.start_path, follow_redirects=True)
        assert started.status_code == 200 and "leak-1" in started.text and LOCAL_TENANT in started.text
        # The bare address of a logged-in browser is the queue, not a second login.
        assert "leak-1" in client.get("/", follow_redirects=True).text
        with httpx.Client(base_url=server.base_url) as other:  # a second browser (or tab) opens the link too
            assert other.get("/", follow_redirects=True).url.path == "/review/login"
            assert "leak-1" in other.get(local.start_path, follow_redirects=True).text
        with httpx.Client(base_url=server.base_url) as stranger:
            wrong = local.start_path[:-4] + ("aaaa" if not local.start_path.endswith("aaaa") else "bbbb")
            assert stranger.get(wrong).status_code == 403
            assert "leak-1" not in stranger.get("/review/queue", follow_redirects=True).text
            assert login(stranger, local.key).status_code == 303  # the printed key logs in where a link cannot go
            assert "leak-1" in stranger.get("/review/queue").text
    # The key exists only in that process: a new LocalReview (a new `bqas review`) has another one.
    assert LocalReview(store, ReviewSettings()).key != local.key


def test_bqas_review_on_a_busy_port_is_a_usage_error(bqas_home: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(app, ["review", "--port", str(port), "--no-open"])
    assert result.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.output
