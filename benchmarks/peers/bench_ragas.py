"""RAGAS metrics through BQAS versus plain ragas, on the scripted LLM server with fixed latency.

200 RAG samples (the 198 MTRAG rows with contexts of ../shared/datasets/rag_faithfulness_en.jsonl, topped
up from BEGIN, attribution_en.jsonl) are scored with the six LLM metrics
(faithfulness, answer_relevancy, context_recall, context_precision, noise_sensitivity,
factual_correctness):

* BQAS: ``bqas.ragas.api.score_sample`` over ``LLMClient`` (one concurrency limit, on-disk cache), run
  twice on the same cache - the second run must make no LLM call;
* plain ragas at its best settings: the same ``ragas.metrics.collections`` metrics on ragas's own
  ``llm_factory`` with an ``AsyncOpenAI`` client pointed at the scripted server, an asyncio semaphore
  and a connection pool both capped at the same concurrency, and ragas's own ``DiskCacheBackend``;
  also run twice on its cache (requests and tokens counted by an httpx response hook).

The values of both sides are compared metric by metric (same sample, same metric): the script fails
when they differ, when BQAS's second run makes an LLM call, or when BQAS is slower.

The server runs in its own process (``--serve``) and answers valid JSON for each ragas response model
(``bqas.testing.ragas_scripted.ragas_responder``). Nothing leaves 127.0.0.1; ragas analytics are off.
answer_relevancy needs embeddings: both sides use BQAS's embedder (``BQAS_EMBEDDER``, hashing by default
here), so the comparison is about the LLM path.

    .venv/bin/python benchmarks/peers/bench_ragas.py --samples 200 --latency 0.05 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import DEFAULT_DATA, data_part
from _server import server_process

DATASET = "rag_faithfulness_en.jsonl"
TOP_UP = "attribution_en.jsonl"
SIX = (
    "faithfulness",
    "answer_relevancy",
    "context_recall",
    "context_precision",
    "noise_sensitivity",
    "factual_correctness",
)


def serve(latency: float) -> None:
    """The scripted server process: ragas-aware answers after ``latency`` seconds, until killed."""
    from bqas.testing.ragas_scripted import ragas_responder
    from bqas.testing.scripted_llm import ScriptedLLM

    server = ScriptedLLM(responder=ragas_responder, latency=latency).start()
    print(f"PORT {server.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


def load_samples(n: int, data: Path) -> list[dict[str, Any]]:
    """n samples: question, contexts, response; the reference is the task's human reference answer."""
    rows = [json.loads(line) for line in (data / DATASET).read_text(encoding="utf-8").splitlines() if line.strip()]
    references = {r["task_id"]: r["answer"] for r in rows if r.get("model") == "reference"}
    samples = []
    for r in rows:
        if not r.get("contexts") or not r.get("answer"):
            continue
        samples.append(
            {
                "user_input": r["question"],
                "response": r["answer"],
                "retrieved_contexts": r["contexts"],
                "reference": references.get(r["task_id"], r["answer"]),
            }
        )
    # MTRAG has 198 rows with contexts; the rest come from BEGIN (knowledge passage as context and reference).
    for line in (data / TOP_UP).read_text(encoding="utf-8").splitlines():
        if len(samples) >= n:
            break
        r = json.loads(line)
        if r.get("knowledge") and r.get("message") and r.get("response"):
            samples.append(
                {
                    "user_input": r["message"],
                    "response": r["response"],
                    "retrieved_contexts": [r["knowledge"]],
                    "reference": r["knowledge"],
                }
            )
    if len(samples) < n:
        raise SystemExit(f"only {len(samples)} usable samples")
    return samples[:n]


async def run_bqas(base_url: str, samples: list[dict[str, Any]], concurrency: int, cache: Path) -> dict[str, Any]:
    from bqas.llm.client import LLMClient, LLMConfig
    from bqas.ragas.api import score_sample

    config = LLMConfig(base_url=base_url, model="judge", concurrency=concurrency, cache_path=cache)
    start = time.perf_counter()
    async with LLMClient(config) as client:
        results = await asyncio.gather(*(score_sample(s, SIX, llm=client) for s in samples))
        usage = client.usage
    wall = time.perf_counter() - start
    records = [r for rs in results for r in rs]
    return {
        "wall_s": wall,
        "llm_calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "cache_hits": usage.cache_hits,
        "scored": sum(r["status"] == "scored" for r in records),
        "unscored": sum(r["status"] == "unscored" for r in records),
        "values": {m: [r["value"] for r in records if r["metric"] == m] for m in SIX},
    }


async def run_plain_ragas(
    base_url: str, samples: list[dict[str, Any]], concurrency: int, cache_dir: Path
) -> dict[str, Any]:
    import httpx
    from openai import AsyncOpenAI

    from bqas.ragas import lib  # sets RAGAS_DO_NOT_TRACK before ragas is imported
    from bqas.ragas.adapters import SeamEmbedding
    from bqas.ragas.metrics import METRIC_FIELDS

    counts = {"calls": 0, "prompt_tokens": 0}

    async def count(response: httpx.Response) -> None:
        await response.aread()
        counts["calls"] += 1
        with suppress(ValueError, KeyError, TypeError):
            counts["prompt_tokens"] += int(response.json()["usage"]["prompt_tokens"])

    from ragas.cache import DiskCacheBackend
    from ragas.llms.base import llm_factory

    http = httpx.AsyncClient(
        limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        timeout=httpx.Timeout(600.0, connect=5.0),
        event_hooks={"response": [count]},
    )
    client = AsyncOpenAI(base_url=base_url, api_key="unused", http_client=http, max_retries=0)
    llm = llm_factory("judge", client=client, cache=DiskCacheBackend(str(cache_dir)))
    emb = SeamEmbedding()
    metrics = {
        "faithfulness": lib.Faithfulness(llm=llm),
        "answer_relevancy": lib.AnswerRelevancy(llm=llm, embeddings=emb),
        "context_recall": lib.ContextRecall(llm=llm),
        "context_precision": lib.ContextPrecision(llm=llm),
        "noise_sensitivity": lib.NoiseSensitivity(llm=llm),
        "factual_correctness": lib.FactualCorrectness(llm=llm),
    }

    sem = asyncio.Semaphore(concurrency)

    async def one(name: str, sample: dict[str, Any]) -> float | None:
        async with sem:
            try:
                result = await metrics[name].ascore(**{f: sample[f] for f in METRIC_FIELDS[name]})
                return float(result.value)
            except Exception:
                return None

    start = time.perf_counter()
    values = await asyncio.gather(*(one(m, s) for s in samples for m in SIX))
    wall = time.perf_counter() - start
    await http.aclose()
    return {
        "wall_s": wall,
        "llm_calls": counts["calls"],
        "prompt_tokens": counts["prompt_tokens"],
        "failed": sum(v is None for v in values),
        # Same layout as run_bqas: per metric, the values in sample order.
        "values": {m: [values[i * len(SIX) + j] for i in range(len(samples))] for j, m in enumerate(SIX)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with the MTRAG and BEGIN files")
    parser.add_argument("--latency", type=float, default=0.05, help="server latency per request (s)")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight, both sides")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    os.environ.setdefault("BQAS_EMBEDDER", "hashing")
    import bqas.ragas.lib  # noqa: F401 - import ragas (4-6 s) before any timing

    samples = load_samples(args.samples, args.data)
    print(f"data: {data_part(args.data)}")
    with (
        server_process([sys.executable, __file__, "--serve", "--latency", str(args.latency)]) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        cache = Path(tmp) / "llm-cache.sqlite"
        first = asyncio.run(run_bqas(url, samples, args.concurrency, cache))
        second = asyncio.run(run_bqas(url, samples, args.concurrency, cache))
        ragas_cache = Path(tmp) / "ragas-cache"
        plain = asyncio.run(run_plain_ragas(url, samples, args.concurrency, ragas_cache))
        plain_again = asyncio.run(run_plain_ragas(url, samples, args.concurrency, ragas_cache))
    print(f"samples={len(samples)} metrics={len(SIX)} latency={args.latency}s concurrency={args.concurrency}")
    print(f"{'':22}{'wall s':>9}{'LLM calls':>11}{'prompt tok':>12}")
    runs = (
        ("plain ragas", plain),
        ("plain ragas, cached", plain_again),
        ("BQAS, first run", first),
        ("BQAS, second run", second),
    )
    for label, r in runs:
        print(f"{label:22}{r['wall_s']:9.2f}{r['llm_calls']:11d}{r['prompt_tokens']:12d}")
    print(
        f"BQAS/ragas ratios (first run): wall {first['wall_s'] / plain['wall_s']:.2f}, "
        f"calls {first['llm_calls'] / max(1, plain['llm_calls']):.2f}, "
        f"prompt tokens {first['prompt_tokens'] / max(1, plain['prompt_tokens']):.2f}"
    )
    print(
        f"BQAS first run: {first['scored']} scored, {first['unscored']} unscored, {first['cache_hits']} cache hits "
        f"(repeated identical prompts); plain ragas failures: {plain['failed']}"
    )
    same_ref = sum(s["reference"] == s["response"] for s in samples)
    print(f"samples whose reference equals the response (MTRAG 'reference' rows): {same_ref}")
    print(f"BQAS second run: {second['llm_calls']} LLM calls, {second['cache_hits']} cache hits")
    same = first["values"] == second["values"]
    print(f"second run values identical to the first: {same}")
    differ = {
        m: sum(
            1
            for a, b in zip(first["values"][m], plain["values"][m], strict=True)
            if a is None or b is None or abs(float(a) - float(b)) > 1e-9
        )
        for m in SIX
    }
    print(f"BQAS vs plain ragas, values that differ per metric (of {len(samples)}): {differ}")
    if second["llm_calls"] != 0 or first["wall_s"] > plain["wall_s"] or not same or any(differ.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
