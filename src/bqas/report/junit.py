"""JUnit XML output of a BQAS run, for CI systems.

One ``<testsuite>`` per judge (``bqas.<scenario>.<judge>``) holds one ``<testcase>`` per graded sample;
a last suite ``bqas.<scenario>.thresholds`` holds one testcase per threshold of the scenario.

Records arrive as a stream (the runner reads them from its store), interleaved across judges, while a
suite's counts must sit on its opening tag. So each judge's testcases are written to a spooled
temporary file as they come and the suites are assembled at the end: memory stays bounded by the
number of judges, not the number of records.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from xml.sax.saxutils import escape

from bqas.textsafe import clean_text

__all__ = ["as_list", "write_junit"]

# Attribute values are normalised by XML parsers (newlines and tabs become spaces) unless escaped.
_ATTR_ENTITIES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}

# CI tools show `message` in one line; the full text goes into the element body.
_MAX_MESSAGE_CHARS = 500

_PASS_VERDICTS = frozenset({"production_ready"})
_FAIL_VERDICTS = frozenset({"failed"})


def as_list(value: Any) -> list[Any]:
    """A record's list field (errors, warnings, reasons); a lone string or value becomes one entry."""
    if value is None or value == "":
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def _text(value: object) -> str:
    return escape(clean_text(value))


def _attr(value: object) -> str:
    return escape(clean_text(value), _ATTR_ENTITIES)


def _one_line(text: str, limit: int = _MAX_MESSAGE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _fmt_num(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "n/a" if value is None else str(value)
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def _fmt_issue(issue: Any) -> str:
    """An entry of ``errors``/``warnings``: a plain string or a dict naming field and message."""
    if isinstance(issue, Mapping):
        fld = issue.get("field") or issue.get("loc") or issue.get("path")
        msg = issue.get("message") or issue.get("msg") or issue.get("error") or ""
        if fld is not None and msg:
            return f"{fld}: {msg}"
        return str(msg or dict(issue))
    return str(issue)


def _failed_gates(record: Mapping[str, Any]) -> list[str]:
    dims = record.get("dimensions")
    if not isinstance(dims, Mapping):
        return []
    return [str(name) for name, entry in dims.items() if isinstance(entry, Mapping) and entry.get("value") == "fail"]


def _score_lines(record: Mapping[str, Any]) -> list[str]:
    """One line per dimension: value and where it came from (the provenance CI readers need)."""
    dims = record.get("dimensions")
    if not isinstance(dims, Mapping):
        return []
    lines = []
    for name, entry in dims.items():
        if not isinstance(entry, Mapping):
            continue
        if entry.get("measured") is False or entry.get("value") is None:
            note = entry.get("note")
            lines.append(f"  {name}: not measured" + (f" ({note})" if note else ""))
            continue
        source = str(entry.get("backend") or "?")
        if entry.get("model"):
            source += f"/{entry['model']}"
        value = entry.get("value")
        shown = ", ".join(map(str, value)) if isinstance(value, list) else _fmt_num(value)
        lines.append(f"  {name}: {shown} [{source}]")
    return lines


def _repeats_line(record: Mapping[str, Any]) -> str:
    """``repeats: 3 (production_ready, failed, production_ready) → production_ready; STRADDLES`` or ''."""
    info = record.get("repeats")
    if not isinstance(info, Mapping):
        return ""
    verdicts = ", ".join(map(str, as_list(info.get("verdicts"))))
    line = f"repeats: {info.get('n')} ({verdicts}) → {info.get('canonical_verdict')} by {info.get('rule')}"
    if info.get("tie"):
        line += "; TIE, escalated"
    if info.get("straddles"):
        line += "; STRADDLES a verdict threshold"
    return line


def _time_s(record: Mapping[str, Any]) -> float:
    latency = record.get("latency_ms")
    if isinstance(latency, bool) or not isinstance(latency, int | float) or latency < 0:
        return 0.0
    return float(latency) / 1000.0


@dataclass
class _Suite:
    """One judge's testcases, spooled to a temporary file, and the counts of its opening tag."""

    name: str
    body: IO[str] = field(
        default_factory=lambda: tempfile.SpooledTemporaryFile(  # noqa: SIM115 - closed in write_junit
            max_size=1 << 20, mode="w+", encoding="utf-8"
        )
    )
    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    time: float = 0.0

    def open_tag(self, properties: Sequence[tuple[str, object]] = ()) -> str:
        tag = (
            f'  <testsuite name="{_attr(self.name)}" tests="{self.tests}" failures="{self.failures}" '
            f'errors="{self.errors}" skipped="{self.skipped}" time="{self.time:.3f}">\n'
        )
        if properties:
            tag += "    <properties>\n"
            for key, value in properties:
                tag += f'      <property name="{_attr(key)}" value="{_attr(value)}"/>\n'
            tag += "    </properties>\n"
        return tag


def _testcase(record: Mapping[str, Any], suite: _Suite) -> str:
    """The ``<testcase>`` element of one record; updates the suite's counts."""
    judge = str(record.get("judge") or "unknown")
    sample_id = record.get("sample_id")
    name = str(sample_id) if sample_id not in (None, "") else f"line-{record.get('line', '?')}"
    seconds = _time_s(record)
    status = record.get("status")
    verdict = record.get("verdict")
    reasoning = str(record.get("reasoning") or "")
    suite.tests += 1
    suite.time += seconds
    head = f'    <testcase classname="bqas.{_attr(judge)}" name="{_attr(name)}" time="{seconds:.3f}"'

    if status in ("invalid", "target_error", "judge_error"):
        suite.errors += 1
        issues = [_fmt_issue(e) for e in as_list(record.get("errors"))] or ["(no error given)"]
        body = "\n".join(issues + [f"warning: {_fmt_issue(w)}" for w in as_list(record.get("warnings"))])
        what = {
            "invalid": "invalid sample",
            "target_error": "the assistant gave no usable answer",
            "judge_error": "judging failed (not the sample's fault; --resume judges it again)",
        }[str(status)]
        message = _one_line(f"{what}: " + "; ".join(issues))
        return (
            f'{head}>\n      <error type="{status}" message="{_attr(message)}">{_text(body)}</error>\n    </testcase>\n'
        )
    if status == "unscored" or verdict == "unscored":
        suite.skipped += 1
        reason = str(record.get("unscored_reason") or "no reason given")
        message = _one_line(f"unscored: {reason}")
        return f'{head}>\n      <skipped message="{_attr(message)}"/>\n    </testcase>\n'

    composite = _fmt_num(record.get("composite_score"))
    repeats = _repeats_line(record)
    parts = (repeats, reasoning, "scores:\n" + "\n".join(_score_lines(record)))
    detail = "\n".join(part for part in parts if part.strip())
    if verdict in _FAIL_VERDICTS:
        suite.failures += 1
        gates = "".join(f"; gate {g}=fail" for g in _failed_gates(record))
        message = _one_line(f"verdict {verdict} (composite {composite}{gates})")
        return (
            f'{head}>\n      <failure type="verdict" message="{_attr(message)}">{_text(detail)}</failure>\n'
            "    </testcase>\n"
        )
    if verdict in _PASS_VERDICTS:
        if repeats and isinstance(record.get("repeats"), Mapping) and record["repeats"].get("straddles"):
            # Passes by majority, but not every repeat agreed: say so where CI readers look.
            return f"{head}>\n      <system-out>{_text(repeats)}</system-out>\n    </testcase>\n"
        return f"{head}/>\n"
    # needs_review (or an unknown verdict): not a CI failure, but a human should look at it.
    note = f"verdict {verdict} (composite {composite})"
    if record.get("escalation"):
        note += f"; escalation {record['escalation']}"
        reasons = as_list(record.get("escalation_reasons"))
        if reasons:
            note += ": " + "; ".join(map(str, reasons))
    return f"{head}>\n      <system-out>{_text(note + chr(10) + detail)}</system-out>\n    </testcase>\n"


def _threshold_case(result: Mapping[str, Any], suite: _Suite) -> str:
    name = str(result.get("name") or "threshold")
    suite.tests += 1
    head = f'    <testcase classname="bqas.thresholds" name="{_attr(name)}" time="0.000"'
    expected, actual, passed = result.get("expected"), result.get("actual"), result.get("passed")
    text = f"{name}: expected {expected}, actual {actual}"
    if passed is True:
        return f"{head}/>\n"
    if passed is None:
        # The runner could not evaluate it (e.g. no scored sample): not a pass, not a measured miss.
        suite.skipped += 1
        return f'{head}>\n      <skipped message="{_attr("not evaluated: " + text)}"/>\n    </testcase>\n'
    suite.failures += 1
    message = _one_line(f"threshold missed: {text}")
    return (
        f'{head}>\n      <failure type="threshold" message="{_attr(message)}">{_text(text)}</failure>\n'
        "    </testcase>\n"
    )


def _repeat_properties(repeats: Any) -> list[tuple[str, object]]:
    """Run-level figures over ``--repeats`` (mean, std, min, max) and the straddling samples, as properties."""
    if not isinstance(repeats, Mapping):
        return []
    props: list[tuple[str, object]] = [
        ("repeats", repeats.get("n")),
        ("repeats.straddling_samples", repeats.get("straddling_samples")),
        ("repeats.ties_escalated", repeats.get("ties_escalated")),
    ]
    for name, fig in (repeats.get("figures") or {}).items():
        if isinstance(fig, Mapping) and fig.get("n"):
            spread = f"mean {fig.get('mean')} std {fig.get('std')} min {fig.get('min')} max {fig.get('max')}"
            props.append((f"repeats.{name}", spread))
    if repeats.get("note"):
        props.append(("repeats.note", repeats["note"]))
    return props


def _target_properties(target: Any) -> list[tuple[str, object]]:
    """The assistant's own figures (bqas.targets): answers, errors, latency percentiles, tokens per answer."""
    if not isinstance(target, Mapping):
        return []
    latency = target.get("latency_ms") or {}
    ttft = target.get("ttft_ms") or {}
    props: list[tuple[str, object]] = [
        ("target.answers", target.get("answers")),
        ("target.errors", target.get("errors")),
        ("target.latency_p50_ms", latency.get("p50")),
        ("target.latency_p95_ms", latency.get("p95")),
        ("target.latency_max_ms", latency.get("max")),
        ("target.ttft_p50_ms", ttft.get("p50")),
        ("target.ttft_p95_ms", ttft.get("p95")),
    ]
    for name, figure in (target.get("tokens") or {}).items():
        if isinstance(figure, Mapping):
            props.append((f"target.{name}_per_answer", figure.get("per_answer")))
    return [(k, v) for k, v in props if v is not None]


def _judge_check_properties(checks: Any) -> list[tuple[str, object]]:
    """The LLM judge's known-answer check before the run (bqas.runner.judge_gate), per judge."""
    out: list[tuple[str, object]] = []
    for check in as_list(checks):
        if not isinstance(check, Mapping):
            continue
        prefix = f"judge_check.{check.get('judge')}"
        out.append((f"{prefix}.fit", "true" if check.get("fit") else "false"))
        for key in ("pairs_right", "verdict_agreement", "parse_failures", "model", "measured"):
            if check.get(key) is not None:
                out.append((f"{prefix}.{key}", check[key]))
        if check.get("accepted_unfit"):
            out.append((f"{prefix}.accepted_unfit", "true"))
        if check.get("resumed"):
            out.append((f"{prefix}.resumed", "true"))
    return out


def write_junit(path: Path, run: Mapping[str, Any], records: Iterable[Mapping[str, Any]]) -> None:
    """Write the JUnit XML report of a run to ``path``.

    Verdict ``failed`` → ``<failure>`` (reasoning and scores as text), ``unscored`` → ``<skipped>``,
    status ``invalid`` → ``<error>``, ``needs_review`` passes with a ``<system-out>`` note. Thresholds
    form the last suite, a missed one fails. ``records`` is consumed once, in a single pass. The file
    is written to a temporary name and renamed, so a crash never leaves half a report behind.
    """
    path = Path(path)
    scenario = str(run.get("scenario") or "scenario")
    suites: dict[str, _Suite] = {}
    thresholds = _Suite(f"bqas.{scenario}.thresholds")
    from bqas.runner.summary import TimingStats
    from bqas.trust.summary import TrustStats, trust_properties

    trust = TrustStats()
    timing = TimingStats()
    try:
        for record in records:
            trust.add(record)
            timing.add(record)
            judge = str(record.get("judge") or "unknown")
            suite = suites.get(judge)
            if suite is None:
                suite = suites[judge] = _Suite(f"bqas.{scenario}.{judge}")
            suite.body.write(_testcase(record, suite))

        for result in as_list(run.get("threshold_results")):
            if isinstance(result, Mapping):
                thresholds.body.write(_threshold_case(result, thresholds))

        properties: list[tuple[str, object]] = [
            (key, run[key])
            for key in ("run_id", "scenario", "backend", "model", "language", "started_at", "finished_at")
            if run.get(key) is not None
        ]
        # Trust or escalate: coverage per tier (and language) and the guaranteed bounds of the profiles.
        properties += trust_properties(trust.as_dict(), as_list(run.get("profiles")))
        # Where the judgments' time went: their own work (the policy's evaluation time) and the queue beside it.
        for key, stats in timing.as_dict().items():
            if stats["n"]:
                properties.append((f"timing.{key.removesuffix('_ms')}_mean_ms", stats["mean"]))
        properties += _repeat_properties(run.get("repeats"))
        properties += _target_properties(run.get("target_figures"))
        properties += [(key, run[key]) for key in ("dataset_hash", "judge_config_hash") if run.get(key)]
        properties += _judge_check_properties(run.get("judge_check"))
        all_suites = [*suites.values(), thresholds]
        totals = {attr: sum(getattr(s, attr) for s in all_suites) for attr in ("tests", "failures", "errors")}
        total_time = sum(s.time for s in all_suites)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="\n") as out:
            out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            # The root carries no `skipped`: Jenkins' xunit-plugin schema (junit-10.xsd) allows it on
            # <testsuite> only, and validating importers reject the whole file over it.
            out.write(
                f'<testsuites name="{_attr("bqas." + scenario)}" tests="{totals["tests"]}" '
                f'failures="{totals["failures"]}" errors="{totals["errors"]}" time="{total_time:.3f}">\n'
            )
            for suite in all_suites:
                out.write(suite.open_tag(properties))
                suite.body.seek(0)
                shutil.copyfileobj(suite.body, out)
                out.write("  </testsuite>\n")
            out.write("</testsuites>\n")
        os.replace(tmp, path)
    finally:
        for suite in [*suites.values(), thresholds]:
            suite.body.close()
