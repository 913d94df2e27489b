"""``--ray ADDRESS`` that names no Ray cluster: exit 2 with the address named, in bounded time, and no run
created. Malformed and hostile addresses, a closed port, a port where something listens that is not Ray,
an unknown host, a bad RAY_ADDRESS behind ``--ray auto``, a bad ``ray.address`` in the scenario file.
No cluster is started here (a real one joins by address in tests/test_ray_run.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.runner import ray_address
from bqas.runner.ray_address import parse_address

pytest.importorskip("ray")

HOSTILE = "ev\x1b[31mil{0}</b>\u202e:12"


def _scenario(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "data.jsonl").write_text(
        json.dumps({"id": "a", "user_input": "Stell einen Timer", "detected_intent": "timer", "response": "Ok."})
        + "\n",
        encoding="utf-8",
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(f"name: ray-address\njudges: [voice]\nbackend: offline\ndataset: data.jsonl\n{extra}")
    return path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word (not a Ray GCS)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:  # closed at the end of the test
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield int(server.getsockname()[1])
    finally:
        server.close()
        for conn in accepted:
            conn.close()


def _runs(home: Path) -> int:
    db = home / "bqas.sqlite"
    if not db.exists():
        return 0
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        count = int(conn.execute(text("SELECT COUNT(*) FROM runs")).scalar_one())
    engine.dispose()
    return count


def test_addresses_are_parsed_strictly() -> None:
    assert parse_address("10.0.0.5:6379") == ("10.0.0.5", 6379, False)
    assert parse_address("ray://head.example:10001") == ("head.example", 10001, True)
    assert parse_address("[::1]:6379") == ("::1", 6379, False)
    for bad in ["not a host", "host", "host:", ":6379", "host:0", "host:65536", "host:6379x", "h/x:1", HOSTILE]:
        with pytest.raises(ValueError):
            parse_address(bad)


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("not a host", "'not a host': not a cluster address; expected auto, local, HOST:PORT"),
        (HOSTILE, f"{HOSTILE!r}: not a cluster address"),
        ("nohost.invalid:6379", "'nohost.invalid:6379': unknown host 'nohost.invalid'"),
    ],
)
def test_a_malformed_or_unknown_address_is_a_usage_error_and_creates_no_run(
    tmp_path: Path, bqas_home: Path, address: str, message: str
) -> None:
    result = CliRunner().invoke(app, ["run", str(_scenario(tmp_path)), "--no-progress", "--ray", address])
    assert result.exit_code == 2, result.output
    assert f"error: --ray {message}" in result.output
    assert "\x1b" not in result.output  # a hostile address stays one printable line
    assert _runs(bqas_home) == 0  # refused before a run was created: nothing left "running"


def test_a_closed_port_fails_at_once_not_after_ray_retries_for_minutes(tmp_path: Path, bqas_home: Path) -> None:
    port = _closed_port()
    cmd = [sys.executable, "-m", "bqas.cli.main", "run", str(_scenario(tmp_path)), "--no-progress"]
    env = {**os.environ, "BQAS_HOME": str(bqas_home)}
    # Without the check, ray.init retried this address for more than 5 minutes: the timeout is the hang guard.
    done = subprocess.run([*cmd, "--ray", f"127.0.0.1:{port}"], env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 2, done.stderr
    assert f"error: --ray '127.0.0.1:{port}': nothing answers at 127.0.0.1:{port}" in done.stderr
    assert _runs(bqas_home) == 0


def test_a_port_that_is_not_a_ray_cluster_fails_within_the_probe_time(
    tmp_path: Path, bqas_home: Path, silent_listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ray_address, "GCS_TIMEOUT_S", 2.0)
    address = f"127.0.0.1:{silent_listener}"
    result = CliRunner().invoke(app, ["run", str(_scenario(tmp_path)), "--no-progress", "--ray", address])
    assert result.exit_code == 2, result.output
    assert f"error: --ray '{address}': {address} accepts connections but no Ray cluster answered" in result.output
    assert _runs(bqas_home) == 0


def test_a_bad_ray_address_behind_auto_is_named(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _closed_port()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    result = CliRunner().invoke(app, ["run", str(_scenario(tmp_path)), "--no-progress", "--ray", "auto"])
    assert result.exit_code == 2, result.output
    assert f"error: RAY_ADDRESS '127.0.0.1:{port}': nothing answers" in result.output


def test_a_bad_address_in_the_scenario_names_the_file_and_field(tmp_path: Path, bqas_home: Path) -> None:
    path = _scenario(tmp_path, "ray:\n  address: 'head:node:x'\n")
    result = CliRunner().invoke(app, ["run", str(path), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert f"error: {path}: ray.address 'head:node:x': not a cluster address" in result.output
    assert _runs(bqas_home) == 0


def test_a_recorded_cluster_that_is_gone_is_named_not_joined() -> None:
    """``--ray auto`` without RAY_ADDRESS checks the cluster Ray's ray_current_cluster file records before
    ray.init() would join it: a closed port is reported at once, no record means "start one"."""
    from tests.ray_support import isolated_ray_tmpdir, record_cluster

    with isolated_ray_tmpdir() as folder:
        assert ray_address.recorded_cluster() is None
        assert ray_address.stale_recorded_cluster() is None  # nothing recorded: ray.init starts a cluster
        dead = f"127.0.0.1:{_closed_port()}"
        record = record_cluster(folder, dead)
        assert ray_address.recorded_cluster() == (record, dead)
        reason = ray_address.stale_recorded_cluster()
    assert reason is not None and record in reason and repr(dead) in reason and "nothing answers" in reason
