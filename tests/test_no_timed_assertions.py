"""No test asserts a wall-clock duration: a bound on ``perf_counter() - start`` fails on a busy machine
and proves nothing about the code (timings belong in benchmarks/). A test may count work or calls, or
wait for a condition with a deadline (a guard against hangs, not a measurement).

The same holds for durations the code measured and put in its results: an ordering comparison (<, <=,
>, >=) of a duration field (``latency_ms``, ``service_ms``, ``queue_ms``, ``*_seconds``, ``elapsed`` …)
is a timing assertion too, except against 0 (a duration was recorded at all; load only makes it larger).
Equality on a duration is allowed: it holds only for values a test scripted (a fake clock), never for a
measurement. A bound that is about a value the test set (a job created 300 s ago is at least 300 s old)
carries ``# duration-ok: <reason>`` on its line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time"}


# Names of fields, variables and keys that hold a duration.
DURATION_NAME = re.compile(r"._(ms|s|secs|seconds)$|(^|_)(elapsed|duration|latency|took)$")
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _duration_refs(node: ast.AST) -> bool:
    """Whether ``node`` reads a duration field directly (not inside a nested comparison of its own)."""
    if isinstance(node, ast.Compare):
        return False
    name = (
        node.id
        if isinstance(node, ast.Name)
        else node.attr
        if isinstance(node, ast.Attribute)
        else node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        else None
    )
    if name is not None and DURATION_NAME.search(name):
        return True
    return any(_duration_refs(child) for child in ast.iter_child_nodes(node))


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0 and not isinstance(node.value, bool)


def _field_ordering(compare: ast.Compare) -> bool:
    """An ordering comparison of a duration field with anything but 0."""
    operands = [compare.left, *compare.comparators]
    for i, op in enumerate(compare.ops):
        if not isinstance(op, ORDERING):
            continue
        left, right = operands[i], operands[i + 1]
        if (_duration_refs(left) and not _is_zero(right)) or (_duration_refs(right) and not _is_zero(left)):
            return True
    return False


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
    allowed = {n for n, line in enumerate(source.splitlines(), 1) if "# duration-ok:" in line}
    durations: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _duration(node.value, durations):
            durations.update(t.id for t in node.targets if isinstance(t, ast.Name))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            compares = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare)]
            if any(_duration(c, durations) for c in compares) or (
                any(_field_ordering(c) for c in compares) and node.lineno not in allowed
            ):
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
    fields = (
        "assert r.service_ms >= 30\n"
        "assert sum(r.queue_ms for r in rs) > sum(r.service_ms for r in rs) * 0.5\n"
        "assert rec['latency_ms'] < 500\n"
        "assert 0 <= stats['age_seconds'] < 120\n"
        "assert r.latency_ms > 0 and rec['queue_ms'] >= 0\n"
        "assert sum(1 for r in rs if r.queue_ms > 0) >= 3\n"
        "assert sorted(r.queue_ms for r in rs) == [0, 30, 60]\n"
        "assert stats['age_seconds'] >= 300  # duration-ok: created 300 s ago by the test\n"
        "assert len(r.samples) > 2 and r.score >= 0.5\n"
    )
    assert timed_assertions(fields) == [1, 2, 3, 4]


def test_no_test_asserts_a_wall_clock_duration() -> None:
    found = {
        path.name: lines
        for path in sorted(Path(__file__).parent.rglob("*.py"))
        if (lines := timed_assertions(path.read_text(encoding="utf-8")))
    }
    assert found == {}
