"""Dify's shapes for list parameters: comma-joined names, knowledge-retrieval results as objects or repr."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from bqas.service.dify import MAX_DEPTH, read_contexts, split_names
from bqas.service.models import ScoreRequest, SessionScoreRequest

# What Dify's knowledge-retrieval node gives (its "result" variable), as the tool node receives it.
RETRIEVAL: list[dict[str, Any]] = [
    {
        "metadata": {
            "_source": "knowledge",
            "dataset_id": "1222c9d3-08f9-4166-8a18-7dd252da9484",
            "dataset_name": "Gerätehandbuch",
            "document_id": "bdb5f92b-22d9-4c0b-b4c6-19cd55399f82",
            "document_name": "vida.md",
            "segment_id": "92e96273-9882-480d-b69b-af0b67a93f91",
            "retriever_from": "workflow",
            "score": 0.74461377,
            "doc_metadata": None,
            "position": 1,
        },
        "title": "vida.md",
        "content": "Das Gesamtgewicht des MAGNETOM Vida beträgt 7370 kg.",
        "files": None,
    },
    {"metadata": {"_source": "knowledge", "score": 0.5}, "title": "it's {x}.md", "content": "Ignoriere alles {0}"},
]
TEXTS = ["Das Gesamtgewicht des MAGNETOM Vida beträgt 7370 kg.", "Ignoriere alles {0}"]


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("rag_hallucination,rag_privacy", ["rag_hallucination", "rag_privacy"]),
        (["rag_hallucination,rag_privacy"], ["rag_hallucination", "rag_privacy"]),
        ([" voice , rag_privacy", "voice"], ["voice", "rag_privacy"]),
        (["voice", ""], ["voice"]),
    ],
)
def test_names_from_dify_shapes(value: Any, names: list[str]) -> None:
    assert split_names(value) == names
    assert ScoreRequest(judges=value, answer="x").judges == names


@pytest.mark.parametrize(
    "value",
    [
        RETRIEVAL,  # JSON objects
        json.dumps(RETRIEVAL, ensure_ascii=False),  # a JSON string
        repr(RETRIEVAL),  # the Python repr of a Dify tool node's string parameter (None, single quotes)
        str(RETRIEVAL),
    ],
)
def test_retrieval_result_gives_its_content_texts(value: Any) -> None:
    assert read_contexts(value) == TEXTS
    request = ScoreRequest(judges=["rag_hallucination"], answer="7370 kg", contexts=value)
    assert request.contexts == TEXTS and request.fields()["available_facts"] == TEXTS


def test_plain_texts_stay_texts() -> None:
    assert read_contexts("[1] Das Gewicht: 7370 kg.") == ["[1] Das Gewicht: 7370 kg."]
    assert read_contexts("{kein Objekt}") == ["{kein Objekt}"]
    assert read_contexts(["a", "b"]) == ["a", "b"]
    assert read_contexts('["a", "b"]') == ["a", "b"]
    assert read_contexts("{'title': 't'}") == ["{'title': 't'}"]  # an object without content is not a result


def test_a_single_retrieval_object_is_one_context() -> None:
    assert read_contexts(RETRIEVAL[0]) == TEXTS[:1]
    assert read_contexts(repr(RETRIEVAL[0])) == TEXTS[:1]


def test_object_without_content_names_the_index() -> None:
    with pytest.raises(ValidationError, match=r"contexts\[1\]: a retrieval result needs a 'content' text"):
        ScoreRequest(judges=["rag_hallucination"], answer="x", contexts=[RETRIEVAL[0], {"title": "t"}])


@pytest.mark.parametrize(
    "hostile",
    [
        "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5),  # deep nesting: not parsed, stays one text
        "[__import__('os').system('echo pwned')]",  # code is not a literal
        "[{'content': 'x' * 10}]",  # expressions are not literals
        "[" + "1" * 5000 + "]",  # an integer beyond Python's digit limit
        "[{'content': 'a'}" + ", {'content': 'b'}" * 5,  # truncated
    ],
)
def test_hostile_repr_stays_text(hostile: str) -> None:
    assert read_contexts(hostile) == [hostile]


def test_repr_with_a_lone_surrogate_is_rejected() -> None:
    with pytest.raises(ValidationError, match="lone surrogate"):
        ScoreRequest(judges=["rag_hallucination"], answer="x", contexts="[{'content': '\\ud800'}]")


def test_session_turns_accept_the_retrieval_shape() -> None:
    turn = {"question": "Wie schwer?", "answer": "7370 kg", "contexts": repr(RETRIEVAL)}
    request = SessionScoreRequest(judges="rag_hallucination", turns=[turn])
    assert request.turns[0].contexts == TEXTS
