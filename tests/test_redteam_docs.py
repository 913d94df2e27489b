"""Every command in docs/redteam.md runs as written (the demo assistant on a free port instead of 8791),
with the exit code its comment names (``# exit 1``; none: 0)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "redteam.md"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise AssertionError(f"the background command ended with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def _blocks() -> list[list[str]]:
    return [
        [line for line in block.splitlines() if line.strip()]
        for block in re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    ]


def test_the_doc_has_the_examples_it_promises() -> None:
    commands = [line for block in _blocks() for line in block]
    assert any("--leaky" in c for c in commands) and any(c.startswith("bqas ci-summary") for c in commands)
    assert any("--dry-run" in c and "--target" in c for c in commands)


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_doc_block_runs_as_written(index: int, tmp_path: Path) -> None:
    port = _free_port()
    (tmp_path / "scenarios" / "redteam").mkdir(parents=True)
    for name in ("redteam/demo.yaml", "redteam/demo_canaries.yaml"):
        text = (ROOT / "scenarios" / name).read_text(encoding="utf-8").replace("8791", str(port))
        (tmp_path / "scenarios" / name).write_text(text, encoding="utf-8")
    env = {
        **os.environ,
        "BQAS_HOME": str(tmp_path / ".bqas"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("BQAS_DATABASE_URL", None)
    background: list[subprocess.Popen[bytes]] = []
    try:
        for line in _blocks()[index]:
            command, _, comment = line.partition("  #")
            command = command.strip().replace("8791", str(port))
            expected = int(m.group(1)) if (m := re.search(r"exit (\d)", comment)) else 0
            if command.endswith("&"):
                argv = shlex.split(command[:-1])
                assert shutil.which(argv[0], path=env["PATH"]), argv[0]
                process = subprocess.Popen(
                    argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
                background.append(process)
                _wait_for(port, process)
                continue
            result = subprocess.run(
                command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
            )
            assert result.returncode == expected, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
            if "--leaky" in " ".join(_blocks()[index]) and command.startswith("bqas redteam"):
                assert "leaked: 'Sophie Ndiaye' (t-yilmaz, names)" in result.stdout
            if "--dry-run" in command:
                assert result.stdout.count('"plugin"') == 12 and "dry run: 12 attacks, nothing sent" in result.stderr
    finally:
        for process in background:
            process.terminate()
            process.wait(timeout=10)


def test_the_scenario_in_the_doc_is_valid() -> None:
    import yaml

    from bqas.redteam.config import RedteamScenario, checked_index

    block = re.search(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None
    scenario = RedteamScenario.model_validate(yaml.safe_load(block.group(1)))
    assert len(checked_index(scenario).canaries) == 6
