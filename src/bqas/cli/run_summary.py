"""How a run's figures look on the console: the summary tables of ``bqas run`` and ``bqas show``, the
assistant's line, the repeats and trust tables, and the console they are printed to."""

from __future__ import annotations

from typing import Any


def print_summary(
    summary: dict[str, Any],
    thresholds: list[dict[str, Any]],
    title: str,
    profiles: list[dict[str, Any]] | None = None,
) -> None:
    """The summary table of a run (verdicts, dimensions, totals, thresholds; trust-or-escalate coverage)."""
    from rich.table import Table

    from bqas.textsafe import console_text

    console = summary_console()
    table = Table(title=console_text(title))  # the scenario name is the user's text
    table.add_column("verdict")
    table.add_column("count", justify="right")
    for verdict in ("production_ready", "needs_review", "failed", "unscored"):
        table.add_row(verdict, str(summary["verdicts"].get(verdict, 0)))
    table.add_row("invalid samples", str(summary["invalid"]))
    if summary.get("judge_errors"):
        table.add_row("judging errors (--resume retries)", str(summary["judge_errors"]))
    if "target_errors" in summary:
        table.add_row("target errors", str(summary["target_errors"]))
    table.add_row("escalations", str(summary["escalations"]))
    console.print(table)
    console.print(dimensions_table(summary, console.width))
    cost = summary.get("cost_usd")
    console.print(
        f"LLM calls {summary['llm_calls']} · prompt tokens {summary['prompt_tokens']} · completion tokens "
        f"{summary['completion_tokens']} · cache hits {summary['cache_hits']} · cost "
        + (f"${cost:.4f}" if cost is not None else "n/a (no price configured)")
    )
    from bqas.runner.summary import gate_result_text, timing_text, unscored_lines

    for line in unscored_lines(summary.get("unscored_reasons") or []):
        console.print(line, markup=False)
    timing = timing_text(summary)
    if timing:
        console.print(timing, markup=False)
    if summary.get("target"):
        console.print(target_line(summary["target"]), markup=False)
    if thresholds:
        th = Table(title="thresholds")
        for col in ("gate", "expected", "actual", "result"):
            th.add_column(col)
        for t in thresholds:
            result = "[green]met[/]" if t["passed"] else f"[red]{gate_result_text(t)}[/]"
            th.add_row(t["name"], str(t["expected"]), "–" if t["actual"] is None else str(t["actual"]), result)
        console.print(th)
    if summary.get("trust"):
        _print_trust(console, summary["trust"], profiles or [])
    if summary.get("repeats"):
        _print_repeats(console, summary["repeats"])


def target_line(target: dict[str, Any]) -> str:
    """The assistant's own figures in one line: answers, errors, latency, tokens per answer."""
    lat = target["latency_ms"]
    line = (
        f"assistant: {target['answers']} answers · {target['errors']} target errors · latency p50 {_f(lat['p50'])} "
        f"/ p95 {_f(lat['p95'])} / max {_f(lat['max'])} ms"
    )
    ttft = target.get("ttft_ms") or {}
    if ttft.get("n"):
        line += f" · time to first token p50 {_f(ttft['p50'])} / p95 {_f(ttft['p95'])} / max {_f(ttft['max'])} ms"
    tokens = target.get("tokens") or {}
    if tokens:
        line += " · tokens per answer " + ", ".join(
            f"{name.removesuffix('_tokens')} {t['per_answer']:g}" for name, t in tokens.items()
        )
    if target.get("reused"):
        line += f" · {target['reused']} replies reused from an earlier run (their latency is that run's)"
    return line


#: Below this width the dimension table groups dimensions under their judge and leaves out std, min
#: and max (`bqas show RUN --json` has them), so that it fits an 80-column terminal.
_DIMENSIONS_FULL_WIDTH = 120


def plain_console() -> Any:
    """A console of the terminal's width; in a pipe or a CI log 80 columns unless COLUMNS says otherwise
    (the tables are laid out to fit 80)."""
    import os

    from rich.console import Console

    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        console = Console(width=80)
    return console


def summary_console() -> Any:
    """The console of a run's summary (see plain_console)."""
    return plain_console()


def dimensions_table(summary: dict[str, Any], width: int) -> Any:
    """Composite and dimension statistics; grouped by judge and without std/min/max below
    ``_DIMENSIONS_FULL_WIDTH`` columns."""
    from rich import box
    from rich.table import Table

    full = width >= _DIMENSIONS_FULL_WIDTH
    cols: tuple[str, ...] = ("dimension", "n", "mean", "std", "min", "max", "pass/fail", "not measured", "backend")
    if not full:
        cols = ("dimension", "n", "mean", "pass/fail", "not meas.", "backend")
    dims = Table(title="dimensions", box=box.HEAVY_HEAD if full else box.SIMPLE_HEAD)
    for col in cols:
        dims.add_column(col, justify="right" if col not in ("dimension", "backend") else "left")

    def row(name: str, d: dict[str, Any], gates: str, not_measured: str, backends: str) -> None:
        stats = [_f(d["mean"]), _f(d["std"]), _f(d["min"]), _f(d["max"])] if full else [_f(d["mean"])]
        dims.add_row(console_text(name), str(d["n"]), *stats, gates, not_measured, backends)

    from bqas.textsafe import console_text

    row("composite", summary["composite"], "", str(summary["partial"]) + " partial", "")
    judge = None
    for name, d in summary["dimensions"].items():
        gates = f"{d['pass']}/{d['fail']}" if d["pass"] or d["fail"] else ""
        shown = name
        if not full and "." in name:
            owner, shown = name.split(".", 1)
            if owner != judge:
                judge = owner
                dims.add_row(f"[bold]{console_text(owner)}[/]")
            shown = "  " + shown
        row(shown, d, gates, str(d["not_measured"]), ", ".join(d["backends"]))
    return dims


def _print_repeats(console: Any, repeats: dict[str, Any]) -> None:
    """Run-level figures over the repeats (mean ± std, min–max) and the samples whose verdicts straddle."""
    from rich.table import Table

    table = Table(title=f"{repeats['n']} repeats: figures per repeat (canonical verdict: {repeats['rule']})")
    for col in ("figure", "mean", "std", "min", "max", "per repeat"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    for name, f in repeats["figures"].items():
        values = " ".join(_f(v) for v in f["values"])
        table.add_row(name, _f(f["mean"]), _f(f["std"]), _f(f["min"]), _f(f["max"]), values)
    console.print(table)
    for name, gate in repeats["gates"].items():
        if gate["straddles"]:
            console.print(f"gate {name} straddles: met in {gate['met']} of {repeats['n']} repeats", markup=False)
    console.print(
        f"samples whose repeats straddle a verdict threshold: {repeats['straddling_samples']} "
        f"({repeats['ties_escalated']} ties escalated to a human)",
        markup=False,
    )
    if repeats.get("note"):
        console.print(f"note: {repeats['note']}", markup=False)


def _print_trust(console: Any, trust: dict[str, Any], profiles: list[dict[str, Any]]) -> None:
    """Who decided (per tier, per language) and the guaranteed bounds of the profiles in use."""
    from rich.table import Table

    table = Table(title="trust or escalate: decided by")
    for col in ("", "n", "offline", "llm", "human (escalated)"):
        table.add_column(col, justify="right" if col else "left")
    rows = [("all", trust["coverage"])] + [(f"language {k}", v) for k, v in trust["by_language"].items()]
    for name, c in rows:
        table.add_row(name, str(c["n"]), f"{c['offline']:.1%}", f"{c['llm']:.1%}", f"{c['human']:.1%}")
    console.print(table)
    from bqas.trust.summary import precision_line, side_statement

    for side, row in (trust.get("agreement") or {}).items():
        if row.get("decided"):
            console.print(f"this run, samples with labels: {precision_line(side, row)}", markup=False)
    for p in profiles:
        for t in p["tiers"]:
            console.print(
                f"profile {p['id']} · {t['tier']} (each bound with probability >= {1 - t['delta']:g}, n={p['n']}):",
                markup=False,
            )
            for side in ("accept", "reject"):
                console.print(f"  {side_statement(t, side)}", markup=False)


def _f(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)
