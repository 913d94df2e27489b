"""Why results of a run have no score, on the console: target errors, unscored results and judging errors,
each with its sample and reason (the first few after a run; all of them with ``bqas show RUN --errors``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import typer

#: Results listed per kind after a run; the rest are counted and `bqas show RUN --errors` lists them.
SHOWN = 5

# (status, heading, where the reason is)
_KINDS = (
    ("target_error", "target errors (the assistant gave no usable answer)", ("target_error", "errors")),
    ("unscored", "unscored results", ("unscored_reason", "errors")),
    ("judge_error", "judging errors (`bqas run --resume` judges them again)", ("errors",)),
    ("invalid", "invalid samples", ("errors",)),
)


def _reason(record: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    for name in fields:
        value = record.get(name)
        if isinstance(value, list) and value:
            return str(value[0])
        if value:
            return str(value)
    return "no reason given"


def _sample(record: Mapping[str, Any]) -> str:
    sample = str(record.get("sample_id") or record.get("response_id") or "?")
    if record.get("turn") is not None:
        sample += f" turn {record['turn']}"
    judge = record.get("judge")
    return f"{sample} ({judge})" if judge else sample


def problem_lines(
    records: Iterable[Mapping[str, Any]], run_id: str, limit: int | None = SHOWN, kinds: tuple[str, ...] = ()
) -> list[str]:
    """For each kind of result without a score that the run has: a heading with the count, then one line
    per result (sample, judge, reason), at most ``limit`` of them and a pointer to the rest."""
    wanted = [kind for kind in _KINDS if not kinds or kind[0] in kinds]
    found: dict[str, list[Mapping[str, Any]]] = {status: [] for status, _, _ in wanted}
    counts: dict[str, int] = dict.fromkeys(found, 0)
    for record in records:
        status = str(record.get("status"))
        if status in found:
            counts[status] += 1
            if limit is None or len(found[status]) < limit:
                found[status].append(record)
    lines: list[str] = []
    for status, heading, fields in wanted:
        if not counts[status]:
            continue
        lines.append(f"{heading}: {counts[status]}")
        lines += [f"  {_sample(r)}: {_reason(r, fields)}" for r in found[status]]
        if counts[status] > len(found[status]):
            lines.append(f"  … and {counts[status] - len(found[status])} more: `bqas show {run_id} --errors`")
    return lines


def print_problems(store: Any, run_id: str, limit: int | None = SHOWN, kinds: tuple[str, ...] = ()) -> None:
    """Print :func:`problem_lines` of a stored run (to stderr, as the run's other notices)."""
    from bqas.runner.run import settled_records
    from bqas.textsafe import printable

    for line in problem_lines(settled_records(store, run_id), run_id, limit, kinds):
        typer.echo(printable(line), err=True)  # sample ids and reasons are data: no terminal escapes
