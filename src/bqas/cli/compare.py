"""``bqas compare``: two stored runs side by side, paired by sample."""

from __future__ import annotations

import json

import typer

from bqas.cli.run_store import _store
from bqas.cli.run_summary import _f


def compare(
    run_a: str, run_b: str, max_drop: float, max_worse: int | None, as_json: bool, strict: bool = False
) -> None:
    """Implementation of ``bqas compare``: warns (``--strict``: exit 2) when the runs judged different data
    or with different prompts, policy, backend or model."""
    from rich.console import Console
    from rich.table import Table

    from bqas.runner.compare import compare_runs
    from bqas.runner.hashes import hash_differences
    from bqas.runner.run import settled_records
    from bqas.textsafe import console_text

    store = _store()
    a, b = store.find_run(run_a), store.find_run(run_b)
    for given, run in ((run_a, a), (run_b, b)):
        if run is None:
            typer.echo(f"error: {store.missing_run(given)}", err=True)
            raise typer.Exit(2)
    assert a is not None and b is not None
    mismatch = hash_differences(a.config, b.config)
    for line in mismatch if strict or not as_json else ():  # --json carries them under "warnings"
        typer.echo(f"{'error' if strict else 'warning'}: {line}", err=True)
    if mismatch and strict:
        typer.echo("error: --strict: the runs are not comparable", err=True)
        raise typer.Exit(2)
    result = compare_runs(settled_records(store, a.id), settled_records(store, b.id))
    if result.matched == 0:
        # Nothing to pair: no difference and no regression can be measured, which is no pass.
        typer.echo(
            f"error: {a.id} and {b.id} have no sample in common (by sample id and judge; only in A: "
            f"{result.only_a}, only in B: {result.only_b}): compare two runs of the same dataset",
            err=True,
        )
        raise typer.Exit(2)
    regressed = result.regressions(max_drop, max_worse)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "a": a.id,
                    "b": b.id,
                    "matched": result.matched,
                    "only_a": result.only_a,
                    "only_b": result.only_b,
                    "removed_samples": result.removed,
                    "dimensions": [d.__dict__ for d in result.dimensions],
                    "changes": result.changes,
                    "regressions": regressed,
                    "warnings": mismatch,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        console = Console()
        table = Table(title=f"{b.id} vs {a.id} (B − A, paired over {result.matched} samples; 95 % bootstrap CI)")
        for col in ("dimension", "n", "mean A", "mean B", "Δ", "CI low", "CI high"):
            table.add_column(col)
        for d in result.dimensions:
            table.add_row(
                d.name, str(d.n), f"{d.mean_a:.2f}", f"{d.mean_b:.2f}", f"{d.diff:+.2f}", _f(d.ci_low), _f(d.ci_high)
            )
        console.print(table)
        console.print(
            f"verdict changes: {len(result.changes)} ({len(result.worse)} worse); "
            f"only in A: {result.only_a}, only in B: {result.only_b}; samples removed: {len(result.removed)}"
        )
        for change in result.changes[:50]:
            console.print(console_text(f"  {change['key']}: {change['from']} → {change['to']} ({change['direction']})"))
        for line in regressed:
            console.print(f"[red]regression:[/] {line}")
    if regressed:
        raise typer.Exit(1)
