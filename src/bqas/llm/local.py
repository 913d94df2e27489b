"""An embedded llama.cpp engine for a local GGUF model, served on a free loopback port.

``BQAS_LLM_GGUF=/path/model.gguf`` (or ``--llm-gguf``, or ``llm: {gguf: …}`` in a scenario) starts
llama.cpp's OpenAI-compatible server inside this process (the ``xllamacpp`` package, ``pip install
'bqas[local]'``) and points the one LLM client at it: the judges talk to it over HTTP on 127.0.0.1 like
to any other server, with the same cache, concurrency limit, token accounting and structured-output
negotiation.

One engine per model file and settings per process (:func:`local_engine`): a second run, a service's
backends and the tests share it and its slots. It stops when the process ends.
"""

from __future__ import annotations

import importlib.metadata
import os
import secrets
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Tokens per request slot. A judge prompt is 600-1,500 tokens with its inputs (Chinese text takes more
# tokens than German or English in most vocabularies) plus a reply of up to 1,000 tokens.
DEFAULT_CTX = 4096
# Requests the engine decodes together. On a CPU more slots add little throughput and each holds its
# own context memory; the client's concurrency limit follows the slots.
DEFAULT_SLOTS = 2
GGUF_MAGIC = b"GGUF"
INSTALL_HINT = "pip install 'bqas[local]'"


class LocalEngineError(ValueError):
    """The embedded engine cannot start: the extra is missing, or the file is not a usable GGUF model."""


def default_threads() -> int:
    """Half the CPUs this process may use (one per physical core where cores run two hardware threads), at
    least 1: more threads than cores only wait for each other."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus // 2)


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file and how to run it: ``n_ctx`` tokens per request, ``threads`` CPU threads, ``slots``
    requests at once. ``threads=None`` means :func:`default_threads`."""

    path: Path
    n_ctx: int = DEFAULT_CTX
    threads: int | None = None
    slots: int = DEFAULT_SLOTS

    def resolved(self) -> LocalModel:
        """The same model with an absolute path and the thread count filled in (the engine's key)."""
        return LocalModel(self.path.expanduser().resolve(), self.n_ctx, self.threads or default_threads(), self.slots)


def check_gguf(path: Path) -> Path:
    """``path`` if it is a readable GGUF file; :class:`LocalEngineError` naming the file otherwise.

    Only a regular file is opened: a FIFO or a device would block the read (or never end it)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise LocalEngineError(f"GGUF model file not found: {path}") from None
    except OSError as exc:
        raise LocalEngineError(f"{path}: cannot read the GGUF model file: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise LocalEngineError(f"{path}: is a folder; give the .gguf model file")
    if not stat.S_ISREG(mode):
        raise LocalEngineError(f"{path}: not a regular file (a pipe, socket or device); give the .gguf model file")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        raise LocalEngineError(f"GGUF model file not found: {path}") from None
    except IsADirectoryError:
        raise LocalEngineError(f"{path}: is a folder; give the .gguf model file") from None
    except OSError as exc:
        raise LocalEngineError(f"{path}: cannot read the GGUF model file: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise LocalEngineError(f"{path}: not a GGUF model file (it does not start with 'GGUF')")
    return path


def model_name(path: Path) -> str:
    """The model's name in requests, results and reports: the file name without ``.gguf``."""
    return path.name[: -len(".gguf")] if path.name.lower().endswith(".gguf") else path.name


def _xllamacpp() -> Any:
    """The llama.cpp binding, imported on first use (a run without a local model never loads it)."""
    if "xllamacpp" not in sys.modules:
        # llama.cpp's CPU threads wait for each other between operations. OpenMP's default is to spin while
        # waiting, which on a CPU shared with other work made decoding about 10 times slower here (threads
        # spinning on a core that the thread they wait for needs); passive waiting costs nothing measurable
        # on an idle machine. Read once, when the OpenMP runtime loads with the binding; a user's setting wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalEngineError(
            f"a local GGUF model needs the embedded llama.cpp engine: {INSTALL_HINT} (package xllamacpp; {exc})"
        ) from None
    return xllamacpp


class LocalEngine:
    """llama.cpp's server for one GGUF model, running in this process on 127.0.0.1 (a free port).

    Loopback is shared with every local process and user, so the server takes requests only with this
    process's random ``api_key`` (a bearer token; :class:`~bqas.llm.client.LLMClient` sends it for
    ``base_url``, see :func:`engine_key`). Only ``/health`` and the model list answer without it."""

    def __init__(self, model: LocalModel):
        model = model.resolved()
        check_gguf(model.path)
        if model.n_ctx < 256:
            raise LocalEngineError(f"n_ctx: expected at least 256 tokens, got {model.n_ctx}")
        if model.slots < 1 or (model.threads or 1) < 1:
            raise LocalEngineError("slots and threads: expected at least 1")
        xllamacpp = _xllamacpp()
        self.model = model
        self.name = model_name(model.path)
        params = xllamacpp.CommonParams()
        params.model.path = str(model.path)
        params.model_alias = {self.name}  # a set of names; a plain string would be taken as its characters
        # The context is divided among the slots: n_ctx tokens for each request.
        params.n_ctx = model.n_ctx * model.slots
        params.n_parallel = model.slots
        params.cpuparams.n_threads = model.threads
        params.cpuparams_batch.n_threads = model.threads
        params.port = 0  # the system picks a free port: no race with another process
        params.hostnames = ["127.0.0.1"]
        params.endpoint_slots = True  # GET /slots: what each slot is doing (loopback only, like the rest)
        params.endpoint_metrics = True  # GET /metrics: tokens processed and generated (Prometheus text)
        params.verbosity = -1  # llama.cpp's own log is for its developers; failures are raised below
        self.api_key = secrets.token_urlsafe(32)
        params.api_keys = [self.api_key]
        started = time.perf_counter()
        try:
            self._server: Any = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise LocalEngineError(
                f"{model.path}: llama.cpp could not load this model ({exc}). A truncated download, an "
                f"architecture this llama.cpp build does not know (xllamacpp {_version()}), or too little "
                f"memory for n_ctx={model.n_ctx} x {model.slots} slots are the usual causes"
            ) from None
        self.start_seconds = round(time.perf_counter() - started, 3)
        address = str(self._server.listening_address).rstrip("/")
        self.base_url = f"{address}/v1"
        with _keys_lock:
            _keys[self.base_url] = self.api_key

    def info(self) -> dict[str, Any]:
        """What a run records about the engine (its config and report)."""
        return {
            "engine": "llama.cpp (embedded)",
            "xllamacpp": _version(),
            "gguf": str(self.model.path),
            "model": self.name,
            "n_ctx": self.model.n_ctx,
            "threads": self.model.threads,
            "slots": self.model.slots,
            "start_seconds": self.start_seconds,
        }


def _version() -> str:
    try:
        return importlib.metadata.version("xllamacpp")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


_lock = threading.Lock()
_engines: dict[LocalModel, LocalEngine] = {}
# The API key of every engine running in this process, by its base_url (a lock of its own: an engine
# registers while local_engine holds _lock).
_keys_lock = threading.Lock()
_keys: dict[str, str] = {}


def local_engine(model: LocalModel) -> LocalEngine:
    """The process's engine for ``model`` (started on first use, then shared until the process ends)."""
    key = model.resolved()
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = LocalEngine(key)
        return engine


def engine_key(base_url: str) -> str | None:
    """The API key of the engine this process started at ``base_url`` (None for any other server)."""
    wanted = base_url.rstrip("/")
    with _keys_lock:
        return next((key for url, key in _keys.items() if url.rstrip("/") == wanted), None)


def started_engines() -> list[dict[str, Any]]:
    """:meth:`LocalEngine.info` of every engine this process started."""
    with _lock:
        return [e.info() for e in _engines.values()]
