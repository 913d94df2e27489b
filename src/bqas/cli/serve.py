"""``bqas serve`` (HTTP scoring service), ``bqas worker`` (job workers without HTTP), ``bqas keys``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

# Not 8000: that is the port of vLLM, llama.cpp's server examples and the README's LLM endpoint.
DEFAULT_PORT = 8765
keys_app = typer.Typer(help="API keys of tenants (stored hashed in the BQAS store).", no_args_is_help=True)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _service_settings(backend: str | None) -> object:
    from pydantic import ValidationError

    from bqas.service.config import ServiceSettings

    try:
        service = ServiceSettings()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _fail(f"setting BQAS_{str(first['loc'][0]).upper()}: {first['msg']}") from None
    if backend is not None:
        if backend not in ("offline", "llm", "auto"):
            raise _fail(f"--backend: expected offline, llm or auto, got {backend!r}")
        service.service_backend = backend  # type: ignore[assignment]
    return service


def _start_local_engine(gguf: Path | None) -> None:
    """Start the embedded engine before the service listens (loading a model blocks for seconds, which must
    not happen inside a request); the service's backends then find it running."""
    import os

    from bqas.settings import get_settings

    if gguf is not None:
        os.environ["BQAS_LLM_GGUF"] = str(gguf)
        get_settings.cache_clear()
    settings = get_settings()
    if settings.llm_gguf is None:
        return
    from bqas.judging.factory import local_model
    from bqas.llm.local import local_engine

    typer.echo(f"bqas serve: starting the embedded llama.cpp engine for {settings.llm_gguf} …", err=True)
    try:
        model = local_model(settings)
        assert model is not None
        engine = local_engine(model)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    typer.echo(
        f"bqas serve: engine ready in {engine.start_seconds:.1f} s: {engine.name} at {engine.base_url}"
        f" ({engine.model.threads} threads, {engine.model.slots} slots)",
        err=True,
    )


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", "-p", help="Port to listen on (8000 is left to LLM servers such as vLLM).")
    ] = DEFAULT_PORT,
    public_url: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option(
            "--public-url",
            help="URL clients reach the service at, written into the OpenAPI 'servers' (Dify needs it); "
            "default: http://HOST:PORT (env BQAS_PUBLIC_URL).",
        ),
    ] = None,
    backend: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--backend", help="Default backend of requests that name none: offline, llm or auto."),
    ] = None,
    no_worker: Annotated[
        bool, typer.Option("--no-worker", help="Serve HTTP only; run async jobs with `bqas worker` processes.")
    ] = False,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
    llm_gguf: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--llm-gguf",
            metavar="PATH",
            help="Judge the llm and auto backends with this local GGUF model in an embedded llama.cpp engine "
            "(pip install 'bqas[local]'; env BQAS_LLM_GGUF).",
        ),
    ] = None,
) -> None:
    """Start the scoring service (FastAPI under uvicorn) with an in-process job worker.

    Example: bqas keys create acme && bqas serve --host 0.0.0.0 --port 8080 --public-url https://bqas.example.org
    """
    import time

    # Say what happens while it starts: imports, the store and the model load take seconds on a slow disk.
    started = time.perf_counter()
    typer.echo("bqas serve: starting (loading the service) …", err=True)
    import uvicorn

    from bqas.service.app import create_app
    from bqas.service.config import ServiceSettings
    from bqas.service.server import server_config

    service = _service_settings(backend)
    assert isinstance(service, ServiceSettings)
    _start_local_engine(llm_gguf)
    url = public_url or service.public_url or f"http://{host}:{port}"
    typer.echo("bqas serve: opening the store and checking its schema …", err=True)
    try:
        app = create_app(service=service, run_worker=not no_worker, public_url=url)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    typer.echo(
        f"bqas serve: ready to listen on http://{host}:{port} after {time.perf_counter() - started:.1f} s;"
        " the models load in the background (/healthz says models: ready when done)",
        err=True,
    )
    config = server_config(
        app, service, host=host, port=port, log_level=log_level, access_log=False, timeout_graceful_shutdown=5
    )
    uvicorn.Server(config).run()


def worker(
    concurrency: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--concurrency", "-c", help="Jobs processed at once (env BQAS_WORKER_CONCURRENCY)."),
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Process the queued jobs, then exit.")] = False,
) -> None:
    """Run job workers without HTTP, against the store of BQAS_DATABASE_URL (several may share PostgreSQL).

    Example: BQAS_DATABASE_URL=postgresql+psycopg://bqas@db/bqas bqas worker --concurrency 8
    """
    import asyncio
    import signal

    from bqas.service.config import ServiceSettings
    from bqas.service.scoring import Scorer
    from bqas.service.worker import JobWorker
    from bqas.settings import get_settings
    from bqas.store.db import open_store

    service = _service_settings(None)
    assert isinstance(service, ServiceSettings)
    if concurrency is not None:
        if concurrency < 1:
            raise _fail("--concurrency: expected at least 1")
        service.worker_concurrency = concurrency
    settings = get_settings()
    from bqas.review.settings import get_review_settings

    async def main() -> None:
        store = open_store(settings.resolved_database_url())
        scorer = Scorer(settings, service)
        job_worker = JobWorker(store, scorer, service, review=get_review_settings().review)
        try:
            if once:
                count = await job_worker.run_until_idle()
                typer.echo(f"processed {count} job(s)")
                return
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            typer.echo(f"worker {job_worker.name} waiting for jobs", err=True)
            await job_worker.run(stop)
        finally:
            await scorer.aclose()

    asyncio.run(main())


@keys_app.command("create")
def keys_create(tenant: Annotated[str, typer.Argument(metavar="TENANT", help="Tenant name, e.g. acme.")]) -> None:
    """Create an API key for TENANT and print it (shown once; only its hash is stored).

    Example: bqas keys create acme
    """
    from bqas.store.db import open_store
    from bqas.store.service import create_api_key

    try:
        key = create_api_key(open_store(), tenant)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    typer.echo(key)


@keys_app.command("list")
def keys_list() -> None:
    """List API keys: tenant, key prefix, fingerprint, creation date, revoked (never the keys).

    The fingerprint is what the review page and gold exports show as the reviewer.

    Example: bqas keys list
    """
    from bqas.store.db import open_store
    from bqas.store.service import list_api_keys

    for row in list_api_keys(open_store()):
        state = "revoked" if row["revoked"] else "active"
        typer.echo(f"{row['tenant']}\t{row['prefix']}…\t{row['fingerprint']}\t{row['created_at']}\t{state}")


@keys_app.command("revoke")
def keys_revoke(
    prefix: Annotated[str, typer.Argument(metavar="PREFIX", help="Key prefix as shown by `bqas keys list`.")],
) -> None:
    """Revoke the keys whose prefix starts with PREFIX (running servers notice within 30 s).

    Example: bqas keys revoke bqas_Ab3dE
    """
    from bqas.store.db import open_store
    from bqas.store.service import revoke_api_keys

    try:
        count = revoke_api_keys(open_store(), prefix)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if count == 0:
        raise _fail(f"no active key with prefix {prefix!r}")
    typer.echo(f"revoked {count} key(s)")


def register(app: typer.Typer) -> None:
    """Add ``serve``, ``worker`` and ``keys`` to the ``bqas`` command line."""
    app.command("serve")(serve)
    app.command("worker")(worker)
    app.add_typer(keys_app, name="keys")
