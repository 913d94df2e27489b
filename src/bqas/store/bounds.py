"""Bounded waits on a PostgreSQL store, and a fast "unavailable" while it does not answer.

A PostgreSQL server that is stopped rather than gone (its processes frozen, a host swapping, a network
that drops packets) never refuses anything: the kernel still accepts and acknowledges, and a client
without its own limits waits forever. So every wait has a limit here:

* connecting: ``connect_timeout`` (:attr:`DatabaseLimits.connect_timeout`);
* a statement: the server's ``statement_timeout``, and the client's own limit on every wait for an answer
  (:attr:`DatabaseLimits.answer_limit`: the statement timeout plus a grace, so that the server's own
  error normally comes first); a connection whose answer does not come in time is closed;
* a dead peer on an idle connection: TCP keepalives and ``tcp_user_timeout``;
* a free pooled connection: the pool timeout;
* a transaction another process left open (:attr:`DatabaseLimits.idle_in_transaction_timeout`): the
  server's ``idle_in_transaction_session_timeout``. A process frozen between two statements of a
  transaction (a Ray node or job worker SIGSTOPped, its VM paused) keeps its row locks, and whoever writes
  the same keys for it (the batch re-sent to another actor, the job claimed by another worker) waits on them
  until its own statement timeout, again and again while the process stays frozen; the server ends such a
  transaction after this long without a statement and frees its locks. No transaction of the store waits
  on anything but the database between its statements (LLM calls, sleeps and awaits happen outside them),
  so the bound never meets healthy work.

libpq parameters given in the URL's query win over these defaults.

Once the store has been found unreachable (a connection dropped, a connect failed, an answer did not come,
the pool stayed full), :class:`Availability` lets one checkout at a time try the server, and none while
the probe below is waiting on it, while every other fails at once with :class:`StoreDown`, instead of
each request waiting out the limits again (a server that refuses is tried often, so a restarted one is
found at once; a frozen one is mostly left to the probe); and one
background probe per store tries the server every :data:`PROBE_EVERY_S` seconds, so that the store is
found back also when no request comes (a replica a load balancer took out of rotation).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, event, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.pool import ConnectionPoolEntry, QueuePool

#: Seconds between two probes of a store found unreachable.
PROBE_EVERY_S = 1.0
#: Seconds added to the statement timeout for the client's own limit on one answer of the server.
ANSWER_GRACE_S = 2.0
# TCP keepalives on idle connections: first probe after 10 s idle, then every 5 s, dead after 3 misses.
KEEPALIVES_IDLE_S = 10
KEEPALIVES_INTERVAL_S = 5
KEEPALIVES_COUNT = 3


@dataclass(frozen=True)
class DatabaseLimits:
    """The limits of every wait on a PostgreSQL store (settings ``BQAS_DB_*``)."""

    statement_timeout: float = 10.0
    connect_timeout: float = 5.0
    pool_timeout: float = 5.0
    # 0: none set by BQAS (the server's or the role's own setting applies; PostgreSQL's default is none).
    idle_in_transaction_timeout: float = 60.0

    @property
    def answer_limit(self) -> float:
        """The longest the client waits for one answer of the server before it closes the connection."""
        return self.statement_timeout + ANSWER_GRACE_S

    def connect_args(self, url: str) -> dict[str, Any]:
        """libpq parameters for ``url`` (those the URL sets itself are left to it)."""
        from sqlalchemy.engine import make_url

        given = set(make_url(url).query)
        wanted: dict[str, Any] = {
            "connect_timeout": max(1, round(self.connect_timeout)),
            "keepalives": 1,
            "keepalives_idle": KEEPALIVES_IDLE_S,
            "keepalives_interval": KEEPALIVES_INTERVAL_S,
            "keepalives_count": KEEPALIVES_COUNT,
            # Sent data unacknowledged this long: the peer is gone (Linux; ignored elsewhere).
            "tcp_user_timeout": round(self.answer_limit * 1000),
        }
        args = {k: v for k, v in wanted.items() if k not in given}
        if "options" not in given:
            settings = [f"-c statement_timeout={_ms(self.statement_timeout)}"]
            if self.idle_in_transaction_timeout > 0:
                settings.append(f"-c idle_in_transaction_session_timeout={_ms(self.idle_in_transaction_timeout)}")
            args["options"] = " ".join(settings)
        return args


def _ms(seconds: float) -> int:
    """``seconds`` as the whole milliseconds PostgreSQL's timeouts take, at least 1 (0 would switch one off)."""
    return max(1, round(seconds * 1000))


class StoreDown(SQLAlchemyError):
    """The store was found unreachable moments ago: this checkout does not wait for it again."""


class Availability:
    """Whether a store answers, as its last connection attempts found; probes it while it does not."""

    def __init__(self, engine: Engine, attempt_limit: float = 60.0):
        self.engine = engine
        self.cause = ""
        # The longest one attempt on a store known to be down can take (an answer, then a reconnect):
        # an attempt older than this is over, however it ended.
        self.attempt_limit = attempt_limit
        self._down = False
        self._closed = False
        self._trying_since: float | None = None
        self._probe_busy = False  # the probe is waiting on the store right now
        self._lock = threading.Lock()
        self._probe: threading.Thread | None = None
        self._local = threading.local()

    @property
    def down(self) -> bool:
        return self._down

    def probing(self) -> bool:
        """Whether this thread is the probe (its checkouts go through)."""
        return bool(getattr(self._local, "probe", False))

    def try_first(self) -> bool:
        """Whether this caller may try the store although it is known to be down (no other is trying)."""
        with self._lock:
            at = time.monotonic()
            if self._probe_busy:  # the probe is already waiting on it
                return False
            if self._trying_since is not None and at - self._trying_since < self.attempt_limit:
                return False
            self._trying_since = at
            return True

    def failed(self, cause: str) -> None:
        with self._lock:
            self.cause = cause
            self._down = True
            self._closed = False  # used again after a dispose
            self._trying_since = None
            if self._probe is None or not self._probe.is_alive():
                self._probe = threading.Thread(target=self._run_probe, name="bqas-store-probe", daemon=True)
                self._probe.start()

    def answered(self) -> None:
        self._down = False
        self._trying_since = None

    def close(self) -> None:
        """The engine was disposed: no more probes."""
        self._closed = True

    def _run_probe(self) -> None:
        self._local.probe = True
        while self._down and not self._closed:
            time.sleep(PROBE_EVERY_S)
            self._probe_busy = True
            try:
                with self.engine.connect() as conn:
                    conn.execute(text("SELECT 1"))
            except Exception:  # still down (the failure was recorded by the engine's error event)
                continue
            finally:
                self._probe_busy = False
            self.answered()


class BoundedQueuePool(QueuePool):
    """A queue pool that fails at once while its store is known to be down (:class:`Availability`), and
    reports a checkout that waited out the pool timeout as the store being unavailable."""

    availability: Availability | None = None

    def _do_get(self) -> ConnectionPoolEntry:
        availability = self.availability
        known_down = availability is not None and availability.down and not availability.probing()
        # One caller at a time tries a store known to be down; the others do not wait for it too.
        if availability is not None and known_down and not availability.try_first():
            raise StoreDown(f"the database is unavailable ({availability.cause})")
        try:
            return super()._do_get()
        except PoolTimeout:
            if availability is not None:
                availability.failed("every pooled connection stayed busy for the pool timeout")
            raise

    def recreate(self) -> QueuePool:
        pool = super().recreate()
        if isinstance(pool, BoundedQueuePool):
            pool.availability = self.availability
        return pool


def bounded_connection_class(answer_limit: float) -> type[Any]:
    """A psycopg connection class whose every wait for the server ends after ``answer_limit`` seconds:
    the connection is then closed (its protocol state is unknown) and ``OperationalError`` raised, which
    SQLAlchemy treats as a dropped connection."""
    import psycopg
    from psycopg import errors

    class BoundedConnection(psycopg.Connection[Any]):
        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            limit = answer_limit if timeout is None else timeout
            try:
                return super().wait(gen, interval, limit)
            except errors._WaitTimeout:
                if timeout is not None:  # psycopg's own limit (notifies): its caller handles it
                    raise
                self.close()
                raise psycopg.OperationalError(
                    f"the database did not answer within {answer_limit:g} s (setting BQAS_DB_STATEMENT_TIMEOUT)"
                ) from None

    return BoundedConnection


def install(engine: Engine, limits: DatabaseLimits) -> Availability:
    """Bound the waits of ``engine`` (a PostgreSQL engine with a :class:`BoundedQueuePool`) and track
    whether its store answers."""
    availability = Availability(engine, attempt_limit=limits.answer_limit + limits.connect_timeout + 1)
    if isinstance(engine.pool, BoundedQueuePool):
        engine.pool.availability = availability
    if engine.driver == "psycopg":
        connection_class = bounded_connection_class(limits.answer_limit)

        @event.listens_for(engine, "do_connect")
        def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
            return connection_class.connect(*cargs, **cparams)

    @event.listens_for(engine, "handle_error")
    def _unreachable(context: Any) -> None:
        orig = context.original_exception
        dbapi = engine.dialect.loaded_dbapi
        connect_failed = context.connection is None and isinstance(orig, dbapi.OperationalError)
        if context.is_disconnect or connect_failed:
            availability.failed(f"{type(orig).__name__}: {' '.join(str(orig).split())[:200]}")

    @event.listens_for(engine, "engine_disposed")
    def _disposed(_engine: Any) -> None:
        availability.close()

    @event.listens_for(engine.pool, "checkout")
    def _answered(*_args: Any) -> None:
        # A checkout passes the pre-ping (or a fresh connect): the server answered.
        if availability.down:
            availability.answered()

    return availability
