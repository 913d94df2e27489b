"""``bqas runs``: the stored runs, newest first, in a table that fits 80 columns."""

from __future__ import annotations

import json

import typer

from bqas.cli.run_store import _store
from bqas.cli.run_summary import plain_console

#: Below this console width `bqas runs` leaves out the verdict counts (`bqas show RUN` has them).
_RUNS_VERDICTS_WIDTH = 110
_VERDICT_SHORT = {"production_ready": "ready", "needs_review": "review", "failed": "failed", "unscored": "unscored"}


def list_runs(limit: int, as_json: bool, verbose: bool = False) -> None:
    from rich import box
    from rich.table import Table

    from bqas.review.categories import new_categories
    from bqas.runner.lease import display_status
    from bqas.runner.summary import gate_state
    from bqas.textsafe import console_text

    store = _store()
    runs = store.list_runs(limit)
    oldest = min((r.started_at for r in runs if r.started_at), default=None)
    categories = new_categories(store, since=oldest, limit=200 if verbose else 1000) if oldest else []
    rows = [
        {
            "id": r.id,
            "kind": r.kind,
            "scenario": r.scenario,
            "status": display_status(r),
            "total": r.total,
            "started_at": r.started_at.isoformat() if r.started_at else None,
            "verdicts": (r.summary or {}).get("verdicts", {}),
            "pass_rate": (r.summary or {}).get("pass_rate"),
            "gate": gate_state(r.summary),
        }
        for r in runs
    ]
    for row in rows:
        if row["status"] == "interrupted" and row["kind"] == "scenario":
            row["resume"] = f"bqas run --resume {row['id']}"
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    console = plain_console()
    wide = console.width >= _RUNS_VERDICTS_WIDTH
    cells_of: list[dict[str, str]] = []
    for row in rows:
        cells = {
            "id": console_text(row["id"]),  # names are data: no markup, no control characters
            "scenario": console_text(row["scenario"]),
            "status": console_text(row["status"]),
            "n": str(row["total"]),
            "pass": "–" if row["pass_rate"] is None else f"{100 * row['pass_rate']:.0f} %",
            "gate": row["gate"],
            "verdicts": console_text(" ".join(f"{_VERDICT_SHORT.get(k, k)} {v}" for k, v in row["verdicts"].items())),
            "started": str(row["started_at"])[5:16].replace("T", " ") if row["started_at"] else "–",
        }
        cells_of.append(cells)
    names = ["id", "scenario", "status", "n", "pass", "gate", *(["verdicts"] if wide else []), "started"]
    widths = {n: max([len(n), *(len(c[n]) for c in cells_of)]) for n in names}
    # No vertical rules and no edge, two spaces between columns: the columns fit 80 characters. Ids stay
    # whole (people copy them), and so does the start time; where the scenario names do not fit, the
    # least useful columns go first (the sample count, then the pass rate: `bqas show` has both), else
    # the scenario name is shortened with "…".
    gap = 2

    def room(columns: list[str]) -> int:
        return int(console.width) - sum(widths[n] for n in columns if n != "scenario") - gap * (len(columns) - 1)

    # Only where that lets the names fit whole; else every column stays and the names are shortened.
    for dropped in (["n"], ["n", "pass"]):
        fewer = [n for n in names if n not in dropped]
        if room(names) < widths["scenario"] <= room(fewer):
            names = fewer
            break
    table = Table(
        # SIMPLE_HEAD draws a blank between columns: with one space of padding that is the gap of two.
        title="runs",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, gap - 1, 0, 0),
    )
    left = room(names)
    for name in names:
        if name == "scenario":
            table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=max(8, left))
        else:
            table.add_column(
                name, no_wrap=True, min_width=widths[name], justify="right" if name in ("n", "pass") else "left"
            )
    colour = {"met": "[green]met[/]", "missed": "[red]missed[/]"}
    for cells in cells_of:
        table.add_row(*(colour.get(cells[n], cells[n]) if n == "gate" else cells[n] for n in names))
    console.print(table)
    console.print(_store_line(), soft_wrap=True, markup=False)
    for row in rows:
        if "resume" in row:
            console.print(f"interrupted: {row['id']} — resume with `{row['resume']}`", soft_wrap=True, markup=False)
    if categories and not verbose:
        console.print(
            f"{len(categories)} new error categor{'y' if len(categories) == 1 else 'ies'} first seen during these "
            "runs: `bqas runs --verbose` lists them, `bqas review` shows the cases",
            markup=False,
        )
    elif categories:
        # New error categories of the review loop (judge policy: "Neue Fehlerkategorien: Feedback an Entwicklung").
        console.print("[bold]new error categories[/] (first seen during these runs):")
        for cat in categories:
            line = f"  {cat.first_seen[:19]}  {cat.tenant}/{cat.judge}: {cat.category}  (e.g. {cat.response_id})"
            console.print(console_text(line))  # ids are untrusted text


def _store_line() -> str:
    """Which store a listing reads, and why that one (BQAS_HOME, the project's .bqas/, the user's)."""
    from bqas.settings import get_settings, home_origin
    from bqas.store.db import store_name
    from bqas.textsafe import printable

    settings = get_settings()
    return f"store: {printable(store_name(settings.resolved_database_url()))} ({home_origin(settings)})"
