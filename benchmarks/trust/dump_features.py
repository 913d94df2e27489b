"""Run the offline tier over the prepared gold files and cache its p_reject features (one JSONL per set).

    .venv/bin/python benchmarks/trust/prepare_gold.py            # -> /tmp/bqas-gold
    nice .venv/bin/python benchmarks/trust/dump_features.py [--gold DIR] [--out DIR] [SET ...]

Each output line: id, language, tags, the human accept/reject label (``reject``), the offline raw risk
and the feature dict. Fitting (train_offline.py) and the figures (figures.py) read these caches, so the
slow part (claim splitting and embeddings) runs once. Nothing from the datasets is committed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bqas.calibration.gold import load_gold
from bqas.calibration.report import human_reject
from bqas.judging.engine import check_inputs
from bqas.judging.offline import OfflineJudge
from bqas.judgment.spec import default_registry
from bqas.trust.evidence import offline_features

SETS = {
    "rag_faithfulness_en": "rag_hallucination",
    "hallucination_en": "rag_hallucination",
    "attribution_en": "rag_hallucination",
    "hallucination_zh": "rag_hallucination",
    "pii_de": "rag_privacy",
    "rag_faithfulness_memerag": "rag_hallucination",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", type=Path, default=Path("/tmp/bqas-gold"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/bqas-trust/features"))
    parser.add_argument("sets", nargs="*", default=list(SETS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    registry, offline = default_registry(), OfflineJudge()
    for name in args.sets:
        spec = registry.get(SETS[name])
        assert spec.scoring is not None
        gold = load_gold(args.gold / f"{name}.jsonl", spec)
        started = time.perf_counter()
        n = 0
        with (args.out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for sample in gold.samples:
                label = human_reject(sample.labels, spec.scoring.gates)
                if label is None:
                    continue
                feats, risk, conf = offline_features(offline, spec, check_inputs(spec, sample.sample), sample.language)
                row = {
                    "id": sample.id,
                    "judge": spec.name,
                    "language": sample.language,
                    "tags": sample.sample.get("tags") or [],
                    "reject": label,
                    "risk": risk,
                    "p_reject": conf.p_reject,  # what the engine gives (provider or generic model)
                    "p_method": conf.method,
                    "p_model": conf.model,
                    "features": feats,
                }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
        print(f"{name}: {n} rows in {time.perf_counter() - started:.1f} s -> {args.out / (name + '.jsonl')}")


if __name__ == "__main__":
    main()
