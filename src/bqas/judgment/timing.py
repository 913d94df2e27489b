"""Where a judgment's time goes: its own work (service time) and waiting (queue time).

``latency_ms`` runs from the start of a judgment to its end; under load most of it can be waiting — for a
free offline worker, for an LLM connection slot, for an LLM retry's back-off. The engine measures those
waits and reports ``queue_ms`` beside ``service_ms = latency_ms - queue_ms``, the judgment's own work,
which is what the judge policy's "mean evaluation time" means. The LLM client adds its waits to the
accumulator of the judgment it runs for (a context variable the engine sets; tasks the judgment starts
inherit it).
"""

from __future__ import annotations

from contextvars import ContextVar

_WAITED: ContextVar[list[float] | None] = ContextVar("bqas_judgment_waited", default=None)


def start_waits() -> tuple[list[float], object]:
    """A fresh wait accumulator (seconds) for the judgment running in this context, and the token to reset."""
    acc = [0.0]
    return acc, _WAITED.set(acc)


def stop_waits(token: object) -> None:
    _WAITED.reset(token)  # type: ignore[arg-type]


def add_wait(seconds: float) -> None:
    """Count ``seconds`` of waiting towards the current judgment (no-op outside one)."""
    acc = _WAITED.get()
    if acc is not None and seconds > 0:
        acc[0] += seconds
