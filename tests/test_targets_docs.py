"""docs/targets.md runs as written: the seed's loop (``bqas synth … --out qa/s.jsonl``, ``qa/reminders.yaml``,
``bqas run qa/reminders.yaml``) with its ``url`` pointed at the demo assistant, and each target example of
"The four kinds" answers a sample against the demo assistant (the addresses replaced by its own)."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter

from bqas.demo.assistant import build_app, understand
from bqas.targets.config import TargetConfig
from bqas.targets.kinds import Conversation, client_for
from target_support import ServedApp

SAID = "Erinnere mich morgen an die Fachkonferenz"
DOC = Path(__file__).resolve().parents[1] / "docs" / "targets.md"


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _blocks(section: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section, flags=re.S)


def _bqas(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command, comments=True)
    assert words[0] == "bqas", command
    return subprocess.run(
        [sys.executable, "-m", "bqas.cli.main", *words[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_seeds_loop_runs_as_written(tmp_path: Path, bqas_home: Path) -> None:
    section = _section("The seed's loop in one command")
    commands = [line for block in _blocks(section, "sh") for line in block.splitlines() if line.strip()]
    (scenario,) = _blocks(section, "yaml")
    assert scenario.startswith("# qa/reminders.yaml\n")
    env = {**os.environ, "BQAS_HOME": str(bqas_home), "ASSISTANT_TOKEN": "staging-token"}
    env.pop("BQAS_LLM_BASE_URL", None)
    with ServedApp(build_app()) as demo:
        (tmp_path / "qa").mkdir()
        local = scenario.replace("https://assistant.staging.example/chat", f"{demo.url}/chat")
        assert local != scenario
        (tmp_path / "qa" / "reminders.yaml").write_text(local, encoding="utf-8")
        synth, run = commands
        made = _bqas(synth, tmp_path, env)
        assert made.returncode == 0, made.stdout + made.stderr
        done = _bqas(run, tmp_path, env)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # a gate may be missed; no usage error
    assert "assistant: 50 answers · 0 target errors" in done.stdout, done.stdout


def _four_kinds() -> list[dict[str, Any]]:
    (block,) = _blocks(_section("The four kinds"), "yaml")
    return [doc["target"] for doc in yaml.safe_load_all(block)]


@pytest.mark.parametrize("kind", ["openai", "http", "dify", "python"])
def test_each_kind_of_the_docs_answers(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASSISTANT_API_KEY", "ASSISTANT_TOKEN", "DIFY_APP_KEY"):
        monkeypatch.setenv(name, "key-for-the-docs")
    (config,) = [t for t in _four_kinds() if t["type"] == kind]
    with ServedApp(build_app()) as demo:
        text = yaml.safe_dump(config, allow_unicode=True)
        text = re.sub(r"http://127\.0\.0\.1:\d+", demo.url, text).replace("my_package.assistant", "bqas.demo.assistant")
        target = TypeAdapter(TargetConfig).validate_python(yaml.safe_load(text))

        async def ask() -> Any:
            client = client_for(target, 1024 * 1024)
            try:
                data = {"user_input": SAID, "level": "7"}
                return await client.ask(data, Conversation(), 0)
            finally:
                await client.aclose()

        reply = asyncio.run(ask())
    assert reply.error is None, reply.error
    assert reply.fields["response"]
    if kind in ("openai", "http", "python"):
        assert reply.fields["detected_intent"] == understand(SAID)[0]  # the intent the demo recognised
