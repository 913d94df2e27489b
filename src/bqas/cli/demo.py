"""``bqas demo-assistant``: the tiny local assistant of the target examples (bqas.demo.assistant)."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``bqas demo-assistant`` to the app."""
    app.command("demo-assistant")(demo_assistant_cmd)


def demo_assistant_cmd(
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port on 127.0.0.1.")] = 8790,
    latency_ms: Annotated[float, typer.Option("--latency-ms", help="Wait this long before each answer.")] = 0.0,
    tenants: Annotated[
        bool,
        typer.Option(
            "--tenants", help="Also serve POST /tenant/chat: planted pupils' data per teacher (bqas redteam)."
        ),
    ] = False,
    leaky: Annotated[
        bool,
        typer.Option(
            "--leaky", help="With --tenants: a deliberately broken tenant filter that leaks (for red-team demos)."
        ),
    ] = False,
) -> None:
    """Serve a tiny rule-based German assistant on 127.0.0.1 to run target scenarios against.

    It recognises a few teacher intents (reminder, parent_letter, worksheet_generate …), answers in one
    sentence and is wrong on purpose now and then. POST /chat (JSON), /v1/chat/completions (OpenAI) and
    /v1/chat-messages (Dify). Stop it with Ctrl-C.

    Example (two commands; the first keeps serving in the background):

    \b
      bqas demo-assistant --port 8790 &
      bqas run scenarios/voice_de_target.yaml
    """
    if not 0 < port < 65536:
        typer.echo(f"error: --port: expected 1-65535, got {port}", err=True)
        raise typer.Exit(2)
    if leaky and not tenants:
        typer.echo("error: --leaky needs --tenants", err=True)
        raise typer.Exit(2)
    from bqas.demo.assistant import serve
    from bqas.demo.tenants import serve_tenants

    try:
        if tenants:
            serve_tenants(port, leaky=leaky, latency_ms=latency_ms)
        else:
            serve(port, latency_ms)
    except OSError as exc:
        typer.echo(f"error: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
