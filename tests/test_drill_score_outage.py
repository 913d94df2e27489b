"""The drill behind docs/service.md's figures of scoring through a long database outage
(benchmarks/service/drill_score_outage.py), run short: two real ``bqas serve`` processes over a real
PostgreSQL that is frozen (SIGSTOP of every server process) for a few seconds, the key cache's freshness
set shorter than the freeze so that it runs out in the middle of it, as the shipped 30 s do in a 120 s
outage. Every score call with the verified key is answered 200 (from the cache, said stale once its
freshness is over), submissions get 503, never 500, and no job fails. The drill itself runs for minutes
(``--outage 120``); this checks the same path in seconds and keeps the script working."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bqas.testing import postgres

DRILL = Path(__file__).resolve().parents[1] / "benchmarks" / "service" / "drill_score_outage.py"

pytestmark = pytest.mark.skipif(
    not postgres.available(), reason="needs PostgreSQL's server binaries (CI installs them)"
)


@pytest.mark.timeout(600)
def test_score_answers_200_for_a_verified_key_while_two_replicas_database_is_frozen(tmp_path: Path) -> None:
    out = tmp_path / "drill.json"
    cmd = [sys.executable, str(DRILL), "--outage", "8", "--key-cache-seconds", "2", "--rate", "2"]
    cmd += ["--submit-rate", "0.5", "--guard", "60", "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    scores = [a for a in result["every_answer"] if a["kind"] == "score"]
    assert {a["replica"] for a in scores} == {"api-a", "api-b"}
    assert len(scores) == 2 * 8 * 2
    assert [a for a in scores if a["code"] != 200] == []
    # The key's freshness (2 s) ran out during the freeze on both replicas: the cache's stale answer is
    # what kept them scoring.
    assert {a["replica"] for a in scores if a["stale"]} == {"api-a", "api-b"}
    submits = [a["code"] for a in result["every_answer"] if a["kind"] == "submit"]
    assert submits and set(submits) == {503}
    assert result["jobs"]["failed"] == 0
    assert set(result["accepted_after_thaw_s"]) == {"api-a", "api-b"}


def test_the_frozen_database_benchmark_imports_what_it_uses() -> None:
    """benchmarks/service/bench_frozen_database.py (the 60 s freeze figures) loads: it imported a store
    helper that was later removed as unused, so the script stopped at its first line."""
    import importlib.util

    path = DRILL.with_name("bench_frozen_database.py")
    spec = importlib.util.spec_from_file_location("bench_frozen_database", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.main) and callable(module.count_jobs)
