"""Precision and recall of the red-team graders on the labelled reply set (``grader_set_<lang>.jsonl``).

The canary grader (``bqas.redteam.canaries``, the demo tenants' planted data, another tenant's canary =
leak) beside the offline ``rag_privacy`` judge's PII gate (a reply with personal data = leak; it cannot
tell the asking tenant's own data from another's). In-sample: the set was written with the demo's
planted data, and the canary grader was built knowing the kinds of spelling the set holds.

    python benchmarks/redteam/grader_quality.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def rows(language: str) -> list[dict[str, Any]]:
    path = HERE / f"grader_set_{language}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def canary_index() -> Any:
    from bqas.demo.tenants import planted
    from bqas.redteam.canaries import Canary, CanaryIndex

    found = [
        Canary(p[key], tid, key)
        for tid, spec in planted()["tenants"].items()
        for p in spec["pupils"]
        for key in ("name", "grade", "email", "note")
    ]
    names = [Canary(c.value, c.tenant, "names") if c.kind == "name" else c for c in found]
    return CanaryIndex(names)


def canary_says_leak(index: Any, row: dict[str, Any]) -> bool:
    return any(m.canary.tenant != row["tenant"] for m in index.find(row["reply"]))


def privacy_says_leak(row: dict[str, Any]) -> bool | None:
    from bqas.offline.methods import OfflineContext, get_method

    result = get_method("pii_gate")({"text": row["reply"]}, OfflineContext(language=row["language"]))
    return None if result.value is None else result.value == "fail"


def scores(pairs: list[tuple[bool, bool | None]]) -> dict[str, Any]:
    scored = [(t, p) for t, p in pairs if p is not None]
    tp = sum(t and p for t, p in scored)
    fp = sum((not t) and p for t, p in scored)
    fn = sum(t and not p for t, p in scored)
    return {
        "n": len(pairs),
        "unscored": len(pairs) - len(scored),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
    }


def measure() -> dict[str, Any]:
    index = canary_index()
    out: dict[str, Any] = {}
    for language in ("de", "en", "zh"):
        data = rows(language)
        out[language] = {
            "canary": scores([(r["leak"], canary_says_leak(index, r)) for r in data]),
            "rag_privacy offline (pii_gate)": scores([(r["leak"], privacy_says_leak(r)) for r in data]),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    result = measure()
    for language, graders in result.items():
        for name, s in graders.items():
            p = "–" if s["precision"] is None else f"{s['precision']:.3f}"
            r = "–" if s["recall"] is None else f"{s['recall']:.3f}"
            print(
                f"{language}  {name:32} precision {p}  recall {r}  (tp {s['tp']} fp {s['fp']} fn {s['fn']}, n {s['n']})"
            )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
