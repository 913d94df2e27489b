"""``bqas synth-rag`` (offline, and LLM mode) beside RAGAS ``TestsetGenerator`` on the same documents.

Documents: ``--pages`` pages of about 3,000 characters of English text, built from the MTRAG passages
(rag_faithfulness_en.jsonl, titled Wikipedia/FiQA/government/IBM Cloud passages) topped up with the
BEGIN knowledge snippets (attribution_en.jsonl) of ../shared/datasets; used for measuring only, never
shipped. One Markdown file per page, headed by the title of its first passage.

* offline: ``synth_rag`` for ``--count`` items, each repetition in a fresh process (wall time and peak
  RSS of that process, model loading included: what a user's ``bqas synth-rag`` costs);
* LLM mode: ``synth_rag_llm`` on the scripted server at ``--latency`` per call (calls per kept item);
* RAGAS: ``TestsetGenerator.generate_with_langchain_docs`` (default transforms and query distribution,
  ``testset_size = --ragas-size``) with ``LangchainLLMWrapper(ChatOpenAI)`` on the same scripted server,
  embeddings from BQAS's hashing embedder (local, no calls). The server (its own process) answers every
  RAGAS prompt with valid JSON built from the schema in the prompt (``responders.py``) and counts calls
  and tokens (tokens estimated as characters / 4 on both sides). tiktoken is given a word-piece encoder
  because its cl100k table would be downloaded; nothing leaves 127.0.0.1.

    .venv/bin/python benchmarks/ragsynth/bench_synth_rag.py --pages 200 --count 500 --repeats 2 \\
        --latency 0.05 --ragas-size 100 --llm-count 100
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _data import DEFAULT_DATA  # noqa: E402

PAGE_CHARS = 3000


def build_corpus(folder: Path, pages: int, data: Path) -> int:
    """Write ``pages`` Markdown pages into ``folder``; returns the characters written."""
    passages: list[tuple[str, str]] = []
    seen: set[str] = set()
    for line in (data / "rag_faithfulness_en.jsonl").read_text(encoding="utf-8").splitlines():
        for ctx in json.loads(line).get("contexts") or []:
            if ctx not in seen:
                seen.add(ctx)
                title, _, body = ctx.partition("\n")
                passages.append((title.strip()[:80] or "Passage", body.strip() or title))
    for line in (data / "attribution_en.jsonl").read_text(encoding="utf-8").splitlines():
        knowledge = str(json.loads(line).get("knowledge") or "").strip()
        if knowledge and knowledge not in seen:
            seen.add(knowledge)
            passages.append((knowledge.split(".")[0][:60], knowledge))
    folder.mkdir(parents=True, exist_ok=True)
    written, i = 0, 0
    for n in range(1, pages + 1):
        title = passages[i % len(passages)][0]
        parts = [f"# {title}\n"]
        size = 0
        while size < PAGE_CHARS and i < len(passages) * 2:
            head, body = passages[i % len(passages)]
            parts.append(f"## {head}\n\n{body}\n")
            size += len(body)
            i += 1
        text = "\n".join(parts)
        (folder / f"page_{n:03d}.md").write_text(text, encoding="utf-8")
        written += len(text)
    return written


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_offline(folder: Path, count: int) -> dict[str, Any]:
    """One offline generation in this (fresh) process."""
    start = time.perf_counter()
    from bqas.offline.embeddings import default_embedder
    from bqas.ragsynth.generate import SynthRagRequest, synth_rag

    report = synth_rag(SynthRagRequest([folder], count, language="en", seed=1), default_embedder())
    return {"wall_s": time.perf_counter() - start, "peak_rss_mb": _peak_rss_mb(), "kept": report.kept,
            "dropped": report.dropped}  # fmt: skip


def run_llm_mode(folder: Path, count: int, base_url: str) -> dict[str, Any]:
    import asyncio

    from bqas.llm.client import LLMClient, LLMConfig
    from bqas.offline.embeddings import default_embedder
    from bqas.ragsynth.generate import SynthRagRequest
    from bqas.ragsynth.llm_generator import synth_rag_llm

    client = LLMClient(LLMConfig(base_url=base_url, model="scripted", max_retries=0, timeout=60))

    async def go() -> Any:
        try:
            return await synth_rag_llm(
                SynthRagRequest([folder], count, language="en", seed=1), client, default_embedder(), max_rounds=count
            )
        finally:
            await client.aclose()

    start = time.perf_counter()
    report = asyncio.run(go())
    return {"wall_s": time.perf_counter() - start, "kept": report.kept, "llm_calls": report.llm_calls,
            "dropped": report.dropped}  # fmt: skip


def _word_pieces() -> None:
    import tiktoken

    class Encoder:
        name = "word-pieces"

        def __init__(self) -> None:
            self.ids: dict[str, int] = {}
            self.pieces: dict[int, str] = {}

        def encode(self, text: str, *args: Any, **kwargs: Any) -> list[int]:
            out = []
            for piece in re.findall(r"\w+|[^\w\s]|\s+", text):
                if piece not in self.ids:
                    self.ids[piece] = len(self.ids)
                    self.pieces[self.ids[piece]] = piece
                out.append(self.ids[piece])
            return out

        def decode(self, ids: list[int], *args: Any, **kwargs: Any) -> str:
            return "".join(self.pieces[i] for i in ids)

    encoder = Encoder()
    tiktoken.get_encoding = lambda name: encoder  # type: ignore[assignment]
    tiktoken.encoding_for_model = lambda name: encoder  # type: ignore[assignment]


def run_ragas(folder: Path, size: int, base_url: str) -> dict[str, Any]:
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"
    # RAGAS builds default OpenAI clients for some transforms; the key only has to exist (all calls go to
    # the scripted server).
    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    _word_pieces()
    from langchain_core.documents import Document
    from langchain_openai import ChatOpenAI
    from ragas.embeddings import BaseRagasEmbeddings
    from ragas.llms import LangchainLLMWrapper
    from ragas.testset import TestsetGenerator

    from bqas.offline.embeddings import get_embedder

    class LocalEmbeddings(BaseRagasEmbeddings):
        def __init__(self) -> None:
            from ragas.run_config import RunConfig

            super().__init__()
            self.set_run_config(RunConfig())
            self.embedder = get_embedder("hashing")

        def embed_query(self, text: str) -> list[float]:
            return [float(x) for x in self.embedder.embed([text])[0]]

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[float(x) for x in v] for v in self.embedder.embed(list(texts))]

        async def aembed_query(self, text: str) -> list[float]:
            return self.embed_query(text)

        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            return self.embed_documents(texts)

    docs = [Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": p.name})
            for p in sorted(folder.glob("*.md"))]  # fmt: skip
    import httpx

    # RAGAS runs each stage on an event loop of its own: pooled connections of an earlier loop would fail,
    # so the client keeps none (every call opens a connection, as on a cold client).
    http = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0), timeout=120)
    chat = ChatOpenAI(base_url=base_url, api_key="scripted", model="gpt-4o-mini", max_retries=0, http_async_client=http)
    llm = LangchainLLMWrapper(chat)
    generator = TestsetGenerator(llm=llm, embedding_model=LocalEmbeddings())
    start = time.perf_counter()
    testset = generator.generate_with_langchain_docs(
        docs, testset_size=size, raise_exceptions=os.environ.get("BENCH_RAISE") == "1"
    )
    return {"wall_s": time.perf_counter() - start, "peak_rss_mb": _peak_rss_mb(), "kept": len(testset.to_pandas())}


def serve(latency: float, counts: Path) -> None:
    """The scripted server process; on SIGTERM it writes its call and token counts to ``counts``."""
    from responders import responder

    from bqas.testing.scripted_llm import ScriptedLLM

    server = ScriptedLLM(responder=responder, latency=latency).start()

    def dump(*_: Any) -> None:
        kinds: dict[str, int] = {}
        tokens = 0
        for req in server.requests:
            text = "".join(str(m.get("content", "")) for m in req.get("messages", []))
            tokens += len(text) // 4
            name = ((req.get("response_format") or {}).get("json_schema") or {}).get("name") or "ragas"
            kinds[name] = kinds.get(name, 0) + 1
        counts.write_text(json.dumps({"calls": len(server.requests), "prompt_tokens": tokens, "by": kinds}))
        server.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, dump)
    print(f"PORT {server.port}", flush=True)
    while True:
        time.sleep(3600)


def _child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{args[0]} failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(lines[-1]))


def _with_server(latency: float, args: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "counts.json"
        proc = subprocess.Popen([sys.executable, __file__, "--serve", str(latency), str(counts)],
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline().split()[1])
            result = _child([*args, f"http://127.0.0.1:{port}/v1"])
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        return result, json.loads(counts.read_text())


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(float(sys.argv[2]), Path(sys.argv[3]))
        return
    if len(sys.argv) > 1 and sys.argv[1] in ("--offline-run", "--llm-run", "--ragas-run"):
        what, folder, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
        if what == "--offline-run":
            print(json.dumps(run_offline(folder, n)))
        elif what == "--llm-run":
            print(json.dumps(run_llm_mode(folder, n, sys.argv[4])))
        else:
            print(json.dumps(run_ragas(folder, n, sys.argv[4])))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--ragas-size", type=int, default=100, help="RAGAS testset_size (0: skip RAGAS)")
    ap.add_argument("--llm-count", type=int, default=100, help="items in LLM mode (0: skip)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "pages"
        chars = build_corpus(folder, args.pages, args.data)
        print(f"documents: {args.pages} pages, {chars} characters; load average {os.getloadavg()}")
        runs = [_child(["--offline-run", str(folder), str(args.count)]) for _ in range(args.repeats)]
        walls = [r["wall_s"] for r in runs]
        print(f"offline synth-rag, {args.count} asked: kept {runs[0]['kept']}, wall min {min(walls):.2f} s "
              f"median {statistics.median(walls):.2f} s, peak RSS {max(r['peak_rss_mb'] for r in runs):.0f} MB, "
              f"dropped {runs[0]['dropped']}")  # fmt: skip
        if args.llm_count:
            res, counts = _with_server(args.latency, ["--llm-run", str(folder), str(args.llm_count)])
            per = counts["calls"] / res["kept"] if res["kept"] else float("nan")
            print(f"LLM synth-rag at {args.latency * 1000:.0f} ms/call: kept {res['kept']} of {args.llm_count}, "
                  f"{counts['calls']} calls ({per:.2f} per kept item), ~{counts['prompt_tokens']} prompt tokens, "
                  f"wall {res['wall_s']:.2f} s")  # fmt: skip
        if args.ragas_size:
            res, counts = _with_server(args.latency, ["--ragas-run", str(folder), str(args.ragas_size)])
            per = counts["calls"] / res["kept"] if res["kept"] else float("nan")
            print(f"RAGAS TestsetGenerator at {args.latency * 1000:.0f} ms/call: testset_size {args.ragas_size}, "
                  f"kept {res['kept']}, {counts['calls']} calls ({per:.2f} per kept item), "
                  f"~{counts['prompt_tokens']} prompt tokens, wall {res['wall_s']:.2f} s, "
                  f"peak RSS {res['peak_rss_mb']:.0f} MB")  # fmt: skip
        print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
