"""A Ray node lost in the middle of ``bqas run --ray``: a real two-node cluster on this machine (two
raylets, ``ray.cluster_utils``, 1 CPU each, small object stores, in a Ray temp folder of its own), the
driver as a separate ``bqas run`` process, and every process of the second node (its raylet and the
workers that host actors) killed.

Before, the lost actor's replacement waited for ever for a CPU (``{'CPU': 1}`` pending) and the run hung
at N-2 of N. Now the replacement's wait is bounded (``--ray-placement-timeout``), the lost batches are
judged by the actor that is left, every sample is judged exactly once, and stderr says what happened;
with no actor left at all, the rest is judged in the driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.ray_support import isolated_ray_tmpdir, kill_node
from tests.test_ray_run import GOOD, _query, _results, _run_ids, _scenario

from bqas.testing.scripted_llm import Reply, ScriptedLLM

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]

# A judge actor's wait for placement includes its start: the worker process, its imports, the engine
# (seconds; more on a machine shared with CI's other test workers). The bound is Ray's own default.
PLACEMENT_S = 60
N = 40  # samples; at 0.5 s per LLM answer and 2 per actor at once, ~10 s of judging on two actors
SMALL = 80 * 1024 * 1024  # object store per node (Ray's floor is 75 MiB)
# Ray notices a dead raylet by its health check; quicker than the default (3 s × 5) to keep CI short.
HEALTH = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}


@pytest.fixture
def two_nodes(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """(cluster, worker node): a head with ``head_cpus`` CPUs (param) and a second node with 1 CPU."""
    # Ray is a development dependency: missing, this fails (CI promises a cluster), it never skips.
    from ray import cluster_utils

    head_cpus = getattr(request, "param", 1)
    with isolated_ray_tmpdir():
        cluster = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": head_cpus,
                "object_store_memory": SMALL,
                "include_dashboard": False,
                "_system_config": HEALTH,
            },
        )
        try:
            node = cluster.add_node(num_cpus=1, object_store_memory=SMALL)
            cluster.wait_for_nodes()
            yield cluster, node
        finally:
            cluster.shutdown()


def _run_with_node_killed(
    tmp_path: Path, bqas_home: Path, cluster: Any, node: Any, workers: int
) -> tuple[Any, str, Path]:
    """``bqas run`` on the cluster (LLM judge on the scripted server, so that it lasts); every process of
    the second node (raylet and the workers it started) is SIGKILLed once some results are stored.
    Returns (finished process, store URL, scenario)."""
    n = N
    url = f"sqlite:///{bqas_home / 'bqas.sqlite'}"
    env = {**os.environ, "BQAS_HOME": str(bqas_home), "BQAS_LLM_CACHE": "false"}
    env.pop("RAY_ADDRESS", None)
    killed: list[int] = []
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD)), latency=0.5) as server:
        path = _scenario(tmp_path, n, backend="llm", extra="ray:\n  batch_size: 2\n")
        cmd = [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--no-progress", "--ray", cluster.address]
        cmd += ["--ray-workers", str(workers), "--ray-placement-timeout", str(PLACEMENT_S), "--concurrency", "4"]
        cmd += ["--base-url", server.base_url, "--model", "m1", "--out", str(tmp_path / "o")]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def kill_when_some_are_stored() -> None:
            deadline = time.time() + 180
            while time.time() < deadline and proc.poll() is None:
                ids = _run_ids(url, path)
                if ids and len(_results(url, ids[-1])) >= 6:
                    kill_node(node)
                    killed.append(len(_results(url, ids[-1])))
                    return
                time.sleep(0.1)

        killer = threading.Thread(target=kill_when_some_are_stored, daemon=True)
        killer.start()
        try:
            # The actors' start and, with no CPU left, the replacement's wait: up to twice PLACEMENT_S.
            out, err = proc.communicate(timeout=2 * PLACEMENT_S + 240)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"bqas run hung after the node was lost:\n{err[-3000:]}") from None
        killer.join(timeout=5)
    assert killed and killed[0] < n, "the node should have been killed in the middle of the run"
    proc.stdout_text, proc.stderr_text = out, err  # type: ignore[attr-defined]
    return proc, url, path


def _check_all_judged_once(url: str, path: Path, n: int) -> str:
    run_id = _run_ids(url, path)[-1]
    keys = _results(url, run_id)
    assert len(keys) == len(set(keys)) == n + 2  # every sample once, none twice
    statuses = _query(url, "SELECT status FROM results WHERE run_id = :run", run=run_id)
    assert sorted(set(statuses)) == ["invalid", "scored"]  # no judge_error: the lost work was judged again
    return run_id


def test_a_lost_node_neither_hangs_the_run_nor_loses_its_samples(
    tmp_path: Path, bqas_home: Path, two_nodes: tuple[Any, Any]
) -> None:
    cluster, node = two_nodes
    proc, url, path = _run_with_node_killed(tmp_path, bqas_home, cluster, node, workers=2)
    err = proc.stderr_text  # type: ignore[attr-defined]
    assert proc.returncode == 0, err[-3000:]
    assert "no judge actor was placed" not in err, f"the actors never started, so no loss could be seen:\n{err}"
    _check_all_judged_once(url, path, N)
    assert "was lost (" in err and "its batches go to the other actors" in err
    # The head's one CPU holds the other actor: the replacement cannot be placed. It is given up after
    # the placement timeout, or the run finishes first (the other actor judged the rest meanwhile).
    given_up = f"was not placed within {PLACEMENT_S} s" in err and "going on with 1 actor(s)" in err
    assert given_up or "the run needed no more actors" in err, err[-3000:]
    name = yaml.safe_load(path.read_text(encoding="utf-8"))["name"]
    assert name in proc.stdout_text  # type: ignore[attr-defined]


@pytest.mark.parametrize("two_nodes", [0], indirect=True)
def test_with_no_actor_left_the_rest_is_judged_by_the_driver(
    tmp_path: Path, bqas_home: Path, two_nodes: tuple[Any, Any]
) -> None:
    """The head has no CPU: the only actor runs on the node that is lost, and no replacement can be
    placed anywhere. The run judges what is left in the driver process instead of failing or hanging."""
    cluster, node = two_nodes
    proc, url, path = _run_with_node_killed(tmp_path, bqas_home, cluster, node, workers=1)
    err = proc.stderr_text  # type: ignore[attr-defined]
    assert proc.returncode == 0, err[-3000:]
    _check_all_judged_once(url, path, N)
    assert "no judge actor is left on the Ray cluster" in err
    assert "judging the remaining samples in this process" in err
