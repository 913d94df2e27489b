"""A drill: does ``/api/score`` keep answering 200 for a verified key through a long database outage?

Two ``bqas serve`` processes (each with its in-process job worker, the shipped defaults otherwise) on
127.0.0.1 over one PostgreSQL. Once both have verified the key, every process of the PostgreSQL server is
stopped with SIGSTOP for ``--outage`` seconds (connections stay open and nothing answers: the fault of an
overloaded host or a partitioned network) and SIGCONTed afterwards, whatever happens. During the outage a
client calls ``/api/score`` on every replica at a steady rate (``--rate`` calls per second per replica,
sent on a clock, not after the previous answer) with that key, while other clients keep submitting async
jobs (``--submit-rate``, with an Idempotency-Key) as users do; the key's 30 s cache freshness runs out
early in the outage, so the cache's stale fallback is what keeps scoring going.

Printed per replica and kind of call: answers by status code, how many carried ``X-BQAS-Key-Check:
stale``, and the min / median / max seconds to answer with the moment (seconds into the outage) of the
longest; then the seconds from the thaw until every replica accepted a submission, and the jobs: how
many were accepted, done once, failed. ``uptime`` is read before and after (the machine is shared: quote
the figures with its load). Exits 1 when a score call was not answered 200 or a job failed.

    .venv/bin/python benchmarks/service/drill_score_outage.py                      # its own PostgreSQL
    .venv/bin/python benchmarks/service/drill_score_outage.py --outage 120 \\
        --database-url "$(scripts/ci-postgres.sh)"                                  # a server of yours

With ``--database-url`` the server is found by the process listening on the URL's port (it must run on
this machine and the drill must be allowed to signal it, e.g. as root); without it the drill starts one of
its own (``bqas.testing.postgres``, PostgreSQL's server binaries as ``scripts/ci-postgres.sh`` installs
them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

BODY = {
    "judges": ["voice"],
    "question": "Erinnere mich an die Konferenz",
    "answer": "Ich erinnere dich morgen um 8 Uhr.",
    "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
}
KEY_CHECK = "X-BQAS-Key-Check"


def count_jobs(store: Any, status: str) -> int:
    """Jobs in ``status``, whoever submitted them."""
    from sqlalchemy import func, select

    from bqas.store.service import Job

    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(Job).where(Job.status == status)) or 0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def _listening_pid(port: int) -> int:
    """The process listening on TCP ``port`` of this machine (the postmaster), from /proc."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table, encoding="ascii") as fh:
            for line in list(fh)[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
                    inodes.add(fields[9])
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{entry}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry}/fd/{fd}") in wanted:
                        return int(entry)
    raise SystemExit(f"no process of this machine listens on port {port} (or it may not be inspected)")


def _with_descendants(root: int) -> list[int]:
    """``root`` and every process under it (for PostgreSQL: backends, checkpointer, WAL writer, ...)."""
    found, todo = [root], [root]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                children = [int(c) for c in task.read_text().split()]
                found.extend(children)
                todo.extend(children)
    return found


@contextlib.contextmanager
def frozen(postmaster: int) -> Iterator[list[int]]:
    """Every server process SIGSTOPped (the postmaster first: it starts no new backend), SIGCONT after."""
    stopped: list[int] = []
    try:
        for pid in _with_descendants(postmaster):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
        yield stopped
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


class Replica:
    def __init__(self, name: str, url: str, work: Path, key_cache: float | None):
        self.name = name
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BQAS_", "RAY_"))}
        env.update(BQAS_DATABASE_URL=url, BQAS_HOME=str(work / name), BQAS_LLM_CACHE="false")
        if key_cache is not None:
            env["BQAS_API_KEY_CACHE_SECONDS"] = str(key_cache)
        self.log = work / f"{name}.log"
        cmd = [sys.executable, "-m", "bqas.cli.main", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        with self.log.open("ab") as handle:
            self.proc = subprocess.Popen(
                [*cmd, "--log-level", "warning"], env=env, stdout=handle, stderr=subprocess.STDOUT
            )

    def wait_ready(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.name} exited; see {self.log}")
            with contextlib.suppress(httpx.HTTPError, ValueError):
                if httpx.get(f"{self.base}/healthz", timeout=5).json().get("models") == "ready":
                    return
            time.sleep(0.5)
        raise SystemExit(f"{self.name} did not load its models within {timeout:g} s; see {self.log}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


Answer = dict[str, Any]  # replica, kind, at (s into the outage), code, seconds, stale, error


async def _clients(replicas: list[Replica], key: str, args: argparse.Namespace, start: float) -> list[Answer]:
    """Score calls and submissions on a clock for ``args.outage`` seconds; each call waits up to the guard."""
    answers: list[Answer] = []
    auth = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=args.guard, limits=limits) as http:

        async def call(replica: Replica, kind: str, when: float) -> None:
            await asyncio.sleep(max(0.0, start + when - time.monotonic()))
            sent = time.monotonic()
            code, stale, error = 0, False, None  # 0: no answer within the guard, or the connection failed
            try:
                if kind == "score":
                    answer = await http.post(f"{replica.base}/api/score", json=BODY, headers=auth)
                    stale = answer.headers.get(KEY_CHECK, "").startswith("stale")
                else:
                    headers = {**auth, "Idempotency-Key": str(uuid.uuid4())}
                    answer = await http.post(f"{replica.base}/api/score/async", json=BODY, headers=headers)
                code = answer.status_code
                if code >= 400:
                    with contextlib.suppress(ValueError, AttributeError):
                        error = answer.json().get("error")  # database_unavailable, overloaded, ...
            except httpx.HTTPError as exc:
                error = type(exc).__name__
            answers.append(
                {
                    "replica": replica.name,
                    "kind": kind,
                    "at": round(sent - start, 2),
                    "code": code,
                    "seconds": time.monotonic() - sent,
                    "stale": stale,
                    "error": error,
                }
            )

        calls = []
        for replica in replicas:
            n = int(args.outage * args.rate)
            calls += [call(replica, "score", i / args.rate) for i in range(n)]
            if args.submit_rate > 0:
                m = int(args.outage * args.submit_rate)
                calls += [call(replica, "submit", (i + 0.5) / args.submit_rate) for i in range(m)]
        await asyncio.gather(*calls)
    return answers


def _summary(answers: list[Answer]) -> dict[str, Any]:
    groups: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for a in answers:
        groups[(a["replica"], a["kind"])].append(a)
    out: dict[str, Any] = {}
    for (replica, kind), seen in sorted(groups.items()):
        times = [a["seconds"] for a in seen]
        longest = max(seen, key=lambda a: a["seconds"])
        out[f"{replica} {kind}"] = {
            "codes": dict(sorted(Counter(str(a["code"]) for a in seen).items())),
            "errors": dict(sorted(Counter(str(a["error"]) for a in seen if a["error"]).items())),
            "stale": sum(1 for a in seen if a["stale"]),
            "min_s": round(min(times), 3),
            "median_s": round(statistics.median(times), 3),
            "max_s": round(longest["seconds"], 3),
            "max_at_s": longest["at"],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outage", type=float, default=120.0, help="seconds PostgreSQL stays frozen")
    parser.add_argument("--rate", type=float, default=2.0, help="score calls per second to each replica")
    parser.add_argument("--submit-rate", type=float, default=0.5, help="async submissions per second to each replica")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--guard", type=float, default=120.0, help="seconds a client waits for an answer")
    parser.add_argument(
        "--key-cache-seconds", type=float, help="BQAS_API_KEY_CACHE_SECONDS of the replicas (default: theirs, 30 s)"
    )
    parser.add_argument("--database-url", help="a PostgreSQL of this machine (default: one of the drill's own)")
    parser.add_argument("--json", type=Path, help="also write every answer and the summary here")
    args = parser.parse_args(argv)

    from bqas.store.db import open_store
    from bqas.store.service import create_api_key

    work = Path(tempfile.mkdtemp(prefix="bqas-drill-score-"))
    own = None
    if args.database_url:
        url = args.database_url
    else:
        from bqas.testing.postgres import LocalPostgres

        own = LocalPostgres().init()
        url = own.url
    port = urlsplit(url).port or 5432
    replicas: list[Replica] = []
    try:
        postmaster = _listening_pid(port)
        store = open_store(url)  # migrates a new database once, before the replicas start
        key = create_api_key(store, "drill")
        replicas = [
            Replica(f"api-{chr(ord('a') + n)}", url, work, args.key_cache_seconds) for n in range(args.replicas)
        ]
        for replica in replicas:
            replica.wait_ready()
        auth = {"Authorization": f"Bearer {key}"}
        for replica in replicas:  # each replica verifies the key before the outage
            first = httpx.post(f"{replica.base}/api/score", json=BODY, headers=auth, timeout=60)
            if first.status_code != 200:
                raise SystemExit(f"{replica.name}: the key was not accepted before the outage: {first.text}")
        before = _load()
        print(f"before: {before}", flush=True)
        with frozen(postmaster) as stopped:
            start = time.monotonic()
            print(f"froze {len(stopped)} PostgreSQL processes for {args.outage:g} s", flush=True)
            answers = asyncio.run(_clients(replicas, key, args, start))
            # The last calls may end before the outage does; the freeze lasts its full length regardless.
            time.sleep(max(0.0, start + args.outage - time.monotonic()))
            frozen_for = time.monotonic() - start
        thawed = time.monotonic()
        recovered: dict[str, float] = {}
        for replica in replicas:
            while True:
                back = httpx.post(f"{replica.base}/api/score/async", json=BODY, headers=auth, timeout=args.guard)
                if back.status_code == 202:
                    recovered[replica.name] = round(time.monotonic() - thawed, 2)
                    break
                time.sleep(0.1)
        after = _load()
        deadline = time.monotonic() + 300
        while count_jobs(store, "queued") + count_jobs(store, "running") and time.monotonic() < deadline:
            time.sleep(0.5)
        accepted = [a for a in answers if a["kind"] == "submit" and a["code"] == 202]
        failed = count_jobs(store, "failed")
        done = count_jobs(store, "done")
        store.engine.dispose()
        summary = {
            "outage_s": round(frozen_for, 1),
            "replicas": args.replicas,
            "score_rate_per_replica": args.rate,
            "submit_rate_per_replica": args.submit_rate,
            "answers": _summary(answers),
            "score_not_200": sum(1 for a in answers if a["kind"] == "score" and a["code"] != 200),
            "longest_score_s": round(max(a["seconds"] for a in answers if a["kind"] == "score"), 3),
            "accepted_after_thaw_s": recovered,
            "jobs": {"accepted_during_outage": len(accepted), "done": done, "failed": failed},
            "load_before": before,
            "load_after": after,
        }
    finally:
        for replica in replicas:
            replica.stop()
        if own is not None:
            own.close()
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({**summary, "every_answer": answers}, indent=2), encoding="utf-8")
    ok = summary["score_not_200"] == 0 and failed == 0
    print("DRILL PASSED" if ok else f"DRILL FAILED (logs in {work})", flush=True)
    if ok:  # the replicas' logs are kept only for a failed drill
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
