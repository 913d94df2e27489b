"""Self-contained HTML report of a BQAS run.

The report opens offline: CSS is inline, charts are inline SVG computed here, there is no JavaScript
and no external reference. Record texts are untrusted (they come from the system under test), so the
Jinja environment autoescapes everything, and the SVG charts are handed to the template as geometry
(rectangles and labels), never as pre-rendered markup, so their labels are escaped like the rest.

Records are aggregated in a single pass (the runner streams them from its store): accumulators keep
only what the report shows — moments and fixed-bin histogram counts, per-group sums, the ``worst_n``
worst cases in a bounded heap and the listed escalations/unscored/invalid samples up to a cap.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bqas.report.aggregate import Stats, is_number, order_verdicts
from bqas.report.baseline import BaselineMatch
from bqas.report.cases import Capped, Worst
from bqas.report.charts import SCALE_100, histogram_chart, risk_coverage_chart, verdict_chart
from bqas.report.cjk import cjk_note
from bqas.report.junit import as_list
from bqas.report.render import duration, load_template

if TYPE_CHECKING:
    from bqas.runner.compare import Comparison

__all__ = ["write_html_report"]


def _trust_view(run: Mapping[str, Any], trust: dict[str, Any] | None) -> dict[str, Any] | None:
    """The report's trust-or-escalate section: coverage per tier and language, bounds, charts."""
    profiles = [p for p in as_list(run.get("profiles")) if isinstance(p, Mapping)]
    if trust is None and not profiles:
        return None
    from bqas.trust.summary import precision_line, side_statement

    charts = [
        {"judge": p.get("judge"), "id": p.get("id"), "tier": t, "chart": risk_coverage_chart(str(p.get("judge")), t)}
        for p in profiles
        for t in as_list(p.get("tiers"))
        if isinstance(t, Mapping)
    ]
    statements = {
        (str(p.get("id")), str(t.get("tier"))): {side: side_statement(t, side) for side in ("accept", "reject")}
        for p in profiles
        for t in as_list(p.get("tiers"))
        if isinstance(t, Mapping)
    }
    agreement = [
        precision_line(side, row)
        for side, row in ((trust or {}).get("agreement") or {}).items()
        if isinstance(row, Mapping) and row.get("decided")
    ]
    return {"stats": trust, "profiles": profiles, "charts": charts, "statements": statements, "agreement": agreement}


def write_html_report(
    path: Path,
    run: Mapping[str, Any],
    records: Iterable[Mapping[str, Any]],
    *,
    baseline: tuple[Mapping[str, Any], Iterable[Mapping[str, Any]]] | None = None,
    worst_n: int = 20,
    max_escalations: int = 200,
    comparison: Comparison | None = None,
) -> None:
    """Write a self-contained HTML report of a run to ``path``.

    ``records`` (and the baseline's records) are consumed once each. The report shows the run header
    and threshold results, verdict counts, per-dimension distributions with provenance, breakdowns per
    judge/language/intent, the ``worst_n`` worst scored cases, the escalations, the unscored and the
    invalid samples (each list capped at ``max_escalations`` rows, with the total count), and — given
    a ``baseline`` (run metadata, records) — mean differences and the samples whose verdict changed
    (matched by ``sample_id`` + ``judge``), with ``comparison`` (``bqas.runner.compare.compare_runs`` of
    the baseline and this run, the code ``bqas compare`` runs) the paired mean differences and their 95 %
    bootstrap intervals.
    """
    path = Path(path)
    template = load_template()  # fail before consuming the stream if the package data is missing

    # The baseline's records are consumed first, then each record of this run is matched against them.
    match = BaselineMatch(baseline[0], baseline[1], max_escalations) if baseline is not None else None

    stats = Stats()
    worst = Worst(worst_n)
    escalations, unscored, invalid, target_errors, judge_errors = (
        Capped(max_escalations),
        Capped(max_escalations),
        Capped(max_escalations),
        Capped(max_escalations),
        Capped(max_escalations),
    )
    from bqas.runner.summary import TargetFigures, TimingStats, UnscoredReasons, timing_text, unscored_lines

    target = TargetFigures()
    timing = TimingStats()
    why_unscored = UnscoredReasons()
    # Samples whose --repeats straddle a verdict threshold (their records, capped like the other lists).
    flaky: dict[str, Any] = {"total": 0, "rows": []}
    from bqas.trust.summary import TrustStats

    trust = TrustStats()
    for seq, record in enumerate(records):
        verdict = stats.add(record)
        trust.add(record)
        timing.add(record)
        why_unscored.add(record)
        status = record.get("status")
        if isinstance(record.get("target"), Mapping) or status == "target_error":
            target.add(record)
        if status == "target_error":
            target_errors.add(record)
        elif status == "judge_error":
            judge_errors.add(record)
        elif status == "invalid":
            invalid.add(record)
        elif status == "unscored":
            unscored.add(record)
        else:
            worst.offer(seq, record)
        if record.get("escalation") not in (None, "", "none"):
            escalations.add(record)
        if isinstance(record.get("repeats"), Mapping) and record["repeats"].get("straddles"):
            flaky["total"] += 1
            if len(flaky["rows"]) < max_escalations:
                flaky["rows"].append(record)
        if match is not None:
            match.add(record, verdict)

    verdict_rows = [(v, stats.verdicts[v]) for v in order_verdicts(stats.verdicts)]
    all_verdicts = order_verdicts([*stats.verdicts, *(match.stats.verdicts if match else ())])
    judges = []
    for name, acc in stats.judges.items():
        judges.append(
            {
                "name": name,
                "group": acc.group.view(name),
                "composite_chart": histogram_chart(
                    acc.hist_composite, SCALE_100, f"{name}: composite", x_title="composite score"
                )
                if acc.group.composite.n
                else None,
                "dims": [d.view(name) for d in acc.dims.values()],
            }
        )
    threshold_results = [t for t in as_list(run.get("threshold_results")) if isinstance(t, Mapping)]
    totals = run.get("totals") if isinstance(run.get("totals"), Mapping) else {}
    counted = {
        "samples": stats.total,
        "scored": sum(j.group.n_scored for j in stats.judges.values()),
        "unscored": stats.verdicts["unscored"],
        "invalid": stats.verdicts["invalid"],
        "target_errors": stats.verdicts["target_error"],
        "judge_errors": stats.verdicts["judge_error"],
    }
    mismatch = [
        f"{k}: run metadata says {totals[k]}, the records hold {v}"
        for k, v in counted.items()
        if isinstance(totals, Mapping) and is_number(totals.get(k)) and totals[k] != v
    ]

    context: dict[str, Any] = {
        "run": run,
        "duration": duration(run),
        "judges_meta": ", ".join(str(j) for j in as_list(run.get("judges"))),
        "thresholds": threshold_results,
        "thresholds_ok": all(t.get("passed") is True for t in threshold_results),
        # The LLM judge's known-answer check before the run (bqas.runner.judge_gate), one row per judge.
        "judge_check": [c for c in as_list(run.get("judge_check")) if isinstance(c, Mapping)],
        "totals": totals or {},
        "counted": counted,
        "mismatch": mismatch,
        "verdict_counts": stats.verdicts,
        "verdict_chart": verdict_chart(verdict_rows, stats.total),
        "all_verdicts": all_verdicts,
        "n_records": stats.total,
        "judges": judges,
        "by_judge": [acc.group.view(name) for name, acc in stats.judges.items()],
        "by_language": [g.view(k) for k, g in sorted(stats.languages.items())],
        "by_intent": [g.view(k) for k, g in sorted(stats.intents.items())],
        "worst": worst.cases(),
        "worst_n": worst_n,
        "escalations": escalations,
        "unscored": unscored,
        "invalid": invalid,
        "target": target.as_dict() if target.asked else None,
        "target_errors": target_errors,
        "judge_errors": judge_errors,
        "baseline": None,
        "trust": _trust_view(run, trust.as_dict()),
        "timing": timing_text(timing.as_dict()),
        "unscored_why": unscored_lines(why_unscored.as_list()),
        "repeats": run.get("repeats") if isinstance(run.get("repeats"), Mapping) else None,
        "flaky": flaky,
    }
    if match is not None:
        context["baseline"] = match.view(stats, comparison)

    html = cjk_note(template.render(context))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, path)
