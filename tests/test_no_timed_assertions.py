"""No test asserts a wall-clock duration: a bound on ``perf_counter() - start`` fails on a busy machine
and proves nothing about the code (timings belong in benchmarks/). A test may count work or calls, or
wait for a condition with a deadline (a guard against hangs, not a measurement)."""

from __future__ import annotations

import ast
from pathlib import Path

CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time"}


def _is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in CLOCKS


def _duration(node: ast.AST, durations: set[str]) -> bool:
    """Whether ``node`` holds a measured duration: a clock reading minus something, or a name bound to one."""
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.BinOp)
            and isinstance(sub.op, ast.Sub)
            and (_is_clock_call(sub.left) or _is_clock_call(sub.right))
        ):
            return True
        if isinstance(sub, ast.Name) and sub.id in durations:
            return True
    return False


def timed_assertions(source: str) -> list[int]:
    """Lines of ``assert`` statements that compare a measured duration."""
    tree = ast.parse(source)
    durations: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _duration(node.value, durations):
            durations.update(t.id for t in node.targets if isinstance(t, ast.Name))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            compares = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare)]
            if any(_duration(c, durations) for c in compares):
                lines.append(node.lineno)
    return lines


def test_the_check_finds_the_shapes_it_forbids() -> None:
    measured = (
        "import time\nstarted = time.perf_counter()\nwork()\nelapsed = time.perf_counter() - started\n"
        "assert elapsed >= 0.95\nassert (time.perf_counter() - started) / 20 < 0.05\n"
    )
    assert timed_assertions(measured) == [5, 6]
    guard = "import time\ndeadline = time.monotonic() + 30\nwhile busy():\n    assert time.monotonic() < deadline\n"
    assert timed_assertions(guard) == []


def test_no_test_asserts_a_wall_clock_duration() -> None:
    found = {
        path.name: lines
        for path in sorted(Path(__file__).parent.rglob("*.py"))
        if (lines := timed_assertions(path.read_text(encoding="utf-8")))
    }
    assert found == {}
