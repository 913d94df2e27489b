"""bqas synth: offline determinism, typos, dialects, dedup, and the LLM path against the scripted server."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.judgment.spec import default_registry
from bqas.llm.client import LLMClient, LLMConfig
from bqas.offline.embeddings import HashingEmbedder
from bqas.synth.dedup import NearDuplicateFilter, normalise
from bqas.synth.dialects import apply_dialect, load_dialects
from bqas.synth.generate import SynthRequest, generate_llm, generate_offline
from bqas.synth.llm import read_reply
from bqas.synth.patterns import TEACHER_INTENTS, load_patterns
from bqas.synth.typos import NEIGHBOURS, add_typos, double_letter, drop_letter, fold_umlauts, neighbour_substitution
from bqas.testing.scripted_llm import Reply, ScriptedLLM

SPEC = default_registry().get("synthetic")


def _item(text: str, intent: str = "reminder", **slots: str) -> dict[str, object]:
    return {"input": text, "expected_intent": intent, "slots": slots}


# -- patterns, typos, dialects ------------------------------------------------------------------------


def test_patterns_ship_all_19_intents_with_slot_lists() -> None:
    book = load_patterns()
    assert set(TEACHER_INTENTS) <= set(book.intents)
    for intent in TEACHER_INTENTS:
        assert len(book.for_intent(intent).patterns) >= 5, intent
    assert {"student", "class", "subject", "date", "time", "topic"} <= set(book.slots)


def test_qwertz_neighbours_follow_the_layout() -> None:
    assert set(NEIGHBOURS["z"]) == {"t", "u", "g", "h"}  # QWERTZ: z sits between t and u
    assert set(NEIGHBOURS["a"]) == {"s", "q", "w", "y"}
    assert "ö" in NEIGHBOURS["l"] and "ä" in NEIGHBOURS["ö"]


def test_typo_functions() -> None:
    rng = random.Random(0)
    changed = neighbour_substitution("Tafel", rng)
    diffs = [(a, b) for a, b in zip("Tafel", changed, strict=True) if a != b]
    assert len(diffs) == 1 and diffs[0][1].lower() in NEIGHBOURS[diffs[0][0].lower()]
    assert neighbour_substitution("123", rng) == "123"
    dropped = drop_letter("Klasse", rng)
    assert len(dropped) == 5 and dropped[0] == "K"
    doubled = double_letter("Quiz", rng)
    assert len(doubled) == 5 and any(doubled[i] == doubled[i + 1] for i in range(4))
    assert fold_umlauts("Übung für Schüler, große Pause") == "Uebung fuer Schueler, grosse Pause"


def test_add_typos_leaves_protected_slot_values_alone() -> None:
    text = "Erinnere mich morgen an die Notenabgabe"
    for seed in range(30):
        out, kinds = add_typos(
            text, random.Random(seed), count=2, protected=["die Notenabgabe"], kinds=("drop", "swap")
        )
        assert "die Notenabgabe" in out
        assert kinds and out != text


def test_dialect_substitution() -> None:
    book = load_dialects()
    at, ch, by = book.get("de-AT"), book.get("de-CH"), book.get("bavarian")
    assert apply_dialect("Die Klassenarbeit ist im Januar", at) == "Die Schularbeit ist im Jänner"
    assert apply_dialect("dieses Jahr keine Klassenarbeiten", at) == "heuer keine Schularbeiten"
    assert apply_dialect("Das Fahrrad in der großen Pause parken", ch) == "Das Velo in der grossen Pause parkieren"
    assert apply_dialect("Heute nicht, morgen", by) == "Heid ned, morgn"
    # Case-sensitive keys: the noun "Mal" is not the adverb "mal".
    assert apply_dialect("zum dritten Mal, schau mal", by) == "zum dritten Mal, schau amoi"
    assert "ß" not in book.instruction("de-CH", "de") or "kein ß" in book.instruction("de-CH", "de")
    with pytest.raises(ValueError, match="unknown dialect"):
        book.get("de-XX")


def test_dialect_list_marks_uncertain_items() -> None:
    book = load_dialects()
    uncertain = [r.source for d in book.dialects.values() for r in (*d.words, *d.phrases) if r.uncertain]
    assert "Hausaufgaben" in uncertain and "Januar" not in uncertain


# -- dedup -------------------------------------------------------------------------------------------


def test_normalise_and_near_duplicates() -> None:
    assert normalise("  Erinnere mich, BITTE: an die Prüfung!") == normalise("erinnere mich bitte an die pruefung")
    dedup = NearDuplicateFilter(HashingEmbedder(), threshold=0.9)
    reasons = dedup.check(
        ["Erinnere mich an die Notenabgabe", "erinnere mich an die Notenabgabe!", "Erstelle ein Quiz zur Optik"]
    )
    assert reasons == [None, "duplicate", None]
    assert dedup.check(["Erinnere mich an die Notenabgaben"]) == ["near_duplicate"]


# -- offline generation ------------------------------------------------------------------------------


def test_offline_generation_is_deterministic_with_a_seed() -> None:
    emb = HashingEmbedder()
    req = SynthRequest("reminder", 15, typos=True, dialect="de-AT", seed=11)
    a = generate_offline(req, emb).records
    b = generate_offline(req, HashingEmbedder()).records
    c = generate_offline(SynthRequest("reminder", 15, typos=True, dialect="de-AT", seed=12), emb).records
    assert a == b and len(a) == 15
    assert [r["text"] for r in a] != [r["text"] for r in c]
    for rec in a:
        assert rec["input"] == rec["text"] == rec["user_input"] and rec["expected_intent"] == "reminder"
        assert rec["source"] == "synth:offline" and rec["tags"][:3] == ["synthetic", "typos", "de-AT"]
        for value in rec["slots"].values():
            assert value in rec["text"]
    assert len({normalise(r["text"]) for r in a}) == 15


@pytest.mark.parametrize("intent", TEACHER_INTENTS)
def test_offline_generation_covers_every_intent(intent: str) -> None:
    report = generate_offline(SynthRequest(intent, 5, seed=1), HashingEmbedder())
    assert report.kept == 5


def test_patterns_file_adds_plain_lines(tmp_path: Path) -> None:
    extra = tmp_path / "p.txt"
    extra.write_text("# comment\nStempel die Liste für {class} ab\n", encoding="utf-8")
    report = generate_offline(
        SynthRequest("my_intent", 3, patterns_file=extra, seed=2, threshold=0.999), HashingEmbedder()
    )
    assert report.kept == 3 and all("ab" in r["text"] for r in report.records)


# -- LLM generation ----------------------------------------------------------------------------------


def _client(server: ScriptedLLM) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.base_url, model="gen-1", backoff_base=0.01, max_retries=0, timeout=5))


def test_read_reply_drops_items_by_reason() -> None:
    reply = json.dumps(
        [
            _item("Erinnere mich an die Notenabgabe", date="morgen"),
            _item("Mach ein Quiz", intent="quiz_generate"),
            _item("   "),
            {"input": "kein slots-feld", "expected_intent": "reminder"},
            "kein Objekt",
        ]
    )
    out = read_reply(reply, SPEC, "reminder")
    assert [c.text for c in out.candidates] == ["Erinnere mich an die Notenabgabe"]
    assert out.dropped == {"wrong_intent": 1, "empty_input": 1, "bad_structure": 2}
    truncated = json.dumps([_item("Erinnere mich an A"), _item("Erinnere mich an B")])[:-20]
    broken = read_reply(truncated, SPEC, "reminder")
    assert broken.broken and broken.salvaged == 1 and [c.text for c in broken.candidates] == ["Erinnere mich an A"]


async def test_llm_generation_validates_dedups_and_retries_until_count(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.push(
        Reply(
            content=json.dumps(
                [_item("Erinnere mich an die Notenabgabe"), _item("Quiz bitte", intent="quiz_generate"), _item("")]
            )
        ),
        Reply(
            content='[{"input": "Denk an den Wandertag", "expected_intent": "reminder", "slots": {}}, {"input": "Erinn'
        ),
        Reply(
            content=json.dumps(
                [
                    _item("erinnere mich an die Notenabgabe!"),  # duplicate after normalisation
                    _item("Vergiss die Klassenfahrt nicht", item="die Klassenfahrt"),
                    _item("Erinnerung: Elternsprechtag"),
                ]
            )
        ),
    )
    client = _client(scripted_llm)
    try:
        report = await generate_llm(SynthRequest("reminder", 4, typos=True), SPEC, client, HashingEmbedder())
    finally:
        await client.aclose()
    assert report.kept == 4 and report.complete and report.rounds == 3
    assert [r["text"] for r in report.records] == [
        "Erinnere mich an die Notenabgabe",
        "Denk an den Wandertag",
        "Vergiss die Klassenfahrt nicht",
        "Erinnerung: Elternsprechtag",
    ]
    assert report.dropped == {"wrong_intent": 1, "empty_input": 1, "duplicate": 1}
    assert len(report.broken_replies) == 1 and report.salvaged == 1
    assert report.records[0]["source"] == "synth:llm" and report.records[0]["tags"] == ["synthetic", "typos"]
    first = json.dumps(scripted_llm.requests[0]["messages"], ensure_ascii=False)
    assert "<<<DATA patterns" in first and "Erinnere mich {date} an {item}" in first
    assert "Tippfehler" in first and '"count"' not in first
    assert scripted_llm.requests[0]["response_format"]["json_schema"]["schema"]["type"] == "array"
    later = scripted_llm.requests[1]["messages"]
    assert len(later) == 3 and "<<<DATA avoid" in later[-1]["content"]
    assert "Erinnere mich an die Notenabgabe" in later[-1]["content"] and "3 weitere" in later[-1]["content"]


async def test_llm_generation_stops_at_the_round_limit(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default = Reply(content=json.dumps([_item("Immer derselbe Satz")]))
    client = _client(scripted_llm)
    try:
        report = await generate_llm(SynthRequest("reminder", 3, max_rounds=3), SPEC, client, HashingEmbedder())
    finally:
        await client.aclose()
    assert report.kept == 1 and not report.complete and report.rounds == 3
    assert report.dropped == {"duplicate": 2}


# -- CLI ---------------------------------------------------------------------------------------------


def test_cli_synth_offline_writes_jsonl(tmp_path: Path, bqas_home: Path) -> None:
    out = tmp_path / "s.jsonl"
    args = ["synth", "--intent", "quiz_generate", "-n", "6", "--seed", "3", "--dialect", "de-CH", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--backend", "offline", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["kept"] == 6 and summary["backend"] == "offline"
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 6 and all("ß" not in r["text"] and "de-CH" in r["tags"] for r in lines)
    # The file follows the seed's synthetic-generation item format and feeds the voice judge unchanged.
    assert all({"input", "expected_intent", "slots"} <= set(r) and r["input"] == r["user_input"] for r in lines)


def test_cli_synth_summary_does_not_read_as_a_loss(tmp_path: Path, bqas_home: Path) -> None:
    out = tmp_path / "s.jsonl"
    args = ["synth", "--intent", "reminder", "-n", "50", "--seed", "3", "--out", str(out), "--backend", "offline"]
    result = CliRunner().invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "kept 50 of 50 requested" in result.output and "kept 50/50" not in result.output
    assert "more candidate(s) generated and discarded" in result.output
    assert "dropped" not in result.output


def test_cli_synth_exit_codes(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    out = str(tmp_path / "x.jsonl")
    assert runner.invoke(app, ["synth", "--intent", "nope", "--out", out, "--backend", "offline"]).exit_code == 2
    assert runner.invoke(app, ["synth", "--intent", "reminder", "--out", out, "--dialect", "xx"]).exit_code == 2
    assert runner.invoke(app, ["synth", "--intent", "reminder", "--out", out, "--backend", "llm"]).exit_code == 2
    assert runner.invoke(app, ["synth", "--intent", "reminder", "--out", out, "-n", "0"]).exit_code == 2
    # One pattern without slots can give one distinct input only: short of the count -> exit 1.
    single = tmp_path / "one.txt"
    single.write_text("Nur dieser eine Satz\n", encoding="utf-8")
    args = ["synth", "--intent", "solo", "--patterns", str(single), "-n", "40", "--out", out, "--backend", "offline"]
    result = runner.invoke(app, [*args, "--max-rounds", "1"])
    assert result.exit_code == 1 and "kept" in result.output
