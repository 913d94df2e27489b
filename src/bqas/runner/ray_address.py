"""A Ray cluster address checked before a run starts, in bounded time.

``ray.init(address=...)`` retries a cluster that does not answer for many minutes (Ray 2.x: 20 tries of
about 40 s each), so ``bqas run --ray 10.0.0.5:6379`` with a typo would hang instead of failing. Before
any run is created, the address is parsed, its port is probed over TCP and, for a cluster address (not
``ray://``), Ray's own GCS client is asked for the cluster id in a thread that is given up after
:data:`GCS_TIMEOUT_S`. Each failure is a :class:`ScenarioError` (exit 2) that names where the address
came from and the address itself (``repr``: a hostile value stays one printable line).
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from bqas.runner.scenario import ScenarioError

TCP_TIMEOUT_S = 5.0  # a host that drops packets: no answer to the TCP handshake within this
GCS_TIMEOUT_S = 20.0  # something listens, but no Ray cluster id came back within this
USAGE = "expected auto, local, HOST:PORT or ray://HOST:PORT"


def named_address(address: str) -> tuple[str, str] | None:
    """(where it came from, address) of the cluster a ``--ray`` value joins, or None when the run starts
    a cluster here: ``local`` always, ``auto`` unless ``RAY_ADDRESS`` names one."""
    if address == "local":
        return None
    if address == "auto":
        env = os.environ.get("RAY_ADDRESS", "").strip()
        return ("RAY_ADDRESS", env) if env and env not in ("auto", "local") else None
    return ("", address)


def parse_address(address: str) -> tuple[str, int, bool]:
    """(host, port, Ray client) of ``HOST:PORT`` or ``ray://HOST:PORT``; ValueError when malformed."""
    client = address.startswith("ray://")
    rest = address[len("ray://") :] if client else address
    host, sep, port = rest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1]:6379
    if not sep or not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(USAGE)
    if not host.isprintable() or any(c.isspace() or c in "/?#@" for c in host):
        raise ValueError(USAGE)
    return host, int(port), client


def check_address(address: str, source: str = "--ray") -> None:
    """Fail fast, with the address named, unless a Ray cluster answers at the address ``address`` names.

    ``source`` says where the value came from (``--ray``, or the scenario file's ``ray.address``)."""
    named = named_address(address)
    if named is None:
        return
    origin, value = named
    _check(f"{origin or source} {value!r}", value, joined_by_auto=bool(origin))


def _check(
    label: str,
    value: str,
    *,
    joined_by_auto: bool,
    tcp_timeout: float = TCP_TIMEOUT_S,
    gcs_timeout: float = GCS_TIMEOUT_S,
) -> None:
    try:
        host, port, client = parse_address(value)
    except ValueError as exc:
        raise ScenarioError(f"{label}: not a cluster address; {exc}") from None
    try:
        with socket.create_connection((host, port), timeout=tcp_timeout):
            pass
    except TimeoutError:
        raise ScenarioError(f"{label}: {host}:{port} did not answer within {tcp_timeout:.0f} s") from None
    except socket.gaierror as exc:
        raise ScenarioError(f"{label}: unknown host {host!r} ({exc.strerror})") from None
    except OSError as exc:
        raise ScenarioError(f"{label}: nothing answers at {host}:{port} ({exc.strerror or exc})") from None
    if not client:  # the Ray client (ray://) speaks its own protocol; ray.init reports its errors quickly
        address = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
        _check_gcs(label, address, joined_by_auto=joined_by_auto, timeout=gcs_timeout)


RECORDED_TCP_TIMEOUT_S = 3.0  # the cluster `ray start` recorded on this host: a live one answers at once
RECORDED_GCS_TIMEOUT_S = 10.0


def recorded_cluster() -> tuple[str, str] | None:
    """(file, address) of the cluster that the last ``ray start`` on this host recorded in Ray's temp
    folder (``ray_current_cluster``; ``RAY_TMPDIR`` moves the folder), or None when there is none.

    ``ray.init()`` joins that address without asking whether anything still runs there, and retries it
    for minutes: the file outlives a cluster that was killed, or stopped other than by ``ray stop``."""
    from ray._common.utils import get_ray_address_file

    path = get_ray_address_file(None)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            address = fh.read(1000).strip()
    except OSError:
        return None
    return (path, address) if address else None


def stale_recorded_cluster() -> str | None:
    """For ``--ray auto`` without ``RAY_ADDRESS``: why the cluster recorded on this host cannot be joined
    (the file names an address where no Ray cluster answers within seconds), or None when there is no
    record or the recorded cluster answers (``ray.init()`` then joins it)."""
    recorded = recorded_cluster()
    if recorded is None:
        return None
    path, address = recorded
    try:
        _check(
            f"the Ray cluster recorded in {path} ({address!r})",
            address,
            joined_by_auto=True,
            tcp_timeout=RECORDED_TCP_TIMEOUT_S,
            gcs_timeout=RECORDED_GCS_TIMEOUT_S,
        )
    except ScenarioError as exc:
        return str(exc)
    return None


def _check_gcs(label: str, address: str, joined_by_auto: bool, timeout: float = GCS_TIMEOUT_S) -> None:
    """Ask the GCS at ``address`` for its cluster id, giving up after ``timeout`` seconds.

    Authenticated as ``ray.init`` will be: ``auto`` uses the token of ~/.ray/auth_token when there is
    one (a cluster started by ``ray.init``/``ray start`` on this host has token auth on by default), an
    explicit address only with ``RAY_AUTH_MODE=token``."""
    from ray._raylet import GcsClient  # type: ignore[attr-defined]  # internal (not in its stubs); ray.init uses it

    if joined_by_auto:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )

        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)

    outcome: list[Any] = []

    def ask() -> None:  # the C++ client releases the GIL while it waits: a thread can be abandoned
        try:
            outcome.append(GcsClient(address=address).cluster_id)
        except Exception as exc:  # Ray raises its own RpcError types
            outcome.append(exc)

    probe = threading.Thread(target=ask, name="bqas-ray-probe", daemon=True)
    probe.start()
    probe.join(timeout)
    if not outcome:
        raise ScenarioError(
            f"{label}: {address} accepts connections but no Ray cluster answered within {timeout:.0f} s "
            "(is it the GCS port of a Ray head node, 6379 by default?)"
        )
    if isinstance(outcome[0], Exception):
        error = outcome[0]
        if type(error).__name__ == "AuthenticationError":  # a Ray cluster, but one with token auth on
            raise ScenarioError(
                f"{label}: the Ray cluster at {address} requires its token: set RAY_AUTH_MODE=token and give "
                "the token in ~/.ray/auth_token or RAY_AUTH_TOKEN (docs/ray.md)"
            )
        raise ScenarioError(f"{label}: {address} is not a Ray cluster ({type(error).__name__}: {error})")
