"""Metrics of an intent classifier (scikit-learn): accuracy, macro-F1, per-intent P/R/F1/support, the
confusion matrix and the most confused pairs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class IntentScores:
    """Precision, recall, F1 and support of one intent."""

    intent: str
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class ConfusedPair:
    """``count`` texts of intent ``true`` were predicted as ``predicted`` (``share`` of that intent's support)."""

    true: str
    predicted: str
    count: int
    share: float


@dataclass
class IntentEvaluation:
    """All figures of one evaluation. ``labels`` (table and matrix) are the union of true and predicted
    labels, sorted. Macro-F1 averages the F1 of the labels that occur in the truth: a label that is only
    ever predicted has no support, and its false positives already lower the recall of the true labels."""

    n: int
    accuracy: float
    macro_f1: float
    labels: list[str]
    per_intent: list[IntentScores]
    confusion: list[list[int]]
    confused_pairs: list[ConfusedPair]
    unscored: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def evaluate_predictions(
    y_true: Sequence[str], y_pred: Sequence[str], *, top_pairs: int = 10, unscored: int = 0
) -> IntentEvaluation:
    """Compare predicted with true labels (same length, at least one)."""
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} true labels but {len(y_pred)} predictions")
    if not y_true:
        raise ValueError("nothing to evaluate (no scored predictions)")
    labels = sorted(set(y_true) | set(y_pred))
    precision, recall, f1, support = precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0)
    matrix = confusion_matrix(y_true, y_pred, labels=labels)
    per_intent = [
        IntentScores(label, float(p), float(r), float(f), int(s))
        for label, p, r, f, s in zip(labels, precision, recall, f1, support, strict=True)
    ]
    pairs = [
        ConfusedPair(labels[i], labels[j], int(matrix[i, j]), float(matrix[i, j] / max(1, matrix[i].sum())))
        for i in range(len(labels))
        for j in range(len(labels))
        if i != j and matrix[i, j] > 0
    ]
    pairs.sort(key=lambda p: (-p.count, -p.share, p.true, p.predicted))
    return IntentEvaluation(
        n=len(y_true),
        accuracy=float(accuracy_score(y_true, y_pred)),
        macro_f1=float(f1_score(y_true, y_pred, labels=sorted(set(y_true)), average="macro", zero_division=0)),
        labels=labels,
        per_intent=per_intent,
        confusion=[[int(v) for v in row] for row in matrix],
        confused_pairs=pairs[:top_pairs],
        unscored=unscored,
    )


def format_text(ev: IntentEvaluation, *, max_matrix_labels: int = 25) -> str:
    """A plain-text report: summary, per-intent table, confusion matrix (abbreviated labels), top pairs."""
    lines = [
        f"samples: {ev.n}" + (f" (+{ev.unscored} unscored, left out)" if ev.unscored else ""),
        f"accuracy: {ev.accuracy:.3f}   macro-F1: {ev.macro_f1:.3f}",
        "",
    ]
    width = max(len("intent"), *(len(s.intent) for s in ev.per_intent))
    lines.append(f"{'intent':<{width}}  precision  recall     F1  support")
    for s in ev.per_intent:
        lines.append(f"{s.intent:<{width}}  {s.precision:9.3f}  {s.recall:6.3f}  {s.f1:5.3f}  {s.support:7d}")
    if len(ev.labels) <= max_matrix_labels:
        lines += ["", "confusion matrix (rows: true, columns: predicted; column numbers = row numbers)"]
        cell = max(3, len(str(max((max(r) for r in ev.confusion), default=0))) + 1)
        header = " " * (width + 5) + "".join(f"{i + 1:>{cell}}" for i in range(len(ev.labels)))
        lines.append(header)
        for i, (label, row) in enumerate(zip(ev.labels, ev.confusion, strict=True)):
            cells = "".join(f"{(v if v else '.'):>{cell}}" for v in row)
            lines.append(f"{i + 1:>3}. {label:<{width}}{cells}")
    if ev.confused_pairs:
        lines += ["", "most confused (true -> predicted):"]
        for p in ev.confused_pairs:
            lines.append(f"  {p.true} -> {p.predicted}: {p.count} ({p.share:.0%} of {p.true})")
    return "\n".join(lines)
