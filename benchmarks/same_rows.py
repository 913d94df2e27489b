"""Do two checkouts store the same rows for the same run? (issue 15 target 5: a cheaper hot path must not
change a result.)

Runs the fixture of tests/test_runner_hotpath.py through ``execute_run`` in this tree and in another
checkout's ``src`` (a child process with it first on ``PYTHONPATH``), each against its own scripted server,
and compares every stored row: seq, key, repeat, status, verdict, composite, the record and the exchange
column, latencies left out. Two runs: the fixture as the test has it (one fooled reply for all samples,
concurrency 3), and one sample at a time with a scripted sequence of replies that take the other paths
(HTTP 500s until the retries are spent, a runaway reply refused by size, a lone-surrogate escape, a fenced
reply with a trailing comma and a number as a string, an invalid reply and its retry, Chinese reasoning).

Run: .venv/bin/python benchmarks/same_rows.py BEFORE/src
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

GOOD = {"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass"}


def _sequence() -> list[Any]:
    from bqas.testing.scripted_llm import Reply

    # In sample order (one at a time): s0 unscored after its retries, s1 a runaway reply, s2 a lone
    # surrogate, s3 a fenced reply with repairs, s4 an invalid reply and its retry, s5 Chinese reasoning.
    return [
        Reply(status=500, content="boom"),
        Reply(status=500, content="boom"),
        Reply(content="x" * 70_000),
        Reply(
            content='{"intent_accuracy": 70, "faithfulness": 3, "relevance": 4, "coherence": 4, "safety": "pass",'
            ' "reasoning": "\\ud800 kaputt"}'
        ),
        Reply(
            content='```json\n{"intent_accuracy": "80", "faithfulness": 4, "relevance": 4, "coherence": 4,'
            ' "safety": "pass", "reasoning": "Passt, die Antwort nennt den Termin.",}\n```'
        ),
        Reply(content='{"intent_accuracy": 130}'),
        Reply(content=json.dumps({**GOOD, "reasoning": "Zweiter Versuch, jetzt vollständig."}, ensure_ascii=False)),
        Reply(content=json.dumps({**GOOD, "reasoning": "回答正确，提到了预约时间。"}, ensure_ascii=False)),
    ]


def child(out: Path) -> None:
    """Run both fixtures with the bqas on ``sys.path`` and write the rows as JSON."""
    sys.path.insert(0, str(ROOT))
    import sqlite3

    from tests.test_runner_hotpath import FOOLED, _dataset, _no_latency

    from bqas.judging.engine import EngineOptions, JudgeEngine
    from bqas.judging.spec import default_registry
    from bqas.llm.client import LLMClient, LLMConfig
    from bqas.runner.execute import execute_run
    from bqas.runner.run import new_event_loop
    from bqas.runner.scenario import load_scenario
    from bqas.store.db import open_store
    from bqas.testing.scripted_llm import Reply, ScriptedLLM

    def run(server: ScriptedLLM, folder: Path, concurrency: int, **config: Any) -> list[Any]:
        scenario_path = _dataset(folder)
        db = folder / "rows.sqlite"
        store = open_store(f"sqlite:///{db}")
        store.create_run("hot", "hot", {}, total=7)
        llm = LLMClient(LLMConfig(base_url=server.base_url, model="judge-1", timeout=10.0, **config))
        engine = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
        loop = new_event_loop()
        try:
            loop.run_until_complete(
                execute_run(engine, load_scenario(scenario_path), store, "hot", concurrency=concurrency)
            )
            loop.run_until_complete(llm.aclose())
        finally:
            loop.close()
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT seq, sample_key, repeat, status, verdict, composite, record, exchange FROM results ORDER BY seq"
            ).fetchall()
        return [[*r[:6], _no_latency(json.loads(r[6])), _no_latency(json.loads(r[7]) if r[7] else None)] for r in rows]

    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "a").mkdir()
        (folder / "b").mkdir()
        with ScriptedLLM(default=Reply(content=json.dumps({**FOOLED, "reasoning": "Sehr gut."}))) as server:
            result["fooled"] = run(server, folder / "a", 3, max_retries=0)
        with ScriptedLLM(default=Reply(content=json.dumps({**GOOD, "reasoning": "Gut."}))) as server:
            server.push(*_sequence())
            result["sequence"] = run(server, folder / "b", 1, max_retries=1, backoff_base=0.01, max_reply_bytes=64_000)
    out.write_text(json.dumps(result, ensure_ascii=False, sort_keys=True), encoding="utf-8")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]))
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    other = str(Path(sys.argv[1]).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        outs = {}
        for label, src in (("this", str(ROOT / "src")), ("other", other)):
            out = Path(tmp) / f"{label}.json"
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
            subprocess.run([sys.executable, __file__, "--child", str(out)], env=env, check=True)
            outs[label] = json.loads(out.read_text(encoding="utf-8"))
    for name in outs["this"]:
        a, b = outs["this"][name], outs["other"][name]
        statuses = sorted({row[3] for row in a})
        verdict = "the same" if a == b else "DIFFERENT"
        print(f"{name}: {len(a)} rows, statuses {statuses}: {verdict}")
        if a != b:
            for ra, rb in zip(a, b, strict=False):
                if ra != rb:
                    print(f"  first difference at seq {ra[0]}:\n    this  {ra}\n    other {rb}")
                    break
            sys.exit(1)


if __name__ == "__main__":
    main()
