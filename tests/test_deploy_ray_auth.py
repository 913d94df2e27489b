"""The Ray roles of deploy/docker-compose.yml under Ray's token authentication, without a Docker daemon:
the file hands every Ray role one shared token (a secret read through ``RAY_AUTH_TOKEN_PATH``, with
``RAY_AUTH_MODE=token``), and the compose file's own ``ray start`` commands, run as two local processes
with that environment, form a two-node cluster on which ``bqas run --ray HOST:PORT`` judges a scenario;
the same worker command without the token is refused with ``InvalidAuthToken`` (what the file did before).

Ports and sizes are the only things changed in the commands: free ports on this shared machine instead of
6379, 1 CPU and a small object store per node, no dashboard."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.ray_support import isolated_ray_tmpdir

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
RAY_ROLES = ("ray-head", "ray-worker", "batch")
SECRET_PATH = "/run/secrets/ray_token"


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return loaded


def test_every_ray_role_gets_the_shared_token_and_token_mode() -> None:
    compose = _compose()
    services = compose["services"]
    assert compose["secrets"]["ray_token"] == {"environment": "BQAS_RAY_TOKEN"}
    assert "${BQAS_RAY_TOKEN:?" in compose["x-ray-token-set"]  # compose stops at once when it is unset
    for name in RAY_ROLES:
        env = services[name]["environment"]
        assert env["RAY_AUTH_MODE"] == "token", name
        assert env["RAY_AUTH_TOKEN_PATH"] == SECRET_PATH, name
        assert services[name]["secrets"] == ["ray_token"], name
        assert env["BQAS_DATABASE_URL"] == services["api-1"]["environment"]["BQAS_DATABASE_URL"], name
    for name in ("api-1", "api-2", "worker-1", "worker-2"):  # no Ray there: no token either
        assert "secrets" not in services[name] and "RAY_AUTH_MODE" not in services[name]["environment"], name


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _local(command: list[str], port: int, head_ip: str) -> list[str]:
    """A compose ``ray start`` command for this machine: free ports, 1 CPU, small store, no dashboard."""
    out = [sys.executable, "-m", "ray.scripts.scripts", *command[1:]]  # the venv's ray CLI
    out = [
        arg for arg in out if not arg.startswith(("--port=", "--num-cpus=", "--dashboard-host=")) and arg != "--block"
    ]
    out = [f"--address={head_ip}:{port}" if a.startswith("--address=") else a for a in out]
    if "--head" in out:
        out += [f"--port={port}", "--include-dashboard=false"]
    out += ["--num-cpus=1", "--object-store-memory=80000000", "--disable-usage-stats"]
    for flag in (
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "metrics-export-port",
        "runtime-env-agent-port",
    ):
        out.append(f"--{flag}={_free_port()}")  # two nodes on one machine must not share these
    return out


class LocalRayRoles:
    """The compose file's Ray roles as processes of this test (each in its own session, killed by PID)."""

    def __init__(self, env: dict[str, str], logs: Path):
        self.env = env
        self.logs = logs
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [*command, "--block"], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture
def token_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The Ray roles' environment from the compose file, the secret as a file of this test, and a home
    of its own (so that no ~/.ray/auth_token of the machine takes part)."""
    pytest.importorskip("ray")
    token_file = tmp_path / "ray_token"
    token_file.write_text(os.urandom(32).hex(), encoding="utf-8")
    role_env = _compose()["services"]["ray-worker"]["environment"]
    with isolated_ray_tmpdir():
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
        env.update(HOME=tempfile.mkdtemp(prefix="bqh-", dir=str(tmp_path)))
        env.update(RAY_AUTH_MODE=role_env["RAY_AUTH_MODE"], RAY_AUTH_TOKEN_PATH=str(token_file))
        yield env


@pytest.mark.ray
@pytest.mark.timeout(600)
def test_the_compose_ray_commands_form_a_token_cluster_that_bqas_runs_on(
    tmp_path: Path, token_env: dict[str, str]
) -> None:
    services = _compose()["services"]
    port = _free_port()
    ip = subprocess.run(
        [sys.executable, "-c", "import ray._private.services as s; print(s.get_node_ip_address())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    roles = LocalRayRoles(token_env, tmp_path)
    try:
        head = roles.start("ray-head", _local(services["ray-head"]["command"], port, ip))
        deadline = time.time() + 120
        while True:
            assert head.poll() is None, (tmp_path / "ray-head.log").read_text(errors="replace")[-3000:]
            try:
                socket.create_connection((ip, port), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline, "the head did not start"
                time.sleep(0.5)
        worker_cmd = _local(services["ray-worker"]["command"], port, ip)

        # What the file did before: the worker node without the token is refused.
        no_token = {k: v for k, v in token_env.items() if not k.startswith("RAY_AUTH")}
        refused = subprocess.run(worker_cmd, env=no_token, capture_output=True, text=True, timeout=180)
        assert refused.returncode != 0
        assert "InvalidAuthToken" in refused.stdout + refused.stderr

        roles.start("ray-worker", worker_cmd)
        count = (
            "import ray, time\n"
            f"ray.init(address='{ip}:{port}', log_to_driver=False)\n"
            "for _ in range(120):\n"
            "    alive = [n for n in ray.nodes() if n['Alive']]\n"
            "    if len(alive) == 2: break\n"
            "    time.sleep(0.5)\n"
            "print(len(alive), int(ray.cluster_resources().get('CPU', 0)))\n"
        )
        nodes = subprocess.run(
            [sys.executable, "-c", count], env=token_env, capture_output=True, text=True, timeout=180
        )
        assert nodes.returncode == 0, nodes.stderr[-3000:]
        assert nodes.stdout.split() == ["2", "2"]  # the worker node joined with the shared token

        # The batch role: `bqas run --ray ray-head:6379` with the same environment.
        rows = [
            {
                "id": f"s{i}",
                "user_input": f"Erinnere mich an Termin {i}",
                "detected_intent": "reminder",
                "response": f"Ich erinnere dich an Termin {i}.",
                "expected_intent": "reminder",
            }
            for i in range(6)
        ]
        (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        scenario = tmp_path / "scenario.yaml"
        scenario.write_text("name: compose-ray\njudges: [voice]\nbackend: offline\ndataset: data.jsonl\n")
        batch = shlex.split(f"bqas run {scenario} --no-progress --ray {ip}:{port} --ray-workers 2")
        env = {**token_env, "BQAS_HOME": str(tmp_path / "home")}
        done = subprocess.run(
            [sys.executable, "-m", "bqas.cli.main", *batch[1:], "--out", str(tmp_path / "o")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert len((tmp_path / "o" / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 6
    finally:
        roles.close()
