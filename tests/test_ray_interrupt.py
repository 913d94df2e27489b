"""Ctrl-C on a run judged on Ray (`--ray local`): one line with the exact resume command, exit 130, no
traceback and no Ray token warning; the resume finishes every sample exactly once. A real Ray cluster
started by the run, in a Ray temp folder of its own."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tests.ray_support import isolated_ray_tmpdir

from bqas.store.db import open_store

BQAS = str(Path(sys.executable).parent / "bqas")
NOISE = ("Traceback", "Task was destroyed", "Event loop is closed", "Token authentication")


def test_ctrl_c_on_a_ray_run_stops_cleanly_and_resumes_exactly(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"s{i}",
            "user_input": f"Erinnere mich morgen an Termin {i}",
            "detected_intent": "reminder",
            "response": f"Ich erinnere dich morgen an Termin {i}.",
            "expected_intent": "reminder",
        }
        for i in range(3000)
    ]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "s.yaml").write_text("name: ray-stop\njudges: [voice]\ndataset: d.jsonl\n", encoding="utf-8")
    home = tmp_path / "home"
    with isolated_ray_tmpdir():
        env = {**os.environ, "BQAS_HOME": str(home)}
        cmd = [BQAS, "run", "s.yaml", "--ray", "local", "--ray-workers", "1", "--no-progress", "--out", "o"]
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "run RUN_ID · outputs: o"
        run_id = first.split()[1]
        store = open_store(f"sqlite:///{home / 'bqas.sqlite'}")
        deadline = time.monotonic() + 240
        while store.count_results(run_id) == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if "Started a local Ray instance" not in line]
    assert len(lines) <= 3 and not [n for n in NOISE if n in err], err
    resume = re.search(r"resume with `bqas run --resume (r-[\w-]+)`", err)
    assert resume is not None and resume.group(1) == run_id, err
    done = subprocess.run(
        [BQAS, "run", "--resume", run_id, "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    per_sample = Counter(json.loads(line)["sample_id"] for line in (tmp_path / "o" / "results.jsonl").open())
    assert len(per_sample) == len(rows) and set(per_sample.values()) == {1}
