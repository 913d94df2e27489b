"""Run the shipped verifier (int8 ONNX, ``bqas/data/verifier/``) with onnxruntime, loaded on first use.

:func:`claim_probabilities` gives, per claim, the probability that the facts do not support it: the
evidence for each claim is picked by :func:`bqas.offline.verifier.evidence.select` (as in training), the
pair is tokenized, and one batched session run scores all claims. The session uses one thread: a
judgment already runs in a worker (thread or process) of the offline tier, never on the event loop, and
several judgments run side by side.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from bqas.mathx import sigmoid
from bqas.offline.verifier.evidence import context_sentences, select
from bqas.offline.verifier.tokenizer import PAD, Tokenizer

RESOURCE = "verifier"
MAX_LEN = 128
CLAIM_MAX = 48


@dataclass
class Verifier:
    """A loaded verifier: the ONNX session, its tokenizer and its card."""

    session: Any  # onnxruntime.InferenceSession
    tokenizer: Tokenizer
    card: dict[str, Any]

    @property
    def model_id(self) -> str:
        return str(self.card.get("model_id", "verifier"))

    def logits(self, claims: Sequence[str], evidence: Sequence[str]) -> list[float]:
        """Raw logits (positive = unsupported) of the (claim, evidence) pairs, one batched run."""
        import numpy as np

        if not claims:
            return []
        cfg = self.card.get("config", {})
        encoded = self.tokenizer.pairs(
            claims, evidence, int(cfg.get("max_len", MAX_LEN)), int(cfg.get("claim_max", CLAIM_MAX))
        )
        length = max(len(e) for e in encoded)
        ids = np.full((len(encoded), length), PAD, dtype=np.int64)
        mask = np.zeros((len(encoded), length), dtype=np.int64)
        for i, e in enumerate(encoded):
            ids[i, : len(e)] = e
            mask[i, : len(e)] = 1
        (out,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
        return [float(x) for x in np.asarray(out).reshape(-1)]


_LOADED: dict[str, Verifier] = {}
_LOCK = threading.Lock()


def _read(folder: Path | None, name: str) -> bytes:
    if folder is not None:
        return (folder / name).read_bytes()
    return resources.files("bqas").joinpath("data", RESOURCE, name).read_bytes()


def available(folder: Path | None = None) -> bool:
    """Whether a verifier model is there (the package's, or one in ``folder``)."""
    try:
        if folder is not None:
            return (folder / "verifier.onnx").is_file()
        return resources.files("bqas").joinpath("data", RESOURCE, "verifier.onnx").is_file()
    except (FileNotFoundError, ModuleNotFoundError):
        return False


def load_verifier(folder: Path | None = None) -> Verifier:
    """The shipped verifier (cached per process), or the one in ``folder`` (a training output)."""
    key = str(folder) if folder else RESOURCE
    with _LOCK:
        if key not in _LOADED:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            session = ort.InferenceSession(_read(folder, "verifier.onnx"), options, providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_bytes(
                _read(folder, "tokenizer.model"), json.loads(_read(folder, "normaliser.json").decode("utf-8"))
            )
            card = json.loads(_read(folder, "card.json").decode("utf-8"))
            _LOADED[key] = Verifier(session, tokenizer, card)
        return _LOADED[key]


def claim_probabilities(claims: Sequence[str], facts: Sequence[str], verifier: Verifier | None = None) -> list[float]:
    """P(unsupported) of each claim against the facts (the model's own probability, uncalibrated)."""
    v = verifier or load_verifier()
    sentences = context_sentences(facts)
    evidence = [select(c, sentences) for c in claims]
    return [sigmoid(z) for z in v.logits(claims, evidence)]
