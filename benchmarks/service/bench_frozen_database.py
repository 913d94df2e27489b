"""How ``bqas serve`` answers while its PostgreSQL is frozen (every server process SIGSTOPped: connections
stay open, nothing answers), with the shipped limits (``BQAS_DB_*`` defaults unless set in the
environment) and its in-process job worker on.

A throwaway PostgreSQL (``bqas.testing.postgres``) and ``--replicas`` servers on 127.0.0.1 (each with its
own store handle and job worker, as separate replicas have). Each round freezes the
database for ``--freeze`` seconds; meanwhile clients send, every half second and all at once, an async
submission (with an Idempotency-Key), a job status, a score with a key verified before the freeze, a
``/metrics`` scrape and a ``/readyz``. Printed per endpoint: answers by status code, and the min, median
and max seconds to answer; then the seconds from the thaw to the first accepted submission, whether any
job ended ``failed``, and whether every job was done once afterwards. Repeated ``--repeat`` times.

Every replica gets every request of a round.

Run: nice .venv/bin/python benchmarks/service/bench_frozen_database.py [--freeze 60] [--repeat 2] [--replicas 2]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import Store, database_limits, open_store
from bqas.store.service import create_api_key, get_job
from bqas.testing.postgres import LocalPostgres

BODY = {
    "judges": ["voice"],
    "question": "Erinnere mich an die Konferenz",
    "answer": "Ich erinnere dich morgen um 8 Uhr.",
    "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
}
GUARD_S = 120.0


def count_jobs(store: Store, status: str) -> int:
    """Jobs in ``status``, whoever submitted them."""
    from sqlalchemy import func, select

    from bqas.store.service import Job

    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(Job).where(Job.status == status)) or 0)


def _round(
    bases: list[str], auth: dict[str, str], jobs: list[str], answers: dict[str, list[tuple[int, float]]]
) -> None:
    def one(name: str, base: str, method: str, path: str, **kw: Any) -> None:
        started = time.perf_counter()
        try:
            code = httpx.request(method, f"{base}{path}", timeout=GUARD_S, **kw).status_code
        except httpx.HTTPError:
            code = 0  # no answer before the guard
        answers[name].append((code, time.perf_counter() - started))

    calls = [
        (
            "submit",
            "POST",
            "/api/score/async",
            {"json": BODY, "headers": {**auth, "Idempotency-Key": str(uuid.uuid4())}},
        ),
        ("status", "GET", f"/api/jobs/{jobs[0]}", {"headers": auth}),
        ("score", "POST", "/api/score", {"json": BODY, "headers": auth}),
        ("metrics", "GET", "/metrics", {}),
        ("readyz", "GET", "/readyz", {}),
    ]
    threads = [threading.Thread(target=one, args=(n, b, m, p), kwargs=kw) for b in bases for n, m, p, kw in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--freeze", type=float, default=60.0, help="seconds each freeze lasts")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=2)
    args = parser.parse_args()
    limits = database_limits()
    print(
        f"limits: statement {limits.statement_timeout:g} s (answer limit {limits.answer_limit:g} s), "
        f"connect {limits.connect_timeout:g} s, pool {limits.pool_timeout:g} s"
    )
    home = Path(tempfile.mkdtemp(prefix="bqas-bench-frozen-"))
    with LocalPostgres() as pg, contextlib.ExitStack() as stack:
        store = open_store(pg.url)
        key = create_api_key(store, "acme")
        service = ServiceSettings(rate_limit=0, service_backend="offline", api_key_cache_seconds=1.0)
        bases = []
        for n in range(args.replicas):  # each replica its own store handle (pools), as separate processes
            replica = open_store(pg.url)
            app = create_app(settings=Settings(home=home / str(n), llm_cache=False), service=service, store=replica)
            bases.append(stack.enter_context(ServiceServer(app)).base_url)
        for base in bases:
            while httpx.get(f"{base}/healthz").json().get("models") != "ready":
                time.sleep(0.5)
        auth = {"Authorization": f"Bearer {key}"}
        for base in bases:
            assert httpx.post(f"{base}/api/score", json=BODY, headers=auth).status_code == 200
        jobs = [httpx.post(f"{bases[0]}/api/score/async", json=BODY, headers=auth).json()["job_id"]]
        for rep in range(args.repeat):
            answers: dict[str, list[tuple[int, float]]] = defaultdict(list)
            time.sleep(1.5)  # the key's cached lookup is no longer fresh
            with pg.frozen():
                until = time.monotonic() + args.freeze
                while time.monotonic() < until:
                    _round(bases, auth, jobs, answers)
                    time.sleep(0.5)
            thawed = time.perf_counter()
            for base in bases:
                while True:
                    back = httpx.post(f"{base}/api/score/async", json=BODY, headers=auth, timeout=GUARD_S)
                    if back.status_code == 202:
                        jobs.append(back.json()["job_id"])
                        break
                    time.sleep(0.1)
            recovery = time.perf_counter() - thawed
            print(f"\nround {rep + 1}: {args.freeze:g} s frozen, {args.replicas} replica(s)")
            for name, seen in answers.items():
                codes = Counter(code for code, _ in seen)
                times = sorted(t for _, t in seen)
                print(
                    f"  {name:8s} {dict(sorted(codes.items()))}  seconds min {times[0]:.3f} "
                    f"median {statistics.median(times):.3f} max {times[-1]:.3f}"
                )
            print(f"  every replica accepted a submission {recovery:.2f} s after the thaw")
        deadline = time.monotonic() + GUARD_S
        while count_jobs(store, "queued") + count_jobs(store, "running") and time.monotonic() < deadline:
            time.sleep(0.5)
        views = [get_job(store, j) for j in jobs]
        done = sum(1 for v in views if v is not None and v.status == "done" and v.done == v.total)
        print(f"\njobs: {len(jobs)} submitted and accepted, {done} done once, {count_jobs(store, 'failed')} failed")
        store.engine.dispose()


if __name__ == "__main__":
    main()
