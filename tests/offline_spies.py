"""Offline judges and embedders for tests that watch where, when and what the offline tier evaluates."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from bqas.judging.offline import OfflineJudge
from bqas.judgment.result import DimensionProvenance
from bqas.judgment.spec import JudgeSpec
from bqas.offline.embeddings import FloatArray, HashingEmbedder
from bqas.offline.methods import MethodResult


class ObservedOfflineJudge(OfflineJudge):
    """An :class:`OfflineJudge` that calls :meth:`observe` before each evaluation (in the thread that
    evaluates); tests override ``observe`` to record the thread or to block until something happened."""

    def observe(self, only: Collection[str] | None) -> None:
        """Called before each evaluation with its ``only`` (None: every method; the gate: the safety ones)."""

    def evaluate(
        self,
        spec: JudgeSpec,
        values: Mapping[str, Any],
        language: str,
        evidence: dict[str, MethodResult] | None = None,
        *,
        only: Collection[str] | None = None,
        skip: Collection[str] = (),
    ) -> tuple[dict[str, DimensionProvenance], list[str]]:
        self.observe(only)
        return super().evaluate(spec, values, language, evidence, only=only, skip=skip)


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every text it is asked to embed (in ``asked``)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> FloatArray:
        self.asked.extend(texts)
        return super().embed(texts)
