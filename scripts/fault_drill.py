"""A fault drill of the scoring service, as an operator would run one before trusting a deployment.

N async jobs (single samples and sessions) go to two API replicas (``bqas serve --no-worker``) that two
job workers (``bqas worker``) drain, all over one PostgreSQL server of the drill's own. While the jobs
come in, the drill kills processes by PID and restarts them, and restarts PostgreSQL:

1. a worker is SIGKILLed (its leased jobs must be claimed again by the other worker) and restarted;
2. an API replica is SIGKILLed (its clients fail over to the other replica and retry with the same
   ``Idempotency-Key``: a submission it stored before dying must not become a second job) and restarted;
3. PostgreSQL is stopped at once (every connection drops) and started again after a few seconds
   (clients must get 503 with ``Retry-After``, never 500; workers must ride through).

The clients behave like the Python client behind a load balancer: each logical submission has one
idempotency key; a dropped connection, a timeout or a 503 is retried on the next replica with that key.
At the end the drill reads the database and checks, for every logical submission, that exactly one job
exists, that it finished ``done`` with every turn stored once and ``done == total``; it prints what the
clients saw (answers by status, transport errors, retries, fail-overs) and exits 1 when a check fails.

    .venv/bin/python scripts/fault_drill.py --jobs 120              # a few minutes on 2 shared cores
    .venv/bin/python scripts/fault_drill.py --jobs 400 --json drill.json

It needs PostgreSQL's server binaries (``scripts/ci-postgres.sh`` installs them) and, run as root, the
``postgres`` user; everything it starts is on 127.0.0.1 and ends with it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

TURN_TEXTS = [
    ("Erinnere mich morgen an die Konferenz", "Ich erinnere dich morgen um 8 Uhr an die Konferenz.", "reminder"),
    (
        "Schreib einen Elternbrief zum Wandertag",
        "Hier ist ein Entwurf für den Elternbrief zum Wandertag.",
        "parent_letter",
    ),
    (
        "Erstelle ein Arbeitsblatt zu Brüchen",
        "Ich habe ein Arbeitsblatt mit zehn Bruchaufgaben erstellt.",
        "worksheet_generate",
    ),
    ("Stell einen Timer auf zehn Minuten", "Der Timer läuft zehn Minuten.", "timer"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _turn(i: int, t: int) -> dict[str, Any]:
    question, answer, intent = TURN_TEXTS[(i + t) % len(TURN_TEXTS)]
    return {"question": f"{question} ({i}.{t})", "answer": answer, "expected_intent": intent, "detected_intent": intent}


@dataclass
class Submission:
    """One logical submission of a client: its key, body and what the client saw until it had a job."""

    n: int
    path: str
    body: dict[str, Any]
    turns: int
    key: str = field(default_factory=lambda: str(uuid.uuid4()))
    job_id: str | None = None
    attempts: list[str] = field(default_factory=list)  # "202", "503", "ConnectError" … per try
    failovers: int = 0
    replayed: bool = False  # the 202 that gave the job said Idempotent-Replayed: an earlier try had stored it
    gave_up: str | None = None


@dataclass
class Process:
    name: str
    cmd: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    pids: list[int] = field(default_factory=list)

    def start(self) -> None:
        handle = self.log.open("ab")
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=handle, stderr=subprocess.STDOUT)
        self.pids.append(self.proc.pid)

    def kill(self) -> int:
        assert self.proc is not None
        pid = self.proc.pid
        os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        return pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


class Drill:
    def __init__(self, args: argparse.Namespace, work: Path):
        from bqas.testing.postgres import LocalPostgres

        self.args = args
        self.work = work
        self.pg = LocalPostgres()
        self.events: list[tuple[float, str]] = []
        self.t0 = time.monotonic()
        self.replicas: list[tuple[Process, str]] = []
        self.workers: list[Process] = []
        self.submissions: list[Submission] = []

    def event(self, text: str) -> None:
        at = time.monotonic() - self.t0
        self.events.append((round(at, 1), text))
        print(f"[{at:7.1f} s] {text}", flush=True)

    # -- set-up ---------------------------------------------------------------------------------------
    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BQAS_", "RAY_"))}
        env.update(
            BQAS_DATABASE_URL=self.pg.url,
            BQAS_HOME=str(self.work / "home"),
            BQAS_SERVICE_BACKEND="offline",
            BQAS_RATE_LIMIT="0",
            BQAS_OFFLINE_POOL="threads",  # one process per role: the drill is about the queue, not the pool
            BQAS_JOB_LEASE_SECONDS=str(self.args.lease),
            BQAS_JOB_POLL_SECONDS="0.2",
            BQAS_DB_RETRY_AFTER="2",
            BQAS_LLM_CACHE="false",
        )
        return env

    def start(self) -> str:
        self.pg.init()
        self.event(f"PostgreSQL started (pid {self.pg.pid()}, port {self.pg.port})")
        from bqas.store.db import open_store
        from bqas.store.service import create_api_key

        store = open_store(self.pg.url)  # migrates the new database once, before the roles start
        key = create_api_key(store, "drill")
        store.engine.dispose()
        env = self.environment()
        exe = [sys.executable, "-m", "bqas.cli.main"]
        for name in ("api-a", "api-b"):
            port = _free_port()
            cmd = [*exe, "serve", "--host", "127.0.0.1", "--port", str(port), "--no-worker", "--log-level", "warning"]
            process = Process(name, cmd, env, self.work / f"{name}.log")
            process.start()
            self.replicas.append((process, f"http://127.0.0.1:{port}"))
        for name in ("worker-1", "worker-2"):
            process = Process(name, [*exe, "worker", "--concurrency", "4"], env, self.work / f"{name}.log")
            process.start()
            self.workers.append(process)
        for process, url in self.replicas:
            self.wait_ready(process, url)
        self.event(
            "ready: "
            + ", ".join(f"{p.name} pid {p.pids[-1]}" for p, _ in self.replicas)
            + ", "
            + ", ".join(f"{w.name} pid {w.pids[-1]}" for w in self.workers)
        )
        return key

    def wait_ready(self, process: Process, url: str) -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert process.proc is not None
            if process.proc.poll() is not None:
                raise SystemExit(f"{process.name} exited; see {process.log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.3)
        raise SystemExit(f"{process.name} did not become ready; see {process.log}")

    # -- clients --------------------------------------------------------------------------------------
    def plan(self) -> None:
        rng = random.Random(self.args.seed)
        for n in range(self.args.jobs):
            if rng.random() < 0.5:
                turns = rng.randint(2, 4)
                body: dict[str, Any] = {
                    "judges": ["voice"],
                    "response_id": f"drill-{n}",
                    "turns": [_turn(n, t) for t in range(turns)],
                }
                self.submissions.append(Submission(n, "/api/score/session_async", body, turns))
            else:
                turn = _turn(n, 0)
                body = {
                    "judges": ["voice"],
                    "response_id": f"drill-{n}",
                    "question": turn["question"],
                    "answer": turn["answer"],
                    "sample": {"expected_intent": turn["expected_intent"], "detected_intent": turn["detected_intent"]},
                }
                self.submissions.append(Submission(n, "/api/score/async", body, 1))

    async def submit_all(self, key: str) -> None:
        """The clients: the submissions spread evenly over ``--duration`` seconds (so that every fault
        meets submissions in flight), at most ``--clients`` at once, each tried on the replicas in turn
        with one key."""
        headers = {"Authorization": f"Bearer {key}"}
        gate = asyncio.Semaphore(self.args.clients)
        step = self.args.duration / max(1, len(self.submissions))
        start = time.monotonic()

        async with httpx.AsyncClient(timeout=httpx.Timeout(15.0, connect=3.0)) as http:

            async def one(sub: Submission) -> None:
                await asyncio.sleep(max(0.0, start + sub.n * step - time.monotonic()))
                async with gate:
                    await self.submit(http, sub, headers, start=sub.n % 2)

            await asyncio.gather(*(one(sub) for sub in self.submissions))

    async def submit(self, http: httpx.AsyncClient, sub: Submission, headers: dict[str, str], start: int) -> None:
        replica = start
        for attempt in range(self.args.tries):
            url = self.replicas[replica][1]
            try:
                answer = await http.post(url + sub.path, json=sub.body, headers={**headers, "Idempotency-Key": sub.key})
            except httpx.TransportError as exc:
                sub.attempts.append(type(exc).__name__)
            else:
                sub.attempts.append(str(answer.status_code))
                if answer.status_code == 202:
                    sub.job_id = answer.json()["job_id"]
                    sub.replayed = answer.headers.get("Idempotent-Replayed") == "true"
                    return
                if answer.status_code != 503:  # 401, 409, 422, 500: not worth a retry
                    sub.gave_up = f"HTTP {answer.status_code}: {answer.text[:200]}"
                    return
            replica = (replica + 1) % len(self.replicas)  # the load balancer sends the retry elsewhere
            sub.failovers += 1
            await asyncio.sleep(min(0.5 * 2**attempt, 4.0))
        sub.gave_up = f"no job after {self.args.tries} tries"

    # -- faults ---------------------------------------------------------------------------------------
    async def faults(self) -> None:
        start = time.monotonic()

        async def when_submitted(share: float) -> None:  # the submissions run on a clock: so do the faults
            await asyncio.sleep(max(0.0, start + share * self.args.duration - time.monotonic()))

        await when_submitted(0.2)
        worker = self.workers[0]
        holding = await asyncio.to_thread(self.wait_holding, worker.pids[-1])
        pid = await asyncio.to_thread(worker.kill)
        self.event(
            f"SIGKILL {worker.name} (pid {pid}) while it held {holding} job(s): they wait for their lease "
            f"({self.args.lease:g} s), then the other worker claims them"
        )
        await asyncio.sleep(self.args.lease / 2)
        worker.start()
        self.event(f"{worker.name} restarted (pid {worker.pids[-1]})")

        await when_submitted(0.45)
        replica, url = self.replicas[0]
        pid = await asyncio.to_thread(replica.kill)
        self.event(f"SIGKILL {replica.name} (pid {pid}): its clients fail over to {self.replicas[1][0].name}")
        await asyncio.sleep(3)
        replica.start()
        await asyncio.to_thread(self.wait_ready, replica, url)
        self.event(f"{replica.name} restarted (pid {replica.pids[-1]}) and ready")

        await when_submitted(0.7)
        old = self.pg.pid()
        await asyncio.to_thread(self.pg.stop, "immediate")
        stopped = time.monotonic()
        self.event(f"PostgreSQL stopped at once (pid {old}): every connection dropped")
        await asyncio.sleep(self.args.pg_down)
        await asyncio.to_thread(self.pg.start)
        self.event(
            f"PostgreSQL accepts connections again (pid {self.pg.pid()}), {time.monotonic() - stopped:.1f} s "
            "after it stopped"
        )

    def wait_holding(self, pid: int, timeout: float = 20.0) -> int:
        """Wait (a little) until the worker with ``pid`` holds a job, so that its kill leaves work behind."""
        from sqlalchemy import create_engine, text

        engine = create_engine(self.pg.url)
        deadline = time.monotonic() + timeout
        held = 0
        try:
            while time.monotonic() < deadline:
                with engine.connect() as conn:
                    held = int(
                        conn.execute(
                            text("SELECT count(*) FROM service_jobs WHERE status = 'running' AND lease_owner LIKE :o"),
                            {"o": f"%:{pid}:%"},
                        ).scalar()
                        or 0
                    )
                if held:
                    return held
                time.sleep(0.05)
        finally:
            engine.dispose()
        return held

    async def run_clients(self, key: str) -> None:
        await asyncio.gather(self.submit_all(key), self.faults())
        self.event(
            f"clients done: {sum(1 for s in self.submissions if s.job_id)} of {len(self.submissions)} submissions "
            "have a job"
        )

    # -- the end --------------------------------------------------------------------------------------
    def drain(self) -> float:
        from sqlalchemy import create_engine, text

        engine = create_engine(self.pg.url)
        started = time.monotonic()
        deadline = started + self.args.drain_timeout
        try:
            while time.monotonic() < deadline:
                with contextlib.suppress(Exception), engine.connect() as conn:
                    left = conn.execute(
                        text("SELECT count(*) FROM service_jobs WHERE status IN ('queued', 'running')")
                    ).scalar()
                    if left == 0:
                        return time.monotonic() - started
                time.sleep(0.5)
        finally:
            engine.dispose()
        return float("nan")

    def check(self) -> dict[str, Any]:
        from sqlalchemy import create_engine, text

        engine = create_engine(self.pg.url)
        with engine.connect() as conn:
            jobs = (
                conn.execute(text("SELECT id, kind, status, total, done, claims, request, error FROM service_jobs"))
                .mappings()
                .all()
            )
            items = conn.execute(
                text("SELECT job_id, seq, count(*) AS n FROM service_job_items GROUP BY job_id, seq")
            ).all()
            recoveries = conn.execute(
                text("SELECT coalesce(max(value), 0) FROM service_counters WHERE name = 'lease_recoveries'")
            ).scalar()
        engine.dispose()
        by_response: dict[str, list[Any]] = {}
        for job in jobs:
            request = job["request"] if isinstance(job["request"], dict) else json.loads(job["request"])
            by_response.setdefault(str(request["body"].get("response_id")), []).append(job)
        stored: dict[str, Counter[int]] = {}
        for job_id, seq, n in items:
            stored.setdefault(job_id, Counter())[seq] = n
        problems: list[str] = []
        for sub in self.submissions:
            found = by_response.get(f"drill-{sub.n}", [])
            if sub.gave_up and not found:
                continue  # never stored: the client knows it failed (counted below)
            if len(found) != 1:
                problems.append(f"drill-{sub.n}: {len(found)} jobs (expected exactly 1)")
                continue
            job = found[0]
            if sub.job_id is not None and sub.job_id != job["id"]:
                problems.append(f"drill-{sub.n}: the client was told {sub.job_id}, the store has {job['id']}")
            if job["status"] != "done":
                problems.append(f"drill-{sub.n}: {job['status']} ({job['error']})")
            turns = stored.get(job["id"], Counter())
            if sorted(turns) != list(range(sub.turns)) or any(n != 1 for n in turns.values()):
                problems.append(f"drill-{sub.n}: turns stored {dict(turns)} of {sub.turns}")
            if job["done"] != job["total"] or job["total"] != sub.turns:
                problems.append(f"drill-{sub.n}: progress {job['done']}/{job['total']} of {sub.turns} turns")
        stray = [r for r in by_response if not r.startswith("drill-")]
        problems += [f"a job without a drill submission: {r}" for r in stray]
        attempts = Counter(a for s in self.submissions for a in s.attempts)
        return {
            "jobs_submitted": len(self.submissions),
            "sessions": sum(1 for s in self.submissions if s.turns > 1),
            "turns": sum(s.turns for s in self.submissions),
            "clients": {
                "with_a_job": sum(1 for s in self.submissions if s.job_id),
                "gave_up": sum(1 for s in self.submissions if s.gave_up),
                "answers": dict(sorted(attempts.items())),
                "retried_submissions": sum(1 for s in self.submissions if len(s.attempts) > 1),
                "failovers": sum(s.failovers for s in self.submissions),
                # A try whose answer was lost had stored the job; the retry got that job, not a second one.
                "replayed_after_lost_reply": sum(1 for s in self.submissions if s.replayed),
            },
            "database": {
                "jobs": len(jobs),
                "done": sum(1 for j in jobs if j["status"] == "done"),
                "failed": sum(1 for j in jobs if j["status"] == "failed"),
                "submissions_with_more_than_one_job": sum(1 for v in by_response.values() if len(v) > 1),
                "turns_stored": sum(sum(c.values()) for c in stored.values()),
                "turns_stored_twice": sum(1 for c in stored.values() for n in c.values() if n > 1),
                "jobs_claimed_more_than_once": sum(1 for j in jobs if j["claims"] > 1),
                "lease_recoveries_counted": int(recoveries or 0),
            },
            "problems": problems,
        }

    def stop(self) -> None:
        for process in [*self.workers, *(p for p, _ in self.replicas)]:
            process.stop()
        self.pg.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--jobs", type=int, default=120, help="logical submissions (half of them sessions of 2-4 turns)"
    )
    parser.add_argument("--clients", type=int, default=8, help="clients submitting at once")
    parser.add_argument("--duration", type=float, default=90.0, help="seconds over which the submissions are spread")
    parser.add_argument("--tries", type=int, default=12, help="tries per submission before a client gives up")
    parser.add_argument("--lease", type=float, default=6.0, help="BQAS_JOB_LEASE_SECONDS of the workers")
    parser.add_argument("--pg-down", type=float, default=4.0, help="seconds PostgreSQL stays down")
    parser.add_argument("--drain-timeout", type=float, default=600.0, help="seconds to wait for the queue to empty")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs of every process)")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bqas-drill-"))
    drill = Drill(args, work)
    try:
        key = drill.start()
        drill.plan()
        asyncio.run(drill.run_clients(key))
        drained = drill.drain()
        drill.event(f"queue drained {drained:.1f} s after the last submission")
        result = {"events": drill.events, **drill.check(), "drain_seconds": round(drained, 1), "logs": str(work)}
    finally:
        drill.stop()
    print(json.dumps({k: v for k, v in result.items() if k != "events"}, indent=2, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    ok = not result["problems"] and result["clients"]["gave_up"] == 0
    print("DRILL PASSED" if ok else "DRILL FAILED", flush=True)
    if not args.keep and ok:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
