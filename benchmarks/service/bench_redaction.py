"""Cost of BQAS_REDACT_PII on what is written: milliseconds to mask one stored result record.

Records are real: generated varied samples (``_samples.py``: German, Chinese and English RAG samples with
3-5 passages and ~4,000 characters of context; short German voice turns) judged by the offline engine,
with the judge's inputs attached as the runner and the review loop store them. The timing is
``bqas.privacy.redact`` of each record (what ``RedactedJSON`` does on a write). Each pass uses fresh
samples; min and median of the pass means are printed. With redaction off a write costs a flag check.

``--cli`` measures what users run instead: ``bqas run`` (a subprocess, CLI defaults, review loop on,
output files written) over a scenario of generated RAG (de, zh, en) and voice samples, with
``BQAS_REDACT_PII`` off and on, interleaved, each run with a fresh BQAS home; wall seconds per run.

Run: nice .venv/bin/python benchmarks/service/bench_redaction.py [--n 30] [--repeat 3] [--cli]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import rag_samples, voice_samples

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judgment.spec import default_registry
from bqas.privacy import redact

INPUT_KEYS = ("user_input", "query", "response", "available_facts", "context", "detected_intent", "expected_intent")


async def records(engine: JudgeEngine, samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for sample in samples:
        judge = sample.get("judge") or "voice"
        judge = judge if isinstance(judge, str) else judge[0]
        result = await engine.evaluate(judge, sample, response_id=sample["id"], language=sample.get("language"))
        record = result.to_record()
        record["inputs"] = {k: sample[k] for k in INPUT_KEYS if k in sample}
        out.append(record)
    return out


def cli_runs(n: int, repeat: int) -> None:
    """Wall seconds of `bqas run` with redaction off and on, side by side."""
    root = Path(tempfile.mkdtemp(prefix="bqas-bench-redaction-"))
    samples = rag_samples(3 * n, seed=77) + voice_samples(n, seed=77)
    (root / "d.jsonl").write_text("\n".join(json.dumps(s, ensure_ascii=False) for s in samples) + "\n", "utf-8")
    (root / "s.yaml").write_text(
        "name: bench-redaction\njudges: [rag_hallucination, voice]\nbackend: offline\ndataset: d.jsonl\n", "utf-8"
    )
    bqas = str(Path(sys.executable).with_name("bqas"))
    walls: dict[str, list[float]] = defaultdict(list)
    for rep in range(repeat):
        for mode in ("off", "on"):
            home = root / f"home-{mode}-{rep}"
            env = {**os.environ, "BQAS_HOME": str(home), "BQAS_REDACT_PII": "true" if mode == "on" else "false"}
            started = time.perf_counter()
            done = subprocess.run(
                [bqas, "run", str(root / "s.yaml"), "--no-progress", "--out", str(home / "out")],
                env=env,
                capture_output=True,
                text=True,
            )
            walls[mode].append(time.perf_counter() - started)
            if done.returncode not in (0, 1):
                raise SystemExit(f"bqas run failed ({done.returncode}): {done.stderr[-2000:]}")
    for mode, secs in walls.items():
        print(f"redaction {mode:3s}: bqas run of {len(samples)} samples, wall s: min {min(secs):6.2f}  median "
              f"{statistics.median(secs):6.2f}  (runs: {', '.join(f'{x:.2f}' for x in secs)})")  # fmt: skip
    ratio = [b / a for a, b in zip(walls["off"], walls["on"], strict=True)]
    print(f"on/off ratio per pair: min {min(ratio):.2f}  median {statistics.median(ratio):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="samples per workload and pass")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cli", action="store_true", help="time `bqas run` with redaction off and on")
    args = parser.parse_args()
    if args.cli:
        cli_runs(args.n, args.repeat)
        return
    engine = JudgeEngine(default_registry(), options=EngineOptions(backend="offline"))
    engine.offline.load()
    redact({"warm": "up Tel. 0171 2345678"})  # load the PII lexicons outside the timing
    means: dict[str, list[float]] = defaultdict(list)
    sizes: dict[str, int] = {}
    for rep in range(args.repeat):
        rag = rag_samples(3 * args.n, seed=40 + rep)
        sets = {f"rag {lang}": [s for s in rag if s["language"] == lang] for lang in ("de", "zh", "en")}
        sets["voice"] = voice_samples(args.n, seed=40 + rep)
        for name, samples in sets.items():
            recs = asyncio.run(records(engine, samples))
            sizes[name] = int(statistics.fmean(len(str(r)) for r in recs))
            started = time.perf_counter()
            for rec in recs:
                redact(rec)
            means[name].append(1000 * (time.perf_counter() - started) / len(recs))
    for name, ms in means.items():
        print(
            f"{name:7s} passes={len(ms)} records/pass={args.n}  ~{sizes[name]} chars/record  "
            f"ms per record: min {min(ms):6.2f}  median {statistics.median(ms):6.2f}"
        )


if __name__ == "__main__":
    main()
