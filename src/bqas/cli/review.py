"""``bqas gold``: human review decisions as gold labels.

Heavy imports (the store, SQLAlchemy) happen inside the commands, so that ``bqas --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

gold_app = typer.Typer(help="Gold labels from the review queue (human decisions).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the ``bqas gold`` command group to the app."""
    app.add_typer(gold_app, name="gold")


@gold_app.command("export")
def export_cmd(
    tenant: Annotated[str, typer.Option("--tenant", "-t", help="Tenant whose reviewed items are exported.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSON Lines file ('-' for stdout).")],
    judge: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option("--judge", "-j", help="Only items of this judge, e.g. voice."),
    ] = None,
) -> None:
    """Write a tenant's reviewed items as gold JSONL in the scenario sample format.

    Example: bqas gold export --tenant acme --judge voice --out gold-voice.jsonl

    Each line: id, the judge's input fields, language, judge, expected {verdict, <dimension>: value, ...}
    and comment (plus source, review_id, reviewed_at, reviewer). Read it with
    `bqas calibrate --gold FILE` or straight from the store with `bqas calibrate --gold store:TENANT`.
    Exit 0 on success (also when nothing was reviewed yet), 2 on a usage error.
    """
    from bqas.review.gold import iter_gold
    from bqas.store.db import open_store

    tenant = tenant.strip()
    if not tenant:
        typer.echo("error: --tenant: expected a tenant name", err=True)
        raise typer.Exit(2)
    store = open_store()
    count = missing = 0
    try:
        handle = sys.stdout if str(out) == "-" else out.open("w", encoding="utf-8")
    except OSError as exc:
        typer.echo(f"error: --out {out}: cannot write: {exc.strerror}", err=True)
        raise typer.Exit(2) from None
    try:
        for line in iter_gold(store, tenant, judge):
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
            missing += 0 if line.get("review_id") is None or _has_inputs(line) else 1
    finally:
        if handle is not sys.stdout:
            handle.close()
    where = "stdout" if str(out) == "-" else str(out)
    scope = f"tenant {tenant}" + (f", judge {judge}" if judge else "")
    typer.echo(f"{count} gold label(s) of {scope} written to {where}", err=True)
    if count == 0:
        typer.echo("warning: no reviewed items yet (review them on the review page first)", err=True)
    if missing:
        typer.echo(f"warning: {missing} label(s) have no stored inputs; calibrate will skip them", err=True)


_META = {"id", "language", "judge", "expected", "comment", "source", "review_id", "reviewed_at", "reviewer"}


def _has_inputs(line: dict[str, object]) -> bool:
    return any(key not in _META for key in line)
