"""Grounding: names restated from the user's question are not inventions; numbers still must be in the facts."""

from __future__ import annotations

from bqas.offline.embeddings import HashingEmbedder
from bqas.offline.methods import OfflineContext, get_method

FACTS = ["设备总重 7370 kg"]
QUERY = "MAGNETOM Vida 的设备总重是多少？"


def _run(method: str, answer: str, query: str = QUERY) -> object:
    ctx = OfflineContext(language="zh", embedder_factory=HashingEmbedder)
    return get_method(method)({"answer": answer, "facts": FACTS, "query": query}, ctx).value


def test_seed_004_sample_is_grounded_when_the_device_name_comes_from_the_question() -> None:
    assert _run("claim_invention_gate", "MAGNETOM Vida 的设备总重为 7370 kg。") == "pass"


def test_wrong_number_is_still_an_invention() -> None:
    assert _run("claim_invention_gate", "MAGNETOM Vida 的设备总重为 7730 kg。") == "fail"
    assert _run("unsupported_claims", "MAGNETOM Vida 的设备总重为 7730 kg。") == [
        "MAGNETOM Vida 的设备总重为 7730 kg。 [number '7730 kg' not in the facts; checked against: '设备总重 7370 kg']"
    ]


def test_without_the_question_the_name_is_unsupported() -> None:
    assert _run("claim_invention_gate", "MAGNETOM Vida 的设备总重为 7370 kg。", query="") == "fail"


def test_a_number_from_the_question_does_not_count_as_a_fact() -> None:
    answer = "MAGNETOM Vida 的设备总重为 7730 kg。"
    assert _run("claim_invention_gate", answer, query="MAGNETOM Vida 是 7730 kg 吗？") == "fail"
