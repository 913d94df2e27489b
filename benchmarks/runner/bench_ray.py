"""``bqas run --ray`` benchmark: the offline judge over N RAG samples, on Ray and locally.

What users run: ``bqas run scenario.yaml`` through the CLI (results.jsonl, junit.xml and report.html
written, inside the timing), each run in a fresh process, the wall time taken around that process
(Ray's local cluster start included). The samples come from ``_samples.rag_samples``: distinct German
and Chinese RAG samples, 3-5 passages and ~4,000 characters of context each (``rag_hallucination``).

Modes, side by side in each round, rounds repeated (``--repeat``; min and median printed):

* ``local-1``: a local run with one offline worker thread (``BQAS_OFFLINE_WORKERS=1``): the yardstick of
  the Ray overhead at one worker;
* ``local``: a local run with the defaults (one worker thread per CPU);
* ``ray-1``: ``--ray local --ray-workers 1``;
* ``ray-2``: ``--ray local --ray-workers 2``;
* ``ray-1-warm``, ``ray-2-warm``: ``--ray auto`` with ``RAY_ADDRESS`` set to a cluster (2 CPUs) started
  before the timing, as a team that runs often keeps one (``ray start --head``): the run pays for its
  actors, not for the cluster. The cluster's CPU seconds during the run are counted in.

Targets: ray-2 >= 1.8x faster than ray-1; ray-1 <= 1.10x local-1; driver peak RSS flat in N
(``--sizes`` with two sizes). The driver's peak RSS is the CLI process's own (``RUSAGE_SELF``), not the
actors'.

CPU seconds, so that a reader can tell the machine's load from Ray's overhead: every process of the run
(the CLI, Ray's GCS, raylet and agents, the judge actors) shares the session the benchmark starts it in;
``/proc`` is read every 0.25 s and each process's last user+system time is summed, split into the driver
(the CLI process), the judge actors and Ray's own processes. The 1-minute load average is printed at the
start and the end of each run.

Run: nice .venv/bin/python benchmarks/runner/bench_ray.py [--sizes 1000 4000] [--repeat 2] [--modes ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHILD = """
import resource, sys
from bqas.cli.main import app
try:
    app(sys.argv[2:], standalone_mode=False)
finally:
    with open(sys.argv[1], "w") as fh:
        fh.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
"""

MODES = {
    "local-1": ([], {"BQAS_OFFLINE_WORKERS": "1"}),
    "local": ([], {}),
    "ray-1": (["--ray", "local", "--ray-workers", "1"], {}),
    "ray-2": (["--ray", "local", "--ray-workers", "2"], {}),
    "ray-1-warm": (["--ray", "auto", "--ray-workers", "1"], {}),
    "ray-2-warm": (["--ray", "auto", "--ray-workers", "2"], {}),
}

# A cluster kept up for the warm modes: started before the timed run, shut down (by its own driver, so
# that nothing but its own processes goes) when the benchmark closes its stdin.
HOLDER = """
import sys, ray
info = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
print(info.address_info["gcs_address"], flush=True)
sys.stdin.read()
ray.shutdown()
"""


def write_scenario(folder: Path, n: int) -> Path:
    """N German/Chinese RAG samples and a scenario for the offline rag_hallucination judge."""
    from _samples import rag_samples

    data = folder / "data.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for sample in rag_samples(n, languages=("de", "zh")):
            fh.write(json.dumps(sample, ensure_ascii=False) + "\n")
    path = folder / "scenario.yaml"
    path.write_text(
        "name: bench-ray\njudges: [rag_hallucination]\nbackend: offline\nlanguage: de\nconcurrency: 8\n"
        "dataset: data.jsonl\nthresholds:\n  max_unscored: 1.0\n",
        encoding="utf-8",
    )
    return path


TICK = os.sysconf("SC_CLK_TCK")


def session_cpu(sid: int, seen: dict[int, tuple[str, float]]) -> None:
    """Record (name, user+system seconds) of every live process of session ``sid`` into ``seen``."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid:  # fields[3]: the session id; [11], [12]: utime, stime in ticks
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            seen[int(entry.name)] = (name, (int(fields[11]) + int(fields[12])) / TICK)


def one_run(scenario: Path, mode: str, folder: Path) -> dict[str, float]:
    """One ``bqas run`` in a fresh process (own BQAS_HOME): wall seconds, the driver's peak RSS, CPU seconds."""
    flags, extra_env = MODES[mode]
    home = Path(tempfile.mkdtemp(dir=folder))
    rss_file = home / "rss"
    env = {**os.environ, "BQAS_HOME": str(home), **extra_env}
    cmd = [sys.executable, "-c", CHILD, str(rss_file), "run", str(scenario), "--no-progress"]
    cmd += ["--out", str(home / "out"), *flags]
    holder = None
    cluster_before: dict[int, tuple[str, float]] = {}
    cluster: dict[int, tuple[str, float]] = {}
    if mode.endswith("-warm"):
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        assert holder.stdout is not None
        env["RAY_ADDRESS"] = holder.stdout.readline().strip()
        time.sleep(2)  # let the fresh cluster settle (its agents start) before the timing
        session_cpu(holder.pid, cluster_before)
    load_before = os.getloadavg()[0]
    seen: dict[int, tuple[str, float]] = {}
    started = time.perf_counter()
    with subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as proc:
        while proc.poll() is None:
            session_cpu(proc.pid, seen)
            if holder is not None:
                session_cpu(holder.pid, cluster)
            time.sleep(0.25)
        stderr = proc.stderr.read() if proc.stderr else ""
    wall = time.perf_counter() - started
    if holder is not None:  # the cluster's processes: CPU seconds spent during the run only
        session_cpu(holder.pid, cluster)
        for pid, (name, cpu) in cluster.items():
            seen[pid] = (name, cpu - cluster_before.get(pid, (name, 0.0))[1])
        holder.communicate("", timeout=120)
    if not (home / "out" / "report.html").is_file():
        raise SystemExit(f"{mode} failed (exit {proc.returncode}):\n{stderr[-3000:]}")
    lines = sum(1 for _ in (home / "out" / "results.jsonl").open(encoding="utf-8"))
    driver = seen.get(proc.pid, ("", 0.0))[1]
    actors = sum(cpu for pid, (name, cpu) in seen.items() if name.startswith("ray::JudgeWork"))
    total = sum(cpu for _, cpu in seen.values())
    return {
        "wall": wall,
        "rss_mb": float(rss_file.read_text()),
        "results": lines,
        "cpu_s": round(total, 1),
        "cpu_driver_s": round(driver, 1),
        "cpu_actors_s": round(actors, 1),
        "cpu_ray_system_s": round(total - driver - actors, 1),
        "load_start": load_before,
        "load_end": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in args.sizes:
            folder = root / f"n{n}"
            folder.mkdir()
            scenario = write_scenario(folder, n)
            runs: dict[str, list[dict[str, float]]] = {m: [] for m in args.modes}
            for _ in range(args.repeat):
                for mode in args.modes:  # side by side in each round: the machine's noise hits all modes
                    result = one_run(scenario, mode, folder)
                    runs[mode].append(result)
                    print(json.dumps({"n": n, "mode": mode, **result}), flush=True)
            walls = {m: [r["wall"] for r in rs] for m, rs in runs.items()}
            summary = {
                m: {
                    "wall_min": min(w),
                    "wall_median": statistics.median(w),
                    "cpu_s_median": statistics.median(r["cpu_s"] for r in runs[m]),
                    "rss_max_mb": max(r["rss_mb"] for r in runs[m]),
                }
                for m, w in walls.items()
            }
            ratios = {}
            if "ray-1" in walls and "ray-2" in walls:
                ratios["speedup_2_vs_1_min"] = min(walls["ray-1"]) / min(walls["ray-2"])
                ratios["speedup_2_vs_1_median"] = statistics.median(walls["ray-1"]) / statistics.median(walls["ray-2"])
            if "ray-1" in walls and "local-1" in walls:
                ratios["overhead_ray1_vs_local1_min"] = min(walls["ray-1"]) / min(walls["local-1"])
                ratios["overhead_ray1_vs_local1_median"] = statistics.median(walls["ray-1"]) / statistics.median(
                    walls["local-1"]
                )
            print(json.dumps({"n": n, "summary": summary, "ratios": ratios}, indent=1), flush=True)


if __name__ == "__main__":
    main()
