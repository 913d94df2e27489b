"""The shell and curl examples of README.md and docs/*.md run as written.

Marking convention (for everyone who adds a doc example):

* A fenced block whose info string has the word ``runnable`` after the language (```` ```bash runnable ````
  or ```` ```sh runnable ````) is executed by this test: the whole block as one bash script, in a scratch
  folder that has the repository's ``scenarios/``, ``configs/`` and ``docs/`` in it, with this venv's
  ``bqas`` on PATH, an empty ``BQAS_HOME`` and the default embedder (what a user gets). A command that
  exits 2 or more fails the test (1 is a gate missed: an outcome, not a broken example); so does a curl
  that gets an HTTP error (it runs with ``--fail-with-body``).
* What a reader copies is what runs, except for these placeholders, replaced before running:
  ``127.0.0.1:8765`` (the service: a ``bqas serve`` this test starts on a free port, with a key of tenant
  ``acme``), ``KEY=bqas_...`` (that key), ``--port 8790`` / ``BQAS_DEMO_PORT`` (the demo assistant on a
  free port), ``RUN_ID`` (the newest stored run), ``RUN_A`` / ``RUN_B`` (the two newest runs of one scenario),
  ``SCENARIO`` (scenarios/voice_de.yaml) and a job id ``j-`` + 24 hex digits (the job the previous curl
  created). A line ending in ``&`` with ``--port N`` is waited for until the port answers.
* After a curl command, comment lines (``# {...}``) show its answer: every ``"key": value`` pair in them
  with a number, string, true, false or null value must be in the actual answer (ids and values with
  ``…`` are left out), so documented values cannot go stale. A GET of ``/api/jobs/…`` is repeated until
  the job is done, as a reader polls.
* Lines that cannot run in a test are listed in ``NOT_RUN`` with the reason (servers that run until
  stopped, a Ray cluster); each entry must still match a documented line.
* Every other shell block (```` ```bash ````, ``sh``, ``shell``, ``console``) must be named, by its page and
  its first line, in ``RUN_ELSEWHERE`` (the test file that executes it, which must name the page) or in
  ``NOT_RUN_BLOCKS`` (why no test runs it: Docker, an LLM server, a benchmark of minutes, shared/ data
  sets, …); a new block that is none of the three fails ``test_every_shell_block_is_run_or_listed``.
* Every ``/api/…`` path named anywhere in README.md and docs/ must be a route of the service.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(\s*)```(\w*)([^\n`]*)$")

#: Documented lines that are not executed here, with the reason; each pattern must match a doc line.
NOT_RUN: dict[str, str] = {
    r"^source \.venv/bin/activate": "this test puts the venv's bin folder on PATH",
    r"^bqas review\b": "serves until stopped (tests/test_review_*.py start it)",
    r"^bqas view\b": "serves until stopped (tests/test_viewer_*.py start it)",
    r"^bqas keys create \S+ && bqas serve": "serves until stopped (this test starts `bqas serve` itself)",
    r"^bqas serve\b": "serves until stopped (this test starts `bqas serve` itself)",
    r"^bqas worker\b": "works until stopped (tests/test_service_replicas.py runs it)",
    r"--ray\b": "needs a Ray cluster (tests/test_ray_*.py)",
    r"^scripts/bootstrap\.sh\b": "this test runs in the venv that the bootstrap made",
    r"--judge-model MODEL\b": "needs an LLM server (MODEL: the reader's judge model)",
    r"--backend llm\b": "needs an LLM server (none is reachable here; the LLM path is tested on the scripted server)",
}

SHELL = {"bash", "sh", "shell", "console"}
#: A fence without a language that starts with a command is a shell block too (label it ```bash).
COMMAND = re.compile(r"^(\$ )?(bqas|curl|python3?|pip|docker|nice|\.venv/|scripts/|benchmarks/)\b")

#: Unmarked shell blocks that another test executes: (page, the block's first line) -> that test file.
RUN_ELSEWHERE: dict[tuple[str, str], str] = {
    ("docs/judge-check.md", "bqas judge-check --judge voice --backend offline"): "tests/test_judge_check.py",
    ("docs/judge-check.md", "bqas judge-check --list"): "tests/test_judge_check.py",
    ("docs/redteam.md", "bqas redteam --list"): "tests/test_redteam_docs.py",
    ("docs/redteam.md", "bqas demo-assistant --tenants --port 8791 &"): "tests/test_redteam_docs.py",
    ("docs/redteam.md", "bqas demo-assistant --tenants --leaky --port 8791 &"): "tests/test_redteam_docs.py",
    ("docs/redteam.md", "bqas redteam --target '{type: http"): "tests/test_redteam_docs.py",
    ("docs/redteam.md", ".venv/bin/python benchmarks/redteam/grader_quality.py --set heldout"): (
        "tests/test_redteam_heldout.py"
    ),
    ("docs/synth-rag.md", "bqas synth-rag --docs src/bqas/demo/docs"): "tests/test_ragsynth_loop.py",
    ("docs/targets.md", "bqas synth --intent reminder --count 50 --typos"): "tests/test_targets_docs.py",
    ("docs/targets.md", "bqas run qa/reminders.yaml"): "tests/test_targets_docs.py",
    ("docs/targets.md", "bqas run --resume RUN_ID --retry-target-errors"): "tests/test_targets_retry_errors.py",
}

#: Unmarked shell blocks that no test executes, with the reason: (page, the block's first line) -> why.
NOT_RUN_BLOCKS: dict[tuple[str, str], str] = {
    ("README.md", "scripts/demo.sh"): "demo.sh bootstraps the venv and runs the quick tour's voice scenario "
    "(the quick tour block runs here); test.sh is the whole suite, which CI runs",
    ("README.md", "export BQAS_LLM_BASE_URL=http://localhost:8000/v1"): "needs an LLM server",
    ("README.md", "bqas run scenarios/voice_de.yaml --backend auto --llm-gguf"): "needs a 7B GGUF model file "
    "(the engine is tested with SmolLM2 in tests/test_local_engine_llm.py)",
    ("docs/calibration.md", "bqas calibrate --gold gold.jsonl --judge rag_hallucination"): "gold.jsonl and "
    "flat.csv.jsonl are the reader's files; most lines need an LLM server",
    ("docs/calibration.md", ".venv/bin/python benchmarks/trust/prepare_gold.py"): "needs the shared/ data "
    "sets; a benchmark of minutes",
    ("docs/calibration.md", "nice .venv/bin/python benchmarks/offline/bench_grounding_model.py"): "needs the "
    "shared/ data sets; a benchmark of minutes",
    ("docs/calibration.md", "grep '\"lang:en\"' /tmp/bqas-gold/rag_faithfulness_memerag.jsonl"): "needs the "
    "gold files prepare_gold.py makes from the shared/ data sets",
    ("docs/calibration.md", "bqas calibrate fit --gold gold.jsonl"): "gold.jsonl is the reader's file; a line "
    "needs an LLM, one reviews in the store (tests/test_trust_cli.py runs calibrate fit)",
    ("docs/calibration.md", "nice .venv/bin/python benchmarks/trust/bench_trust.py --repeat 5"): "a benchmark "
    "of minutes on the shared/ data sets",
    ("docs/ci.md", "bqas ci-summary runs/pr --baseline runs/base"): "needs the two runs of a CI job "
    "(tests/test_ci_summary.py and tests/test_ci_pr_gate.py run ci-summary on such runs)",
    ("docs/ci.md", "bqas run qa/voice_de.yaml --out bqas-out --no-progress"): "qa/voice_de.yaml is the "
    "reader's scenario, a step of their CI workflow",
    ("docs/deploy.md", "export BQAS_DB_PASSWORD=change-me"): "needs Docker (tests/test_deploy_compose.py "
    "checks the compose file)",
    ("docs/deploy.md", ".venv/bin/python scripts/fault_drill.py --jobs 200 --duration 90"): "a drill of about "
    "3 minutes",
    ("docs/dify.md", "bqas keys create dify"): "names the reader's host (bqas.internal) and serves until stopped",
    ("docs/grounding-model.md", "bqas grounding-model train --data ../shared/datasets"): "needs the shared/ "
    "data sets and writes the shipped model",
    ("docs/grounding-model.md", "scripts/bootstrap.sh --dev"): "needs the shared/ data sets and WiCE; trains "
    "for up to 75 minutes",
    ("docs/intents.md", 'bqas classify "Erinnere mich morgen an die Notenabgabe"'): "needs the reader's files "
    "(texts.jsonl, my_examples.jsonl) and an LLM server (tests/test_intents.py runs bqas classify)",
    ("docs/intents.md", "bqas eval-intents DATASET.jsonl [--text-field text]"): "a synopsis of the options, "
    "not a command",
    ("docs/intents.md", ".venv/bin/python benchmarks/offline/bench_intents_synth.py"): "a benchmark of minutes",
    ("docs/intents.md", ".venv/bin/python benchmarks/offline/bench_intents_xsid.py"): "needs the shared/ data "
    "sets; about 150 s",
    ("docs/llm.md", "pip install 'bqas[local]'"): "needs a 7B GGUF model file and installs a package",
    ("docs/pii.md", ".venv/bin/python benchmarks/offline/bench_pii_de.py"): "needs the shared/ data set "
    "(GermEval 2014); a benchmark",
    ("docs/ragas.md", "scripts/bootstrap.sh --dev"): "installs; the tests run in that install",
    ("docs/ragas.md", "nice .venv/bin/python benchmarks/peers/bench_ragas.py"): "a benchmark of minutes",
    ("docs/ray.md", "pip install 'bqas[ray]'"): "needs a Ray cluster (tests/test_ray_*.py start a local one)",
    ("docs/ray.md", "python3 -c 'import secrets; print(secrets.token_hex(32))' > /etc/bqas/ray_token"): "sets "
    "up Ray nodes (root, several hosts)",
    ("docs/review.md", "bqas gold export --tenant acme --judge voice"): "needs reviewed items; "
    "tests/test_review_loop.py exports and calibrates from a store with reviews",
    ("docs/review.md", "bqas run scenarios/voice_de.yaml"): "bqas review serves until stopped; the labels come "
    "from a person (tests/test_review_loop.py)",
    ("docs/viewer.md", "bqas view"): "serves until stopped (tests/test_viewer_*.py start it)",
}


@dataclass
class Block:
    path: Path
    line: int
    text: str

    @property
    def name(self) -> str:
        return f"{_page(self.path)}:{self.line}"


def fenced(paths: list[Path] = DOCS) -> Iterator[tuple[str, set[str], Block]]:
    """Every fenced block: its language, the other words of its info string, the block."""
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        n = 0
        while n < len(lines):
            found = FENCE.match(lines[n])
            if found:
                indent, start = found.group(1), n
                body = []
                n += 1
                while n < len(lines) and not lines[n].strip().startswith("```"):
                    body.append(lines[n].removeprefix(indent))
                    n += 1
                yield found.group(2), set(found.group(3).split()), Block(path, start + 1, "\n".join(body) + "\n")
            n += 1


def blocks(paths: list[Path] = DOCS) -> Iterator[Block]:
    """The fenced blocks marked ``runnable``, with their file and first line."""
    for _, words, block in fenced(paths):
        if "runnable" in words:
            yield block


def _page(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _key(block: Block) -> tuple[str, str]:
    """A block's page and its first line: what RUN_ELSEWHERE and NOT_RUN_BLOCKS name it by."""
    first = next((line.strip() for line in block.text.splitlines() if line.strip()), "")
    return _page(block.path), first


def _listed(key: tuple[str, str], table: dict[tuple[str, str], str]) -> bool:
    return any(page == key[0] and key[1].startswith(start) for page, start in table)


def _is_shell(language: str, block: Block) -> bool:
    return language in SHELL or (not language and bool(COMMAND.match(_key(block)[1])))


def unrun_blocks(paths: list[Path] = DOCS) -> list[str]:
    """The shell blocks that are neither marked runnable, nor run by a named test, nor listed with a reason."""
    return [
        f"{block.name}: {_key(block)[1]!r}"
        for language, words, block in fenced(paths)
        if _is_shell(language, block)
        and "runnable" not in words
        and not _listed(_key(block), RUN_ELSEWHERE)
        and not _listed(_key(block), NOT_RUN_BLOCKS)
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The helpers every block runs with: curl that fails on HTTP errors and records its answers, the wait for
# a backgrounded server, the newest run ids; exit at the first command that exits 2 or more.
PREAMBLE = r"""
set -o pipefail
trap 'rc=$?; if [ $rc -ge 2 ]; then echo "doc example: exit $rc at: $BASH_COMMAND" >&2; exit $rc; fi' ERR
trap 'jobs -p | xargs -r kill 2>/dev/null' EXIT
BQAS_CURL_N=0
curl() {
    BQAS_CURL_N=$((BQAS_CURL_N + 1))
    local out="$DOC_OUT/curl-$BQAS_CURL_N.json" rc tries=0
    while :; do
        command curl --fail-with-body -sS -o "$out" "$@"; rc=$?
        [ $rc -ne 0 ] && { cat "$out" >&2; return $rc; }
        case "$*" in
            */api/jobs/*) python -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])).get("status") in ("queued", "running"))' "$out" || { tries=$((tries + 1)); [ $tries -lt 300 ] && { sleep 0.1; continue; }; } ;;
        esac
        break
    done
    BQAS_LAST_JOB=$(python -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("job_id", "") if isinstance(d, dict) else "")' "$out" 2>/dev/null || true)
    cat "$out"; echo
}
bqas_wait_port() {
    for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
    echo "doc example: nothing answers on port $1" >&2; return 2
}
bqas_run() { bqas runs --json | python -c 'import json,sys; print(json.load(sys.stdin)[int(sys.argv[1])]["id"])' "$1"; }
bqas_pair() {  # the newest run (B) and the newest earlier run of its scenario (A)
    bqas runs --json | python -c 'import json,sys
runs = json.load(sys.stdin)
b = next(r for r in runs if sum(o["scenario"] == r["scenario"] for o in runs) > 1)
a = next(r for r in runs if r["scenario"] == b["scenario"] and r["id"] != b["id"])
print(a["id"] if sys.argv[1] == "a" else b["id"])' "$1"
}
"""


def prepare(block: Block, service_port: int, demo_port: int, key: str) -> str:
    """The block's text with the placeholders of the convention replaced and NOT_RUN lines left out."""
    out = []
    for line in block.text.splitlines():
        command = line.strip()
        if any(re.search(pattern, command) for pattern in NOT_RUN):
            out.append(f": not run here: {command!r}")
            continue
        line = line.replace("127.0.0.1:8765", f"127.0.0.1:{service_port}")
        line = re.sub(r"--port 8790\b", f"--port {demo_port}", line)
        line = re.sub(r"^(\s*)KEY=bqas_\S*", rf"\g<1>KEY={key}", line)
        line = re.sub(r"\bj-[0-9a-f]{24}\b", "$BQAS_LAST_JOB", line)
        line = re.sub(r"\bRUN_ID\b", "$(bqas_run 0)", line)
        line = re.sub(r"\bRUN_A\b", "$(bqas_pair a)", line)
        line = re.sub(r"\bRUN_B\b", "$(bqas_pair b)", line)
        line = re.sub(r"(?<![\w/.-])SCENARIO\b", "scenarios/voice_de.yaml", line)
        out.append(line)
        port = re.search(r"--port (\d+)", line)
        if command.endswith("&") and port:
            out.append(f"bqas_wait_port {port.group(1)}")
    return PREAMBLE + "\n".join(out) + "\n"


_PAIR = re.compile(r'"(\w+)":\s*("(?:[^"\\…]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)(?=\s*[,}\]]|\s*$)')
_VOLATILE = {"job_id", "response_id", "status_url", "created_at", "finished_at", "latency_ms"}


def documented_answers(block: Block) -> list[list[tuple[str, Any]]]:
    """Per curl command of the block (in order), the ``"key": value`` pairs its comment lines show."""
    answers: list[list[tuple[str, Any]]] = []
    for line in block.text.splitlines():
        stripped = line.strip()
        if stripped.startswith("curl "):
            answers.append([])
        elif stripped.startswith("#") and answers:
            for key, raw in _PAIR.findall(stripped):
                if key not in _VOLATILE and "…" not in raw:
                    answers[-1].append((key, json.loads(raw)))
    return answers


def _pairs(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, item
            yield from _pairs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _pairs(item)


def _found(key: str, expected: Any, actual: Any) -> bool:
    for name, value in _pairs(actual):
        if name != key:
            continue
        if isinstance(expected, float) and isinstance(value, int | float) and not isinstance(value, bool):
            places = len(str(expected).split(".")[1])
            if round(float(value), places) == expected:
                return True
        elif value == expected:
            return True
    return False


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A scratch folder, a store, the service (`bqas serve`) with tenant acme's key, the env to run in."""
    base = tmp_path_factory.mktemp("docs")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BQAS_", "PYTEST_"))}
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
            "BQAS_HOME": str(base / "home"),
            "BQAS_MODEL_CACHE": os.environ["BQAS_MODEL_CACHE"],
            "COLUMNS": "100",
        }
    )
    created = subprocess.run(
        ["bqas", "keys", "create", "acme"], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    key = re.search(r"\bbqas_\S+", created.stdout)
    assert key, created.stdout
    port = _free_port()
    serve = subprocess.Popen(
        ["bqas", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and serve.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail(f"bqas serve did not start: {serve.stderr.read() if serve.stderr else ''}")
        yield {"base": base, "env": env, "port": port, "key": key.group(0)}
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def run_block(block: Block, workspace: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], Path]:
    work = workspace["base"] / block.name.replace("/", "_").replace(":", "_")
    work.mkdir()
    for folder in ("scenarios", "configs", "docs", "benchmarks"):
        (work / folder).symlink_to(ROOT / folder)
    (work / ".venv").symlink_to(Path(sys.executable).parents[1])  # `.venv/bin/python …` as a reader types it
    demo_port = _free_port()
    script = prepare(block, workspace["port"], demo_port, workspace["key"])
    env = {**workspace["env"], "DOC_OUT": str(work), "BQAS_DEMO_PORT": str(demo_port)}
    # Its own process group: whatever the block started (a server it backgrounded, a command that would
    # serve for ever) ends with it, also on the timeout.
    proc = subprocess.Popen(
        ["bash", "-c", script],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += "\ndoc example: killed after 900 s (a command that does not end?)"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), work


# A block may run several commands in a row (the README's quick tour runs five): its own bound is the
# 900 s of ``run_block``, which names the block when it is hit, so pytest's default 120 s must not cut it
# first on a loaded machine.
@pytest.mark.timeout(960)
@pytest.mark.parametrize("block", list(blocks()), ids=lambda b: b.name)
def test_doc_example_runs_as_written(block: Block, workspace: dict[str, Any]) -> None:
    done, work = run_block(block, workspace)
    assert done.returncode < 2, f"{block.name}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    for n, expected in enumerate(documented_answers(block), start=1):
        answer = json.loads((work / f"curl-{n}.json").read_text(encoding="utf-8"))
        missing = [f'"{k}": {json.dumps(v)}' for k, v in expected if not _found(k, v, answer)]
        assert not missing, f"{block.name}: curl #{n} answers without {missing}: {json.dumps(answer)[:2000]}"


def test_every_not_run_entry_matches_a_documented_line() -> None:
    lines = [line.strip() for block in blocks() for line in block.text.splitlines()]
    for pattern in NOT_RUN:
        assert any(re.search(pattern, line) for line in lines), pattern


def test_every_shell_block_is_run_or_listed() -> None:
    """A doc block nobody runs cannot go unnoticed: mark it runnable, or name its test, or say why not."""
    assert unrun_blocks() == [], (
        "mark these blocks ```bash runnable, or name the test that runs them in RUN_ELSEWHERE, "
        "or give the reason in NOT_RUN_BLOCKS"
    )


def test_every_listed_block_is_a_documented_block() -> None:
    """No stale entries: each names an unmarked shell block, and each named test file reads that page."""
    keys = [_key(b) for language, words, b in fenced() if _is_shell(language, b) and "runnable" not in words]
    for table in (RUN_ELSEWHERE, NOT_RUN_BLOCKS):
        for page, start in table:
            assert any(k[0] == page and k[1].startswith(start) for k in keys), (page, start)
    for (page, _), test in RUN_ELSEWHERE.items():
        assert Path(page).name in (ROOT / test).read_text(encoding="utf-8"), (test, page)
    assert all(reason.strip() for reason in NOT_RUN_BLOCKS.values())


def test_a_new_unlisted_block_fails_the_check(tmp_path: Path) -> None:
    doc = tmp_path / "new.md"
    doc.write_text(
        "```bash runnable\nbqas runs\n```\n\n```sh\nbqas something-new --flag\n```\n\n```yaml\na: 1\n```\n"
        "\n```\nan output\n```\n\n```\ncurl -s http://127.0.0.1:8765/healthz\n```\n",
        encoding="utf-8",
    )
    assert unrun_blocks([doc]) == [
        "new.md:5: 'bqas something-new --flag'",
        "new.md:17: 'curl -s http://127.0.0.1:8765/healthz'",
    ]


def test_every_documented_api_path_is_a_route_of_the_service(tmp_path: Path) -> None:
    from bqas.service.app import create_app
    from bqas.service.config import ServiceSettings
    from bqas.settings import Settings
    from bqas.store.db import open_store

    app = create_app(
        settings=Settings(home=tmp_path),
        service=ServiceSettings(rate_limit=0),
        store=open_store(f"sqlite:///{tmp_path / 's.sqlite'}"),
    )
    routes = [re.sub(r"\{[^}]+\}", "[^/]+", getattr(r, "path", "")) for r in app.routes]
    wrong = []
    for path in DOCS:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for api, elided in re.findall(r"(/api/[\w/{}.-]*\w)(/…)?", line):
                pattern = api + ("/[^/]+" if elided else "")  # `/api/jobs/…`: some path below it
                if not any(re.fullmatch(route, pattern) or route == pattern for route in routes if route):
                    wrong.append(f"{path.relative_to(ROOT)}:{n}: {api}")
    assert wrong == []


def test_a_wrong_documented_path_fails_the_doc_test(workspace: dict[str, Any], tmp_path: Path) -> None:
    """The doc test is not vacuous: the same curl with the path docs/dify.md once named fails it."""
    doc = tmp_path / "wrong.md"
    doc.write_text(
        "```bash runnable\nKEY=bqas_...\nBQAS=http://127.0.0.1:8765\n"
        "curl -s $BQAS/api/score/session/async -H \"Authorization: Bearer $KEY\" -d '{}'\n```\n",
        encoding="utf-8",
    )
    (block,) = blocks([doc])
    block.path = ROOT / "docs" / "wrong.md"  # named like a doc page
    done, _ = run_block(block, workspace)
    assert done.returncode >= 2 and "404" in done.stderr, done.stderr
    shutil.rmtree(tmp_path, ignore_errors=True)
