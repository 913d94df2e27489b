"""Runs as users meet them: the id first, a killed run shown as interrupted with its resume command,
resume into the original --out, one resumer at a time (a lease), full run ids and ambiguous prefixes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.testing.scripted_llm import Reply, ScriptedLLM
from test_runner import GOOD, _sample, _scenario


def _stored(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_killed_run_is_interrupted_resumes_into_its_out_and_a_second_resume_refuses(
    tmp_path: Path, bqas_home: Path
) -> None:
    n = 12
    gate = threading.Event()
    gate.set()

    def hold(_payload: dict[str, Any]) -> Reply | None:
        gate.wait(60)  # while cleared, the resumed run waits on its LLM calls (and holds its lease)
        return None

    with ScriptedLLM(default=Reply(content=json.dumps(GOOD)), latency=0.25, responder=hold) as server:
        path = _scenario(tmp_path, [_sample(i) for i in range(n)], backend="llm")
        env = {**os.environ, "BQAS_HOME": str(bqas_home), "BQAS_LLM_CACHE": "false"}
        llm = ["--no-progress", "--base-url", server.base_url, "--model", "m1"]
        out = tmp_path / "o"
        cmd = [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--concurrency", "2", *llm, "--out", str(out)]
        proc = subprocess.Popen(
            cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the run id comes first, also with --no-progress
        assert first.startswith("run ") and f"outputs: {out}" in first, first
        run_id = first.split()[1]
        db = bqas_home / "bqas.sqlite"
        deadline = time.time() + 30
        while time.time() < deadline and _stored(db) < 4:
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        done_before = _stored(db)
        assert 4 <= done_before < n, "the run should have been killed in the middle"

        runner = CliRunner()
        listed = json.loads(runner.invoke(app, ["runs", "--json"]).output)
        assert [(r["id"], r["status"], r.get("resume")) for r in listed] == [
            (run_id, "interrupted", f"bqas run --resume {run_id}")
        ]
        table = runner.invoke(app, ["runs"], env={"COLUMNS": "80"})
        assert f"resume with `bqas run --resume {run_id}`" in table.output

        # Resume without --out (the files go to the original --out); hold it inside its LLM calls.
        gate.clear()
        before = len(server.requests)
        resume = [sys.executable, "-m", "bqas.cli.main", "run", "--resume", run_id, *llm]
        first_resume = subprocess.Popen(resume, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline and len(server.requests) == before and first_resume.poll() is None:
            time.sleep(0.05)
        assert len(server.requests) > before, "the first resume should be judging"
        second = subprocess.run(resume, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        gate.set()
        stdout, stderr = first_resume.communicate(timeout=60)
    assert second.returncode == 2, second.stderr
    assert f"run {run_id} is being run right now by pid {first_resume.pid}" in second.stderr
    assert first_resume.returncode == 0, stderr.decode()
    assert stdout.decode().startswith(f"resuming {run_id} · outputs: {out}")
    results = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["response_id"] for line in results) == sorted(f"s{i:03d}" for i in range(n))
    assert not (tmp_path / "runs").exists()
    assert len(server.requests) - before == n - done_before  # nothing judged twice, the refused resume judged none
    with sqlite3.connect(db) as conn:
        status, owner = conn.execute("SELECT status, lease_owner FROM runs WHERE id = ?", (run_id,)).fetchone()
    assert status == "done" and owner is None  # the lease is given back


def test_run_ids_are_never_cut_and_an_ambiguous_prefix_names_the_matches(bqas_home: Path) -> None:
    from bqas.settings import get_settings
    from bqas.store.db import open_store

    store = open_store(get_settings().resolved_database_url())
    ids = ["r-20261201-093000-a1b2", "r-20261201-093000-e5f6"]  # the shape of new_run_id()
    verdicts = {"production_ready": 120, "needs_review": 31, "failed": 12, "unscored": 4}
    for run_id in ids:
        store.create_run(run_id, "[bold]demo[/] scenario of the Hessen pilot schools", {}, total=167)
        store.update_run(
            run_id, status="done", started_at=datetime.now(UTC), summary={"verdicts": verdicts, "pass_rate": 0.72}
        )
    runner = CliRunner()
    for width in ("80", "120"):
        table = runner.invoke(app, ["runs"], env={"COLUMNS": width})
        assert table.exit_code == 0, table.output
        for run_id in ids:
            assert run_id in table.output, table.output
        assert "[bold" in table.output  # a name is data, not rich markup
    shown = runner.invoke(app, ["show", "r-20261201-093000"])
    assert shown.exit_code == 2
    assert f"ambiguous: 'r-20261201-093000' matches {ids[0]}, {ids[1]}" in shown.output
    resumed = runner.invoke(app, ["run", "--resume", "r-20261201"])
    assert resumed.exit_code == 2 and "ambiguous" in resumed.output
