"""``bqas review`` (the review queue of what ``bqas run`` escalated) and ``bqas view`` (the results viewer
over stored runs), both served on 127.0.0.1 behind a start link that is valid while the command runs."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from fastapi import FastAPI

DEFAULT_REVIEW_PORT = 8766
DEFAULT_VIEW_PORT = 8767


def review(
    port: Annotated[int, typer.Option("--port", "-p", help="Port on 127.0.0.1 (0: any free port).")] = (
        DEFAULT_REVIEW_PORT
    ),
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open the start link in a browser.")] = True,
) -> None:
    """Serve the review page for the escalations of `bqas run` (tenant @local) on 127.0.0.1.

    Example: bqas run scenarios/voice_de.yaml && bqas review

    Prints a start link that logs a browser in (any tab or browser, while this command runs) and a key for
    the login page.
    Service tenants never see these items; their reviewers use `bqas serve` and /review with their key.
    Gold labels: bqas gold export --tenant @local --out gold.jsonl
    """
    from bqas.cli.steps import step

    with step("loading the review pages and opening the store"):
        from bqas.review.local import LocalReview
        from bqas.review.queue import status_counts
        from bqas.store.db import open_store
        from bqas.tenants import LOCAL_TENANT

        store = open_store()
        local = LocalReview(store)
    sock = _listen(port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    counts = status_counts(store, LOCAL_TENANT)
    typer.echo(f"{counts.get('open', 0)} open item(s) in the review queue of local runs (tenant {LOCAL_TENANT})")
    _serve(local.app, sock, url, local.start_path, local.key, open_browser)


def view(
    runs: Annotated[
        list[str] | None,
        typer.Argument(metavar="RUN", help="Run ids (or unique prefixes): one opens it, two compare A and B."),
    ] = None,
    port: Annotated[int, typer.Option("--port", "-p", help="Port on 127.0.0.1 (0: any free port).")] = (
        DEFAULT_VIEW_PORT
    ),
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open the start link in a browser.")] = True,
) -> None:
    """Open the results viewer over the stored runs on 127.0.0.1: every sample with search, filters and sort.

    Examples: bqas view  ·  bqas view r-20261201-0900-ab12  ·  bqas view RUN_A RUN_B  (compare)

    Prints a start link that logs a browser in (any tab or browser, while this command runs) and a key for
    the login page.
    """
    from urllib.parse import urlencode

    from bqas.cli.steps import step

    given = list(runs or [])
    if len(given) > 2:
        typer.echo("error: RUN: give at most two runs (one to open, two to compare)", err=True)
        raise typer.Exit(2)
    with step("loading the results viewer and opening the store"):
        from bqas.review.local import LocalReview
        from bqas.review.settings import get_review_settings
        from bqas.store.db import open_store

        store = open_store()
    ids = []
    for prefix in given:
        run = store.find_run(prefix)
        if run is None:
            typer.echo(f"error: RUN {prefix!r}: {store.missing_run(prefix)}", err=True)
            raise typer.Exit(2)
        ids.append(run.id)
    base = get_review_settings().review_path.rstrip("/") + "/runs"
    if len(ids) == 2:
        landing = f"{base}/compare?" + urlencode({"a": ids[0], "b": ids[1]})
    elif ids:
        landing = f"{base}/{ids[0]}"
    else:
        landing = base
    local = LocalReview(store, landing=landing)
    sock = _listen(port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    typer.echo(f"results viewer over {len(store.list_runs(limit=10_000))} stored run(s)")
    _serve(local.app, sock, url, local.start_path, local.key, open_browser)


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        typer.echo(f"error: --port {port}: cannot listen on 127.0.0.1:{port}: {exc.strerror}", err=True)
        raise typer.Exit(2) from None
    return sock


def _serve(app: FastAPI, sock: socket.socket, url: str, start: str, key: str, open_browser: bool) -> None:
    import webbrowser

    import uvicorn

    typer.echo(f"open: {url}{start}   (logs a browser in while this runs)")
    typer.echo(f"or log in at {url}/review/login with the key {key}")
    typer.echo("stop with Ctrl+C")
    if open_browser:
        webbrowser.open(f"{url}{start}")
    from bqas.service.server import server_config

    config = server_config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])


def register(app: typer.Typer) -> None:
    """Add ``bqas review`` and ``bqas view`` to the ``bqas`` command line."""
    app.command("review")(review)
    app.command("view")(view)
