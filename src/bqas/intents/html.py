"""A self-contained HTML report of an intent evaluation: inline CSS, no scripts, no network."""

from __future__ import annotations

from html import escape

from bqas.intents.evaluate import IntentEvaluation

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.cm td{min-width:2rem;text-align:center}
.cm th.v{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;text-align:left}
.sum{font-size:1.2rem}.diag{outline:2px solid #2a7}
"""


def _shade(value: int, row_total: int, diagonal: bool) -> str:
    if not value or not row_total:
        return ""
    alpha = 0.15 + 0.85 * value / row_total
    colour = "42,160,90" if diagonal else "220,60,50"
    return f' style="background:rgba({colour},{alpha:.2f})"'


def render_html(ev: IntentEvaluation, *, title: str = "Intent classification") -> str:
    """The report as one HTML document."""
    meta = "".join(f"<li>{escape(str(k))}: {escape(str(v))}</li>" for k, v in ev.meta.items())
    rows = "".join(
        f'<tr><td class="l">{escape(s.intent)}</td><td>{s.precision:.3f}</td><td>{s.recall:.3f}</td>'
        f"<td>{s.f1:.3f}</td><td>{s.support}</td></tr>"
        for s in ev.per_intent
    )
    head = "".join(f'<th class="v">{escape(label)}</th>' for label in ev.labels)
    body = []
    for i, (label, row) in enumerate(zip(ev.labels, ev.confusion, strict=True)):
        total = sum(row)
        cells = "".join(
            f"<td{_shade(v, total, i == j)}{' class=diag' if i == j else ''}>{v or ''}</td>" for j, v in enumerate(row)
        )
        body.append(f'<tr><th class="l">{escape(label)}</th>{cells}</tr>')
    pairs = "".join(
        f'<tr><td class="l">{escape(p.true)}</td><td class="l">{escape(p.predicted)}</td>'
        f"<td>{p.count}</td><td>{p.share:.0%}</td></tr>"
        for p in ev.confused_pairs
    )
    unscored = f" ({ev.unscored} unscored, left out)" if ev.unscored else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{_CSS}</style></head>
<body><h1>{escape(title)}</h1>
<p class="sum">samples: {ev.n}{unscored} · accuracy: <b>{ev.accuracy:.3f}</b> · macro-F1: <b>{ev.macro_f1:.3f}</b></p>
<ul>{meta}</ul>
<h2>Per intent</h2>
<table><tr><th class="l">intent</th><th>precision</th><th>recall</th><th>F1</th><th>support</th></tr>{rows}</table>
<h2>Confusion matrix</h2><p>Rows: true intent; columns: predicted intent.</p>
<table class="cm"><tr><th></th>{head}</tr>{"".join(body)}</table>
<h2>Most confused pairs</h2>
<table><tr><th class="l">true</th><th class="l">predicted</th><th>count</th><th>share of true</th></tr>{pairs}</table>
</body></html>
"""
