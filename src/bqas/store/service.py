"""Tables and queries of the scoring service: API keys (hashed), durable jobs and their per-turn results.

Jobs are claimed by one worker at a time and carry a lease (``lease_owner``, ``lease_until`` in epoch
seconds) that the worker renews while it works; a job whose lease ran out (its worker died) is claimed
again. Per-turn results are keyed by ``(job_id, seq)``: a reclaimed job skips turns already stored and a
second insert of the same turn is ignored, so no turn is lost and none is stored twice.

Claiming: ``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL (many workers, one database); on SQLite a
single atomic ``UPDATE … WHERE status = 'queued' …`` (SQLite has one writer at a time).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    and_,
    case,
    delete,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column

from bqas.store.db import Store, now
from bqas.store.models import Base
from bqas.store.redacted import RedactedJSON, RedactedText
from bqas.tenants import check_tenant_name

JOB_STATUSES: tuple[str, ...] = ("queued", "running", "done", "failed")
KEY_PREFIX = "bqas_"
MIN_REVOKE_PREFIX = 8  # a shorter prefix would match keys of other tenants too


class ApiKey(Base):
    """An API key of a tenant. Only the SHA-256 of the key is stored (keys are 256-bit random tokens)."""

    __tablename__ = "service_api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(100), index=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Job(Base):
    """One asynchronous scoring job (a single sample or a session of turns) of one tenant."""

    __tablename__ = "service_jobs"
    __table_args__ = (Index("ix_service_jobs_claim", "status", "lease_until"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(100), index=True)
    kind: Mapped[str] = mapped_column(String(20))  # "score" or "session"
    status: Mapped[str] = mapped_column(String(20), default="queued")
    # Plain while the job may still be scored; the worker scrubs it (bqas.redaction.redact) when it finishes.
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    total: Mapped[int] = mapped_column(Integer, default=1)
    done: Mapped[int] = mapped_column(Integer, default=0)
    claims: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(100), nullable=True)
    lease_until: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(RedactedText, nullable=True)
    aggregate: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class JobItem(Base):
    """The result records of one turn of a job; ``(job_id, seq)`` is unique."""

    __tablename__ = "service_job_items"
    __table_args__ = (UniqueConstraint("job_id", "seq", name="uq_service_job_items_job_seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(String(64), ForeignKey("service_jobs.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    records: Mapped[dict[str, Any]] = mapped_column(RedactedJSON)  # {"turn": seq, "results": [record, ...]}
    worker: Mapped[str | None] = mapped_column(String(100), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class IdempotencyKey(Base):
    """The job a tenant's ``Idempotency-Key`` created, with the hash of the request it came with.

    Only the SHA-256 of the key is kept (a client's key is opaque text of its own choosing). A row older
    than the retention window no longer binds the key: it is replaced by the next submission with it."""

    __tablename__ = "service_idempotency_keys"
    __table_args__ = (
        UniqueConstraint("tenant", "key_hash", name="uq_service_idempotency_tenant_key"),
        Index("ix_service_idempotency_expires", "expires_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(100))
    key_hash: Mapped[str] = mapped_column(String(64))
    request_hash: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[float] = mapped_column(Float)  # epoch seconds: the end of the retention window


class Counter(Base):
    """A queue-wide counter (``lease_recoveries``) that grows in the transaction of what it counts."""

    __tablename__ = "service_counters"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)


LEASE_RECOVERIES = "lease_recoveries"


def _count(store: Store, session: Any, name: str) -> None:
    """``name`` += 1 inside ``session``'s transaction (one row; created on first use)."""
    stmt = store.insert()(Counter).values(name=name, value=1)
    session.execute(stmt.on_conflict_do_update(index_elements=["name"], set_={"value": Counter.value + 1}))


def counter(store: Store, name: str) -> int:
    with store.session() as s:
        return int(s.scalar(select(Counter.value).where(Counter.name == name)) or 0)


@dataclass(frozen=True)
class JobView:
    """A job as read from the store (detached from any session)."""

    id: str
    tenant: str
    kind: str
    status: str
    request: dict[str, Any]
    total: int
    done: int
    claims: int
    error: str | None
    aggregate: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


def _view(job: Job) -> JobView:
    return JobView(
        id=job.id,
        tenant=job.tenant,
        kind=job.kind,
        status=job.status,
        request=job.request,
        total=job.total,
        done=job.done,
        claims=job.claims,
        error=job.error,
        aggregate=job.aggregate,
        created_at=job.created_at,
        updated_at=job.updated_at,
        finished_at=job.finished_at,
    )


# -- API keys ------------------------------------------------------------------------------------------
def hash_key(key: str) -> str:
    """SHA-256 hex of an API key (a fast hash suffices: keys are random 256-bit tokens, not passwords)."""
    return hashlib.sha256(key.encode()).hexdigest()


def create_api_key(store: Store, tenant: str) -> str:
    """Create a key for ``tenant``, store its hash and return the key (shown once, never stored)."""
    tenant = check_tenant_name(tenant)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    with store.session.begin() as s:
        s.add(ApiKey(tenant=tenant, key_hash=hash_key(key), prefix=key[:12], created_at=now()))
    return key


def tenant_for_key(store: Store, key: str) -> str | None:
    """The tenant of a valid, unrevoked key, or None."""
    with store.session() as s:
        row = s.scalars(
            select(ApiKey.tenant).where(ApiKey.key_hash == hash_key(key), ApiKey.revoked_at.is_(None))
        ).first()
    return row


def list_api_keys(store: Store) -> list[dict[str, Any]]:
    """Every key's tenant, prefix and dates (never the key)."""
    with store.session() as s:
        rows = s.scalars(select(ApiKey).order_by(ApiKey.tenant, ApiKey.created_at)).all()
        return [
            {
                "tenant": r.tenant,
                "prefix": r.prefix,
                "fingerprint": "key:" + r.key_hash[:8],
                "created_at": r.created_at.isoformat(),
                "revoked": r.revoked_at is not None,
            }
            for r in rows
        ]


def revoke_api_keys(store: Store, prefix: str) -> int:
    """Revoke the keys whose shown prefix starts with ``prefix``; returns how many.

    The prefix is matched literally (``%`` and ``_`` are escaped, not LIKE wildcards) and must have at
    least :data:`MIN_REVOKE_PREFIX` characters; ValueError otherwise."""
    if len(prefix) < MIN_REVOKE_PREFIX:
        raise ValueError(f"prefix: give at least {MIN_REVOKE_PREFIX} characters of the key prefix")
    match = ApiKey.prefix.startswith(prefix, autoescape=True)
    with store.session.begin() as s:
        result = s.execute(update(ApiKey).where(match, ApiKey.revoked_at.is_(None)).values(revoked_at=now()))
        return int(getattr(result, "rowcount", 0) or 0)


# -- jobs ----------------------------------------------------------------------------------------------
def new_job_id() -> str:
    return "j-" + secrets.token_hex(12)


def _new_job(job_id: str, tenant: str, kind: str, request: dict[str, Any], total: int) -> Job:
    stamp = now()
    return Job(
        id=job_id,
        tenant=tenant,
        kind=kind,
        status="queued",
        request=request,
        total=total,
        done=0,
        claims=0,
        created_at=stamp,
        updated_at=stamp,
    )


def create_job(store: Store, tenant: str, kind: str, request: dict[str, Any], total: int) -> str:
    """Queue a job and return its id."""
    job_id = new_job_id()
    with store.session.begin() as s:
        s.add(_new_job(job_id, tenant, kind, request, total))
    return job_id


class IdempotencyConflict(ValueError):
    """The idempotency key was used before, within the retention window, for a different request."""

    def __init__(self, job_id: str):
        super().__init__(f"the Idempotency-Key was used for a different request (job {job_id})")
        self.job_id = job_id


def create_job_once(
    store: Store,
    tenant: str,
    kind: str,
    request: dict[str, Any],
    total: int,
    *,
    key: str,
    request_hash: str,
    retention_seconds: float,
) -> tuple[str, bool]:
    """Queue a job unless ``tenant`` already submitted one with ``key`` within the retention window:
    (job id, True) for a new job, (the first job's id, False) for a repeat of the same request.

    IdempotencyConflict when the key came with a different request (``request_hash``). The key's row and
    the job are written in one transaction, and the key's unique index decides between two submissions
    that arrive at once (on two replicas): the second waits for the first to commit and then finds it."""
    key_hash = hash_key(key)
    insert = store.insert()
    for _ in range(2):  # a second round only after an expired row was removed
        job_id = new_job_id()
        stmt = (
            insert(IdempotencyKey)
            .values(
                tenant=tenant,
                key_hash=key_hash,
                request_hash=request_hash,
                job_id=job_id,
                created_at=now(),
                expires_at=time.time() + retention_seconds,
            )
            .on_conflict_do_nothing(index_elements=["tenant", "key_hash"])
            .returning(IdempotencyKey.id)
        )
        with store.session.begin() as s:
            if s.execute(stmt).first() is not None:
                s.add(_new_job(job_id, tenant, kind, request, total))
                return job_id, True
            row = s.scalars(
                select(IdempotencyKey).where(IdempotencyKey.tenant == tenant, IdempotencyKey.key_hash == key_hash)
            ).one()
            if row.expires_at < time.time():  # outside the retention window: the key is free again
                s.delete(row)
                continue
            if row.request_hash != request_hash:
                raise IdempotencyConflict(row.job_id)
            return row.job_id, False
    raise RuntimeError("idempotency key: could not claim the key")  # pragma: no cover - a racing expiry twice


def purge_idempotency_keys(store: Store) -> int:
    """Forget idempotency keys whose retention window has ended; returns how many."""
    with store.session.begin() as s:
        result = s.execute(delete(IdempotencyKey).where(IdempotencyKey.expires_at < time.time()))
        return int(getattr(result, "rowcount", 0) or 0)


def get_job(store: Store, job_id: str, tenant: str | None = None) -> JobView | None:
    """A job by id; with ``tenant``, None unless the job belongs to that tenant."""
    with store.session() as s:
        job = s.get(Job, job_id)
        if job is None or (tenant is not None and job.tenant != tenant):
            return None
        return _view(job)


def _claimable(at: float) -> Any:
    return or_(Job.status == "queued", (Job.status == "running") & (Job.lease_until < at))


def claim_job(store: Store, worker: str, lease_seconds: float, exclude: Collection[str] = ()) -> JobView | None:
    """Claim the oldest queued job (or one whose lease expired) for ``worker``; None when there is none.

    ``exclude``: the jobs ``worker`` is still working on. Their lease may have run out while it stalled
    (its heartbeat late on a loaded machine); claiming one of them again would start a second copy of the
    same work in the same worker, and its heartbeat, still the owner's, would keep both alive."""
    at = time.time()
    until = at + lease_seconds
    claimable = _claimable(at) if not exclude else and_(_claimable(at), Job.id.not_in(list(exclude)))
    if store.dialect == "postgresql":
        with store.session.begin() as s:
            job = s.scalars(
                select(Job).where(claimable).order_by(Job.created_at).limit(1).with_for_update(skip_locked=True)
            ).first()
            if job is None:
                return None
            job.status, job.lease_owner, job.lease_until = "running", worker, until
            job.claims += 1
            job.updated_at = now()
            if job.claims > 1:  # claimed before: its worker's lease ran out, this is a recovery
                _count(store, s, LEASE_RECOVERIES)
            return _view(job)
    # SQLite: one statement; the WHERE is re-checked under SQLite's write lock, so two claimers never win
    # the same row.
    oldest = select(Job.id).where(claimable).order_by(Job.created_at).limit(1).scalar_subquery()
    stmt = (
        update(Job)
        .where(Job.id == oldest, claimable)
        .values(status="running", lease_owner=worker, lease_until=until, claims=Job.claims + 1, updated_at=now())
        .returning(Job.id, Job.claims)
    )
    with store.session.begin() as s:
        row = s.execute(stmt).first()
        if row is not None and row[1] > 1:  # a recovery (see above)
            _count(store, s, LEASE_RECOVERIES)
    return get_job(store, row[0]) if row is not None else None


def renew_lease(store: Store, job_id: str, worker: str, lease_seconds: float) -> bool:
    """Extend the lease; False when ``worker`` no longer holds the job (it was reclaimed or finished)."""
    with store.session.begin() as s:
        result = s.execute(
            update(Job)
            .where(Job.id == job_id, Job.lease_owner == worker, Job.status == "running")
            .values(lease_until=time.time() + lease_seconds)
        )
        return bool(getattr(result, "rowcount", 0))


def add_item(store: Store, job_id: str, seq: int, records: dict[str, Any], worker: str) -> bool:
    """Store one turn's records; False (and nothing written) when the turn is already stored.

    ``done`` grows by one in the same transaction as the turn's row (``done = done + 1``, which the
    database applies to the row's current value under its lock): a count read before the turns stored in
    parallel commit would write a stale number back, and the job would stay one or more turns short."""
    insert = store.insert()
    stmt = (
        insert(JobItem)
        .values(job_id=job_id, seq=seq, records=records, worker=worker, created_at=now())
        .on_conflict_do_nothing(index_elements=["job_id", "seq"])
        .returning(JobItem.id)
    )
    with store.session.begin() as s:
        inserted = s.execute(stmt).first() is not None
        if inserted:
            s.execute(update(Job).where(Job.id == job_id).values(done=Job.done + 1, updated_at=now()))
    return inserted


def done_seqs(store: Store, job_id: str) -> set[int]:
    with store.session() as s:
        return set(s.scalars(select(JobItem.seq).where(JobItem.job_id == job_id)))


def job_items(store: Store, job_id: str) -> list[dict[str, Any]]:
    """The stored turns of a job in order."""
    with store.session() as s:
        return list(s.scalars(select(JobItem.records).where(JobItem.job_id == job_id).order_by(JobItem.seq)))


def item_rows(store: Store, job_id: str) -> Sequence[tuple[int, str | None]]:
    """(seq, worker) of every stored turn, for tests and diagnostics."""
    with store.session() as s:
        return [
            (int(a), b)
            for a, b in s.execute(
                select(JobItem.seq, JobItem.worker).where(JobItem.job_id == job_id).order_by(JobItem.seq)
            ).all()
        ]


def finish_job(
    store: Store,
    job_id: str,
    worker: str,
    *,
    status: str,
    error: str | None = None,
    aggregate: dict[str, Any] | None = None,
    request: dict[str, Any] | None = None,
) -> bool:
    """Mark a job done or failed (only by the worker holding it); ``request`` replaces the stored one."""
    values: dict[str, Any] = {
        "status": status,
        "error": error,
        "aggregate": aggregate,
        "lease_owner": None,
        "lease_until": None,
        "updated_at": now(),
        "finished_at": now(),
    }
    if request is not None:
        values["request"] = request
    with store.session.begin() as s:
        result = s.execute(
            update(Job).where(Job.id == job_id, Job.lease_owner == worker, Job.status == "running").values(**values)
        )
        return bool(getattr(result, "rowcount", 0))


@dataclass(frozen=True)
class QueueState:
    """The job queue at one moment: per (state, kind) the jobs and the turns not yet stored."""

    jobs: dict[tuple[str, str], int]
    items: dict[tuple[str, str], int]
    oldest_queued_age: float  # seconds since the oldest queued job was submitted; 0 without one
    lease_expired: int  # running jobs whose lease ran out (their worker is gone), waiting to be claimed again
    lease_recoveries: int  # jobs claimed again after a lease ran out, ever


def queue_state(store: Store) -> QueueState:
    """What ``/metrics`` reports about the queue: one grouped read of the unfinished jobs (the claim index
    on ``status``), one of the oldest queued job and one of the counter."""
    at = time.time()
    jobs: dict[tuple[str, str], int] = {}
    items: dict[tuple[str, str], int] = {}
    with store.session() as s:
        rows = s.execute(
            select(
                Job.status,
                Job.kind,
                func.count(),
                func.coalesce(func.sum(Job.total - Job.done), 0),
                func.sum(case((Job.lease_until < at, 1), else_=0)),
            )
            .where(Job.status.in_(("queued", "running")))
            .group_by(Job.status, Job.kind)
        ).all()
        oldest = s.scalar(select(func.min(Job.created_at)).where(Job.status == "queued"))
        recoveries = s.scalar(select(Counter.value).where(Counter.name == LEASE_RECOVERIES))
    expired = 0
    for status, kind, count, pending, stale in rows:
        jobs[(status, kind)] = int(count)
        items[(status, kind)] = max(0, int(pending))
        if status == "running":
            expired += int(stale or 0)
    age = 0.0
    if oldest is not None:
        created = oldest if oldest.tzinfo is not None else oldest.replace(tzinfo=UTC)  # SQLite keeps no zone
        age = max(0.0, at - created.timestamp())
    return QueueState(jobs, items, age, expired, int(recoveries or 0))


def ping(store: Store) -> None:
    """Raise when the database cannot be reached."""
    with store.engine.connect() as conn:
        conn.execute(text("SELECT 1"))
