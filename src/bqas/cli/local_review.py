"""``bqas review``: open the review queue of local runs (what ``bqas run`` escalated) in the browser."""

from __future__ import annotations

from typing import Annotated

import typer

DEFAULT_REVIEW_PORT = 8766


def review(
    port: Annotated[int, typer.Option("--port", "-p", help="Port on 127.0.0.1 (0: any free port).")] = (
        DEFAULT_REVIEW_PORT
    ),
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open the start link in a browser.")] = True,
) -> None:
    """Serve the review page for the escalations of `bqas run` (tenant @local) on 127.0.0.1.

    Example: bqas run scenarios/voice_de.yaml && bqas review

    Prints a one-time start link (and a key for later logins that is valid while this command runs).
    Service tenants never see these items; their reviewers use `bqas serve` and /review with their key.
    Gold labels: bqas gold export --tenant @local --out gold.jsonl
    """
    import socket
    import webbrowser

    import uvicorn

    from bqas.auth.tenants import LOCAL_TENANT
    from bqas.review.local import LocalReview
    from bqas.review.queue import status_counts
    from bqas.store.db import open_store

    store = open_store()
    local = LocalReview(store)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        typer.echo(f"error: --port {port}: cannot listen on 127.0.0.1:{port}: {exc.strerror}", err=True)
        raise typer.Exit(2) from None
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    counts = status_counts(store, LOCAL_TENANT)
    typer.echo(f"{counts.get('open', 0)} open item(s) in the review queue of local runs (tenant {LOCAL_TENANT})")
    typer.echo(f"open: {url}{local.start_path}   (works once)")
    typer.echo(f"later logins at {url}/review/login with the key {local.key}   (valid while this runs)")
    typer.echo("stop with Ctrl+C")
    if open_browser:
        webbrowser.open(f"{url}{local.start_path}")
    config = uvicorn.Config(local.app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])


def register(app: typer.Typer) -> None:
    """Add ``bqas review`` to the ``bqas`` command line."""
    app.command("review")(review)
