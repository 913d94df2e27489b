"""Where a runner child's CPU goes: shares of a py-spy raw recording (``bench_runner.py --profile DIR
--gil``), counted over the samples inside the run (``execute_run``, the store writer, worker threads).

Run: python benchmarks/runner/spy_shares.py DIR/this-off-10000-0.txt [more files]
"""

from __future__ import annotations

import sys
from collections.abc import Callable

Stack = list[str]

# (label, frame substring): a sample counts for a label when any of its frames contains the substring.
PARTS: list[tuple[str, str]] = [
    ("safety gate (offline_tier)", "offline_tier ("),
    ("  its PII rules (detect_pii)", "detect_pii ("),
    ("  its manipulation rules", "_manipulation_hits ("),
    ("aiohttp request path", "_BaseRequestContextManager"),
    ("pydantic", "pydantic/"),
    ("  to_record", "to_record ("),
    ("_combine", "_combine ("),
    ("render_prompt", "render_prompt ("),
    ("parse_reply", "parse_reply ("),
    ("store writes (persist_batch)", "persist_batch"),
    ("LLM cache (lookup_batch)", "lookup_batch"),
    ("review loop (process_results)", "process_results"),
    ("imports during the run", "_find_and_load"),
]


def read(path: str) -> list[tuple[Stack, int]]:
    """(frames, count) per line of a py-spy ``-f raw`` file."""
    out: list[tuple[Stack, int]] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack:
                out.append((stack.split(";"), int(count)))
    return out


def in_run(stack: Stack) -> bool:
    """Inside the timed run: the runner's tasks, its writer thread or a worker-pool thread."""
    return any("execute_run" in f or "persist_batch" in f or "_worker (concurrent" in f for f in stack)


def shares(rows: list[tuple[Stack, int]]) -> tuple[int, list[tuple[str, float]]]:
    """Samples inside the run and each part's share of them in per cent."""
    run = [(s, n) for s, n in rows if in_run(s)]
    total = sum(n for _, n in run) or 1

    def share(test: Callable[[Stack], bool]) -> float:
        return 100 * sum(n for s, n in run if test(s)) / total

    return total, [(label, share(lambda s, k=key: any(k in f for f in s))) for label, key in PARTS]


def main() -> None:
    for path in sys.argv[1:]:
        total, parts = shares(read(path))
        print(f"{path}: {total} samples inside the run")
        for label, value in parts:
            print(f"  {label:34s} {value:5.1f} %")


if __name__ == "__main__":
    main()
