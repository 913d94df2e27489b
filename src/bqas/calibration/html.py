"""``calibration.html``: one self-contained page (inline CSS, no scripts, no network); all text escaped."""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bqas.calibration.figure_text import figure_text, language_figures
from bqas.textsafe import clean_text

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;color:#1d232a;
padding:0 1rem}h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d6dbe1}
h3{font-size:1rem}table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #d6dbe1;
padding:.25rem .6rem;text-align:right;vertical-align:top}th{background:#f3f5f7}td.l,th.l{text-align:left}
.ok{color:#1a7f37;font-weight:600}.miss{color:#c62828;font-weight:600}.undecided{color:#9a6700;font-weight:600}.u{color:#6b7280;font-style:italic}
.def{background:#f6f8fa;border-left:4px solid #8c959f;padding:.6rem 1rem}.meta td{text-align:left}
"""


def esc(value: object) -> str:
    """Escaped text of any value (control characters made visible first)."""
    return html.escape(clean_text(value), quote=True)


def _fig(data: Mapping[str, Any] | None, percent: bool = False) -> str:
    fig = figure_text(data, percent)
    if fig.missing or fig.undefined is not None:
        return f'<span class="u">{esc(fig.plain())}</span>'
    return f"{esc(fig.value)}<small>{esc(fig.interval)} (n={fig.n})</small>"


def _row(cells: list[str], header: bool = False, first_left: bool = True) -> str:
    tag = "th" if header else "td"
    out = []
    for i, cell in enumerate(cells):
        cls = ' class="l"' if i == 0 and first_left else ""
        out.append(f"<{tag}{cls}>{cell}</{tag}>")
    return "<tr>" + "".join(out) + "</tr>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    return "<table>" + _row([esc(h) for h in head], header=True) + "".join(_row(r) for r in rows) + "</table>"


def _latency(lat: dict[str, Any]) -> str:
    if not lat.get("n"):
        return '<span class="u">undefined (no judged sample)</span>'
    interval = lat.get("mean_interval")
    span = f" [{interval[0]:.1f}–{interval[1]:.1f}]" if interval else ""
    return esc(f"mean {lat['mean']:.1f}{span} · p50 {lat['p50']:.1f} · p95 {lat['p95']:.1f} ms (n={lat['n']})")


def _timing_rows(block: dict[str, Any]) -> list[list[str]]:
    rows = [[esc("time: service (own work)"), _latency(block.get("service_ms") or block["latency_ms"])]]
    if block.get("queue_ms"):
        rows.append([esc("time: queue wait (worker, LLM slot)"), _latency(block["queue_ms"])])
    rows.append([esc("time: end to end (service + queue)"), _latency(block["latency_ms"])])
    if block.get("throughput_ms"):
        t = block["throughput_ms"]
        rows.append([esc("time: throughput (wall / N)"), esc(f"{t['per_sample']:.1f} ms ({t['wall_s']:.1f} s in all)")])
    return rows


def _unscored_lines(block: dict[str, Any]) -> list[str]:
    from bqas.runner.summary import unscored_lines

    return unscored_lines(block.get("unscored_reasons") or [])


def _block(block: dict[str, Any]) -> str:
    r = block["reject"]
    parts = [
        _table(
            ["figure", "value"],
            [
                [esc("samples judged"), esc(block["samples"])],
                [esc("abstention (unscored)"), _fig(block["abstention_rate"], percent=True)],
                [esc("FPR"), _fig(r["fpr"], percent=True)],
                [esc("FNR"), _fig(r["fnr"], percent=True)],
                [esc("accuracy (accept/reject)"), _fig(r["accuracy"], percent=True)],
                [esc("Cohen's κ (accept/reject)"), _fig(r["kappa"])],
                [esc("verdict agreement"), _fig(block["verdicts"]["agreement"], percent=True)],
                [esc("Cohen's κ (verdict)"), _fig(block["verdicts"]["kappa"])],
                *_timing_rows(block),
            ],
        ),
        "<h3>Accept / reject (positive = reject)</h3>",
        _table(
            ["", "judge rejects", "judge accepts"],
            [
                [esc("people reject"), esc(r["tp"]), esc(r["fn"])],
                [esc("people accept"), esc(r["fp"]), esc(r["tn"])],
            ],
        ),
        "".join(f"<p>{esc(line)}</p>" for line in _unscored_lines(block)),
        f"<p>{esc(r['abstained'])} labelled samples abstained (unscored); "
        f"{esc(r['no_human_label'])} scored samples have no accept/reject label.</p>",
        "<h3>Verdicts (rows: people, columns: judge)</h3>",
        _table(
            ["human \\ judge", *block["verdicts"]["columns"]],
            [
                [esc(row), *(esc(c) for c in cells)]
                for row, cells in zip(block["verdicts"]["rows"], block["verdicts"]["matrix"], strict=True)
            ],
        ),
    ]
    dims = block.get("dimensions") or {}
    if dims:
        rows = []
        for name, d in dims.items():
            if d["kind"] == "gate":
                rest = [
                    _fig(d["agreement"], percent=True),
                    _fig(d["kappa"]),
                    f"FPR {_fig(d['fpr'], True)}<br>FNR {_fig(d['fnr'], True)}",
                ]
            else:
                rest = [_fig(d["spearman"]), _fig(d["pearson"]), f"MAE {_fig(d['mean_abs_diff'])}"]
            rows.append([esc(name), esc(d["kind"]), esc(d["n"]), esc(d["not_measured"]), *rest])
        parts += [
            "<h3>Dimensions (judge vs people)</h3>",
            _table(["dimension", "kind", "pairs", "not measured", "agreement / Spearman", "κ / Pearson", "more"], rows),
        ]
    return "".join(parts)


def _targets(results: list[dict[str, Any]]) -> str:
    if not results:
        return "<p>No targets.</p>"
    rows = []
    for t in results:
        status = t.get("status") or ("met" if t["passed"] else "missed")
        mark = {
            "met": '<span class="ok">met</span>',
            "missed": '<span class="miss">MISSED</span>',
        }.get(status, '<span class="undecided">not enough evidence</span>')
        actual = "undefined" if t["actual"] is None else f"{t['actual']:.4g}"
        interval = t.get("interval")
        span = "–" if not interval else f"{interval[0]:.4g}–{interval[1]:.4g}"
        rows.append([esc(t["name"]), esc(t["expected"]), esc(actual), esc(span), mark, esc(t.get("note") or "")])
    return (
        "<p>Each target is judged on the 95 % confidence interval of its figure (Clopper–Pearson for rates, "
        "bootstrap for κ, Student's t for the mean time): met when the whole interval meets it, missed when "
        "the whole interval misses it, otherwise not enough evidence.</p>"
        + _table(["target", "expected", "actual", "95 % interval", "result", "note"], rows)
    )


def _compare(cmp: dict[str, Any]) -> str:
    o = cmp["overall"]
    v = o["verdict"]
    parts = [
        f"<p>{esc(o['samples'])} samples, both scored: {esc(o['both_scored'])}; unscored A: {esc(o['unscored_a'])}, "
        f"B: {esc(o['unscored_b'])}.</p>",
        _table(
            ["dimension", "kind", "n", "agreement", "Cohen's κ", "Krippendorff's α"],
            [
                [
                    esc("verdict"),
                    esc("nominal"),
                    esc(v["agreement"]["n"]),
                    _fig(v["agreement"], True),
                    _fig(v["kappa"]),
                    _fig(v["alpha_nominal"]),
                ]
            ]
            + [
                [
                    esc(name),
                    esc(f"{d['kind']} ({d['alpha_level']})"),
                    esc(d["n"]),
                    _fig(d["agreement"], True),
                    _fig(d.get("kappa")),
                    _fig(d["alpha"]),
                ]
                for name, d in o["dimensions"].items()
            ],
        ),
    ]
    if len(cmp.get("by_language") or {}) > 1:
        parts.append("<h3>By language</h3>")
        parts.append(
            _table(
                ["language", "n", "verdict agreement", "κ", "α"],
                [
                    [
                        esc(lang),
                        esc(b["samples"]),
                        _fig(b["verdict"]["agreement"], True),
                        _fig(b["verdict"]["kappa"]),
                        _fig(b["verdict"]["alpha_nominal"]),
                    ]
                    for lang, b in cmp["by_language"].items()
                ],
            )
        )
    return "".join(parts)


def render_html(data: dict[str, Any]) -> str:
    """The page for a calibration (or comparison) JSON document as written to ``calibration.json``."""
    gold = data["gold"]
    meta_rows = [
        ["run", data.get("run_id") or "–"],
        ["judge", data["judge"]],
        ["gold file", gold["path"]],
        ["created", data.get("created_at") or "–"],
        ["lines read", gold["lines"]],
        ["samples used", gold["samples"]],
        ["bad lines (skipped)", gold["bad_lines"]],
        ["lines for other judges", gold["other_judge"]],
        ["stopped at --limit", "yes" if gold["limited"] else "no"],
    ]
    for c in data["configs"]:
        meta_rows.append(
            [f"configuration {c['name']}", f"{c['spec']} · backend {c['backend']} · model {c['model'] or '–'}"]
        )
    body = [
        f"<h1>Calibration of judge {esc(data['judge'])}</h1>",
        '<table class="meta">' + "".join(_row([esc(k), esc(v)]) for k, v in meta_rows) + "</table>",
        f'<p class="def">{esc(data["definition"])}</p>',
        "<h2>Targets</h2>",
        _targets(data["targets"]),
    ]
    if gold["labels_not_compared"]:
        listed = ", ".join(f"{k} ({v})" for k, v in gold["labels_not_compared"].items())
        body.append(f"<p>Labels not compared (not a graded dimension of this judge): {esc(listed)}</p>")
    if data.get("compare"):
        body += ["<h2>Inter-judge agreement (A vs B)</h2>", _compare(data["compare"])]
    for c in data["configs"]:
        cal = c["calibration"]
        body.append(f"<h2>{esc(c['name'])}: {esc(c['spec'])} vs people</h2>")
        body.append(_block(cal["overall"]))
        if len(cal["by_language"]) > 1:
            body.append("<h3>By language</h3>")
            rows = [
                [
                    esc(lang),
                    esc(b["samples"]),
                    *(_fig(d, percent) for d, percent in language_figures(b)),
                    _latency(b.get("service_ms") or b["latency_ms"]),
                ]
                for lang, b in cal["by_language"].items()
            ]
            body.append(
                _table(
                    ["language", "n", "FPR", "FNR", "accuracy", "verdict agreement", "κ", "abstention", "service time"],
                    rows,
                )
            )
    if gold["problems"]:
        body.append("<h2>Skipped lines</h2>")
        body.append(_table(["line", "problem"], [[esc(p["line"]), esc(p["message"])] for p in gold["problems"][:500]]))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>Calibration {esc(data['judge'])}</title><style>{_CSS}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )


def write_html(path: Path, data: dict[str, Any]) -> None:
    path.write_text(render_html(data), encoding="utf-8")
