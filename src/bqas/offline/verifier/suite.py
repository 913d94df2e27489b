"""The contradiction suite (``tests/fixtures/contradiction_suite/{de,en,zh}.jsonl``): minimal pairs written
for BQAS, each a context, a faithful answer (a paraphrase) and an unfaithful one that differs from it by
one change (negation, number, date, unit, name, quantifier, antonym, cause, modality, an added claim).

It measures ranking (the faithful answer must get the lower p_reject) and is never trained on: the
training-pair builder drops every pair that shares a sentence with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

KINDS = ("negation", "number", "date", "unit", "entity", "quantifier", "antonym", "cause", "modality", "other")
LANGUAGES = ("de", "en", "zh")


@dataclass(frozen=True)
class SuitePair:
    id: str
    language: str
    kind: str
    context: str
    faithful: str
    unfaithful: str


def default_folder() -> Path:
    """The suite's folder in a source checkout."""
    return Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "contradiction_suite"


def load_suite(folder: Path | None = None) -> list[SuitePair]:
    """All pairs; a malformed line raises ValueError naming the file, line and field."""
    out: list[SuitePair] = []
    base = folder or default_folder()
    for lang in LANGUAGES:
        path = base / f"{lang}.jsonl"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            r = json.loads(line)
            for key in ("id", "language", "kind", "context", "faithful", "unfaithful"):
                if not isinstance(r.get(key), str) or not r[key].strip():
                    raise ValueError(f"{path}:{n}: field {key!r} missing or empty")
            if r["kind"] not in KINDS:
                raise ValueError(f"{path}:{n}: field 'kind' must be one of {KINDS}, got {r['kind']!r}")
            if r["language"] != lang:
                raise ValueError(f"{path}:{n}: field 'language' is {r['language']!r} in the {lang} file")
            out.append(SuitePair(r["id"], lang, r["kind"], r["context"], r["faithful"], r["unfaithful"]))
    return out
