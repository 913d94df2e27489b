"""The report's baseline section: the current run against a baseline run, matched by sample and judge
(changed verdicts, unpaired means per judge and dimension). The paired differences with their bootstrap
intervals come from ``bqas.runner.compare`` (the code ``bqas compare`` runs), handed in by the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bqas.report.aggregate import DimAcc, Stats, as_float, key_of

if TYPE_CHECKING:
    from bqas.runner.compare import Comparison


@dataclass
class ChangeRow:
    """A sample whose verdict differs from the baseline's."""

    sample_id: str
    judge: str
    before: str
    after: str
    composite_before: float | None
    composite_after: float | None


@dataclass
class DiffRow:
    """Mean of one dimension (or composite/pass rate) of one judge, baseline against current."""

    judge: str
    name: str
    kind: str
    baseline: float | None
    current: float | None
    n_baseline: int
    n_current: int

    @property
    def diff(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline


def gate_pass_share(acc: DimAcc) -> float | None:
    n = acc.gates["pass"] + acc.gates["fail"]
    return acc.gates["pass"] / n if n else None


def diff_rows(current: Stats, baseline: Stats) -> list[DiffRow]:
    rows: list[DiffRow] = []
    for judge in [*current.judges, *(j for j in baseline.judges if j not in current.judges)]:
        cur, base = current.judges.get(judge), baseline.judges.get(judge)
        cg, bg = (cur.group if cur else None), (base.group if base else None)
        rows.append(
            DiffRow(
                judge,
                "composite",
                "score",
                bg.composite.mean_or_none if bg else None,
                cg.composite.mean_or_none if cg else None,
                bg.composite.n if bg else 0,
                cg.composite.n if cg else 0,
            )
        )
        rows.append(
            DiffRow(
                judge,
                "pass rate",
                "rate",
                bg.pass_rate if bg else None,
                cg.pass_rate if cg else None,
                bg.n_scored if bg else 0,
                cg.n_scored if cg else 0,
            )
        )
        names = [
            *(cur.dims if cur else {}),
            *(n for n in (base.dims if base else {}) if not cur or n not in cur.dims),
        ]
        for name in names:
            cd = cur.dims.get(name) if cur else None
            bd = base.dims.get(name) if base else None
            either = cd or bd
            kind = either.kind if either is not None else "unmeasured"
            if kind == "score":
                rows.append(
                    DiffRow(
                        judge,
                        name,
                        "score",
                        bd.moments.mean_or_none if bd else None,
                        cd.moments.mean_or_none if cd else None,
                        bd.moments.n if bd else 0,
                        cd.moments.n if cd else 0,
                    )
                )
            elif kind == "gate":
                rows.append(
                    DiffRow(
                        judge,
                        f"{name} (pass share)",
                        "rate",
                        gate_pass_share(bd) if bd else None,
                        gate_pass_share(cd) if cd else None,
                        (bd.gates["pass"] + bd.gates["fail"]) if bd else 0,
                        (cd.gates["pass"] + cd.gates["fail"]) if cd else 0,
                    )
                )
    return rows


class BaselineMatch:
    """The baseline's records aggregated once, then each record of the current run matched against them
    by (sample id, judge): changed verdicts (the first ``cap`` kept), matched, new and missing counts."""

    def __init__(self, run: Mapping[str, Any], records: Iterable[Mapping[str, Any]], cap: int) -> None:
        self.run = run
        self.stats = Stats()
        self.cap = cap
        # Only the verdict and composite per sample are kept, to match the current run against.
        self.verdicts: dict[tuple[str, str], tuple[str, float | None]] = {}
        for record in records:
            verdict = self.stats.add(record)
            self.verdicts[(key_of(record, "sample_id"), key_of(record, "judge"))] = (
                verdict,
                as_float(record.get("composite_score")),
            )
        self.changes: list[ChangeRow] = []
        self.n_changes = self.n_matched = self.n_new = 0

    def add(self, record: Mapping[str, Any], verdict: str) -> None:
        """Match one record of the current run (its report verdict ``verdict``)."""
        key = (key_of(record, "sample_id"), key_of(record, "judge"))
        before = self.verdicts.pop(key, None)
        if before is None:
            self.n_new += 1
            return
        self.n_matched += 1
        if before[0] != verdict:
            self.n_changes += 1
            if len(self.changes) < self.cap:
                self.changes.append(
                    ChangeRow(key[0], key[1], before[0], verdict, before[1], as_float(record.get("composite_score")))
                )

    def view(self, current: Stats, comparison: Comparison | None = None) -> dict[str, Any]:
        """The template's ``baseline``; ``comparison`` adds the paired differences with their 95 % bootstrap intervals, as ``bqas compare`` prints them."""
        return {
            "run": self.run,
            "total": self.stats.total,
            "verdicts": self.stats.verdicts,
            "diffs": diff_rows(current, self.stats),
            "changes": self.changes,
            "n_changes": self.n_changes,
            "n_matched": self.n_matched,
            "n_new": self.n_new,
            "n_missing": len(self.verdicts),
            "paired": comparison,
        }
