"""The driver's own health check of the Ray cluster's head (its GCS) during ``bqas run --ray``.

When the head goes (killed, its machine gone, frozen), Ray's core keeps the driver waiting for the GCS
to come back for a minute (``gcs_rpc_server_reconnect_timeout_s``) and then ends the process with exit
code 1, which BQAS uses for "a gate is missed", saying nothing. :class:`HeadWatch` asks the GCS every
second itself (a TCP connect, then a small request with a deadline) and, once it has not answered for
``BQAS_RAY_HEAD_TIMEOUT`` seconds (10 by default), ends the run in a way CI can tell apart
(:func:`head_lost`): what the actors judged is already in the store (each batch is stored by its actor
as it finishes), the run is marked ``interrupted``, the resume command is printed, and the process
exits with :data:`RAY_HEAD_LOST`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: Exit code of a run whose Ray head was lost (README: exit codes); EX_TEMPFAIL: try again.
RAY_HEAD_LOST = 75
CHECK_EVERY_S = 1.0
TCP_TIMEOUT_S = 1.0
GCS_TIMEOUT_S = 2.0


def gcs_answers(address: str, gcs_client: Any) -> bool:
    """Whether the GCS at ``host:port`` accepts a connection and answers a request within seconds."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=TCP_TIMEOUT_S):
            pass
    except (OSError, ValueError):
        return False
    if gcs_client is None:
        return True
    answered: list[bool] = []

    def ask() -> None:  # the C++ client releases the GIL while it waits: a thread can be abandoned
        try:
            gcs_client.internal_kv_exists(b"bqas-head-check", None, timeout=GCS_TIMEOUT_S)
            answered.append(True)
        except Exception:  # Ray's own RpcError types: the GCS did not answer
            answered.append(False)

    thread = threading.Thread(target=ask, name="bqas-ray-head-ask", daemon=True)
    thread.start()
    thread.join(GCS_TIMEOUT_S + 1.0)
    return bool(answered and answered[0])


class HeadWatch:
    """Calls ``on_lost(seconds without an answer)`` once the GCS has not answered for ``timeout`` s."""

    def __init__(
        self,
        address: str,
        timeout: float,
        on_lost: Callable[[float], None],
        gcs_client: Any = None,
        check: Callable[[str, Any], bool] = gcs_answers,
    ):
        self.address = address
        self.timeout = timeout
        self.on_lost = on_lost
        self.gcs_client = gcs_client
        self.check = check
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="bqas-ray-head-watch", daemon=True)

    def start(self) -> HeadWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        last_answer = time.monotonic()
        while not self._stop.wait(CHECK_EVERY_S):
            if self.check(self.address, self.gcs_client):
                last_answer = time.monotonic()
                continue
            silent = time.monotonic() - last_answer
            if silent >= self.timeout and not self._stop.is_set():
                self.on_lost(silent)
                return


def head_lost(store: Any, run_id: str, address: str, silent: float, timeout: float) -> None:
    """End a run whose Ray head is gone: say so, mark it interrupted, print the resume command, and exit
    with :data:`RAY_HEAD_LOST` at once (the driver's Ray calls may never return without their head)."""
    from bqas.textsafe import printable

    def say(line: str) -> None:
        print(f"bqas: {printable(line)}", file=sys.stderr, flush=True)

    say(
        f"the Ray cluster's head at {address} has not answered for {silent:.0f} s (BQAS_RAY_HEAD_TIMEOUT "
        f"{timeout:g} s): the cluster is lost; the samples judged so far are stored"
    )
    try:
        store.update_run(run_id, status="interrupted")
    except Exception as exc:  # the store's own trouble: the run then reads interrupted once its lease is gone
        say(f"run {run_id} could not be marked interrupted in the store ({type(exc).__name__})")
    say(
        f"run {run_id} interrupted: resume with `bqas run --resume {run_id}` (judges the rest in this "
        f"process; add `--ray ADDRESS` to judge it on a new cluster); exit code {RAY_HEAD_LOST}"
    )
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(RAY_HEAD_LOST)


def watch_head(store: Any, run_id: str, timeout: float) -> HeadWatch | None:
    """Start watching the head of the cluster this driver joined; None when it has no GCS address (a Ray
    client connection, ``ray://``, has its own reconnect logic)."""
    import ray

    worker: Any = ray._private.worker.global_worker
    address = getattr(getattr(worker, "node", None), "gcs_address", None)
    if not address:
        return None
    client = getattr(worker, "gcs_client", None)

    def lost(silent: float) -> None:
        head_lost(store, run_id, str(address), silent, timeout)

    return HeadWatch(str(address), timeout, lost, gcs_client=client).start()
