"""Markdown summaries of a run for CI: a GitHub job summary (``$GITHUB_STEP_SUMMARY``) or a PR comment.

Every value that comes from a dataset, a scenario or a judge (names, sample ids, reasons) goes through
:func:`bqas.textsafe.markdown_text`, so it shows as text and never as markup, a link or a mention.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bqas.runner.compare import Comparison
from bqas.textsafe import markdown_text as md

WORST_N = 10
CHANGES_N = 20


def _num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def run_markdown(
    run: Mapping[str, Any],
    summary: Mapping[str, Any],
    thresholds: Sequence[Mapping[str, Any]],
    records: Iterable[Mapping[str, Any]],
    *,
    comparison: tuple[str, Comparison, list[str]] | None = None,
) -> str:
    """The Markdown of one scenario run: outcome, verdicts, thresholds, dimensions, worst samples, and
    (``comparison`` = baseline id, comparison, regressions) the changes against a baseline run."""
    passed = all(t["passed"] for t in thresholds)
    regressions = comparison[2] if comparison else []
    ok = passed and not regressions
    status = "✅ passed" if ok else "❌ thresholds missed" if not passed else "❌ regression against the baseline"
    out = [f"## BQAS: {md(run['scenario'])} — {status}", ""]
    out.append(
        f"Run {md(run['id'])} · backend {md(run.get('backend') or '–')} · model {md(run.get('model') or '–')} · "
        f"{summary['samples']} results ({summary['invalid']} invalid) · pass rate "
        + ("–" if summary.get("pass_rate") is None else f"{100 * summary['pass_rate']:.1f} %")
    )
    engine = run.get("llm_engine")
    if isinstance(engine, Mapping):
        out.append("")
        out.append(
            f"LLM engine: {md(engine.get('engine'))} · {md(engine.get('gguf'))} · {engine.get('threads')} threads · "
            f"{engine.get('slots')} slots · started in {float(engine.get('start_seconds') or 0):.1f} s"
        )
    out.append("")
    verdicts = summary.get("verdicts", {})
    out += _table(
        ["verdict", "count"],
        [[v, str(verdicts.get(v, 0))] for v in ("production_ready", "needs_review", "failed", "unscored")]
        + [["escalations", str(summary.get("escalations", 0))]],
    )
    target = summary.get("target")
    if isinstance(target, dict):
        lat = target.get("latency_ms") or {}
        out += [
            "",
            f"The assistant: {target.get('answers')} answers · {target.get('errors')} target errors · latency "
            f"p50 {_num(lat.get('p50'))} / p95 {_num(lat.get('p95'))} / max {_num(lat.get('max'))} ms",
        ]
        ttft = target.get("ttft_ms") or {}
        if ttft.get("n"):
            out[-1] += (
                f" · time to first token p50 {_num(ttft.get('p50'))} / p95 {_num(ttft.get('p95'))} "
                f"/ max {_num(ttft.get('max'))} ms"
            )
    if thresholds:
        out += ["", "### Thresholds", ""]
        out += _table(
            ["gate", "expected", "actual", "result"],
            [[md(t["name"]), _num(t["expected"]), _num(t["actual"]), _gate_cell(t)] for t in thresholds],
        )
    dims = summary.get("dimensions", {})
    comp = summary.get("composite", {})
    out += ["", "### Dimensions", ""]
    out += _table(
        ["dimension", "n", "mean", "min", "max", "pass/fail", "not measured"],
        [
            [
                "composite",
                str(comp.get("n", 0)),
                _num(comp.get("mean")),
                _num(comp.get("min")),
                _num(comp.get("max")),
                "",
                "",
            ]
        ]
        + [
            [
                md(name),
                str(d["n"]),
                _num(d["mean"]),
                _num(d["min"]),
                _num(d["max"]),
                f"{d['pass']}/{d['fail']}" if d.get("pass") or d.get("fail") else "",
                str(d.get("not_measured", 0)),
            ]
            for name, d in dims.items()
        ],
    )
    cost = summary.get("cost_usd")
    out += [
        "",
        f"LLM calls {summary.get('llm_calls', 0)} · prompt tokens {summary.get('prompt_tokens', 0)} · completion "
        f"tokens {summary.get('completion_tokens', 0)} · cache hits {summary.get('cache_hits', 0)} · cost "
        + (f"${cost:.4f}" if cost is not None else "n/a"),
    ]
    worst = _worst(records)
    if worst:
        out += ["", f"### Worst results (up to {WORST_N})", ""]
        out += _table(
            ["sample", "judge", "verdict", "composite", "why"],
            [
                [
                    md(r.get("sample_id") or r.get("response_id"), 80),
                    md(r.get("judge") or "–"),
                    md(r.get("verdict") or r.get("status") or "–"),
                    _num(r.get("composite_score")),
                    md(_why(r), 160),
                ]
                for r in worst
            ],
        )
    if comparison is not None:
        out += ["", *_comparison_lines(*comparison)]
    out.append("")
    return "\n".join(out)


def _rank(record: Mapping[str, Any]) -> tuple[int, float]:
    """Worst first: invalid, unscored, failed, needs_review, then by composite score."""
    order = {"invalid": 0, "target_error": 0, "judge_error": 0, "unscored": 1, "failed": 2, "needs_review": 3}
    verdict = record.get("verdict") or record.get("status") or ""
    if record.get("status") in ("invalid", "target_error", "judge_error"):
        verdict = str(record["status"])
    score = record.get("composite_score")
    return order.get(str(verdict), 4), float(score) if isinstance(score, int | float) else 0.0


def _worst(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    # Bounded: a run of 100,000 results keeps WORST_N in memory, not all of them.
    candidates = ((_rank(r), i, r) for i, r in enumerate(records) if _rank(r)[0] < 4)
    return [r for _, _, r in heapq.nsmallest(WORST_N, candidates, key=lambda t: (t[0], t[1]))]


def _why(record: Mapping[str, Any]) -> str:
    if record.get("unscored_reason"):
        return str(record["unscored_reason"])
    if record.get("errors"):
        return str(record["errors"][0])
    reasons = record.get("escalation_reasons") or []
    return "; ".join(str(r) for r in reasons) or str(record.get("reasoning") or "")


def _gate_cell(gate: Mapping[str, Any]) -> str:
    if gate.get("passed"):
        return "met"
    return f"**MISSED** ({md(gate['note'])})" if gate.get("note") else "**MISSED**"


def _comparison_lines(baseline: str, result: Comparison, regressions: list[str]) -> list[str]:
    out = [
        f"### Compared with {md(baseline)} (B − A, paired over {result.matched} results; 95 % bootstrap CI)",
        "",
    ]
    out += _table(
        ["dimension", "n", "mean A", "mean B", "Δ", "CI low", "CI high"],
        [
            [md(d.name), str(d.n), _num(d.mean_a), _num(d.mean_b), f"{d.diff:+.2f}", _num(d.ci_low), _num(d.ci_high)]
            for d in result.dimensions
        ],
    )
    out += [
        "",
        f"Verdict changes: {len(result.changes)} ({len(result.worse)} worse) · only in A: {result.only_a} · "
        f"only in B: {result.only_b} · samples removed: {len(result.removed)}",
    ]
    changes = sorted(result.changes, key=lambda c: c["direction"] != "worse")[:CHANGES_N]
    if changes:
        out += [""]
        out += _table(
            ["result", "A", "B", ""],
            [[md(c["key"], 100), md(c["from"]), md(c["to"]), md(c["direction"])] for c in changes],
        )
    for line in regressions:
        out.append(f"\n**Regression:** {md(line)}")
    return out


def _target_status(t: Mapping[str, Any]) -> str:
    status = t.get("status") or ("met" if t.get("passed") else "missed")
    if status == "met":
        return "met"
    if status == "missed":
        return "**MISSED**"
    more = t.get("more_needed")
    return "not enough evidence" + (f" (about {more} more {md(t.get('more_of') or 'samples')})" if more else "")


def calibration_markdown(doc: Mapping[str, Any]) -> str:
    """The Markdown of a ``bqas calibrate --out DIR`` result (its ``calibration.json``)."""
    ok = bool(doc.get("passed"))
    outcome = doc.get("outcome") or ("met" if ok else "missed")
    head = {"met": "✅ targets met", "missed": "❌ targets missed"}.get(outcome, "⚠️ not enough evidence")
    out = [f"## BQAS calibration: judge {md(doc.get('judge', '?'))} — {head}", ""]
    gold = doc.get("gold") or {}
    out.append(f"Gold set {md(gold.get('path', '–'))} · {gold.get('samples', '–')} samples")
    for config in doc.get("configs", []):
        overall = (config.get("calibration") or {}).get("overall") or {}
        verdicts = overall.get("verdicts") or {}
        out.append(
            f"- {md(config.get('name'))}: backend {md(config.get('backend'))} · model {md(config.get('model') or '–')}"
            f" · agreement {_num(verdicts.get('agreement'), 3)} · κ {_num(verdicts.get('kappa'), 3)}"
        )
    targets = doc.get("targets") or []
    if targets:
        out += ["", "### Targets", ""]
        out += _table(
            ["target", "expected", "actual", "95 % interval", "result"],
            [
                [
                    md(t.get("name")),
                    md(_num(t.get("expected"), 3)),
                    md(_num(t.get("actual"), 3)),
                    md("–" if not t.get("interval") else f"{t['interval'][0]:.4g}–{t['interval'][1]:.4g}"),
                    _target_status(t),
                ]
                for t in targets
            ],
        )
    out.append("")
    return "\n".join(out)
