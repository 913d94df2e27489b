"""How soon ``bqas run --ray`` notices a lost head and a frozen worker node, with the shipped defaults.

A real two-node cluster on this machine (``ray.cluster_utils``: a head and a second node, 1 CPU each, in
a Ray temp folder of its own), the driver as a ``bqas run`` process judging voice samples with an LLM
judge on a scripted OpenAI-compatible server (0.5 s per answer, so that the run lasts). Once 6 results
are stored:

* ``head``: every process of the head node is SIGKILLed; measured: seconds from the kill to the driver's
  "has not answered" line and to its exit (and the exit code; 75 expected, ``BQAS_RAY_HEAD_TIMEOUT``
  default 10 s);
* ``freeze``: every process of the second node (raylet, agents, its judge actor) is SIGSTOPped (and
  continued after the run); measured: seconds from the freeze to the driver's "no answer to its batch"
  line (the batch deadline, ``ray.batch_timeout`` unset: 4 × the slowest batch so far, at least 30 s),
  and the run's exit code (0 expected).

Each drill ``--repeat`` times; min and median printed.

Run: nice .venv/bin/python benchmarks/runner/bench_ray_faults.py [--repeat 2] [--drills head freeze]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from bqas.testing.processes import with_descendants
from bqas.testing.scripted_llm import Reply, ScriptedLLM

GOOD = {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass", "reasoning": "ok"}
SMALL = 80 * 1024 * 1024


def _scenario(folder: Path, n: int) -> Path:
    rows = [
        {
            "id": f"s{i:03d}",
            "user_input": f"Erinnere mich an Termin {i}",
            "detected_intent": "reminder",
            "response": f"Ich erinnere dich an Termin {i}.",
            "expected_intent": "reminder",
        }
        for i in range(n)
    ]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = folder / "scenario.yaml"
    path.write_text(
        f"name: faults-{secrets.token_hex(4)}\njudges: [voice]\nlanguage: de\nbackend: llm\nconcurrency: 4\n"
        "dataset: data.jsonl\nray:\n  batch_size: 2\n  placement_timeout: 20\n",
        encoding="utf-8",
    )
    return path


def _stored(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM results")).scalar() or 0)
    except Exception:  # not created yet
        return 0
    finally:
        engine.dispose()


def _processes(node: Any) -> list[int]:
    return with_descendants(int(info.process.pid) for infos in node.all_processes.values() for info in infos)


def drill(kind: str, n: int) -> dict[str, float | int | None]:
    import ray.cluster_utils

    folder = Path(tempfile.mkdtemp(prefix="bqr-", dir="/tmp"))
    os.environ["RAY_TMPDIR"] = str(folder)
    home = folder / "home"
    url = f"sqlite:///{home / 'bqas.sqlite'}"
    env = {**os.environ, "BQAS_HOME": str(home), "BQAS_LLM_CACHE": "false"}
    env.pop("RAY_ADDRESS", None)
    cluster = ray.cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": SMALL, "include_dashboard": False},
    )
    stopped: list[int] = []
    out: dict[str, float | int | None] = {"noticed_s": None, "exit_s": None, "code": None}
    try:
        node = cluster.add_node(num_cpus=1, object_store_memory=SMALL)
        cluster.wait_for_nodes()
        with ScriptedLLM(default=Reply(content=json.dumps(GOOD)), latency=0.5) as server:
            path = _scenario(folder, n)
            cmd = [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--no-progress", "--ray", cluster.address]
            cmd += ["--ray-workers", "2", "--base-url", server.base_url, "--model", "m1", "--out", str(folder / "o")]
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            fault_at: list[float] = []
            marker = "has not answered" if kind == "head" else "no answer to its batch"

            def inject() -> None:
                while proc.poll() is None:
                    if _stored(url) >= 6:
                        victim = cluster.head_node if kind == "head" else node
                        sig = signal.SIGKILL if kind == "head" else signal.SIGSTOP
                        fault_at.append(time.monotonic())
                        for pid in _processes(victim):
                            with contextlib.suppress(ProcessLookupError):
                                os.kill(pid, sig)
                                stopped.append(pid)
                        return
                    time.sleep(0.1)

            threading.Thread(target=inject, daemon=True).start()
            assert proc.stderr is not None
            for line in proc.stderr:
                if marker in line and fault_at and out["noticed_s"] is None:
                    out["noticed_s"] = time.monotonic() - fault_at[0]
            out["code"] = proc.wait(timeout=600)
            if fault_at:
                out["exit_s"] = time.monotonic() - fault_at[0]
    finally:
        if kind != "head":
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        cluster.shutdown()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--drills", nargs="+", default=["head", "freeze"], choices=["head", "freeze"])
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    for kind in args.drills:
        runs = [drill(kind, args.samples) for _ in range(args.repeat)]
        noticed = [float(r["noticed_s"]) for r in runs if r["noticed_s"] is not None]
        ended = [float(r["exit_s"]) for r in runs if r["exit_s"] is not None]
        codes = [r["code"] for r in runs]
        summary = f"{kind}: exit codes {codes}"
        if noticed:
            summary += f"; noticed after min {min(noticed):.1f} s median {statistics.median(noticed):.1f} s"
        if ended:
            summary += f"; the driver ended min {min(ended):.1f} s median {statistics.median(ended):.1f} s after it"
        print(summary, f"(load average now {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
