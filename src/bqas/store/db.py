"""Open the store, migrate it to the current schema, and read/write runs and results."""

from __future__ import annotations

import errno
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, and_, create_engine, delete, event, func, or_, select, text
from sqlalchemy import insert as sql_insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import NullPool

from bqas.store.bounds import BoundedQueuePool, DatabaseLimits, install
from bqas.store.models import ResultRow, Run, SettledRow, TargetReplyRow, filter_columns

if TYPE_CHECKING:
    from bqas.settings import Settings


def now() -> datetime:
    return datetime.now(UTC)


_REVISION_RE = re.compile(r"^(down_revision|revision)\s*(?::[^=]+)?=\s*(.+)$", re.M)


def head_revisions() -> set[str]:
    """The head revision(s) of the shipped migrations, read from their files (no Alembic import).

    Empty when a file cannot be read this way; the caller then asks Alembic."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for entry in resources.files("bqas.store").joinpath("migrations", "versions").iterdir():
        if not entry.name.endswith(".py") or entry.name.startswith("_"):
            continue
        found = dict((m.group(1), m.group(2).strip()) for m in _REVISION_RE.finditer(entry.read_text("utf-8")))
        if "revision" not in found:
            return set()
        revisions.add(found["revision"].strip("\"'"))
        downs.update(re.findall(r"[\"']([^\"']+)[\"']", found.get("down_revision", "")))
    return revisions - downs


def _is_current(engine: Engine) -> bool:
    """Whether the database already has the shipped head revision(s) (one cheap query)."""
    heads = head_revisions()
    if not heads:
        return False
    try:
        with engine.connect() as conn:
            stored = {row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))}
    except SQLAlchemyError:  # no version table yet: a new database
        return False
    return stored == heads


def migrate(url: str) -> None:
    """Bring the database at ``url`` to the newest schema (Alembic ``upgrade head``)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("bqas.store").joinpath("migrations")))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(cfg, "head")


def _dumps(value: Any) -> str:
    # orjson is several times faster than json for the result records written on every judgment.
    import orjson

    return orjson.dumps(value).decode()


def _without(record: dict[str, Any], key: str) -> dict[str, Any]:
    """``record`` without ``key`` (a shallow copy, the caller's dict untouched; ``record`` itself when absent)."""
    if key not in record:
        return record
    # dict() and del run in C: the comprehension it replaced was a measurable share of every write.
    copy = dict(record)
    del copy[key]
    return copy


def _loads(text: str | bytes) -> Any:
    import orjson

    return orjson.loads(text)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


JUDGE_ERROR = "judge_error"  # the status of a result whose judging failed for a reason outside the sample
TARGET_ERROR = "target_error"  # the status of a result the assistant under test gave no usable answer for
# The columns a later result writes over a stored judge_error record of the same key.
_REPLACEABLE = (
    "seq",
    "sample_id",
    "judge",
    "status",
    "verdict",
    "composite",
    "language",
    "decision",
    "intent",
    "escalated",
    "record",
    "exchange",
    "created_at",
)


class StoredKeys(set[str]):
    """Stored sample keys; ``key in keys`` also matches a key stored in its redacted form (BQAS_REDACT_PII)."""

    def __contains__(self, key: object) -> bool:
        if super().__contains__(key):
            return True
        from bqas.redaction import redact_id, redaction_enabled

        return isinstance(key, str) and redaction_enabled() and super().__contains__(redact_id(key))


class Store:
    """Runs and their results. Each result is committed as soon as it is written."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.session = sessionmaker(engine, expire_on_commit=False)

    @property
    def down(self) -> bool:
        """Whether the store was found unreachable and has not answered since (PostgreSQL only)."""
        availability = getattr(self.engine.pool, "availability", None)
        return availability is not None and bool(availability.down)

    def own_pool(self, pool_size: int) -> Store:
        """The same store through a pool of its own (a worker beside the API in one process: one side
        holding every connection cannot starve the other); SQLite files share this store's engine."""
        if self.dialect == "sqlite":
            return self
        url = self.engine.url.render_as_string(hide_password=False)
        return Store(create_store_engine(url, pool_size=pool_size))

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def insert(self) -> Any:
        """The INSERT construct of this store's dialect (both have ``on_conflict_do_nothing``).

        Imported here, not at the top: SQLAlchemy's PostgreSQL dialect takes a tenth of a second to import
        and a SQLite store never needs it."""
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert

    # -- runs ------------------------------------------------------------------------------------------
    def create_run(
        self,
        run_id: str,
        scenario: str,
        config: dict[str, Any],
        *,
        kind: str = "scenario",
        scenario_path: str | None = None,
        total: int = 0,
    ) -> Run:
        run = Run(
            id=run_id,
            kind=kind,
            scenario=scenario,
            scenario_path=scenario_path,
            config=config,
            status="running",
            total=total,
            started_at=now(),
        )
        with self.session.begin() as s:
            s.add(run)
        return run

    def get_run(self, run_id: str) -> Run | None:
        with self.session() as s:
            return s.get(Run, run_id)

    def find_run(self, prefix: str) -> Run | None:
        """A run by id or unique id prefix."""
        with self.session() as s:
            exact = s.get(Run, prefix)
            if exact is not None:
                return exact
            rows = s.scalars(select(Run).where(Run.id.startswith(prefix)).limit(2)).all()
            return rows[0] if len(rows) == 1 else None

    def missing_run(self, prefix: str) -> str:
        """Why :meth:`find_run` found nothing: ``ambiguous: 'x' matches A, B`` or ``no run with id 'x'``."""
        with self.session() as s:
            ids = s.scalars(select(Run.id).where(Run.id.startswith(prefix)).order_by(Run.id).limit(6)).all()
        if len(ids) > 1:
            more = ", …" if len(ids) > 5 else ""
            return f"ambiguous: {prefix!r} matches {', '.join(ids[:5])}{more}; give more of the id"
        return f"no run with id {prefix!r} (see `bqas runs`)"

    def list_runs(self, limit: int = 50) -> Sequence[Run]:
        with self.session() as s:
            return s.scalars(select(Run).order_by(Run.started_at.desc()).limit(limit)).all()

    def update_run(self, run_id: str, **values: Any) -> None:
        with self.session.begin() as s:
            run = s.get(Run, run_id)
            if run is None:
                raise KeyError(run_id)
            for key, value in values.items():
                setattr(run, key, value)

    # -- results ---------------------------------------------------------------------------------------
    def done_keys(self, run_id: str, repeat: int = 1, *, retry_target_errors: bool = False) -> set[str]:
        """The sample keys already judged for the run's ``repeat`` (membership also by their redacted form).

        A ``judge_error`` record (judging failed for a reason outside the sample) is not done: ``--resume``
        judges that sample again, and its new result replaces the record (:meth:`add_results`). With
        ``retry_target_errors`` a ``target_error`` record is not done either (the target is asked again)."""
        undone = [JUDGE_ERROR, TARGET_ERROR] if retry_target_errors else [JUDGE_ERROR]
        with self.session() as s:
            return StoredKeys(
                s.scalars(
                    select(ResultRow.sample_key).where(
                        ResultRow.run_id == run_id, ResultRow.repeat == repeat, ResultRow.status.not_in(undone)
                    )
                )
            )

    def target_error_samples(self, run_id: str) -> StoredKeys:
        """The sample ids (a conversation's turn ids, ``<id>#<turn>``) with a ``target_error`` result in the run
        (membership also by the redacted form)."""
        with self.session() as s:
            return StoredKeys(
                s.scalars(
                    select(ResultRow.sample_id)
                    .where(ResultRow.run_id == run_id, ResultRow.status == TARGET_ERROR)
                    .distinct()
                )
            )

    def add_results(
        self,
        run_id: str,
        records: Sequence[tuple[str, int, dict[str, Any]]],
        *,
        replace_target_errors: bool = False,
    ) -> int:
        """Insert (sample_key, seq, record) rows in one transaction; rows already stored are skipped, except
        a stored ``judge_error`` record, which a result of the same key that is not one replaces, and (with
        ``replace_target_errors``: the target was asked again) a stored ``target_error`` record.

        The record's ``repeat`` (default 1) is part of the key: each repeat of ``--repeats`` is its own row."""
        if not records:
            return 0
        from bqas.judgment.record import EXCHANGE_KEY

        rows = [
            {
                "run_id": run_id,
                "sample_key": key,
                "seq": seq,
                "repeat": int(rec.get("repeat") or 1),
                "sample_id": str(rec.get("sample_id") or rec.get("response_id")),
                "judge": str(rec.get("judge")),
                "status": str(rec.get("status")),
                "verdict": rec.get("verdict"),
                "composite": rec.get("composite_score"),
                "language": rec.get("language"),
                # The LLM exchange goes to its own column (read by the sample page only), not the record.
                "record": _without(rec, EXCHANGE_KEY),
                "exchange": rec.get(EXCHANGE_KEY),
                **filter_columns(rec),
                "created_at": now(),
            }
            for key, seq, rec in records
        ]
        insert = self.insert()
        # One statement for every batch size (executemany with "insertmanyvalues"), so SQLAlchemy compiles
        # it once; rowcount is unreliable for such inserts, so count the ids that come back.
        stmt = insert(ResultRow)
        replaced = {name: stmt.excluded[name] for name in _REPLACEABLE}
        replaceable = (ResultRow.status == JUDGE_ERROR) & (stmt.excluded.status != JUDGE_ERROR)
        if replace_target_errors:
            replaceable = replaceable | (ResultRow.status == TARGET_ERROR)
        stmt = stmt.on_conflict_do_update(
            index_elements=["run_id", "sample_key", "repeat"], set_=replaced, where=replaceable
        ).returning(ResultRow.id)
        with self.engine.begin() as conn:  # Core, not the ORM session: this runs on every batch of results
            inserted = conn.execute(stmt, rows).all()
        return len(inserted)

    def iter_records(self, run_id: str, batch: int = 500) -> Iterator[dict[str, Any]]:
        """The run's records in sample order, streamed in batches (never all in memory).

        Keyset pagination on (seq, id): several records may share a sample's seq (one per RAGAS metric)."""
        for row in self.iter_rows(run_id, batch):
            yield row[4]

    def iter_rows(self, run_id: str, batch: int = 500) -> Iterator[tuple[int, int, str, int, dict[str, Any]]]:
        """(seq, id, sample_key, repeat, record) of the run's results in sample order, streamed in batches."""
        last_seq, last_id = -1, -1
        while True:
            with self.session() as s:
                rows = s.execute(
                    select(ResultRow.seq, ResultRow.id, ResultRow.sample_key, ResultRow.repeat, ResultRow.record)
                    .where(
                        ResultRow.run_id == run_id,
                        or_(ResultRow.seq > last_seq, and_(ResultRow.seq == last_seq, ResultRow.id > last_id)),
                    )
                    .order_by(ResultRow.seq, ResultRow.id)
                    .limit(batch)
                ).all()
            if not rows:
                return
            yield from ((seq, id_, key, repeat, record) for seq, id_, key, repeat, record in rows)
            last_seq, last_id = rows[-1][0], rows[-1][1]

    def replace_settled(self, run_id: str, rows: Iterable[dict[str, Any]], batch: int = 1000) -> int:
        """Replace the run's settled samples (``--repeats``; :class:`SettledRow` columns) by ``rows``."""
        written = 0
        with self.engine.begin() as conn:  # one transaction: a reader sees the old rows or all new ones
            conn.execute(delete(SettledRow).where(SettledRow.run_id == run_id))
            chunk: list[dict[str, Any]] = []
            for row in rows:
                chunk.append({**row, "run_id": run_id})
                if len(chunk) >= batch:
                    conn.execute(sql_insert(SettledRow), chunk)
                    written, chunk = written + len(chunk), []
            if chunk:
                conn.execute(sql_insert(SettledRow), chunk)
                written += len(chunk)
        return written

    def has_settled(self, run_id: str) -> bool:
        with self.session() as s:
            return s.scalar(select(SettledRow.id).where(SettledRow.run_id == run_id).limit(1)) is not None

    # -- the assistant's answers (bqas.targets) -----------------------------------------------------------
    def add_target_replies(
        self, run_id: str, replies: Sequence[tuple[str, int, dict[str, Any]]], *, replace: bool = False
    ) -> int:
        """Insert (sample_id, turn, reply) rows in one transaction; a reply already stored is kept, unless
        ``replace`` (a turn asked again: its new reply replaces the stored one)."""
        if not replies:
            return 0
        rows = [
            {"run_id": run_id, "sample_id": sid, "turn": turn, "reply": reply, "created_at": now()}
            for sid, turn, reply in replies
        ]
        stmt = self.insert()(TargetReplyRow)
        keys = ["run_id", "sample_id", "turn"]
        if replace:
            stmt = stmt.on_conflict_do_update(
                index_elements=keys, set_={"reply": stmt.excluded.reply, "created_at": stmt.excluded.created_at}
            )
        else:
            stmt = stmt.on_conflict_do_nothing(index_elements=keys)
        stmt = stmt.returning(TargetReplyRow.id)
        with self.engine.begin() as conn:
            return len(conn.execute(stmt, rows).all())

    def target_replies(self, run_id: str, sample_id: str) -> dict[int, dict[str, Any]]:
        """The stored replies of one sample of a run, by turn (matched also by the id's redacted form)."""
        ids = [sample_id]
        from bqas.redaction import redact_id, redaction_enabled

        if redaction_enabled():
            ids.append(redact_id(sample_id))
        with self.session() as s:
            rows = s.execute(
                select(TargetReplyRow.turn, TargetReplyRow.reply).where(
                    TargetReplyRow.run_id == run_id, TargetReplyRow.sample_id.in_(ids)
                )
            ).all()
        return {int(turn): reply for turn, reply in rows}

    def target_reply_samples(self, run_id: str) -> StoredKeys:
        """The sample ids with a stored reply in the run (membership also by the redacted form)."""
        with self.session() as s:
            return StoredKeys(
                s.scalars(select(TargetReplyRow.sample_id).where(TargetReplyRow.run_id == run_id).distinct())
            )

    def iter_target_replies(self, run_id: str, batch: int = 1000) -> Iterator[dict[str, Any]]:
        """The run's stored replies in the order they were stored, streamed in batches."""
        last = -1
        while True:
            with self.session() as s:
                rows = s.execute(
                    select(TargetReplyRow.id, TargetReplyRow.reply)
                    .where(TargetReplyRow.run_id == run_id, TargetReplyRow.id > last)
                    .order_by(TargetReplyRow.id)
                    .limit(batch)
                ).all()
            if not rows:
                return
            yield from (reply for _, reply in rows)
            last = rows[-1][0]

    def count_results(self, run_id: str) -> int:
        with self.session() as s:
            return int(s.scalar(select(func.count()).select_from(ResultRow).where(ResultRow.run_id == run_id)) or 0)


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached or used right now (down, restarting, frozen, a
    dropped connection, every pooled connection busy, a statement timeout, a full disk, a locked SQLite
    file), as opposed to a mistake in what was asked of it: worth a retry."""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    from bqas.store.bounds import StoreDown

    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout | StoreDown | StoreUnavailable):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


class StoreUnavailable(RuntimeError):
    """The store cannot be opened, migrated or written (a full disk, a file size limit, an I/O error, a
    database that does not answer). The message names the store and the cause in one line; ``bqas``
    commands exit with :data:`STORE_FAILED` on it."""


#: The exit code of a command whose store or output files could not be written (README, exit codes).
STORE_FAILED = 4

_FULL_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def store_name(url: str) -> str:
    """How a message names the store: a SQLite file's path, else the URL without its password."""
    if url.startswith("sqlite:///"):
        return url.removeprefix("sqlite:///")
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # a URL SQLAlchemy cannot parse: its scheme at least
        return url.split("://", 1)[0] + "://…"


def failure_cause(exc: BaseException) -> str:
    """The cause of a store or file failure in a few words: the driver's message, not SQLAlchemy's
    wrapping (its SQL and background link), and what a full disk looks like when it is one."""
    orig = getattr(exc, "orig", None)
    base = orig if isinstance(orig, BaseException) else exc
    if isinstance(base, OSError) and base.strerror:
        text = base.strerror + (f": {base.filename}" if base.filename else "")
    else:
        text = " ".join(str(base).split()) or type(base).__name__
    full = (isinstance(base, OSError) and base.errno in _FULL_ERRNOS) or any(
        phrase in text.lower() for phrase in ("disk i/o error", "database or disk is full", "no space left")
    )
    if full:
        text += " (the disk is full, or a file size limit was reached)"
    return text


def open_store(url: str | None = None, *, home: Path | None = None, limits: DatabaseLimits | None = None) -> Store:
    """Open (and migrate) the store at ``url``; default: SQLite under the BQAS home. Raises
    :class:`StoreUnavailable` naming the store and the cause when it cannot be opened or migrated (a
    migration is one transaction: a store that fails half-way is left as it was).

    ``limits``: those of a PostgreSQL store's waits (default: this process's settings, ``BQAS_DB_*``)."""
    from bqas.settings import get_settings

    settings = get_settings()
    if url is None:
        url = settings.database_url or f"sqlite:///{((home or settings.home) / 'bqas.sqlite').as_posix()}"
    try:
        return _open_store(url, limits)
    except (SQLAlchemyError, OSError) as exc:
        raise StoreUnavailable(f"the store {store_name(url)} cannot be opened: {failure_cause(exc)}") from exc


def database_limits(settings: Settings | None = None) -> DatabaseLimits:
    """The limits of every wait on a PostgreSQL store, from ``settings`` (default: this process's,
    ``BQAS_DB_*``)."""
    if settings is None:
        from bqas.settings import get_settings

        settings = get_settings()
    return DatabaseLimits(
        statement_timeout=settings.db_statement_timeout,
        connect_timeout=settings.db_connect_timeout,
        pool_timeout=settings.db_pool_timeout,
        idle_in_transaction_timeout=settings.db_idle_in_transaction_seconds,
    )


def create_store_engine(url: str, *, pool_size: int | None = None, limits: DatabaseLimits | None = None) -> Engine:
    """An engine for the store at ``url``: on PostgreSQL every wait bounded (:mod:`bqas.store.bounds`) by
    ``limits`` (default: from the settings)."""
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    # Pre-ping finds connections a PostgreSQL server dropped; a SQLite file has no server, and the ping was a
    # query before every batch of results. Records are read back with orjson as they are written with it.
    options: dict[str, Any] = {}
    limits = (limits or database_limits()) if url.startswith("postgresql") else None
    if limits is not None:
        options = {
            "connect_args": limits.connect_args(url),
            "poolclass": BoundedQueuePool,
            "pool_timeout": limits.pool_timeout,
        }
        if pool_size is not None:
            options["pool_size"] = pool_size
    engine = create_engine(
        url,
        future=True,
        pool_pre_ping=not url.startswith("sqlite"),
        json_serializer=_dumps,
        json_deserializer=_loads,
        **options,
    )
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    elif limits is not None:
        install(engine, limits)
    return engine


def _open_store(url: str, limits: DatabaseLimits | None = None) -> Store:
    engine = create_store_engine(url, limits=limits)
    # Alembic (and its imports) costs most of a second; run it only when the schema is not current.
    if not _is_current(engine):
        database = engine.url.database
        if engine.dialect.name == "postgresql":
            _migrate_locked(engine, url)
        elif engine.dialect.name == "sqlite" and database and database != ":memory:":
            _migrate_file_locked(engine, url, Path(database))
        else:
            migrate(url)
    return Store(engine)


#: How long a process waits for another one's migration of the same SQLite file before giving up.
MIGRATION_WAIT_S = 600.0


def _migrate_file_locked(engine: Engine, url: str, database: Path) -> None:
    """Migrate a SQLite file under a file lock beside it (``<file>.migrate.lock``): runs and test
    workers that start together on a new BQAS home would otherwise both run ``alembic upgrade`` and
    collide half-way through a table rebuild. The lock is the operating system's (released when its
    process dies); the ones that waited find the schema current and do nothing."""
    from filelock import FileLock, Timeout

    lock = FileLock(f"{database}.migrate.lock", timeout=MIGRATION_WAIT_S)
    try:
        with lock:
            if not _is_current(engine):
                migrate(url)
    except Timeout:
        raise StoreUnavailable(
            f"{database}: another process has been migrating this store for {MIGRATION_WAIT_S:.0f} s "
            f"(lock {lock.lock_file}); try again when it has finished"
        ) from None


# Any fixed 64-bit key: the advisory lock that serialises migrations of one PostgreSQL database.
_MIGRATION_LOCK = 0x62716173_6D696772


def _migrate_locked(engine: Engine, url: str) -> None:
    """Migrate under a PostgreSQL advisory lock: replicas and workers that start together on a new
    database would otherwise run ``alembic upgrade`` at the same time and collide on CREATE TABLE.
    The ones that waited find the schema current and do nothing.

    The lock is taken on a connection of its own without the store's statement and answer limits: waiting
    for another process's migration is not a server that stopped answering. It is a session lock taken
    outside any transaction (autocommit): its holder sends nothing while the migration runs on another
    connection, and inside a transaction a server's ``idle_in_transaction_session_timeout`` would end that
    session half-way through the migration, and with it the lock."""
    connect_args = {} if "connect_timeout" in url else {"connect_timeout": 10}
    waiter = create_engine(url, poolclass=NullPool, connect_args=connect_args, isolation_level="AUTOCOMMIT")
    try:
        _hold_migration_lock(waiter, engine, url)
    finally:
        waiter.dispose()


def _hold_migration_lock(waiter: Engine, engine: Engine, url: str) -> None:
    with waiter.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _MIGRATION_LOCK})
        try:
            if not _is_current(engine):
                migrate(url)
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _MIGRATION_LOCK})
