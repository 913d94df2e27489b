"""Every judge in de/en/zh through `bqas score --backend llm` and `--backend auto` on the real engine.

The model (SmolLM2-135M) is far too small to judge well. What is checked is what BQAS makes of a real
engine's replies: each result is `scored` with values inside the judge's schema, or `unscored` for one of
the model's two named failures and no number; never a traceback, never an invented value; and every judge
but intent gives at least one scored judgment. Replies are capped at 128 tokens
(BQAS_LLM_MAX_TOKENS) so the whole matrix stays a few CPU minutes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.judgment.spec import default_registry
from bqas.llm.local import LocalEngine
from bqas.testing.local_engine import TEST_CTX, TEST_SLOTS, TEST_THREADS

MAX_TOKENS = 128
# The two ways a reply of the 135M model can fail, both the model's and both named: it did not finish
# within the cap, or it wrote JSON outside the judge's schema twice. Any other reason (a timeout, an
# error of ours) fails the test.
MODEL_FAILURES = (
    f"the judge's reply was cut off at the token limit ({MAX_TOKENS})",
    "judge reply failed validation twice: ",
)
# The intent judge's "parameters" is a free-form object: the small model fills it until the cap (at 128 and
# at 320 tokens, every language), so it is never scored here; every other judge scores in some language.
NEVER_FINISHES = {"intent"}

SAMPLES: dict[str, dict[str, dict[str, Any]]] = {
    "voice": {
        "de": {
            "user_input": "Erinnere mich morgen an die Konferenz",
            "detected_intent": "reminder",
            "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
            "expected_intent": "reminder",
        },
        "en": {
            "user_input": "Remind me tomorrow about the conference",
            "detected_intent": "reminder",
            "response": "I will remind you tomorrow at 8 about the conference.",
            "expected_intent": "reminder",
        },
        "zh": {
            "user_input": "明天提醒我开会",
            "detected_intent": "reminder",
            "response": "好的，明天八点提醒你开会。",
            "expected_intent": "reminder",
        },
    },
    "intent": {
        "de": {"text": "Erinnere mich morgen an die Konferenz"},
        "en": {"text": "Remind me tomorrow about the conference"},
        "zh": {"text": "明天提醒我开会"},
    },
    "rag_hallucination": {
        "de": {
            "query": "Wie hoch ist der Turm?",
            "response": "Der Turm ist 330 m hoch.",
            "available_facts": ["Höhe: 330 m"],
        },
        "en": {
            "query": "How tall is the tower?",
            "response": "The tower is 330 m tall.",
            "available_facts": ["Height: 330 m"],
        },
        "zh": {
            "query": "设备总重是多少？",
            "response": "设备总重为 7370 kg。",
            "available_facts": ["设备总重 7370 kg"],
        },
    },
    "rag_namespace": {
        lang: {
            "teacher_id": "teacher-043",
            "namespace": "ns-school-7/teacher-043",
            "school_id": "school-7",
            "requested_data": text[0],
            "response": text[1],
        }
        for lang, text in {
            "de": ("Meine Notizen zur 7b", "Deine Notizen zur 7b: Max war unkonzentriert."),
            "en": ("My notes on class 7b", "Your notes on 7b: Max was unfocused."),
            "zh": ("我关于7b班的笔记", "你关于7b班的笔记：Max 上课不专心。"),
        }.items()
    },
    "rag_operator": {
        lang: {"operator": op, "generated_definition": text, "expected_afb": "II", "expected_actions": actions}
        for lang, (op, text, actions) in {
            "de": ("erläutern", "Sachverhalte mit Beispielen verständlich machen.", ["veranschaulichen"]),
            "en": ("explain", "Make facts understandable with examples.", ["illustrate"]),
            "zh": ("解释", "用例子说明事实。", ["举例说明"]),
        }.items()
    },
    "rag_privacy": {
        "de": {"query": "Wer fehlt heute?", "context": "Klasse 7b", "response": "Heute fehlen zwei Kinder."},
        "en": {"query": "Who is absent today?", "context": "Class 7b", "response": "Two pupils are absent today."},
        "zh": {"query": "今天谁缺席？", "context": "7b班", "response": "今天有两名学生缺席。"},
    },
    "rag_retrieval": {
        lang: {
            "query": q,
            "aufgabentyp": "Interpretation literarischer Texte",
            "subject": "Deutsch",
            "level": "eA",
            "retrieved_passage": passage,
            "expected_concepts": [concept],
        }
        for lang, (q, passage, concept) in {
            "de": (
                "Was erwartet der Erwartungshorizont?",
                "Die Prüflinge formulieren eine Deutungshypothese.",
                "Deutungshypothese",
            ),
            "en": (
                "What does the marking scheme expect?",
                "Candidates state an interpretive hypothesis.",
                "hypothesis",
            ),
            "zh": ("评分标准要求什么？", "考生提出一个解释性假设。", "假设"),
        }.items()
    },
}

# A real engine on a shared CPU: a judgment takes seconds to a minute of wall time under load.
pytestmark = pytest.mark.timeout(900)


def test_the_samples_cover_every_judge_that_scores() -> None:
    registry = default_registry()
    scoring = {n for n in registry.names() if registry.get(n).kind != "generator"}
    assert set(SAMPLES) == scoring  # a new judge gets a sample here, and so a run on the real engine
    for judge, by_language in SAMPLES.items():
        assert set(by_language) == {"de", "en", "zh"}
        for sample in by_language.values():
            assert set(sample) == set(registry.get(judge).inputs)


@pytest.fixture
def engine_settings(local_llm: LocalEngine, bqas_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings that match the session's engine (so `--llm-gguf` finds it running) and cap the replies."""
    for name, value in (
        ("BQAS_LLM_GGUF_CTX", TEST_CTX),
        ("BQAS_LLM_GGUF_THREADS", TEST_THREADS),
        ("BQAS_LLM_GGUF_SLOTS", TEST_SLOTS),
        ("BQAS_LLM_MAX_TOKENS", MAX_TOKENS),
    ):
        monkeypatch.setenv(name, str(value))
    from bqas.settings import get_settings

    get_settings.cache_clear()
    return local_llm.model.path


def _check_record(judge: str, backend: str, record: dict[str, Any], model: str) -> None:
    spec = default_registry().get(judge)
    where = f"{judge}/{backend}/{record['language']}"
    assert record["status"] in ("scored", "unscored"), where
    llm_dims = {n: d for n, d in record["dimensions"].items() if d["backend"] == "llm"}
    properties = spec.schema["properties"]
    if record["status"] == "unscored":
        # Unscored says why and carries no number the model did not give.
        assert record["unscored_reason"].startswith(MODEL_FAILURES), (where, record["unscored_reason"])
        assert record["composite_score"] is None, where
        assert not any(d["measured"] for d in llm_dims.values()), where
        return
    assert record["model"] == model, where
    for name, dim in llm_dims.items():
        if dim["measured"]:
            jsonschema.validate(dim["value"], properties[name])  # inside the judge's schema
            assert record[name] == dim["value"], where
    for name, value in record["outputs"].items():
        if name in properties:
            jsonschema.validate(value, properties[name])
    if spec.scoring is not None:
        assert record["composite_score"] is not None and 0 <= record["composite_score"] <= 100, where
        assert record["verdict"] in ("production_ready", "needs_review", "failed"), where
        conf = record["confidence"].get("llm")
        if conf is not None:  # the model's own p_reject from its token probabilities, or why there is none
            assert (conf["p_reject"] is not None and 0 <= conf["p_reject"] <= 1) or conf["reason"], where
            assert conf["p_reject"] is None or conf["method"] == "logprobs", where
    assert record["llm_calls"] >= 1 and record["prompt_tokens"] > 0, where


@pytest.mark.parametrize("judge", sorted(SAMPLES))
def test_every_judge_in_every_language_scores_or_says_why(judge: str, engine_settings: Path, tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"{judge}-{lang}", "language": lang, **sample}, ensure_ascii=False) + "\n"
            for lang, sample in SAMPLES[judge].items()
        ),
        encoding="utf-8",
    )
    model = engine_settings.name.removesuffix(".gguf")
    scored: dict[str, int] = {}
    for backend in ("llm", "auto"):
        args = ["score", str(path), "-j", judge, "--backend", backend, "--llm-gguf", str(engine_settings)]
        result = CliRunner().invoke(app, [*args, "--no-cache", "--concurrency", "3"])
        assert "Traceback" not in result.output
        # 0: all scored; 1: some unscored (the --max-unscored gate); 2 would be an error of ours.
        assert result.exit_code in (0, 1), result.output
        records = [json.loads(line) for line in result.stdout.strip().splitlines()]
        assert [r["language"] for r in records] == ["de", "en", "zh"]
        for record in records:
            _check_record(judge, backend, record, model)
            assert record["backend"] == ("llm" if backend == "llm" else "offline+llm")
        unscored = sum(r["status"] != "scored" for r in records)
        assert result.exit_code == (1 if unscored else 0)
        scored[backend] = 3 - unscored
    if judge in NEVER_FINISHES:
        assert scored == {"llm": 0, "auto": 0}  # a change here means the judge or the model changed: update
    else:  # the test is about scoring: at least one real judgment with values inside the schema
        assert sum(scored.values()) >= 1, scored
