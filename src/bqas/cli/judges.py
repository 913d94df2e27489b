"""``bqas judges``: list judges, their inputs and output dimensions, or print one prompt."""

from __future__ import annotations

import json

import typer

from bqas.judgment.spec import JudgeSpec, default_registry
from bqas.settings import check_language, get_settings


def _dimension_text(spec: JudgeSpec) -> list[str]:
    out = []
    for dim in spec.dimensions.values():
        if dim.kind == "score":
            out.append(f"{dim.name} {dim.minimum:g}-{dim.maximum:g}")
        elif dim.kind == "gate":
            out.append(f"{dim.name} pass|fail")
        else:
            out.append(f"{dim.name} ({dim.kind})")
    return out


def list_judges(language: str | None, as_json: bool, show_prompt: str | None) -> None:
    """Print the registry in the chosen language."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    try:
        lang = check_language(language or get_settings().language)
        registry = default_registry()
        if show_prompt:
            spec = registry.get(show_prompt)
    except (ValueError, KeyError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if show_prompt:
        text, used = spec.template_for(lang)
        if used != lang:
            typer.echo(f"warning: {spec.name} has no {lang} prompt; showing {used}", err=True)
        typer.echo(text)
        return
    rows = []
    for spec in registry:
        _text, used = spec.template_for(lang)
        rows.append(
            {
                "name": spec.name,
                "kind": spec.kind,
                "seed_prompt": spec.seed_prompt,
                "languages": sorted(spec.templates),
                "prompt_language": used,
                "inputs": list(spec.inputs),
                "outputs": _dimension_text(spec),
                "gates": list(spec.scoring.gates) if spec.scoring else [],
                "description": spec.description,
            }
        )
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    table = Table(title=f"BQAS judges (prompt language: {lang})", show_lines=True)
    # Judge and input names are what users type into samples and --map: never cut them (at 80 columns
    # too). Kind, languages and the description go under the name; outputs wrap, long words fold.
    longest = max((len(name) for row in rows for name in (row["name"], *row["inputs"])), default=5)
    table.add_column("judge", min_width=longest, overflow="fold")
    table.add_column("inputs", min_width=longest, overflow="fold")
    table.add_column("outputs", overflow="fold")
    for row in rows:
        langs = ", ".join(row["languages"]) + (
            "" if row["prompt_language"] == lang else f" (falls back to {row['prompt_language']})"
        )
        table.add_row(
            f"[bold]{escape(row['name'])}[/bold]\n{escape(str(row['kind']))} · {escape(langs)}\n"
            f"[dim]{escape(row['description'])}[/dim]",
            escape("\n".join(row["inputs"])),
            escape("\n".join(row["outputs"])),
        )
    Console().print(table)
