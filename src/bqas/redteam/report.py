"""The report files of a red-team run: Markdown (also the CI job summary) and JUnit XML."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from bqas.redteam.summary import Cell, RedteamSummary
from bqas.textsafe import clean_text, markdown_text


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _cell(cell: Cell | None) -> str:
    if cell is None or not cell.attacks:
        return ""
    return f"{_pct(cell.success_rate)} ({cell.successes}/{cell.graded})"


def _md(text: Any, limit: int = 160) -> str:
    """Target replies and attack texts are untrusted: shown as text in a table cell, never as markup
    (GitHub renders a job summary's HTML, links and @mentions)."""
    return markdown_text(" ".join(clean_text(text).split()), limit)


def redteam_markdown(meta: dict[str, Any], summary: RedteamSummary, gates: list[dict[str, Any]]) -> str:
    """The report: gates, the plugin × strategy table, leaked canaries with evidence, successful attacks."""
    passed = all(g["passed"] for g in gates)
    total = summary.total
    lines = [
        f"## BQAS red team: {_md(meta.get('scenario'))} {'✅ passed' if passed else '❌ failed'}",
        "",
        f"Run `{meta.get('id')}` · {total.attacks} attacks · attack success {_pct(total.success_rate)} "
        f"({total.successes}/{total.graded} graded) · refused {_pct(total.refusal_rate)} "
        f"({total.refused}/{total.answered} answered) · target errors {total.target_errors} · "
        f"unscored {total.unscored} · canary leaks {summary.canary_leaks}",
        "",
        "| Gate | Limit | Actual | |",
        "|---|---|---|---|",
    ]
    for g in gates:
        actual = g["actual"]
        shown = "n/a" if actual is None else _pct(actual) if "attack_success" in g["name"] else str(actual)
        limit = _pct(g["expected"]) if "attack_success" in g["name"] else str(g["expected"])
        lines.append(f"| {g['name']} | {limit} | {shown} | {'✅' if g['passed'] else '❌'} |")
    strategies = sorted(summary.strategies)
    lines += ["", "### Attack success per plugin × strategy", "",
              "| Plugin | Severity | " + " | ".join(strategies) + " | All | Refused |",
              "|---|---|" + "---|" * (len(strategies) + 2)]  # fmt: skip
    for plugin in sorted(summary.plugins):
        row = [_cell(summary.cells.get((plugin, s))) for s in strategies]
        cell = summary.plugins[plugin]
        severity = _md(summary.severity.get(plugin, ""))
        lines.append(
            f"| {plugin} | {severity} | " + " | ".join(row) + f" | {_cell(cell)} | {_pct(cell.refusal_rate)} |"
        )
    row = [_cell(summary.strategies.get(s)) for s in strategies]
    lines.append("| **All** | | " + " | ".join(row) + f" | {_cell(total)} | {_pct(total.refusal_rate)} |")
    if summary.graders:
        graded = ", ".join(f"{name}: {n}" for name, n in sorted(summary.graders.items()))
        lines += ["", f"Graded by: {graded}."]
    if summary.leaked:
        lines += ["", "### Leaked canaries", "", "| Tenant | Kind | Canary | Attacks | Found as | First attack | Evidence |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for e in sorted(summary.leaked.values(), key=lambda e: (-e["attacks"], str(e["value"]))):
            owner = e["tenant"] if e["tenant"] is not None else "(system prompt)"
            lines.append(
                f"| {_md(owner)} | {_md(e['kind'])} | {_md(e['value'])} | {e['attacks']} | {_md(e['how'])} | "
                f"{_md(e['first'])} | {_md(e['excerpt'])} |"
            )
    if summary.successes:
        lines += ["", "### Successful attacks (first 50)", "", "| Attack | Tenant | Last turn sent | Evidence |",
                  "|---|---|---|---|"]  # fmt: skip
        for r in summary.successes:
            evidence = "; ".join(_evidence(e) for e in r.get("evidence") or [])
            lines.append(
                f"| {_md(r.get('sample_id'))} | {_md(r.get('tenant'))} | {_md((r.get('turns') or [''])[-1], 120)} | {_md(evidence, 240)} |"
            )
    if summary.errors:
        lines += ["", "### Target errors (first 50)", ""]
        lines += [f"- {_md(r.get('sample_id'))}: {_md(r.get('error'), 200)}" for r in summary.errors]
    return "\n".join(lines) + "\n"


def _evidence(e: dict[str, Any]) -> str:
    if "value" in e:
        owner = e.get("tenant") or "system prompt"
        return f"canary {e['value']!r} of {owner} ({e.get('how')}, turn {e.get('turn')}): {e.get('excerpt')}"
    if "marker" in e:
        return f"marker {e['marker']!r} (turn {e.get('turn')}): {e.get('excerpt')}"
    if "confirms" in e:
        return f"confirms sending to {e.get('address')} (turn {e.get('turn')}): {e.get('excerpt')}"
    if "rule" in e:
        return f"rule {e['rule']!r} (turn {e.get('turn')}): {e.get('excerpt')}"
    return f"{e.get('judge')} {e.get('method')} (turn {e.get('turn')}): {e.get('note')}"


def _attr(value: Any) -> str:
    return escape(clean_text(value), {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def write_junit(path: Path, scenario: str, records: Iterable[dict[str, Any]], gates: list[dict[str, Any]]) -> None:
    """One ``<testsuite>`` per plugin (a testcase per attack: failure = the attack succeeded, error = target
    error, skipped = unscored) and ``bqas.<scenario>.redteam-gates`` with one testcase per gate."""
    suites: dict[str, list[str]] = {}
    counts: dict[str, list[int]] = {}
    for r in records:
        plugin = str(r.get("plugin"))
        cases = suites.setdefault(plugin, [])
        count = counts.setdefault(plugin, [0, 0, 0, 0])  # tests, failures, errors, skipped
        count[0] += 1
        head = f'<testcase classname="bqas.{_attr(scenario)}.{_attr(plugin)}" name="{_attr(r.get("sample_id"))}">'
        if r.get("status") == "target_error":
            count[2] += 1
            body = f'<error message="{_attr(str(r.get("error"))[:500])}"/>'
        elif r.get("status") == "unscored":
            count[3] += 1
            body = f'<skipped message="{_attr(r.get("note") or "unscored")}"/>'
        elif r.get("success"):
            count[1] += 1
            evidence = "; ".join(_evidence(e) for e in r.get("evidence") or [])
            body = (f'<failure message="{_attr(("attack succeeded: " + evidence)[:500])}">'
                    f"{escape(clean_text(evidence))}</failure>")  # fmt: skip
        else:
            body = ""
        cases.append(f"    {head}{body}</testcase>")
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for plugin in sorted(suites):
        tests, failures, errors, skipped = counts[plugin]
        out.append(f'  <testsuite name="bqas.{_attr(scenario)}.{_attr(plugin)}" tests="{tests}" '
                   f'failures="{failures}" errors="{errors}" skipped="{skipped}">')  # fmt: skip
        out += suites[plugin]
        out.append("  </testsuite>")
    failed = sum(not g["passed"] for g in gates)
    out.append(
        f'  <testsuite name="bqas.{_attr(scenario)}.redteam-gates" tests="{len(gates)}" failures="{failed}" errors="0" skipped="0">'
    )
    for g in gates:
        message = f"{g['name']}: {g['actual']} (limit {g['expected']})"
        body = "" if g["passed"] else f'<failure message="{_attr(message)}"/>'
        out.append(
            f'    <testcase classname="bqas.{_attr(scenario)}.redteam-gates" name="{_attr(g["name"])}">{body}</testcase>'
        )
    out += ["  </testsuite>", "</testsuites>", ""]
    path.write_text("\n".join(out), encoding="utf-8")
