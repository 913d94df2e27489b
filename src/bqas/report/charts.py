"""Inline SVG charts of the HTML report and the viewer, handed to templates as geometry.

Charts are rectangles, lines and labels (never pre-rendered markup), so the templates escape every
label like any other untrusted text. Every chart with axes names them (what is counted, on what scale).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

VERDICT_CSS = {
    "production_ready": "ok",
    "needs_review": "warn",
    "failed": "bad",
    "unscored": "muted",
    "invalid": "err",
    "judge_error": "err",
}


# --------------------------------------------------------------------------------------------------
# SVG geometry handed to the template


@dataclass(frozen=True)
class Rect:
    """A filled rectangle of a chart, with a hover title (SVG ``<title>``, works without JS)."""

    x: float
    y: float
    w: float
    h: float
    css: str
    title: str


@dataclass(frozen=True)
class Label:
    """A text label of a chart."""

    x: float
    y: float
    text: str
    anchor: str = "start"
    css: str = ""


@dataclass(frozen=True)
class Line:
    """An axis or grid line."""

    x1: float
    y1: float
    x2: float
    y2: float


@dataclass
class Svg:
    """One inline SVG chart."""

    width: int
    height: int
    title: str
    rects: list[Rect] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)


def verdict_css(verdict: str) -> str:
    return VERDICT_CSS.get(verdict, "other")


def verdict_chart(rows: list[tuple[str, int]], total: int) -> Svg:
    """Horizontal bars, one per verdict, with count and share."""
    row_h, label_w, bar_w = 26, 120, 330
    svg = Svg(width=label_w + bar_w + 110, height=row_h * max(len(rows), 1) + 8, title="verdict counts")
    top = max((count for _, count in rows), default=0) or 1
    for i, (verdict, count) in enumerate(rows):
        y = 4 + i * row_h
        w = bar_w * count / top
        share = f"{100 * count / total:.1f} %" if total else "–"
        svg.labels.append(Label(label_w - 8, y + 17, verdict, "end"))
        svg.rects.append(Rect(label_w, y + 3, max(w, 1.0), row_h - 8, verdict_css(verdict), f"{verdict}: {count}"))
        svg.labels.append(Label(label_w + w + 6, y + 17, f"{count}  ({share})", "start", "num"))
    return svg


@dataclass(frozen=True)
class Scale:
    lo: float
    hi: float
    bins: int
    name: str

    def index(self, x: float) -> int:
        i = int((x - self.lo) / (self.hi - self.lo) * self.bins)
        return min(max(i, 0), self.bins - 1)  # the top edge (5 or 100) belongs to the last bin

    def edge(self, i: int) -> float:
        return self.lo + (self.hi - self.lo) * i / self.bins


SCALE_5 = Scale(1.0, 5.0, 8, "1–5")
SCALE_100 = Scale(0.0, 100.0, 10, "0–100")


def histogram_chart(
    counts: list[int], scale: Scale, title: str, *, x_title: str | None = None, y_title: str = "samples"
) -> Svg:
    """Vertical bars over a fixed scale: bin edges and the x axis's name below, the y axis named above
    it with 0 and the tallest count."""
    left, right, top, plot_h = 34, 16, 22, 100  # right margin: room for the last edge label
    plot_w = 270
    svg = Svg(width=left + plot_w + right, height=top + plot_h + 40, title=title)
    peak = max(counts, default=0) or 1
    bw = plot_w / scale.bins
    base = top + plot_h
    svg.lines.append(Line(left, base, left + plot_w, base))
    svg.lines.append(Line(left, top, left, base))
    svg.labels.append(Label(4, top - 10, y_title, "start", "axis"))
    svg.labels.append(Label(left - 4, top + 8, str(max(counts, default=0)), "end", "axis"))
    svg.labels.append(Label(left - 4, base, "0", "end", "axis"))
    for i, count in enumerate(counts):
        h = plot_h * count / peak
        lo, hi = scale.edge(i), scale.edge(i + 1)
        closing = "]" if i == scale.bins - 1 else ")"
        svg.rects.append(
            Rect(
                left + i * bw + 1,
                base - h,
                bw - 2,
                h,
                "hist",
                f"[{fmt_edge(lo)}, {fmt_edge(hi)}{closing}: {count}",
            )
        )
    step = 2 if scale.bins > 8 else 1
    for i in range(0, scale.bins + 1, step):
        svg.labels.append(Label(left + i * bw, base + 14, fmt_edge(scale.edge(i)), "middle", "axis"))
    svg.labels.append(
        Label(left + plot_w / 2, base + 30, f"{x_title or 'value'} (scale {scale.name})", "middle", "axis")
    )
    return svg


def gate_chart(n_pass: int, n_fail: int, n_other: int) -> Svg:
    """One stacked bar: pass / fail (/ other values) shares of a gate."""
    width = 300
    svg = Svg(width=width, height=44, title="gate results")
    total = n_pass + n_fail + n_other
    x = 0.0
    for css, name, count in (("ok", "pass", n_pass), ("bad", "fail", n_fail), ("other", "other", n_other)):
        if not count:
            continue
        w = width * count / total
        svg.rects.append(Rect(x, 4, w, 22, css, f"{name}: {count}"))
        if w > 44:
            svg.labels.append(Label(x + 6, 20, f"{name} {count}", "start", "on-bar"))
        x += w
    if not total:
        svg.labels.append(Label(0, 20, "no measured value", "start", "axis"))
    return svg


def risk_coverage_chart(judge: str, tier: Mapping[str, Any]) -> Svg:
    """Risk-coverage of one tier on its calibration data: error rate (FNR for auto-accept, FPR for
    auto-reject) against the share of calibration items the threshold decides; dashed-free target marks."""
    left, top, plot_w, plot_h = 52, 22, 300, 150
    svg = Svg(width=left + plot_w + 150, height=top + plot_h + 42, title=f"{judge} {tier.get('tier')}: risk-coverage")
    base = top + plot_h
    curves = tier.get("curves") or {}
    points = [p for c in curves.values() for p in c]
    y_max = max(
        [0.05, *(float(p[1]) for p in points), float(tier.get("fnr_max") or 0), float(tier.get("fpr_max") or 0)]
    )
    y_max = min(1.0, y_max * 1.1)

    def xy(cov: float, rate: float) -> tuple[float, float]:
        return left + cov * plot_w, base - min(rate, y_max) / y_max * plot_h

    svg.lines += [Line(left, base, left + plot_w, base), Line(left, top, left, base)]
    for frac in (0.0, 0.5, 1.0):
        svg.labels.append(Label(left + frac * plot_w, base + 13, f"{frac:.0%}", "middle", "axis"))
    svg.labels.append(Label(left - 4, top + 4, f"{y_max:.0%}", "end", "axis"))
    svg.labels.append(Label(left - 4, base, "0%", "end", "axis"))
    svg.labels.append(
        Label(left + plot_w / 2, base + 30, "coverage: share of calibration items auto-decided", "middle", "axis")
    )
    svg.labels.append(Label(4, top - 8, "error rate on calibration data (FNR / FPR)", "start", "axis"))
    series = (("accept", "ok", "fnr_max", "auto-accept: FNR"), ("reject", "bad", "fpr_max", "auto-reject: FPR"))
    for i, (side, css, target_key, name) in enumerate(series):
        pts = [(float(p[0]), float(p[1])) for p in curves.get(side) or []]
        for (c1, r1), (c2, r2) in itertools.pairwise(pts):
            x1, y1 = xy(c1, r1)
            x2, y2 = xy(c2, r2)
            svg.lines.append(Line(x1, y1, x2, y2))
        for cov, rate in pts:
            x, y = xy(cov, rate)
            svg.rects.append(Rect(x - 2, y - 2, 4, 4, css, f"{name} {rate:.2%} at coverage {cov:.1%}"))
        target = tier.get(target_key)
        if isinstance(target, int | float):
            _, ty = xy(0, float(target))
            svg.rects.append(Rect(left, ty - 0.5, plot_w, 1, css, f"target {target_key} {target:g}"))
        svg.rects.append(Rect(left + plot_w + 12, top + 6 + i * 18, 8, 8, css, name))
        svg.labels.append(Label(left + plot_w + 24, top + 14 + i * 18, name, "start", "axis"))
    svg.labels.append(Label(left + plot_w + 12, top + 54, "line: target", "start", "axis"))
    return svg


def fmt_edge(x: float) -> str:
    return f"{x:g}"
