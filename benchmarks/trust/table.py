"""The docs/calibration.md rows of `bqas calibrate --out DIR` results (their calibration.json).

    .venv/bin/python benchmarks/trust/table.py NAME=DIR [NAME=DIR ...]

One row per result: n, unscored, TP/FP/FN/TN, FPR and FNR with their 95 % Clopper-Pearson intervals and
the verdict on each target (met / missed / not enough evidence), verdict agreement, and the time per
judgment split into service (own work), queue wait and throughput (wall / N).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _rate(fig: dict[str, Any]) -> str:
    if fig.get("value") is None:
        return "undefined"
    lo, hi = fig.get("interval") or (None, None)
    span = "" if lo is None else f" [{100 * lo:.1f}–{100 * hi:.1f}]"
    return f"{100 * fig['value']:.1f} %{span}"


def _status(targets: list[dict[str, Any]], name: str) -> str:
    t = next((x for x in targets if x["name"] == name), None)
    if t is None:
        return "–"
    status = t.get("status") or ("met" if t.get("passed") else "missed")
    if status == "not enough evidence" and t.get("more_needed"):
        return f"not enough evidence (+{t['more_needed']})"
    return status


def row(name: str, folder: Path) -> str:
    doc = json.loads((folder / "calibration.json").read_text(encoding="utf-8"))
    o = doc["configs"][0]["calibration"]["overall"]
    r = o["reject"]
    svc, queue = o.get("service_ms") or {}, o.get("queue_ms") or {}
    thr = (o.get("throughput_ms") or {}).get("per_sample")
    timing = f"{svc.get('mean') or 0:.1f} / {queue.get('mean') or 0:.1f} / {thr or 0:.1f}"
    targets = doc["targets"]
    return (
        f"| {name} | {o['samples']} | {o['unscored']} | {r['tp']}/{r['fp']}/{r['fn']}/{r['tn']} | {_rate(r['fpr'])} · "
        f"{_status(targets, 'fpr')} | {_rate(r['fnr'])} · {_status(targets, 'fnr')} | "
        f"{_rate(o['verdicts']['agreement'])} | {timing} · {_status(targets, 'latency_mean_ms')} |"
    )


def main() -> None:
    print(
        "| gold | n | unscored | TP/FP/FN/TN | FPR [95 % CI] · target < 5 % | FNR [95 % CI] · target < 2 % | "
        "verdict agr. [95 % CI] | service / queue / throughput ms · target < 500 |"
    )
    print("|---|---:|---:|---|---|---|---|---|")
    for arg in sys.argv[1:]:
        name, _, folder = arg.partition("=")
        print(row(name, Path(folder)))


if __name__ == "__main__":
    main()
