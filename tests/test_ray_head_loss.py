"""The Ray head lost, or a worker node frozen, in the middle of ``bqas run --ray``: a real two-node cluster
on this machine (``ray.cluster_utils``, in a Ray temp folder of its own), the driver as a separate
``bqas run`` process, and every process of the head node SIGKILLed (or of the worker node SIGSTOPped)
once some results are stored.

Before, the driver sat silent until Ray's core ended it with exit 1 (a missed gate's code), the run left
``running``. Now the driver's own check of the GCS notices, the run is marked ``interrupted``, the
resume command is printed and the exit code is 75; ``--resume`` completes the run, here (without ``--ray``)
or on a new cluster (``--ray`` with the address of a fresh one), every sample judged once, as a local run
of the same scenario judges it. A frozen node stays alive to
Ray for a minute or more; its actor's batch deadline (``ray.batch_timeout``) gives it up instead, and
its batches are judged by the actor that is left."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.ray_support import isolated_ray_tmpdir, kill_node, node_processes
from tests.test_ray_run import GOOD, _query, _results, _run_ids, _scenario

from bqas.runner.ray_head import RAY_HEAD_LOST, HeadWatch
from bqas.testing.scripted_llm import Reply, ScriptedLLM

N = 80
SMALL = 80 * 1024 * 1024  # object store per node (Ray's floor is 75 MiB)
HANG_GUARD_S = 240  # Ray's own give-up is 60 s after the head goes; a driver still running then hangs


def test_the_watch_calls_lost_once_the_head_stays_silent_and_never_while_it_answers() -> None:
    answers = [True, True]  # then silence
    calls: list[bool] = []
    lost: list[int] = []
    done = threading.Event()

    def check(_address: str, _client: Any) -> bool:
        calls.append(answers.pop(0) if answers else False)
        return calls[-1]

    def on_lost(_silent: float) -> None:
        lost.append(len(calls))
        done.set()

    watch = HeadWatch("127.0.0.1:1", 2.0, on_lost, check=check).start()
    assert done.wait(HANG_GUARD_S)
    time.sleep(2)
    watch.stop()
    assert calls[:2] == [True, True] and False in calls  # not lost while the head answered
    assert lost == [len(calls)]  # called once, and the watch stopped asking after that

    calm: list[float] = []
    steady = HeadWatch("127.0.0.1:1", 1.0, calm.append, check=lambda _a, _c: True).start()
    time.sleep(3)
    steady.stop()
    assert calm == []


@pytest.fixture
def two_nodes() -> Iterator[tuple[Any, Any]]:
    """(cluster, worker node): a head with 1 CPU and a second node with 1 CPU."""
    # Ray is a development dependency: missing, this fails (CI promises a cluster), it never skips.
    from ray import cluster_utils

    with isolated_ray_tmpdir():
        cluster = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "object_store_memory": SMALL, "include_dashboard": False},
        )
        try:
            node = cluster.add_node(num_cpus=1, object_store_memory=SMALL)
            cluster.wait_for_nodes()
            yield cluster, node
        finally:
            cluster.shutdown()


@contextlib.contextmanager
def _new_cluster() -> Iterator[Any]:
    """A fresh one-node cluster (2 CPUs) in a Ray temp folder of its own, as an operator starts after
    losing the old head: nothing of the lost cluster's state carries over."""
    from ray import cluster_utils

    with isolated_ray_tmpdir():
        cluster = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 2, "object_store_memory": SMALL, "include_dashboard": False},
        )
        try:
            cluster.wait_for_nodes()
            yield cluster
        finally:
            cluster.shutdown()


def _actors_started(cluster: Any) -> int:
    """Judge actors whose worker process started on ``cluster`` (Ray names an actor's class in the first
    line of its worker's log)."""
    logs = Path(cluster.head_node.get_logs_dir_path())
    return sum(
        1
        for log in logs.glob("worker-*.out")
        if ":actor_name:JudgeWorker" in log.read_text(encoding="utf-8", errors="replace")
    )


@pytest.mark.ray
@pytest.mark.timeout(900)
@pytest.mark.parametrize("resume_on", ["here", "a new cluster"])
def test_a_lost_head_interrupts_the_run_with_its_exit_code_and_resume_completes_it(
    tmp_path: Path, bqas_home: Path, two_nodes: tuple[Any, Any], resume_on: str
) -> None:
    cluster, _node = two_nodes
    url = f"sqlite:///{bqas_home / 'bqas.sqlite'}"
    env = {**os.environ, "BQAS_HOME": str(bqas_home), "BQAS_LLM_CACHE": "false", "BQAS_RAY_HEAD_TIMEOUT": "5"}
    env.pop("RAY_ADDRESS", None)
    killed: list[int] = []
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD)), latency=1.0) as server:
        path = _scenario(tmp_path, N, backend="llm", extra="ray:\n  batch_size: 2\n")
        base = [sys.executable, "-m", "bqas.cli.main", "run", "--no-progress", "--base-url", server.base_url]
        base += ["--model", "m1", "--concurrency", "4", "--out", str(tmp_path / "o")]
        cmd = [*base, str(path), "--ray", cluster.address, "--ray-workers", "2"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def kill_head() -> None:
            deadline = time.time() + 180
            while time.time() < deadline and proc.poll() is None:
                ids = _run_ids(url, path)
                if ids and len(_results(url, ids[-1])) >= 6:
                    kill_node(cluster.head_node)  # and the actor workers it started
                    killed.append(len(_results(url, ids[-1])))
                    return
                time.sleep(0.1)

        killer = threading.Thread(target=kill_head, daemon=True)
        killer.start()
        try:
            _out, err = proc.communicate(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
            raise AssertionError(f"bqas run hung after the head was lost:\n{err[-3000:]}") from None
        killer.join(timeout=5)
        assert killed and killed[0] < N + 2, "the head should have been killed in the middle of the run"
        run_id = _run_ids(url, path)[-1]
        assert proc.returncode == RAY_HEAD_LOST, (proc.returncode, err[-6000:])
        assert "the Ray cluster's head at" in err and "has not answered" in err, err[-3000:]
        assert f"`bqas run --resume {run_id}`" in err
        assert _query(url, "SELECT status FROM runs WHERE id = :run", run=run_id) == ["interrupted"]
        before = set(_results(url, run_id))
        assert len(before) < N + 2

        if resume_on == "here":
            resumed = subprocess.run([*base, "--resume", run_id], env=env, capture_output=True, text=True, timeout=300)
            assert resumed.returncode == 0, resumed.stderr[-3000:] + resumed.stdout[-2000:]
        else:
            with _new_cluster() as fresh:
                assert fresh.address != cluster.address
                on_fresh = {**env, "RAY_TMPDIR": os.environ["RAY_TMPDIR"]}
                cmd = [*base, "--resume", run_id, "--ray", fresh.address, "--ray-workers", "2"]
                resumed = subprocess.run(cmd, env=on_fresh, capture_output=True, text=True, timeout=300)
                assert resumed.returncode == 0, resumed.stderr[-3000:] + resumed.stdout[-2000:]
                assert _actors_started(fresh) >= 2, "the resumed run should have judged on the new cluster"
        # The same scenario judged locally from the start, for comparison.
        local = subprocess.run([*base, str(path)], env=env, capture_output=True, text=True, timeout=300)
        assert local.returncode == 0, local.stderr[-3000:]
    keys = _results(url, run_id)
    assert len(keys) == len(set(keys)) == N + 2  # every sample once, none twice
    local_id = _run_ids(url, path)[-1]
    assert local_id != run_id
    sql = "SELECT sample_key || '=' || status || '=' || coalesce(verdict, '') FROM results WHERE run_id = :run"
    assert sorted(_query(url, sql, run=run_id)) == sorted(_query(url, sql, run=local_id))
    assert _query(url, "SELECT status FROM runs WHERE id = :run", run=run_id) == ["done"]


def _stopped(pid: int) -> bool:
    """Whether ``pid`` has stopped (SIGSTOP is delivered when the process is next scheduled, not at kill())."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            stat = fh.read()
    except OSError:
        return True  # gone
    return stat[stat.rindex(")") + 2] in "tTXZ"


def _holds_write_lock(pids: set[int], store: Path) -> bool:
    """Whether one of ``pids`` holds an exclusive lock on the SQLite store (its file, -wal or -shm): frozen
    inside a write, it would block every other writer, the replacement actors included, for as long as it
    stays frozen (SQLite has one writer at a time; its busy wait is 30 s, longer than the batch deadline)."""
    inodes = set()
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            inodes.add(os.stat(f"{store}{suffix}").st_ino)
    with open("/proc/locks", encoding="utf-8") as fh:
        for line in fh:
            # "1: POSIX  ADVISORY  WRITE 1234 08:02:5678 120 120"; "1: -> POSIX ..." is a waiter, not a holder.
            fields = line.split()
            if "->" in fields or len(fields) < 6:
                continue
            if fields[3] == "WRITE" and int(fields[4]) in pids and int(fields[5].rsplit(":", 1)[1]) in inodes:
                return True
    return False


@pytest.mark.ray
@pytest.mark.timeout(600)
def test_a_frozen_node_is_given_up_by_the_batch_deadline_and_nothing_is_lost(
    tmp_path: Path, bqas_home: Path, two_nodes: tuple[Any, Any]
) -> None:
    cluster, node = two_nodes
    url = f"sqlite:///{bqas_home / 'bqas.sqlite'}"
    env = {**os.environ, "BQAS_HOME": str(bqas_home), "BQAS_LLM_CACHE": "false"}
    env.pop("RAY_ADDRESS", None)
    n = 40
    stopped: list[int] = []
    try:
        with ScriptedLLM(default=Reply(content=json.dumps(GOOD)), latency=0.5) as server:
            extra = "ray:\n  batch_size: 2\n  batch_timeout: 8\n  placement_timeout: 60\n"
            path = _scenario(tmp_path, n, backend="llm", extra=extra)
            cmd = [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--no-progress", "--ray", cluster.address]
            cmd += ["--ray-workers", "2", "--concurrency", "4", "--base-url", server.base_url, "--model", "m1"]
            cmd += ["--out", str(tmp_path / "o")]
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

            def freeze_node() -> None:
                deadline = time.time() + 180
                while time.time() < deadline and proc.poll() is None:
                    ids = _run_ids(url, path)
                    if ids and len(_results(url, ids[-1])) >= 6:
                        # Frozen, the node must not hold the SQLite store's write lock: a node frozen in the
                        # middle of a write stops every writer (a shared SQLite file on one machine; a real
                        # node of a cluster writes to PostgreSQL). Stopped inside one, it runs on for a moment.
                        for _ in range(200):
                            pids = node_processes(node)
                            for pid in pids:
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGSTOP)
                                    stopped.append(pid)
                            while not all(_stopped(pid) for pid in pids):
                                time.sleep(0.001)
                            if not _holds_write_lock(set(pids), bqas_home / "bqas.sqlite"):
                                return
                            for pid in pids:
                                with contextlib.suppress(ProcessLookupError):
                                    os.kill(pid, signal.SIGCONT)
                            stopped.clear()
                            time.sleep(0.02)
                        return
                    time.sleep(0.1)

            freezer = threading.Thread(target=freeze_node, daemon=True)
            freezer.start()
            try:  # the actors' start (up to the placement timeout) comes before the freeze
                _out, err = proc.communicate(timeout=HANG_GUARD_S + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                _out, err = proc.communicate()
                raise AssertionError(f"bqas run hung on the frozen node:\n{err[-3000:]}") from None
            freezer.join(timeout=5)
    finally:
        for pid in stopped:  # the cluster's shutdown needs them running again
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert stopped, "the node should have been frozen in the middle of the run"
    assert proc.returncode == 0, err[-3000:]
    assert "no judge actor was placed" not in err, f"the actors never started, so no node was frozen:\n{err}"
    assert "no answer to its batch within 8 s (ray.batch_timeout)" in err, err[-3000:]
    assert "its batches go to the other actors" in err
    run_id = _run_ids(url, path)[-1]
    keys = _results(url, run_id)
    assert len(keys) == len(set(keys)) == n + 2  # every sample once, none twice
    statuses = _query(url, "SELECT status FROM results WHERE run_id = :run", run=run_id)
    assert sorted(set(statuses)) == ["invalid", "scored"]  # the frozen actor's batches were judged again
