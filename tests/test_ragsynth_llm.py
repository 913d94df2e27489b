"""The LLM generator of ``bqas synth-rag`` on the scripted LLM server: the same items as offline, every
quoted sentence checked against its passage, invalid items counted by reason, AFB from the operator table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.llm.client import LLMClient, LLMConfig
from bqas.offline.embeddings import default_embedder
from bqas.ragsynth.generate import SynthRagRequest
from bqas.ragsynth.llm_generator import synth_rag_llm
from bqas.testing.scripted_llm import Reply, ScriptedLLM
from ragsynth_support import DOCS

_SHOWN = re.compile(r"^- \[(?P<id>[^\]]+)\] (?:(?P<heading>[^:\n]*): )?(?P<text>.+)$", re.M)


def _passages(payload: dict[str, Any]) -> list[tuple[str, str]]:
    user = payload["messages"][-1]["content"]
    return [(m["id"], m["text"]) for m in _SHOWN.finditer(user)]


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.。])\s*", text)[0]


def _responder(payload: dict[str, Any]) -> Reply:
    """Items over the passages shown: good ones and bad ones of every sort the generator must catch."""
    shown = _passages(payload)
    (id_a, text_a), (id_b, text_b) = shown[0], shown[1]
    fact_a, fact_b = _first_sentence(text_a), _first_sentence(text_b)
    items = [
        {"kind": "fact", "query": "Was steht in der Ordnung zu diesem Punkt?", "reference": fact_a,
         "supporting_sentences": [fact_a], "chunk_ids": [id_a], "expected_concepts": ["Ordnung"]},
        {"kind": "multi_passage", "query": "Wie hängen die beiden Regelungen zusammen?",
         "reference": f"{fact_a} {fact_b}", "supporting_sentences": [fact_a, fact_b], "chunk_ids": [id_a, id_b],
         "expected_concepts": ["Regelung"]},
        {"kind": "fact", "query": "Wie viele Schulen gibt es in Teststadt?", "reference": "Es gibt zwölf Schulen.",
         "supporting_sentences": ["In Teststadt gibt es zwölf Schulen."], "chunk_ids": [id_a],
         "expected_concepts": ["Schulen"]},
        {"kind": "fact", "query": "Wer hat das geschrieben?", "reference": fact_a,
         "supporting_sentences": [fact_a], "chunk_ids": ["nowhere.md#9"], "expected_concepts": []},
        {"kind": "unanswerable", "query": "Wie heißt der Hausmeister der Teststadtschule?",
         "reference": "irgendwas", "supporting_sentences": [], "chunk_ids": [], "expected_concepts": []},
        {"kind": "operator", "query": "Erläutern Sie die Regelung zur Korrektur.", "reference": fact_b,
         "supporting_sentences": [fact_b], "chunk_ids": [id_b], "expected_concepts": ["Korrektur"],
         "operator": "erläutern", "expected_afb": "I"},
        "kein Objekt",
    ]  # fmt: skip
    return Reply(content=json.dumps(items, ensure_ascii=False))


def _client(server: ScriptedLLM) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.base_url, model="gen-1", backoff_base=0.01, max_retries=0, timeout=5))


async def test_llm_items_are_checked_against_their_passages(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.responder = _responder
    client = _client(scripted_llm)
    request = SynthRagRequest([DOCS / "de"], 4, language="de", seed=2)
    try:
        report = await synth_rag_llm(request, client, default_embedder(), max_rounds=1)
    finally:
        await client.aclose()
    assert report.backend == "llm" and report.llm_calls == 1
    kinds = [r["kind"] for r in report.records]
    assert kinds == ["fact", "multi_passage", "unanswerable", "operator"]
    assert report.dropped == {"unsupported_quote": 1, "bad_structure": 2}
    by_kind = {r["kind"]: r for r in report.records}
    assert all(r["source"] == "synth-rag:llm" for r in report.records)
    assert by_kind["unanswerable"]["reference"] == "Dazu enthalten die Unterlagen keine Angabe."
    assert by_kind["unanswerable"]["expected"] == {
        "answerable": False,
        "response": by_kind["unanswerable"]["reference"],
    }
    assert by_kind["operator"]["expected_afb"] == "II"  # the operator table's level, not the LLM's "I"
    assert len(by_kind["multi_passage"]["reference_context_sources"]) == 2
    request_body = scripted_llm.requests[0]
    assert request_body["response_format"]["json_schema"]["schema"]["type"] == "array"
    prompt = request_body["messages"][-1]["content"]
    assert "Schreibe 4 Testfragen" in prompt and "<<<DATA passages" in prompt


async def test_an_unreachable_llm_stops_with_the_reason(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default = Reply(status=500, content="down")
    client = _client(scripted_llm)
    try:
        report = await synth_rag_llm(SynthRagRequest([DOCS / "en"], 3, language="en"), client, None, max_rounds=3)
    finally:
        await client.aclose()
    assert report.kept == 0 and report.error is not None and "LLM unavailable" in report.error


def test_backend_llm_on_the_command_line(scripted_llm: ScriptedLLM, tmp_path: Path, bqas_home: Path) -> None:
    scripted_llm.responder = _responder
    out = tmp_path / "llm.jsonl"
    args = ["synth-rag", "--docs", str(DOCS / "de"), "-n", "3", "-l", "de", "--backend", "llm", "--no-progress",
            "--base-url", scripted_llm.base_url, "--model", "gen-1", "--out", str(out), "--json"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["backend"] == "llm" and summary["kept"] == 3 and summary["llm_calls"] == 1
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3


def test_backend_llm_without_an_llm_is_a_usage_error(tmp_path: Path, bqas_home: Path) -> None:
    res = CliRunner().invoke(app, ["synth-rag", "--docs", str(DOCS), "--backend", "llm", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "backend llm needs an LLM" in res.stderr
