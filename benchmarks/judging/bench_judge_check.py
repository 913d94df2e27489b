"""What `bqas judge-check` costs per judge against a scripted LLM that answers after 50 ms.

    .venv/bin/python benchmarks/judging/bench_judge_check.py [--latency 0.05] [--repeats 3] [--judge voice ...]
        [--language de]

Runs the check as users run it (the CLI's code path: ``run_check`` with the engine the check builds for
``--backend llm``: the LLM tier alone, see bqas.judging.check_engine; the LLM cache off, no check cache), ``--repeats`` times per judge (default: every judge with a known-answer
set in ``--language``), and prints per judge the LLM calls,
prompt and completion tokens (the scripted server counts a reply's tokens as the OpenAI usage it
sends) and the wall time, min and median. The scripted server answers every request the same: the
figures are the check's cost, not a judge's quality.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bqas.judging.check import available_sets, run_check
from bqas.judging.check_engine import check_engine
from bqas.judging.factory import LLMOverrides
from bqas.settings import Settings
from bqas.testing.judge_replies import GOOD as REPLIES
from bqas.testing.scripted_llm import Reply, ScriptedLLM

REASONING = {"de": "Geprüft.", "en": "Checked.", "zh": "已检查。"}


async def once(base_url: str, judge: str, language: str, home: Path) -> tuple[float, Any]:
    settings = Settings(home=home, llm_cache=False, judge_check=True)
    engine, measured = check_engine(
        settings, backend="llm", language=language, overrides=LLMOverrides(base_url=base_url, model="scripted")
    )

    async def evaluate(name: str, sample: dict[str, Any], response_id: str, lang: str) -> Any:
        return await engine.evaluate(name, sample, response_id=response_id, language=lang)

    started = time.perf_counter()
    try:
        result = await run_check(
            engine.registry.get(judge),
            language,
            evaluate,
            model="scripted",
            backend="llm",
            safety_gate=engine.options.safety_gate,
            measured=measured,
        )
    finally:
        assert engine.llm is not None
        await engine.llm.aclose()
    return time.perf_counter() - started, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.05, help="seconds the scripted LLM takes per reply")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--judge", nargs="*", help="judges to check (default: every judge with a set in --language)")
    ap.add_argument("--language", default="de")
    args = ap.parse_args(argv)
    judges = args.judge or [judge for judge, language in available_sets() if language == args.language]
    import tempfile

    print(f"scripted LLM latency {args.latency * 1000:.0f} ms; {args.repeats} repeats; language {args.language}")
    print(
        f"{'judge':18} {'pairs':>5} {'calls':>5} {'prompt tok':>10} {'compl tok':>9} {'wall min s':>10} {'median s':>8}"
    )
    for judge in judges:
        content = json.dumps({**REPLIES[judge], "reasoning": REASONING[args.language]}, ensure_ascii=False)
        walls: list[float] = []
        result: Any = None
        with ScriptedLLM(default=Reply(content=content), latency=args.latency) as server:
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory() as home:
                    wall, result = asyncio.run(once(server.base_url, judge, args.language, Path(home)))
                walls.append(wall)
        print(
            f"{judge:18} {result.pairs:>5} {result.llm_calls:>5} {result.prompt_tokens:>10} "
            f"{result.completion_tokens:>9} {min(walls):>10.2f} {statistics.median(walls):>8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
