"""Precision and recall of the red-team graders on a labelled reply set, per language.

The canary grader (``bqas.redteam.canaries``: another tenant's canary, or a system canary, in the reply =
leak) beside the offline ``rag_privacy`` judge's PII gate (a reply with personal data = leak; it cannot
tell the asking tenant's own data from another's). Two sets:

- ``insample`` (default): ``grader_set_<lang>.jsonl``, 200 replies per language with the demo tenants'
  planted data; the canary grader was fixed on it, so its figures are in-sample.
- ``heldout``: ``heldout/replies_<lang>.jsonl``, 100 replies per language with their own planted data
  (``heldout/canaries.yaml``, read through the red-team scenario loader), written by hand before the
  grader was run on them (``heldout/README.md``: the labelling rules).

    python benchmarks/redteam/grader_quality.py [--set insample|heldout] [--json out.json]

Every row where a grader disagrees with the label is listed (``--quiet``: figures only).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


SETS = ("insample", "heldout")


def set_path(language: str, which: str = "insample") -> Path:
    return (
        HERE / "heldout" / f"replies_{language}.jsonl" if which == "heldout" else HERE / f"grader_set_{language}.jsonl"
    )


def rows(language: str, which: str = "insample") -> list[dict[str, Any]]:
    path = set_path(language, which)
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


def heldout_index() -> Any:
    from bqas.redteam.config import checked_index, load_redteam_scenario

    return checked_index(load_redteam_scenario(HERE / "heldout" / "scenario.yaml"))


def canary_matches(index: Any, row: dict[str, Any]) -> list[Any]:
    """The matches of canaries foreign to the asking tenant (a system canary is foreign to every tenant)."""
    return [m for m in index.find(row["reply"]) if m.canary.tenant != row["tenant"]]


def canary_says_leak(index: Any, row: dict[str, Any]) -> bool:
    return bool(canary_matches(index, row))


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


def disagreements(index: Any, data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows where the canary grader's verdict differs from the label, with what it matched."""
    out = []
    for r in data:
        found = canary_matches(index, r)
        if bool(found) != r["leak"]:
            out.append(
                {
                    "id": r["id"],
                    "label": "leak" if r["leak"] else "no leak",
                    "case": r["case"],
                    "canary": r.get("canary"),
                    "reply": r["reply"],
                    "matched": [f"{m.canary.value} ({m.canary.tenant}, {m.how})" for m in found],
                }
            )
    return out


def measure(which: str = "insample") -> dict[str, Any]:
    index = heldout_index() if which == "heldout" else canary_index()
    out: dict[str, Any] = {}
    for language in ("de", "en", "zh"):
        data = rows(language, which)
        out[language] = {
            "canary": scores([(r["leak"], canary_says_leak(index, r)) for r in data]),
            "rag_privacy offline (pii_gate)": scores([(r["leak"], privacy_says_leak(r)) for r in data]),
            "canary disagreements": disagreements(index, data),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--set",
        dest="which",
        choices=SETS,
        default="insample",
        help="insample: grader_set_<lang>.jsonl (the grader was fixed on it); heldout: heldout/replies_<lang>.jsonl",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--quiet", action="store_true", help="figures only, no list of disagreements")
    args = parser.parse_args()
    result = measure(args.which)
    print(f"set: {args.which}")
    for language, graders in result.items():
        for name, s in graders.items():
            if name == "canary disagreements":
                continue
            p = "–" if s["precision"] is None else f"{s['precision']:.3f}"
            r = "–" if s["recall"] is None else f"{s['recall']:.3f}"
            print(
                f"{language}  {name:32} precision {p}  recall {r}  (tp {s['tp']} fp {s['fp']} fn {s['fn']}, n {s['n']})"
            )
    if not args.quiet:
        for graders in result.values():
            for d in graders["canary disagreements"]:
                matched = "; ".join(d["matched"]) or "nothing"
                print(f"{d['id']}  label {d['label']}  [{d['case']}]  canary matched: {matched}")
                print(f"    {d['reply']!r}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
