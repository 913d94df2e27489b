"""Start the scripted OpenAI-compatible server in its own process (so it does not share our GIL)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def server_process(command: list[str]) -> Iterator[str]:
    """Run ``command`` (a server that prints ``PORT <n>`` first) and yield its base URL; stop it afterwards."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"scripted server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def scripted_server(latency: float, content: str, *, fast: bool = True) -> Iterator[str]:
    """Yield the base URL of a scripted server answering ``content`` after ``latency`` seconds.

    ``fast`` uses the minimal keep-alive responder, so the benchmark measures BQAS, not the fixture."""
    extra = ["--fast"] if fast else []
    command = [sys.executable, "-m", "bqas.testing.scripted_llm", "--latency", str(latency), "--content", content]
    with server_process([*command, *extra]) as url:
        yield url
